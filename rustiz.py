#!/usr/bin/env python3
"""rustiz: a self-hosted social-media scheduler that speaks the Postiz public API.

One module, one process, one SQLite file. Run it with ``python3 rustiz.pyz serve``.

Map of this file (each section starts with a banner comment):
  1. Constants        version, defaults, small helpers (ids, time, JSON)
  2. Config           config.env parsing, environment overrides -> one frozen Config
  3. Storage          Store: the only owner of SQL (schema, migrations, one method per query)
  4. HTTP protocol    sans-IO: RequestParser.feed(bytes) -> events; response serialisation
  5. Server           the asyncio Protocol, timeouts, graceful shutdown, --workers
  6. Auth and limits  API keys, REQUEST_LIMIT per client, API_LIMIT per organization
  7. API              routing table and the public API handlers (Postiz JSON shapes)
  8. Speedups         orjson/uvloop when importable, or unpacked from the .pyz bundle
  9. CLI              init, serve, key rotate, version
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import math
import mmap
import os
import re
import signal
import socket
import sqlite3
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, NamedTuple, Optional, Union

# asyncio imports ssl only to offer TLS sockets, and loading OpenSSL costs a quarter of rustiz's
# start-up time. rustiz serves plain HTTP (TLS belongs to the reverse proxy in front of it), so
# asyncio is imported without ssl. Outbound HTTPS must therefore use http.client or urllib (run in
# a thread), which import ssl themselves when first used; asyncio's own TLS stays off.
if "ssl" not in sys.modules and "asyncio" not in sys.modules:
    sys.modules["ssl"] = None  # type: ignore[assignment]  # makes `import ssl` fail inside asyncio
    try:
        import asyncio
    finally:
        del sys.modules["ssl"]
else:
    import asyncio

# =============================================================================
# 1. Constants
# =============================================================================

VERSION = "0.1.0"
DEFAULT_PORT = 5077
DEFAULT_HOST = "127.0.0.1"
DEFAULT_DATA_DIR = "rustiz-data"
DEFAULT_API_LIMIT = 90  # POST /public/v1/posts per organization per hour (Postiz default)
DEFAULT_REQUEST_LIMIT = 600  # requests per minute per client address
DEFAULT_MAX_BODY_BYTES = 25 * 1024 * 1024
MAX_IMAGE_BYTES = 10 * 1024 * 1024  # Postiz's limit for uploaded images
DEFAULT_MAX_VIDEO_BYTES = 1024 * 1024 * 1024  # Postiz's limit for uploaded video
MAX_HEAD_BYTES = 16 * 1024
API_LIMIT_WINDOW_SECONDS = 3600
REQUEST_LIMIT_WINDOW_SECONDS = 60


def log(message: str) -> None:
    """Every log line goes to stderr, one line each, so a supervisor can collect them."""
    sys.stderr.write(f"rustiz[{os.getpid()}]: {message}\n")
    sys.stderr.flush()


def utc_now_iso() -> str:
    """Timestamps as Postiz serialises them: ISO 8601, milliseconds, Z."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_cuid_counter = int.from_bytes(os.urandom(4), "big") % 36**4


