"""The storage layer: schema versions and migrations, in-process (no server needed)."""
from __future__ import annotations

import sqlite3

import pytest

import rustiz
from conftest import run_cli


def schema_version(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT version FROM schema_version").fetchone()[0]


def test_a_new_database_gets_every_migration(tmp_path):
    store = rustiz.Store(str(tmp_path / "new.db"))
    store.close()
    assert schema_version(tmp_path / "new.db") == len(rustiz.MIGRATIONS)


def test_an_older_database_is_upgraded_in_place_keeping_its_rows(tmp_path, monkeypatch):
    path = str(tmp_path / "old.db")
    store = rustiz.Store(path)
    organization_id = store.create_organization("Old org", rustiz.hash_api_key("k" * 64))
    store.close()
    newer = rustiz.MIGRATIONS + ("ALTER TABLE organization ADD COLUMN upgraded_by_test TEXT NOT NULL DEFAULT 'yes'",)
    monkeypatch.setattr(rustiz, "MIGRATIONS", newer)

    store = rustiz.Store(path)
    try:
        assert store.schema_version() == len(newer)
        assert store.organization_for_key_hash(rustiz.hash_api_key("k" * 64)) == organization_id
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT upgraded_by_test FROM organization").fetchone() == ("yes",)


def test_a_failed_migration_leaves_the_database_at_its_old_version(tmp_path, monkeypatch):
    path = str(tmp_path / "db.db")
    rustiz.Store(path).close()
    monkeypatch.setattr(rustiz, "MIGRATIONS", rustiz.MIGRATIONS + ("CREATE TABLE broken (",))
    with pytest.raises(rustiz.UserError):
        rustiz.Store(path)
    assert schema_version(path) == len(rustiz.MIGRATIONS) - 1


def test_a_newer_database_is_refused_with_a_clear_message(pyz, tmp_path):
    directory = tmp_path / "data"
    assert run_cli(pyz, "init", "--dir", str(directory)).returncode == 0
    with sqlite3.connect(directory / "rustiz.db") as db:
        db.execute("UPDATE schema_version SET version = 999")

    result = run_cli(pyz, "serve", env={"RUSTIZ_CONFIG": str(directory / "config.env"), "PORT": "0"})

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "schema version 999" in result.stderr and "newer rustiz" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_reads_in_one_loop_turn_share_a_snapshot_and_writes_end_it(tmp_path):
    path = str(tmp_path / "db.db")
    store, other = rustiz.Store(path), rustiz.Store(path)
    end_of_turn: list = []
    store.share_reads_per_loop_turn(end_of_turn.append)
    try:
        organization_id = store.create_organization("Org", rustiz.hash_api_key("a" * 64))
        assert store.integrations(organization_id) == []  # opens the turn's read snapshot
        with other._writing() as db:  # another process adds a channel meanwhile
            db.execute("INSERT INTO integration (id, internal_id, organization_id, name, provider_identifier, "
                       "created_at, updated_at) VALUES ('c1', 'i1', ?, 'Chan', 'bluesky', 'now', 'now')",
                       (organization_id,))
        assert store.integrations(organization_id) == []  # same turn, same snapshot
        for callback in end_of_turn:
            callback()
        assert [channel["id"] for channel in store.integrations(organization_id)] == ["c1"]
    finally:
        store.close()
        other.close()
