"""Day-two operations: `rustiz backup`, `rustiz restore`, `rustiz doctor`, `rustiz example`.

Rules:
- backup never stops the servers: SQLite is copied with its online backup API (one consistent snapshot while
  writers go on), PostgreSQL is read inside one REPEATABLE READ transaction into a SQLite snapshot (db_copy's
  Store.table_names/columns/rows/copy_rows). The database is taken first, then the uploads folder, so every
  media row of the snapshot has its file. Uploads in a bucket stay there: the manifest and the output say so.
- The archive is a .tar.gz written beside FILE then renamed (a crash never leaves half an archive under the
  name), mode 0600 (it holds the API key's config and channel credentials), manifest.json last, listing each
  file's path, size and SHA-256.
- restore writes nothing until every member was read and checked against the manifest: names that are
  absolute, climb out with "..", are links or devices, are not listed, or differ in size or hash are refused,
  with the file named (cut short: names come from the archive). A pax or GNU long-name header declaring more than
  MAX_EXTENDED_HEADER_BYTES is refused before tarfile reads it whole. Extraction reads at most the manifest's size
  of each member and checks its hash again. The backed-up machine's network and bucket settings
  (MACHINE_SETTINGS) are commented out in the restored config.env, and named, unless --keep-settings.
- doctor prints one line per check, "ok", "warn" or "FAIL" with what to do, and exits 1 when one failed. A
  channel's credentials are checked with its provider's connect() (what adding the channel calls), when that
  only reads (Provider.connect_is_read_only); OAuth channels through TokenKeeper, as a publish would.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import sys
import tarfile
import tempfile
import time
from typing import Any, Callable, Optional

from rustiz import (
    VERSION, Config, Store, UserError, is_postgres_url, iso_at, make_private_folders, parse_iso_instant,
    read_config_file, redacted_url, utc_now_iso,
)
from .storage import scheduling as schedule_store
from .storage import channels as channel_store
from .storage import operations as operation_store

MANIFEST = "manifest.json"
ARCHIVE_FORMAT = "rustiz-backup"
ARCHIVE_VERSION = 1
DATABASE_MEMBER = "rustiz.db"
CONFIG_MEMBER = "config.env"
UPLOADS_MEMBER = "uploads"
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
MAX_MEMBERS = 1_000_000  # members read before the manifest (the last one) says how many there are
# A pax header or GNU long name/link of a rustiz backup holds one path (at most a few hundred bytes); tarfile reads
# such a header whole into memory, so a larger declared size is refused before it is read.
MAX_EXTENDED_HEADER_BYTES = 64 * 1024
NAME_SHOWN = 120  # characters of a member's name quoted in a message; longer ones are cut short
PIECE = 1024 * 1024


# --- backup -----------------------------------------------------------------------------------------------------

def backup(config: Config, target: str) -> int:
    target = os.path.abspath(target)
    if os.path.exists(target):
        raise UserError(f"{target} already exists: give the backup a new name (nothing is overwritten)")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise UserError(f"cannot write {target}: the folder {folder} does not exist")
    partial = f"{target}.{os.getpid()}.partial"
    with tempfile.TemporaryDirectory(prefix=".rustiz-backup-", dir=folder) as staging:
        snapshot = os.path.join(staging, DATABASE_MEMBER)
        schema_version, source = snapshot_database(config, snapshot)
        files: list = []
        try:
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
                files.append(_add_file(archive, snapshot, DATABASE_MEMBER))
                files.append(_add_file(archive, config.config_path, CONFIG_MEMBER))
                if config.storage is None:
                    for path, name in _upload_files(config.uploads):
                        added = _add_file(archive, path, name, missing_ok=True)  # (deleted meanwhile: skipped)
                        if added is not None:
                            files.append(added)
                manifest = {"format": ARCHIVE_FORMAT, "version": ARCHIVE_VERSION, "rustiz": VERSION,
                            "created_at": utc_now_iso(), "schema_version": schema_version,
                            "source_database": source, "uploads": _uploads_note(config), "files": files}
                _add_bytes(archive, json.dumps(manifest, indent=1).encode(), MANIFEST)
            os.replace(partial, target)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise UserError(f"cannot write the backup {target}: {error.strerror or error}") from None
    uploads = sum(1 for item in files if item["path"].startswith(UPLOADS_MEMBER + "/"))
    size = os.path.getsize(target)
    print(f"wrote {target} ({size} bytes): the database (schema version {schema_version}, from {source}), "
          f"config.env and {uploads} uploaded files, each with its SHA-256 in {MANIFEST}"
          + (f". The uploads live in {_uploads_note(config)} and are not in this archive: back the bucket up "
             "with its own tools" if config.storage is not None else "")
          + ". It holds the config's secrets and channel credentials: keep it private.")
    return 0


def _uploads_note(config: Config) -> str:
    if config.storage is None:
        return "included"
    return f"not included: they live in the bucket {(config.settings or {}).get('RUSTIZ_STORAGE', '')}"


def snapshot_database(config: Config, snapshot: str) -> tuple:
    """A consistent copy of the database as a SQLite file at `snapshot`: (its schema version, "sqlite" or
    "postgresql"). The servers go on writing meanwhile."""
    if is_postgres_url(config.database):
        return _postgres_snapshot(config.database, snapshot), "postgresql"
    if not os.path.exists(config.database):
        raise UserError(f"there is no database at {config.database}: check RUSTIZ_CONFIG and RUSTIZ_DATABASE")
    source = sqlite3.connect(config.database)
    target = sqlite3.connect(snapshot)
    try:
        source.execute("PRAGMA busy_timeout = 5000")
        source.backup(target)  # (all pages in one step: one snapshot, however busy the writers are)
        version = target.execute("SELECT version FROM schema_version").fetchone()[0]
    except sqlite3.Error as error:
        raise UserError(f"cannot copy the database {config.database}: {error}") from None
    finally:
        target.close()
        source.close()
    os.chmod(snapshot, 0o600)
    return version, "sqlite"


def _postgres_snapshot(url: str, snapshot: str) -> int:
    """Every row of the PostgreSQL database, as one REPEATABLE READ transaction sees them, into a new SQLite file."""
    source, destination = Store(url), Store(snapshot)
    try:
        with source.consistent_read():
            version = source.schema_version()
            for table in source.table_names():
                in_source, copied = operation_store.copy_table(source, destination, table)
                if copied != in_source:
                    raise UserError(f"table {table}: {copied} rows copied of {in_source}; try again")
    except sqlite3.DatabaseError as error:
        raise UserError(f"cannot read {redacted_url(url)} for the backup: {error}") from None
    finally:
        source.close()
        destination.close()
    for leftover in (snapshot + "-wal", snapshot + "-shm", snapshot + "-credentials"):
        with contextlib.suppress(OSError):
            os.unlink(leftover)
    return version


def _upload_files(uploads: str) -> list:
    """(path, name in the archive) of every uploaded file; the .incoming folder (uploads under way) left out."""
    found = []
    for directory, folders, names in os.walk(uploads):
        folders[:] = sorted(folder for folder in folders if not folder.startswith("."))
        for name in sorted(names):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append((path, f"{UPLOADS_MEMBER}/{os.path.relpath(path, uploads).replace(os.sep, '/')}"))
    return found


class _HashingReader:
    """A file read by tarfile, hashed on the way."""

    def __init__(self, handle: Any):
        self.handle, self.digest = handle, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        return data


def _add_file(archive: tarfile.TarFile, path: str, name: str, missing_ok: bool = False) -> Optional[dict]:
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        if missing_ok:
            return None
        raise
    with handle:
        size = os.fstat(handle.fileno()).st_size
        reader = _HashingReader(handle)
        archive.addfile(_member(name, size), reader)
    return {"path": name, "size": size, "sha256": reader.digest.hexdigest()}


def _add_bytes(archive: tarfile.TarFile, data: bytes, name: str) -> None:
    import io
    archive.addfile(_member(name, len(data)), io.BytesIO(data))


def _member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o600, int(time.time())
    return info


# --- restore ----------------------------------------------------------------------------------------------------

class Refused(UserError):
    """The archive is not restored; nothing was written."""


def restore(archive_path: str, directory: str, keep_settings: bool = False) -> int:
    directory = os.path.abspath(directory)
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise UserError(f"{directory} is not empty: restore only into an empty or new folder, so that nothing is "
                        "overwritten")
    manifest = verified_manifest(archive_path)
    created = not os.path.exists(directory)
    try:
        make_private_folders(directory)
        _extract(archive_path, manifest, directory)
        config_path = os.path.join(directory, CONFIG_MEMBER)
        dropped = _point_config_at(config_path, keep_settings)
    except BaseException:
        if created:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            for entry in os.scandir(directory):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
        raise
    uploads = sum(1 for item in manifest["files"] if item["path"].startswith(UPLOADS_MEMBER + "/"))
    print(f"restored the backup of {manifest['created_at']} into {directory}: the database (schema version "
          f"{manifest['schema_version']}), config.env and {uploads} uploaded files, every SHA-256 checked"
          + ("" if manifest["uploads"] == "included" else f"; uploads are {manifest['uploads']}")
          + (". It was taken from PostgreSQL and is now a SQLite file: `rustiz db copy --to postgresql://...` moves "
             "it back" if manifest.get("source_database") == "postgresql" else "")
          + f". Start it with: RUSTIZ_CONFIG={config_path} rustiz serve")
    if dropped:
        print(f"commented out in {config_path}, as settings of the machine the backup was taken on (they could let "
              f"this one reach private addresses, listen elsewhere, believe other proxies or store in another "
              f"bucket): {', '.join(dropped)}. Uncomment the ones this machine needs, or restore with "
              "--keep-settings to keep them all")
    return 0


class _HeaderTooLarge(Exception):
    """A pax or GNU long-name header declares more bytes than a rustiz backup ever writes in one."""


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile's member header, refusing an extended header (pax, GNU long name or link) whose declared size is
    above MAX_EXTENDED_HEADER_BYTES before tarfile reads it whole (a 1.5 GiB pax record would be held in memory)."""

    _EXTENDED = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME,
                 tarfile.GNUTYPE_LONGLINK)

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in self._EXTENDED and self.size > MAX_EXTENDED_HEADER_BYTES:
            raise _HeaderTooLarge(f"a tar header declares {self.size} bytes of extended name or attributes (a rustiz "
                                  f"backup's are at most {MAX_EXTENDED_HEADER_BYTES})")
        return super()._proc_member(archive)