def _base36(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, rest = divmod(number, 36)
        digits.append(_BASE36[rest])
    return "".join(reversed(digits))


def new_cuid() -> str:
    """A 25-character cuid-like id ('c' + time + counter + host fingerprint + random), as Postiz's ids."""
    global _cuid_counter
    _cuid_counter = (_cuid_counter + 1) % 36**4
    fingerprint = _base36(os.getpid() * 31 + hash(socket.gethostname()) % 36**2, 4)
    return ("c" + _base36(int(time.time() * 1000), 8) + _base36(_cuid_counter, 4)
            + fingerprint + _base36(int.from_bytes(os.urandom(6), "big"), 8))


def new_uuid() -> str:
    """A random (version 4) UUID, without importing the uuid module at start-up."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def new_api_key() -> str:
    """64 lowercase hex characters, the shape of a Postiz organization key."""
    return os.urandom(32).hex()  # os.urandom is what `secrets` uses, without its start-up cost


def hash_api_key(key: str) -> str:
    """Keys are 256-bit random strings, so one SHA-256 is enough to store them safely."""
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def _make_json_encoder() -> Callable[[Any], str]:
    """Compact UTF-8 JSON. json.dumps() builds a new encoder per call; the C encoder made once is ~20x faster."""
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    iterencode = make_encoder(None, None, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda value: "".join(iterencode(value, 0))


_encode_json = _make_json_encoder()


def _json_dumps_stdlib(value: Any) -> bytes:
    return _encode_json(value).encode("utf-8")


json_dumps: Callable[[Any], bytes] = _json_dumps_stdlib  # replaced by orjson.dumps when available


class UserError(Exception):
    """A problem the operator can fix; printed as one line, exit status `exit_code`, never a traceback."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


# =============================================================================
# 2. Config
# =============================================================================

@dataclass(frozen=True)
class Config:
    config_path: str
    database: str
    uploads: str
    api_key: str
    host: str
    port: int
    frontend_url: str  # the public base URL for absolute links; "" until serve knows the bound address
    request_limit: int
    api_limit: int
    workers: int
    max_body_bytes: int
    header_timeout: float
    keepalive_timeout: float
    shutdown_timeout: float
    access_log: bool
    trusted_proxies: tuple = ()
    max_video_bytes: int = DEFAULT_MAX_VIDEO_BYTES
    fetch_allow: tuple = ()  # hosts (lower-case str) and ip_networks upload-from-url may fetch from anyway


def default_config_path(environ: dict) -> str:
    return environ.get("RUSTIZ_CONFIG") or os.path.join(DEFAULT_DATA_DIR, "config.env")


def read_config_file(path: str) -> dict:
    """KEY=VALUE lines; blank lines and # comments ignored; values may be quoted."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise UserError(f"cannot read config file {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"cannot read config file {path}: it is not UTF-8 text") from None
    values = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UserError(f"{path}, line {number}: expected NAME=value, got {raw.strip()!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[name] = value
    return values


def _int_setting(values: dict, name: str, default: int, minimum: int, maximum: int) -> int:
    raw = values.get(name)
    if raw is None or raw == "":
        return default
    try:
        number = int(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r} is not a whole number") from None
    if not minimum <= number <= maximum:
        raise UserError(f"{name}={number} is out of range: use {minimum}..{maximum}")
    return number


def _seconds_setting(values: dict, name: str, default: float) -> float:
    raw = values.get(name)
    if raw is None or raw == "":
        return default
    try:
        seconds = float(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r} is not a number of seconds") from None
    if not 0 < seconds <= 86400:
        raise UserError(f"{name}={raw} is out of range: use a number of seconds above 0")
    return seconds


def _trusted_proxies(raw: str) -> tuple:
    if not raw.strip():
        return ()
    import ipaddress  # only when proxies are configured: it costs start-up time
    networks = []
    for item in raw.replace(",", " ").split():
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise UserError(f"RUSTIZ_TRUSTED_PROXIES: {item!r} is not an IP address or network") from None
    return tuple(networks)


def _fetch_allow(raw: str) -> tuple:
    """RUSTIZ_FETCH_ALLOW: host names, addresses or networks that upload-from-url may reach although private."""
    if not raw.strip():
        return ()
    import ipaddress  # only when an allow-list is configured: it costs start-up time
    allowed: list = []
    for item in raw.replace(",", " ").split():
        try:
            allowed.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", item):
                raise UserError(f"RUSTIZ_FETCH_ALLOW: {item!r} is neither a host name nor an IP address or "
                                "network") from None
            allowed.append(item.lower())
    return tuple(allowed)


def load_config(environ: dict, workers_flag: Optional[int] = None) -> Config:
    """The config file named by RUSTIZ_CONFIG, then environment variables on top of it."""
    path = default_config_path(environ)
    values = read_config_file(path)
    values.update({name: value for name, value in environ.items() if value != ""})
    base = os.path.dirname(os.path.abspath(path))

    def resolve(name: str, default: str) -> str:
        return os.path.join(base, values.get(name) or default)

    host = values.get("HOST", DEFAULT_HOST)
    port = _int_setting(values, "PORT", DEFAULT_PORT, 0, 65535)
    workers = workers_flag if workers_flag is not None else _int_setting(values, "RUSTIZ_WORKERS", 1, 1, 64)
    if not 1 <= workers <= 64:
        raise UserError(f"--workers {workers} is out of range: use 1..64")
    access_log = values.get("RUSTIZ_ACCESS_LOG", "0").lower()
    if access_log not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        raise UserError(f"RUSTIZ_ACCESS_LOG={access_log!r}: use 1 or 0")
    return Config(
        config_path=path,
        database=resolve("RUSTIZ_DATABASE", "rustiz.db"),
        uploads=resolve("RUSTIZ_UPLOADS", "uploads"),
        api_key=values.get("RUSTIZ_API_KEY", ""),
        host=host,
        port=port,
        frontend_url=values.get("FRONTEND_URL", "").rstrip("/"),
        request_limit=_int_setting(values, "REQUEST_LIMIT", DEFAULT_REQUEST_LIMIT, 0, 10**9),
        api_limit=_int_setting(values, "API_LIMIT", DEFAULT_API_LIMIT, 0, 10**9),
        workers=workers,
        max_body_bytes=_int_setting(values, "RUSTIZ_MAX_BODY", DEFAULT_MAX_BODY_BYTES, 1024, 2**40),
        header_timeout=_seconds_setting(values, "RUSTIZ_HEADER_TIMEOUT", 10.0),
        keepalive_timeout=_seconds_setting(values, "RUSTIZ_KEEPALIVE_TIMEOUT", 75.0),
        shutdown_timeout=_seconds_setting(values, "RUSTIZ_SHUTDOWN_TIMEOUT", 10.0),
        access_log=access_log in ("1", "true", "yes", "on"),
        trusted_proxies=_trusted_proxies(values.get("RUSTIZ_TRUSTED_PROXIES", "")),
        max_video_bytes=_int_setting(values, "RUSTIZ_MAX_VIDEO_BYTES", DEFAULT_MAX_VIDEO_BYTES, 1024, 2**40),
        fetch_allow=_fetch_allow(values.get("RUSTIZ_FETCH_ALLOW", "")),
    )


def _write_private_file(path: str, text: str) -> None:
    """Mode 0600 (config files hold the API key), replaced atomically so a crash never leaves half a file."""
    temporary = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


def write_config_file(path: str, values: dict) -> None:
    lines = ["# rustiz configuration. Environment variables of the same name override these values.",
             *(f"{name}={value}" for name, value in values.items())]
    _write_private_file(path, "\n".join(lines) + "\n")


def update_config_value(path: str, name: str, value: str) -> None:
    """Change one NAME=value line and keep every other line (and comment) as it was."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    replaced = False
    for index, line in enumerate(lines):
        if line.strip().removeprefix("export ").split("=", 1)[0].strip() == name:
            lines[index] = f"{name}={value}"
            replaced = True
    if not replaced:
        lines.append(f"{name}={value}")
    _write_private_file(path, "\n".join(lines) + "\n")


# =============================================================================
# 3. Storage
# =============================================================================

# Forward migrations, applied in order; the schema version is the number applied.
# Never edit a published step: add a new one.
MIGRATIONS: tuple = (
    """
    CREATE TABLE organization (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        description TEXT,
        api_key_hash TEXT UNIQUE,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE TABLE customer (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX customer_organization ON customer(organization_id);
    CREATE TABLE integration (
        id TEXT PRIMARY KEY,
        internal_id TEXT NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        name TEXT NOT NULL,
        picture TEXT,
        provider_identifier TEXT NOT NULL,
        type TEXT NOT NULL DEFAULT 'social',
        token TEXT NOT NULL DEFAULT '',
        disabled INTEGER NOT NULL DEFAULT 0,
        token_expiration TEXT,
        refresh_token TEXT,
        profile TEXT,
        deleted_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        in_between_steps INTEGER NOT NULL DEFAULT 0,
        refresh_needed INTEGER NOT NULL DEFAULT 0,
        posting_times TEXT NOT NULL DEFAULT '[{"time":120},{"time":400},{"time":700}]',
        custom_instance_details TEXT,
        customer_id TEXT REFERENCES customer(id),
        root_internal_id TEXT,
        additional_settings TEXT NOT NULL DEFAULT '[]'
    );
    CREATE INDEX integration_organization ON integration(organization_id, deleted_at);
    CREATE TABLE rate_limit (
        key TEXT PRIMARY KEY,
        window_start REAL NOT NULL,
        hits INTEGER NOT NULL,
        blocked_until REAL
    );
    """,
    """
    CREATE TABLE media (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        name TEXT NOT NULL,
        original_name TEXT,
        path TEXT NOT NULL,
        thumbnail TEXT,
        thumbnail_timestamp INTEGER,
        alt TEXT,
        file_size INTEGER NOT NULL DEFAULT 0,
        type TEXT NOT NULL DEFAULT 'image',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX media_organization ON media(organization_id, deleted_at);
    """,
)


class RateDecision(NamedTuple):
    """The outcome of counting one request against a fixed window."""
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int  # until the window ends
    retry_after: int  # seconds until a refused caller may try again (0 when allowed)


class Store:
    """The only code that speaks SQL. One connection per process; WAL lets workers share the file.

    Reads go through `_read`, writes through `_writing()`. In the server, reads made in one turn of
    the event loop share one read transaction (see `share_reads_per_loop_turn`): a WAL read
    transaction costs file-lock system calls, and paying them once per turn instead of once per
    query doubles the throughput of a read-only route. Every write first ends that shared read, so
    writes are committed before their response is sent.
    """

    def __init__(self, path: str):
        self.path = path
        self._schedule_end_of_turn: Optional[Callable[[Callable[[], None]], Any]] = None
        self._read_open = False
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, exist_ok=True)
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                                      cached_statements=256)
            self.db.execute("PRAGMA busy_timeout = 5000")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
            self._credentials_generation = self._map_credentials_generation()
        except sqlite3.DatabaseError as error:
            raise UserError(f"cannot open database {path}: {error}") from None
        except OSError as error:
            raise UserError(f"cannot open database {path}: {error.strerror}") from None

    def close(self) -> None:
        self._end_shared_read()
        self.db.close()
        self._credentials_generation.close()

    def share_reads_per_loop_turn(self, call_soon: Callable[[Callable[[], None]], Any]) -> None:
        """`call_soon(callback)` must run callback after the current turn of the event loop."""
        self._schedule_end_of_turn = call_soon

    def _read(self, sql: str, parameters: tuple = ()) -> sqlite3.Cursor:
        if not self._read_open and self._schedule_end_of_turn is not None:
            self.db.execute("BEGIN")
            self._read_open = True
            self._schedule_end_of_turn(self._end_shared_read)
        return self.db.execute(sql, parameters)

    def _end_shared_read(self) -> None:
        if self._read_open:
            self._read_open = False
            self.db.execute("COMMIT")

    @contextlib.contextmanager
    def _writing(self):
        """One write transaction, committed when the block ends (rolled back if it raises)."""
        self._end_shared_read()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _map_credentials_generation(self) -> mmap.mmap:
        """An 8-byte counter beside the database, shared by every process through mmap.

        Whoever changes an API key bumps it; servers compare it on each request (a memory read)
        and forget their cached key lookups when it moved, so a rotated key stops working at once.
        """
        descriptor = os.open(self.path + "-credentials", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(descriptor).st_size < 8:
                os.ftruncate(descriptor, 8)
            return mmap.mmap(descriptor, 8)
        finally:
            os.close(descriptor)

    def credentials_generation(self) -> bytes:
        return self._credentials_generation[:8]

    def _credentials_changed(self) -> None:
        counter = int.from_bytes(self._credentials_generation[:8], "little")
        self._credentials_generation[:8] = ((counter + 1) % 2**64).to_bytes(8, "little")

    def _migrate(self) -> None:
        with self._writing() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            current = row[0] if row else 0
            if current > len(MIGRATIONS):
                raise UserError(
                    f"database {self.path} has schema version {current}, but this rustiz {VERSION} knows "
                    f"versions up to {len(MIGRATIONS)}: run a newer rustiz, or point RUSTIZ_DATABASE elsewhere")
            for step in MIGRATIONS[current:]:
                for statement in step.split(";"):
                    if statement.strip():
                        db.execute(statement)
            if row is None:
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (len(MIGRATIONS),))
            else:
                db.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS),))

    def schema_version(self) -> int:
        return self._read("SELECT version FROM schema_version").fetchone()[0]

    # --- organizations ------------------------------------------------------

    def create_organization(self, name: str, api_key_hash: str) -> str:
        organization_id = new_uuid()
        now = utc_now_iso()
        with self._writing() as db:
            db.execute("INSERT INTO organization (id, name, api_key_hash, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?)", (organization_id, name, api_key_hash, now, now))
        return organization_id

    def organizations(self) -> list:
        rows = self._read(
            "SELECT id, name, api_key_hash FROM organization WHERE deleted_at IS NULL ORDER BY created_at, id")
        return [{"id": row[0], "name": row[1], "api_key_hash": row[2]} for row in rows]

    def organization_for_key_hash(self, api_key_hash: str) -> Optional[str]:
        row = self._read(
            "SELECT id, api_key_hash FROM organization WHERE api_key_hash = ? AND deleted_at IS NULL",
            (api_key_hash,)).fetchone()
        # The index finds the row; the constant-time compare keeps the final check free of timing leaks.
        if row is not None and hmac.compare_digest(row[1], api_key_hash):
            return row[0]
        return None

    def set_api_key_hash(self, organization_id: str, api_key_hash: str) -> None:
        with self._writing() as db:
            db.execute("UPDATE organization SET api_key_hash = ?, updated_at = ? WHERE id = ?",
                       (api_key_hash, utc_now_iso(), organization_id))
        self._credentials_changed()

    # --- channels (integrations) ---------------------------------------------

    _INTEGRATIONS_SQL = (
        "SELECT i.id, i.name, i.provider_identifier, i.picture, i.disabled, i.profile, c.id, c.name "
        "FROM integration i LEFT JOIN customer c ON c.id = i.customer_id "
        "WHERE i.organization_id = ? AND i.deleted_at IS NULL")

    def integrations(self, organization_id: str, customer_id: Optional[str] = None) -> list:
        """Channels in Postiz's public shape; `customer` is omitted when the channel has none."""
        if customer_id is None:
            rows = self._read(self._INTEGRATIONS_SQL + " ORDER BY i.created_at, i.id", (organization_id,))
        else:
            rows = self._read(self._INTEGRATIONS_SQL + " AND i.customer_id = ? ORDER BY i.created_at, i.id",
                                   (organization_id, customer_id))
        channels = []
        for row in rows:
            channel = {"id": row[0], "name": row[1], "identifier": row[2], "picture": row[3],
                       "disabled": bool(row[4]), "profile": row[5]}
            if row[6] is not None:
                channel["customer"] = {"id": row[6], "name": row[7]}
            channels.append(channel)
        return channels

    # --- rate limits ----------------------------------------------------------

    def count_request(self, key: str, limit: int, window_seconds: int, block_seconds: Optional[int] = None,
                      now: Optional[float] = None) -> RateDecision:
        """Fixed-window counter shared by every worker and kept across restarts.

        The first hit opens a window; a hit over the limit blocks the key for `block_seconds` from that
        moment (Postiz's throttler) or, when None, until the window ends; afterwards counting restarts at 1.
        """
        now = time.time() if now is None else now
        with self._writing() as db:
            row = db.execute("SELECT window_start, hits, blocked_until FROM rate_limit WHERE key = ?",
                             (key,)).fetchone()
            if row is not None and row[2] is not None and now < row[2]:
                return RateDecision(False, limit, 0, math.ceil(row[2] - now), math.ceil(row[2] - now))
            if row is None or now >= row[0] + window_seconds or row[2] is not None:
                window_start, hits = now, 1
            else:
                window_start, hits = row[0], row[1] + 1
            blocked_until = None
            if hits > limit:
                blocked_until = now + block_seconds if block_seconds else window_start + window_seconds
            db.execute("INSERT OR REPLACE INTO rate_limit (key, window_start, hits, blocked_until) "
                       "VALUES (?, ?, ?, ?)", (key, window_start, hits, blocked_until))
        reset = max(0, math.ceil(window_start + window_seconds - now))
        if blocked_until is not None:
            return RateDecision(False, limit, 0, reset, max(1, math.ceil(blocked_until - now)))
        return RateDecision(True, limit, max(0, limit - hits), reset, 0)

    def forget_expired_rate_limits(self, now: float, longest_window: int) -> int:
        with self._writing() as db:
            cursor = db.execute(
                "DELETE FROM rate_limit WHERE window_start < ? AND (blocked_until IS NULL OR blocked_until < ?)",
                (now - longest_window, now))
        return cursor.rowcount

    # --- media ----------------------------------------------------------------

    def create_media(self, organization_id: str, name: str, path: str, file_size: int, kind: str) -> dict:
        """A new Media row; returns what Postiz's upload routes answer: {id, name, originalName, path, thumbnail, alt}.

        Like Postiz, the client's file name is not kept (the official SDK sends only the extension)."""
        media_id = new_uuid()
        now = utc_now_iso()
        with self._writing() as db:
            db.execute("INSERT INTO media (id, organization_id, name, path, file_size, type, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (media_id, organization_id, name, path, file_size, kind,
                                                          now, now))
        return {"id": media_id, "name": name, "originalName": None, "path": path, "thumbnail": None, "alt": None}


# =============================================================================
# 4. HTTP protocol (sans-IO): bytes in, events out; no sockets, no asyncio
# =============================================================================

# Value types below are NamedTuples rather than dataclasses: building a dataclass costs about a
# millisecond of start-up each.

class RequestHead(NamedTuple):
    """A request line and its headers. Header names are lower-cased; repeated headers are joined with ", "."""
    method: str
    target: str
    version: str  # "1.1" or "1.0"
    headers: dict
    keep_alive: bool
    expect_continue: bool
    content_length: Optional[int]  # None for chunked bodies
    chunked: bool


class Body(NamedTuple):
    data: bytes


class EndOfMessage(NamedTuple):
    pass


class ParseError(NamedTuple):
    """The stream can no longer be trusted: answer `status` and close the connection."""
    status: int
    reason: str


Event = Union[RequestHead, Body, EndOfMessage, ParseError]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # all but TAB, CR and LF
_HTTP_VERSION = re.compile(r"HTTP/(\d)\.(\d)\Z")
_checked_header_names: dict = {}  # raw name -> lower-cased name, for names already proven to be tokens
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(;[^\r\n]*)?\Z")

_HEAD, _FIXED_BODY, _CHUNK_SIZE_LINE, _CHUNK_DATA, _CHUNK_END, _TRAILERS, _FAILED = range(7)
_END_OF_MESSAGE = EndOfMessage()


