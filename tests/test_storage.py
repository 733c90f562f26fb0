"""The storage layer: schema versions and migrations, in-process (no server needed); the modes of the
files a server keeps (the database and its -wal and -shm, the uploads); a database that cannot be
written (a full disk, an I/O error) answered with 503 and reported by /health."""
from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import stat
import subprocess
import time
from pathlib import Path

import pytest

import rustiz
from conftest import read_config, run_cli
from support import png_file, upload


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
        with other.writing() as db:  # another process adds a channel meanwhile
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


def test_the_channels_version_is_the_snapshots_own_so_an_older_read_is_never_kept_under_a_newer_version(tmp_path):
    path = str(tmp_path / "db.db")
    store, other = rustiz.Store(path), rustiz.Store(path)
    end_of_turn: list = []

    def next_turn() -> None:
        while end_of_turn:
            end_of_turn.pop()()

    store.share_reads_per_loop_turn(end_of_turn.append)
    try:
        organization_id = store.create_organization("Org", rustiz.hash_api_key("a" * 64))
        before = store.channels_version()
        next_turn()
        assert store.integrations(organization_id) == []  # the turn's snapshot, taken before the write below
        with other.writing() as db:  # another process adds a channel meanwhile
            db.execute("INSERT INTO integration (id, internal_id, organization_id, name, provider_identifier, "
                       "created_at, updated_at) VALUES ('c1', 'i1', ?, 'Chan', 'bluesky', 'now', 'now')",
                       (organization_id,))
        # asked after the write, but within a snapshot that does not see it: the version the snapshot had
        assert store.channels_version() == before
        next_turn()
        after_their_write = store.channels_version()
        assert after_their_write != before
        assert [channel["id"] for channel in store.integrations(organization_id)] == ["c1"]
        next_turn()
        assert store.channels_version() == after_their_write  # nothing written: remembered answers hold
        with store.writing() as db:  # this connection's own write (data_version does not count those)
            db.execute("UPDATE integration SET name = 'Renamed'")
        assert store.channels_version() != after_their_write
        assert other.channels_version() is None  # (no shared reads per turn: nothing may be remembered)
    finally:
        store.close()
        other.close()


