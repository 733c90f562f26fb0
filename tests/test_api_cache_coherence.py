"""What a process remembers is never stale: the listing of channels (remembered per organization and group) and
the keys it knows, on both backends, with two `serve` processes on one database (and the CLI, and a write
straight into the database, beside them). Each change made through one process is in the very next answer
of the other; each change made on a process is in its own next answer."""
from __future__ import annotations

import pytest

from conftest import LOCAL_FAKES, run_cli
from support import API, Database, api, wait_for, webhook_channel

ROUNDS = 5  # each change more than once: a race between a notice and the next request shows as a flaky round


@pytest.fixture
def two(start_server):
    """Two processes on one database: the first made it and its key; the second got the same config.env, as a
    second machine (or a second `serve` beside the first) would."""
    first = start_server(env=LOCAL_FAKES)
    folder = first.data_dir.parent / "second"
    folder.mkdir()
    (folder / "config.env").write_text(first.config_path.read_text().replace(str(first.data_dir), str(folder)))
    second = start_server(env={**LOCAL_FAKES, "RUSTIZ_DATABASE": first.database}, data_dir=folder)
    return first, second


def listing(server, group: str | None = None) -> dict:
    """The channels of GET /integrations by id (asked twice: the second answer is the remembered one)."""
    path = f"{API}/integrations" + (f"?group={group}" if group else "")
    assert api(server, "GET", path)[0] == 200
    status, channels = api(server, "GET", path)
    assert status == 200, channels
    return {channel["id"]: channel for channel in channels}


def changed(server, channel_id: str, changes: dict) -> None:
    status, answer = api(server, "PUT", f"{API}/integrations/{channel_id}", changes)
    assert status == 200, answer


def test_a_channel_added_renamed_disabled_regrouped_and_deleted_on_one_process_is_in_the_next_listing_of_the_other(
        two, receiver):
    first, second = two
    for round_number in range(ROUNDS):
        assert listing(second) == {} and listing(first) == {}
        channel_id = webhook_channel(first, receiver, f"Hook {round_number}")
        assert list(listing(second)) == [channel_id]
        changed(first, channel_id, {"name": f"Renamed {round_number}"})
        assert listing(second)[channel_id]["name"] == f"Renamed {round_number}"
        changed(second, channel_id, {"disabled": True})
        assert listing(first)[channel_id]["disabled"] is True
        changed(first, channel_id, {"customer": f"Group {round_number}"})
        group = listing(second)[channel_id]["customer"]["id"]
        assert list(listing(second, group)) == [channel_id]
        changed(first, channel_id, {"customer": ""})
        assert listing(second, group) == {} and "customer" not in listing(second)[channel_id]
        assert api(first, "DELETE", f"{API}/integrations/{channel_id}")[0] == 200
        assert listing(second) == {}


def test_a_listing_after_a_write_on_the_same_process_is_fresh(start_server, receiver):
    server = start_server(env=LOCAL_FAKES)
    for round_number in range(ROUNDS):
        assert listing(server) == {}
        channel_id = webhook_channel(server, receiver, f"Hook {round_number}")
        assert list(listing(server)) == [channel_id]
        changed(server, channel_id, {"name": "Renamed", "disabled": True})
        assert (listing(server)[channel_id]["name"], listing(server)[channel_id]["disabled"]) == ("Renamed", True)
        assert api(server, "DELETE", f"{API}/integrations/{channel_id}")[0] == 200
        assert listing(server) == {}


def test_a_revoked_key_is_refused_at_once_by_the_other_process(two):
    first, second = two
    for round_number in range(ROUNDS):
        status, made = api(first, "POST", f"{API}/api-keys", {"name": f"reader {round_number}", "scope": "read"})
        assert status == 201, made
        for _ in range(2):  # the second call is answered with what the second process remembers of the key
            assert api(second, "GET", f"{API}/integrations", key=made["apiKey"]) == (200, [])
        assert api(first, "DELETE", f"{API}/api-keys/{made['id']}")[0] == 200
        assert api(second, "GET", f"{API}/integrations", key=made["apiKey"])[0] == 401


def test_a_key_revoked_by_the_cli_is_refused_at_once_by_every_server(two, pyz):
    first, second = two
    for round_number in range(ROUNDS):
        status, made = api(first, "POST", f"{API}/api-keys", {"name": f"reader {round_number}", "scope": "read"})
        assert status == 201, made
        for server in two * 2:  # each server now answers the key from memory
            assert api(server, "GET", f"{API}/integrations", key=made["apiKey"]) == (200, [])
        revoked = run_cli(pyz, "key", "revoke", made["id"],
                          env={"RUSTIZ_CONFIG": str(first.config_path), "RUSTIZ_DATABASE": first.database})
        assert revoked.returncode == 0, revoked.stderr
        for server in two:
            assert api(server, "GET", f"{API}/integrations", key=made["apiKey"])[0] == 401


def test_channels_written_by_the_cli_or_straight_into_the_database_are_in_the_next_listing(two, receiver, pyz,
                                                                                            backend):
    """Any writer, not only a server: `rustiz channel add` (its own process: on PostgreSQL it too waits until
    the servers acknowledge its notice), and rows written by another program (the sqlite3 shell, psql).
    SQLite: the very next listing (each turn asks PRAGMA data_version). PostgreSQL, another program: as soon
    as the notice of the tables' triggers reaches the server, a millisecond or so after the commit."""
    first, second = two
    database = Database(first)

    def listing_of_second(done) -> dict:
        if backend == "sqlite":
            return listing(second)
        return wait_for(lambda: listing(second), done, timeout=2)

    for round_number in range(ROUNDS):
        assert listing(second) == {}
        credentials = [part for name, value in receiver.credentials().items()
                       for part in ("--credential", f"{name}={value}")]
        added = run_cli(pyz, "channel", "add", "webhook", *credentials, "--name", f"From the CLI {round_number}",
                        env={**LOCAL_FAKES, "RUSTIZ_CONFIG": str(first.config_path),
                             "RUSTIZ_DATABASE": first.database})
        assert added.returncode == 0, added.stderr
        channel_id = added.stdout.strip()
        assert list(listing(second)) == [channel_id]
        database.execute("UPDATE integration SET name = ? WHERE id = ?", f"By hand {round_number}", channel_id)
        renamed = listing_of_second(lambda channels: channels[channel_id]["name"] != f"From the CLI {round_number}")
        assert renamed[channel_id]["name"] == f"By hand {round_number}"
        database.execute("DELETE FROM integration WHERE id = ?", channel_id)
        assert listing_of_second(lambda channels: channel_id not in channels) == {}


def test_the_workers_of_one_server_answer_a_change_made_through_any_of_them_at_once(start_server, receiver):
    """--workers 2: each request lands on either worker (each its own process, with its own memory)."""
    server = start_server(env=LOCAL_FAKES, args=("--workers", "2"))
    for round_number in range(ROUNDS):
        for _ in range(4):
            assert listing(server) == {}
        channel_id = webhook_channel(server, receiver, f"Hook {round_number}")
        for _ in range(4):
            assert list(listing(server)) == [channel_id]
        changed(server, channel_id, {"name": "Renamed"})
        for _ in range(4):
            assert listing(server)[channel_id]["name"] == "Renamed"
        assert api(server, "DELETE", f"{API}/integrations/{channel_id}")[0] == 200
        for _ in range(4):
            assert listing(server) == {}