class RequestParser:
    """Turns the bytes of one connection into request events, in order, whatever way they are split.

    `feed(data)` returns the events completed by `data`: RequestHead, then Body chunks, then
    EndOfMessage, for each request (pipelined requests follow one another). A ParseError is the last
    event the parser ever returns.

    `body_limit_for(head)`, when given, names a larger body limit for some requests (uploads) or
    returns None; it is asked only about chunked bodies and bodies over `max_body_bytes`.
    """

    def __init__(self, max_head_bytes: int = MAX_HEAD_BYTES, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 body_limit_for: Optional[Callable[[RequestHead], Optional[int]]] = None):
        self.max_head_bytes = max_head_bytes
        self.max_body_bytes = max_body_bytes
        self.body_limit_for = body_limit_for
        self._buffer = b""
        self._state = _HEAD
        self._remaining = 0  # bytes left in the fixed body or the current chunk
        self._body_seen = 0
        self._chunked_body_limit = max_body_bytes

    def _body_limit(self, head: RequestHead) -> int:
        larger = self.body_limit_for(head) if self.body_limit_for is not None else None
        return larger if larger is not None else self.max_body_bytes

    @property
    def idle(self) -> bool:
        """True between messages with nothing buffered: the connection may be closed without loss."""
        return self._state == _HEAD and not self._buffer

    @property
    def reading_head(self) -> bool:
        return self._state == _HEAD

    def feed(self, data: bytes) -> list:
        if self._state == _FAILED:
            return []
        buffer = self._buffer + data if self._buffer else data
        events: list = []
        position = 0
        size = len(buffer)
        while position < size:
            state = self._state
            if state == _HEAD:
                while buffer.startswith(b"\r\n", position):  # stray CRLF between requests (RFC 9112 2.2)
                    position += 2
                end = buffer.find(b"\r\n\r\n", position)
                if end < 0:
                    # Up to 3 bytes of the final CRLFCRLF may already be here: allow for them, so the
                    # verdict does not depend on how the bytes were split.
                    if size - position > self.max_head_bytes + 3:
                        return self._fail(events, 431, "request line and headers are larger than 16 KiB")
                    break
                if end - position > self.max_head_bytes:
                    return self._fail(events, 431, "request line and headers are larger than 16 KiB")
                head = self._parse_head(buffer[position:end])
                position = end + 4
                if isinstance(head, ParseError):
                    return self._fail(events, head.status, head.reason)
                if head.content_length and head.content_length > self.max_body_bytes:
                    limit = self._body_limit(head)
                    if head.content_length > limit:
                        # Refused before the head is reported, so no 100 Continue invites the body first.
                        return self._fail(events, 413, f"request body of {head.content_length} bytes is over "
                                                       f"the limit of {limit} bytes")
                events.append(head)
                if head.chunked:
                    self._state = _CHUNK_SIZE_LINE
                    self._body_seen = 0
                    self._chunked_body_limit = self._body_limit(head)
                elif head.content_length:
                    self._state = _FIXED_BODY
                    self._remaining = head.content_length
                else:
                    events.append(_END_OF_MESSAGE)
            elif state == _FIXED_BODY:
                take = min(self._remaining, size - position)
                events.append(Body(buffer[position:position + take]))
                position += take
                self._remaining -= take
                if not self._remaining:
                    events.append(_END_OF_MESSAGE)
                    self._state = _HEAD
            elif state == _CHUNK_SIZE_LINE:
                end = buffer.find(b"\r\n", position)
                if (end if end >= 0 else size - 1) - position > 1024:
                    return self._fail(events, 400, "chunk size line is longer than 1024 bytes")
                if end < 0:
                    break
                match = _CHUNK_SIZE.match(buffer, position, end)
                if match is None:
                    return self._fail(events, 400, "malformed chunk size")
                chunk_size = int(match.group(1), 16)
                position = end + 2
                self._body_seen += chunk_size
                if self._body_seen > self._chunked_body_limit:
                    return self._fail(events, 413,
                                      f"request body is over the limit of {self._chunked_body_limit} bytes")
                self._remaining = chunk_size
                self._state = _CHUNK_DATA if chunk_size else _TRAILERS
            elif state == _CHUNK_DATA:
                take = min(self._remaining, size - position)
                events.append(Body(buffer[position:position + take]))
                position += take
                self._remaining -= take
                if not self._remaining:
                    self._state = _CHUNK_END
            elif state == _CHUNK_END:
                if size - position < 2:
                    break
                if buffer[position:position + 2] != b"\r\n":
                    return self._fail(events, 400, "chunk data is not followed by CRLF")
                position += 2
                self._state = _CHUNK_SIZE_LINE
            else:  # _TRAILERS: header lines until an empty line; their content is not used
                end = buffer.find(b"\r\n", position)
                if (end if end >= 0 else size - 1) - position > self.max_head_bytes:
                    return self._fail(events, 431, "a chunked trailer line is larger than 16 KiB")
                if end < 0:
                    break
                line = buffer[position:end]
                position = end + 2
                if not line:
                    events.append(_END_OF_MESSAGE)
                    self._state = _HEAD
                elif b":" not in line:
                    return self._fail(events, 400, "malformed trailer line")
        self._buffer = buffer[position:]
        return events

    def _fail(self, events: list, status: int, reason: str) -> list:
        self._state = _FAILED
        self._buffer = b""
        events.append(ParseError(status, reason))
        return events

    def _parse_head(self, raw: bytes) -> Union[RequestHead, ParseError]:
        text = raw.decode("latin-1")
        bad = _CONTROL_CHARACTERS.search(text)
        if bad is not None:
            return ParseError(400, f"request head contains the control character {bad.group()!r}")
        lines = text.split("\r\n")
        if text.count("\r") != len(lines) - 1 or text.count("\n") != len(lines) - 1:
            return ParseError(400, "request head contains a CR or LF that is not part of a CRLF line end")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            return ParseError(400, "malformed request line")
        method, target, version_text = parts
        if method not in KNOWN_METHODS and not _TOKEN.match(method):
            return ParseError(400, "malformed request method")
        if not target or "\t" in target:
            return ParseError(400, "malformed request target")
        if version_text == "HTTP/1.1":
            http10 = False
        else:
            version = _HTTP_VERSION.match(version_text)
            if version is None:
                return ParseError(400, "malformed HTTP version")
            if version.group(1) != "1":
                return ParseError(505, f"HTTP version {version_text[5:]} is not supported: use HTTP/1.1")
            http10 = version.group(2) == "0"
        headers: dict = {}
        content_lengths = []
        for line in lines[1:]:
            raw_name, colon, value = line.partition(":")
            name = _checked_header_names.get(raw_name)
            if name is None:
                if not colon or not _TOKEN.match(raw_name):
                    if line[:1] in (" ", "\t"):
                        return ParseError(400, "folded header lines are not allowed")
                    return ParseError(400, f"malformed header line {line[:40]!r}")
                name = raw_name.lower()
                if len(_checked_header_names) < 1024:
                    _checked_header_names[raw_name] = name
            value = value.strip(" \t")
            if name == "content-length":
                content_lengths.extend(part.strip() for part in value.split(","))
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        transfer_encoding = headers.get("transfer-encoding")
        chunked = False
        content_length: Optional[int] = 0
        if transfer_encoding is not None:
            if content_lengths:
                return ParseError(400, "both Content-Length and Transfer-Encoding sent")
            if http10 or transfer_encoding.lower() != "chunked":
                return ParseError(400, f"unsupported Transfer-Encoding {transfer_encoding!r}: only chunked")
            chunked, content_length = True, None
        elif content_lengths:
            if not all(part.isdigit() and part.isascii() for part in content_lengths):
                return ParseError(400, "malformed Content-Length")
            if any(len(part) > 18 for part in content_lengths):
                return ParseError(413, "Content-Length is larger than any body this server accepts")
            if len(set(map(int, content_lengths))) != 1:
                return ParseError(400, "conflicting Content-Length headers")
            content_length = int(content_lengths[0])
        connection = headers.get("connection")
        options = {option.strip() for option in connection.lower().split(",")} if connection else ()
        keep_alive = "keep-alive" in options if http10 else "close" not in options
        expect_continue = not http10 and headers.get("expect", "").lower() == "100-continue"
        return RequestHead(method, target, "1.0" if http10 else "1.1", headers, keep_alive,
                           expect_continue, content_length, chunked)


_REASONS = {
    100: "Continue", 200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content",
    304: "Not Modified", 400: "Bad Request",
    401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    408: "Request Timeout", 413: "Content Too Large", 415: "Unsupported Media Type",
    416: "Range Not Satisfiable", 429: "Too Many Requests", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
    503: "Service Unavailable", 505: "HTTP Version Not Supported",
}
_STATUS_LINES: dict = {}
_CONTENT_TYPE_LINES: dict = {}
CONTINUE_RESPONSE = b"HTTP/1.1 100 Continue\r\n\r\n"


def _status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    if line is None:
        line = _STATUS_LINES[status] = f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n".encode()
    return line


class HttpDate:
    """The Date header line, formatted once a second instead of once a response."""

    def __init__(self) -> None:
        self.second = -1
        self.line = b""
        self.refresh()

    def refresh(self) -> bytes:
        now = int(time.time())
        if now != self.second:
            self.second = now
            self.line = time.strftime("Date: %a, %d %b %Y %H:%M:%S GMT\r\n", time.gmtime(now)).encode()
        return self.line


HTTP_DATE = HttpDate()


class Response:
    __slots__ = ("status", "body", "content_type", "headers")

    def __init__(self, status: int = 200, body: bytes = b"", content_type: str = "application/json; charset=utf-8",
                 headers: Optional[list] = None):
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers if headers is not None else []  # extra (name, value) pairs


class FileResponse(Response):
    """`length` bytes of the file at `file_path` from `offset`: the connection streams them after the head."""
    __slots__ = ("file_path", "offset", "length")

    def __init__(self, status: int, file_path: str, offset: int, length: int, content_type: str, headers: list):
        super().__init__(status, b"", content_type, headers)
        self.file_path = file_path
        self.offset = offset
        self.length = length


def json_response(value: Any, status: int = 200, headers: Optional[list] = None) -> Response:
    return Response(status, json_dumps(value), "application/json; charset=utf-8", headers or [])


def serialize_response(response: Response, keep_alive: bool, http10: bool, head_only: bool) -> bytes:
    """Status line, Date, Content-Type, Content-Length, extra headers, Connection, body."""
    body = response.body
    content_type = _CONTENT_TYPE_LINES.get(response.content_type)
    if content_type is None:
        content_type = _CONTENT_TYPE_LINES[response.content_type] = (
            f"Content-Type: {response.content_type}\r\n".encode() if response.content_type else b"")
    if keep_alive and not http10 and not head_only and not response.headers and response.status != 204:
        # The common case in one join.
        return b"".join((_status_line(response.status), HTTP_DATE.line, content_type,
                         b"Content-Length: %d\r\n\r\n" % len(body), body))
    parts = [_status_line(response.status), HTTP_DATE.line, content_type]
    if response.status not in (204, 304):  # RFC 9110 8.6: a 204 carries no Content-Length; a 304 needs none
        parts.append(b"Content-Length: %d\r\n" % (response.length if type(response) is FileResponse else len(body)))
    for name, value in response.headers:
        parts.append(f"{name}: {value}\r\n".encode("latin-1"))
    if not keep_alive:
        parts.append(b"Connection: close\r\n")
    elif http10:
        parts.append(b"Connection: keep-alive\r\n")
    parts.append(b"\r\n")
    if not head_only:
        parts.append(body)
    return b"".join(parts)


# The multipart events and the media value types are plain slotted classes: each NamedTuple
# costs about 0.1 ms of start-up, and nothing here needs tuple behaviour.

class PartHead:
    """The start of one multipart/form-data part."""
    __slots__ = ("name", "filename", "content_type")

    def __init__(self, name: Optional[str], filename: Optional[str], content_type: Optional[str]):
        self.name = name  # the form field
        self.filename = filename
        self.content_type = content_type


class PartData:
    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


class PartEnd:
    __slots__ = ()


class MultipartError(ValueError):
    """The multipart body is malformed; the message says how, for the client's developer."""


_PREAMBLE, _AFTER_DELIMITER, _PART_HEAD, _PART_BODY, _EPILOGUE = range(5)
_PART_END = PartEnd()
# Regular expressions used only by uploads stay source text here: re compiles (and caches) them on
# first use, which keeps their compilation out of every start-up.
_HEADER_PARAMETER = r';\s*([A-Za-z*]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))'
_MAX_PART_HEAD_BYTES = 16 * 1024