def _quoted(name: str) -> str:
    """A member's name for a message: quoted, and cut short when long (it comes from the archive)."""
    return repr(name) if len(name) <= NAME_SHOWN else f"{name[:NAME_SHOWN]!r}... ({len(name)} characters)"


def _member_problem(member: tarfile.TarInfo) -> Optional[str]:
    """Why a member may not be restored (a link, a device, a path outside the folder), or None."""
    name = _quoted(member.name)
    if not member.isreg():
        return f"{name} is not a plain file (a link, a folder or a device)"
    path = member.name
    if path.startswith("/") or "\\" in path or any(part in ("", ".", "..") for part in path.split("/")):
        return f"{name} is not a plain relative path"
    if path not in (MANIFEST, DATABASE_MEMBER, CONFIG_MEMBER) and not path.startswith(UPLOADS_MEMBER + "/"):
        return f"{name} is not a file a rustiz backup holds"
    return None


def _hash_member(archive: tarfile.TarFile, member: tarfile.TarInfo, limit: int,
                 write: Optional[Callable[[bytes], Any]] = None) -> tuple:
    """(size, SHA-256) of a member's bytes, reading at most `limit` + 1 of them (more: the size is wrong)."""
    digest, size = hashlib.sha256(), 0
    source = archive.extractfile(member)
    while size <= limit:
        piece = source.read(min(PIECE, limit + 1 - size))
        if not piece:
            break
        size += len(piece)
        digest.update(piece)
        if write is not None and size <= limit:
            write(piece)
    return size, digest.hexdigest()


