"""`rustiz backup` and `rustiz restore`: a drill (an instance under load backed up, restored elsewhere, served
again with the same posts, channels, media and keys), and the archives restore refuses."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import LOCAL_FAKES, RustizServer, read_config, run_cli, wanted_backends
from support import API, DONE, api, auth, connect_database, iso, png_file, scheduled, uploaded, wait_for, \
    webhook_channel


def cli_env(server: RustizServer) -> dict:
    """What a command beside `server` needs: its config, and its database when the environment names it."""
    return {"RUSTIZ_CONFIG": str(server.config_path),
            **{name: server.extra_env[name] for name in ("RUSTIZ_DATABASE",) if name in server.extra_env}}


def post_ids(database: str) -> set:
    with connect_database(database) as db:
        return {row[0] for row in db.execute("SELECT id FROM post WHERE deleted_at IS NULL").fetchall()}


class PostingUnderLoad:
    """A thread that keeps creating posts through the API until stopped; `created` holds their ids."""

    def __init__(self, server: RustizServer, channel_id: str):
        self.server, self.channel_id = server, channel_id
        self.created: list = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stopping.is_set():
            self.created.append(scheduled(self.server, self.channel_id, f"<p>load {len(self.created)}</p>",
                                          type="schedule", date=iso(86400)))

    def __enter__(self) -> "PostingUnderLoad":
        self.thread.start()
        wait_for(lambda: len(self.created), lambda count: count >= 3)
        return self

    def __exit__(self, *failure) -> None:
        self.stopping.set()
        self.thread.join(30)


@pytest.mark.parametrize("backend", wanted_backends(), indirect=True)
def test_a_backup_taken_under_load_restores_into_a_server_with_the_same_posts_channels_media_and_keys(
        start_server, receiver, tmp_path, backend):
    server = start_server(env={**LOCAL_FAKES, "API_LIMIT": "0"})
    channel_id = webhook_channel(server, receiver, "Announcements")
    second = run_cli(server.pyz, "org", "add", "Second team", env=cli_env(server))
    assert second.returncode == 0, second.stderr
    second_key = second.stdout.strip()
    image_bytes = png_file(3, 2, padding=5000)
    image = uploaded(server, image_bytes)
    published = scheduled(server, channel_id, "<p>out already</p>", images=[image])
    wait_for(lambda: _state(server, published), lambda state: state in DONE)
    future = scheduled(server, channel_id, "<p>tomorrow</p>", type="schedule", date=iso(86400), images=[image])

    archive = tmp_path / "instance.tar.gz"
    with PostingUnderLoad(server, channel_id) as load:
        before = set(load.created)
        result = run_cli(server.pyz, "backup", str(archive), env=cli_env(server), timeout=120)
        assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout and "SHA-256" in result.stdout
    assert os.stat(archive).st_mode & 0o077 == 0
    with tarfile.open(archive) as opened:
        manifest = json.loads(opened.extractfile("manifest.json").read())
    assert manifest["source_database"] == backend and manifest["schema_version"] >= 1
    assert {"rustiz.db", "config.env"} <= {item["path"] for item in manifest["files"]}
    assert all(len(item["sha256"]) == 64 for item in manifest["files"])

    restored_dir = tmp_path / "restored"
    result = run_cli(server.pyz, "restore", str(archive), "--dir", str(restored_dir))
    assert result.returncode == 0, result.stderr
    restored = RustizServer(server.pyz, restored_dir, {**LOCAL_FAKES, "API_LIMIT": "0"}).start()
    try:
        restored_posts = post_ids(str(restored_dir / "rustiz.db"))
        # Every post made before the backup began is there; none that the original never had.
        assert {published, future} | before <= restored_posts <= post_ids(server.database)
        assert restored.url != server.url
        # The old keys work, both organizations'.
        assert restored.key == server.key
        status, channels = api(restored, "GET", f"{API}/integrations")
        assert status == 200 and [channel["id"] for channel in channels] == [channel_id], channels
        status, _, _ = restored.request("GET", f"{API}/is-connected", auth(second_key))
        assert status == 200
        status, post = api(restored, "GET", f"{API}/posts/{future}")
        assert status == 200 and "tomorrow" in json.dumps(post)
        status, _, body = restored.request("GET", urlsplit(image["path"]).path)
        assert status == 200 and body == image_bytes
    finally:
        restored.stop()


def _state(server: RustizServer, post_id: str) -> str:
    with connect_database(server.database) as db:
        return db.execute("SELECT state FROM post WHERE id = ?", (post_id,)).fetchone()[0]


# --- what restore refuses ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_backup(pyz, tmp_path_factory) -> Path:
    """A backup of a fresh instance with one uploaded file (no server needed)."""
    folder = tmp_path_factory.mktemp("small")
    assert run_cli(pyz, "init", "--dir", str(folder / "data")).returncode == 0
    upload = folder / "data" / "uploads" / "2026" / "01" / "02"
    upload.mkdir(parents=True)
    (upload / ("a" * 32 + ".png")).write_bytes(png_file())
    archive = folder / "small.tar.gz"
    result = run_cli(pyz, "backup", str(archive), env={"RUSTIZ_CONFIG": str(folder / "data" / "config.env")})
    assert result.returncode == 0, result.stderr
    return archive


def rewritten(source: Path, target: Path, change) -> Path:
    """A copy of the archive `source` with each member (info, bytes) passed through change(info, data)."""
    with tarfile.open(source) as original, tarfile.open(target, "w:gz") as copy:
        for member in original.getmembers():
            data = original.extractfile(member).read()
            for info, new_data in change(member, data):
                info.size = len(new_data)
                copy.addfile(info, io.BytesIO(new_data))
    return target


def test_restore_refuses_a_tampered_file_naming_it_and_writes_nothing(pyz, small_backup, tmp_path):
    def tamper(member, data):
        yield member, (b"X" + data[1:] if member.name.startswith("uploads/") else data)
    archive = rewritten(small_backup, tmp_path / "tampered.tar.gz", tamper)
    result = run_cli(pyz, "restore", str(archive), "--dir", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "uploads/2026/01/02/" in result.stderr and "SHA-256" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_restore_refuses_paths_that_climb_out_links_and_unlisted_files(pyz, small_backup, tmp_path):
    def climbing(member, data):
        if member.name == "manifest.json":
            evil = tarfile.TarInfo("../evil.txt")
            yield evil, b"owned"
        yield member, data

    def linking(member, data):
        if member.name == "manifest.json":
            link = tarfile.TarInfo("uploads/link")
            link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
            yield link, b""
        yield member, data

    for name, change, words in (("climb", climbing, "'../evil.txt' is not a plain relative path"),
                                ("link", linking, "not a plain file")):
        archive = rewritten(small_backup, tmp_path / f"{name}.tar.gz", change)
        result = run_cli(pyz, "restore", str(archive), "--dir", str(tmp_path / name))
        assert result.returncode == 2 and words in result.stderr, result.stderr
        assert not (tmp_path / name).exists() and not (tmp_path / "evil.txt").exists()


def test_restore_refuses_a_folder_that_is_not_empty_and_a_cut_archive(pyz, small_backup, tmp_path):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    result = run_cli(pyz, "restore", str(small_backup), "--dir", str(occupied))
    assert result.returncode == 2 and "is not empty" in result.stderr
    assert os.listdir(occupied) == ["keep.txt"]
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(small_backup.read_bytes()[:-200])
    result = run_cli(pyz, "restore", str(cut), "--dir", str(tmp_path / "from-cut"))
    assert result.returncode == 2 and "nothing was written" in result.stderr, result.stderr
    assert not (tmp_path / "from-cut").exists()


def test_backup_refuses_to_overwrite_a_file(pyz, small_backup, tmp_path):
    config = small_backup.parent / "data" / "config.env"
    result = run_cli(pyz, "backup", str(small_backup), env={"RUSTIZ_CONFIG": str(config)})
    assert result.returncode == 2 and "already exists" in result.stderr


def _with_headers_before_the_manifest(source: Path, target: Path, headers: bytes) -> Path:
    """A copy of `source` (a backup) with raw tar blocks `headers` put before its members."""
    with tarfile.open(source) as original:
        plain = io.BytesIO()
        with tarfile.open(fileobj=plain, mode="w", format=tarfile.USTAR_FORMAT) as copy:
            for member in original.getmembers():
                copy.addfile(member, original.extractfile(member))
    target.write_bytes(gzip.compress(headers + plain.getvalue(), compresslevel=9))
    return target


def _extended_header(kind: bytes, declared: int) -> bytes:
    """A tar header block of type `kind` (b"x": pax, b"L": GNU long name) that declares `declared` bytes of
    records, followed by that many bytes of a name made of "a" (compressed, a few KB per MB)."""
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = kind, declared
    block = header.tobuf(format=tarfile.GNU_FORMAT)[-tarfile.BLOCKSIZE:]
    record = b"a" * declared if kind == tarfile.GNUTYPE_LONGNAME else \
        b"%d path=" % declared + b"a" * (declared - len(b"%d path=" % declared) - 1) + b"\n"
    return block + record + b"\0" * (-declared % tarfile.BLOCKSIZE)


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME], ids=["pax", "gnu-long-name"])
def test_restore_refuses_an_oversized_pax_or_long_name_header_before_reading_it_and_says_so_briefly(
        pyz, small_backup, tmp_path, kind):
    # 64 MiB of name: restore used to hold it whole (and a 1.5 GiB one took 7.9 GB) and print it in its error line.
    archive = _with_headers_before_the_manifest(small_backup, tmp_path / "huge-header.tar.gz",
                                                _extended_header(kind, 64 * 1024 * 1024))
    result = run_cli(pyz, "restore", str(archive), "--dir", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert "67108864 bytes of extended name or attributes" in result.stderr, result.stderr[:500]
    assert "nothing was written" in result.stderr and len(result.stderr) < 600, result.stderr[:500]
    assert not (tmp_path / "out").exists()


def test_restore_quotes_a_long_refused_name_cut_short(pyz, small_backup, tmp_path):
    # Within the header bound (60,000 characters) but not a file a backup holds: named, cut short.
    archive = _with_headers_before_the_manifest(small_backup, tmp_path / "long-name.tar.gz",
                                                _extended_header(tarfile.GNUTYPE_LONGNAME, 60_000))
    result = run_cli(pyz, "restore", str(archive), "--dir", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert "'aaaa" in result.stderr and "(60000 characters)" in result.stderr, result.stderr[:500]
    assert len(result.stderr) < 600, result.stderr[:500]
    assert not (tmp_path / "out").exists()


def test_restore_comments_out_the_backed_up_machine_s_network_and_storage_settings_and_names_them(
        pyz, small_backup, tmp_path):
    foreign = {"RUSTIZ_FETCH_ALLOW": "10.0.0.0/8", "HOST": "0.0.0.0", "RUSTIZ_TRUSTED_PROXIES": "0.0.0.0/0",
               "RUSTIZ_STORAGE": "s3://their-bucket/rustiz", "AWS_SECRET_ACCESS_KEY": "theirs", "API_LIMIT": "7"}
    with tarfile.open(small_backup) as original:
        config = original.extractfile("config.env").read() + "".join(
            f"{name}={value}\n" for name, value in foreign.items()).encode()

    def with_foreign_settings(member, data):
        if member.name == "config.env":
            data = config
        if member.name == "manifest.json":
            manifest = json.loads(data)
            for item in manifest["files"]:
                if item["path"] == "config.env":
                    item["size"], item["sha256"] = len(config), hashlib.sha256(config).hexdigest()
            data = json.dumps(manifest).encode()
        yield member, data

    archive = rewritten(small_backup, tmp_path / "foreign.tar.gz", with_foreign_settings)
    result = run_cli(pyz, "restore", str(archive), "--dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert ("RUSTIZ_FETCH_ALLOW, HOST, RUSTIZ_TRUSTED_PROXIES, RUSTIZ_STORAGE, AWS_SECRET_ACCESS_KEY. Uncomment"
            in result.stdout), result.stdout
    restored = read_config(tmp_path / "out" / "config.env")
    assert restored["API_LIMIT"] == "7" and restored["RUSTIZ_UPLOADS"].endswith("uploads")
    assert not set(foreign) - {"API_LIMIT"} & set(restored), restored
    assert "# RUSTIZ_FETCH_ALLOW=10.0.0.0/8" in (tmp_path / "out" / "config.env").read_text()

    kept = run_cli(pyz, "restore", str(archive), "--dir", str(tmp_path / "kept"), "--keep-settings")
    assert kept.returncode == 0, kept.stderr
    assert "commented out" not in kept.stdout
    restored = read_config(tmp_path / "kept" / "config.env")
    assert all(restored[name] == value for name, value in foreign.items()), restored
    assert "RUSTIZ_UPLOADS" not in restored  # (the bucket kept: uploads live there)