def multipart_boundary(content_type: str) -> Optional[bytes]:
    """The boundary of a `multipart/form-data; boundary=...` Content-Type, or None for any other type."""
    media_type, _, parameters = content_type.partition(";")
    if media_type.strip().lower() != "multipart/form-data":
        return None
    for name, quoted, plain in re.findall(_HEADER_PARAMETER, ";" + parameters):
        if name.lower() == "boundary":
            boundary = (quoted or plain).encode("latin-1", "replace")
            return boundary if 0 < len(boundary) <= 200 else None
    return None


class MultipartParser:
    """multipart/form-data (RFC 7578) as events, fed the body in pieces split anywhere.

    `feed(data)` returns PartHead, PartData..., PartEnd for each part; `complete` turns True at the
    closing boundary. Part bodies are never held whole: all but the last few bytes of each piece are
    returned at once (those few might be the start of a boundary)."""

    def __init__(self, boundary: bytes):
        self._delimiter = b"\r\n--" + boundary
        self._buffer = b"\r\n"  # so that a boundary on the body's first line is found like any other
        self._state = _PREAMBLE
        self.complete = False

    def feed(self, data: bytes) -> list:
        buffer = self._buffer + data
        events: list = []
        position = 0
        while self._state != _EPILOGUE:
            state = self._state
            if state == _PREAMBLE or state == _PART_BODY:
                found = buffer.find(self._delimiter, position)
                if found < 0:
                    keep_from = max(position, len(buffer) - len(self._delimiter) + 1)
                    if state == _PART_BODY and keep_from > position:
                        events.append(PartData(buffer[position:keep_from]))
                    position = keep_from
                    break
                if state == _PART_BODY:
                    if found > position:
                        events.append(PartData(buffer[position:found]))
                    events.append(_PART_END)
                position = found + len(self._delimiter)
                self._state = _AFTER_DELIMITER
            elif state == _AFTER_DELIMITER:
                if buffer.startswith(b"--", position):
                    self._state, self.complete = _EPILOGUE, True
                    break
                end = buffer.find(b"\r\n", position)
                if end < 0:
                    if len(buffer) - position > 1024:
                        raise MultipartError("a multipart boundary line does not end with CRLF")
                    break
                if buffer[position:end].strip(b" \t"):  # only transport padding may follow a boundary
                    raise MultipartError("a multipart boundary is followed by something other than CRLF")
                position = end + 2
                self._state = _PART_HEAD
            else:  # _PART_HEAD
                if buffer.startswith(b"\r\n", position):  # a part without headers
                    end, raw = position - 2, b""
                else:
                    end = buffer.find(b"\r\n\r\n", position)
                    if end < 0:
                        if len(buffer) - position > _MAX_PART_HEAD_BYTES:
                            raise MultipartError("the headers of a multipart part are larger than 16 KiB")
                        break
                    raw = buffer[position:end]
                events.append(self._part_head(raw))
                position = end + 4
                self._state = _PART_BODY
        self._buffer = b"" if self._state == _EPILOGUE else buffer[position:]
        return events

    @staticmethod
    def _part_head(raw: bytes) -> PartHead:
        name = filename = content_type = None
        for line in raw.decode("utf-8", "replace").split("\r\n"):
            header, _, value = line.partition(":")
            header = header.strip().lower()
            if header == "content-disposition":
                for parameter, quoted, plain in re.findall(_HEADER_PARAMETER, value):
                    text = re.sub(r"\\(.)", r"\1", quoted) if quoted else plain
                    if parameter.lower() == "name":
                        name = text
                    elif parameter.lower() == "filename":
                        filename = text
            elif header == "content-type":
                content_type = value.strip()
        return PartHead(name, filename, content_type)


# =============================================================================
# 5. Server: the asyncio transport around the parser, timeouts, shutdown, workers
# =============================================================================

class Request:
    """One complete request, as handlers see it."""
    __slots__ = ("method", "target", "path", "query_string", "headers", "body", "peer", "http10",
                 "keep_alive", "params", "_query")

    def __init__(self, head: RequestHead, body: bytes, peer: str):
        self.method = head.method
        self.target = head.target
        self.path, _, self.query_string = head.target.partition("?")
        self.headers = head.headers
        self.body = body
        self.peer = peer
        self.http10 = head.version == "1.0"
        self.keep_alive = head.keep_alive
        self.params: dict = {}  # path parameters (":id" in a route), filled in by the router
        self._query: Optional[dict] = None

    @property
    def query(self) -> dict:
        """Query parameters; the last value wins when a name repeats."""
        if self._query is None:
            from urllib.parse import parse_qsl
            self._query = dict(parse_qsl(self.query_string, keep_blank_values=True))
        return self._query

    def json(self) -> Any:
        """The body parsed as JSON (an empty body is {}); anything else is the client's mistake: 400."""
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body)
        except UnicodeDecodeError:
            raise bad_request("The request body is not UTF-8 text; send JSON") from None
        except ValueError as error:
            reason = getattr(error, "msg", str(error))
            where = f" at line {error.lineno} column {error.colno}" if hasattr(error, "lineno") else ""
            raise bad_request(f"The request body is not valid JSON: {reason}{where}") from None


class BodySink:
    """Where a streaming route's body goes, piece by piece, instead of being joined in memory.

    The connection calls `feed` for each piece and `close` once the response is out or the client is
    gone; `close` must undo whatever the handler did not keep (temporary files), and may run twice."""

    def feed(self, data: bytes) -> None:
        pass  # this base class is the sink that drops the body (for a request that will be refused)

    def close(self) -> None:
        pass


class StreamedRequest(Request):
    """A request whose body went to `sink` as it arrived; `body` is empty."""
    __slots__ = ("sink",)

    def __init__(self, head: RequestHead, peer: str, sink: BodySink):
        super().__init__(head, b"", peer)
        self.sink = sink


class ApiError(Exception):
    """Raised by a handler to answer with `status` and the JSON `body` (and extra `headers`)."""

    def __init__(self, status: int, body: Any, headers: Optional[list] = None):
        super().__init__(status, body)
        self.status = status
        self.body = body
        self.headers = headers or []

    def response(self) -> Response:
        return json_response(self.body, self.status, list(self.headers))


def nest_error(status: int, message: Any) -> ApiError:
    """Nest's built-in exception body, which Postiz clients parse: {statusCode, message, error}."""
    return ApiError(status, {"statusCode": status, "message": message, "error": _REASONS.get(status, "Error")})


def bad_request(message: Any) -> ApiError:
    return nest_error(400, message)


def not_found(message: str) -> ApiError:
    return nest_error(404, message)


Handler = Callable[[Request], Union[Response, Awaitable[Response]]]


class ServerState:
    """What the connections of one worker share: the app, the config, the live connections.

    `streaming` (the App) names the POST paths whose bodies go to a BodySink (`streaming_paths`), their
    body limits (`body_limit_for(head)`) and opens their sinks (`open_body_sink(head, peer)`)."""

    def __init__(self, config: Config, handle: Handler, streaming: Any = None):
        self.config = config
        self.handle = handle
        self.connections: set = set()
        self.closing = False
        self.streaming = streaming
        self.streaming_paths = streaming.streaming_paths if streaming is not None else {}


class HttpConnection(asyncio.Protocol):
    """Feeds socket bytes to a RequestParser and answers the requests strictly in order."""

    def __init__(self, state: ServerState):
        self.state = state
        self.parser = RequestParser(MAX_HEAD_BYTES, state.config.max_body_bytes,
                                    state.streaming.body_limit_for if state.streaming is not None else None)
        self.transport: Optional[asyncio.Transport] = None
        self.peer = ""
        self.pending: list = []  # complete Requests (or a final ParseError) waiting their turn
        self.head: Optional[RequestHead] = None
        self.body_parts: list = []
        self.sink: Optional[BodySink] = None  # where the current body goes, on a streaming route
        self.outgoing: Optional[OutgoingFile] = None  # a FileResponse body being written
        self.busy = False  # an asynchronous handler is running, or a file is being sent
        self.answered = 0  # responses sent; before the first, an idle client gets the header timeout
        self.continue_due = False  # the current head asked for 100 Continue and has not had it yet
        self.closed = False
        self.reading_paused = False
        self.writing_paused = False
        self.last_activity = self.message_started = time.monotonic()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = peer[0] if isinstance(peer, tuple) else "unix"
        self.state.connections.add(self)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.closed = True
        self.state.connections.discard(self)
        # A client gone mid-upload (or before its upload was answered) leaves nothing behind.
        if self.sink is not None:
            self.sink.close()
            self.sink = None
        self._drop_pending()
        if self.outgoing is not None:
            os.close(self.outgoing.descriptor)
            self.outgoing = None

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.outgoing is not None:
            self._send_file_pieces()
        else:
            self._answer_pending()

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        if self.parser.idle:
            self.message_started = now
        events = self.parser.feed(data)
        if events or not self.parser.idle:  # stray blank lines alone do not keep a connection alive
            self.last_activity = now
        for event in events:
            kind = type(event)
            if kind is RequestHead:
                self.head = event
                self.body_parts = []
                self.continue_due = event.expect_continue and event.content_length != 0
                if event.method == "POST" and self.state.streaming_paths and \
                        event.target.partition("?")[0] in self.state.streaming_paths:
                    self.sink = self.state.streaming.open_body_sink(event, self.peer)
            elif kind is Body:
                self.continue_due = False
                if self.sink is None:
                    self.body_parts.append(event.data)
                else:
                    self.sink.feed(event.data)
            elif kind is EndOfMessage:
                self.continue_due = False
                if self.sink is None:
                    body = b"".join(self.body_parts) if self.body_parts else b""
                    self.pending.append(Request(self.head, body, self.peer))
                else:
                    self.pending.append(StreamedRequest(self.head, self.peer, self.sink))
                    self.sink = None
                self.head, self.body_parts = None, []
            else:
                self.pending.append(event)
        if self.pending or self.continue_due:
            self._answer_pending()
        if len(self.pending) > 64 and not self.reading_paused:
            # A client pipelining faster than we answer: stop reading until we catch up.
            self.reading_paused = True
            self.transport.pause_reading()

    def _answer_pending(self) -> None:
        pending = self.pending
        while pending and not self.busy and not self.writing_paused and not self.closed:
            item = pending.pop(0)
            if type(item) is ParseError:
                self._answer_parse_error(item)
                return
            started = time.perf_counter()
            try:
                result = self.state.handle(item)
            except Exception:
                result = internal_error_response()
            if type(result) is Response or type(result) is FileResponse:
                self._send(item, result, started)
            else:
                self.busy = True
                asyncio.ensure_future(self._finish_async(item, result, started))
        if self.continue_due and not pending and not self.busy and not self.closed:
            # Only once every earlier response is out, so the interim response stays in order.
            self.continue_due = False
            self.transport.write(CONTINUE_RESPONSE)
        if self.reading_paused and len(pending) < 8 and not self.closed:
            self.reading_paused = False
            self.transport.resume_reading()

    async def _finish_async(self, request: Request, awaitable: Awaitable[Response], started: float) -> None:
        try:
            response = await awaitable
        except ApiError as error:
            response = error.response()
        except Exception:
            response = internal_error_response()
        self.busy = False
        if not self.closed:
            self._send(request, response, started)
            self._answer_pending()
        elif type(request) is StreamedRequest:
            request.sink.close()

    def _send(self, request: Request, response: Response, started: float) -> None:
        if type(request) is StreamedRequest:
            request.sink.close()  # before the answer leaves, so a client that got it finds no temporary file
        keep_alive = request.keep_alive and not self.state.closing
        HTTP_DATE.refresh()
        self.transport.write(serialize_response(response, keep_alive, request.http10, request.method == "HEAD"))
        self.answered += 1
        self.last_activity = time.monotonic()
        if self.state.config.access_log:
            log(f'{request.peer} "{request.method} {request.target} HTTP/{"1.0" if request.http10 else "1.1"}" '
                f"{response.status} {response.length if type(response) is FileResponse else len(response.body)} "
                f"{(time.perf_counter() - started) * 1000:.1f}ms")
        if type(response) is FileResponse and request.method != "HEAD":
            self._start_file(response, keep_alive)
        elif not keep_alive:
            self.close()

    def _start_file(self, response: FileResponse, keep_alive: bool) -> None:
        try:
            descriptor = os.open(response.file_path, os.O_RDONLY)
        except OSError as error:  # gone since the handler looked: the head is out, so only closing is left
            log(f"cannot send {response.file_path}: {error.strerror}")
            self.close()
            return
        self.busy = True
        self.outgoing = OutgoingFile(descriptor, response.offset, response.length, keep_alive)
        self._send_file_pieces()

    def _send_file_pieces(self) -> None:
        """Write the file in pieces while the transport accepts them; resume_writing brings us back."""
        outgoing = self.outgoing
        self.last_activity = time.monotonic()
        try:
            while outgoing.remaining and not self.writing_paused and not self.closed:
                piece = os.pread(outgoing.descriptor, min(FILE_PIECE_BYTES, outgoing.remaining), outgoing.offset)
                if not piece:
                    raise OSError(0, "the file is shorter than when its response began")
                self.transport.write(piece)
                outgoing.offset += len(piece)
                outgoing.remaining -= len(piece)
        except OSError as error:
            log(f"sending a file failed, closing the connection: {error.strerror or error}")
            self.close()
        if outgoing.remaining and not self.closed:
            return
        if self.outgoing is not None:  # (connection_lost may have closed it already)
            os.close(outgoing.descriptor)
            self.outgoing = None
        self.busy = False
        self.last_activity = time.monotonic()
        if not outgoing.keep_alive:
            self.close()
        elif not self.closed:
            self._answer_pending()

    def _answer_parse_error(self, error: ParseError) -> None:
        """The byte stream is no longer trustworthy: answer once and close."""
        HTTP_DATE.refresh()
        response = json_response({"statusCode": error.status, "message": error.reason,
                                  "error": _REASONS.get(error.status, "Error")}, error.status)
        self.transport.write(serialize_response(response, False, False, False))
        if self.state.config.access_log:
            log(f"{self.peer} rejected with {error.status}: {error.reason}")
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._drop_pending()
            self.transport.close()  # flushes what was written, then closes

    def _drop_pending(self) -> None:
        for item in self.pending:
            if type(item) is StreamedRequest:
                item.sink.close()
        self.pending.clear()

    def check_timeouts(self, now: float) -> None:
        """Called once a second: drop idle keep-alive connections and clients too slow to send a request."""
        config = self.state.config
        if self.outgoing is not None and now - self.last_activity > config.keepalive_timeout:
            self.close()  # a client that stopped reading a file we send it
        if self.closed or self.busy or self.pending:
            return
        if self.parser.idle:
            limit = config.keepalive_timeout if self.answered else config.header_timeout
            if now - self.last_activity > limit or self.state.closing:
                self.close()
        elif (now - self.message_started > config.header_timeout if self.parser.reading_head
              else now - self.last_activity > config.header_timeout):
            self._answer_parse_error(ParseError(408, "the request was not received in time"))