def _open_archive(archive_path: str) -> tarfile.TarFile:
    try:
        return tarfile.open(archive_path, mode="r|gz", tarinfo=_BoundedTarInfo)
    except FileNotFoundError:
        raise UserError(f"there is no file {archive_path}") from None
    except _HeaderTooLarge as refused:
        raise Refused(f"{archive_path}: {refused}: it is not a rustiz backup; nothing was written") from None
    except (tarfile.TarError, OSError, EOFError) as error:
        raise Refused(f"{archive_path} is not a rustiz backup (a .tar.gz): {error}; nothing was written") from None


def _members(archive_path: str, archive: tarfile.TarFile) -> Any:
    """The archive's members in order, each checked by _member_problem; unreadable data is refused."""
    import zlib
    try:
        for number, member in enumerate(archive):
            if number >= MAX_MEMBERS:
                raise Refused(f"{archive_path} holds more than {MAX_MEMBERS} files: it is not a rustiz backup; "
                              "nothing was written")
            problem = _member_problem(member)
            if problem:
                raise Refused(f"{archive_path}: {problem}; refused, nothing was written")
            yield member
    except _HeaderTooLarge as refused:
        raise Refused(f"{archive_path}: {refused}: it is not a rustiz backup; nothing was written") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise Refused(f"{archive_path} is damaged (cut short or corrupt: {error}); nothing was written") from None