def test_the_request_paths_own_writes_leave_the_channels_version_and_a_channel_write_moves_it(tmp_path):
    """A REQUEST_LIMIT count or a key's last use writes no channel: remembered listings stay valid through them
    (else with REQUEST_LIMIT on, its default, every request would read the listing again)."""
    store = rustiz.Store(str(tmp_path / "db.db"))
    end_of_turn: list = []
    store.share_reads_per_loop_turn(end_of_turn.append)
    try:
        organization_id = store.create_organization("Org", rustiz.hash_api_key("b" * 64))
        while end_of_turn:
            end_of_turn.pop()()
        before = store.channels_version()
        assert store.count_request("client:127.0.0.1", 600, 60).allowed
        store.record_key_use(rustiz.KeyIdentity(organization_id, "full", None), rustiz.utc_now_iso())
        assert store.channels_version() == before
        with store.writing() as db:
            db.execute("INSERT INTO integration (id, internal_id, organization_id, name, provider_identifier, "
                       "created_at, updated_at) VALUES ('c1', 'i1', ?, 'Chan', 'bluesky', 'now', 'now')",
                       (organization_id,))
        assert store.channels_version() != before
    finally:
        store.close()


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    """The usual umask, which leaves new files readable by everyone unless their creator says otherwise."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_the_database_its_wal_and_shm_and_the_uploads_are_readable_by_their_owner_only(start_server, umask_022):
    server = start_server()
    config = read_config(server.config_path)
    database, uploads = config["RUSTIZ_DATABASE"], Path(config["RUSTIZ_UPLOADS"])
    status, media = upload(server, png_file())
    assert status == 201, media
    stored = uploads / media["path"].split("/uploads/", 1)[1]
    assert [mode(database + suffix) for suffix in ("", "-wal", "-shm")] == [0o600] * 3
    assert mode(stored) == 0o600
    folders = [uploads, uploads / ".incoming"] + [stored.parents[level] for level in range(3)]  # .../YYYY/MM/DD
    assert [mode(folder) for folder in folders] == [0o700] * 5
    assert mode(server.data_dir) == 0o700


def test_files_an_older_rustiz_left_readable_are_made_private_at_start_and_the_log_says_so(start_server):
    server = start_server()
    config = read_config(server.config_path)
    database, uploads = config["RUSTIZ_DATABASE"], config["RUSTIZ_UPLOADS"]
    assert server.request("GET", "/public/v1/integrations", {"Authorization": server.key})[0] == 200
    server.stop(signal.SIGKILL)  # leaves the -wal and -shm files behind, as a crash does
    for path in (database, database + "-wal", database + "-shm"):
        os.chmod(path, 0o644)
    os.chmod(uploads, 0o755)
    server.start()
    assert [mode(database + suffix) for suffix in ("", "-wal", "-shm")] == [0o600] * 3
    assert mode(uploads) == 0o700
    for path, was, now in ((database, "644", "600"), (database + "-wal", "644", "600"),
                           (database + "-shm", "644", "600"), (uploads, "755", "700")):
        line = f"{path} was readable by other users (mode {was}); it is now {now}: only its owner may read it"
        assert any(line in logged for logged in server.stderr_lines), (line, server.stderr_lines)
    assert server.request("GET", "/public/v1/integrations", {"Authorization": server.key})[0] == 200


def add_webhook(server, url: str = "https://n8n.example.com/hook") -> tuple:
    status, headers, answer = server.request("POST", "/public/v1/webhooks", {
        "Authorization": server.key, "Content-Type": "application/json"}, json.dumps({"url": url}).encode())
    return status, headers, json.loads(answer)


def webhook_urls(server) -> list:
    answer = server.request("GET", "/public/v1/webhooks", {"Authorization": server.key})[2]
    return [webhook["url"] for webhook in json.loads(answer)]


def health(server) -> tuple:
    status, headers, answer = server.request("GET", "/health")
    return status, headers, answer.decode()


def assert_unwritable_answers(server, cause: str) -> None:
    """A write is refused with a 503 naming the database and `cause`; /health says the same; reads go on."""
    database = read_config(server.config_path)["RUSTIZ_DATABASE"]
    message = f"rustiz cannot write its database ({database}): {cause}"
    status, headers, answer = add_webhook(server, "https://n8n.example.com/lost")
    assert (status, answer) == (503, {"statusCode": 503, "error": "Service Unavailable", "message": message})
    assert headers["retry-after"] == "30"
    status, headers, answer = health(server)
    assert (status, json.loads(answer)["message"], headers["retry-after"]) == (503, message, "30")
    assert "https://n8n.example.com/lost" not in webhook_urls(server)  # reads still work; nothing half-written
    deadline = time.monotonic() + 5  # (the log is read by a thread, which may not have caught up yet)
    while not any(message in line for line in server.stderr_lines) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum(message in line for line in server.stderr_lines) == 1  # logged once, not once per request


def wait_for_health(server, seconds: float = 12) -> None:
    """/health turns back to 200 once a write succeeds again (it tries one every 5 seconds)."""
    deadline = time.monotonic() + seconds
    while health(server)[0] != 200 or not any("can be written again" in line for line in server.stderr_lines):
        assert time.monotonic() < deadline, (health(server), server.stderr_lines)  # (the log is read by a thread)
        time.sleep(0.25)


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (a disk that fills up for real), where mounting one is allowed (root in this sandbox)."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill up ({mounted.stderr.strip()}): needs root")
    yield mount_point
    subprocess.run(["umount", "--lazy", str(mount_point)], check=True)


def test_a_full_disk_is_a_503_naming_it_and_health_reports_it_until_space_is_freed(start_server, small_disk):
    server = start_server(data_dir=small_disk / "data")
    try:
        assert add_webhook(server)[0] == 201
        filler = os.open(small_disk / "filler", os.O_WRONLY | os.O_CREAT)
        with pytest.raises(OSError, match="No space left on device"):
            while True:
                os.write(filler, b"\0" * 65536)
        os.close(filler)
        assert_unwritable_answers(server, "the disk is full; free space and retry")
        time.sleep(5.5)  # past the next probe: a disk still full stays reported
        status, _, answer = health(server)
        assert status == 503 and "the disk is full; free space and retry" in json.loads(answer)["message"]
        os.unlink(small_disk / "filler")
        wait_for_health(server)
        assert add_webhook(server)[0] == 201
    finally:
        server.stop()  # before the tmpfs is unmounted


def test_a_disk_write_error_is_a_503_and_health_recovers_once_writes_succeed(server):
    # RLIMIT_FSIZE 0 makes every write to a regular file fail (EFBIG): SQLite reports "disk I/O error", as
    # for a failing disk. Set from outside on the running server, as prlimit(1) does.
    soft, hard = resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE)
    assert add_webhook(server)[0] == 201
    resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (0, hard))
    try:
        assert_unwritable_answers(server, "the disk reported an I/O error; check the disk, the file system's "
                                          "quotas and the kernel log")
    finally:
        resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (soft, hard))
    wait_for_health(server)
    assert add_webhook(server)[0] == 201 and len(webhook_urls(server)) == 2


def test_counts_kept_in_memory_for_a_turn_add_to_what_another_process_wrote_in_the_same_window(tmp_path):
    store = rustiz.Store(str(tmp_path / "db.db"))
    try:
        assert store.count_request("client:a", 10, 60, now=1000.0).remaining == 9  # another worker: 1 hit
        read = store.rate_window("client:a")
        counted = read
        for moment in (1001.0, 1002.0, 1003.0):  # this worker: 3 hits in memory, from the window it read
            counted, decision = rustiz.count_in_window(counted, moment, 10, 60, None)
        assert decision.remaining == 6
        assert store.count_request("client:a", 10, 60, now=1004.0).remaining == 8  # the other worker: 1 more
        store.add_to_rate_windows({"client:a": (read, counted)})
        assert store.rate_window("client:a") == rustiz.RateWindow(1000.0, 5, None)  # 2 theirs + 3 ours
        # a window this worker opened anew replaces an older one; a newer one written meanwhile wins over ours
        fresh, _ = rustiz.count_in_window(read, 1070.0, 10, 60, None)
        store.add_to_rate_windows({"client:a": (read, fresh)})
        assert store.rate_window("client:a") == rustiz.RateWindow(1070.0, 1, None)
        stale, _ = rustiz.count_in_window(read, 1065.0, 10, 60, None)
        store.add_to_rate_windows({"client:a": (read, stale)})
        assert store.rate_window("client:a") == rustiz.RateWindow(1070.0, 1, None)
    finally:
        store.close()


def test_a_blocked_counter_refuses_without_counting_and_opens_a_new_window_once_the_block_ends():
    window, decision = rustiz.count_in_window(rustiz.RateWindow(0.0, 2, None), 1.0, 2, 60, None)
    assert (decision.allowed, decision.retry_after, window) == (False, 59, rustiz.RateWindow(0.0, 3, 60.0))
    again, refused = rustiz.count_in_window(window, 2.0, 2, 60, None)
    assert again is window and not refused.allowed
    after, allowed = rustiz.count_in_window(window, 61.0, 2, 60, None)
    assert allowed.allowed and after == rustiz.RateWindow(61.0, 1, None)