FILE_PIECE_BYTES = 256 * 1024


class OutgoingFile:
    """The part of a FileResponse still to be written, and what to do with the connection afterwards."""
    __slots__ = ("descriptor", "offset", "remaining", "keep_alive")

    def __init__(self, descriptor: int, offset: int, remaining: int, keep_alive: bool):
        self.descriptor = descriptor
        self.offset = offset
        self.remaining = remaining
        self.keep_alive = keep_alive


def internal_error_response() -> Response:
    log("unhandled error in a request handler:\n" + traceback.format_exc().rstrip())
    return json_response({"statusCode": 500, "message": "Internal server error"}, 500)


def bind_sockets(config: Config) -> list:
    """One listening socket per worker. With several workers they share the port through SO_REUSEPORT."""
    try:
        # An ASCII host as bytes spares the idna codec import that a str host costs.
        host = config.host.encode() if config.host.isascii() else config.host
        infos = socket.getaddrinfo(host, config.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise UserError(f"cannot listen on HOST={config.host!r}: {error.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sockets: list = []
    try:
        if config.workers > 1:
            # SO_REUSEPORT would let us share a port with another running server without noticing:
            # a plain bind first proves the port is free.
            probe = socket.socket(family, kind, proto)
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
                address = probe.getsockname()
            finally:
                probe.close()
        for _ in range(config.workers):
            listener = socket.socket(family, kind, proto)
            sockets.append(listener)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if config.workers > 1:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            listener.bind(address)
            address = listener.getsockname()  # PORT=0: every worker takes the port the first one got
            listener.listen(1024)
            listener.setblocking(False)
    except OSError as error:
        for listener in sockets:
            listener.close()
        reason = error.strerror or str(error)
        if error.errno == 98:
            reason = "the address is already in use (set PORT to another port, or stop the other server)"
        elif error.errno == 13:
            reason = "permission denied (ports below 1024 need privileges: set PORT)"
        raise UserError(f"cannot listen on {config.host}:{config.port}: {reason}") from None
    return sockets


def bound_port(sockets: list) -> int:
    return sockets[0].getsockname()[1]


def new_event_loop() -> asyncio.AbstractEventLoop:
    uvloop = sys.modules.get("uvloop")
    return uvloop.new_event_loop() if uvloop is not None else asyncio.new_event_loop()


def run_worker(config: Config, listener: socket.socket, primary: bool, on_ready: Callable[[], None],
               supervisor: Optional[int] = None) -> int:
    """Serve on `listener` until SIGTERM or SIGINT (or the death of the `supervisor` process), then drain.

    `primary` marks the one worker that runs what must run once per server (housekeeping today,
    the scheduler later)."""
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    store = Store(config.database)
    store.share_reads_per_loop_turn(loop.call_soon)
    app = App(config, store)
    state = ServerState(config, app.handle, app)
    stop = loop.create_future()

    def request_stop() -> None:
        if not stop.done():
            stop.set_result(None)

    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, request_stop)
    server = loop.run_until_complete(
        loop.create_server(lambda: HttpConnection(state), sock=listener, backlog=1024))

    def sweep() -> None:
        now = time.monotonic()
        for connection in list(state.connections):
            connection.check_timeouts(now)
        if supervisor is not None and os.getppid() != supervisor:
            log("the supervising process is gone; stopping this worker")
            request_stop()
        loop.call_later(1.0, sweep)

    loop.call_later(1.0, sweep)
    if primary:
        loop.call_soon(app.housekeeping, loop)
    on_ready()
    try:
        loop.run_until_complete(stop)
        loop.run_until_complete(drain(server, state, config.shutdown_timeout))
    finally:
        store.close()
        loop.close()
    return 0


async def drain(server: asyncio.AbstractServer, state: ServerState, timeout: float) -> None:
    """Stop accepting, let in-flight requests finish (bounded by `timeout`), then close everything."""
    server.close()
    state.closing = True
    deadline = time.monotonic() + timeout
    while True:
        for connection in list(state.connections):
            if connection.parser.idle and not connection.busy and not connection.pending:
                connection.close()
        if not state.connections or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.05)
    for connection in list(state.connections):
        connection.close()
    await asyncio.sleep(0)


def serve(config: Config, startup_note: str) -> int:
    """Bind, start the workers, print the ready line, and wait for a signal."""
    sockets = bind_sockets(config)
    port = bound_port(sockets)
    url_host = f"[{config.host}]" if ":" in config.host else config.host
    url = f"http://{url_host}:{port}"
    config = _replace(config, port=port, frontend_url=config.frontend_url or url)
    plural = "worker" if config.workers == 1 else "workers"
    ready_line = f"rustiz {VERSION} ready on {url} ({config.workers} {plural}; {startup_note})"
    if config.workers == 1:
        return run_worker(config, sockets[0], True, lambda: log(ready_line))
    return supervise_workers(config, sockets, ready_line)


def _replace(config: Config, **changes: Any) -> Config:
    from dataclasses import replace
    return replace(config, **changes)