def verified_manifest(archive_path: str) -> dict:
    """The manifest of an archive whose every file matches it (size and SHA-256); raises Refused naming the
    first file that does not. Reads the whole archive once, writing nothing."""
    import zlib
    seen: dict = {}
    manifest: Optional[dict] = None
    with _open_archive(archive_path) as archive:
        try:
            for member in _members(archive_path, archive):
                if member.name in seen or manifest is not None:
                    raise Refused(f"{archive_path}: {_quoted(member.name)} comes twice, or after the manifest; "
                                  "refused, nothing was written")
                if member.name == MANIFEST:
                    manifest = _read_manifest(archive_path, archive, member)
                    continue
                seen[member.name] = _hash_member(archive, member, MAX_ARCHIVED_FILE_BYTES)
        except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
            raise Refused(f"{archive_path} is damaged (cut short or corrupt: {error}); nothing was "
                          "written") from None
    if manifest is None:
        raise Refused(f"{archive_path} has no {MANIFEST} (cut short?): not restored, nothing was written")
    listed = {item["path"]: item for item in manifest["files"]}
    for name, (size, digest) in seen.items():
        expected = listed.get(name)
        if expected is None:
            raise Refused(f"{archive_path}: {_quoted(name)} is not listed in {MANIFEST}; refused, nothing was written")
        if size != expected["size"] or digest != expected["sha256"]:
            raise Refused(f"{archive_path}: {_quoted(name)} does not match its SHA-256 in {MANIFEST} (the archive is "
                          "corrupt or was changed); refused, nothing was written")
    missing = sorted(set(listed) - set(seen))
    if missing:
        raise Refused(f"{archive_path}: {_quoted(missing[0])} is listed in {MANIFEST} but missing; refused, nothing "
                      "was written")
    for required in (DATABASE_MEMBER, CONFIG_MEMBER):
        if required not in listed:
            raise Refused(f"{archive_path} has no {required}: not a rustiz backup; nothing was written")
    return manifest


MAX_ARCHIVED_FILE_BYTES = 2**40  # (a member is hashed up to this; the manifest then bounds what is written)


def _read_manifest(archive_path: str, archive: tarfile.TarFile, member: tarfile.TarInfo) -> dict:
    if member.size > MAX_MANIFEST_BYTES:
        raise Refused(f"{archive_path}: {MANIFEST} is {member.size} bytes, too large; nothing was written")
    try:
        manifest = json.loads(archive.extractfile(member).read(MAX_MANIFEST_BYTES))
        files = manifest["files"]
        valid = manifest.get("format") == ARCHIVE_FORMAT and isinstance(files, list) and all(
            isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("size"), int)
            and item["size"] >= 0 and isinstance(item.get("sha256"), str) for item in files)
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid:
        raise Refused(f"{archive_path}: {MANIFEST} is not a rustiz backup's manifest; nothing was written")
    if manifest.get("version") != ARCHIVE_VERSION:
        raise Refused(f"{archive_path} is a backup of format version {manifest.get('version')}; this rustiz "
                      f"{VERSION} reads version {ARCHIVE_VERSION}: restore it with a newer rustiz")
    return manifest


def _extract(archive_path: str, manifest: dict, directory: str) -> None:
    """Write each member (the manifest's size at most, its hash checked again) into `directory`."""
    listed = {item["path"]: item for item in manifest["files"]}
    with _open_archive(archive_path) as archive:
        for member in _members(archive_path, archive):
            if member.name == MANIFEST:
                continue
            expected = listed.get(member.name)
            if expected is None:  # (the archive was replaced since it was checked)
                raise Refused(f"{archive_path}: {_quoted(member.name)} is not listed in {MANIFEST}; the folder "
                              f"{directory} was emptied again")
            path = os.path.join(directory, *member.name.split("/"))
            make_private_folders(os.path.dirname(path))
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                size, digest = _hash_member(archive, member, expected["size"], handle.write)
            if size != expected["size"] or digest != expected["sha256"]:
                raise Refused(f"{archive_path}: {_quoted(member.name)} changed while it was restored; the folder "
                              f"{directory} was emptied again")