def supervise_workers(config: Config, sockets: list, ready_line: str) -> int:
    """Fork one process per socket and keep them running; SIGTERM/SIGINT stop them all gracefully."""
    ready_reader, ready_writer = os.pipe()
    children: dict = {}  # pid -> worker index
    stopping = False
    recent_deaths: list = []

    def start(index: int, on_ready: Optional[Callable[[], None]]) -> None:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                if on_ready is not None:  # (a restarted worker has nobody waiting for its ready byte)
                    os.close(ready_reader)
                for other, listener in enumerate(sockets):
                    if other != index:
                        listener.close()
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = run_worker(config, sockets[index], index == 0, on_ready or (lambda: None), supervisor)
            except UserError as error:
                log(f"error: {error}")
            except BaseException:
                log("worker crashed:\n" + traceback.format_exc().rstrip())
            finally:
                os._exit(code)
        children[pid] = index

    supervisor = os.getpid()

    def on_signal(signal_number: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for listener in sockets:  # kept open until now only to restart workers; the kernel must refuse
            listener.close()        # new connections instead of queueing them for nobody
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for index in range(len(sockets)):
        start(index, lambda: os.write(ready_writer, b"."))
    os.close(ready_writer)
    ready = 0
    while ready < len(sockets):
        chunk = os.read(ready_reader, len(sockets) - ready)
        if not chunk:
            break
        ready += len(chunk)
    os.close(ready_reader)
    if ready < len(sockets):
        on_signal(signal.SIGTERM, None)
        _reap_all(children)
        raise UserError("a worker failed to start; see the messages above")
    log(ready_line)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        index = children.pop(pid, None)
        if index is None or stopping:
            continue
        now = time.monotonic()
        recent_deaths[:] = [moment for moment in recent_deaths if now - moment < 10] + [now]
        if len(recent_deaths) > 5:
            log("workers keep dying (more than 5 in 10 s); stopping the server")
            on_signal(signal.SIGTERM, None)
            _reap_all(children)
            return 1
        log(f"worker {index} (pid {pid}) exited with status {os.waitstatus_to_exitcode(status)}; restarting it")
        start(index, None)
    return 0


def _reap_all(children: dict) -> None:
    for pid in list(children):
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        children.pop(pid, None)


# =============================================================================
# 6. Auth and limits
# =============================================================================

API_PREFIXES = ("/public/v1", "/api/public/v1")
KNOWN_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _unauthorized(message: str) -> Response:
    return json_response({"msg": message}, 401)


NO_API_KEY = "No API Key found"
INVALID_API_KEY = "Invalid API key"
INVALID_OAUTH_TOKEN = "Invalid OAuth token"


class Guard:
    """Who is calling (organization, client address) and whether they may go on (rate limits)."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store
        self._known_keys: dict = {}  # key hash -> organization id, valid while the generation holds
        self._known_generation = b""

    def organization(self, request: Request) -> Union[str, Response]:
        """Postiz clients send `Authorization: <key>`; `Authorization: Bearer <key>` is accepted too."""
        key = request.headers.get("authorization", "")
        if key[:7].lower() == "bearer ":
            key = key[7:].strip()
        if not key:
            return _unauthorized(NO_API_KEY)
        key_hash = hash_api_key(key)
        generation = self.store.credentials_generation()
        if generation != self._known_generation:
            self._known_keys.clear()
            self._known_generation = generation
        organization_id = self._known_keys.get(key_hash)
        if organization_id is not None:
            return organization_id
        organization_id = self.store.organization_for_key_hash(key_hash)
        if organization_id is not None:
            if len(self._known_keys) >= 1024:
                self._known_keys.clear()
            self._known_keys[key_hash] = organization_id
            return organization_id
        # rustiz issues no OAuth tokens (yet), so a pos_ token can only be unknown.
        return _unauthorized(INVALID_OAUTH_TOKEN if key.startswith("pos_") else INVALID_API_KEY)

    def client_address(self, request: Request) -> str:
        """The peer, or, behind a trusted reverse proxy, the nearest untrusted X-Forwarded-For hop."""
        forwarded = request.headers.get("x-forwarded-for")
        if not forwarded or not self._trusted(request.peer):
            return request.peer
        for hop in reversed([part.strip() for part in forwarded.split(",")]):
            if not self._trusted(hop):
                return hop
        return request.peer

    def _trusted(self, address: str) -> bool:
        if not self.config.trusted_proxies:
            return False
        import ipaddress
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.config.trusted_proxies)

    def request_limit(self, request: Request) -> Optional[Response]:
        """REQUEST_LIMIT: requests per minute per client address, all routes but /health."""
        decision = self.store.count_request("client:" + self.client_address(request), self.config.request_limit,
                                            REQUEST_LIMIT_WINDOW_SECONDS)
        if decision.allowed:
            return None
        return json_response({"statusCode": 429, "message": "ThrottlerException: Too Many Requests"}, 429,
                             [("Retry-After", str(decision.retry_after))])

    def api_limit(self, organization_id: str) -> Union[list, Response]:
        """API_LIMIT: POST /public/v1/posts per organization per fixed hour, Postiz's headers and body."""
        decision = self.store.count_request(f"posts:{organization_id}", self.config.api_limit,
                                            API_LIMIT_WINDOW_SECONDS, API_LIMIT_WINDOW_SECONDS)
        if not decision.allowed:
            return json_response({"statusCode": 429, "message": "ThrottlerException: Too Many Requests"}, 429,
                                 [("Retry-After", str(decision.retry_after))])
        return [("X-RateLimit-Limit", str(decision.limit)), ("X-RateLimit-Remaining", str(decision.remaining)),
                ("X-RateLimit-Reset", str(decision.reset_seconds))]


# =============================================================================
# 7. API: routing and the public API handlers
# =============================================================================

class Route(NamedTuple):
    handler: Callable[..., Union[Response, Awaitable[Response]]]
    authenticated: bool


class StreamingRoute:
    __slots__ = ("body_limit", "open_sink")

    def __init__(self, body_limit: int, open_sink: Callable[[Request, str], BodySink]):
        self.body_limit = body_limit
        self.open_sink = open_sink


class App:
    """The routing table, and the order every request goes through: method, limits, route, auth, handler."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store
        self.guard = Guard(config, store)
        self.routes: dict = {}  # path -> {method: Route}, for paths without parameters
        self.patterns: dict = {}  # path template -> (compiled pattern, {method: Route})
        self.streaming_paths: dict = {}  # POST path -> StreamingRoute, for routes that take their body in pieces
        self.add("GET", "/health", self.health, authenticated=False)
        self.add_api("GET", "/is-connected", self.is_connected)
        self.add_api("GET", "/integrations", self.integrations)
        MediaApi(config, store).register(self)

    def add(self, method: str, path: str, handler: Callable, authenticated: bool = True) -> None:
        """Register `handler`; a segment written `:name` matches any one segment, given as request.params[name]."""
        if ":" not in path:
            self.routes.setdefault(path, {})[method] = Route(handler, authenticated)
            return
        if path not in self.patterns:
            regex = "".join(f"/(?P<{segment[1:]}>[^/]+)" if segment.startswith(":") else "/" + re.escape(segment)
                            for segment in path.strip("/").split("/"))
            self.patterns[path] = (re.compile(regex), {})
        self.patterns[path][1][method] = Route(handler, authenticated)

    def add_api(self, method: str, subpath: str, handler: Callable) -> None:
        """A public API route, under both /public/v1 (Postiz cloud) and /api/public/v1 (self-hosted Postiz)."""
        for prefix in API_PREFIXES:
            self.add(method, prefix + subpath, handler)

    def add_streaming_api(self, subpath: str, handler: Callable, body_limit: int,
                          open_sink: Callable[[Request, str], BodySink]) -> None:
        """A public API POST route whose body goes, as it arrives, to `open_sink(request, organization_id)`.

        Only authenticated requests get that sink (the others' bodies are dropped); the handler then
        runs as for any route, with the finished sink as `request.sink`. Bodies up to `body_limit`."""
        self.add_api("POST", subpath, handler)
        for prefix in API_PREFIXES:
            self.streaming_paths[prefix + subpath] = StreamingRoute(body_limit, open_sink)

    def body_limit_for(self, head: RequestHead) -> Optional[int]:
        if head.method != "POST":
            return None
        route = self.streaming_paths.get(head.target.partition("?")[0])
        return route.body_limit if route is not None else None

    def open_body_sink(self, head: RequestHead, peer: str) -> BodySink:
        request = Request(head, b"", peer)
        organization = self.guard.organization(request)
        if type(organization) is Response:
            return BodySink()  # the handler's dispatch answers the 401 once the body is in
        return self.streaming_paths[request.path].open_sink(request, organization)

    def _find_routes(self, request: Request) -> Optional[dict]:
        routes = self.routes.get(request.path)
        if routes is not None:
            return routes
        for pattern, methods in self.patterns.values():
            match = pattern.fullmatch(request.path)
            if match is not None:
                from urllib.parse import unquote
                request.params = {name: unquote(value) for name, value in match.groupdict().items()}
                return methods
        return None

    def handle(self, request: Request) -> Union[Response, Awaitable[Response]]:
        try:
            return self._dispatch(request)
        except ApiError as error:
            return error.response()
        except Exception:
            return internal_error_response()

    def _dispatch(self, request: Request) -> Union[Response, Awaitable[Response]]:
        method = request.method
        if method not in KNOWN_METHODS:
            return self._method_not_allowed(request, KNOWN_METHODS)
        if self.config.request_limit and request.path != "/health":
            refused = self.guard.request_limit(request)
            if refused is not None:
                return refused
        rate_headers: list = []
        if method == "POST" and "/public/v1/posts" in request.path and self.config.api_limit:
            # Postiz's throttler counts every POST to /public/v1/posts* after auth, valid or not.
            organization = self.guard.organization(request)
            if type(organization) is Response:
                return organization
            limited = self.guard.api_limit(organization)
            if type(limited) is Response:
                return limited
            rate_headers = limited
        routes = self._find_routes(request)
        if routes is None:
            return json_response({"message": f"Cannot {method} {request.target}", "error": "Not Found",
                                  "statusCode": 404}, 404, rate_headers)
        route = routes.get("GET" if method == "HEAD" else method)
        if route is None:
            allowed = sorted(routes) + (["HEAD"] if "GET" in routes else [])
            if method == "OPTIONS":
                return Response(204, b"", "", [("Allow", ", ".join(allowed + ["OPTIONS"]))])
            return self._method_not_allowed(request, allowed)
        if route.authenticated:
            organization = self.guard.organization(request)
            if type(organization) is Response:
                return organization
            response = route.handler(request, organization)
        else:
            response = route.handler(request)
        if rate_headers:
            response.headers.extend(rate_headers)
        return response

    @staticmethod
    def _method_not_allowed(request: Request, allowed: tuple | list) -> Response:
        return json_response({"statusCode": 405, "error": "Method Not Allowed",
                              "message": f"{request.method} is not allowed on {request.path}; "
                                         f"use {', '.join(allowed)}"}, 405, [("Allow", ", ".join(allowed))])

    def housekeeping(self, loop: asyncio.AbstractEventLoop) -> None:
        """Runs in the primary worker only: forget rate-limit windows that have ended, and uploads abandoned
        by a crash."""
        try:
            self.store.forget_expired_rate_limits(time.time(), API_LIMIT_WINDOW_SECONDS)
        except sqlite3.Error as error:
            log(f"housekeeping failed, will retry: {error}")
        remove_abandoned_uploads(self.config.uploads, time.time() - ABANDONED_UPLOAD_SECONDS)
        loop.call_later(300, self.housekeeping, loop)

    # --- handlers ---------------------------------------------------------------

    @staticmethod
    def health(request: Request) -> Response:
        return Response(200, b"ok", "text/plain; charset=utf-8")

    @staticmethod
    def is_connected(request: Request, organization_id: str) -> Response:
        return json_response({"connected": True})

    def integrations(self, request: Request, organization_id: str) -> Response:
        group = request.query.get("group") if request.query_string else None
        return json_response(self.store.integrations(organization_id, group or None))


# --- media: uploads, upload-from-url, and serving the files ---------------------

class MediaType:
    __slots__ = ("extension", "content_type", "kind")

    def __init__(self, extension: str, content_type: str, kind: str):
        self.extension = extension  # as Postiz names stored files (the `file-type` package's extensions)
        self.content_type = content_type
        self.kind = kind  # the Media row's type: "image" or "video"


MEDIA_TYPES = {media.extension: media for media in (
    MediaType("jpg", "image/jpeg", "image"), MediaType("png", "image/png", "image"),
    MediaType("gif", "image/gif", "image"), MediaType("webp", "image/webp", "image"),
    MediaType("avif", "image/avif", "image"), MediaType("bmp", "image/bmp", "image"),
    MediaType("tif", "image/tiff", "image"), MediaType("mp4", "video/mp4", "video"))}
ACCEPTED_MEDIA = "JPEG, PNG, GIF, WebP, AVIF, BMP or TIFF images, or MP4 video"
SNIFF_BYTES = 16  # enough for every signature below (ISO media brands end at byte 12)
_HEIF_BRANDS = (b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1")
# Types rustiz refuses, by signature, so the error can say what the file looked like.
_REFUSED_SIGNATURES = (
    (b"%PDF-", "a PDF document"), (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"\x1f\x8b", "a gzip archive"), (b"\x1a\x45\xdf\xa3", "a WebM/Matroska video"),
    (b"OggS", "an Ogg file"), (b"ID3", "an MP3 audio file"), (b"\x00\x00\x01\x00", "an ICO icon"),
    (b"<svg", "an SVG image"), (b"<?xml", "an XML (maybe SVG) file"), (b"<!DOCTYPE", "an HTML page"),
    (b"<html", "an HTML page"), (b"{", "JSON text"))


def sniff_media_type(head: bytes) -> Union[MediaType, str]:
    """The file's type from its first bytes (never from its name), or a description of what it is instead."""
    if head.startswith(b"\xff\xd8\xff"):
        return MEDIA_TYPES["jpg"]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return MEDIA_TYPES["png"]
    if head.startswith((b"GIF87a", b"GIF89a")):
        return MEDIA_TYPES["gif"]
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return MEDIA_TYPES["webp"]
    if head.startswith(b"BM"):
        return MEDIA_TYPES["bmp"]
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return MEDIA_TYPES["tif"]
    if head[4:8] == b"ftyp":  # an ISO base media file: the major brand says which kind
        brand = head[8:12]
        if brand in (b"avif", b"avis"):
            return MEDIA_TYPES["avif"]
        if brand in _HEIF_BRANDS:
            return "a HEIC/HEIF image"
        if brand == b"qt  ":
            return "a QuickTime (.mov) video"
        if brand.startswith((b"M4A", b"M4B", b"M4P")):
            return "an M4A audio file"
        if brand.startswith(b"3g"):
            return "a 3GP video"
        return MEDIA_TYPES["mp4"]
    if head.startswith(b"RIFF"):
        return {b"WAVE": "a WAV audio file", b"AVI ": "an AVI video"}.get(head[8:12], "a RIFF file")
    stripped = head.lstrip()
    for signature, description in _REFUSED_SIGNATURES:
        if stripped.startswith(signature):
            return description
    return "of a type rustiz does not recognise" if head else "empty"


class StagedFile:
    """An accepted file, complete in the uploads directory's .incoming folder, not yet a Media row."""
    __slots__ = ("temporary_path", "media_type", "size")

    def __init__(self, temporary_path: str, media_type: MediaType, size: int):
        self.temporary_path = temporary_path
        self.media_type = media_type
        self.size = size


class MediaWriter:
    """Writes one file into RUSTIZ_UPLOADS/.incoming as it arrives, sniffing its type from the first
    bytes and refusing it (ApiError) as soon as its type or size is known to be unacceptable.

    Thread-safe in the sense upload-from-url needs: one writer is only ever used by one thread."""

    def __init__(self, uploads: str, max_video_bytes: int):
        directory = os.path.join(uploads, ".incoming")
        os.makedirs(directory, exist_ok=True)
        self.temporary_path = os.path.join(directory, os.urandom(16).hex() + ".part")
        self._file = open(self.temporary_path, "xb")
        self.max_video_bytes = max_video_bytes
        self.limit = max(MAX_IMAGE_BYTES, max_video_bytes)  # until the type is known
        self.size = 0
        self.media_type: Optional[MediaType] = None
        self._head = b""

    def write(self, data: bytes) -> None:
        if self.media_type is None:
            self._head += data[:SNIFF_BYTES - len(self._head)]
            if len(self._head) >= SNIFF_BYTES:
                self._identify()
        self.size += len(data)
        if self.size > self.limit:
            raise self._too_large()
        self._file.write(data)

    def _identify(self) -> None:
        sniffed = sniff_media_type(self._head)
        if type(sniffed) is str:
            raise bad_request(f"Unsupported file type: the file is {sniffed}; rustiz accepts {ACCEPTED_MEDIA} "
                              "(the type is read from the file's bytes, not from its name)")
        self.media_type = sniffed
        self.limit = MAX_IMAGE_BYTES if sniffed.kind == "image" else self.max_video_bytes

    def _too_large(self) -> ApiError:
        what = "an image" if self.media_type is None or self.media_type.kind == "image" else "a video"
        setting = "" if what == "an image" else " (RUSTIZ_MAX_VIDEO_BYTES)"
        if self.media_type is None:
            what = "a file"
        return nest_error(413, f"File size exceeds the maximum allowed size of {self.limit} bytes for "
                               f"{what}{setting}")

    def finish(self) -> StagedFile:
        """The whole file is in: close it and return it (or raise why it is refused)."""
        self._file.close()
        if self.media_type is None:
            self._identify()
        if self.size > self.limit:
            raise self._too_large()
        return StagedFile(self.temporary_path, self.media_type, self.size)

    def discard(self) -> None:
        """Remove the temporary file unless it was moved into place; safe to call more than once."""
        self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temporary_path)


class UploadSink(BodySink):
    """POST /upload's body: multipart/form-data whose `file` part goes straight to a MediaWriter.

    Errors are kept, not raised, until the handler asks for the `result()`: the rest of the body is
    read and dropped so the connection stays usable for the answer."""

    def __init__(self, request: Request, uploads: str, max_video_bytes: int):
        self.uploads = uploads
        self.max_video_bytes = max_video_bytes
        self.writer: Optional[MediaWriter] = None
        self.in_file_part = False
        self.staged: Optional[StagedFile] = None
        self.error: Optional[ApiError] = None
        content_type = request.headers.get("content-type", "")
        boundary = multipart_boundary(content_type)
        self.parser = MultipartParser(boundary) if boundary else None
        if boundary is None:
            self.error = bad_request(f'POST /upload takes multipart/form-data with the file in a field named "file"; '
                                     f"the request's Content-Type is {content_type or 'missing'!r}")

    def feed(self, data: bytes) -> None:
        if self.error is not None:
            return
        try:
            for event in self.parser.feed(data):
                self._on_event(event)
        except MultipartError as error:
            self._fail(bad_request(f"The multipart/form-data body is malformed: {error}"))
        except ApiError as error:
            self._fail(error)
        except OSError as error:
            log(f"cannot store an upload in {self.uploads}: {error}")
            self._fail(nest_error(500, f"The server cannot store the upload: {error.strerror}"))

    def _on_event(self, event: Any) -> None:
        kind = type(event)
        if kind is PartData:
            if self.in_file_part:
                self.writer.write(event.data)
        elif kind is PartHead:
            if event.name == "file" and self.writer is None:
                self.writer = MediaWriter(self.uploads, self.max_video_bytes)
                self.in_file_part = True
        elif self.in_file_part:  # PartEnd of the file part
            self.in_file_part = False
            self.staged = self.writer.finish()

    def _fail(self, error: ApiError) -> None:
        self.error = error
        if self.writer is not None:
            self.writer.discard()

    def result(self) -> StagedFile:
        if self.error is not None:
            raise self.error
        if not self.parser.complete:
            raise bad_request("The multipart/form-data body ended before its closing boundary")
        if self.staged is None:
            message = 'No file provided: send it as the multipart/form-data field named "file"'
            raise ApiError(400, {"msg": message, "statusCode": 400, "message": message, "error": "Bad Request"})
        return self.staged

    def close(self) -> None:
        if self.writer is not None:
            self.writer.discard()


FETCH_TIMEOUT_SECONDS = 30.0
FETCH_MAX_REDIRECTS = 3
_FETCH_PIECE_BYTES = 64 * 1024


def refusal_for_address(address: str) -> Optional[str]:
    """Why upload-from-url may not connect to `address` (\"a private address\"...), or None for a public one."""
    import ipaddress
    ip = ipaddress.ip_address(address.partition("%")[0])
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for check, description in (("is_unspecified", "an unspecified address"), ("is_loopback", "a loopback address"),
                               ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address"),
                               ("is_reserved", "a reserved address"), ("is_private", "a private address")):
        if getattr(ip, check):
            return description
    return None if ip.is_global else "not a public address"


def _fetch_allowed(host: str, address: str, allow: tuple) -> bool:
    import ipaddress
    ip = ipaddress.ip_address(address.partition("%")[0])
    return any(item == host if type(item) is str else ip in item for item in allow)


def checked_address(host: str, port: int, allow: tuple) -> str:
    """Resolve `host` and return the address to connect to, refusing non-public ones the allow-list does not name.

    Every address is checked, and the connection goes to the checked one, so a DNS answer that changes
    between check and connect (rebinding) cannot reach a private service."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise bad_request(f"upload-from-url: cannot resolve {host}: {error.strerror}") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    host_key = host.lower().rstrip(".")
    for address in addresses:
        refusal = refusal_for_address(address)
        if refusal is not None and not _fetch_allowed(host_key, address, allow):
            problem = (f"{address} is {refusal}" if host_key == address.lower()
                       else f"{host} resolves to {address}, {refusal}")
            raise bad_request(f"upload-from-url: {problem}; set RUSTIZ_FETCH_ALLOW to allow it")
    return addresses[0]


def _pinned_connection(scheme: str, host: str, port: int, address: str, timeout: float) -> Any:
    """An http.client connection to `address` that still speaks to `host` (Host header, TLS name check)."""
    import http.client
    if scheme == "http":
        connection = http.client.HTTPConnection(host, port, timeout=timeout)

        def connect() -> None:
            connection.sock = socket.create_connection((address, port), timeout)
    else:
        import ssl
        context = ssl.create_default_context()
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)

        def connect() -> None:
            raw = socket.create_connection((address, port), timeout)
            connection.sock = context.wrap_socket(raw, server_hostname=host)
    connection.connect = connect
    return connection


def fetch_media(url: str, uploads: str, max_video_bytes: int, allow: tuple) -> StagedFile:
    """Download `url` for upload-from-url into a staged file. Blocking: run it in a worker thread."""
    from urllib.parse import urljoin, urlsplit
    import http.client
    deadline = time.monotonic() + FETCH_TIMEOUT_SECONDS
    for _ in range(FETCH_MAX_REDIRECTS + 1):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise bad_request(f"upload-from-url: only http and https URLs can be fetched, not {url!r}")
        try:
            host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise bad_request(f"upload-from-url: {url!r} has an invalid port") from None
        if not host:
            raise bad_request(f"upload-from-url: {url!r} has no host")
        address = checked_address(host, port, allow)
        connection = _pinned_connection(parts.scheme, host, port, address, max(0.1, deadline - time.monotonic()))
        try:
            connection.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                               headers={"User-Agent": f"rustiz/{VERSION}", "Accept": "image/*, video/mp4"})
            sock = connection.sock  # the response takes it over (and the connection forgets it) on Connection: close
            response = connection.getresponse()
            if response.status in (301, 302, 303, 307, 308) and response.getheader("location"):
                url = urljoin(url, response.getheader("location"))
                continue
            if response.status != 200:
                raise bad_request(f"upload-from-url: {url} answered {response.status} {response.reason}")
            return _download(response, sock, uploads, max_video_bytes, deadline)
        except (OSError, http.client.HTTPException) as error:
            raise bad_request(f"upload-from-url: fetching {url} failed: {error or type(error).__name__}") from None
        finally:
            connection.close()
    raise bad_request(f"upload-from-url: more than {FETCH_MAX_REDIRECTS} redirects, last to {url}")


def _download(response: Any, sock: socket.socket, uploads: str, max_video_bytes: int, deadline: float) -> StagedFile:
    announced = response.getheader("content-length", "")
    if announced.isdigit() and int(announced) > max(MAX_IMAGE_BYTES, max_video_bytes):
        raise nest_error(413, f"upload-from-url: the file is {announced} bytes, over the maximum allowed size "
                              f"of {max(MAX_IMAGE_BYTES, max_video_bytes)} bytes (RUSTIZ_MAX_VIDEO_BYTES)")
    try:
        writer = MediaWriter(uploads, max_video_bytes)
    except OSError as error:  # not the remote server's fault: say so, rather than "fetching failed"
        log(f"cannot store an upload in {uploads}: {error}")
        raise nest_error(500, f"The server cannot store the upload: {error.strerror}") from None
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise bad_request(f"upload-from-url: the download took longer than {FETCH_TIMEOUT_SECONDS:g} s")
            sock.settimeout(remaining)
            piece = response.read1(_FETCH_PIECE_BYTES)
            if not piece:
                return writer.finish()
            writer.write(piece)
    except BaseException:
        writer.discard()
        raise


ABANDONED_UPLOAD_SECONDS = 24 * 3600  # far longer than any upload in progress can take


def remove_abandoned_uploads(uploads: str, older_than: float) -> None:
    """Temporary files a running server always removes itself; these are left by a crash or a kill -9."""
    directory = os.path.join(uploads, ".incoming")
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return
    except OSError as error:
        log(f"cannot look for abandoned uploads in {directory}: {error.strerror}")
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.name.endswith(".part") and entry.stat().st_mtime < older_than:
                os.unlink(entry.path)


_UPLOAD_FILE_NAME = r"[0-9a-f]{32}\.(?:" + "|".join(MEDIA_TYPES) + r")\Z"  # compiled on first use


class MediaApi:
    """POST /upload, POST /upload-from-url, and GET /uploads/YYYY/MM/DD/<name> (public, as Postiz's nginx)."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store

    def register(self, app: App) -> None:
        # Room for the multipart framing around the largest file.
        body_limit = max(MAX_IMAGE_BYTES, self.config.max_video_bytes) + 64 * 1024
        app.add_streaming_api("/upload", self.upload, body_limit, self.open_upload)
        app.add_api("POST", "/upload-from-url", self.upload_from_url)
        for prefix in ("/uploads", "/api/uploads"):  # /api/uploads: self-hosted Postiz's backend path
            app.add("GET", prefix + "/:year/:month/:day/:name", self.serve_upload, authenticated=False)

    def open_upload(self, request: Request, organization_id: str) -> UploadSink:
        return UploadSink(request, self.config.uploads, self.config.max_video_bytes)

    def upload(self, request: StreamedRequest, organization_id: str) -> Response:
        return self._save(organization_id, request.sink.result())

    def upload_from_url(self, request: Request, organization_id: str) -> Awaitable[Response]:
        body = request.json()
        url = body.get("url") if isinstance(body, dict) else None
        if not isinstance(url, str) or not url.strip():
            raise bad_request('upload-from-url takes a JSON body {"url": "https://..."}; "url" is missing or empty')
        return self._fetch_and_save(url.strip(), organization_id)

    async def _fetch_and_save(self, url: str, organization_id: str) -> Response:
        loop = asyncio.get_running_loop()
        staged = await loop.run_in_executor(None, fetch_media, url, self.config.uploads,
                                            self.config.max_video_bytes, self.config.fetch_allow)
        try:
            return self._save(organization_id, staged)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged.temporary_path)

    def _save(self, organization_id: str, staged: StagedFile) -> Response:
        """Move the staged file to YYYY/MM/DD/<random>.<ext>, as Postiz's local storage, and record it."""
        day = time.strftime("%Y/%m/%d", time.gmtime())
        name = f"{os.urandom(16).hex()}.{staged.media_type.extension}"
        directory = os.path.join(self.config.uploads, *day.split("/"))
        os.makedirs(directory, exist_ok=True)
        final_path = os.path.join(directory, name)
        os.replace(staged.temporary_path, final_path)
        try:
            media = self.store.create_media(organization_id, name, f"{self.config.frontend_url}/uploads/{day}/{name}",
                                            staged.size, staged.media_type.kind)
        except BaseException:
            os.unlink(final_path)
            raise
        return json_response(media, 201)

    def serve_upload(self, request: Request) -> Response:
        """The stored file, with ETag/Last-Modified revalidation and single byte ranges."""
        params = request.params
        day = f"{params['year']}/{params['month']}/{params['day']}"
        if not re.match(r"\d{4}/\d{2}/\d{2}\Z", day) or not re.match(_UPLOAD_FILE_NAME, params["name"]):
            raise not_found(f"No upload at {request.path}")  # also what keeps ../ and the like out
        file_path = os.path.join(self.config.uploads, params["year"], params["month"], params["day"], params["name"])
        try:
            status = os.stat(file_path)
        except OSError:
            raise not_found(f"No upload at {request.path}") from None
        size = status.st_size
        etag = f'"{size:x}-{status.st_mtime_ns:x}"'
        headers = [("ETag", etag), ("Last-Modified", http_date(status.st_mtime)), ("Accept-Ranges", "bytes"),
                   ("Cache-Control", "public, max-age=31536000, immutable"), ("X-Content-Type-Options", "nosniff")]
        content_type = MEDIA_TYPES[params["name"].rpartition(".")[2]].content_type
        if_none_match = request.headers.get("if-none-match")
        if if_none_match is not None and (if_none_match.strip() == "*" or etag in
                                          [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]):
            return Response(304, b"", "", headers)
        byte_range = request.headers.get("range")
        if byte_range is not None and request.headers.get("if-range", etag) == etag:
            wanted = parse_byte_range(byte_range, size)
            if wanted == "unsatisfiable":
                return json_response({"statusCode": 416, "error": "Range Not Satisfiable",
                                      "message": f"{byte_range} is outside the file's {size} bytes"},
                                     416, headers + [("Content-Range", f"bytes */{size}")])
            if wanted is not None:
                start, end = wanted
                return FileResponse(206, file_path, start, end - start + 1, content_type,
                                    headers + [("Content-Range", f"bytes {start}-{end}/{size}")])
        return FileResponse(200, file_path, 0, size, content_type, headers)


def http_date(timestamp: float) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(timestamp))