# Settings of the machine the backup was taken on that would let the restored instance reach, listen or store
# somewhere its operator did not choose (an archive may come from someone else): commented out unless --keep-settings.
MACHINE_SETTINGS = ("RUSTIZ_FETCH_ALLOW", "HOST", "RUSTIZ_TRUSTED_PROXIES", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
                    "RUSTIZ_STORAGE", "RUSTIZ_UPLOADS_SERVE", "RUSTIZ_S3_PART_BYTES", "AWS_ACCESS_KEY_ID",
                    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL_S3")


def _setting_name(line: str) -> str:
    return line.strip().removeprefix("export ").split("=", 1)[0].strip()


def _point_config_at(config_path: str, keep_settings: bool) -> list:
    """The restored config.env names the restored database and uploads (paths relative to it); the backed-up
    machine's MACHINE_SETTINGS are commented out unless `keep_settings`. Returns the names commented out."""
    values = read_config_file(config_path)
    kept_bucket = keep_settings and "://" in values.get("RUSTIZ_STORAGE", "")
    replaced = {"RUSTIZ_DATABASE", "DATABASE_URL", "RUSTIZ_UPLOADS"} | (set() if kept_bucket else {"RUSTIZ_STORAGE"})
    foreign = set() if keep_settings else set(MACHINE_SETTINGS) & set(values)
    with open(config_path, encoding="utf-8") as handle:
        lines = []
        for line in handle.read().splitlines():
            name = _setting_name(line)
            if name in foreign:
                lines.append(f"# {line.strip()}    (the backed-up machine's; commented out by rustiz restore)")
            elif name not in replaced:
                lines.append(line)
    lines += [f"RUSTIZ_DATABASE={DATABASE_MEMBER}"] + ([] if kept_bucket else [f"RUSTIZ_UPLOADS={UPLOADS_MEMBER}"])
    with open(config_path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.chmod(config_path, 0o600)
    make_private_folders(os.path.join(os.path.dirname(config_path), UPLOADS_MEMBER))
    return sorted(foreign, key=MACHINE_SETTINGS.index)


# --- doctor ------------------------------------------------------------------------------------------------------

class Report:
    """The doctor's lines: one per check, "ok", "warn" or "FAIL", the FAILs with what to do."""

    def __init__(self) -> None:
        self.failed = False

    def ok(self, check: str, detail: str) -> None:
        self._line("ok", check, detail)

    def warn(self, check: str, detail: str) -> None:
        self._line("warn", check, detail)

    def fail(self, check: str, detail: str) -> None:
        self.failed = True
        self._line("FAIL", check, detail)

    @staticmethod
    def _line(status: str, check: str, detail: str) -> None:
        print(f"{status:<4} {check}: {detail}", flush=True)


CLOCK_TOLERANCE_SECONDS = 5.0


def doctor(config: Config) -> int:
    report = Report()
    _check_permissions(config, report)
    try:
        store = Store(config.database)
    except UserError as error:
        report.fail("database", f"{error}")
        return 1
    _check_settings_source(config, report)
    try:
        _check_database(store, report)
        _check_scheduler(config, store, report)
        _check_clock(store, report)
        _check_mail(config, report)
        asyncio.run(_check_network(config, store, report))
    finally:
        store.close()
    print(f"\nWeb app: {web_app_url(config)} - sign in with the organization's API key (RUSTIZ_API_KEY in "
          f"{config.config_path}), or with an email and password that `rustiz user add EMAIL` set")
    return 1 if report.failed else 0


def web_app_url(config: Config) -> str:
    """Where a browser on this machine opens the web app: FRONTEND_URL, else the address serve listens on."""
    if config.frontend_url:
        return config.frontend_url + "/"
    return f"http://{_upstream(config)}/"


def _check_settings_source(config: Config, report: Report) -> None:
    names = environment_only_settings(config, dict(os.environ))
    if names:
        report.warn("settings", f"{', '.join(names)} come from this shell's environment, not (or otherwise) from "
                                f"{config.config_path}: the server started without them (systemd, another shell) "
                                "runs otherwise than this check. Write them into config.env to keep them")
    else:
        report.ok("settings", f"every setting comes from {config.config_path}")


def _private(path: str, report: Report, check: str, folder: bool) -> None:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        report.warn(check, f"{path} does not exist yet")
        return
    if mode & 0o077:
        wanted = "700" if folder else "600"
        report.fail(check, f"{path} is readable by other users (mode {mode:o}); run: chmod {wanted} {path}")
    else:
        report.ok(check, f"{path} is private (mode {mode:o})")


def _check_permissions(config: Config, report: Report) -> None:
    report.ok("config", f"{config.config_path} read; rustiz {VERSION}, Python {sys.version.split()[0]}")
    _private(config.config_path, report, "config file", False)
    _private(os.path.dirname(os.path.abspath(config.config_path)), report, "data folder", True)
    if not is_postgres_url(config.database):
        _private(config.database, report, "database file", False)
    if config.storage is None:
        _private(config.uploads, report, "uploads folder", True)


def _check_database(store: Store, report: Report) -> None:
    where = redacted_url(store.path)
    try:
        problems = operation_store.integrity_problems(store)
    except sqlite3.DatabaseError as error:
        report.fail("database integrity", f"{where} cannot be read: {error}")
        return
    if problems:
        report.fail("database integrity", f"{where}: {'; '.join(problems[:3])}. Stop the servers and restore "
                                          "the latest backup (rustiz restore)")
    else:
        report.ok("database integrity", f"{where} ({'a query on every table' if store.remote else 'quick_check'})")
    problem = store.write_probe_problem()
    if problem:
        report.fail("database writable", f"{problem}")
    else:
        report.ok("database writable", "a test write succeeded")


def _check_scheduler(config: Config, store: Store, report: Report) -> None:
    from .metrics import HEARTBEAT_STALE_SECONDS, scheduler_heartbeat
    beat = scheduler_heartbeat(config, store)
    held = _scheduler_lock_held(store) if not store.remote else None
    age = None if beat is None else time.time() - beat
    if held is False:
        report.fail("scheduler", "no process holds the scheduler's lock: queued posts wait. Start rustiz serve "
                                 "(with RUSTIZ_SCHEDULER=1)")
    elif age is None or age > HEARTBEAT_STALE_SECONDS:
        last = "never" if beat is None else f"{age:.0f} s ago ({iso_at(beat)})"
        report.fail("scheduler", f"its last heartbeat was {last}: it is stuck or not running. Check that a "
                                 "rustiz serve with RUSTIZ_SCHEDULER=1 runs, and its log")
    else:
        report.ok("scheduler", f"alive (heartbeat {age:.0f} s ago)")
    due, total, earliest = schedule_store.queue_depth(store, iso_at(time.time()))
    lag = time.time() - parse_iso_instant(earliest).timestamp() if earliest else 0.0
    if lag > 120:
        report.warn("queue", f"{due} of {total} queued posts are due, the oldest {lag:.0f} s overdue: look at "
                             "the scheduler's log (busy platforms, a full publish concurrency)")
    else:
        report.ok("queue", f"{total} queued, {due} due now")


def _scheduler_lock_held(store: Store) -> bool:
    """Whether a process holds the SQLite scheduler's lock file (tried without waiting, let go at once)."""
    import fcntl
    try:
        descriptor = os.open(store.path + "-scheduler", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)  # (closing lets go of a lock taken just now)
    return False


def _check_clock(store: Store, report: Report) -> None:
    now = time.time()
    newest = operation_store.newest_update(store)
    ahead = parse_iso_instant(newest).timestamp() - now if newest else 0.0
    if ahead > CLOCK_TOLERANCE_SECONDS:
        report.fail("clock", f"a post was updated at {newest}, {ahead:.0f} s after this machine's time "
                             f"({iso_at(now)}): the clock went back. Fix the time (timedatectl, NTP)")
        return
    database_time = operation_store.database_clock(store)
    if database_time is not None and abs(database_time - time.time()) > CLOCK_TOLERANCE_SECONDS:
        report.fail("clock", f"this machine's clock and PostgreSQL's differ by {database_time - time.time():+.1f} s: "
                             "run NTP on both (leases and due times compare them)")
        return
    wall, steady = time.time(), time.monotonic()
    time.sleep(0.2)
    drift = (time.time() - wall) - (time.monotonic() - steady)
    if abs(drift) > 0.1:
        report.warn("clock", f"the wall clock moved {drift:+.2f} s against the monotonic clock in 0.2 s: it is "
                             "being stepped; prefer NTP slewing (chrony)")
        return
    report.ok("clock", f"{iso_at(now)} UTC" + (", within 5 s of PostgreSQL's" if database_time is not None else ""))


def _check_mail(config: Config, report: Report) -> None:
    """The SMTP server of RUSTIZ_SMTP_URL: connect, EHLO, STARTTLS and login as configured; no mail is sent."""
    from . import mail
    if not mail.mail_configured(config):
        report.ok("mail", "off (RUSTIZ_SMTP_URL is not set: no e-mail is sent)")
        return
    where = config.smtp.redacted()
    problem = mail.check_smtp(config)
    if problem:
        report.fail("mail", f"{where}: {problem}. Fix RUSTIZ_SMTP_URL in config.env; meanwhile mails wait in the "
                            "outbox and are retried")
    else:
        report.ok("mail", f"{where} answered EHLO" + (" and took the login" if config.smtp.user else "") +
                  f"; mails are sent from {config.mail_from}")


async def _check_network(config: Config, store: Store, report: Report) -> None:
    from .http_client import AddressRefused, ConnectFailed, HttpClient, NoAnswer
    http = HttpClient(config.fetch_allow)
    try:
        url = web_app_url(config) + "health"
        try:
            reply = await http.request("GET", url)
            if reply.status == 200:
                report.ok("FRONTEND_URL", f"{url} answered 200")
            else:
                report.fail("FRONTEND_URL", f"{url} answered {reply.status}: check the reverse proxy in front of "
                                            "rustiz (rustiz example caddy|nginx) and that FRONTEND_URL is its address")
        except AddressRefused as refused:
            report.warn("FRONTEND_URL", f"not checked: {refused}. Fine for a private set-up; platforms that download "
                                        "media cannot reach it")
        except (ConnectFailed, NoAnswer) as failed:
            report.fail("FRONTEND_URL", f"{url} did not answer ({failed}): start rustiz serve, or fix FRONTEND_URL "
                                        "in config.env (the public address of this server)")
        await _check_channels(config, store, http, report)
    finally:
        http.close()


async def _check_channels(config: Config, store: Store, http: Any, report: Report) -> None:
    channels = operation_store.channels_to_check(store)
    if not channels:
        report.ok("channels", "none connected")
    gate = asyncio.Semaphore(4)

    async def check(channel: tuple) -> tuple:
        async with gate:
            return channel, await _channel_verdict(config, store, http, channel)

    for (channel_id, _, name, provider), (status, detail) in await asyncio.gather(*map(check, channels)):
        getattr(report, status)(f'channel "{name}" ({provider}, {channel_id})', detail)


async def _channel_verdict(config: Config, store: Store, http: Any, channel: tuple) -> tuple:
    """("ok" | "warn" | "fail", what was found) for one channel's credentials."""
    from .connect import TokenKeeper
    from .publishers import provider_for
    from .publishers.base import AddressNotAllowed, Channel, NeedsReconnect, PublishError, Rejected
    from .publishers.oauth import OAuthProvider
    channel_id, _, name, identifier = channel
    provider = provider_for(identifier)
    if provider is None or not provider.connect_is_read_only:
        return "ok", f"skipped (no read-only check for {identifier})"
    credentials, session = channel_store.channel_secrets(store, channel_id)
    if isinstance(provider, OAuthProvider) and provider.uses_operator_app(credentials) and \
            provider.app(config.settings or {}) is None:
        return "fail", (f"{provider.label}'s app is not configured: set {' and '.join(provider.app_variables)} in "
                        "config.env")
    target = Channel(channel_id, name, credentials, session, http,
                     lambda saved: channel_store.save_channel_session(store, channel_id, saved))
    try:
        if isinstance(provider, OAuthProvider):
            connected = await TokenKeeper(config, store, http).call(provider, target, lambda: provider.connect(target))
        else:
            connected = await provider.connect(target)
    except AddressNotAllowed as refused:
        return "fail", f"{refused.message}: list the platform's address in RUSTIZ_FETCH_ALLOW if it is yours"
    except (NeedsReconnect, Rejected) as refused:
        status = f" (HTTP {refused.status})" if refused.status else ""
        return "fail", (f"{provider.label} refused the credentials{status}: {refused.message}. Connect the channel "
                        "again (web app, or POST /public/v1/integrations with new credentials)")
    except PublishError as failed:
        return "warn", f"could not check with {provider.label}: {failed.message}; try again later"
    except KeyError as missing:
        return "fail", f"its credentials have no {missing.args[0]}: connect the channel again"
    return "ok", f"{provider.label} accepted the credentials (account {connected.account.name})"


# --- example ------------------------------------------------------------------------------------------------------

def print_example(config: Config, kind: str) -> int:
    print({"systemd": systemd_unit, "caddy": caddy_site, "nginx": nginx_site}[kind](config), end="")
    return 0


# Settings read under their own names besides the RUSTIZ_* ones (PORT=... on the command line changes this run).
PLAIN_SETTINGS = ("HOST", "PORT", "FRONTEND_URL", "REQUEST_LIMIT", "API_LIMIT", "MCP_API_LIMIT", "PUBLISH_GRACE",
                  "DATABASE_URL")


def environment_only_settings(config: Config, environ: dict) -> list:
    """The settings this run takes from the environment that config.env does not hold (or holds otherwise): a
    service started from the config alone (systemd, another shell) runs without them."""
    try:
        written = read_config_file(config.config_path)
    except UserError:
        written = {}
    return sorted(name for name, value in environ.items()
                  if value and name != "RUSTIZ_CONFIG" and (name.startswith("RUSTIZ_") or name in PLAIN_SETTINGS)
                  and written.get(name) != value)


def _environment_note(config: Config) -> str:
    names = environment_only_settings(config, dict(os.environ))
    if not names:
        return ""
    return (f"# Not in this service: {', '.join(names)}, set in this shell's environment but not (or otherwise) in\n"
            f"# {os.path.abspath(config.config_path)}. Write them there to keep them.\n")


def _public_host(config: Config) -> str:
    from urllib.parse import urlsplit
    host = urlsplit(config.frontend_url).hostname if config.frontend_url else None
    return host if host and host not in ("127.0.0.1", "localhost", "::1") else "rustiz.example.com"


def _upstream(config: Config) -> str:
    host = "127.0.0.1" if config.host in ("0.0.0.0", "") else config.host
    return f"[{host}]:{config.port}" if ":" in host else f"{host}:{config.port}"


def systemd_unit(config: Config) -> str:
    data = os.path.dirname(os.path.abspath(config.config_path))
    program = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else "/opt/rustiz/rustiz.pyz"
    writable = sorted({data, os.path.abspath(config.uploads)}
                      | (set() if is_postgres_url(config.database) else {os.path.dirname(config.database)}))
    import getpass
    return f"""# /etc/systemd/system/rustiz.service  (then: systemctl daemon-reload && systemctl enable --now rustiz)
{_environment_note(config)}[Unit]
Description=rustiz social-media scheduler
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User={getpass.getuser()}
WorkingDirectory={data}
Environment=RUSTIZ_CONFIG={os.path.abspath(config.config_path)}
ExecStart={sys.executable} {program} serve
# SIGTERM: rustiz stops accepting and finishes what is in flight (RUSTIZ_SHUTDOWN_TIMEOUT)
KillSignal=SIGTERM
TimeoutStopSec={int(config.shutdown_timeout) + 10}
Restart=on-failure
RestartSec=2
UMask=0077
LimitNOFILE=65536
NoNewPrivileges=true
PrivateTmp=true
ProtectSystem=strict
ProtectHome=read-only
ReadWritePaths={' '.join(writable)}

[Install]
WantedBy=multi-user.target
"""


def caddy_site(config: Config) -> str:
    return f"""# Caddyfile: TLS from Let's Encrypt; set in config.env FRONTEND_URL=https://{_public_host(config)}
# and RUSTIZ_TRUSTED_PROXIES=127.0.0.1 (rustiz then believes Caddy's X-Forwarded-For)
{_public_host(config)} {{
\trequest_body {{
\t\tmax_size {config.max_video_bytes // (1024 * 1024) + 16}MB
\t}}
\treverse_proxy {_upstream(config)} {{
\t\tflush_interval -1
\t}}
}}
"""


def nginx_site(config: Config) -> str:
    host = _public_host(config)
    return f"""# /etc/nginx/sites-available/rustiz: set in config.env FRONTEND_URL=https://{host}
# and RUSTIZ_TRUSTED_PROXIES=127.0.0.1 (rustiz then believes nginx's X-Forwarded-For)
server {{
    listen 443 ssl http2;
    server_name {host};
    ssl_certificate     /etc/letsencrypt/live/{host}/fullchain.pem;
    ssl_certificate_key /etc/letsencrypt/live/{host}/privkey.pem;

    client_max_body_size {config.max_video_bytes // (1024 * 1024) + 16}m;

    location / {{
        proxy_pass http://{_upstream(config)};
        proxy_http_version 1.1;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header Connection "";
        proxy_request_buffering off;   # uploads stream to rustiz as they arrive
        proxy_buffering off;           # MCP's event streams (/sse) reach the client at once
        proxy_read_timeout 3600s;
    }}
}}
server {{
    listen 80;
    server_name {host};
    return 301 https://$host$request_uri;
}}
"""