def parse_byte_range(header: str, size: int) -> Union[tuple, str, None]:
    """(first, last) byte of a single `bytes=` range, "unsatisfiable", or None to send the whole file
    (malformed ranges and multiple ranges are ignored, as RFC 9110 allows)."""
    match = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", header)
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.groups()
    if first == "":  # the last N bytes
        if int(last) == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - int(last)), size - 1
    if int(first) >= size:
        return "unsatisfiable"
    end = size - 1 if last == "" else min(int(last), size - 1)
    return (int(first), end) if end >= int(first) else None


# =============================================================================
# 8. Speedups: orjson and uvloop when importable, or unpacked once from the .pyz
# =============================================================================

SPEEDUPS_DIR = "_speedups"  # inside the .pyz: manifest.json and files/..., written by build_zipapp.py


def platform_tag() -> str:
    """What compiled extension modules must match: interpreter, version, machine and OS."""
    return f"{sys.implementation.cache_tag}-{os.uname().machine}-{sys.platform}"


def _unpack_bundled_speedups() -> str:
    """Put the wheels packed into this .pyz on sys.path; returns a note when they cannot be used here.

    Read through the zip importer that loaded this module, so start-up never imports zipfile."""
    loader = globals().get("__loader__")
    archive = getattr(loader, "archive", None)
    if not archive:
        return ""
    try:
        manifest = json.loads(loader.get_data(f"{archive}/{SPEEDUPS_DIR}/manifest.json"))
    except OSError:  # a plain build: nothing bundled
        return ""
    if manifest["tag"] != platform_tag():
        return f"bundled speedups are for {manifest['tag']}, not {platform_tag()}: using the standard library"
    cache_root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                              "rustiz", "speedups")
    target = os.path.join(cache_root, manifest["digest"][:32])
    if not os.path.isdir(target):
        staging = f"{target}.{os.getpid()}.tmp"
        for name in manifest["files"]:
            path = os.path.join(staging, *name.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(loader.get_data(f"{archive}/{SPEEDUPS_DIR}/files/{name}"))
        try:
            os.rename(staging, target)
        except OSError:  # another process unpacked the same bundle first: use theirs
            import shutil
            shutil.rmtree(staging, ignore_errors=True)
    sys.path.insert(0, target)
    return ""


def enable_speedups(environ: dict) -> str:
    """Switch to uvloop and orjson when they import; returns the startup line's description."""
    global json_dumps
    if environ.get("RUSTIZ_NO_SPEEDUPS"):
        return "asyncio, json (RUSTIZ_NO_SPEEDUPS set)"
    try:
        note = _unpack_bundled_speedups()
    except (OSError, ValueError, KeyError) as error:
        note = f"bundled speedups could not be unpacked ({error}): using the standard library"
    used = []
    try:
        import uvloop  # noqa: F401  (new_event_loop() picks it up from sys.modules)
        used.append("uvloop")
    except ImportError:
        used.append("asyncio")
    try:
        import orjson
        json_dumps = orjson.dumps
        used.append("orjson")
    except ImportError:
        used.append("json")
    return ", ".join(used) + (f"; {note}" if note else "")


# =============================================================================
# 9. CLI
# =============================================================================

def initialize(config_path: str, force: bool) -> tuple:
    """Create the config file (0600), the database and one organization beside it.

    Returns (config path, API key, database path, uploads path)."""
    config_path = os.path.abspath(config_path)
    directory = os.path.dirname(config_path)
    if os.path.exists(config_path) and not force:
        raise UserError(f"{config_path} already exists; keeping it. Use --force to replace it "
                        f"(that makes a new API key and the old one stops working)", exit_code=1)
    database = os.path.join(directory, "rustiz.db")
    uploads = os.path.join(directory, "uploads")
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        os.makedirs(uploads, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {directory}: {error.strerror}") from None
    key = new_api_key()
    store = Store(database)
    try:
        organizations = store.organizations()
        if organizations:  # --force over an existing database: re-key it rather than add a second org
            store.set_api_key_hash(organizations[0]["id"], hash_api_key(key))
        else:
            store.create_organization("My organization", hash_api_key(key))
    finally:
        store.close()
    write_config_file(config_path, {"RUSTIZ_API_KEY": key, "RUSTIZ_DATABASE": database,
                                    "RUSTIZ_UPLOADS": uploads})
    return config_path, key, database, uploads


def command_init(arguments: argparse.Namespace) -> int:
    config_path, key, database, uploads = initialize(os.path.join(arguments.dir, "config.env"), arguments.force)
    print(f"config:   {config_path}\ndatabase: {database}\nuploads:  {uploads}\napi key:  {key}")
    print("Start the server with: rustiz serve" + (
        "" if os.path.abspath(arguments.dir) == os.path.abspath(DEFAULT_DATA_DIR)
        else f"   (with RUSTIZ_CONFIG={config_path})"))
    return 0


def command_serve(arguments: argparse.Namespace) -> int:
    environ = dict(os.environ)
    config_path = default_config_path(environ)
    if not os.path.exists(config_path):
        created, key, _, _ = initialize(config_path, force=False)
        log(f"no config at {config_path}, so `rustiz init` ran first: created {created}; API key: {key}")
    config = load_config(environ, arguments.workers)
    note = enable_speedups(environ)
    store = Store(config.database)  # migrations run once here, before any worker starts
    try:
        if config.api_key and store.organization_for_key_hash(hash_api_key(config.api_key)) is None:
            log("warning: RUSTIZ_API_KEY in the config matches no organization; `rustiz key rotate` makes a new one")
    finally:
        store.close()
    return serve(config, note)


def command_key_rotate(arguments: argparse.Namespace) -> int:
    config = load_config(dict(os.environ))
    store = Store(config.database)
    try:
        organizations = store.organizations()
        current = hash_api_key(config.api_key) if config.api_key else None
        matching = [org for org in organizations if org["api_key_hash"] == current]
        if matching:
            organization = matching[0]
        elif len(organizations) == 1:
            organization = organizations[0]
        else:
            raise UserError(f"the database has {len(organizations)} organizations and RUSTIZ_API_KEY in "
                            f"{config.config_path} matches none of them: cannot tell which key to rotate")
        key = new_api_key()
        store.set_api_key_hash(organization["id"], hash_api_key(key))
    finally:
        store.close()
    update_config_value(config.config_path, "RUSTIZ_API_KEY", key)
    print(key)
    log(f"new API key for organization {organization['name']} saved in {config.config_path}; "
        "the old key no longer works, in running servers too")
    return 0


def command_version(arguments: argparse.Namespace) -> int:
    print(f"rustiz {VERSION} (Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})")
    return 0


def _help_formatter(prog: str) -> argparse.HelpFormatter:
    """A fixed width: argparse's default asks the terminal through shutil, which costs start-up time."""
    return argparse.HelpFormatter(prog, width=100, max_help_position=32)


def build_argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rustiz", description="A self-hosted social-media scheduler that speaks the Postiz public API.",
        formatter_class=_help_formatter)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    init = commands.add_parser("init", formatter_class=_help_formatter,
                               help="create a config file, a database and an API key",
                               description="Create DIR/config.env (mode 0600), the SQLite database and one "
                                           "organization with a new API key, and print them.")
    init.add_argument("--dir", default=DEFAULT_DATA_DIR, help="where to create them (default: ./rustiz-data)")
    init.add_argument("--force", action="store_true", help="replace an existing config (makes a new API key)")
    init.set_defaults(run=command_init)
    serve_parser = commands.add_parser(
        "serve", formatter_class=_help_formatter, help="run the server",
        description="Run the server with the config named by RUSTIZ_CONFIG (default ./rustiz-data/config.env; "
                    "created by init if missing). Environment variables override the file: PORT, HOST, "
                    "FRONTEND_URL, REQUEST_LIMIT, API_LIMIT, RUSTIZ_WORKERS, RUSTIZ_MAX_BODY, "
                    "RUSTIZ_HEADER_TIMEOUT, RUSTIZ_KEEPALIVE_TIMEOUT, RUSTIZ_SHUTDOWN_TIMEOUT, RUSTIZ_ACCESS_LOG, "
                    "RUSTIZ_TRUSTED_PROXIES, RUSTIZ_NO_SPEEDUPS.")
    serve_parser.add_argument("--workers", type=int, metavar="N",
                              help="processes sharing the port (default: RUSTIZ_WORKERS or 1)")
    serve_parser.set_defaults(run=command_serve)
    key = commands.add_parser("key", formatter_class=_help_formatter, help="manage the API key",
                              description="Manage the organization's API key.")
    key_commands = key.add_subparsers(dest="key_command", metavar="ACTION", required=True)
    rotate = key_commands.add_parser("rotate", formatter_class=_help_formatter,
                                     help="make a new API key; the old one stops working at once",
                                     description="Make a new API key, save it in the config file and print it. "
                                                 "The old key stops working at once, in running servers too.")
    rotate.set_defaults(run=command_key_rotate)
    version = commands.add_parser("version", formatter_class=_help_formatter, help="print the version",
                                  description="Print the version.")
    version.set_defaults(run=command_version)
    return parser


def main(argv: Optional[list] = None) -> int:
    arguments = build_argument_parser().parse_args(argv)
    try:
        return arguments.run(arguments)
    except UserError as error:
        print(f"rustiz: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
