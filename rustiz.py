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
  7. Provider catalogue  the 35 Postiz providers (limits, settings schemas, tools); POST /posts validation
  8. API              routing table and the public API handlers (Postiz JSON shapes)
  9. MCP              the MCP server for AI agents: Streamable HTTP + legacy SSE, Postiz's tools
 10. Web app          the browser UI's files (web/), sign-in sessions (cookie + CSRF token)
 11. Outbound HTTP    the async client every provider uses (TLS, timeouts, proxies, redirects)
 12. Publishers       one class per platform behind one interface: connect, publish, limits
 13. Scheduler        due posts claimed, published, retried or failed, exactly once; webhooks
 14. Speedups         orjson/uvloop when importable, or unpacked from the .pyz bundle
 15. CLI              init, serve, key rotate, org add/list/timezone, channel add/list, user add/password/remove,
                      version
"""
from __future__ import annotations

import argparse
import contextlib
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
from _operator import _compare_digest as compare_digest  # what hmac.compare_digest is, minus hmac's OpenSSL
from typing import Any, Awaitable, Callable, NamedTuple, Optional, Union

# Key hashing uses CPython's built-in SHA-256: importing hashlib (or hmac) loads OpenSSL's libcrypto,
# which costs about a tenth of start-up and several MiB, for 64-byte inputs where speed is equal.
try:
    from _sha2 import sha256 as _sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # Python 3.10, 3.11
    except ImportError:  # an interpreter built without its own hashes
        from hashlib import sha256 as _sha256

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
DEFAULT_MAX_CONNECTIONS = 4096  # per worker
DEFAULT_BODY_MEMORY_BUDGET = 256 * 1024 * 1024  # request bodies held in memory at once, per worker
DEFAULT_BODY_MIN_RATE = 4096  # bytes/s: a 1 GiB video over a 33 kbit/s link still gets through
DEFAULT_BODY_RATE_WINDOW = 30.0  # seconds over which that rate is averaged
API_LIMIT_WINDOW_SECONDS = 3600
REQUEST_LIMIT_WINDOW_SECONDS = 60


def log(message: str) -> None:
    """Every log line goes to stderr, one line each, so a supervisor can collect them."""
    sys.stderr.write(f"rustiz[{os.getpid()}]: {message}\n")
    sys.stderr.flush()


def utc_now_iso() -> str:
    """Timestamps as Postiz serialises them: ISO 8601, milliseconds, Z."""
    return iso_at(time.time())


def iso_at(epoch: float) -> str:
    """A Unix time as Postiz serialises instants (and rustiz stores them, so text order is time order)."""
    moment = time.gmtime(epoch)  # years written with 4 digits: strftime's %Y writes year 999 as "999"
    return (f"{moment.tm_year:04d}-{moment.tm_mon:02d}-{moment.tm_mday:02d}T{moment.tm_hour:02d}:"
            f"{moment.tm_min:02d}:{moment.tm_sec:02d}.{int(epoch % 1 * 1000):03d}Z")



def parse_iso_instant(text: Any) -> Optional["datetime.datetime"]:
    """An aware UTC datetime for an ISO 8601 string as IsDateString accepts it (no offset = UTC), or None."""
    import datetime
    instant = _parse_iso_date(text) if isinstance(text, str) else None
    return None if instant is None else datetime.datetime.strptime(instant, "%Y-%m-%dT%H:%M:%S.%f%z")


def iso_ms(moment: "datetime.datetime") -> str:
    """A UTC datetime as Postiz serialises instants (and rustiz stores them, so text order is time order)."""
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
            f"{moment.second:02d}.{moment.microsecond // 1000:03d}Z")


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
    return _sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


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

class Config(NamedTuple):
    """Everything serve needs, read once at start (a NamedTuple: immutable, and cheap to define)."""
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
    fetch_allow: tuple = ()  # hosts (lower-case str) and ip_networks every outbound call may reach although private
    publish_grace_seconds: float = 6 * 3600.0  # a post later than this (rustiz was down) is not sent: ERROR "missed"
    retry_base_seconds: float = 30.0  # the first retry's wait; each further retry waits twice as long (30 min at most)
    retry_limit: int = 5  # retries after the first attempt, for failures that are safe to retry
    publish_concurrency: int = 8  # publishes in flight at once (each on its own channel)
    mcp_api_limit: bool = True  # MCP's schedule tool counts against API_LIMIT like POST /public/v1/posts
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # per worker; beyond it new requests get 503 (/health still answers)
    body_memory_budget: int = DEFAULT_BODY_MEMORY_BUDGET  # bytes of request bodies in memory at once, per worker
    body_min_rate: int = DEFAULT_BODY_MIN_RATE  # bytes/s a body must average over each body_rate_window, or 408
    body_rate_window: float = DEFAULT_BODY_RATE_WINDOW


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


def _seconds_setting(values: dict, name: str, default: float, maximum: float = 86400) -> float:
    raw = values.get(name)
    if raw is None or raw == "":
        return default
    try:
        seconds = float(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r} is not a number of seconds") from None
    if not 0 < seconds <= maximum:
        raise UserError(f"{name}={raw} is out of range: use a number of seconds above 0, at most {maximum:g}")
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
    """RUSTIZ_FETCH_ALLOW: host names, addresses or networks that outbound calls may reach although private."""
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
    mcp_api_limit = values.get("MCP_API_LIMIT", "1").lower()
    if mcp_api_limit not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        raise UserError(f"MCP_API_LIMIT={mcp_api_limit!r}: use 1 (MCP scheduling counts against API_LIMIT) or 0")
    max_body_bytes = _int_setting(values, "RUSTIZ_MAX_BODY", DEFAULT_MAX_BODY_BYTES, 1024, 2**40)
    body_memory_budget = _int_setting(values, "RUSTIZ_BODY_MEMORY_BUDGET", DEFAULT_BODY_MEMORY_BUDGET, 1024, 2**44)
    if body_memory_budget < max_body_bytes:
        raise UserError(f"RUSTIZ_BODY_MEMORY_BUDGET={body_memory_budget} is below RUSTIZ_MAX_BODY={max_body_bytes}: "
                        "a body of the largest size allowed could never be accepted; raise the budget")
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
        max_body_bytes=max_body_bytes,
        header_timeout=_seconds_setting(values, "RUSTIZ_HEADER_TIMEOUT", 10.0),
        keepalive_timeout=_seconds_setting(values, "RUSTIZ_KEEPALIVE_TIMEOUT", 75.0),
        shutdown_timeout=_seconds_setting(values, "RUSTIZ_SHUTDOWN_TIMEOUT", 10.0),
        access_log=access_log in ("1", "true", "yes", "on"),
        trusted_proxies=_trusted_proxies(values.get("RUSTIZ_TRUSTED_PROXIES", "")),
        max_video_bytes=_int_setting(values, "RUSTIZ_MAX_VIDEO_BYTES", DEFAULT_MAX_VIDEO_BYTES, 1024, 2**40),
        fetch_allow=_fetch_allow(values.get("RUSTIZ_FETCH_ALLOW", "")),
        publish_grace_seconds=_seconds_setting(values, "PUBLISH_GRACE", 6 * 3600.0, maximum=30 * 86400),
        retry_base_seconds=_seconds_setting(values, "RUSTIZ_RETRY_BASE", 30.0),
        retry_limit=_int_setting(values, "RUSTIZ_RETRY_LIMIT", 5, 0, 50),
        publish_concurrency=_int_setting(values, "RUSTIZ_PUBLISH_CONCURRENCY", 8, 1, 256),
        mcp_api_limit=mcp_api_limit in ("1", "true", "yes", "on"),
        max_connections=_int_setting(values, "RUSTIZ_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS, 1, 10**6),
        body_memory_budget=body_memory_budget,
        body_min_rate=_int_setting(values, "RUSTIZ_BODY_MIN_RATE", DEFAULT_BODY_MIN_RATE, 1, 2**30),
        body_rate_window=_seconds_setting(values, "RUSTIZ_BODY_RATE_WINDOW", DEFAULT_BODY_RATE_WINDOW, maximum=3600),
    )


def _write_private_file(path: str, text: str) -> None:
    """Mode 0600 (config files hold the API key), replaced atomically so a crash never leaves half a file."""
    temporary = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


def make_private_folders(path: str) -> None:
    """os.makedirs(path, exist_ok=True), each folder it makes 0700 (makedirs' mode applies to the last one only)."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile, by another thread or worker
            os.mkdir(folder, 0o700)


def keep_private(path: str) -> None:
    """Take the group's and others' permissions off a file or folder of ours that has them (an older rustiz
    made the database 0644 and the uploads 0755), and say so; nothing when it does not exist."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return
    if status.st_mode & 0o077 and status.st_uid == os.getuid():
        os.chmod(path, status.st_mode & 0o700)
        log(f"{path} was readable by other users (mode {status.st_mode & 0o777:o}); it is now "
            f"{status.st_mode & 0o700:o}: only its owner may read it")


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
    ALTER TABLE organization ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';
    CREATE TABLE post (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL DEFAULT 'QUEUE',
        publish_date TEXT NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        integration_id TEXT NOT NULL REFERENCES integration(id),
        content TEXT NOT NULL DEFAULT '',
        delay INTEGER NOT NULL DEFAULT 0,
        post_group TEXT NOT NULL,
        parent_post_id TEXT REFERENCES post(id),
        release_id TEXT,
        release_url TEXT,
        settings TEXT,
        image TEXT,
        creation_method TEXT NOT NULL DEFAULT 'API',
        interval_in_days INTEGER,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX post_organization_date ON post(organization_id, publish_date);
    CREATE INDEX post_organization_group ON post(organization_id, post_group);
    CREATE INDEX post_integration ON post(integration_id, publish_date);
    CREATE INDEX post_due ON post(state, publish_date) WHERE deleted_at IS NULL;
    CREATE TABLE tag (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        name TEXT NOT NULL,
        color TEXT NOT NULL DEFAULT '#000000',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX tag_organization ON tag(organization_id, name);
    CREATE TABLE tag_post (
        post_id TEXT NOT NULL REFERENCES post(id),
        tag_id TEXT NOT NULL REFERENCES tag(id),
        PRIMARY KEY (post_id, tag_id)
    );
    CREATE TABLE notification (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        content TEXT NOT NULL,
        link TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX notification_organization ON notification(organization_id, created_at);
    CREATE TABLE idempotency_key (
        organization_id TEXT NOT NULL REFERENCES organization(id),
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        status INTEGER NOT NULL,
        response BLOB NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (organization_id, key)
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
    """
    ALTER TABLE post ADD COLUMN not_before TEXT;
    ALTER TABLE post ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE post ADD COLUMN lease_owner TEXT;
    ALTER TABLE post ADD COLUMN lease_until TEXT;
    ALTER TABLE post ADD COLUMN idempotency_key TEXT;
    ALTER TABLE post ADD COLUMN reply_ref TEXT;
    ALTER TABLE post ADD COLUMN published_at TEXT;
    CREATE INDEX post_parent ON post(parent_post_id);
    ALTER TABLE integration ADD COLUMN session TEXT;
    ALTER TABLE integration ADD COLUMN limits TEXT;
    CREATE TABLE webhook (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        name TEXT NOT NULL,
        url TEXT NOT NULL,
        integrations TEXT NOT NULL DEFAULT '[]',
        secret TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX webhook_organization ON webhook(organization_id, deleted_at);
    """,
    """
    CREATE TABLE web_user (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        email TEXT NOT NULL UNIQUE,
        password_hash TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE web_session (
        token_hash TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        csrf_token TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    CREATE INDEX web_session_expiry ON web_session(expires_at);
    """,
    # The date a recurring post counts its occurrences from (the date it was given): the scheduler moves
    # publish_date to each next occurrence, and this keeps the local time they all share.
    """
    ALTER TABLE post ADD COLUMN recurrence_anchor TEXT;
    """,
    # A session records what signed it in, the API key (its hash) or a web user, so that rotating the key
    # or changing the password ends it. Sessions made before recorded neither: they end here.
    # write_probe: the one row /health rewrites to learn whether the database can be written again.
    """
    CREATE TABLE write_probe (id INTEGER PRIMARY KEY CHECK (id = 1), written_at REAL NOT NULL);
    DELETE FROM web_session;
    ALTER TABLE web_session ADD COLUMN api_key_hash TEXT;
    ALTER TABLE web_session ADD COLUMN web_user_id TEXT REFERENCES web_user(id);
    CREATE INDEX web_session_key ON web_session(api_key_hash);
    CREATE INDEX web_session_user ON web_session(web_user_id);
    """,
)


class RateDecision(NamedTuple):
    """The outcome of counting one request against a fixed window."""
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int  # until the window ends
    retry_after: int  # seconds until a refused caller may try again (0 when allowed)


class PostBeingPublished(Exception):
    """A write would change a post the scheduler has claimed (state PUBLISHING); nothing was written."""

    def __init__(self, post_id: str):
        super().__init__(post_id)
        self.post_id = post_id


class ChannelAlreadyAdded(Exception):
    """The organization already has a live channel for that account; nothing was written."""

    def __init__(self, channel_id: str, name: str):
        super().__init__(channel_id)
        self.channel_id = channel_id
        self.name = name


class IdempotentResponse(NamedTuple):
    """The answer given to the first request with an Idempotency-Key, replayed to its retries."""
    key: str
    request_hash: str
    status: int
    body: bytes


class DatabaseUnwritable(sqlite3.OperationalError):
    """SQLite could not write the database (a full disk, a read-only file or mount, an I/O error); the
    message names the file, the cause and what to do. Requests that meet it are answered 503."""


# SQLite's messages for a database it cannot write, and what rustiz tells the operator about each.
_UNWRITABLE_CAUSES = (("readonly", "the database is read-only; check the permissions of the file and its folder, "
                                   "and that the file system is not mounted read-only"),
                      ("disk is full", "the disk is full; free space and retry"),
                      ("disk i/o error", "the disk reported an I/O error; check the disk, the file system's "
                                         "quotas and the kernel log"))
WRITE_PROBE_SECONDS = 5  # how often /health tries a write while writes fail


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
        self.on_posts_changed: Optional[Callable[[], None]] = None  # the scheduler's wake-up, where it runs
        self.write_problem: Optional[str] = None  # why writes fail, until one succeeds WRITE_PROBE_SECONDS later
        self._write_failed_at = self._next_write_probe = 0.0  # (time.monotonic)
        directory = os.path.dirname(os.path.abspath(path))
        try:
            make_private_folders(directory)
            self._keep_private(path)
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                                      cached_statements=256)
            self.db.execute("PRAGMA busy_timeout = 5000")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
            self._shared_counters = self._map_shared_counters()
        except DatabaseUnwritable as error:
            raise UserError(str(error)) from None
        except sqlite3.DatabaseError as error:
            raise UserError(f"cannot open database {path}: {error}") from None
        except OSError as error:
            raise UserError(f"cannot open database {path}: {error.strerror}") from None

    @staticmethod
    def _keep_private(path: str) -> None:
        """The database holds channel credentials: only its owner may read it, nor its -wal and -shm files
        (SQLite makes new ones with the database's mode; ones left by an older rustiz may be 0644)."""
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))  # created 0600 before SQLite writes a byte
        for name in (path, path + "-wal", path + "-shm"):
            keep_private(name)

    def close(self) -> None:
        self._end_shared_read()
        self.db.close()
        self._shared_counters.close()

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
        """One write transaction, committed when the block ends (rolled back if it raises). Raises
        DatabaseUnwritable when the file cannot be written, and remembers why in `write_problem`."""
        self._end_shared_read()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # (a failed COMMIT may have rolled back already)
                    self.db.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as error:
            cause = next((cause for words, cause in _UNWRITABLE_CAUSES if words in str(error).lower()), None)
            if cause is None:
                raise
            problem = f"rustiz cannot write its database ({self.path}): {cause}"
            if problem != self.write_problem:
                log(f"{problem} (SQLite: {error})")
            self.write_problem, self._write_failed_at = problem, time.monotonic()
            raise DatabaseUnwritable(problem) from error
        # On a full disk, small writes may still fit where the WAL file has room while larger ones fail: only
        # a write some time after the last failure says the problem is over.
        if self.write_problem is not None and time.monotonic() - self._write_failed_at >= WRITE_PROBE_SECONDS:
            log(f"the database {self.path} can be written again")
            self.write_problem = None

    def current_write_problem(self) -> Optional[str]:
        """Why the database cannot be written, or None. While writes fail, a small write is tried again (at
        most every WRITE_PROBE_SECONDS, and on a disk with free space), so that the answer clears once
        writes succeed."""
        now = time.monotonic()
        if self.write_problem is not None and now >= self._next_write_probe \
                and now - self._write_failed_at >= WRITE_PROBE_SECONDS:
            self._next_write_probe = now + WRITE_PROBE_SECONDS
            if os.statvfs(os.path.dirname(os.path.abspath(self.path))).f_bavail > 0:
                with contextlib.suppress(sqlite3.OperationalError), self._writing() as db:
                    # (a new value: SQLite leaves a page alone when an UPDATE writes back the same bytes)
                    db.execute("INSERT OR REPLACE INTO write_probe (id, written_at) VALUES (1, ?)", (time.time(),))
        return self.write_problem

    def _map_shared_counters(self) -> mmap.mmap:
        """Two 8-byte counters beside the database, shared by every process through mmap.

        Bytes 0-7 move when an API key changes: servers compare them on each request (a memory read)
        and forget their cached key lookups, so a rotated key stops working at once. Bytes 8-15
        move when posts change: the scheduler, in whichever process it runs, re-reads what is due.
        """
        descriptor = os.open(self.path + "-credentials", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(descriptor).st_size < 16:
                os.ftruncate(descriptor, 16)
            return mmap.mmap(descriptor, 16)
        finally:
            os.close(descriptor)

    def _bump(self, offset: int) -> None:
        counter = int.from_bytes(self._shared_counters[offset:offset + 8], "little")
        self._shared_counters[offset:offset + 8] = ((counter + 1) % 2**64).to_bytes(8, "little")

    def credentials_generation(self) -> bytes:
        return self._shared_counters[:8]

    def _credentials_changed(self) -> None:
        self._bump(0)

    def posts_generation(self) -> bytes:
        return self._shared_counters[8:16]

    def _posts_changed(self) -> None:
        """Tell the scheduler: at once in this process (on_posts_changed), within a second in the others."""
        self._bump(8)
        if self.on_posts_changed is not None:
            self.on_posts_changed()

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

    def organization_summaries(self) -> list:
        """Every organization with the number of its channels (deleted channels not counted)."""
        rows = self._read(
            "SELECT o.id, o.name, COUNT(i.id) FROM organization o "
            "LEFT JOIN integration i ON i.organization_id = o.id AND i.deleted_at IS NULL "
            "WHERE o.deleted_at IS NULL GROUP BY o.id ORDER BY o.created_at, o.id")
        return [{"id": row[0], "name": row[1], "channels": row[2]} for row in rows]

    def organization_for_key_hash(self, api_key_hash: str) -> Optional[str]:
        row = self._read(
            "SELECT id, api_key_hash FROM organization WHERE api_key_hash = ? AND deleted_at IS NULL",
            (api_key_hash,)).fetchone()
        # The index finds the row; the constant-time compare keeps the final check free of timing leaks.
        if row is not None and compare_digest(row[1], api_key_hash):
            return row[0]
        return None

    def api_key_hash(self, organization_id: str) -> Optional[str]:
        row = self._read("SELECT api_key_hash FROM organization WHERE id = ?", (organization_id,)).fetchone()
        return row[0] if row else None

    def set_api_key_hash(self, organization_id: str, api_key_hash: str) -> None:
        """A new key for the organization; the web sessions signed in with the old one end with it."""
        with self._writing() as db:
            db.execute("DELETE FROM web_session WHERE api_key_hash = "
                       "(SELECT api_key_hash FROM organization WHERE id = ?)", (organization_id,))
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
        return [self._integration_item(row) for row in rows]

    @staticmethod
    def _integration_item(row: tuple) -> dict:
        channel = {"id": row[0], "name": row[1], "identifier": row[2], "picture": row[3],
                   "disabled": bool(row[4]), "profile": row[5]}
        if row[6] is not None:
            channel["customer"] = {"id": row[6], "name": row[7]}
        return channel

    def add_channel(self, organization_id: str, channel: "NewChannel") -> dict:
        """Store a connected channel, its credentials as the token; returns it as GET /integrations lists it.

        Raises ChannelAlreadyAdded when the organization has a live channel for the same account.
        `channel.customer` names a group by id or by name; an unknown name makes a new group."""
        account = channel.account
        now = utc_now_iso()
        channel_id = new_cuid()
        with self._writing() as db:
            existing = db.execute("SELECT id, name FROM integration WHERE organization_id = ? AND provider_identifier = ? "
                                  "AND internal_id = ? AND deleted_at IS NULL",
                                  (organization_id, channel.provider, account.internal_id)).fetchone()
            if existing is not None:
                raise ChannelAlreadyAdded(existing[0], existing[1])
            customer_id = self._customer_id(db, organization_id, channel.customer, now) if channel.customer else None
            db.execute("INSERT INTO integration (id, internal_id, organization_id, name, picture, provider_identifier, "
                       "token, profile, customer_id, created_at, updated_at, session, limits) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (channel_id, account.internal_id, organization_id, account.name, account.picture,
                        channel.provider, json.dumps(channel.credentials), account.profile, customer_id, now, now,
                        None if channel.session is None else json.dumps(channel.session),
                        None if channel.limits is None else json.dumps(channel.limits)))
            row = db.execute(self._INTEGRATIONS_SQL + " AND i.id = ?", (organization_id, channel_id)).fetchone()
        return self._integration_item(row)

    @staticmethod
    def _customer_id(db: sqlite3.Connection, organization_id: str, id_or_name: str, now: str) -> str:
        """The organization's group with that id, else with that name, else a new group of that name."""
        row = db.execute("SELECT id FROM customer WHERE organization_id = ? AND deleted_at IS NULL AND (id = ? OR name = ?) "
                         "ORDER BY id = ? DESC, created_at LIMIT 1",
                         (organization_id, id_or_name, id_or_name, id_or_name)).fetchone()
        if row is not None:
            return row[0]
        customer_id = new_uuid()
        db.execute("INSERT INTO customer (id, organization_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                   (customer_id, organization_id, id_or_name, now, now))
        return customer_id

    def channel(self, organization_id: str, channel_id: str, include_deleted: bool = False) -> Optional[dict]:
        """One channel of the organization (None for another organization's id), as validate_create_post takes it."""
        row = self._read(
            "SELECT id, name, provider_identifier, picture, disabled, profile, additional_settings, customer_id, "
            "deleted_at, limits FROM integration WHERE id = ? AND organization_id = ?"
            + ("" if include_deleted else " AND deleted_at IS NULL"), (channel_id, organization_id)).fetchone()
        if row is None:
            return None
        try:
            additional_settings = json.loads(row[6])
        except ValueError:  # written by hand or by an older tool: treat as no extra settings
            additional_settings = []
        return {"id": row[0], "name": row[1], "provider_identifier": row[2], "picture": row[3],
                "disabled": bool(row[4]), "profile": row[5],
                "additional_settings": additional_settings if isinstance(additional_settings, list) else [],
                "customer_id": row[7], "deleted": row[8] is not None, "limits": json.loads(row[9] or "{}")}

    # --- customers (groups) ---------------------------------------------------

    def customers(self, organization_id: str) -> list:
        rows = self._read("SELECT id, name FROM customer WHERE organization_id = ? AND deleted_at IS NULL "
                          "ORDER BY created_at, id", (organization_id,))
        return [{"id": row[0], "name": row[1]} for row in rows]

    # Secrets (token, refreshToken) never leave the store: the Prisma row Postiz returns carries them,
    # rustiz's channel rows do not.
    _CHANNEL_COLUMNS = (
        "id, internal_id, organization_id, name, picture, provider_identifier, type, disabled, token_expiration, "
        "profile, deleted_at, created_at, updated_at, in_between_steps, refresh_needed, posting_times, "
        "custom_instance_details, customer_id, root_internal_id, additional_settings")

    @staticmethod
    def _channel_row(row: tuple) -> dict:
        """A channel in the shape of Postiz's Integration DB row (§7.1), JSON columns kept as strings."""
        return {"id": row[0], "internalId": row[1], "organizationId": row[2], "name": row[3], "picture": row[4],
                "providerIdentifier": row[5], "type": row[6], "disabled": bool(row[7]), "tokenExpiration": row[8],
                "profile": row[9], "deletedAt": row[10], "createdAt": row[11], "updatedAt": row[12],
                "inBetweenSteps": bool(row[13]), "refreshNeeded": bool(row[14]), "postingTimes": row[15],
                "customInstanceDetails": row[16], "customerId": row[17], "rootInternalId": row[18],
                "additionalSettings": row[19]}

    def channel_row(self, organization_id: str, channel_id: str) -> Optional[dict]:
        """A live channel of the organization as Postiz's Integration row (other organizations' ids: None)."""
        row = self._read(f"SELECT {self._CHANNEL_COLUMNS} FROM integration WHERE id = ? AND organization_id = ? "
                         "AND deleted_at IS NULL", (channel_id, organization_id)).fetchone()
        return None if row is None else self._channel_row(row)

    def update_channel(self, organization_id: str, channel_id: str, changes: dict) -> Optional[dict]:
        """Rename, disable or enable a channel, set its posting times or its group (`changes` holds any of
        name, disabled, posting_times, customer: a group's id or name, "" for none); the row, None when unknown."""
        now = utc_now_iso()
        with self._writing() as db:
            if db.execute("SELECT 1 FROM integration WHERE id = ? AND organization_id = ? AND deleted_at IS NULL",
                          (channel_id, organization_id)).fetchone() is None:
                return None
            columns = {name: changes[name] for name in ("name", "disabled", "posting_times") if name in changes}
            if "customer" in changes:
                columns["customer_id"] = (self._customer_id(db, organization_id, changes["customer"], now)
                                          if changes["customer"] else None)
            for column, value in columns.items():  # column names come from the fixed list above, never input
                db.execute(f"UPDATE integration SET {column} = ?, updated_at = ? WHERE id = ?", (value, now, channel_id))
            row = db.execute(f"SELECT {self._CHANNEL_COLUMNS} FROM integration WHERE id = ?", (channel_id,)).fetchone()
        return self._channel_row(row)

    def delete_channel(self, organization_id: str, channel_id: str) -> Optional[dict]:
        """Soft-delete a channel and every post on it; returns the deleted row, None when unknown."""
        now = utc_now_iso()
        with self._writing() as db:
            deleted = db.execute("UPDATE integration SET deleted_at = ?, updated_at = ? "
                                 "WHERE id = ? AND organization_id = ? AND deleted_at IS NULL",
                                 (now, now, channel_id, organization_id)).rowcount
            if not deleted:
                return None
            db.execute("UPDATE post SET deleted_at = ?, updated_at = ? "
                       "WHERE integration_id = ? AND organization_id = ? AND deleted_at IS NULL",
                       (now, now, channel_id, organization_id))
            row = db.execute(f"SELECT {self._CHANNEL_COLUMNS} FROM integration WHERE id = ?", (channel_id,)).fetchone()
        self._posts_changed()
        return self._channel_row(row)

    def organization_timezone(self, organization_id: str) -> str:
        row = self._read("SELECT timezone FROM organization WHERE id = ?", (organization_id,)).fetchone()
        return row[0] if row else "UTC"

    def organization(self, organization_id: str) -> Optional[dict]:
        """{id, name, timezone} of a live organization."""
        row = self._read("SELECT id, name, timezone FROM organization WHERE id = ? AND deleted_at IS NULL",
                         (organization_id,)).fetchone()
        return None if row is None else {"id": row[0], "name": row[1], "timezone": row[2]}

    def update_organization(self, organization_id: str, name: Optional[str] = None,
                            timezone: Optional[str] = None) -> None:
        """Change the name and/or the IANA timezone (checked by the caller); None leaves a field as it is."""
        with self._writing() as db:
            db.execute("UPDATE organization SET name = COALESCE(?, name), timezone = COALESCE(?, timezone), "
                       "updated_at = ? WHERE id = ?", (name, timezone, utc_now_iso(), organization_id))

    # --- posts -------------------------------------------------------------------

    _POST_COLUMNS = (
        "p.id, p.state, p.publish_date, p.organization_id, p.integration_id, p.content, p.delay, p.post_group, "
        "p.parent_post_id, p.release_id, p.release_url, p.settings, p.image, p.creation_method, "
        "p.interval_in_days, p.error, p.created_at, p.updated_at, p.deleted_at")

    @staticmethod
    def _post_row(row: tuple) -> dict:
        """A post in the shape of Postiz's Post DB row (§7.2); `state` may also be PUBLISHING here."""
        return {"id": row[0], "state": row[1], "publishDate": row[2], "organizationId": row[3],
                "integrationId": row[4], "content": row[5], "delay": row[6], "group": row[7],
                "parentPostId": row[8], "releaseId": row[9], "releaseURL": row[10], "settings": row[11],
                "image": row[12], "creationMethod": row[13], "intervalInDays": row[14], "error": row[15],
                "createdAt": row[16], "updatedAt": row[17], "deletedAt": row[18]}

    def post(self, organization_id: str, post_id: str) -> Optional[dict]:
        """A live post of the organization (not deleted, on a channel that is not deleted)."""
        row = self._read(f"SELECT {self._POST_COLUMNS} FROM post p JOIN integration i ON i.id = p.integration_id "
                         "WHERE p.id = ? AND p.organization_id = ? AND p.deleted_at IS NULL "
                         "AND i.deleted_at IS NULL", (post_id, organization_id)).fetchone()
        return None if row is None else self._post_row(row)

    def posts_by_id(self, organization_id: str, post_ids: list) -> dict:
        """id -> post, for the live posts among `post_ids` (others are simply absent)."""
        found: dict = {}
        for start in range(0, len(post_ids), 500):
            chunk = post_ids[start:start + 500]
            rows = self._read(f"SELECT {self._POST_COLUMNS} FROM post p WHERE p.organization_id = ? "
                              f"AND p.deleted_at IS NULL AND p.id IN ({','.join('?' * len(chunk))})",
                              (organization_id, *chunk))
            found.update((row[0], self._post_row(row)) for row in rows)
        return found

    def thread(self, organization_id: str, group: str) -> list:
        """The live posts of one group in thread order: the root first, then each reply after its parent."""
        rows = self._read(f"SELECT {self._POST_COLUMNS} FROM post p WHERE p.organization_id = ? "
                          "AND p.post_group = ? AND p.deleted_at IS NULL", (organization_id, group))
        by_parent: dict = {}
        for row in rows:
            by_parent.setdefault(row[8], []).append(self._post_row(row))
        ordered: list = []
        pending = sorted(by_parent.get(None, []), key=lambda post: post["createdAt"])
        while pending:
            post = pending.pop(0)
            ordered.append(post)
            pending[:0] = sorted(by_parent.get(post["id"], []), key=lambda child: child["createdAt"])
        return ordered

    def post_tags(self, post_ids: list) -> dict:
        """post id -> [{"tag": Postiz Tags row}], for the tags linked to those posts."""
        tags: dict = {}
        for start in range(0, len(post_ids), 500):
            chunk = post_ids[start:start + 500]
            rows = self._read("SELECT tp.post_id, t.id, t.name, t.color, t.organization_id, t.deleted_at, "
                              "t.created_at, t.updated_at FROM tag_post tp JOIN tag t ON t.id = tp.tag_id "
                              f"WHERE tp.post_id IN ({','.join('?' * len(chunk))}) ORDER BY t.name", chunk)
            for row in rows:
                tags.setdefault(row[0], []).append({"tag": {
                    "id": row[1], "name": row[2], "color": row[3], "orgId": row[4], "deletedAt": row[5],
                    "createdAt": row[6], "updatedAt": row[7]}})
        return tags

    def root_posts_for_listing(self, organization_id: str, start: str, end: str,
                               customer_id: Optional[str]) -> list:
        """Root posts of live channels dated in [start, end], plus every recurring one (the caller expands them).

        Each row is a post with `integration` {id, providerIdentifier, name, picture} and `recurrenceAnchor` added."""
        sql = (f"SELECT {self._POST_COLUMNS}, i.provider_identifier, i.name, i.picture, p.recurrence_anchor "
               "FROM post p "
               "JOIN integration i ON i.id = p.integration_id "
               "WHERE p.organization_id = ? AND p.deleted_at IS NULL AND p.parent_post_id IS NULL "
               "AND i.deleted_at IS NULL AND (p.publish_date BETWEEN ? AND ? OR p.interval_in_days IS NOT NULL)")
        parameters: tuple = (organization_id, start, end)
        if customer_id is not None:
            sql += " AND i.customer_id = ?"
            parameters += (customer_id,)
        posts = []
        for row in self._read(sql + " ORDER BY p.publish_date, p.id", parameters):
            post = self._post_row(row)
            post["integration"] = {"id": row[4], "providerIdentifier": row[19], "name": row[20], "picture": row[21]}
            post["recurrenceAnchor"] = row[22]
            posts.append(post)
        return posts

    def queued_publish_dates(self, channel_id: str, since: str) -> set:
        """Publish dates (as stored) of the channel's queued root posts from `since` on."""
        rows = self._read("SELECT publish_date FROM post WHERE integration_id = ? AND state = 'QUEUE' "
                          "AND parent_post_id IS NULL AND deleted_at IS NULL AND publish_date >= ?",
                          (channel_id, since))
        return {row[0] for row in rows}

    def save_posts(self, organization_id: str, threads: list, replaced_groups: set, tag_labels: list,
                   idempotency: Optional["IdempotentResponse"] = None) -> Optional["IdempotentResponse"]:
        """Write new and updated posts in one transaction.

        `threads`: per channel, its rows root first, each a dict of post fields (snake_case keys of the
        post table) with `existing` telling whether to update the row with that id instead of inserting.
        Live posts of `replaced_groups` that are not rewritten here are soft-deleted. Tags are matched to
        the organization's tags by name (unknown labels are ignored, as Postiz does) and linked to roots.
        With `idempotency`, a response already stored under that key (in the last 24 h) is returned and
        nothing is written; otherwise `idempotency` is stored with the posts, and None is returned.
        """
        now = utc_now_iso()
        with self._writing() as db:
            if idempotency is not None:
                earlier = self._stored_response(db.execute, organization_id, idempotency.key)
                if earlier is not None:
                    return earlier
            kept = [row["id"] for thread in threads for row in thread if row["existing"]]
            # Checked inside the write transaction: the scheduler claims posts in one too, so no claim
            # can slip in between this check and the writes below.
            busy = db.execute(f"SELECT id FROM post WHERE state = 'PUBLISHING' AND id IN ({','.join('?' * len(kept))})",
                              kept).fetchone()
            if busy is not None:
                raise PostBeingPublished(busy[0])
            for group in replaced_groups:
                db.execute("UPDATE post SET deleted_at = ?, updated_at = ? WHERE organization_id = ? "
                           f"AND post_group = ? AND deleted_at IS NULL AND id NOT IN ({','.join('?' * len(kept))})",
                           (now, now, organization_id, group, *kept))
            tag_ids = self._tag_ids(db, organization_id, tag_labels)
            for thread in threads:
                for row in thread:
                    self._write_post(db, organization_id, row, now)
                db.execute("DELETE FROM tag_post WHERE post_id = ?", (thread[0]["id"],))
                db.executemany("INSERT INTO tag_post (post_id, tag_id) VALUES (?, ?)",
                               [(thread[0]["id"], tag_id) for tag_id in tag_ids])
            if idempotency is not None:
                self._store_response(db, organization_id, idempotency)
        self._posts_changed()
        return None

    _POST_FIELDS = ("state", "publish_date", "integration_id", "content", "delay", "post_group", "parent_post_id",
                    "settings", "image", "creation_method", "interval_in_days")

    def _write_post(self, db: sqlite3.Connection, organization_id: str, row: dict, now: str) -> None:
        values = tuple(row[field] for field in self._POST_FIELDS)
        if row["existing"]:
            # Back in the queue (or a draft) means the last failure no longer describes the post.
            # An edited queued post is a new post to the scheduler: no retry wait, a fresh idempotency key.
            # A recurring post keeps counting from its anchor unless its date or interval changes (the
            # right-hand sides all read the row as it was before this UPDATE).
            db.execute(f"UPDATE post SET {', '.join(field + ' = ?' for field in self._POST_FIELDS)}, "
                       "error = CASE WHEN ? IN ('QUEUE', 'DRAFT') THEN NULL ELSE error END, "
                       "recurrence_anchor = CASE WHEN publish_date = ? AND interval_in_days IS ? "
                       "THEN COALESCE(recurrence_anchor, publish_date) ELSE ? END, "
                       "not_before = NULL, attempts = 0, idempotency_key = NULL, "
                       "deleted_at = NULL, updated_at = ? WHERE id = ? AND organization_id = ?",
                       (*values, row["state"], row["publish_date"], row["interval_in_days"], row["publish_date"],
                        now, row["id"], organization_id))
        else:
            db.execute(f"INSERT INTO post (id, organization_id, created_at, updated_at, recurrence_anchor, "
                       f"{', '.join(self._POST_FIELDS)}) VALUES (?, ?, ?, ?, ?{', ?' * len(values)})",
                       (row["id"], organization_id, now, now, row["publish_date"], *values))

    @staticmethod
    def _tag_ids(db: sqlite3.Connection, organization_id: str, labels: list) -> list:
        if not labels:
            return []
        rows = db.execute(f"SELECT id FROM tag WHERE organization_id = ? AND deleted_at IS NULL "
                          f"AND name IN ({','.join('?' * len(labels))})", (organization_id, *labels))
        return [row[0] for row in rows]

    def update_post_fields(self, organization_id: str, post_ids: list, only_in_states: tuple = (),
                           **fields: Any) -> int:
        """Set the given columns (settings, state, release_id, ...) on live posts of the organization.

        With `only_in_states`, posts that meanwhile moved to another state (the scheduler claimed them)
        are left alone. Returns how many posts changed."""
        assignments = ", ".join(f"{name} = ?" for name in fields)
        state_check = f" AND state IN ({','.join('?' * len(only_in_states))})" if only_in_states else ""
        with self._writing() as db:
            changed = db.execute(f"UPDATE post SET {assignments}, updated_at = ? WHERE organization_id = ? "
                                 f"AND deleted_at IS NULL AND id IN ({','.join('?' * len(post_ids))}){state_check}",
                                 (*fields.values(), utc_now_iso(), organization_id, *post_ids, *only_in_states)
                                 ).rowcount
        self._posts_changed()
        return changed

    def retry_failed_group(self, organization_id: str, group: str) -> int:
        """Failed posts of a group back to the queue, due now, their error cleared; returns how many."""
        now = utc_now_iso()
        with self._writing() as db:
            retried = db.execute("UPDATE post SET state = 'QUEUE', error = NULL, not_before = ?, attempts = 0, "
                                 "updated_at = ? WHERE organization_id = ? AND post_group = ? AND state = 'ERROR' "
                                 "AND deleted_at IS NULL", (now, now, organization_id, group)).rowcount
        self._posts_changed()
        return retried

    def delete_group(self, organization_id: str, group: str) -> int:
        now = utc_now_iso()
        with self._writing() as db:
            deleted = db.execute("UPDATE post SET deleted_at = ?, updated_at = ? WHERE organization_id = ? "
                                 "AND post_group = ? AND deleted_at IS NULL",
                                 (now, now, organization_id, group)).rowcount
        self._posts_changed()
        return deleted

    # --- publishing: the scheduler's claims and outcomes ------------------------------------------
    # A post row is due when it is queued, its publish date and not_before (a retry's wait, a thread
    # part's delay) have passed, and, for a thread part, the part before it is published. Only the
    # scheduler moves a post out of QUEUE, each move one write transaction.

    _DUE_SQL = ("FROM post p JOIN integration i ON i.id = p.integration_id "
                "LEFT JOIN post parent ON parent.id = p.parent_post_id "
                "WHERE p.state = 'QUEUE' AND p.deleted_at IS NULL AND i.deleted_at IS NULL "
                "AND (p.parent_post_id IS NULL OR parent.state = 'PUBLISHED')")

    def next_due_time(self, after: str) -> Optional[str]:
        """The earliest time after `after` that a queued post becomes due (ISO, UTC), or None."""
        return self._read("SELECT MIN(due) FROM (SELECT MAX(p.publish_date, COALESCE(p.not_before, '')) AS due "
                          + self._DUE_SQL + ") WHERE due > ?", (after,)).fetchone()[0]

    def due_posts(self, now: str, limit: int = 500) -> list:
        """(post id, channel id, provider) of the earliest due post of each channel, earliest first."""
        rows = self._read("SELECT p.id, p.integration_id, i.provider_identifier, "
                          "MIN(MAX(p.publish_date, COALESCE(p.not_before, ''))) AS due "
                          + self._DUE_SQL + " AND p.publish_date <= ? AND COALESCE(p.not_before, '') <= ? "
                          "GROUP BY p.integration_id ORDER BY due LIMIT ?", (now, now, limit))
        return [tuple(row[:3]) for row in rows]

    def claim_post(self, post_id: str, owner: str, lease_until: str) -> Optional[dict]:
        """QUEUE -> PUBLISHING for one post, and everything publishing it needs, read in the same transaction.

        None when the post meanwhile left the queue (edited to a draft, deleted, claimed)."""
        now = utc_now_iso()
        with self._writing() as db:
            claimed = db.execute("UPDATE post SET state = 'PUBLISHING', lease_owner = ?, lease_until = ?, "
                                 "attempts = attempts + 1, idempotency_key = COALESCE(idempotency_key, ?), "
                                 "updated_at = ? WHERE id = ? AND state = 'QUEUE' AND deleted_at IS NULL",
                                 (owner, lease_until, new_uuid(), now, post_id)).rowcount
        return self.post_for_publishing(post_id) if claimed else None

    def post_for_publishing(self, post_id: str) -> dict:
        """A post with its channel (credentials, session, state), the part before it, and its place in the thread."""
        row = self._read(
                "SELECT p.id, p.organization_id, p.integration_id, p.content, p.settings, p.image, p.post_group, "
                "p.parent_post_id, p.publish_date, p.not_before, p.attempts, p.idempotency_key, p.interval_in_days, "
                "i.provider_identifier, i.name, i.token, i.session, i.disabled, i.refresh_needed, "
                "parent.release_id, parent.release_url, parent.reply_ref, p.recurrence_anchor "
                "FROM post p JOIN integration i ON i.id = p.integration_id "
            "LEFT JOIN post parent ON parent.id = p.parent_post_id WHERE p.id = ?", (post_id,)).fetchone()
        names = ("id", "organization_id", "channel_id", "content", "settings", "image", "group", "parent_id",
                 "publish_date", "not_before", "attempts", "idempotency_key", "interval_days", "provider",
                 "channel_name", "credentials", "session", "disabled", "refresh_needed", "parent_release_id",
                 "parent_release_url", "parent_reply_ref", "recurrence_anchor")
        claim = dict(zip(names, row))
        claim["part"] = self._read("WITH RECURSIVE up(id, parent) AS (SELECT id, parent_post_id FROM post WHERE id = ? "
                                   "UNION ALL SELECT post.id, post.parent_post_id FROM post JOIN up ON post.id = up.parent) "
                                   "SELECT COUNT(*) - 1 FROM up", (post_id,)).fetchone()[0]
        return claim

    def requeue_post(self, post_id: str, not_before: str, note: str) -> None:
        """A claimed post back to the queue, to be tried again from `not_before`; `note` says why (shown as error)."""
        with self._writing() as db:
            db.execute("UPDATE post SET state = 'QUEUE', not_before = ?, error = ?, lease_owner = NULL, "
                       "lease_until = NULL, updated_at = ? WHERE id = ? AND state = 'PUBLISHING'",
                       (not_before, note, utc_now_iso(), post_id))
        self._posts_changed()

    def record_published(self, post_id: str, release_id: str, release_url: str, reply_ref: Any) -> None:
        """PUBLISHED with its release; the next thread part becomes due after its delay."""
        now = utc_now_iso()
        with self._writing() as db:
            db.execute("UPDATE post SET state = 'PUBLISHED', release_id = ?, release_url = ?, reply_ref = ?, "
                       "error = NULL, lease_owner = NULL, lease_until = NULL, published_at = ?, updated_at = ? "
                       "WHERE id = ?", (release_id, release_url,
                                        None if reply_ref is None else json.dumps(reply_ref), now, now, post_id))
            for child_id, delay in db.execute("SELECT id, delay FROM post WHERE parent_post_id = ? "
                                              "AND deleted_at IS NULL AND state = 'QUEUE'", (post_id,)).fetchall():
                db.execute("UPDATE post SET not_before = ? WHERE id = ?",
                           (iso_at(time.time() + max(0, delay or 0) * 60), child_id))
        self._posts_changed()

    def record_failed(self, post_id: str, error: str) -> int:
        """ERROR with `error`; the thread parts after it fail too (they would reply to nothing). Returns
        how many later parts were failed with it."""
        now = utc_now_iso()
        with self._writing() as db:
            db.execute("UPDATE post SET state = 'ERROR', error = ?, lease_owner = NULL, lease_until = NULL, "
                       "updated_at = ? WHERE id = ?", (error, now, post_id))
            failed, parents = 0, [post_id]
            while parents:
                children = [row[0] for row in db.execute(
                    f"SELECT id FROM post WHERE parent_post_id IN ({','.join('?' * len(parents))}) "
                    "AND deleted_at IS NULL AND state = 'QUEUE'", parents)]
                for child in children:
                    db.execute("UPDATE post SET state = 'ERROR', error = ?, updated_at = ? WHERE id = ?",
                               ("Not published: an earlier part of this thread failed (" + error[:300] + ")",
                                now, child))
                failed, parents = failed + len(children), children
        self._posts_changed()
        return failed

    def finished_recurring_root(self, group: str) -> Optional[tuple]:
        """(root id, publish date, interval in days, recurrence anchor or None) when the group recurs and none
        of it waits or is publishing."""
        if self._read("SELECT 1 FROM post WHERE post_group = ? AND deleted_at IS NULL "
                      "AND state IN ('QUEUE', 'PUBLISHING') LIMIT 1", (group,)).fetchone() is not None:
            return None
        return self._read("SELECT id, publish_date, interval_in_days, recurrence_anchor FROM post "
                          "WHERE post_group = ? AND parent_post_id IS NULL AND deleted_at IS NULL "
                          "AND interval_in_days > 0", (group,)).fetchone()

    def rearm_recurring(self, root_id: str, next_date: str) -> None:
        """A recurring post's whole thread back to the queue for its next occurrence."""
        now = utc_now_iso()
        with self._writing() as db:
            group = db.execute("SELECT post_group FROM post WHERE id = ?", (root_id,)).fetchone()[0]
            db.execute("UPDATE post SET state = 'QUEUE', publish_date = ?, not_before = NULL, attempts = 0, "
                       "idempotency_key = NULL, lease_owner = NULL, lease_until = NULL, updated_at = ? WHERE post_group = ? AND deleted_at IS NULL "
                       "AND state IN ('PUBLISHED', 'QUEUE', 'PUBLISHING')", (next_date, now, group))
        self._posts_changed()

    def publishing_posts(self) -> list:
        """(post id, provider, lease owner, channel name, claimed at, credentials) of every post left PUBLISHING."""
        return self._read("SELECT p.id, i.provider_identifier, p.lease_owner, i.name, p.updated_at, i.token FROM post p "
                          "JOIN integration i ON i.id = p.integration_id WHERE p.state = 'PUBLISHING'").fetchall()

    def channel_secrets(self, channel_id: str) -> tuple:
        """(credentials, cached session) of a channel, for calls to its platform outside a publish."""
        row = self._read("SELECT token, session FROM integration WHERE id = ?", (channel_id,)).fetchone()
        return json.loads(row[0] or "{}"), json.loads(row[1] or "null")

    def save_channel_session(self, channel_id: str, session: dict) -> None:
        with self._writing() as db:
            db.execute("UPDATE integration SET session = ? WHERE id = ?", (json.dumps(session), channel_id))

    def mark_refresh_needed(self, channel_id: str) -> None:
        with self._writing() as db:
            db.execute("UPDATE integration SET refresh_needed = 1, updated_at = ? WHERE id = ?",
                       (utc_now_iso(), channel_id))

    def add_notification(self, organization_id: str, content: str, link: Optional[str] = None) -> None:
        now = utc_now_iso()
        with self._writing() as db:
            db.execute("INSERT INTO notification (id, organization_id, content, link, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (new_uuid(), organization_id, content, link, now, now))

    # --- outgoing webhooks: an organization's URLs told of each outcome ------------------------

    _WEBHOOK_COLUMNS = "id, name, url, integrations, secret IS NOT NULL AND secret != '', created_at"

    @staticmethod
    def _webhook_row(row: tuple) -> dict:
        return {"id": row[0], "name": row[1], "url": row[2], "integrations": json.loads(row[3]),
                "signed": bool(row[4]), "createdAt": row[5]}

    def webhooks(self, organization_id: str) -> list:
        return [self._webhook_row(row) for row in self._read(
            f"SELECT {self._WEBHOOK_COLUMNS} FROM webhook WHERE organization_id = ? AND deleted_at IS NULL "
            "ORDER BY created_at", (organization_id,))]

    def create_webhook(self, organization_id: str, name: str, url: str, integrations: list,
                       secret: Optional[str]) -> dict:
        webhook_id, now = new_uuid(), utc_now_iso()
        with self._writing() as db:
            db.execute("INSERT INTO webhook (id, organization_id, name, url, integrations, secret, created_at, "
                       "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (webhook_id, organization_id, name, url, json.dumps(integrations), secret, now, now))
            row = db.execute(f"SELECT {self._WEBHOOK_COLUMNS} FROM webhook WHERE id = ?", (webhook_id,)).fetchone()
        return self._webhook_row(row)

    def delete_webhook(self, organization_id: str, webhook_id: str) -> bool:
        now = utc_now_iso()
        with self._writing() as db:
            return bool(db.execute("UPDATE webhook SET deleted_at = ?, updated_at = ? WHERE id = ? "
                                   "AND organization_id = ? AND deleted_at IS NULL",
                                   (now, now, webhook_id, organization_id)).rowcount)

    def webhook_targets(self, organization_id: str, channel_id: str) -> list:
        """(url, secret) of the organization's webhooks that cover this channel (an empty list covers all)."""
        targets = []
        for url, integrations, secret in self._read(
                "SELECT url, integrations, secret FROM webhook WHERE organization_id = ? AND deleted_at IS NULL",
                (organization_id,)):
            covered = json.loads(integrations)
            if not covered or channel_id in covered:
                targets.append((url, secret))
        return targets

    # --- the web app's users and sign-in sessions ---------------------------------------------

    def add_web_user(self, organization_id: str, email: str, password_hash: str) -> None:
        """A person who signs in to the web app with a password (raises sqlite3.IntegrityError for a taken email)."""
        with self._writing() as db:
            db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, created_at) "
                       "VALUES (?, ?, ?, ?, ?)", (new_uuid(), organization_id, email.lower(), password_hash,
                                                  utc_now_iso()))

    def web_user(self, email: str) -> Optional[tuple]:
        """(user id, organization id, password hash) of the web user with this email, or None."""
        return self._read("SELECT id, organization_id, password_hash FROM web_user WHERE email = ?",
                          (email.lower(),)).fetchone()

    def set_web_user_password(self, organization_id: str, email: str, password_hash: str) -> bool:
        """A new password for the organization's web user (False when there is none with that email); the
        sessions signed in with the old password end."""
        with self._writing() as db:
            user = self._web_user_id(db, organization_id, email)
            if user is None:
                return False
            db.execute("UPDATE web_user SET password_hash = ? WHERE id = ?", (password_hash, user))
            db.execute("DELETE FROM web_session WHERE web_user_id = ?", (user,))
        return True

    def remove_web_user(self, organization_id: str, email: str) -> bool:
        """The organization's web user and its sessions gone (False when there is none with that email)."""
        with self._writing() as db:
            user = self._web_user_id(db, organization_id, email)
            if user is None:
                return False
            db.execute("DELETE FROM web_session WHERE web_user_id = ?", (user,))
            db.execute("DELETE FROM web_user WHERE id = ?", (user,))
        return True

    @staticmethod
    def _web_user_id(db: sqlite3.Connection, organization_id: str, email: str) -> Optional[str]:
        row = db.execute("SELECT id FROM web_user WHERE email = ? AND organization_id = ?",
                         (email.lower(), organization_id)).fetchone()
        return row[0] if row else None

    def create_web_session(self, token_hash: str, organization_id: str, csrf_token: str, expires_at: float,
                           api_key_hash: Optional[str] = None, web_user_id: Optional[str] = None) -> None:
        """A session signed in with the API key of that hash, or by that web user (one of the two)."""
        with self._writing() as db:
            db.execute("DELETE FROM web_session WHERE expires_at < ?", (time.time(),))
            db.execute("INSERT INTO web_session (token_hash, organization_id, csrf_token, expires_at, api_key_hash, "
                       "web_user_id) VALUES (?, ?, ?, ?, ?, ?)",
                       (token_hash, organization_id, csrf_token, expires_at, api_key_hash, web_user_id))

    def web_session(self, token_hash: str) -> Optional[tuple]:
        """(organization id, CSRF token) of a live session, or None."""
        return self._read("SELECT organization_id, csrf_token FROM web_session WHERE token_hash = ? "
                          "AND expires_at > ?", (token_hash, time.time())).fetchone()

    def end_web_session(self, token_hash: str) -> None:
        with self._writing() as db:
            db.execute("DELETE FROM web_session WHERE token_hash = ?", (token_hash,))

    # --- idempotency keys (POST /posts): a retried request gets the first answer -------------

    IDEMPOTENCY_SECONDS = 24 * 3600

    def stored_response(self, organization_id: str, key: str) -> Optional["IdempotentResponse"]:
        return self._stored_response(self._read, organization_id, key)

    def _stored_response(self, execute: Callable, organization_id: str, key: str) -> Optional["IdempotentResponse"]:
        row = execute("SELECT request_hash, status, response FROM idempotency_key WHERE organization_id = ? "
                    "AND key = ? AND created_at > ?", (organization_id, key, time.time() - self.IDEMPOTENCY_SECONDS)
                    ).fetchone()
        return None if row is None else IdempotentResponse(key, row[0], row[1], bytes(row[2]))

    @staticmethod
    def _store_response(db: sqlite3.Connection, organization_id: str, response: "IdempotentResponse") -> None:
        db.execute("INSERT OR REPLACE INTO idempotency_key (organization_id, key, request_hash, status, response, "
                   "created_at) VALUES (?, ?, ?, ?, ?, ?)", (organization_id, response.key, response.request_hash,
                                                             response.status, response.body, time.time()))

    def remember_response(self, organization_id: str, response: "IdempotentResponse") -> None:
        """Store a response that wrote nothing (a refused request), unless the key was taken meanwhile."""
        with self._writing() as db:
            if self._stored_response(db.execute, organization_id, response.key) is None:
                self._store_response(db, organization_id, response)

    def forget_expired_idempotency_keys(self, now: float) -> int:
        with self._writing() as db:
            return db.execute("DELETE FROM idempotency_key WHERE created_at <= ?",
                              (now - self.IDEMPOTENCY_SECONDS,)).rowcount

    # --- notifications --------------------------------------------------------------

    def notifications(self, organization_id: str, offset: int, limit: int) -> tuple:
        """(one page of notifications newest first, in Postiz's shape; how many there are in all)."""
        total = self._read("SELECT count(*) FROM notification WHERE organization_id = ? AND deleted_at IS NULL",
                           (organization_id,)).fetchone()[0]
        rows = self._read("SELECT id, content, link, created_at FROM notification WHERE organization_id = ? "
                          "AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                          (organization_id, limit, offset))
        return [{"id": row[0], "content": row[1], "link": row[2], "createdAt": row[3]} for row in rows], total

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

    def feed(self, data: bytes) -> "list[Event]":
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
        self.stop()
        events.append(ParseError(status, reason))
        return events

    def stop(self) -> None:
        """Ignore every byte from now on (the connection answers what it has, then closes)."""
        self._state = _FAILED
        self._buffer = b""

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
        if target[0] != "/":
            target = _origin_form(method, target)
            if type(target) is ParseError:
                return target
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


def _origin_form(method: str, target: str) -> Union[str, ParseError]:
    """The path and query of a target that is not in origin form (RFC 9112 3.2): an absolute URL, as proxies
    send (its authority stands in for Host, which rustiz does not route on); `*` for OPTIONS; `host:port`
    for CONNECT (which the App refuses: rustiz is no proxy)."""
    if target == "*":
        return target if method == "OPTIONS" else ParseError(400, f"the target * is for OPTIONS only, not {method}")
    if method == "CONNECT":
        return target
    scheme, separator, rest = target.partition("://")
    authority_length = min((index for index in map(rest.find, "/?#") if index >= 0), default=len(rest))
    if not separator or scheme.lower() not in ("http", "https") or not authority_length:
        return ParseError(400, f"malformed request target {target[:60]!r}: send a path starting with /, "
                               "or an absolute http:// or https:// URL")
    path = rest[authority_length:]
    return path if path.startswith("/") else "/" + path


_REASONS = {
    100: "Continue", 200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content",
    304: "Not Modified", 400: "Bad Request",
    401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    408: "Request Timeout", 409: "Conflict", 413: "Content Too Large", 415: "Unsupported Media Type",
    416: "Range Not Satisfiable", 422: "Unprocessable Entity", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 500: "Internal Server Error", 502: "Bad Gateway",
    503: "Service Unavailable",
    505: "HTTP Version Not Supported",
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


class EventStreamResponse(Response):
    """A text/event-stream answer that stays open: the connection writes each bytes item put in `events`
    as it comes, until None is put or the client leaves; `on_close` runs once either way (legacy MCP SSE).
    While the client does not read, events stay in `events`, where their producer can bound them."""
    __slots__ = ("events", "on_close", "abandoned")

    def __init__(self, events: "asyncio.Queue", on_close: Callable[[], None], headers: list):
        super().__init__(200, b"", "text/event-stream", headers)
        self.events = events
        self.on_close = on_close
        self.abandoned = False

    def abandon(self) -> None:
        """End the stream at once, dropping what was not written (its client stopped reading it)."""
        self.abandoned = True
        self.events.put_nowait(None)  # wakes the writer if it waits for an event


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
    """One complete request, as handlers see it.

    `route`, `organization` and `rate_headers` are set by App.admit, which decides from the head alone
    whether the request goes on (its body may not have arrived yet)."""
    __slots__ = ("method", "target", "path", "query_string", "headers", "body", "peer", "http10",
                 "keep_alive", "params", "_query", "route", "organization", "rate_headers")

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
            value = json.loads(self.body)
        except UnicodeDecodeError:
            raise bad_request("The request body is not UTF-8 text; send JSON") from None
        except RecursionError:  # the C decoder recurses once per [ or {
            raise _nested_too_deeply() from None
        except ValueError as error:
            reason = getattr(error, "msg", str(error))
            where = f" at line {error.lineno} column {error.colno}" if hasattr(error, "lineno") else ""
            raise bad_request(f"The request body is not valid JSON: {reason}{where}") from None
        # A lone surrogate comes from a \\u escape, or from a UTF-16/32 body (NULs among its first bytes);
        # UTF-8 bytes cannot encode one.
        if b"\\u" in self.body or b"\x00" in self.body[:4]:
            _refuse_lone_surrogates(value)
        # Fewer brackets than the limit cannot nest deeper than it: most bodies skip the walk.
        if self.body.count(b"[") + self.body.count(b"{") > MAX_JSON_DEPTH and _nested_deeper(value, MAX_JSON_DEPTH):
            raise _nested_too_deeply()
        return value


# What a body may nest: far beyond any Postiz body (Reddit settings nest 4 levels), and well within what
# the response encoders write back (orjson stops at 255 levels, and answers wrap the stored JSON).
MAX_JSON_DEPTH = 100


def _nested_too_deeply() -> ApiError:
    return bad_request(f"The request body is JSON nested more than {MAX_JSON_DEPTH} levels deep; flatten it")


def _nested_deeper(value: Any, limit: int) -> bool:
    """Whether lists and objects in `value` nest more than `limit` levels (walked without recursion)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def lone_surrogate(value: Any) -> Optional[str]:
    """The first lone surrogate in a parsed JSON value, as its \\u escape, or None. A \\ud800 without its pair
    parses, but is no character: SQLite and the response encoder would fail on it."""
    try:
        _encode_json(value).encode("utf-8")
    except UnicodeEncodeError as error:
        return f"\\u{ord(error.object[error.start]):x}"
    return None


def _refuse_lone_surrogates(value: Any) -> None:
    surrogate = lone_surrogate(value)
    if surrogate is not None:
        raise bad_request(f"The request body has a lone UTF-16 surrogate ({surrogate} without its pair); send the "
                          "character itself or a whole \\uXXXX\\uXXXX pair")


class BodySink:
    """Where a streaming route's body goes, piece by piece, instead of being joined in memory.

    The connection calls `feed` for each piece and `close` once the response is out or the client is
    gone; `close` must undo whatever the handler did not keep (temporary files), and may run twice."""

    def feed(self, data: bytes) -> None:
        pass  # this base class is the sink that drops the body (for a request that will be refused)

    def close(self) -> None:
        pass


_DROPPED_BODY = BodySink()


class StreamedRequest(Request):
    """A request whose body went to `sink` as it arrived; `body` is empty. The sink is opened once the
    request is admitted; until then (and for good, if it is refused) its body is dropped."""
    __slots__ = ("sink",)

    def __init__(self, head: RequestHead, peer: str, sink: BodySink = _DROPPED_BODY):
        super().__init__(head, b"", peer)
        self.sink = sink


class Refused:
    """A request answered from its head alone (refused, or over a limit), waiting its turn to be answered."""
    __slots__ = ("request", "response")

    def __init__(self, request: Request, response: Response):
        self.request = request
        self.response = response


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


class ServerState:
    """What the connections of one worker share: the app, the config, the live connections, and the
    bytes of request bodies they hold in memory (at most config.body_memory_budget)."""

    def __init__(self, config: Config, app: "App", max_connections: Optional[int] = None):
        self.config = config
        self.app = app
        self.admit = app.admit
        self.respond = app.respond
        self.streaming_paths = app.streaming_paths  # POST paths whose bodies go to a BodySink, not to memory
        self.connections: set = set()
        self.max_connections = max_connections or config.max_connections
        self.overflow: dict = {}  # the connections beyond max_connections, oldest first (an ordered set)
        self.body_memory = 0
        self.closing = False


# Connections beyond RUSTIZ_MAX_CONNECTIONS are still accepted, up to this many at once, to answer /health
# (anything else gets 503). Each has OVERFLOW_HEAD_SECONDS to send its request, and when they are all taken
# the oldest makes room for the newest: a crowd of idle connections cannot keep a health check out.
OVERFLOW_CONNECTIONS = 64
OVERFLOW_HEAD_SECONDS = 2.0
DROPPED_BODY_BYTES = 64 * 1024  # a refused request's body up to this size is read and dropped; larger: close
LINGER_SECONDS = 1.0  # after answering a client that is still sending, time for the answer to reach it


def service_unavailable(message: str, retry_after: int = 5) -> Response:
    return json_response({"statusCode": 503, "error": "Service Unavailable", "message": message}, 503,
                         [("Retry-After", str(retry_after))])


class HttpConnection(asyncio.Protocol):
    """Feeds socket bytes to a RequestParser and answers the requests strictly in order.

    Each request is admitted (App.admit: method, rate limits, route, key) as soon as its head is parsed,
    so a request that will be refused is answered without its body being read. A connection reads only
    while it has nothing left to answer: once a request waits behind an earlier answer, or the client
    leaves our answers unread, reading pauses. So besides the body of the request being received, a
    connection holds at most what one read brought (256 KiB) of pipelined requests; and bodies held in
    memory count against the worker's body_memory_budget."""

    def __init__(self, state: ServerState):
        self.state = state
        self.parser = RequestParser(MAX_HEAD_BYTES, state.config.max_body_bytes, state.app.body_limit_for)
        self.admit = state.admit  # an over-capacity connection admits /health only
        self.transport: Optional[asyncio.Transport] = None
        self.peer = ""
        self.pending: list = []  # Requests and Refused waiting their turn (or a final ParseError)
        self.request: Optional[Request] = None  # the request whose body is being received
        self.refusal: Optional[Response] = None  # its answer when it was refused from its head: its body is dropped
        self.body_parts: list = []
        self.body_charge = 0  # bytes of that body counted in state.body_memory
        self.charge_each_piece = False  # a chunked body held in memory, counted as it comes
        self.body_received = 0  # bytes of that body so far, for the minimum rate
        self.window_started = 0.0  # when the current rate window began, and body_received then
        self.window_received = 0
        self.sink: Optional[BodySink] = None  # where the current body goes, on a streaming route
        self.outgoing: Optional[OutgoingFile] = None  # a FileResponse body being written
        self.event_stream: Optional[asyncio.Future] = None  # the task writing an EventStreamResponse
        self.busy = False  # an asynchronous handler is running, or a file is being sent
        self.answered = 0  # responses sent; before the first, an idle client gets the header timeout
        self.continue_due = False  # the current head asked for 100 Continue and has not had it yet
        self.closed = False
        self.body_unread = False  # the client may still be sending: close gracefully (see close)
        self.lingering_until = 0.0
        self.reading_paused = False
        self.writing_paused = False
        self.head_timeout = state.config.header_timeout
        self.last_activity = self.message_started = time.monotonic()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = peer[0] if isinstance(peer, tuple) else "unix"
        state = self.state
        if len(state.connections) - len(state.overflow) >= state.max_connections:
            self._take_overflow_place()
        state.connections.add(self)

    def _take_overflow_place(self) -> None:
        """Beyond max_connections: answer /health (anything else gets 503), once, if asked soon."""
        overflow = self.state.overflow
        if len(overflow) >= OVERFLOW_CONNECTIONS:
            oldest = next(iter(overflow))
            del overflow[oldest]
            if not oldest.answered and not oldest.busy and not oldest.pending:
                oldest.transport.write(serialize_response(self._over_capacity(), False, False, False))
            oldest.close()
        overflow[self] = None
        self.admit = self._admit_health_only
        self.head_timeout = min(self.head_timeout, OVERFLOW_HEAD_SECONDS)

    def _admit_health_only(self, request: Request) -> Optional[Response]:
        request.keep_alive = False
        return self.state.admit(request) if request.path == "/health" else self._over_capacity()

    def _over_capacity(self) -> Response:
        return service_unavailable(f"rustiz already serves as many connections as RUSTIZ_MAX_CONNECTIONS "
                                   f"({self.state.max_connections}) allows; retry in a few seconds")

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.closed = True
        state = self.state
        state.connections.discard(self)
        if state.overflow:
            state.overflow.pop(self, None)
        # A client gone mid-upload (or before its upload was answered) leaves nothing behind.
        if self.sink is not None:
            self.sink.close()
            self.sink = None
        self._drop_body()
        self._drop_pending()
        if self.outgoing is not None:
            os.close(self.outgoing.descriptor)
            self.outgoing = None
        if self.event_stream is not None:
            self.event_stream.cancel()
            self.event_stream = None

    def pause_writing(self) -> None:
        self.writing_paused = True
        if not self.reading_paused and not self.closed:
            self._pause_reading()  # the client is not reading our answers: read no more requests

    def resume_writing(self) -> None:
        self.writing_paused = False
        self.last_activity = time.monotonic()
        if self.outgoing is not None:
            self._send_file_pieces()
        else:
            self._answer_pending()

    def _pause_reading(self) -> None:
        self.reading_paused = True
        self.transport.pause_reading()

    def _resume_reading(self) -> None:
        self.reading_paused = False
        self._restart_rate_window()  # the time reading was paused counts against us, not the client
        self.transport.resume_reading()

    def _restart_rate_window(self) -> None:
        self.window_started = time.monotonic()
        self.window_received = self.body_received

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
                if event.method == "POST" and self.state.streaming_paths and \
                        event.target.partition("?")[0] in self.state.streaming_paths:
                    request = self.request = StreamedRequest(event, self.peer)
                else:
                    request = self.request = Request(event, b"", self.peer)
                refusal = self.admit(request)
                if (refusal is not None or event.content_length != 0) and self._start_body(event, refusal):
                    break  # the rest of the stream is not read
            elif kind is Body:
                self.continue_due = False
                self.body_received += len(event.data)
                if self.sink is not None:
                    self.sink.feed(event.data)
                elif self.refusal is None:
                    self.body_parts.append(event.data)
                    if self.charge_each_piece and self._charge_piece(len(event.data)):
                        break
                elif self.body_received > DROPPED_BODY_BYTES:  # a refused chunked body that goes on and on
                    self._refuse_rest()
                    break
            elif kind is EndOfMessage:
                self.continue_due = False
                request = self.request
                self.request = None
                if self.refusal is not None:
                    self.pending.append(Refused(request, self.refusal))
                    self.refusal = None
                else:
                    if self.body_parts:
                        parts = self.body_parts
                        request.body = parts[0] if len(parts) == 1 else b"".join(parts)
                        self.body_parts = []
                        self.body_charge = 0  # counted as len(request.body) until the request is answered
                    self.sink = None
                    self.pending.append(request)
            else:
                self.pending.append(event)
        if self.pending or self.continue_due:
            self._answer_pending()
        if (self.pending or (self.busy and not self.parser.idle)) and not self.reading_paused and not self.closed:
            self._pause_reading()  # requests wait behind an answer still being made: read no further

    def _start_body(self, head: RequestHead, refusal: Optional[Response]) -> bool:
        """Where the body of the request just admitted goes (a sink, or memory within the worker's budget),
        or how a refused one is answered: True when the rest of the stream is not to be read."""
        request = self.request
        self.charge_each_piece = False
        if refusal is None:
            if type(request) is StreamedRequest:
                try:
                    request.sink = self.sink = self.state.app.open_body_sink(request)
                except ApiError as error:
                    refusal = error.response()
                except Exception:
                    refusal = internal_error_response()
            elif head.content_length:
                refusal = self._over_route_limit(head.content_length) or self._charge(head.content_length)
            self.charge_each_piece = head.chunked and refusal is None and type(request) is not StreamedRequest
        self.refusal = refusal
        if refusal is not None and ((head.content_length or 0) > DROPPED_BODY_BYTES
                                    or head.expect_continue and head.content_length != 0):
            self._refuse_rest()  # a large body, or one the client waits to be invited to send
            return True
        # Admitted, or refused with a small body (or none, or a chunked one so far) that is read and dropped.
        self.continue_due = head.expect_continue and refusal is None
        self.body_received = 0
        self._restart_rate_window()
        return False

    def _refuse_rest(self) -> None:
        """Answer the current request's refusal in its turn without reading the rest of its body, then close."""
        request = self.request
        request.keep_alive = False
        self.pending.append(Refused(request, self.refusal))
        self.request, self.refusal = None, None
        self._drop_body()
        self.parser.stop()
        self.continue_due = False
        self.body_unread = True
        if not self.reading_paused:
            self._pause_reading()

    def _over_route_limit(self, size: int) -> Optional[Response]:
        """The 413 when a body of `size` bytes is more than the current request's route takes (sign-in, MCP)."""
        request = self.request
        limit = request.route.body_limit
        if limit is None or size <= limit:
            return None
        if request.route.too_large is not None:
            return request.route.too_large(request, size, limit)
        return nest_error(413, f"request body of {size} bytes is over the limit of {limit} bytes for "
                               f"{request.method} {request.path}").response()

    def _charge(self, size: int) -> Optional[Response]:
        """Count `size` more bytes of body in memory against the worker's budget, or the 503 when they do not fit."""
        state = self.state
        if state.body_memory + size > state.config.body_memory_budget:
            return service_unavailable(f"rustiz already holds {state.body_memory} bytes of request bodies in memory, "
                                       f"near RUSTIZ_BODY_MEMORY_BUDGET ({state.config.body_memory_budget}); "
                                       "retry in a few seconds")
        state.body_memory += size
        self.body_charge += size
        return None

    def _charge_piece(self, size: int) -> bool:
        """A piece of a chunked body: counted, or, over the budget, the request refused; True if refused."""
        refusal = self._over_route_limit(self.body_charge + size) or self._charge(size)
        if refusal is None:
            return False
        self.refusal = refusal
        self._refuse_rest()
        return True

    def _drop_body(self) -> None:
        """Forget the body being received, and give its bytes back to the budget."""
        self.body_parts = []
        if self.body_charge:
            self.state.body_memory -= self.body_charge
            self.body_charge = 0

    def _release(self, request: Request) -> None:
        """A request is done with (answered, or dropped with its connection): its body leaves the budget and
        its sink closes."""
        if request.body:
            self.state.body_memory -= len(request.body)
        if type(request) is StreamedRequest:
            request.sink.close()

    def _answer_pending(self) -> None:
        pending = self.pending
        while pending and not self.busy and not self.writing_paused and not self.closed:
            item = pending.pop(0)
            kind = type(item)
            if kind is ParseError:
                self._answer_parse_error(item)
                return
            started = time.perf_counter()
            if kind is Refused:
                request, result = item.request, item.response
            else:
                request = item
                try:
                    result = self.state.respond(item)
                except Exception:
                    result = internal_error_response()
            if type(result) is Response or type(result) is FileResponse:
                self._send(request, result, started)
            elif type(result) is EventStreamResponse:
                self._start_event_stream(request, result)
            else:
                self.busy = True
                asyncio.ensure_future(self._finish_async(request, result, started))
        if self.continue_due and not pending and not self.busy and not self.closed:
            # Only once every earlier response is out, so the interim response stays in order.
            self.continue_due = False
            self.transport.write(CONTINUE_RESPONSE)
            self._restart_rate_window()  # the client sends its body from now
        if self.reading_paused and not pending and not self.writing_paused and not self.closed and (
                not self.busy or self.event_stream is not None):  # (a stream is the last answer: read to see it end)
            self._resume_reading()

    async def _finish_async(self, request: Request, awaitable: Awaitable[Response], started: float) -> None:
        try:
            response = await awaitable
        except ApiError as error:
            response = error.response()
        except Exception:
            response = internal_error_response()
        self.busy = False
        if not self.closed and type(response) is EventStreamResponse:
            self._start_event_stream(request, response)
        elif not self.closed:
            self._send(request, response, started)
            self._answer_pending()
        else:
            self._release(request)

    def _send(self, request: Request, response: Response, started: float) -> None:
        if request.body or type(request) is StreamedRequest:
            self._release(request)  # before the answer leaves, so a client that got it finds no temporary file
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

    def _start_event_stream(self, request: Request, response: EventStreamResponse) -> None:
        """The head without a length (the body ends when the connection does), then events as they come."""
        HTTP_DATE.refresh()
        head = [_status_line(200), HTTP_DATE.line, b"Content-Type: text/event-stream\r\n",
                b"Cache-Control: no-cache\r\n", b"Connection: close\r\n"]
        head += [f"{name}: {value}\r\n".encode("latin-1") for name, value in response.headers]
        self.transport.write(b"".join(head) + b"\r\n")
        self.answered += 1
        if self.state.config.access_log:
            log(f'{request.peer} "{request.method} {request.target}" 200 event stream opened')
        self.busy = True  # no request after this one on the connection: the stream is its last answer
        self.event_stream = asyncio.ensure_future(self._write_events(response))

    async def _write_events(self, response: EventStreamResponse) -> None:
        quiet_seconds = 0
        try:
            while not self.closed and not self.state.closing and not response.abandoned:
                if self.writing_paused:  # the client is not reading: events wait in their (bounded) queue
                    await asyncio.sleep(0.1)
                    continue
                try:
                    event = await asyncio.wait_for(response.events.get(), 1.0)
                except asyncio.TimeoutError:  # looks at state.closing once a second, so a shutdown is not held up
                    quiet_seconds += 1
                    if quiet_seconds >= EVENT_STREAM_KEEPALIVE_SECONDS:
                        # A comment line, which clients skip: proxies close streams idle for a minute or so.
                        self.transport.write(b": keepalive\n\n")
                        quiet_seconds = 0
                    continue
                quiet_seconds = 0
                if event is None:
                    break
                self.transport.write(event)
                self.last_activity = time.monotonic()
        finally:
            response.on_close()
            self.event_stream = None
            if response.abandoned:
                self.transport.abort()  # what the client left unread is dropped, not held until it reads
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
        self.body_unread = True  # (whatever follows a broken request is not read)
        self.close()

    def close(self) -> None:
        """Close once what was written is sent. When the client may still be sending a body we did not read,
        half-close first and close LINGER_SECONDS later: closing a socket with unread bytes makes the
        kernel reset the connection, which can destroy the answer on its way to the client."""
        if not self.closed:
            self.closed = True
            self._drop_pending()
            if self.body_unread and self.transport.can_write_eof():
                if not self.reading_paused:
                    self._pause_reading()
                self.transport.write_eof()
                self.lingering_until = time.monotonic() + LINGER_SECONDS
            else:
                self.transport.close()

    def _abort(self) -> None:
        """Close at once, dropping unsent answers: for a client that stopped reading them."""
        self.closed = True
        self._drop_pending()
        self.transport.abort()

    def _drop_pending(self) -> None:
        for item in self.pending:
            if type(item) is Request or type(item) is StreamedRequest:
                self._release(item)
        self.pending.clear()

    def check_timeouts(self, now: float) -> None:
        """Called once a second: drop idle keep-alive connections, clients that stopped reading our answers,
        and clients too slow to send a request (a head within the header timeout, a body at the minimum rate)."""
        config = self.state.config
        if self.closed:
            if self.lingering_until and (now >= self.lingering_until or self.state.closing):
                self.transport.close()
            return
        if (self.outgoing is not None or self.writing_paused) and now - self.last_activity > config.keepalive_timeout:
            self._abort()
            return
        if self.busy or self.pending or self.reading_paused:
            return
        if self.parser.idle:
            limit = config.keepalive_timeout if self.answered else self.head_timeout
            if now - self.last_activity > limit or self.state.closing:
                self.close()
        elif self.parser.reading_head:
            if now - self.message_started > self.head_timeout:
                self._answer_parse_error(ParseError(408, "the request was not received in time"))
        elif now - self.window_started >= config.body_rate_window:
            if self.body_received - self.window_received < config.body_min_rate * config.body_rate_window:
                self._answer_parse_error(ParseError(408, (
                    f"the request body arrived slower than {config.body_min_rate} bytes/s over "
                    f"{config.body_rate_window:g} s (RUSTIZ_BODY_MIN_RATE): send it faster, or in smaller requests")))
            else:
                self._restart_rate_window()


FILE_PIECE_BYTES = 256 * 1024
EVENT_STREAM_KEEPALIVE_SECONDS = 25


class OutgoingFile:
    """The part of a FileResponse still to be written, and what to do with the connection afterwards."""
    __slots__ = ("descriptor", "offset", "remaining", "keep_alive")

    def __init__(self, descriptor: int, offset: int, remaining: int, keep_alive: bool):
        self.descriptor = descriptor
        self.offset = offset
        self.remaining = remaining
        self.keep_alive = keep_alive


def internal_error_response() -> Response:
    """The answer to an exception no handler turned into one (called in the except block that caught it)."""
    error = sys.exc_info()[1]
    if isinstance(error, DatabaseUnwritable):  # not rustiz's bug: the operator can fix it (the Store logged it)
        return service_unavailable(str(error), 30)
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

    `primary` marks the one worker that runs what must run once per server: housekeeping and the
    scheduler (which also checks, through a file lock, that no other process schedules this database)."""
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    store = Store(config.database)
    store.share_reads_per_loop_turn(loop.call_soon)
    app = App(config, store)
    state = ServerState(config, app, connections_within_open_file_limit(config.max_connections))
    stop = loop.create_future()

    def request_stop() -> None:
        if not stop.done():
            stop.set_result(None)

    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, request_stop)
    server = loop.run_until_complete(
        loop.create_server(lambda: HttpConnection(state), sock=listener, backlog=1024))

    scheduler = Scheduler(config, store, loop) if primary else None

    def sweep() -> None:
        now = time.monotonic()
        for connection in list(state.connections):
            connection.check_timeouts(now)
        if scheduler is not None:
            scheduler.tick()
        if supervisor is not None and os.getppid() != supervisor:
            log("the supervising process is gone; stopping this worker")
            request_stop()
        loop.call_later(1.0, sweep)

    loop.call_later(1.0, sweep)
    if primary:
        loop.call_soon(app.housekeeping, loop)
        loop.call_soon(scheduler.tick)
    on_ready()
    try:
        loop.run_until_complete(stop)
        loop.run_until_complete(drain(server, state, config.shutdown_timeout))
        if scheduler is not None:
            loop.run_until_complete(scheduler.stop(config.shutdown_timeout))
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
        connection.transport.close()  # (ends a graceful close's lingering too)
    await asyncio.sleep(0)


FILES_BESIDES_CONNECTIONS = 64  # the listening socket, the database and its WAL, files being uploaded or sent...


def connections_within_open_file_limit(max_connections: int) -> int:
    """RUSTIZ_MAX_CONNECTIONS, raising the open-file limit (ulimit -n) towards its hard limit if it must;
    when even the hard limit is too low, as many connections as it leaves room for (and a log line)."""
    needed = max_connections + OVERFLOW_CONNECTIONS + FILES_BESIDES_CONNECTIONS
    allowed = os.sysconf("SC_OPEN_MAX")  # the soft RLIMIT_NOFILE, without importing resource
    if allowed < 0 or allowed >= needed:
        return max_connections
    import resource
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        allowed = raised
    except (ValueError, OSError):
        pass
    if allowed >= needed:
        return max_connections
    fitting = max(1, allowed - OVERFLOW_CONNECTIONS - FILES_BESIDES_CONNECTIONS)
    log(f"RUSTIZ_MAX_CONNECTIONS={max_connections} needs {needed} open files, but this process may open "
        f"{allowed} (ulimit -n): serving at most {fitting} connections at once")
    return fitting


def serve(config: Config, startup_note: str) -> int:
    """Bind, start the workers, print the ready line, and wait for a signal."""
    sockets = bind_sockets(config)
    port = bound_port(sockets)
    url_host = f"[{config.host}]" if ":" in config.host else config.host
    url = f"http://{url_host}:{port}"
    config = config._replace(port=port, frontend_url=config.frontend_url or url)
    plural = "worker" if config.workers == 1 else "workers"
    ready_line = f"rustiz {VERSION} ready on {url} ({config.workers} {plural}; {startup_note})"
    if config.workers == 1:
        return run_worker(config, sockets[0], True, lambda: log(ready_line))
    return supervise_workers(config, sockets, ready_line)


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
        """Postiz clients send `Authorization: <key>`; `Authorization: Bearer <key>` is accepted too. The
        web app's session cookie stands for the key when there is no Authorization header."""
        key = self.presented_key(request)
        if not key:
            token = session_cookie(request)
            return self.session_organization(request, token) if token else _unauthorized(NO_API_KEY)
        organization_id = self.organization_for_key(key)
        if organization_id is not None:
            return organization_id
        # rustiz issues no OAuth tokens (yet), so a pos_ token can only be unknown.
        return _unauthorized(INVALID_OAUTH_TOKEN if key.startswith("pos_") else INVALID_API_KEY)

    @staticmethod
    def presented_key(request: Request) -> str:
        """The API key in the Authorization header ("" when there is none: the session cookie may stand for it)."""
        key = request.headers.get("authorization", "")
        return key[7:].strip() if key[:7].lower() == "bearer " else key

    def session_organization(self, request: Request, token: str) -> Union[str, Response]:
        """The organization of a web session; a request that changes anything must also carry the
        session's CSRF token in X-CSRF-Token (a cookie alone is what a forged cross-site form would have)."""
        session = self.store.web_session(hash_api_key(token))
        if session is None:
            return _unauthorized("Your session has ended: sign in again")
        organization_id, csrf_token = session
        if request.method not in ("GET", "HEAD", "OPTIONS") and not compare_digest(
                request.headers.get("x-csrf-token", "").encode(), csrf_token.encode()):
            return json_response({"statusCode": 403, "error": "Forbidden", "message": (
                "This request came with the session cookie but without its X-CSRF-Token header "
                "(the csrfToken of POST /auth/login or GET /auth/session)")}, 403)
        return organization_id

    def organization_for_key(self, key: str) -> Optional[str]:
        """The organization an API key belongs to, or None; known keys are remembered per credentials generation."""
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

    def client_address(self, request: Request) -> str:
        """The peer, or, behind a trusted reverse proxy, the nearest untrusted X-Forwarded-For hop."""
        forwarded = request.headers.get("x-forwarded-for")
        if not forwarded or not self._trusted(request.peer):
            return request.peer
        for hop in reversed([part.strip() for part in forwarded.split(",")]):
            if not self._trusted(hop):
                return hop
        return request.peer

    def over_https(self, request: Request) -> bool:
        """Whether the client's connection is https, as a trusted reverse proxy says (X-Forwarded-Proto)."""
        return self._trusted(request.peer) and request.headers.get("x-forwarded-proto", "").lower() == "https"

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
# 7. Provider catalogue: the 35 Postiz providers and the validation of POST /posts
# =============================================================================
# Postiz describes every provider by a settings DTO (class-validator decorators). rustiz describes
# each DTO once, as a tuple of _Field, and derives from it both the JSON Schema that
# integration-settings returns (what class-validator-jsonschema 5.1 generates) and the validation
# of POST /posts with class-validator 0.14's messages, prefixed by Nest's ValidationPipe.


class _Field(NamedTuple):
    """One DTO property. `kind`: string, date (an ISO 8601 string), boolean, number, object (nested) or array.

    In the JSON Schema, a property is `required` unless optional or conditional (`when`), as
    class-validator-jsonschema decides; `defined` (@IsDefined) adds "not": {"type": "null"}."""
    name: str
    kind: str
    defined: bool = False  # @IsDefined: "should not be null or undefined"
    optional: bool = False  # @IsOptional: null/undefined skips every other check
    when: Optional[Callable[[dict], bool]] = None  # @ValidateIf(parent): false skips every check
    enum: Optional[tuple] = None
    min_length: Optional[int] = None
    max_length: Optional[int] = None
    pattern: Optional[str] = None
    url: bool = False
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    fields: tuple = ()  # properties of a nested object, or of each array item when items == "object"
    items: Optional[str] = None  # array element kind: "object", "string" or "number"
    min_items: Optional[int] = None
    max_items: Optional[int] = None
    # The order of the checks' messages after "defined" (class-validator reports them in the reverse
    # order of the decorators in Postiz's source); "type" is the check of `kind`. () = _DEFAULT_ORDER,
    # where an enum property has no type check (Postiz mostly writes a bare @IsIn).
    order: tuple = ()
    custom: Optional[dict] = None  # check -> Postiz's own message, which does not name the property
    description: Optional[str] = None
    extra_check: Optional[Callable[[Any, dict], Optional[str]]] = None  # custom @Validate: (value, parent) -> message


_DEFAULT_ORDER = ("enum", "min_length", "max_length", "pattern", "url", "minimum", "maximum", "min_items", "max_items",
                  "items", "extra", "type")


def _text(name: str, **options: Any) -> _Field:
    return _Field(name, "string", **options)


def _required_text(name: str, min_length: Optional[int] = None, **options: Any) -> _Field:
    """Postiz's usual required string: @IsString() @MinLength(n) @IsDefined()."""
    return _Field(name, "string", defined=True, min_length=min_length, **options)


def _flag(name: str, **options: Any) -> _Field:
    return _Field(name, "boolean", **options)


def _choice(name: str, values: str, **options: Any) -> _Field:
    return _Field(name, "string", enum=tuple(values.split()), **options)


def _optional_url(name: str) -> _Field:
    return _Field(name, "string", optional=True, url=True, order=("url", "type"))


# Patterns of this section are kept as text: re compiles (and caches) each one the first time a post
# needs it, so a server that never receives a post does not pay for them at start-up.
_MEDIA_EXTENSION = r"(?i)\.(?:png|jpe?g|gif|webp|mp4)$"
MEDIA_EXTENSION_MESSAGE = "File must have a valid extension: .png, .jpg, .jpeg, .gif, .webp, or .mp4"
# Postiz's canonical-URL check for articles (medium, devto, hashnode), a link to one of the post's
# other channels ("(post:...)") aside.
_CANONICAL_URL = (r"^(|https?:\/\/(?:www\.|(?!www))[a-zA-Z0-9][a-zA-Z0-9-]+[a-zA-Z0-9]\.[^\s]{2,}|www\.[a-zA-Z0-9]"
                  r"[a-zA-Z0-9-]+[a-zA-Z0-9]\.[^\s]{2,}|https?:\/\/(?:www\.|(?!www))[a-zA-Z0-9]+\.[^\s]{2,}|www\."
                  r"[a-zA-Z0-9]+\.[^\s]{2,})$")


def _media_path_problem(path: Any, media: dict) -> Optional[str]:
    """Postiz only takes media whose path (before any query string) ends in an extension it can publish."""
    if isinstance(path, str) and re.search(_MEDIA_EXTENSION, path.split("?", 1)[0]):
        return None
    return MEDIA_EXTENSION_MESSAGE


_MEDIA_FIELDS = (_Field("id", "string", defined=True), _Field("path", "string", defined=True,
                                                              extra_check=_media_path_problem),
                 _text("alt", optional=True), _optional_url("thumbnail"))
_TAG_FIELDS = (_text("value"), _text("label"))  # provider tags: @IsString only
_NO_SETTINGS = "No additional settings required"


def _media(name: str, **options: Any) -> _Field:
    return _Field(name, "object", optional=True, fields=_MEDIA_FIELDS, **options)


def _canonical(name: str) -> _Field:
    return _Field(name, "string", optional=True, pattern=_CANONICAL_URL, custom={"pattern": "Invalid URL"},
                  when=lambda settings: bool(settings.get(name)) and "(post:" not in str(settings.get(name)))


def _not_article(settings: dict) -> bool:
    return settings.get("post_type") != "article"


def _is_article(settings: dict) -> bool:
    return settings.get("post_type") == "article"


def _youtube_tags_too_long(tags: Any, settings: dict) -> Optional[str]:
    """Postiz counts every label, plus 2 for a label with whitespace (YouTube quotes it), up to 500."""
    if not isinstance(tags, list):
        return None
    total = 0
    for tag in tags:
        label = str(tag.get("label", "")) if isinstance(tag, dict) else ""
        total += len(label) + (2 if re.search(r"\s", label) else 0)
    return "The maximum allowed is 500 characters in total for all tags." if total > 500 else None


# The largest whole number every JSON reader (JavaScript's too) holds exactly: the bound of ids sent as numbers.
MAX_SAFE_INTEGER = 2**53 - 1


def _whole_in(value: Any, low: int, high: int) -> bool:
    return _is_number(value) and value == int(value) and low <= value <= high


def _whole_number_check(name: str, low: int, high: int, what: str) -> Callable[[Any, dict], Optional[str]]:
    """An extra_check: `name` is a whole number from `low` to `high` (what is no number at all fails the
    number check itself, with class-validator's message)."""
    def check(value: Any, parent: dict) -> Optional[str]:
        if not _is_number(value) or _whole_in(value, low, high):
            return None
        return f"{name} must be {what}: a whole number from {low} to {high}"
    return check


def _whole_numbers_check(name: str, low: int, high: int, what: str) -> Callable[[Any, dict], Optional[str]]:
    """An extra_check for an array of numbers: each a whole number from `low` to `high`."""
    def check(values: Any, parent: dict) -> Optional[str]:
        if not isinstance(values, list) or all(_whole_in(value, low, high) for value in values if _is_number(value)):
            return None
        return f"each value in {name} must be {what}: a whole number from {low} to {high}"
    return check


_X_FIELDS = (
    _Field("community", "string", optional=True, pattern=r"^(https:\/\/x\.com\/i\/communities\/\d+)?$",
           custom={"pattern": "Invalid X community URL. It should be in the format: "
                              "https://x.com/i/communities/1493446837214187523"}),
    _choice("who_can_reply_post", "everyone following mentionedUsers subscribers verified", when=_not_article),
    _choice("post_type", "post article", optional=True, description=(
        "post = a regular short post (plain text). article = a long-form X article: write the post content as "
        "HTML (p, h1, h2, h3, ul, ol, li, strong, u, a) - the formatting is kept in the article")),
    _text("article_title", min_length=1, when=_is_article,
          description="The title of the article, required when post_type is article"),
    _choice("article_status", "draft published", when=_is_article, description=(
        "draft = save the article as a draft on X, published = publish it right away, required when post_type "
        "is article")),
    _media("article_cover", description="Optional cover image for the article, only used when post_type is article"),
    _flag("made_with_ai", optional=True), _flag("paid_partnership", optional=True))
_LINKEDIN_FIELDS = (_flag("post_as_images_carousel", optional=True), _text("carousel_name", optional=True))
_REDDIT_VALUE_FIELDS = (
    _required_text("subreddit", 2), _required_text("title", 2), _required_text("type", 2),
    _Field("url", "string", defined=True, url=True, pattern=_CANONICAL_URL, custom={"pattern": "Invalid URL"},
           order=("pattern", "url"),
           when=lambda value: value.get("type") == "link" and "(post:" not in str(value.get("url"))),
    _flag("is_flair_required", defined=True),
    _Field("flair", "object", when=lambda value: bool(value.get("is_flair_required")), defined=True,
           fields=(_required_text("id"), _required_text("name"))))
_LEMMY_VALUE_FIELDS = (_required_text("subreddit", 2), _required_text("id"), _required_text("title", 2),
                       _optional_url("url"))


def _value_list(fields: tuple, min_items: Optional[int]) -> _Field:
    """Reddit, Lemmy and Farcaster nest each entry as {"value": {...}} (@ArrayMinSize, no @IsArray)."""
    value = _Field("value", "object", defined=True, fields=fields)
    return _Field("subreddit", "array", items="object", fields=(value,), min_items=min_items, order=("min_items",))


_PLAYBACK = (_required_text("id"), _text("title", optional=True), _text("artist", optional=True),
             _text("image", optional=True), _Field("audio_volume", "number", optional=True, minimum=0, maximum=100),
             _Field("video_volume", "number", optional=True, minimum=0, maximum=100))
_INSTAGRAM_FIELDS = (
    _choice("post_type", "post story", defined=True), _flag("is_trial_reel", optional=True),
    _choice("graduation_strategy", "MANUAL SS_PERFORMANCE", optional=True),
    _Field("collaborators", "array", optional=True, items="object", fields=(_required_text("label"),)),
    _Field("audio", "object", optional=True, fields=_PLAYBACK))
_FACEBOOK_FIELDS = (_optional_url("url"), _choice("post_type", "post story", optional=True),
                    _text("text_format_preset_id", optional=True))
_YOUTUBE_FIELDS = (
    _required_text("title", 2, max_length=100), _choice("type", "public private unlisted", defined=True),
    _choice("selfDeclaredMadeForKids", "yes no", optional=True), _media("thumbnail"),
    _Field("tags", "array", optional=True, items="object", fields=_TAG_FIELDS, extra_check=_youtube_tags_too_long))
_TIKTOK_FIELDS = (
    _text("title", max_length=90, when=lambda settings: bool(settings.get("title"))),
    _choice("privacy_level", "PUBLIC_TO_EVERYONE MUTUAL_FOLLOW_FRIENDS FOLLOWER_OF_CREATOR SELF_ONLY",
            order=("type", "enum")),
    _flag("duet"), _flag("stitch"), _flag("comment"), _choice("autoAddMusic", "yes no"),
    _flag("brand_content_toggle"), _flag("brand_organic_toggle"), _flag("video_made_with_ai", optional=True),
    _choice("content_posting_method", "DIRECT_POST UPLOAD", order=("type", "enum")),
    _Field("music", "object", optional=True, fields=_PLAYBACK),
    _Field("location", "object", optional=True,
           fields=(_required_text("id"), _required_text("name"), _text("address", optional=True))))


def _if_given(name: str, **options: Any) -> _Field:
    """Pinterest's optional fields: @IsString() @ValidateIf((o) => !!o.name)."""
    return _Field(name, "string", when=lambda settings: bool(settings.get(name)), **options)


_PINTEREST_FIELDS = (
    _if_given("title", max_length=100), _if_given("link", url=True, order=("url", "type")), _if_given("dominant_color"),
    _required_text("board", 1, custom=dict.fromkeys(("defined", "min_length", "type"), "Board is required")))
_DRIBBBLE_FIELDS = (_required_text("title", 1, custom={"min_length": "Title is required"}), _optional_url("team"))
_CHANNEL_FIELDS = (_required_text("channel", 1, order=("type", "min_length")),)
_TWITCH_FIELDS = (_choice("messageType", "message announcement", optional=True),
                  _choice("announcementColor", "primary blue green orange purple", optional=True))
_MEDIUM_FIELDS = (
    _required_text("title", 2), _required_text("subtitle", 2), _canonical("canonical"),
    _text("publication", optional=True), _Field("tags", "array", optional=True, max_items=4))
_DEVTO_FIELDS = (
    _required_text("title", 2), _media("main_image"), _canonical("canonical"), _text("organization", optional=True),
    _Field("tags", "array", items="object", max_items=4, fields=(
        _Field("value", "number", extra_check=_whole_number_check("value", 0, MAX_SAFE_INTEGER, "a Dev.to tag id")),
        _text("label"))))
_HASHNODE_FIELDS = (
    _required_text("title", 6), _text("subtitle", optional=True, min_length=2), _media("main_image"),
    _canonical("canonical"), _required_text("publication"),
    _Field("tags", "array", items="object", fields=_TAG_FIELDS, min_items=1))
_WORDPRESS_FIELDS = (
    _required_text("title", 2), _media("main_image"), _required_text("type"),
    *(_Field(name, "array", optional=True, items="number",
             extra_check=_whole_numbers_check(name, 1, MAX_SAFE_INTEGER, "a WordPress term id"))
      for name in ("categories", "tags")),
    _choice("status", "publish draft pending private", optional=True, order=("enum", "type")))
_LISTMONK_FIELDS = (_required_text("subject", 1), _required_text("preview"), _required_text("list"),
                    _text("template", optional=True))
_GMB_FIELDS = (
    _choice("topicType", "STANDARD EVENT OFFER", optional=True),
    _choice("callToActionType", "NONE BOOK ORDER SHOP LEARN_MORE SIGN_UP GET_OFFER CALL", optional=True),
    _optional_url("callToActionUrl"),
    *(_text(name, optional=True) for name in ("eventTitle", "eventStartDate", "eventEndDate", "eventStartTime",
                                               "eventEndTime", "offerCouponCode")),
    _optional_url("offerRedeemUrl"), _text("offerTerms", optional=True))
_SKOOL_FIELDS = tuple(_required_text(name, 1) for name in ("group", "label", "title"))
_WHOP_FIELDS = (_required_text("company", 1), _required_text("experience", 1), _text("title", optional=True))
_MEWE_FIELDS = (_choice("postType", "timeline group", defined=True),
                _required_text("group", when=lambda settings: settings.get("postType") == "group"))
_TUMBLR_FIELDS = (_text("title", optional=True, min_length=1, max_length=4096), _optional_url("link"),
                  _optional_url("sourceUrl"), _text("tags", optional=True, max_length=4096))

# Rules strings of §8.2 ("" for every provider not listed).
_LINKEDIN_RULES = ("LinkedIn can have maximum one attachment when selecting video, when choosing a carousel on LinkedIn "
                   "minimum amount of attachment must be two, and only pictures, if uploading a video, LinkedIn can "
                   "have only one attachment")
_INSTAGRAM_RULES = "Instagram should have at least one attachment, if it's a story, it can have only one picture"
_RULES = {
    "x": ("X can have maximum 4 pictures, or maximum one video, it can also be without attachments, it can also be "
          "published as a long-form article (draft or published) when post_type is set to article "),
    "linkedin": _LINKEDIN_RULES, "linkedin-page": _LINKEDIN_RULES,
    "instagram": _INSTAGRAM_RULES, "instagram-standalone": _INSTAGRAM_RULES,
    "facebook": ("Facebook posts can be text only, or include photos or a video. If it's a story, it must have at "
                 "least one attachment (photo or video), and each media is published as a separate story."),
    "youtube": "YouTube must have on video attachment, it cannot be empty",
    "gmb": ("Google My Business posts can have text content and optionally one image. Posts can be updates, events, "
            "or offers."),
    "pinterest": ("Pinterest requires at least one media, if posting a video, you must have two attachment, one for "
                  "video, one for the cover picture, When posting a video, there can be only one, if posting images, "
                  "there can be maximum 5"),
    "bluesky": "Bluesky can have maximum 1 video or 4 pictures in one post, it can also be without attachments",
    "wrapcast": "Farcaster/Warpcast can only accept pictures",
    "tiktok": "TikTok can have one video or one picture or multiple pictures, it cannot be without an attachment.",
    "tiktok-business": ("TikTok Business can have one video or one picture or multiple pictures (up to 35), it cannot "
                        "be without an attachment."),
}

# Helper tools of §8.4: methodName, description, keys of dataSchema (all strings).
_TOOLS = {
    "devto": (("tags", "Tag list", ()), ("organizations", "Organization list", ())),
    "discord": (("channels", "Channels", ()),),
    "dribbble": (("teams", "Teams list", ()),),
    "wrapcast": (("subreddits", "Search channels", ("word",)),),
    "hashnode": (("tagsList", "Tags", ()), ("publications", "Publications", ())),
    "instagram": (("audioSearch", 'Search audio (music or original sounds) to attach to a Reel via the "audio" '
                                  "setting, an empty query returns trending audio", ("q", "type")),),
    "lemmy": (("subreddits", "Search for Lemmy communities by keyword", ("word",)),),
    "listmonk": (("list", "List of available lists", ()), ("templates", "List of available templates", ())),
    "medium": (("publications", "List of publications", ()),),
    "mewe": (("groups", "Groups", ()),),
    "pinterest": (("boards", "List of boards", ()),),
    "reddit": (("subreddits", "Get list of subreddits with information", ("word",)),
               ("restrictions", "Get list of flairs and restrictions for a subreddit", ("subreddit",))),
    "skool": (("groups", "Groups", ()), ("label", "Label", ())),
    "slack": (("channels", "Get list of channels", ()),),
    "tiktok-business": (("musicSearch", "Search music", ("genre",)), ("locationSearch", "Search locations", ("q",))),
    "whop": (("companies", "Companies", ()), ("experiences", "Experiences", ("id",))),
    "wordpress": (("postTypes", "Get list of post types", ()), ("categoriesList", "Get list of categories", ()),
                  ("tagsList", "Get list of tags", ())),
}

# identifier, UI name, editor, maxLength, settings DTO, whether integration-settings shows the DTO's schema
_PROVIDER_TABLE = (
    ("x", "X", "html", 280, _X_FIELDS, True),
    ("linkedin", "LinkedIn", "normal", 3000, _LINKEDIN_FIELDS, False),
    ("linkedin-page", "LinkedIn Page", "normal", 3000, _LINKEDIN_FIELDS, False),
    ("reddit", "Reddit", "normal", 10000, (_value_list(_REDDIT_VALUE_FIELDS, 1),), True),
    ("instagram", "Instagram\n(Facebook Business)", "normal", 2200, _INSTAGRAM_FIELDS, True),
    ("instagram-standalone", "Instagram\n(Standalone)", "normal", 2200, _INSTAGRAM_FIELDS, True),
    ("facebook", "Facebook Page", "normal", 63206, _FACEBOOK_FIELDS, True),
    ("threads", "Threads", "normal", 500, (), False),
    ("youtube", "YouTube", "normal", 5000, _YOUTUBE_FIELDS, True),
    ("gmb", "Google My Business", "normal", 1500, _GMB_FIELDS, True),
    ("tiktok", "Tiktok", "normal", 2000, _TIKTOK_FIELDS, True),
    ("tiktok-business", "TikTok", "normal", 2200, _TIKTOK_FIELDS, True),
    ("pinterest", "Pinterest", "normal", 500, _PINTEREST_FIELDS, True),
    ("dribbble", "Dribbble", "normal", 40000, _DRIBBBLE_FIELDS, True),
    ("discord", "Discord", "markdown", 1980, _CHANNEL_FIELDS, True),
    ("slack", "Slack", "normal", 400000, _CHANNEL_FIELDS, True),
    ("kick", "Kick", "normal", 500, (), False),
    ("twitch", "Twitch", "normal", 500, _TWITCH_FIELDS, True),
    ("mastodon", "Mastodon", "normal", 500, (), False),
    ("bluesky", "Bluesky", "normal", 300, (), False),
    ("lemmy", "Lemmy", "normal", 10000, (_value_list(_LEMMY_VALUE_FIELDS, 1),), True),
    ("wrapcast", "Farcaster", "normal", 800, (_value_list((_required_text("id"),), None),), True),
    ("telegram", "Telegram", "html", 4096, (), False),
    ("nostr", "Nostr", "normal", 100000, (), False),
    ("vk", "VK", "normal", 2048, (), False),
    ("medium", "Medium", "markdown", 100000, _MEDIUM_FIELDS, True),
    ("devto", "Dev.to", "markdown", 100000, _DEVTO_FIELDS, True),
    ("hashnode", "Hashnode", "markdown", 10000, _HASHNODE_FIELDS, True),
    ("wordpress", "WordPress", "html", 100000, _WORDPRESS_FIELDS, True),
    ("listmonk", "ListMonk", "html", 100000000, _LISTMONK_FIELDS, True),
    ("moltbook", "Moltbook", "normal", 300, (_required_text("submolt", 1),), False),
    ("whop", "Whop", "markdown", 50000, _WHOP_FIELDS, True),
    ("skool", "Skool", "normal", 5000, _SKOOL_FIELDS, True),
    ("mewe", "MeWe", "normal", 63206, _MEWE_FIELDS, True),
    ("tumblr", "Tumblr", "normal", 32768, _TUMBLR_FIELDS, True),
)


def _field_schema(field: _Field) -> dict:
    """The JSON Schema class-validator-jsonschema 5.1 generates for one property."""
    if field.kind == "object":
        schema = _object_schema(field.fields)
    elif field.kind == "array":
        schema = {"type": "array"}
        if field.items:
            schema = {"items": _object_schema(field.fields) if field.items == "object" else {"type": field.items},
                      "type": "array"}
        if field.min_items is not None:
            schema["minItems"] = field.min_items
        if field.max_items is not None:
            schema["maxItems"] = field.max_items
    else:
        schema = {}
        for key, value in (("minLength", field.min_length), ("maxLength", field.max_length),
                           ("pattern", field.pattern), ("format", "url" if field.url else None)):
            if value is not None:
                schema[key] = value
        schema["type"] = "string" if field.kind == "date" else field.kind
        if field.enum:
            schema["enum"] = list(field.enum)
        for key, value in (("minimum", field.minimum), ("maximum", field.maximum)):
            if value is not None:
                schema[key] = value
    if field.defined:
        schema["not"] = {"type": "null"}
    if field.description:
        schema["description"] = field.description
    return schema


def _object_schema(fields: tuple) -> dict:
    schema = {"properties": {field.name: _field_schema(field) for field in fields}, "type": "object"}
    required = [field.name for field in fields if not field.optional and field.when is None]
    if required:
        schema["required"] = required
    return schema


class ProviderSpec(NamedTuple):
    """One Postiz provider as integration-settings describes it, and the settings DTO its posts must satisfy."""
    identifier: str
    name: str
    editor: str  # normal, html or markdown: how the Postiz editor writes content for it
    max_length: int
    rules: str
    settings: Union[dict, str]  # JSON Schema, or Postiz's "No additional settings required"
    tools: list  # [{methodName, description, dataSchema}]
    dto: tuple  # of _Field; () when Postiz validates nothing but __type


def _build_providers() -> dict:
    providers = {}
    for identifier, name, editor, max_length, dto, exposed in _PROVIDER_TABLE:
        settings: Union[dict, str] = _object_schema(dto) if exposed else _NO_SETTINGS
        if identifier == "youtube":  # a quirk of the generator, kept because clients may look for it
            settings["properties"]["tags"]["$ref"] = "#/definitions/Array"
        tools = [{"methodName": method, "description": description,
                  "dataSchema": [{"key": key, "type": "string", "description": key} for key in keys]}
                 for method, description, keys in _TOOLS.get(identifier, ())]
        providers[identifier] = ProviderSpec(identifier, name, editor, max_length, _RULES.get(identifier, ""),
                                             settings, tools, dto)
    return providers


PROVIDERS: dict = _build_providers()

# --- channels that connect with credentials (POST /integrations, `rustiz channel add`) -----------
# Providers that need no developer app: the user pastes credentials, rustiz stores them as the
# channel's token. Here they are checked for shape, and `CredentialSpec.account` derives what the
# credentials alone tell (the default channel name); then the publisher's `connect()` (section 11)
# verifies them with the platform and reads the real account (its id, name, handle, avatar).
# Credentials never leave the store and are never logged.

class CredentialKey(NamedTuple):
    """One key of a provider's `credentials` object; `kind` names its check in _CREDENTIAL_CHECKS."""
    name: str
    kind: str
    required: bool = True


class ChannelAccount(NamedTuple):
    """Who a channel posts as. `internal_id` identifies the account on its platform (one channel each)."""
    internal_id: str
    name: str
    profile: Optional[str]
    picture: Optional[str] = None


class CredentialSpec(NamedTuple):
    keys: tuple  # of CredentialKey, in the order errors are reported
    account: Callable[[dict], ChannelAccount]


class NewChannel(NamedTuple):
    """A validated POST /integrations body: what Store.add_channel writes."""
    provider: str
    account: ChannelAccount
    credentials: dict
    customer: Optional[str]  # a group's id or name; a new group is made for an unknown name
    session: Optional[dict] = None  # the publisher's cached login, from connecting
    limits: Optional[dict] = None  # the account's own limits (Mastodon's instance), from connecting


def _secret_digest(secret: str) -> str:
    """A stand-in id derived from a secret (a webhook URL, an API key) that reveals nothing of it."""
    return _sha256(secret.encode()).hexdigest()[:32]


def _url_host(url: str) -> str:
    from urllib.parse import urlsplit
    return urlsplit(url).netloc.rpartition("@")[2].lower()


_BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32_polymod(values: list) -> int:
    check = 1
    for value in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for bit, generator in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            if (top >> bit) & 1:
                check ^= generator
    return check


def bech32_payload(text: str, expected_prefix: str) -> Optional[bytes]:
    """The bytes inside a BIP-173 string such as a NIP-19 `nsec1...`; None when malformed or mistyped."""
    prefix, _, data = text.lower().rpartition("1")
    if prefix != expected_prefix or len(data) < 7 or any(char not in _BECH32_CHARSET for char in data):
        return None
    values = [_BECH32_CHARSET.index(char) for char in data]
    expanded_prefix = [ord(char) >> 5 for char in prefix] + [0] + [ord(char) & 31 for char in prefix]
    if _bech32_polymod(expanded_prefix + values) != 1:  # the 6-character checksum catches typos
        return None
    accumulator, bits, payload = 0, 0, bytearray()
    for value in values[:-6]:
        accumulator, bits = (accumulator << 5) | value, bits + 5
        if bits >= 8:
            bits -= 8
            payload.append((accumulator >> bits) & 0xFF)
    if bits >= 5 or accumulator & ((1 << bits) - 1):  # padding must be short and zero
        return None
    return bytes(payload)


def nostr_private_key_hex(key: str) -> Optional[str]:
    """A Nostr private key given as 64 hex digits or as NIP-19 `nsec1...`, as hex; None when it is neither."""
    if re.fullmatch(r"[0-9a-fA-F]{64}", key):
        return key.lower()
    payload = bech32_payload(key, "nsec")
    return payload.hex() if payload is not None and len(payload) == 32 else None


def _string_problem(value: Any) -> Optional[str]:
    """JSON can carry a lone surrogate ("\\ud800"), which is no text SQLite can store."""
    if not isinstance(value, str):
        return "must be a string"
    try:
        value.encode()
    except UnicodeEncodeError:
        return "must be Unicode text (it contains a lone surrogate such as \\ud800)"
    return None


def _url_problem(value: Any, schemes: tuple) -> Optional[str]:
    """What is wrong with a URL a tenant gave (a webhook, an instance, a relay...), or None: the same
    check the outbound client makes (section 11), so that what is accepted here can be connected to."""
    problem = _string_problem(value)
    if problem:
        return problem
    try:
        parsed_url(value, schemes)
    except ValueError as error:
        return str(error)
    return None


def _text_problem(value: Any) -> Optional[str]:
    return _string_problem(value) or (None if value.strip() else "should not be empty")


def _relays_problem(value: Any) -> Optional[str]:
    if not isinstance(value, list):
        return "must be an array"
    return None if value else "must contain at least 1 elements"


def _telegram_chat_problem(value: Any) -> Optional[str]:
    if type(value) is int or (isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value)):
        # Telegram's chat ids have at most 52 significant bits; text is measured before int() reads it.
        if len(str(value).lstrip("-0")) <= 16 and abs(int(value)) <= MAX_SAFE_INTEGER:
            return None
        return f"must be a Telegram chat id: a whole number from {-MAX_SAFE_INTEGER} to {MAX_SAFE_INTEGER}"
    if isinstance(value, str) and re.fullmatch(r"@[A-Za-z][A-Za-z0-9_]{3,}", value):
        return None
    return "must be a numeric chat id (like -1001234567890) or a public @channelname"


_CREDENTIAL_CHECKS: dict = {
    "text": _text_problem,
    "http_url": lambda value: _url_problem(value, ("http", "https")),
    "relays": _relays_problem,
    "telegram_bot_token": lambda value: _text_problem(value) or (
        None if re.fullmatch(r"[0-9]+:[A-Za-z0-9_-]{20,}", value) else "must look like 123456789:AAE... "
                                                                    "(the token @BotFather gave you)"),
    "telegram_chat": _telegram_chat_problem,
    "nostr_key": lambda value: _text_problem(value) or (
        None if nostr_private_key_hex(value) else "must be a private key: 64 hex digits or an nsec1... string"),
}


def _login_account(url_key: str, user_key: str, name: Callable[[str, str], str]) -> Callable[[dict], ChannelAccount]:
    """A self-hosted platform's account: the user on that host (the same user elsewhere is another account)."""
    def account(credentials: dict) -> ChannelAccount:
        host, user = _url_host(credentials[url_key]), credentials[user_key].strip()
        return ChannelAccount(f"{host}/{user.lower()}", name(host, user), user)
    return account


def _secret_account(key: str, name: Callable[[dict], str]) -> Callable[[dict], ChannelAccount]:
    """An account known only by a secret (API key, webhook URL): its digest tells two apart."""
    return lambda credentials: ChannelAccount(_secret_digest(credentials[key]), name(credentials), None)


def _telegram_account(credentials: dict) -> ChannelAccount:
    chat = str(credentials["chatId"])
    bot = credentials["botToken"].partition(":")[0]  # the bot's numeric id; the rest is the secret
    return ChannelAccount(f"{bot}/{chat}", f"Telegram {chat}", chat if chat.startswith("@") else None)


def _nostr_account(credentials: dict) -> ChannelAccount:
    # The real account (the public key, the relays' profile) is read by the Nostr publisher's connect().
    digest = _secret_digest(nostr_private_key_hex(credentials["password"]))
    return ChannelAccount(digest, f"Nostr key {digest[:8]}", None)


def _credential_keys(*keys: tuple) -> tuple:
    return tuple(CredentialKey(*key) for key in keys)


_LOGIN_KEYS = _credential_keys(("service", "http_url"), ("identifier", "text"), ("password", "text"))
_API_KEY = _credential_keys(("apiKey", "text"))
_WEBHOOK_URL = _credential_keys(("webhookUrl", "http_url"))

CREDENTIAL_SPECS: dict = {
    "bluesky": CredentialSpec(_LOGIN_KEYS, _login_account("service", "identifier", lambda host, user: user)),
    "lemmy": CredentialSpec(_LOGIN_KEYS, _login_account("service", "identifier",
                                                        lambda host, user: f"{user}@{host}")),
    "wordpress": CredentialSpec(
        _credential_keys(("domain", "http_url"), ("username", "text"), ("password", "text")),
        _login_account("domain", "username", lambda host, user: host)),
    "listmonk": CredentialSpec(
        _credential_keys(("url", "http_url"), ("username", "text"), ("password", "text")),
        _login_account("url", "username", lambda host, user: f"Listmonk at {host}")),
    "nostr": CredentialSpec(_credential_keys(("password", "nostr_key"), ("relays", "relays")), _nostr_account),
    "devto": CredentialSpec(_API_KEY, _secret_account("apiKey", lambda credentials: "Dev.to account")),
    "hashnode": CredentialSpec(_API_KEY, _secret_account("apiKey", lambda credentials: "Hashnode account")),
    "mastodon": CredentialSpec(
        _credential_keys(("instance", "http_url"), ("accessToken", "text")),
        lambda credentials: ChannelAccount(
            f"{_url_host(credentials['instance'])}/{_secret_digest(credentials['accessToken'])}",
            _url_host(credentials["instance"]), None)),
    "telegram": CredentialSpec(_credential_keys(("botToken", "telegram_bot_token"), ("chatId", "telegram_chat")),
                               _telegram_account),
    "discord": CredentialSpec(_WEBHOOK_URL, _secret_account("webhookUrl", lambda credentials: "Discord webhook")),
    "slack": CredentialSpec(_WEBHOOK_URL, _secret_account("webhookUrl", lambda credentials: "Slack webhook")),
    "webhook": CredentialSpec(  # rustiz's own provider: POSTs each post as signed JSON to any URL
        _credential_keys(("url", "http_url"), ("secret", "text", False)),
        _secret_account("url", lambda credentials: f"Webhook to {_url_host(credentials['url'])}")),
}

CHANNEL_NAME_MAX_LENGTH = 200


def _credential_problem(key: CredentialKey, value: Any) -> Optional[str]:
    """What is wrong with one credential, as `credentials.<key> ...` (`credentials.relays.1 ...` for a list item)."""
    path = f"credentials.{key.name}"
    problem = _CREDENTIAL_CHECKS[key.kind](value)
    if problem:
        return f"{path} {problem}"
    if key.kind == "relays":
        for index, relay in enumerate(value):
            problem = _url_problem(relay, ("ws", "wss"))
            if problem:
                return f"{path}.{index} {problem}"
    return None


def _credentials_problems(provider: str, credentials: Any) -> list:
    """ValidationPipe-style messages (`credentials.<key> ...`) for a provider's credentials object."""
    if not isinstance(credentials, dict):
        return ["credentials must be an object"]
    keys = CREDENTIAL_SPECS[provider].keys
    problems = []
    for key in keys:
        if key.name not in credentials or credentials[key.name] is None:
            if key.required:
                problems.append(f"credentials.{key.name} should not be empty")
            continue
        problem = _credential_problem(key, credentials[key.name])
        if problem:
            problems.append(problem)
    known = {key.name for key in keys}
    problems.extend(f"credentials.{name} should not exist ({provider} takes {', '.join(key.name for key in keys)})"
                    for name in credentials if name not in known)
    return problems


def _optional_text_problem(body: dict, name: str) -> Optional[str]:
    value = body.get(name)
    if value is None:
        return None
    problem = _text_problem(value)
    if problem is None and len(value) > CHANNEL_NAME_MAX_LENGTH:
        problem = f"must be shorter than or equal to {CHANNEL_NAME_MAX_LENGTH} characters"
    return f"{name} {problem}" if problem else None


def validate_new_channel(body: Any) -> NewChannel:
    """Check a POST /integrations body (`rustiz channel add` builds the same); raises ApiError (400)."""
    body = body if isinstance(body, dict) else {}
    provider = body.get("provider")
    connectable = ", ".join(sorted(CREDENTIAL_SPECS))
    if not isinstance(provider, str) or provider not in CREDENTIAL_SPECS:
        if isinstance(provider, str) and provider in PROVIDERS:
            raise bad_request(f"{provider} connects through OAuth with a developer app, which rustiz does not "
                              f"support yet; providers that connect with credentials: {connectable}")
        shown = json.dumps(provider)[:100] if provider is not None else "missing"
        raise bad_request(f"provider {shown} is not one rustiz can connect; use one of: {connectable}")
    problems = _credentials_problems(provider, body.get("credentials"))
    problems += [problem for problem in (_optional_text_problem(body, "name"), _optional_text_problem(body, "customer"))
                 if problem]
    if problems:
        raise bad_request(problems)
    credentials = body["credentials"]
    account = CREDENTIAL_SPECS[provider].account(credentials)
    if body.get("name") is not None:
        account = account._replace(name=body["name"].strip())
    customer = body["customer"].strip() if body.get("customer") is not None else None
    return NewChannel(provider, account, credentials, customer)


# --- text: what Postiz counts and keeps ---------------------------------------

# striptags: a tag runs from "<" to the next ">" outside quotes (or to the end of the text).
_TAG = r"""<(?:"[^"]*"|'[^']*'|[^'">])*(?:>|$)"""


def strip_html(html: str) -> str:
    """The text Postiz measures: tags removed as by the striptags package (entities are left as written)."""
    return re.sub(_TAG, "", html)


# twitter-text 3: code points in these ranges weigh 1, every other one 2 (of 280); a URL weighs 23;
# an emoji, even one joined from several code points, weighs 2.
_LIGHT_RANGES = ((0, 4351), (8192, 8205), (8208, 8223), (8242, 8247))
_URL = r"(?i)(?:https?://|www\.)[^\s<>]+"
_EMOJI = ("[\U0001F000-\U0001FAFF\u2600-\u27BF][\uFE0F\U0001F3FB-\U0001F3FF]*"
          "(?:\u200D[\U0001F000-\U0001FAFF\u2600-\u27BF\u2640\u2642][\uFE0F\U0001F3FB-\U0001F3FF]*)*")


def x_weighted_length(text: str) -> int:
    """X's count for `text` (twitter-text weighted length): what decides whether a post fits in 280."""
    import unicodedata
    text = unicodedata.normalize("NFC", text)
    length = 0
    for piece in re.split(_URL, text):
        for index, chunk in enumerate(re.split(_EMOJI, piece)):
            if index:
                length += 2
            for character in chunk:
                point = ord(character)
                length += 1 if any(low <= point <= high for low, high in _LIGHT_RANGES) else 2
    return length + 23 * len(re.findall(_URL, text))


def _is_grapheme_extender(code: int) -> bool:
    """Grapheme_Cluster_Break Extend/SpacingMark/ZWJ: combining marks, variation selectors, skin tones, tags."""
    import unicodedata
    return (unicodedata.category(chr(code)) in ("Mn", "Me", "Mc") or code in (0x200C, 0x200D)
            or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF or 0x1F3FB <= code <= 0x1F3FF
            or 0xE0020 <= code <= 0xE007F)


def _is_pictographic(code: int) -> bool:
    """Extended_Pictographic, near enough: the emoji blocks and the older symbols that emoji reuse."""
    return (0x1F000 <= code <= 0x1FAFF and not 0x1F1E6 <= code <= 0x1F1FF) or 0x2600 <= code <= 0x27BF \
        or 0x2300 <= code <= 0x23FF or 0x2B00 <= code <= 0x2BFF or 0x1FC00 <= code <= 0x1FFFD \
        or code in (0xA9, 0xAE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D, 0x3297, 0x3299) \
        or 0x2194 <= code <= 0x21AA


def _hangul_kind(code: int) -> str:
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97C:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    return ""


_HANGUL_JOINS = {"L": ("L", "V", "LV", "LVT"), "LV": ("V", "T"), "V": ("V", "T"), "LVT": ("T",), "T": ("T",)}


def grapheme_count(text: str) -> int:
    """User-perceived characters, as Bluesky counts its 300 and Mastodon its 500 (Unicode extended
    grapheme clusters, the rules that matter for posts: CR LF, combining marks, ZWJ emoji sequences,
    flags, Hangul syllables), so "👍🏽" and "🇫🇷" are one character each."""
    count = 0
    previous = None  # the code point before, within the current cluster
    pictographic_run = False  # the cluster so far is a pictograph followed only by extenders
    regional_indicators = 0  # regional indicators in a row (a flag is a pair)
    for char in text:
        code = ord(char)
        joins = False
        if previous is not None:
            if previous == 0x0D and code == 0x0A:
                joins = True
            elif previous in (0x0A, 0x0D):
                joins = False
            elif _is_grapheme_extender(code):
                joins = True
            elif previous == 0x200D and pictographic_run and _is_pictographic(code):
                joins = True
            elif 0x1F1E6 <= code <= 0x1F1FF and 0x1F1E6 <= previous <= 0x1F1FF:
                joins = regional_indicators % 2 == 1
            elif _hangul_kind(previous) and _hangul_kind(code) in _HANGUL_JOINS.get(_hangul_kind(previous), ()):
                joins = True
        if not joins:
            count += 1
            pictographic_run = _is_pictographic(code)
        elif not (_is_grapheme_extender(code) or _is_pictographic(code)):
            pictographic_run = False
        regional_indicators = regional_indicators + 1 if 0x1F1E6 <= code <= 0x1F1FF else 0
        previous = code
    return count


def _is_verified(additional_settings: Any) -> bool:
    return isinstance(additional_settings, list) and any(
        isinstance(item, dict) and item.get("title") == "Verified" and item.get("value") is True
        for item in additional_settings)


def provider_max_length(identifier: str, channel_additional_settings: Any) -> int:
    """The provider's maxLength; X allows 4000 to a channel marked Verified (X premium). 0: unknown provider."""
    if identifier == "x" and _is_verified(channel_additional_settings):
        return 4000
    spec = PROVIDERS.get(identifier)
    return spec.max_length if spec else 0


def post_length(identifier: str, html: str, channel_additional_settings: Any) -> tuple:
    """(length, limit) of one post's content as Postiz checks it before publishing."""
    text = strip_html(html)
    length = x_weighted_length(text) if identifier == "x" else len(text)
    return length, provider_max_length(identifier, channel_additional_settings)


# DOMPurify's configuration in Postiz: these tags and attributes survive, links only to these URIs;
# other tags are unwrapped (their text kept) except these, which go with everything inside them.
_ALLOWED_TAGS = frozenset("p br strong u a ul li h1 h2 h3 span".split())
_ALLOWED_ATTRIBUTES = frozenset("href target rel class data-mention-id data-mention-label".split())
_ALLOWED_URI = r"(?i)(?:https?:|mailto:|/|#)"
_ATTRIBUTE_WHITESPACE = "[\u0000-\u0020\u00a0\u1680\u180e\u2000-\u2029\u205f\u3000]"
_DROPPED_WITH_CONTENT = frozenset(
    "annotation-xml audio colgroup desc foreignobject head iframe math mi mn mo ms mtext noembed noframes "
    "noscript plaintext script style svg template thead title video xmp".split())
_sanitizer_class: Optional[type] = None


def _escape_html(text: str, quote: bool = False) -> str:
    text = text.replace("&", "&amp;").replace("\u00a0", "&nbsp;")
    return text.replace('"', "&quot;") if quote else text.replace("<", "&lt;").replace(">", "&gt;")


def _make_sanitizer_class() -> type:
    from html.parser import HTMLParser  # only posting needs it; start-up does not

    class Sanitizer(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.output: list = []
            self.open_tags: list = []
            self.dropping = 0  # depth inside elements removed with their content

        def handle_starttag(self, tag: str, attributes: list) -> None:
            if self.dropping or tag in _DROPPED_WITH_CONTENT:
                self.dropping += tag in _DROPPED_WITH_CONTENT
                return
            if tag not in _ALLOWED_TAGS:
                return
            kept = "".join(f' {name}="{_escape_html(value or "", quote=True)}"' for name, value in attributes
                           if name in _ALLOWED_ATTRIBUTES and (
                               name != "href" or not value
                               or re.match(_ALLOWED_URI, re.sub(_ATTRIBUTE_WHITESPACE, "", value))))
            self._close_implied_by(tag)
            self.output.append(f"<{tag}{kept}>")
            if tag != "br":
                self.open_tags.append(tag)

        handle_startendtag = handle_starttag  # HTML has no self-closing tags: <p/> opens a p, <br/> is <br>

        def _close_implied_by(self, tag: str) -> None:
            """What a browser (and so DOMPurify) closes by itself: a new item ends the previous one, a block ends a p."""
            innermost_list_tag = next((open_tag for open_tag in reversed(self.open_tags) if open_tag in ("li", "ul")),
                                      None)
            if tag == "li" and innermost_list_tag == "li":
                self._close("li")
            elif tag in ("p", "ul", "h1", "h2", "h3") and "p" in self.open_tags:
                self._close("p")

        def _close(self, tag: str) -> None:
            while self.open_tags:
                closed = self.open_tags.pop()
                self.output.append(f"</{closed}>")
                if closed == tag:
                    break

        def handle_endtag(self, tag: str) -> None:
            if self.dropping:
                self.dropping -= tag in _DROPPED_WITH_CONTENT
            elif tag in self.open_tags:
                self._close(tag)
            elif tag == "br":  # browsers read </br> as <br>
                self.output.append("<br>")

        def handle_data(self, data: str) -> None:
            if not self.dropping:
                self.output.append(_escape_html(data))

        def result(self) -> str:
            self.close()
            return "".join(self.output) + "".join(f"</{tag}>" for tag in reversed(self.open_tags))

    return Sanitizer


def sanitize_html(html: str) -> str:
    """Post content as Postiz stores it after DOMPurify: allowed tags and attributes only, safe links only."""
    global _sanitizer_class
    if _sanitizer_class is None:
        _sanitizer_class = _make_sanitizer_class()
    sanitizer = _sanitizer_class()
    sanitizer.feed(html)
    return sanitizer.result()

# --- validation of POST /posts: class-validator's checks and messages ----------

def _js_string(value: Any) -> str:
    """String(value) as JavaScript writes it (Nest converts DTO values to the declared type first)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def _js_number(value: Any) -> Union[int, float]:
    """Number(value) as JavaScript computes it; NaN for what is not a number."""
    if isinstance(value, (bool, int, float)):
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text) if text else 0
        except ValueError:
            return math.nan
        return int(number) if math.isfinite(number) and number == int(number) else number
    return math.nan


def _implicit_conversion(kind: str, value: Any) -> Any:
    """Nest's ValidationPipe (enableImplicitConversion) converts scalars; arrays and null are left alone."""
    if value is None or isinstance(value, list):
        return value
    if kind in ("string", "date"):
        return _js_string(value)
    if kind == "boolean":
        return value if isinstance(value, bool) else not (value in ("", 0) or value != value)
    if kind == "number":
        return _js_number(value)
    return value


# ASCII digits only ("\d" would take Arabic-Indic or fullwidth digits too), and UTC offsets as
# validator.js's isISO8601 (Postiz's IsDateString) takes them: hours 00-23, minutes 00-59.
_ISO_8601 = (r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?"
             r"(Z|z|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)?)?")


def _parse_iso_date(text: str) -> Optional[str]:
    """An ISO 8601 date or date-time as a UTC instant 'YYYY-MM-DDTHH:MM:SS.mmmZ' (no offset = UTC), or None.

    None too for a date that is not in the calendar, or not within years 1 to 9999 once in UTC."""
    from datetime import datetime, timedelta, timezone
    match = re.fullmatch(_ISO_8601, text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                          int((fraction or "0")[:6].ljust(6, "0")), tzinfo=timezone.utc)
        if offset and offset not in "Zz":
            sign = 1 if offset[0] == "+" else -1
            digits = offset[1:].replace(":", "")
            moment -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
    except (ValueError, OverflowError):  # 2026-02-30, 25:00, year 0, an offset before year 1 or after 9999
        return None
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
            f"{moment.second:02d}.{moment.microsecond // 1000:03d}Z")


# class-validator's IsUrl, simplified; letter cases spelt out because (?i) on these ranges costs 20 ms to compile.
_URL_ADDRESS = (r"(?:(?:[hH][tT][tT][pP][sS]?|[fF][tT][pP])://)?(?:[^\s:@/]+(?::[^\s:@/]*)?@)?"
                r"(?:[A-Za-z0-9\u00a1-\uffff-]+\.)+[A-Za-z\u00a1-\uffff]{2,}\.?(?::\d{1,5})?(?:[/?#]\S*)?")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_TYPE_MESSAGES = {"string": "must be a string", "date": "must be a valid ISO 8601 date string",
                  "boolean": "must be a boolean value", "array": "must be an array",
                  "number": "must be a number conforming to the specified constraints"}


def _is_kind(kind: str, value: Any) -> bool:
    if kind == "date":
        return isinstance(value, str) and _parse_iso_date(value) is not None
    if kind == "number":
        return _is_number(value)
    if kind == "object":
        return value is None or isinstance(value, dict)
    return isinstance(value, {"string": str, "boolean": bool, "array": list}[kind])


def _failed_checks(field: _Field, value: Any, parent: dict) -> dict:
    """check name -> class-validator's message, for each check of `field` that `value` fails.

    As in class-validator, a missing value fails every check but @IsDefined's own."""
    name = field.name
    is_text = isinstance(value, str)
    size = len(value) if isinstance(value, list) else None
    tests = (
        ("enum", field.enum is not None, lambda: value in field.enum,
         lambda: f"must be one of the following values: {', '.join(field.enum)}"),
        ("min_length", field.min_length is not None, lambda: is_text and len(value) >= field.min_length,
         lambda: f"must be longer than or equal to {field.min_length} characters"),
        ("max_length", field.max_length is not None, lambda: is_text and len(value) <= field.max_length,
         lambda: f"must be shorter than or equal to {field.max_length} characters"),
        ("pattern", field.pattern is not None, lambda: is_text and re.search(field.pattern, value) is not None,
         lambda: f"must match /{field.pattern}/ regular expression"),
        ("url", field.url, lambda: is_text and re.fullmatch(_URL_ADDRESS, value) is not None,
         lambda: "must be a URL address"),
        ("minimum", field.minimum is not None, lambda: _is_number(value) and value >= field.minimum,
         lambda: f"must not be less than {_js_string(field.minimum)}"),
        ("maximum", field.maximum is not None, lambda: _is_number(value) and value <= field.maximum,
         lambda: f"must not be greater than {_js_string(field.maximum)}"),
        ("min_items", field.min_items is not None, lambda: size is not None and size >= field.min_items,
         lambda: f"must contain at least {field.min_items} elements"),
        ("max_items", field.max_items is not None, lambda: size is not None and size <= field.max_items,
         lambda: f"must contain no more than {field.max_items} elements"),
        ("items", field.items == "number", lambda: size is None or all(map(_is_number, value)),
         lambda: f"each value in {name} must be a number conforming to the specified constraints"),
        # Postiz mostly writes a bare @IsIn, so an enum property is type-checked only when its order says so.
        ("type", not (field.enum and "type" not in field.order), lambda: _is_kind(field.kind, value),
         lambda: (f"nested property {name} must be either object or array" if field.kind == "object"
                  else f"{name} {_TYPE_MESSAGES[field.kind]}")),
    )
    failed = {check: message() for check, applies, passes, message in tests if applies and not passes()}
    for check in ("enum", "min_length", "max_length", "pattern", "url", "minimum", "maximum", "min_items",
                  "max_items"):
        if check in failed:
            failed[check] = f"{name} {failed[check]}"
    problem = field.extra_check(value, parent) if field.extra_check else None
    if problem:
        failed["extra"] = problem
    return failed


def _field_messages(field: _Field, value: Any, parent: dict) -> list:
    """class-validator's messages for one property, in the order Postiz's decorators produce them."""
    custom = field.custom or {}
    messages = []
    if field.defined and value is None:
        messages.append(custom.get("defined", f"{field.name} should not be null or undefined"))
    failed = _failed_checks(field, value, parent)
    messages.extend(custom.get(check, failed[check]) for check in field.order or _DEFAULT_ORDER if check in failed)
    return messages


def _checked(fields: tuple, source: dict, path: str, errors: list) -> dict:
    """Validate `source` against `fields`; append Nest's 'path.message' strings to errors; return the converted copy.

    Nest prefixes each message with the path of the object holding the property, so a custom message
    (one that does not start with the property's name) reads like 'posts.0.settings.Board is required'."""
    result = dict(source)
    prefix = path + "." if path else ""
    for field in fields:
        if field.when is not None and not field.when(source):
            continue
        value = _implicit_conversion(field.kind, result.get(field.name))
        if value is None and field.optional:
            continue
        if field.name in result:
            result[field.name] = value
        errors.extend(prefix + message for message in _field_messages(field, value, source))
        if field.kind == "object" and isinstance(value, dict):
            result[field.name] = _checked(field.fields, value, prefix + field.name, errors)
        elif field.kind == "array" and field.items == "object" and isinstance(value, list):
            result[field.name] = [_checked_item(field, index, item, prefix, errors) for index, item in enumerate(value)]
    return result


def _checked_item(field: _Field, index: int, item: Any, prefix: str, errors: list) -> Any:
    if isinstance(item, dict):
        return _checked(field.fields, item, f"{prefix}{field.name}.{index}", errors)
    errors.append(f"{prefix}{field.name}.nested property {index} must be either object or array")
    return item


# --- media rules before publishing (Postiz's checkValidity, §8.5) --------------

def _is_video(media: Any) -> bool:
    return isinstance(media, dict) and "mp4" in str(media.get("path", ""))


def _videos(media: list) -> int:
    return sum(map(_is_video, media))


def _all_media(values: list) -> list:
    return [media for value in values for media in value["image"]]


# Each rule takes (settings, values) and returns Postiz's message for the first thing the post
# breaks, or None. `values[0]["image"]` is the main post's media; later values are comments/replies.

def _bluesky_rule(settings: dict, values: list) -> Optional[str]:
    for value in values:
        if _videos(value["image"]) > 1:
            return "You can only upload one video per post."
        if len(value["image"]) > 4:
            return "There can be maximum 4 pictures in a post."
    return None


def _dribbble_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if len(first) != 1:
        return "Requires one item"
    return "Does not support mp4 files" if _videos(first) else None


def _facebook_rule(settings: dict, values: list) -> Optional[str]:
    if settings.get("post_type") == "story" and not values[0]["image"]:
        return "Story should have at least one media"
    return None


def _farcaster_rule(settings: dict, values: list) -> Optional[str]:
    return "Can only accept images" if _videos(_all_media(values)) else None


def _gmb_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if len(first) > 1:
        return "Google My Business posts can only have one image"
    if _videos(first):
        return "Google My Business posts do not support video attachments"
    if settings.get("topicType") == "EVENT" and not settings.get("eventTitle"):
        return "Event posts require an event title"
    return None


def _instagram_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if not first:
        return "Should have at least one media"
    if len(first) > 10:
        return "Instagram carousel only supports up to 10 media attachments"
    if settings.get("is_trial_reel"):
        if len(first) != 1:
            return "Trial Reels can only have one video"
        if not _videos(first):
            return "Trial Reels must be a video"
    return None


def _lemmy_rule(settings: dict, values: list) -> Optional[str]:
    return "You can set only one picture for a cover" if len(values[0]["image"]) > 1 else None


def _linkedin_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if settings.get("post_as_images_carousel") and (len(first) < 2 or _videos(first)):
        return "Carousel can only be created with 2 or more images and no videos."
    if _videos(first) and len(first) > 1:
        return "Can have maximum 1 media when selecting a video."
    if any(value["image"] for value in values[1:]):
        return "Comments can only contain text."
    return None


def _pinterest_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if not first:
        return "Requires at least one media"
    if len(first) > 5:
        return "You can only have up to 5 media items"
    if _is_video(first[0]) and len(first) == 1:
        return "If posting a video you have to also include a cover image as second media"
    if _is_video(first[0]) and len(first) > 2:
        return "If posting a video you can only have two media items"
    return None


def _reddit_rule(settings: dict, values: list) -> Optional[str]:
    entries = settings.get("subreddit")
    for entry in entries if isinstance(entries, list) else ():
        value = entry.get("value") if isinstance(entry, dict) else None
        post_type = value.get("type") if isinstance(value, dict) else None
        if post_type in ("image", "video", "videogif", "media") and len(values[0]["image"]) != 1:
            return "When posting a media post, you must attached exactly one media file."
    return None


def _tiktok_rule(settings: dict, values: list, most_pictures: Optional[int] = None) -> Optional[str]:
    first = values[0]["image"]
    if not first:
        return "No video / images selected"
    if len(first) > 1 and _videos(first):
        return "Only pictures are supported when selecting multiple items"
    if most_pictures is not None and len(first) > most_pictures:
        return f"You can select up to {most_pictures} pictures"
    return None


def _tumblr_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if len(first) - _videos(first) > 30:
        return "Tumblr supports up to 30 images in one post."
    return "Tumblr supports one uploaded video in one post." if _videos(first) > 1 else None


def _x_rule(settings: dict, values: list) -> Optional[str]:
    if settings.get("post_type") != "article":
        return None
    if _videos(_all_media(values)):
        return "X articles only support images"
    if settings.get("article_status") == "draft" and len(values) > 1:
        return "A draft article cannot have thread replies, remove them or publish the article"
    return None


def _youtube_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if len(first) != 1:
        return "You need one media"
    return None if _videos(first) else "Item must be a video"


_MEDIA_RULES = {
    "bluesky": _bluesky_rule, "dribbble": _dribbble_rule, "facebook": _facebook_rule, "wrapcast": _farcaster_rule,
    "gmb": _gmb_rule, "instagram": _instagram_rule, "instagram-standalone": _instagram_rule, "lemmy": _lemmy_rule,
    "linkedin": _linkedin_rule, "linkedin-page": _linkedin_rule, "pinterest": _pinterest_rule,
    "reddit": _reddit_rule, "tiktok": _tiktok_rule,
    "tiktok-business": lambda settings, values: _tiktok_rule(settings, values, most_pictures=35),
    "tumblr": _tumblr_rule, "x": _x_rule, "youtube": _youtube_rule,
}


def _media_rule_problem(identifier: str, settings: dict, values: list) -> Optional[str]:
    """The first media rule of the provider that this post breaks, with Postiz's message; None when it fits."""
    rule = _MEDIA_RULES.get(identifier)
    return rule(settings, values) if rule else None


# --- POST /posts: the whole pipeline before anything is stored -----------------

def _valid_content(content: Any, value: dict) -> Optional[str]:
    """Postiz's ValidContent: a post without media needs text (its message starts with a space, as Postiz's)."""
    image = value.get("image")
    if isinstance(image, list) and image:
        return None
    if isinstance(content, str) and strip_html(content):
        return None
    return " If images do not exist, content must be a non-empty string."


# A post repeats every `inter` days: Postiz's editor offers 1 to 30 (its "cancel" sends 0, no repetition);
# up to ten years lets a yearly or multi-year post through, and nothing larger is anything but a mistake.
MAX_INTERVAL_DAYS = 3650
MAX_DELAY_MINUTES = 7 * 24 * 60  # a thread part waits at most a week after the part before it

_POST_CONTENT_FIELDS = (
    _Field("content", "string", defined=True, extra_check=_valid_content), _text("id", optional=True),
    _Field("image", "array", items="object", fields=_MEDIA_FIELDS),
    _Field("delay", "number", optional=True, extra_check=_whole_number_check(
        "delay", 0, MAX_DELAY_MINUTES, "the minutes this part waits after the one before it")))
_POST_FIELDS = (
    _Field("integration", "object", defined=True, fields=(_Field("id", "string", defined=True),)),
    _Field("value", "array", defined=True, items="object", min_items=1, fields=_POST_CONTENT_FIELDS,
           order=("type", "min_items")),
    _text("group", optional=True))
_CREATE_POST_FIELDS = (
    _text("order", optional=True), _flag("shortLink", defined=True),
    _Field("inter", "number", optional=True, extra_check=_whole_number_check(
        "inter", 0, MAX_INTERVAL_DAYS, "the days between repetitions (0: the post does not repeat)")),
    _Field("date", "date", defined=True),
    _Field("tags", "array", defined=True, items="object",
           fields=(_Field("value", "string", defined=True), _Field("label", "string", defined=True))))


def _post_validation_error(channel: dict, message: str) -> ApiError:
    """Postiz's PostValidationException: which channel refused the post, and why."""
    return ApiError(400, {"statusCode": 400, "provider": channel["provider_identifier"], "name": channel["name"],
                          "message": message})


def _channels_of(posts: Any, find_channel: Callable[[str], Optional[dict]]) -> list:
    """Step 2 of Postiz's pipeline: every post names a channel of the organization (deleted ones count)."""
    if not isinstance(posts, list) or not all(
            isinstance(post, dict) and isinstance(post.get("integration"), dict) and post["integration"].get("id")
            for post in posts):
        raise bad_request("All posts must have an integration id")
    channels = []
    for post in posts:
        channel_id = post["integration"]["id"]
        channel = find_channel(channel_id) if isinstance(channel_id, str) else None
        if channel is None:
            raise bad_request(f"Integration with id {_js_string(channel_id)} not found")
        channels.append(channel)
    return channels


def _checked_posts(posts: list, channels: list, errors: list) -> list:
    """Each post's DTO, then its settings against the DTO of its channel's provider (`__type` is the channel's)."""
    checked = []
    for index, (post, channel) in enumerate(zip(posts, channels)):
        path = f"posts.{index}"
        result = _checked(_POST_FIELDS, post, path, errors)
        raw_settings = post.get("settings")
        settings = {**(raw_settings if isinstance(raw_settings, dict) else {}),
                    "__type": channel["provider_identifier"]}
        spec = PROVIDERS.get(channel["provider_identifier"])
        result["settings"] = _checked(spec.dto, settings, path + ".settings", errors) if spec else settings
        checked.append(result)
    return checked


def _planned_values(values: list) -> list:
    """The checked values as stored: `delay` is a whole number of minutes by now (or absent: 0)."""
    return [{"id": value.get("id") if isinstance(value.get("id"), str) else None,
             "content": sanitize_html(value["content"]),
             "delay": int(value.get("delay") or 0), "image": value["image"]} for value in values]


def _check_before_publishing(post_type: str, posts: list, channels: list) -> None:
    """Step 3 (Postiz's validatePosts): content or media always; media rules and length unless a draft."""
    for post, channel in zip(posts, channels):
        identifier = channel["provider_identifier"]
        for value in post["values"]:
            if not strip_html(value["content"]).strip() and not value["image"]:
                raise _post_validation_error(channel, "Your post should have at least one character or one image.")
        if post_type == "draft":
            continue
        problem = _media_rule_problem(identifier, post["settings"], post["values"])
        if problem:
            raise _post_validation_error(channel, problem)
        article = identifier == "x" and post["settings"].get("post_type") == "article"
        # A channel that read its own length limit when connecting (a Mastodon instance allowing 5,000
        # characters) is measured by its publisher's post_problem, as its platform counts, instead.
        own_limit = bool((channel.get("limits") or {}).get("maxLength"))
        for value in post["values"]:
            length, limit = post_length(identifier, value["content"], channel.get("additional_settings"))
            if limit and not own_limit and length > (100000 if article else limit):
                raise _post_validation_error(channel, "post is too long, please fix it")
        problem = _platform_problem(channel, post)
        if problem:
            raise _post_validation_error(channel, problem)


def _platform_problem(channel: dict, post: dict) -> Optional[str]:
    """What the platform itself would refuse (its real limits, which Postiz does not all check)."""
    publisher_ = PUBLISHERS.get(channel["provider_identifier"])
    if publisher_ is None:
        return None
    if not publisher_.threads and len(post["values"]) > 1:
        return (f"{publisher_.label} publishes each post on its own and has no replies or comments: send one "
                f"value, not {len(post['values'])} (the thread parts would never be published)")
    return publisher_.post_problem(channel, post["values"], post["settings"])


def validate_create_post(body: Any, find_channel: Callable[[str], Optional[dict]]) -> dict:
    """Validate a POST /public/v1/posts body exactly as Postiz does and return the plan to store; raises ApiError.

    `find_channel(id)` returns the caller's organization's channel (deleted ones too) as
    {"id", "name", "provider_identifier", "additional_settings": list, "disabled", ...}, or None.
    Errors, in Postiz's order: 400 "All posts must have an integration id" / "Integration with id X not
    found"; the ValidationPipe's 400 array of "path message"; a channel's PostValidationException."""
    body = body if isinstance(body, dict) else {}
    posts = body.get("posts")
    channels = _channels_of(posts, find_channel)
    errors: list = []
    # Postiz validates every body as type "schedule", so provider settings are checked even for drafts.
    top = _checked(_CREATE_POST_FIELDS, body, "", errors)
    if not posts:
        errors.append("posts must contain at least 1 elements")
    checked_posts = _checked_posts(posts, channels, errors)
    if errors:
        raise bad_request(errors)
    post_type = body.get("type") if body.get("type") in ("draft", "now", "update") else "schedule"
    date = utc_now_iso()[:17] + "00.000Z" if post_type == "now" else _parse_iso_date(top["date"])
    plan_posts = [{"integration": channel, "group": post.get("group"), "settings": post["settings"],
                   "values": _planned_values(post["value"])} for post, channel in zip(checked_posts, channels)]
    _check_before_publishing(post_type, plan_posts, channels)
    inter = top.get("inter")
    return {"type": post_type, "date": date, "shortLink": top["shortLink"],
            "tags": [tag["label"] for tag in top["tags"]], "inter": int(inter) if inter else None,
            "republish": body.get("republish") is True,
            "creationMethod": "CLI" if body.get("creationMethod") == "CLI" else "API", "posts": plan_posts}


# =============================================================================
# 8. API: routing and the public API handlers
# =============================================================================

class Route(NamedTuple):
    handler: Callable[..., Union[Response, Awaitable[Response]]]
    authenticated: bool  # by the organization's key or a web session, before the handler runs
    # Routes that take credentials their own way (the MCP key in the URL) check them from the head with
    # `authenticate(request) -> organization id or the refusal`, so a refused body is never read.
    authenticate: Optional[Callable[["Request"], Union[str, Response]]] = None
    body_limit: Optional[int] = None  # a smaller limit than RUSTIZ_MAX_BODY for this route's bodies
    too_large: Optional[Callable[["Request", int, int], Response]] = None  # the route's own 413 (MCP's JSON-RPC)


class StreamingRoute:
    __slots__ = ("body_limit", "open_sink")

    def __init__(self, body_limit: int, open_sink: Callable[[Request, str], BodySink]):
        self.body_limit = body_limit
        self.open_sink = open_sink


def _pattern_family(path: str) -> str:
    """A route template's first two segments when both are literal, else its first (App._find_routes looks
    for a request's path under its first two segments, then under its first)."""
    segments = path.strip("/").split("/")
    if len(segments) > 2 and not segments[0].startswith(":") and not segments[1].startswith(":"):
        return f"{segments[0]}/{segments[1]}"
    return segments[0]


class App:
    """The routing table, and the order every request goes through: method, limits, route, auth, handler."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store
        self.guard = Guard(config, store)
        self.routes: dict = {}  # path -> {method: Route}, for paths without parameters
        self.patterns: dict = {}  # path template -> (compiled pattern, {method: Route})
        # The same patterns by their literal leading segments ("public/v1", "mcp"), so that a path is
        # matched against its own family only: /mcp/<key> need not fail thirty API patterns first.
        self.pattern_families: dict = {}
        self.streaming_paths: dict = {}  # POST path -> StreamingRoute, for routes that take their body in pieces
        self.files: dict = {}  # path -> {"GET": Route}: the web app's files, which are not API routes
        self.add("GET", "/health", self.health, authenticated=False)
        self.add_api("GET", "/is-connected", self.is_connected)
        self.add_api("GET", "/integrations", self.integrations)
        # Every call to another server (channel connect, helper tools, upload-from-url) goes through this
        # client and its address guard; its threads start on the first call: most processes never make one.
        self.http = HttpClient(config.fetch_allow)
        self.channels_api = ChannelsApi(store, self.http)
        self.channels_api.register(self)
        OrganizationApi(config, store, self.guard).register(self)
        WebhooksApi(store, self.http).register(self)
        self.posts_api = PostsApi(store, config.publish_grace_seconds)
        self.posts_api.register(self)
        self.media_api = MediaApi(config, store, self.http)
        self.media_api.register(self)
        OpenApiRoute(config).register(self)
        McpServer(self).register(self)  # after the APIs: its tools call them
        WebApp(config, store, self.guard).register(self)

    def add(self, method: str, path: str, handler: Callable, authenticated: bool = True,
            authenticate: Optional[Callable] = None, body_limit: Optional[int] = None,
            too_large: Optional[Callable] = None) -> None:
        """Register `handler`; a segment written `:name` matches any one segment, given as request.params[name]."""
        route = Route(handler, authenticated, authenticate, body_limit, too_large)
        if ":" not in path:
            self.routes.setdefault(path, {})[method] = route
            return
        if path not in self.patterns:
            regex = "".join(f"/(?P<{segment[1:]}>[^/]+)" if segment.startswith(":") else "/" + re.escape(segment)
                            for segment in path.strip("/").split("/"))
            self.patterns[path] = (re.compile(regex), {})
            self.pattern_families.setdefault(_pattern_family(path), []).append(self.patterns[path])
        self.patterns[path][1][method] = route

    def add_file(self, path: str, handler: Callable) -> None:
        """A file of the web app at exactly `path` (GET and HEAD, no key): kept apart from the API's routes."""
        self.files[path] = {"GET": Route(handler, False)}

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

    def open_body_sink(self, request: StreamedRequest) -> BodySink:
        """The sink for the body of an admitted request on a streaming route."""
        return self.streaming_paths[request.path].open_sink(request, request.organization)

    def _find_routes(self, request: Request) -> Optional[dict]:
        routes = self.routes.get(request.path) or self.files.get(request.path)
        if routes is not None:
            return routes
        segments = request.path.split("/", 3)  # "", first, second, rest
        families = ("/".join(segments[1:3]), segments[1]) if len(segments) > 2 else (segments[-1],)
        for family in families:
            for pattern, methods in self.pattern_families.get(family, ()):
                match = pattern.fullmatch(request.path)
                if match is not None:
                    from urllib.parse import unquote
                    request.params = {name: unquote(value) for name, value in match.groupdict().items()}
                    return methods
        return None

    def handle(self, request: Request) -> Union[Response, Awaitable[Response]]:
        """Admit `request`, then answer it (a connection calls the two apart: admit as soon as the head is in)."""
        refused = self.admit(request)
        return refused if refused is not None else self.respond(request)

    def admit(self, request: Request) -> Optional[Response]:
        """None when `request` goes on, decided from its head alone (method, limits, route, key), with its
        route and organization recorded on it for `respond`; else its answer (405, 429, 404, 401...)."""
        try:
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
                if request.path == "*":  # OPTIONS * (the parser lets no other method through with it)
                    return Response(204, b"", "", [("Allow", ", ".join(KNOWN_METHODS))])
                return json_response({"message": f"Cannot {method} {request.target}", "error": "Not Found",
                                      "statusCode": 404}, 404, rate_headers)
            route = routes.get("GET" if method == "HEAD" else method)
            if route is None:
                allowed = sorted(routes) + (["HEAD"] if "GET" in routes else [])
                if method == "OPTIONS":
                    return Response(204, b"", "", [("Allow", ", ".join(allowed + ["OPTIONS"]))])
                return self._method_not_allowed(request, allowed)
            organization = None
            if route.authenticated:
                organization = self.guard.organization(request)
            elif route.authenticate is not None:
                organization = route.authenticate(request)
            if type(organization) is Response:
                return organization
            request.route, request.organization, request.rate_headers = route, organization, rate_headers
            return None
        except ApiError as error:
            return error.response()
        except Exception:
            return internal_error_response()

    def respond(self, request: Request) -> Union[Response, Awaitable[Response]]:
        """The answer to an admitted request, body and all."""
        try:
            if request.route.authenticated:
                try:
                    response = request.route.handler(request, request.organization)
                except ApiError as refused:  # a refused create post still shows what it cost, as in Postiz
                    response = refused.response()
            else:
                response = request.route.handler(request)
            if request.rate_headers:
                response.headers.extend(request.rate_headers)
            return response
        except ApiError as error:
            return error.response()
        except Exception:
            return internal_error_response()

    @staticmethod
    def _method_not_allowed(request: Request, allowed: tuple | list) -> Response:
        refused = ("rustiz is not a proxy: CONNECT is not supported" if request.method == "CONNECT"
                   else f"{request.method} is not allowed on {request.path}")
        return json_response({"statusCode": 405, "error": "Method Not Allowed",
                              "message": f"{refused}; use {', '.join(allowed)}"}, 405, [("Allow", ", ".join(allowed))])

    def housekeeping(self, loop: asyncio.AbstractEventLoop) -> None:
        """Runs in the primary worker only: forget rate-limit windows and idempotency keys that have ended,
        and uploads abandoned by a crash."""
        try:
            self.store.forget_expired_rate_limits(time.time(), API_LIMIT_WINDOW_SECONDS)
            self.store.forget_expired_idempotency_keys(time.time())
        except sqlite3.Error as error:
            log(f"housekeeping failed, will retry: {error}")
        remove_abandoned_uploads(self.config.uploads, time.time() - ABANDONED_UPLOAD_SECONDS)
        loop.call_later(300, self.housekeeping, loop)

    # --- handlers ---------------------------------------------------------------

    def health(self, request: Request) -> Response:
        problem = self.store.current_write_problem()
        if problem is not None:
            return service_unavailable(problem, 30)
        return Response(200, b"ok", "text/plain; charset=utf-8")

    @staticmethod
    def is_connected(request: Request, organization_id: str) -> Response:
        return json_response({"connected": True})

    def integrations(self, request: Request, organization_id: str) -> Response:
        group = request.query.get("group") if request.query_string else None
        return json_response(self.store.integrations(organization_id, group or None))


class ChannelsApi:
    """What clients ask about a channel before posting (settings schema, helper tools) and the groups."""

    def __init__(self, store: Store, http: "HttpClient"):
        self.store = store
        self.http = http

    def register(self, app: App) -> None:
        app.add_api("GET", "/integration-settings/:id", self.integration_settings)
        app.add_api("POST", "/integration-trigger/:id", self.integration_trigger)
        app.add_api("GET", "/groups", self.groups)
        app.add_api("POST", "/integrations", self.add_channel)

    def _channel(self, request: Request, organization_id: str) -> dict:
        channel = self.store.channel(organization_id, request.params["id"])
        if channel is None:  # another organization's channel too: its existence is not revealed
            raise ApiError(404, {"msg": "Integration not found"})
        return channel

    def integration_settings(self, request: Request, organization_id: str) -> Response:
        channel = self._channel(request, organization_id)
        spec = PROVIDERS.get(channel["provider_identifier"])
        if spec is None:  # a provider this rustiz does not know (a newer Postiz's, say): Postiz's empty answer
            return json_response({"output": {"rules": "", "maxLength": 0, "settings": {}, "tools": []}})
        return json_response({"output": {
            "rules": spec.rules, "maxLength": provider_max_length(spec.identifier, channel["additional_settings"]),
            "settings": spec.settings, "tools": spec.tools}})

    async def integration_trigger(self, request: Request, organization_id: str) -> Response:
        channel = self._channel(request, organization_id)
        if channel["provider_identifier"] not in PROVIDERS:
            raise ApiError(404, {"msg": "Integration provider not found"})
        body = request.json()  # a body that is not JSON is still the caller's mistake (400), before the tool lookup
        body = body if isinstance(body, dict) else {}
        output = await self.run_tool(channel, body.get("methodName"), body.get("data"))
        return json_response({"output": output})

    async def run_tool(self, channel: dict, method_name: Any, data: Any) -> Any:
        """A provider helper tool of the channel (one of the caller's, from Store.channel); raises ApiError.

        For POST /integration-trigger/:id and MCP's triggerTool alike."""
        publisher_ = PUBLISHERS.get(channel["provider_identifier"])
        if publisher_ is None or not isinstance(method_name, str):
            raise ApiError(404, {"msg": "Tool not found"})
        credentials, session = self.store.channel_secrets(channel["id"])
        target = Channel(channel["id"], channel["name"], credentials, session, self.http,
                         lambda new_session: self.store.save_channel_session(channel["id"], new_session))
        try:
            output = await publisher_.run_tool(target, method_name, data if isinstance(data, dict) else {})
        except LookupError:
            raise ApiError(404, {"msg": "Tool not found"}) from None
        except NeedsReconnect:
            self.store.mark_refresh_needed(channel["id"])
            raise ApiError(401, {"msg": "Channel disconnected due to expired token"}) from None
        except AddressNotAllowed as refused:  # not the platform's failure: the operator's allow-list decides
            raise nest_error(400, f"{publisher_.label} may not be reached for {method_name}: {refused.message}") from None
        except PublishError as failed:
            raise nest_error(502, f"{publisher_.label} could not answer {method_name}: {failed.message}") from None
        return output

    def groups(self, request: Request, organization_id: str) -> Response:
        return json_response(self.store.customers(organization_id))

    async def add_channel(self, request: Request, organization_id: str) -> Response:
        """rustiz: connect a channel with credentials (Postiz has only the OAuth dance of GET /social)."""
        channel = await connect_channel(self.store, organization_id, _json_object(request), self.http)
        return json_response(channel, 201)


async def verified_channel(channel: "NewChannel", name_given: bool, http: HttpClient) -> "NewChannel":
    """The channel as its platform knows it: credentials checked, the real account read; raises ApiError."""
    publisher_ = PUBLISHERS[channel.provider]  # every provider of CREDENTIAL_SPECS has one
    probe = Channel("", channel.account.name, channel.credentials, None, http)
    try:
        connected = await publisher_.connect(probe)
    except AddressNotAllowed as refused:
        raise nest_error(400, f"Cannot connect a {publisher_.label} channel: {refused.message}") from None
    except (Rejected, NeedsReconnect) as refused:
        status = f" (HTTP {refused.status})" if refused.status else ""
        raise nest_error(400, f"{publisher_.label} refused these credentials{status}: {refused.message}") from None
    except PublishError as failed:
        raise nest_error(502, f"could not check these credentials with {publisher_.label}, so nothing was "
                              f"saved: {failed.message}; try again") from None
    account = connected.account._replace(name=channel.account.name) if name_given else connected.account
    return channel._replace(account=account, session=connected.session, limits=connected.limits)


async def connect_channel(store: Store, organization_id: str, body: Any, http: HttpClient) -> dict:
    """Validate, verify with the platform and store a channel added with credentials, for the API and the
    CLI alike; raises ApiError."""
    channel = validate_new_channel(body)
    channel = await verified_channel(channel, isinstance(body, dict) and body.get("name") is not None, http)
    try:
        return store.add_channel(organization_id, channel)
    except ChannelAlreadyAdded as duplicate:
        raise nest_error(409, f"this {channel.provider} account is already the channel \"{duplicate.name}\" "
                              f"({duplicate.channel_id}) of this organization; delete that channel first "
                              f"(DELETE /public/v1/integrations/{duplicate.channel_id}) to add it again") from None


class WebhooksApi:
    """rustiz: an organization's outgoing webhooks. Each URL gets a signed JSON event (post.published,
    post.failed) for the posts of the channels it covers: the hook for n8n, Zapier and the like."""

    def __init__(self, store: Store, http: "HttpClient"):
        self.store = store
        self.http = http  # its address guard checks a URL when it is registered (and at each delivery)

    def register(self, app: "App") -> None:
        app.add_api("GET", "/webhooks", self.list_webhooks)
        app.add_api("POST", "/webhooks", self.create)
        app.add_api("DELETE", "/webhooks/:id", self.delete)

    def list_webhooks(self, request: Request, organization_id: str) -> Response:
        return json_response(self.store.webhooks(organization_id))

    async def create(self, request: Request, organization_id: str) -> Response:
        body = _json_object(request)
        problems = [f"url {problem}" for problem in [_url_problem(body.get("url"), ("http", "https"))] if problem]
        problems += [problem for problem in (_optional_text_problem(body, "name"),) if problem]
        secret = body.get("secret")
        if secret is not None and _text_problem(secret):
            problems.append(f"secret {_text_problem(secret)}")
        channel_ids, channel_problems = self._channel_ids(organization_id, body.get("integrations", []))
        if problems or channel_problems:
            raise bad_request(problems + channel_problems)
        try:
            await self.http.check_url(body["url"])
        except AddressRefused as refused:
            raise bad_request(f"url cannot receive webhooks: {refused}") from None
        name = body["name"].strip() if body.get("name") is not None else f"Webhook to {_url_host(body['url'])}"
        return json_response(self.store.create_webhook(organization_id, name, body["url"], channel_ids, secret), 201)

    def _channel_ids(self, organization_id: str, integrations: Any) -> tuple:
        """The channel ids a webhook covers (Postiz's [{"id"}] or plain ids; none = every channel), and problems."""
        if not isinstance(integrations, list):
            return [], ["integrations must be an array of channel ids (empty: every channel)"]
        ids, problems = [], []
        for index, item in enumerate(integrations):
            channel_id = item.get("id") if isinstance(item, dict) else item
            if not isinstance(channel_id, str) or self.store.channel(organization_id, channel_id) is None:
                problems.append(f"integrations.{index} is not a channel of this organization: "
                                f"{json.dumps(channel_id)[:100]}")
            else:
                ids.append(channel_id)
        return ids, problems

    def delete(self, request: Request, organization_id: str) -> Response:
        if not self.store.delete_webhook(organization_id, request.params["id"]):
            raise not_found(f"No webhook {request.params['id']} in this organization")
        return json_response({"deleted": True})


class OrganizationApi:
    """rustiz: the caller's organization, its IANA timezone (posting slots are local times in it), its key."""

    def __init__(self, config: Config, store: Store, guard: Guard):
        self.config = config
        self.store = store
        self.guard = guard

    def register(self, app: "App") -> None:
        app.add_api("GET", "/organization", self.show)
        app.add_api("PUT", "/organization", self.update)
        app.add_api("POST", "/organization/api-key", self.rotate_key)

    def rotate_key(self, request: Request, organization_id: str) -> Response:
        """A new API key, answered once (only its hash is kept); the old one stops working at once, in every
        worker, and so do the web sessions signed in with it. A browser that rotated with such a session gets
        a new one for the new key (a cookie, and the csrfToken in the answer). When the config file holds the
        old key, it gets the new one."""
        key = new_api_key()
        old_hash = self.store.api_key_hash(organization_id)
        self.store.set_api_key_hash(organization_id, hash_api_key(key))
        saved_key = read_config_file(self.config.config_path).get("RUSTIZ_API_KEY", "")
        if saved_key and hash_api_key(saved_key) == old_hash:
            update_config_value(self.config.config_path, "RUSTIZ_API_KEY", key)
        log(f"new API key for organization {self.store.organization(organization_id)['name']} "
            "(rotated through the API); the old key and the web sessions signed in with it no longer work")
        answer, headers = {"apiKey": key}, [("Cache-Control", "no-store")]
        token = None if self.guard.presented_key(request) else session_cookie(request)
        if token and self.store.web_session(hash_api_key(token)) is None:  # it was signed in with the old key
            cookie, answer["csrfToken"] = start_web_session(self.store, self.guard, request, organization_id,
                                                            api_key_hash=hash_api_key(key))
            headers.append(("Set-Cookie", cookie))
        return json_response(answer, 201, headers)

    def show(self, request: Request, organization_id: str) -> Response:
        return json_response(self.store.organization(organization_id))

    def update(self, request: Request, organization_id: str) -> Response:
        changes = validate_organization_changes(_json_object(request))
        self.store.update_organization(organization_id, **changes)
        return json_response(self.store.organization(organization_id))


def validate_channel_changes(body: dict) -> dict:
    """The changes of PUT /integrations/:id as Store.update_channel takes them; raises a 400 listing problems."""
    allowed = ("name", "disabled", "postingTimes", "customer")
    problems = [f"property {name} should not exist (a channel takes {', '.join(allowed)})"
                for name in body if name not in allowed]
    problems += [problem for problem in (_optional_text_problem(body, "name"),) if problem]
    if "disabled" in body and not isinstance(body["disabled"], bool):
        problems.append("disabled must be a boolean value")
    times = body.get("postingTimes")
    if "postingTimes" in body and not (isinstance(times, list) and all(
            isinstance(item, dict) and set(item) == {"time"} and type(item["time"]) is int and 0 <= item["time"] < 1440
            for item in times)):
        problems.append("postingTimes must be a list of {\"time\": minutes after midnight, 0 to 1439}")
    customer = body.get("customer")
    if customer not in (None, "") and _text_problem(customer):  # "" or null: no group
        problems.append(f"customer {_text_problem(customer)}")
    if problems:
        raise bad_request(problems)
    changes = {}
    if body.get("name") is not None:
        changes["name"] = body["name"].strip()
    if "disabled" in body:
        changes["disabled"] = int(body["disabled"])
    if "postingTimes" in body:
        changes["posting_times"] = json.dumps(sorted(times, key=lambda item: item["time"]), separators=(",", ":"))
    if "customer" in body:
        changes["customer"] = (body["customer"] or "").strip()
    return changes


def timezone_problem(name: str) -> Optional[str]:
    """Why `name` is not an IANA timezone this machine knows (None when it is one)."""
    if name == "UTC":
        return None
    # Files in the zoneinfo directory that are no zone names: "localtime" would be whatever zone the
    # server's machine is in, and the posix/ and right/ trees are copies under other names.
    if re.match(r"(?:localtime|posixrules|posix/|right/)", name):
        return f"timezone {name!r} is not an IANA timezone name; use one like Europe/Paris, America/New_York or UTC"
    try:
        from zoneinfo import ZoneInfo
        ZoneInfo(name)
    except ImportError:
        return "timezones other than UTC need Python's zoneinfo module (Python 3.9 or newer)"
    except (ValueError, OSError, KeyError):  # ZoneInfoNotFoundError is a KeyError; "../x" is a ValueError
        return (f"timezone {name!r} is not an IANA timezone name this machine knows; use one like "
                "Europe/Paris, America/New_York or UTC (install the tzdata package if none work)")
    return None


def validate_organization_changes(body: dict) -> dict:
    """The {name?, timezone?} of PUT /organization (`rustiz org timezone` too), checked; raises ApiError (400)."""
    problems = [f"property {name} should not exist (send name and/or timezone)" for name in body
                if name not in ("name", "timezone")]
    changes = {}
    for field in ("name", "timezone"):
        value = body.get(field)
        if value is None:
            continue
        problem = _text_problem(value)
        if problem is not None:
            problems.append(f"{field} {problem}")
        elif field == "timezone" and timezone_problem(value.strip()):
            problems.append(timezone_problem(value.strip()))
        else:
            changes[field] = value.strip()
    if problems:
        raise bad_request(problems)
    return changes


# --- posts, notifications, slots, analytics -------------------------------------------------------

POST_NOT_FOUND = "Post not found"
INTEGRATION_NOT_FOUND = "Integration not found"
NOTIFICATIONS_PER_PAGE = 100
MAX_NOTIFICATIONS_PAGE = 1_000_000  # 100 million notifications: far beyond what an organization keeps
SLOT_SEARCH_DAYS = 400


def postiz_state(state: str) -> str:
    """Postiz knows four states; a post rustiz's scheduler is publishing right now is still QUEUE there."""
    return "QUEUE" if state == "PUBLISHING" else state


def _json_object(request: Request) -> dict:
    """The body as a JSON object; other JSON (a list, a number) counts as an empty object, as Nest's DTOs do."""
    body = request.json()
    return body if isinstance(body, dict) else {}


def _load_json(text: Optional[str], default: Any) -> Any:
    return default if text is None else json.loads(text)


def _being_published(post_id: str) -> ApiError:
    return nest_error(409, f"Post {post_id} is being published right now; wait until it is PUBLISHED or ERROR "
                           f"(GET /posts/{post_id}), then change it")


def _post_view(post: dict) -> dict:
    """One post in rustiz's own shape: JSON columns decoded, the real state (PUBLISHING by name)."""
    return {"id": post["id"], "group": post["group"], "parentPostId": post["parentPostId"], "state": post["state"],
            "publishDate": post["publishDate"], "content": post["content"], "image": _load_json(post["image"], []),
            "settings": _load_json(post["settings"], {}), "delay": post["delay"],
            "intervalInDays": post["intervalInDays"], "creationMethod": post["creationMethod"],
            "releaseId": post["releaseId"], "releaseURL": post["releaseURL"], "error": post["error"],
            "createdAt": post["createdAt"], "updatedAt": post["updatedAt"]}


def _listing_item(post: dict, tags: list) -> dict:
    """A root post as GET /posts lists it in Postiz: `settings` stays the raw JSON string."""
    return {"id": post["id"], "content": post["content"], "publishDate": post["publishDate"],
            "releaseURL": post["releaseURL"], "releaseId": post["releaseId"], "state": postiz_state(post["state"]),
            "intervalInDays": post["intervalInDays"], "group": post["group"],
            "creationMethod": post["creationMethod"], "settings": post["settings"], "tags": tags,
            "integration": post["integration"]}


# --- recurring posts: every n days at the same local time in the organization's timezone --------------------

# What the occurrences of recurring posts may add to one listing: building and encoding the largest such
# answer holds the event loop (every other request) for about a tenth of a second on a small machine.
MAX_LISTED_OCCURRENCES = 10_000
MAX_LISTED_OCCURRENCE_BYTES = 8 * 1024 * 1024


def zoned_instant(local: "datetime.datetime", zone: "datetime.tzinfo") -> "datetime.datetime":
    """The UTC instant of a local wall-clock time (naive) in `zone`. A time the clocks pass twice (fall back)
    is the first of the two; a time they skip (spring forward) becomes the first minute after the skip.
    Raises OverflowError at the calendar's ends."""
    import datetime
    utc = datetime.timezone.utc
    instant = local.replace(tzinfo=zone).astimezone(utc)  # fold=0: the earlier of two
    if instant.astimezone(zone).replace(tzinfo=None) == local:
        return instant
    # A skipped time: until the jump the clock reads less than `local`, from the jump on more. fold=1
    # reads it with the offset after the jump, an instant before the jump: search the minutes in between.
    before = local.replace(tzinfo=zone, fold=1).astimezone(utc).replace(second=0, microsecond=0)
    minute = datetime.timedelta(minutes=1)
    low, high = 0, -(-(instant - before) // minute)  # `before` reads less; `before + high` minutes reads more
    while high - low > 1:
        middle = (low + high) // 2
        if (before + middle * minute).astimezone(zone).replace(tzinfo=None) > local:
            high = middle
        else:
            low = middle
    return before + high * minute


class Recurrence:
    """A post repeating every `every_days` days at the local time its anchor has in the organization's
    timezone: occurrence k (from 0) is on the local day anchor + k * every_days, at that time of day, so
    daylight-saving changes do not move it (zoned_instant says what a skipped or doubled time becomes).
    The occurrences end with the calendar, at 9999-12-31."""
    __slots__ = ("first_day", "time_of_day", "every_days", "zone")

    def __init__(self, anchor: "datetime.datetime", every_days: int, zone: "datetime.tzinfo"):
        import datetime
        try:
            local = anchor.astimezone(zone)
        except OverflowError:  # an anchor in the first or last hours of the calendar: counted in UTC
            zone, local = datetime.timezone.utc, anchor
        self.first_day, self.time_of_day = local.date(), local.time().replace(tzinfo=None)
        self.every_days, self.zone = every_days, zone

    def at(self, index: int) -> Optional["datetime.datetime"]:
        """Occurrence `index` as a UTC datetime, or None past the end of the calendar."""
        import datetime
        try:
            day = self.first_day + datetime.timedelta(days=index * self.every_days)
            return zoned_instant(datetime.datetime.combine(day, self.time_of_day), self.zone)
        except OverflowError:
            return None

    def first_index_from(self, moment: "datetime.datetime") -> int:
        """The first occurrence at or after `moment` (its at() may be None: none is left)."""
        # A local day is within a day of the UTC one, so the estimate is off by a step or two at most.
        index = max(0, (moment.date() - self.first_day).days // self.every_days - 1)
        while index > 0 and not self._earlier(index - 1, moment):
            index -= 1
        while self._earlier(index, moment):
            index += 1
        return index

    def last_index_until(self, moment: "datetime.datetime") -> int:
        """The last occurrence at or before `moment` (-1: none)."""
        index = self.first_index_from(moment)
        return index if self.at(index) == moment else index - 1

    def next_after(self, moment: "datetime.datetime") -> Optional["datetime.datetime"]:
        """The first occurrence later than `moment`, or None when the calendar ends first."""
        return self.at(self.last_index_until(moment) + 1)

    def indexes(self, after: "datetime.datetime", start: "datetime.datetime", end: "datetime.datetime") -> range:
        """The occurrences later than `after` within [start, end], counted without computing each one."""
        return range(max(self.last_index_until(after) + 1, self.first_index_from(start)),
                     self.last_index_until(end) + 1)

    def _earlier(self, index: int, moment: "datetime.datetime") -> bool:
        occurrence = self.at(index)
        return occurrence is not None and occurrence < moment


def recurrence_of(publish_date: str, anchor: Optional[str], every_days: int,
                  zone: "datetime.tzinfo") -> Recurrence:
    """The recurrence of a stored post: counted from its anchor (posts saved before anchors were kept:
    from their publish date)."""
    return Recurrence(parse_iso_instant(anchor) or parse_iso_instant(publish_date), every_days, zone)


def _posting_minutes(posting_times: str) -> list:
    """Minutes after local midnight from a channel's postingTimes JSON ([{"time": 120}, ...]), sorted."""
    try:
        entries = json.loads(posting_times)
    except ValueError:
        return []
    if not isinstance(entries, list):
        return []
    minutes = {entry.get("time") for entry in entries if isinstance(entry, dict)}
    return sorted(minute for minute in minutes if type(minute) is int and 0 <= minute < 24 * 60)


def _timezone(name: str) -> "datetime.tzinfo":
    """The organization's IANA zone (posting slots, recurring posts); UTC needs no tz database, and an unknown
    name falls back to UTC."""
    import datetime
    if name == "UTC":
        return datetime.timezone.utc
    try:
        from zoneinfo import ZoneInfo
        return ZoneInfo(name)
    except (ImportError, ValueError, OSError, KeyError):  # ZoneInfoNotFoundError is a KeyError
        log(f"unknown organization timezone {name!r}; using UTC for posting slots and recurring posts")
        return datetime.timezone.utc


def _too_many_occurrences(count: int, size: int, start: "datetime.datetime", end: "datetime.datetime",
                          per_day: list) -> ApiError:
    """The answer for a window whose recurring posts repeat more than one answer may list, with a window short
    enough: `per_day` is [occurrences a day, their bytes a day, posts, their bytes] (a window of d days holds
    at most d occurrences a day plus one more of each post)."""
    rate, weight, posts, posts_size = per_day
    days = min((MAX_LISTED_OCCURRENCES - posts) / rate, (MAX_LISTED_OCCURRENCE_BYTES - posts_size) / weight)
    shorter = (f"ask for a shorter window: at most {math.floor(days)} days at a time" if days >= 2 else
               f"ask for a shorter window: at most {math.floor(days * 24)} hours at a time" if days * 24 >= 1 else
               "list fewer channels at a time (customer=...)")
    return bad_request(
        f"Between startDate {iso_ms(start)} and endDate {iso_ms(end)} recurring posts repeat {count} times (about "
        f"{math.ceil(size / 2**20)} MiB), more than one answer lists: at most {MAX_LISTED_OCCURRENCES} occurrences "
        f"and {MAX_LISTED_OCCURRENCE_BYTES // 2**20} MiB of them. To see them all, {shorter}")


_PAST_DATE_REMEDY = 'give a later date, type "now" to publish at once, or type "draft" to keep it unscheduled'


class PostsApi:
    """The posts routes (Postiz's and rustiz's additions), notifications, posting slots and analytics.

    Every lookup is scoped by the caller's organization: another organization's id answers exactly
    like an id that never existed."""

    def __init__(self, store: Store, publish_grace_seconds: float):
        self.store = store
        self.publish_grace_seconds = publish_grace_seconds

    def refuse_missed_date(self, date: str, what: str = "date", remedy: str = _PAST_DATE_REMEDY) -> None:
        """A post about to be queued goes out at once when its date passed less than PUBLISH_GRACE ago (as in
        Postiz, and for clients that send the current time); dated earlier, the scheduler would only skip
        it, so it is refused now (400)."""
        if date < iso_at(time.time() - self.publish_grace_seconds):
            raise bad_request(f"{what} {date} is in the past, more than the {_duration(self.publish_grace_seconds)} "
                              f"grace period (PUBLISH_GRACE) ago, so the post would never be sent: {remedy}")

    def register(self, app: "App") -> None:
        app.add_api("GET", "/posts", self.list_posts)
        app.add_api("POST", "/posts", self.create_posts)
        # Registered before /posts/:id/... so that /posts/group/<x> always means a group.
        app.add_api("DELETE", "/posts/group/:group", self.delete_group)
        app.add_api("GET", "/posts/:id", self.get_post)
        app.add_api("PUT", "/posts/:id", self.edit_post)
        app.add_api("DELETE", "/posts/:id", self.delete_post)
        app.add_api("PUT", "/posts/:id/settings", self.update_settings)
        app.add_api("PUT", "/posts/:id/status", self.change_status)
        app.add_api("PUT", "/posts/:id/release-id", self.link_release)
        app.add_api("GET", "/posts/:id/missing", self.missing_releases)
        app.add_api("POST", "/posts/:id/retry", self.retry)
        app.add_api("GET", "/notifications", self.notifications)
        app.add_api("GET", "/find-slot/:id", self.find_slot)
        app.add_api("GET", "/analytics/post/:postId", self.post_analytics)
        app.add_api("GET", "/analytics/:integration", self.channel_analytics)
        app.add_api("DELETE", "/integrations/:id", self.delete_channel)
        app.add_api("GET", "/integrations/:id", self.show_channel)
        app.add_api("PUT", "/integrations/:id", self.update_channel)

    def _post_or_404(self, organization_id: str, post_id: str) -> dict:
        post = self.store.post(organization_id, post_id)
        if post is None:
            raise not_found(POST_NOT_FOUND)
        return post

    def list_posts(self, request: Request, organization_id: str) -> Response:
        """GET /posts: root posts in [startDate, endDate], recurring ones once per occurrence in the window.

        Postiz also lists a recurring post's occurrences before startDate; rustiz keeps to the window, and
        to MAX_LISTED_OCCURRENCES of them (a 400 says how to narrow a window that holds more)."""
        query = request.query
        return json_response({"posts": self.listing(organization_id, query.get("startDate"), query.get("endDate"),
                                                    query.get("customer") or None)})

    def listing(self, organization_id: str, start_text: Any, end_text: Any, customer: Optional[str]) -> list:
        """The items of GET /posts (MCP's postsListTool too); raises ApiError (400) for a date that is not ISO 8601,
        or a window in which recurring posts repeat more than one answer lists."""
        start, end = parse_iso_instant(start_text), parse_iso_instant(end_text)
        if start is None or end is None:
            raise bad_request([f"{name} must be a valid ISO 8601 date string"
                               for name, value in (("startDate", start), ("endDate", end)) if value is None])
        first, last = iso_ms(start), iso_ms(end)
        posts = self.store.root_posts_for_listing(organization_id, first, last, customer)
        tags = self.store.post_tags([post["id"] for post in posts])
        zone = None
        # Each entry: (item, None) for a post listed once, or (item, its occurrences in the window), which
        # are counted (and weighed) before any is computed, so that no answer grows beyond the limits.
        entries, count, size = [], 0, 0
        per_day = [0.0, 0.0, 0, 0]  # occurrences a day, their bytes a day, and each post's one extra: the shorter window
        for post in posts:
            item = _listing_item(post, tags.get(post["id"], []))
            every_days, published = post["intervalInDays"], parse_iso_instant(post["publishDate"])
            if not every_days or every_days < 1 or published is None:  # not recurring: listed when in the window
                if first <= post["publishDate"] <= last:
                    entries.append((item, None))
                continue
            zone = zone or _timezone(self.store.organization_timezone(organization_id))
            series = recurrence_of(post["publishDate"], post["recurrenceAnchor"], every_days, zone)
            # The pending occurrence is the post's own date; the later ones follow the series.
            occurrences = ([published] if start <= published <= end else [], series,
                           series.indexes(published, start, end))
            entries.append((item, occurrences))
            repeats, weight = len(occurrences[0]) + len(occurrences[2]), len(json_dumps(item)) + 60
            count, size = count + repeats, size + repeats * weight
            per_day = [per_day[0] + 1 / every_days, per_day[1] + weight / every_days, per_day[2] + 1,
                       per_day[3] + weight]
        if count > MAX_LISTED_OCCURRENCES or size > MAX_LISTED_OCCURRENCE_BYTES:
            raise _too_many_occurrences(count, size, start, end, per_day)
        listed = []
        for item, occurrences in entries:
            if occurrences is None:
                listed.append(item)
                continue
            pending, series, indexes = occurrences
            listed.extend({**item, "publishDate": iso_ms(moment), "actualDate": item["publishDate"]}
                          for moment in pending + [series.at(index) for index in indexes])
        return listed

    def get_post(self, request: Request, organization_id: str) -> Response:
        """GET /posts/:id (rustiz): the post, its channel and tags, and the thread replies that follow it."""
        return json_response(self._full_view(organization_id, self._post_or_404(organization_id, request.params["id"])))

    def _full_view(self, organization_id: str, post: dict) -> dict:
        thread = self.store.thread(organization_id, post["group"])
        position = next(index for index, part in enumerate(thread) if part["id"] == post["id"])
        channel = self.store.channel_row(organization_id, post["integrationId"])
        view = _post_view(post)
        view["integration"] = {"id": channel["id"], "providerIdentifier": channel["providerIdentifier"],
                               "name": channel["name"], "picture": channel["picture"]}
        view["tags"] = self.store.post_tags([post["id"]]).get(post["id"], [])
        view["thread"] = [_post_view(reply) for reply in thread[position + 1:]]
        return view

    def delete_post(self, request: Request, organization_id: str) -> Response:
        """DELETE /posts/:id: the post's whole group (its thread on that channel); Postiz's body, sic."""
        post = self._post_or_404(organization_id, request.params["id"])
        self.store.delete_group(organization_id, post["group"])
        return json_response({"error": True})

    def delete_group(self, request: Request, organization_id: str) -> Response:
        """DELETE /posts/group/:group: as Postiz, an unknown group is not an error."""
        self.store.delete_group(organization_id, request.params["group"])
        return json_response({"error": True})

    def change_status(self, request: Request, organization_id: str) -> Response:
        """PUT /posts/:id/status {"status": "draft"|"schedule"}: the whole thread becomes DRAFT or QUEUE."""
        status = _json_object(request).get("status")
        if status not in ("draft", "schedule"):
            raise bad_request(["status must be one of the following values: draft, schedule"])
        post = self.store.post(organization_id, request.params["id"])
        if post is None:  # Postiz answers 400 here, not 404
            raise bad_request(POST_NOT_FOUND)
        if post["state"] not in ("QUEUE", "DRAFT"):
            raise bad_request(f"Only scheduled posts that were not published yet (or drafts) can change status; "
                              f"post {post['id']} is {post['state']}"
                              + (" (use POST /posts/:id/retry to try a failed post again)"
                                 if post["state"] == "ERROR" else ""))
        state = "DRAFT" if status == "draft" else "QUEUE"
        thread = self.store.thread(organization_id, post["group"])
        if state == "QUEUE" and post["state"] == "DRAFT":
            # Drafts skip the media and length rules, and may keep a past date; a draft entering the queue
            # must pass them now.
            self._revalidate(organization_id, thread, settings=_load_json(thread[0]["settings"], {}),
                             request_type="update")
            self.refuse_missed_date(thread[0]["publishDate"], f"the date of post {post['id']},",
                                    f'give it a later date first (PUT /posts/{post["id"]} {{"date": "..."}}), '
                                    "then schedule it")
        if not self.store.update_post_fields(organization_id, [part["id"] for part in thread],
                                             only_in_states=("QUEUE", "DRAFT"), state=state):
            raise _being_published(post["id"])
        return json_response({"id": post["id"], "state": state})

    def link_release(self, request: Request, organization_id: str) -> Response:
        """PUT /posts/:id/release-id: tell rustiz which platform post a "missing" release is; the Post row."""
        release_id = _json_object(request).get("releaseId")
        if not isinstance(release_id, str) or not release_id:
            raise bad_request(["releaseId must be a string", "releaseId should not be empty"])
        post = self._post_or_404(organization_id, request.params["id"])
        if post["releaseId"] != "missing":
            raise bad_request(f"Post {post['id']} is not waiting for its release id (releaseId is "
                              f"{_encode_json(post['releaseId'])}); only a post whose releaseId is \"missing\" "
                              f"can be linked to a platform post")
        self.store.update_post_fields(organization_id, [post["id"]], release_id=release_id)
        row = self.store.post(organization_id, post["id"])
        # Postiz's row also has columns rustiz does not keep (titles, the marketplace's); they are empty there too.
        return json_response({**row, "state": postiz_state(row["state"]), "title": None, "description": None,
                              "submittedForOrderId": None, "submittedForOrganizationId": None,
                              "approvedSubmitForOrder": "NO", "lastMessageId": None})

    def missing_releases(self, request: Request, organization_id: str) -> Response:
        """GET /posts/:id/missing: recent platform posts to link a "missing" release to.

        Always [] for now: none of rustiz's providers can list a platform's posts yet, and an empty
        list is what Postiz answers for providers without that ability."""
        self._post_or_404(organization_id, request.params["id"])
        return json_response([])

    def retry(self, request: Request, organization_id: str) -> Response:
        """POST /posts/:id/retry (rustiz): the failed parts of the post's thread go back to the queue."""
        return json_response(self.retry_post(organization_id, request.params["id"]), 201)

    def retry_post(self, organization_id: str, post_id: str) -> dict:
        """The failed parts of the post's thread back in the queue; the post as GET /posts/:id shows it."""
        post = self._post_or_404(organization_id, post_id)
        if not self.store.retry_failed_group(organization_id, post["group"]):
            raise nest_error(409, f"Post {post['id']} is {post['state']}, and nothing in its thread failed; "
                                  f"only a post in ERROR can be retried")
        return self.post_view(organization_id, post["id"])

    def post_view(self, organization_id: str, post_id: str) -> dict:
        """GET /posts/:id's answer (MCP's postGetTool too); raises ApiError 404 for another organization's post."""
        return self._full_view(organization_id, self._post_or_404(organization_id, post_id))

    def notifications(self, request: Request, organization_id: str) -> Response:
        """GET /notifications?page=N: newest first, 100 per page, pages counted from 0."""
        page_text = request.query.get("page", "0").strip()
        if not re.fullmatch(r"[0-9]+", page_text):
            raise bad_request("Validation failed (numeric string is expected)")
        # Measured as text first: int() refuses numbers of more than 4,300 digits.
        if len(page_text.lstrip("0")) > 7 or int(page_text) > MAX_NOTIFICATIONS_PAGE:
            raise bad_request(f"page must be a whole number from 0 to {MAX_NOTIFICATIONS_PAGE} (pages of "
                              f"{NOTIFICATIONS_PER_PAGE} notifications, the newest first)")
        return json_response({**self.notifications_page(organization_id, int(page_text)),
                              "limit": NOTIFICATIONS_PER_PAGE})

    def notifications_page(self, organization_id: str, page: int) -> dict:
        """One page of notifications (a checked page number), for GET /notifications and MCP alike."""
        offset = page * NOTIFICATIONS_PER_PAGE
        items, total = self.store.notifications(organization_id, offset, NOTIFICATIONS_PER_PAGE)
        return {"notifications": items, "total": total, "page": page, "hasMore": offset + len(items) < total}

    def find_slot(self, request: Request, organization_id: str) -> Response:
        """GET /find-slot/:id: the next posting time of the channel, in the future, without a queued post.

        Posting times are minutes after midnight in the organization's timezone. `date` is UTC without
        an offset, as Postiz answers (and as POST /posts reads it back); `localDate` is the same slot in
        `timezone`."""
        import datetime
        channel = self.store.channel_row(organization_id, request.params["id"])
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        if channel["disabled"]:
            raise bad_request(f"Channel {channel['name']} is disabled; enable it before looking for a slot on it")
        minutes = _posting_minutes(channel["postingTimes"])
        if not minutes:
            raise bad_request(f"Channel {channel['name']} has no posting times, so it has no free slot")
        zone_name = self.store.organization_timezone(organization_id)
        zone = _timezone(zone_name)
        now = datetime.datetime.now(datetime.timezone.utc)
        taken = {date[:16] for date in self.store.queued_publish_dates(channel["id"], iso_ms(now)[:16])}
        today = now.astimezone(zone).date()
        for day in range(SLOT_SEARCH_DAYS):
            midnight = datetime.datetime.combine(today + datetime.timedelta(days=day), datetime.time())
            for minute in minutes:
                local = midnight + datetime.timedelta(minutes=minute)
                slot = zoned_instant(local, zone)  # as recurring posts: a skipped time is the minute after the skip
                if slot > now and iso_ms(slot)[:16] not in taken:
                    return json_response({"date": slot.strftime("%Y-%m-%dT%H:%M:00"), "timezone": zone_name,
                                          "localDate": slot.astimezone(zone).strftime("%Y-%m-%dT%H:%M:00")})
        raise nest_error(409, f"Every posting time of channel {channel['name']} in the next {SLOT_SEARCH_DAYS} "
                              f"days already has a queued post")

    # No provider of rustiz reports analytics yet: an empty list, never invented numbers.
    def channel_analytics(self, request: Request, organization_id: str) -> Response:
        if self.store.channel(organization_id, request.params["integration"]) is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        return json_response([])

    def post_analytics(self, request: Request, organization_id: str) -> Response:
        post = self._post_or_404(organization_id, request.params["postId"])
        return json_response({"missing": True} if post["releaseId"] == "missing" else [])

    def show_channel(self, request: Request, organization_id: str) -> Response:
        """GET /integrations/:id (rustiz): the channel's row, with refreshNeeded and postingTimes."""
        channel = self.store.channel_row(organization_id, request.params["id"])
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        return json_response(channel)

    def update_channel(self, request: Request, organization_id: str) -> Response:
        """PUT /integrations/:id (rustiz): {"name"?, "disabled"?, "postingTimes"?, "customer"?} -> the row."""
        changes = validate_channel_changes(_json_object(request))
        channel = self.store.update_channel(organization_id, request.params["id"], changes)
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        return json_response(channel)

    def delete_channel(self, request: Request, organization_id: str) -> Response:
        """DELETE /integrations/:id: the channel and its posts, soft-deleted; the channel's DB row."""
        channel = self.store.delete_channel(organization_id, request.params["id"])
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        return json_response(channel)

    # --- creating and editing posts (validation is validate_create_post's; this is what gets stored) ---------

    def create_posts(self, request: Request, organization_id: str) -> Response:
        """POST /posts: Postiz's CreatePost body -> one thread per channel -> 201 [{postId, integration}].

        With an Idempotency-Key header, a retry within 24 h (same key, same body) gets the first answer
        again and changes nothing; the same key with another body is refused (422)."""
        key = request.headers.get("idempotency-key")
        if key is None:
            return self._create_posts(request, organization_id, None)
        if not key or len(key) > 255:
            raise bad_request("Idempotency-Key must be between 1 and 255 characters long")
        request_hash = _sha256(request.body).hexdigest()
        claim = IdempotentResponse(key, request_hash, 0, b"")
        earlier = self.store.stored_response(organization_id, key)
        if earlier is not None:
            return self._replay(earlier, claim)
        try:
            return self._create_posts(request, organization_id, claim)
        except ApiError as refused:
            # A refused request is answered the same way when retried, so its answer is kept too.
            self.store.remember_response(organization_id, claim._replace(status=refused.status,
                                                                         body=json_dumps(refused.body)))
            raise

    @staticmethod
    def _replay(earlier: IdempotentResponse, claim: IdempotentResponse) -> Response:
        if earlier.request_hash != claim.request_hash:
            raise nest_error(422, f"Idempotency-Key {claim.key!r} was already used in the last 24 hours for a "
                                  f"different request body; send a new key for a new request, or the same "
                                  f"body to get the first answer again")
        return Response(earlier.status, earlier.body, "application/json; charset=utf-8",
                        [("Idempotent-Replayed", "true")])

    def _create_posts(self, request: Request, organization_id: str,
                      claim: Optional[IdempotentResponse]) -> Response:
        plan = validate_create_post(request.json(), lambda channel_id: self.store.channel(
            organization_id, channel_id, include_deleted=True))
        created, body, earlier = self.save_plan(organization_id, plan, claim)
        if earlier is not None:  # a twin request with the same key was saved while this one was validated
            return self._replay(earlier, claim)
        return Response(201, body, "application/json; charset=utf-8")

    def save_plan(self, organization_id: str, plan: dict, claim: Optional[IdempotentResponse] = None) -> tuple:
        """Store what validate_create_post planned (for POST /posts and MCP's schedule tool alike).

        Returns ([{postId, integration}], that list as JSON, the stored answer of an earlier twin request
        with the same Idempotency-Key or None)."""
        threads, replaced_groups = self._thread_rows(organization_id, plan)
        created = [{"postId": thread[0]["id"], "integration": thread[0]["integration_id"]} for thread in threads]
        body = json_dumps(created)
        try:
            earlier = self.store.save_posts(organization_id, threads, replaced_groups, plan["tags"],
                                            claim and claim._replace(status=201, body=body))
        except PostBeingPublished as busy:
            raise _being_published(busy.post_id) from None
        return created, body, earlier

    def _thread_rows(self, organization_id: str, plan: dict, keep_group: Optional[str] = None) -> tuple:
        """The rows to write for a validated plan, and the groups whose leftover posts are to be deleted.

        A value id naming a live post of the organization updates that post in place, and the rest of
        its old group is replaced (a thread edit that drops a reply deletes it); an unknown id is ignored.
        A `group` given in the body soft-deletes that group's posts (Postiz's edit semantics)."""
        wanted = [value["id"] for post in plan["posts"] for value in post["values"] if value.get("id")]
        existing = self.store.posts_by_id(organization_id, wanted) if wanted else {}
        replaced_groups = {post["group"] for post in plan["posts"] if post.get("group")}
        threads, claimed = [], set()
        for post in plan["posts"]:
            current = [existing.get(value.get("id")) if value.get("id") not in claimed else None
                       for value in post["values"]]
            claimed.update(row["id"] for row in current if row)
            self._refuse_unsafe_rewrite(plan, post, current)
            replaced_groups.update(row["group"] for row in current if row)
            state = self._state_after_write(plan["type"], current[0])
            if state == "QUEUE":
                self.refuse_missed_date(plan["date"])
            group, parent, rows = keep_group or new_uuid(), None, []
            for value, row in zip(post["values"], current):
                post_id = row["id"] if row else new_cuid()
                rows.append({"id": post_id, "existing": row is not None, "state": state, "publish_date": plan["date"],
                             "integration_id": post["integration"]["id"], "content": value["content"],
                             "delay": value.get("delay") or 0, "post_group": group, "parent_post_id": parent,
                             "settings": _encode_json(post["settings"]), "image": _encode_json(value["image"]),
                             "creation_method": plan["creationMethod"], "interval_in_days": plan.get("inter")})
                parent = post_id
            threads.append(rows)
        return threads, replaced_groups

    def update_settings(self, request: Request, organization_id: str) -> Response:
        """PUT /posts/:id/settings {"settings": {...}}: merge keys into a main post's settings, re-validated.

        Content, date and group stay; the post is not re-queued. Errors are Postiz's, in its order."""
        body = _json_object(request)
        settings = body.get("settings")
        if not isinstance(settings, dict):
            raise bad_request((["settings should not be null or undefined"] if settings is None else [])
                              + ["settings must be an object"])
        return json_response(self.change_settings(organization_id, request.params["id"], settings))

    def change_settings(self, organization_id: str, post_id: str, settings: dict) -> dict:
        """Merge `settings` into a main post's settings, re-validated; {postId, publishDate}. Raises ApiError."""
        post = self._post_or_404(organization_id, post_id)
        if post["parentPostId"] is not None:
            raise bad_request("This id belongs to a comment, pass the id of the main post")
        if post["state"] not in ("QUEUE", "DRAFT"):
            raise bad_request("Only scheduled posts that were not published yet (or drafts) can be updated")
        if post["state"] == "QUEUE" and post["publishDate"] < utc_now_iso():
            raise bad_request("The publish time of this post already passed, it cannot be updated")
        thread = self.store.thread(organization_id, post["group"])
        merged = {**_load_json(post["settings"], {}), **settings}
        try:
            plan = self._revalidate(organization_id, thread, settings=merged)
        except ApiError as refused:
            raise bad_request(self._settings_problem(refused, thread)) from None
        if not self.store.update_post_fields(organization_id, [part["id"] for part in thread],
                                             only_in_states=("QUEUE", "DRAFT"),
                                             settings=_encode_json(plan["posts"][0]["settings"])):
            raise _being_published(post["id"])
        return {"postId": post["id"], "publishDate": post["publishDate"][:19]}

    def _settings_problem(self, refused: ApiError, thread: list) -> str:
        """Postiz's wording on the settings route: "<channel name>: <what is wrong>"."""
        channel = self.store.channel(thread[0]["organizationId"], thread[0]["integrationId"])
        message = refused.body.get("message") if isinstance(refused.body, dict) else None
        if isinstance(message, list):  # the DTO's "posts.0.settings.<field> <rule>" messages
            message = message[0].split(".settings.", 1)[-1] if message else None
        elif message == "post is too long, please fix it":
            limit = post_length(channel["provider_identifier"], "", channel["additional_settings"])[1]
            message = f"The maximum characters is {limit}"
        return f"{channel['name']}: {message or 'Please fix your settings'}"

    _EDITABLE_FIELDS = ("content", "image", "date", "settings")

    def edit_post(self, request: Request, organization_id: str) -> Response:
        """PUT /posts/:id (rustiz): change content, media, date or settings of a post not published yet.

        Validated like POST /posts; the post keeps its id, group, state, tags and thread. Settings are
        merged into the current ones. A queued post with a date in the past is published at once."""
        body = _json_object(request)
        problems = [f"property {name} should not exist" for name in body if name not in self._EDITABLE_FIELDS]
        for name, wanted, check in (("content", "a string", lambda v: isinstance(v, str)),
                                    ("image", "an array", lambda v: isinstance(v, list)),
                                    ("settings", "an object", lambda v: isinstance(v, dict))):
            if name in body and not check(body[name]):
                problems.append(f"{name} must be {wanted}")
        if "date" in body and parse_iso_instant(body["date"]) is None:
            problems.append("date must be a valid ISO 8601 date string")
        if problems:
            raise bad_request(problems)
        post = self._post_or_404(organization_id, request.params["id"])
        if post["state"] in ("PUBLISHED", "PUBLISHING"):
            raise nest_error(409, f"Post {post['id']} is {post['state']}, so it can no longer be edited. To publish "
                                  f"it again, POST /posts with its id as value[0].id and \"republish\": true")
        thread = self.store.thread(organization_id, post["group"])
        edits = {name: body[name] for name in ("content", "image") if name in body}
        settings = {**_load_json(thread[0]["settings"], {}), **body.get("settings", {})}
        plan = self._revalidate(organization_id, thread, settings=settings, edited_id=post["id"], edits=edits,
                                date=body.get("date"))
        threads, replaced_groups = self._thread_rows(organization_id, plan, keep_group=post["group"])
        tags = self.store.post_tags([thread[0]["id"]]).get(thread[0]["id"], [])
        try:
            self.store.save_posts(organization_id, threads, replaced_groups, [tag["tag"]["name"] for tag in tags])
        except PostBeingPublished as busy:
            raise _being_published(busy.post_id) from None
        return json_response(self._full_view(organization_id, self.store.post(organization_id, post["id"])))

    def _revalidate(self, organization_id: str, thread: list, settings: dict, edited_id: Optional[str] = None,
                    edits: Optional[dict] = None, date: Optional[str] = None,
                    request_type: Optional[str] = None) -> dict:
        """The stored thread, with edits, through validate_create_post as the CreatePost body that would make it.

        By default a draft is checked as a draft, anything else as an update (so its state does not change)."""
        root = thread[0]
        values = [{"id": part["id"], "content": part["content"], "image": _load_json(part["image"], []),
                   "delay": part["delay"], **(edits if part["id"] == edited_id else {})} for part in thread]
        body = {"type": request_type or ("draft" if root["state"] == "DRAFT" else "update"),
                "date": date or root["publishDate"],
                "shortLink": False, "tags": [],
                "posts": [{"integration": {"id": root["integrationId"]}, "value": values, "settings": settings}]}
        if root["intervalInDays"]:
            body["inter"] = root["intervalInDays"]
        plan = validate_create_post(body, lambda channel_id: self.store.channel(organization_id, channel_id))
        plan["creationMethod"] = root["creationMethod"]  # an edit does not change who created the post
        return plan

    @staticmethod
    def _state_after_write(request_type: str, current_root: Optional[dict]) -> str:
        """draft -> DRAFT; update keeps the state (a new post starts queued); anything else -> QUEUE."""
        if request_type == "draft":
            return "DRAFT"
        if request_type == "update" and current_root is not None:
            return current_root["state"]
        return "QUEUE"

    @staticmethod
    def _refuse_unsafe_rewrite(plan: dict, post: dict, current: list) -> None:
        """Postiz's republish guard, and rustiz's refusal to rewrite a post while it is being published."""
        for row in current:
            if row and row["state"] == "PUBLISHING":
                raise _being_published(row["id"])
        root = current[0]
        if (root and root["state"] == "PUBLISHED" and plan["type"] not in ("draft", "update")
                and plan.get("republish") is not True):
            published = root["publishDate"][:10] + " " + root["publishDate"][11:16]
            raise bad_request(
                f"This post was already published on {published} UTC. Saving it this way would publish it again "
                f"to {post['integration']['provider_identifier']}. To edit without republishing, use type 'update'. "
                f"To intentionally publish again, pass republish: true.")
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
        make_private_folders(directory)
        self.temporary_path = os.path.join(directory, os.urandom(16).hex() + ".part")
        self._file = os.fdopen(os.open(self.temporary_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")
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
            self._fail(_cannot_store(self.uploads, error))

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


async def fetch_media(http: "HttpClient", url: str, uploads: str, max_video_bytes: int) -> StagedFile:
    """Download `url` (upload-from-url, or a post's media from the web) into a staged file, through the
    client's address guard, with its size and type checked as it arrives; raises ApiError (400, 413)."""
    problem = _url_problem(url, ("http", "https"))
    if problem:
        raise bad_request(f"upload-from-url: url {problem}")
    timeouts = Timeouts(connect=10, read=FETCH_TIMEOUT_SECONDS, total=FETCH_TIMEOUT_SECONDS)
    try:
        return await http.download(url, lambda head, pieces: _download(head, pieces, uploads, max_video_bytes),
                                   {"Accept": "image/*, video/mp4"}, timeouts, FETCH_MAX_REDIRECTS)
    except (ConnectFailed, NoAnswer) as error:  # AddressRefused too: it names the address and RUSTIZ_FETCH_ALLOW
        raise bad_request(f"upload-from-url: {error}") from None


def _download(head: "HttpReply", pieces: Any, uploads: str, max_video_bytes: int) -> StagedFile:
    """The answer's body into a MediaWriter, which refuses it as soon as its type or size is unacceptable."""
    if head.status != 200:
        import http.client
        raise bad_request(f"upload-from-url: {head.url} answered {head.status} "
                          f"{http.client.responses.get(head.status, '')}".rstrip())
    announced = head.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > max(MAX_IMAGE_BYTES, max_video_bytes):
        raise nest_error(413, f"upload-from-url: the file is {announced} bytes, over the maximum allowed size "
                              f"of {max(MAX_IMAGE_BYTES, max_video_bytes)} bytes (RUSTIZ_MAX_VIDEO_BYTES)")
    try:
        writer = MediaWriter(uploads, max_video_bytes)
    except OSError as error:  # not the remote server's fault: say so, rather than "fetching failed"
        raise _cannot_store(uploads, error) from None
    try:
        for piece in pieces:
            try:
                writer.write(piece)
            except OSError as error:
                raise _cannot_store(uploads, error) from None
        return writer.finish()
    except BaseException:
        writer.discard()
        raise


def _cannot_store(uploads: str, error: OSError) -> ApiError:
    log(f"cannot store an upload in {uploads}: {error}")
    return nest_error(500, f"The server cannot store the upload: {error.strerror}")


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

    def __init__(self, config: Config, store: Store, http: "HttpClient"):
        self.config = config
        self.store = store
        self.http = http  # upload-from-url's downloads, through the client's address guard

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
        return json_response(await self.fetch_and_store(url, organization_id), 201)

    async def fetch_and_store(self, url: str, organization_id: str) -> dict:
        """Download `url` (SSRF-safe, size and type checked) into the media library; the Media row. Raises ApiError."""
        staged = await fetch_media(self.http, url, self.config.uploads, self.config.max_video_bytes)
        try:
            return self._store_file(organization_id, staged)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged.temporary_path)

    def _save(self, organization_id: str, staged: StagedFile) -> Response:
        return json_response(self._store_file(organization_id, staged), 201)

    def _store_file(self, organization_id: str, staged: StagedFile) -> dict:
        """Move the staged file to YYYY/MM/DD/<random>.<ext>, as Postiz's local storage, and record it."""
        day = time.strftime("%Y/%m/%d", time.gmtime())
        name = f"{os.urandom(16).hex()}.{staged.media_type.extension}"
        directory = os.path.join(self.config.uploads, *day.split("/"))
        make_private_folders(directory)
        final_path = os.path.join(directory, name)
        os.replace(staged.temporary_path, final_path)
        try:
            media = self.store.create_media(organization_id, name, f"{self.config.frontend_url}/uploads/{day}/{name}",
                                            staged.size, staged.media_type.kind)
        except BaseException:
            os.unlink(final_path)
            raise
        return media

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
                   ("Cache-Control", "public, max-age=31536000, immutable"), ("X-Content-Type-Options", "nosniff"),
                   # Media are served from rustiz's own origin: were a file ever rendered as a document
                   # (an SVG, a browser ignoring the type), it may run nothing and reach nothing.
                   ("Content-Security-Policy", "default-src 'none'; sandbox")]
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


def _byte_position(digits: str) -> int:
    """A Range position; any beyond 10**18 bytes is past every file, so int() never meets 5,000 digits."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def parse_byte_range(header: str, size: int) -> Union[tuple, str, None]:
    """(first, last) byte of a single `bytes=` range, "unsatisfiable", or None to send the whole file
    (malformed ranges and multiple ranges are ignored, as RFC 9110 allows)."""
    match = re.fullmatch(r"\s*bytes\s*=\s*([0-9]*)\s*-\s*([0-9]*)\s*", header)
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = (_byte_position(text) if text else None for text in match.groups())
    if first is None:  # the last N bytes
        if last == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - last), size - 1
    if first >= size:
        return "unsatisfiable"
    end = size - 1 if last is None else min(last, size - 1)
    return (first, end) if end >= first else None



# --- the OpenAPI document: GET /public/v1/openapi.json ----------------------------------------------
# Built on the first request, not at import: start-up time matters more than the first caller's
# few milliseconds. tests/test_openapi.py checks that it names exactly the routes App serves.

def _schema_ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(kind: str) -> dict:
    return {"type": [kind, "null"]}


def _object(required: dict, optional: Optional[dict] = None, **extra: Any) -> dict:
    """An object schema: `required` properties always present, `optional` ones sometimes."""
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required), **extra}


def _array_of(items: dict) -> dict:
    return {"type": "array", "items": items}


_STRING, _INTEGER, _BOOLEAN, _ANY = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {}
_DATE = {"type": "string", "format": "date-time", "description": "ISO 8601; without an offset it is UTC"}
_ID = {"type": "string", "minLength": 1}


def _openapi_schemas() -> dict:
    """The shapes the handlers answer with (Postiz's, field by field) and the bodies they take."""
    post_states = {"type": "string", "enum": ["QUEUE", "PUBLISHED", "ERROR", "DRAFT"]}
    stored = {"createdAt": _STRING, "updatedAt": _STRING}
    post_row = _object({"id": _STRING, "state": post_states, "publishDate": _STRING, "organizationId": _STRING,
                        "integrationId": _STRING, "content": _STRING, "delay": _INTEGER, "group": _STRING,
                        "parentPostId": _nullable("string"), "releaseId": _nullable("string"),
                        "releaseURL": _nullable("string"), "settings": _nullable("string"),
                        "image": _nullable("string"), "creationMethod": _STRING,
                        "intervalInDays": _nullable("integer"), "error": _nullable("string"), **stored,
                        "deletedAt": _nullable("string")})
    post_part = _object({key: value for key, value in post_row["properties"].items()
                         if key not in ("organizationId", "integrationId", "deletedAt", "image", "settings")}
                        | {"state": {"type": "string", "enum": post_states["enum"] + ["PUBLISHING"]},
                           "image": _array_of(_ANY), "settings": _ANY})
    post_integration = _object({"id": _STRING, "providerIdentifier": _STRING, "name": _STRING,
                                "picture": _nullable("string")})
    tag = _object({"tag": _object({"id": _STRING, "name": _STRING, "color": _STRING, "orgId": _STRING,
                                   "deletedAt": _nullable("string"), **stored})})
    media = _object({"id": _STRING, "path": _STRING},
                    {"alt": _STRING, "thumbnail": _STRING, "thumbnailTimestamp": _ANY})
    value = _object({"content": _STRING, "image": _array_of(media)}, {"id": _STRING, "delay": {
        "type": "integer", "minimum": 0, "maximum": MAX_DELAY_MINUTES,
        "description": "Minutes this thread part waits after the one before it is published"}})
    return {
        "Msg": _object({"msg": _STRING}, description="Postiz's controller errors: {msg}"),
        "NestError": _object({"statusCode": _INTEGER, "message": {"anyOf": [_STRING, _array_of(_STRING)]}},
                             {"error": _STRING},
                             description="Nest's error body; a validation failure's message is an array of "
                                         "\"<field path> <rule>\" strings"),
        "PostValidationError": _object({"statusCode": _INTEGER, "provider": _STRING, "name": _STRING,
                                        "message": _STRING},
                                       description="Postiz's PostValidationException: which channel refused "
                                                   "the post, and why"),
        "Throttled": _object({"statusCode": {"const": 429}, "message": _STRING}),
        "Channel": _object({"id": _STRING, "name": _STRING, "identifier": _STRING, "picture": _nullable("string"),
                            "disabled": _BOOLEAN, "profile": _nullable("string")},
                           {"customer": _schema_ref("Customer")}),
        "Customer": _object({"id": _STRING, "name": _STRING}),
        "Webhook": _object({"id": _STRING, "name": _STRING, "url": _STRING, "integrations": _array_of(_STRING),
                            "signed": _BOOLEAN, "createdAt": _STRING}),
        "NewChannel": _object(
            {"provider": {"type": "string", "enum": sorted(CREDENTIAL_SPECS)},
             "credentials": {"type": "object", "description": "The provider's keys (README: Channels)"}},
            {"name": _STRING, "customer": {**_STRING, "description": "A customer's id or name; a new name makes one"}}),
        "Organization": _object({"id": _STRING, "name": _STRING, "timezone": _STRING}),
        "ChannelRow": _object({"id": _STRING, "internalId": _STRING, "organizationId": _STRING, "name": _STRING,
                               "picture": _nullable("string"), "providerIdentifier": _STRING, "type": _STRING,
                               "disabled": _BOOLEAN, "tokenExpiration": _nullable("string"),
                               "profile": _nullable("string"), "deletedAt": _nullable("string"), **stored,
                               "inBetweenSteps": _BOOLEAN, "refreshNeeded": _BOOLEAN, "postingTimes": _STRING,
                               "customInstanceDetails": _nullable("string"), "customerId": _nullable("string"),
                               "rootInternalId": _nullable("string"), "additionalSettings": _STRING}),
        "Tag": tag,
        "ListedPost": _object({key: post_row["properties"][key] for key in (
            "id", "content", "publishDate", "releaseURL", "releaseId", "state", "intervalInDays", "group",
            "creationMethod", "settings")} | {"tags": _array_of(_schema_ref("Tag")), "integration": post_integration},
            {"actualDate": _STRING}),
        "PostRow": post_row | {"properties": post_row["properties"] | {
            "title": _nullable("string"), "description": _nullable("string"),
            "submittedForOrderId": _nullable("string"), "submittedForOrganizationId": _nullable("string"),
            "approvedSubmitForOrder": _STRING, "lastMessageId": _nullable("string")}},
        "Post": post_part | {"properties": post_part["properties"] | {
            "integration": post_integration, "tags": _array_of(_schema_ref("Tag")),
            "thread": _array_of(post_part)}, "required": post_part["required"] + ["integration", "tags", "thread"]},
        "Media": _object({"id": _STRING, "name": _STRING, "originalName": _nullable("string"), "path": _STRING,
                          "thumbnail": _nullable("string"), "alt": _nullable("string")}),
        "Notification": _object({"id": _STRING, "content": _STRING, "link": _nullable("string"),
                                 "createdAt": _STRING}),
        "CreatePost": _object(
            {"type": {"type": "string", "enum": ["draft", "schedule", "now", "update"]}, "date": _DATE,
             "shortLink": _BOOLEAN, "tags": _array_of(_object({"value": _STRING, "label": _STRING})),
             "posts": {**_array_of(_object({"integration": _object({"id": _ID}), "value": {
                 **_array_of(value), "minItems": 1}}, {"group": _STRING, "settings": {"type": "object"}})),
                       "minItems": 1}},
            {"order": _STRING, "inter": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_INTERVAL_DAYS,
                                         "description": "Repeat every this many days, at the same local time "
                                                        "in the organization's timezone (0 or null: never)"},
             "republish": _BOOLEAN,
             "creationMethod": {"type": "string", "enum": ["API", "CLI"]}}),
        "PostEdit": {"type": "object", "additionalProperties": False, "properties": {
            "content": _STRING, "image": _array_of(media), "date": _DATE, "settings": {"type": "object"}}},
        "AnalyticsData": _object({"label": _STRING, "data": _array_of(_object({"total": _ANY, "date": _STRING})),
                                  "percentageChange": {"type": "number"}}),
    }


def _json_body(schema: dict, description: str = "") -> dict:
    answer = {"content": {"application/json": {"schema": schema}}}
    return {"description": description, **answer} if description else answer


def _parameter(where: str, name: str, description: str, required: bool = False, schema: Optional[dict] = None) -> dict:
    return {"name": name, "in": where, "required": required or where == "path", "description": description,
            "schema": schema or _STRING}


def _operation(summary: str, success: tuple, errors: str = "", parameters: tuple = (), body: Optional[dict] = None,
               public: bool = False) -> dict:
    """One operation: `success` is (status, schema or a full response), `errors` names shared responses
    ("NotFound Conflict"). Every route can answer 429 (REQUEST_LIMIT); a non-public one also 401."""
    status, answer = success
    responses = {status: answer if "content" in answer else _json_body(answer, "Success")}
    for name in errors.split() + ([] if public else ["Unauthorized"]) + ["TooManyRequests", "Unavailable"]:
        responses[_ERROR_STATUS[name]] = {"$ref": f"#/components/responses/{name}"}
    operation = {"summary": summary, "parameters": list(parameters), "responses": responses}
    if body is not None:
        operation["requestBody"] = {"required": True, **_json_body(body)} if "content" not in body else body
    if public:
        operation["security"] = []
    return operation


_ERROR_STATUS = {"BadRequest": "400", "PostRejected": "400", "Unauthorized": "401", "NotFound": "404",
                 "IntegrationNotFound": "404", "Conflict": "409", "TooLarge": "413", "RangeNotSatisfiable": "416",
                 "IdempotencyKeyReused": "422", "TooManyRequests": "429", "PlatformUnreachable": "502",
                 "Unavailable": "503"}


def _openapi_responses() -> dict:
    nest, msg = _schema_ref("NestError"), _schema_ref("Msg")
    return {
        "BadRequest": _json_body(nest, "The request is invalid; `message` says why (an array for field rules)"),
        "PostRejected": _json_body({"anyOf": [nest, _schema_ref("PostValidationError")]},
                                   "The request is invalid, or a channel's rules refuse the post"),
        "Unauthorized": _json_body(msg, "No API key, or an unknown one (`Authorization: <key>`)"),
        "NotFound": _json_body(nest, "No such id in the caller's organization"),
        "IntegrationNotFound": _json_body(msg, "No such channel in the caller's organization"),
        "Conflict": _json_body(nest, "The post is being published or its state does not allow this, or the "
                                      "channel's account is already connected"),
        "TooLarge": _json_body(nest, "The file is over the size limit for its type"),
        "RangeNotSatisfiable": _json_body(nest, "The byte range is outside the file"),
        "IdempotencyKeyReused": _json_body(nest, "This Idempotency-Key was used with another body in the last 24 h"),
        "PlatformUnreachable": _json_body(nest, "The platform could not be reached or did not answer; nothing "
                                                "was changed, try again"),
        "TooManyRequests": {**_json_body(_schema_ref("Throttled"), "Over REQUEST_LIMIT (per client per minute) or, "
                                                                   "on POST /posts, API_LIMIT (per organization per "
                                                                   "hour)"),
                            "headers": {"Retry-After": {"description": "Seconds until a retry can succeed",
                                                        "schema": _INTEGER}}},
        "Unavailable": {**_json_body(nest, "rustiz is at RUSTIZ_MAX_CONNECTIONS or RUSTIZ_BODY_MEMORY_BUDGET, or "
                                           "cannot write its database (a full disk, say); `message` says which"),
                        "headers": {"Retry-After": {"description": "Seconds until a retry may succeed",
                                                    "schema": _INTEGER}}},
    }


def _rate_limit_headers() -> dict:
    """What POST /posts answers carry: Postiz's throttler headers while API_LIMIT is on, and the replay mark."""
    headers = {name: {"description": description, "schema": _INTEGER} for name, description in (
        ("X-RateLimit-Limit", "API_LIMIT"), ("X-RateLimit-Remaining", "Calls left in this hour's window"),
        ("X-RateLimit-Reset", "Seconds until the window ends"))}
    headers["Idempotent-Replayed"] = {"description": "The answer first given for this Idempotency-Key",
                                      "schema": {"const": "true"}}
    return headers


def _openapi_paths(root: dict) -> dict:
    """Every route App serves, under /public/v1 (the /api server entry covers /api/public/v1 and /api/uploads).

    `root` is the server without /api: the only one /health is served on."""
    post_id, channel_id = _parameter("path", "id", "A post id"), _parameter("path", "id", "A channel id")
    post, deleted = _schema_ref("Post"), _object({"error": {"const": True}}, description="sic: Postiz's answer")
    analytics = _array_of(_schema_ref("AnalyticsData"))
    days_back = _parameter("query", "date", "Days back (7, 30, 90); rustiz has no analytics yet, so it is unused")
    media_upload = {"required": True, "content": {"multipart/form-data": {"schema": _object(
        {"file": {"type": "string", "contentMediaType": "application/octet-stream"}})}}}
    file_answer = {"description": "The file (Range, If-Range and If-None-Match are honoured)", "content": {
        media.content_type: {"schema": {"type": "string", "contentMediaType": media.content_type}}
        for media in MEDIA_TYPES.values()}}
    v1 = "/public/v1"
    return {
        "/health": {"servers": [root], "get": _operation(
            "Liveness", ("200", {"description": "ok", "content": {"text/plain": {"schema": {"const": "ok"}}}}),
            public=True)},
        f"{v1}/openapi.json": {"get": _operation("This document", ("200", {"type": "object"}), public=True)},
        f"{v1}/is-connected": {"get": _operation("Check the API key",
                                                 ("200", _object({"connected": {"const": True}})))},
        f"{v1}/integrations": {"get": _operation(
            "The organization's channels", ("200", _array_of(_schema_ref("Channel"))),
            parameters=(_parameter("query", "group", "Only the channels of this customer id"),)),
            "post": _operation(
                "Connect a channel that needs no developer app with its credentials (rustiz)",
                ("201", _schema_ref("Channel")), "BadRequest Conflict PlatformUnreachable",
                body=_schema_ref("NewChannel"))},
        f"{v1}/webhooks": {
            "get": _operation("The organization's outgoing webhooks (rustiz)", ("200", _array_of(_schema_ref("Webhook")))),
            "post": _operation(
                "Register a URL told of each post published or failed, with a signed JSON event (rustiz)",
                ("201", _schema_ref("Webhook")), "BadRequest",
                body=_object({"url": _STRING}, {"name": _STRING, "secret": _STRING,
                                                "integrations": _array_of({"anyOf": [_STRING, _object({"id": _STRING})]})}))},
        f"{v1}/webhooks/{{id}}": {"delete": _operation(
            "Stop sending events to a webhook (rustiz)", ("200", _object({"deleted": {"const": True}})), "NotFound",
            (_parameter("path", "id", "A webhook id"),))},
        f"{v1}/organization": {
            "get": _operation("The caller's organization and its timezone (rustiz)", ("200", _schema_ref("Organization"))),
            "put": _operation("Rename the organization or set its IANA timezone (rustiz)",
                              ("200", _schema_ref("Organization")), "BadRequest",
                              body={"type": "object", "properties": {"name": _STRING, "timezone": _STRING}})},
        f"{v1}/organization/api-key": {"post": _operation(
            "A new API key, shown once; the old one, and the web sessions signed in with it, stop working at once "
            "(rustiz). Called from such a session: a new session cookie, and its csrfToken",
            ("201", _object({"apiKey": _STRING}, {"csrfToken": _STRING})))},
        f"{v1}/integrations/{{id}}": {
            "delete": _operation("Soft-delete a channel and its posts", ("200", _schema_ref("ChannelRow")), "NotFound",
                                 (channel_id,)),
            "get": _operation("A channel's row, with refreshNeeded and postingTimes (rustiz)",
                              ("200", _schema_ref("ChannelRow")), "NotFound", (channel_id,)),
            "put": _operation("Rename, disable or enable a channel, set its posting times or group (rustiz)",
                              ("200", _schema_ref("ChannelRow")), "BadRequest NotFound", (channel_id,),
                              _object({}, {"name": _STRING, "disabled": _BOOLEAN, "customer": {"type": ["string", "null"]},
                                           "postingTimes": _array_of(_object({"time": _INTEGER}))}))},
        f"{v1}/groups": {"get": _operation("The organization's customers",
                                           ("200", _array_of(_schema_ref("Customer"))))},
        f"{v1}/integration-settings/{{id}}": {"get": _operation(
            "A channel's provider rules, length limit, settings JSON Schema and helper tools",
            ("200", _object({"output": _object({"rules": _STRING, "maxLength": _INTEGER,
                                                "settings": {"type": ["object", "string"]},
                                                "tools": _array_of({"type": "object"})})})),
            "IntegrationNotFound", (channel_id,))},
        f"{v1}/integration-trigger/{{id}}": {"post": _operation(
            "Call a provider helper tool", ("201", _object({"output": _ANY})),
            "BadRequest IntegrationNotFound PlatformUnreachable",
            (channel_id,), _object({"methodName": _STRING}, {"data": {"type": "object"}}))},
        f"{v1}/posts": {
            "get": _operation(
                "Main posts in a date window, recurring ones once per occurrence",
                ("200", _object({"posts": _array_of(_schema_ref("ListedPost"))})), "BadRequest",
                (_parameter("query", "startDate", "From this instant", True, _DATE),
                 _parameter("query", "endDate", "Up to this instant, inclusive", True, _DATE),
                 _parameter("query", "customer", "Only posts on this customer's channels"))),
            "post": _operation(
                "Create, schedule or update posts: one thread per channel",
                ("201", {**_json_body(_array_of(_object({"postId": _STRING, "integration": _STRING})), "Created"),
                         "headers": _rate_limit_headers()}),
                "PostRejected Conflict IdempotencyKeyReused",
                (_parameter("header", "Idempotency-Key", "A retry with the same key and body within 24 h gets "
                                                         "the first answer and creates nothing",
                            schema={"type": "string", "minLength": 1, "maxLength": 255}),),
                _schema_ref("CreatePost"))},
        f"{v1}/posts/group/{{group}}": {"delete": _operation(
            "Soft-delete a group of posts", ("200", deleted), parameters=(_parameter("path", "group", "A group"),))},
        f"{v1}/posts/{{id}}": {
            "get": _operation("A post with its thread (rustiz)", ("200", post), "NotFound", (post_id,)),
            "put": _operation("Edit a post not yet published (rustiz)", ("200", post),
                              "PostRejected NotFound Conflict", (post_id,), _schema_ref("PostEdit")),
            "delete": _operation("Soft-delete the post's whole group", ("200", deleted), "NotFound", (post_id,))},
        f"{v1}/posts/{{id}}/settings": {"put": _operation(
            "Merge provider settings into a main post", ("200", _object({"postId": _STRING, "publishDate": _STRING})),
            "BadRequest NotFound Conflict", (post_id,), _object({"settings": {"type": "object"}}))},
        f"{v1}/posts/{{id}}/status": {"put": _operation(
            "Make a post a draft or queue it",
            ("200", _object({"id": _STRING, "state": {"type": "string", "enum": ["DRAFT", "QUEUE"]}})),
            "PostRejected Conflict", (post_id,),
            _object({"status": {"type": "string", "enum": ["draft", "schedule"]}}))},
        f"{v1}/posts/{{id}}/release-id": {"put": _operation(
            "Link a post whose releaseId is \"missing\" to its platform post", ("200", _schema_ref("PostRow")),
            "BadRequest NotFound", (post_id,), _object({"releaseId": _ID}))},
        f"{v1}/posts/{{id}}/missing": {"get": _operation(
            "Recent platform posts to link a missing release to", ("200", _array_of(_object({"id": _STRING,
                                                                                             "url": _STRING}))),
            "NotFound", (post_id,))},
        f"{v1}/posts/{{id}}/retry": {"post": _operation(
            "Queue the failed parts of a post's thread again (rustiz)", ("201", post), "NotFound Conflict",
            (post_id,))},
        f"{v1}/notifications": {"get": _operation(
            "Notifications, newest first, 100 a page",
            ("200", _object({"notifications": _array_of(_schema_ref("Notification")), "total": _INTEGER,
                             "page": _INTEGER, "limit": _INTEGER, "hasMore": _BOOLEAN})), "BadRequest",
            (_parameter("query", "page", "From 0", schema={"type": "integer", "minimum": 0,
                                                           "maximum": MAX_NOTIFICATIONS_PAGE}),))},
        f"{v1}/find-slot/{{id}}": {"get": _operation(
            "The channel's next free posting time",
            ("200", _object({"date": _STRING, "timezone": _STRING, "localDate": _STRING})),
            "BadRequest NotFound Conflict", (channel_id,))},
        f"{v1}/analytics/{{integration}}": {"get": _operation(
            "A channel's analytics", ("200", analytics), "NotFound",
            (_parameter("path", "integration", "A channel id"), days_back))},
        f"{v1}/analytics/post/{{postId}}": {"get": _operation(
            "A post's analytics", ("200", {"anyOf": [analytics, _object({"missing": {"const": True}})]}), "NotFound",
            (_parameter("path", "postId", "A post id"), days_back))},
        f"{v1}/upload": {"post": _operation(
            "Upload an image or video (type read from its bytes)", ("201", _schema_ref("Media")),
            "BadRequest TooLarge", body=media_upload)},
        f"{v1}/upload-from-url": {"post": _operation(
            "Store an image or video fetched from a public URL", ("201", _schema_ref("Media")),
            "BadRequest TooLarge", body=_object({"url": _STRING}))},
        "/uploads/{year}/{month}/{day}/{name}": {"get": _uploaded_file(file_answer)},
        **_mcp_openapi_paths(),
        **_web_openapi_paths(root),
    }


def _uploaded_file(file_answer: dict) -> dict:
    """GET /uploads/...: the file, a byte range of it, or 304 for a cached copy that is still current."""
    operation = _operation(
        "An uploaded file", ("200", file_answer), "NotFound RangeNotSatisfiable",
        tuple(_parameter("path", name, "From the Media path") for name in ("year", "month", "day", "name"))
        + (_parameter("header", "Range", "One range, bytes=first-last; others are ignored"),
           _parameter("header", "If-Range", "An ETag: the range only if the file is still that one"),
           _parameter("header", "If-None-Match", "ETags of a cached copy")), public=True)
    operation["responses"]["206"] = {**file_answer, "description": "The requested range"}
    operation["responses"]["304"] = {"description": "The cached copy is current"}
    return operation


def openapi_document(frontend_url: str) -> dict:
    """The OpenAPI 3.1 description of every route, with FRONTEND_URL as the server."""
    root = {"url": frontend_url or "/"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "rustiz public API", "version": VERSION,
                 "description": "The Postiz public API as rustiz serves it, plus rustiz's additions. Every "
                                "/public/v1 route is also served under /api/public/v1 (the second server)."},
        "servers": [root, {"url": f"{frontend_url}/api", "description": "self-hosted Postiz's /api prefix"}],
        "security": [{"apiKey": []}],
        "paths": _openapi_paths(root),
        "components": {"schemas": _openapi_schemas(), "responses": _openapi_responses(), "securitySchemes": {
            "apiKey": {"type": "apiKey", "in": "header", "name": "Authorization",
                       "description": "The organization's API key, as is or after \"Bearer \""}}},
    }


class OpenApiRoute:
    """GET /public/v1/openapi.json (no key needed): encoded once per worker, on first request."""

    def __init__(self, config: Config):
        self.frontend_url = config.frontend_url
        self._encoded: Optional[bytes] = None

    def register(self, app: App) -> None:
        for prefix in API_PREFIXES:
            app.add("GET", prefix + "/openapi.json", self.serve, authenticated=False)

    def serve(self, request: Request) -> Response:
        if self._encoded is None:
            self._encoded = json_dumps(openapi_document(self.frontend_url))
        return Response(200, self._encoded, "application/json; charset=utf-8")

# =============================================================================
# 9. MCP: the Model Context Protocol server AI agents use (Postiz's tools, over HTTP)
# =============================================================================
#
# Streamable HTTP at /mcp and /mcp/<key> (also under /api), stateless with JSON answers as Postiz's:
# every POST stands alone, so any worker can answer it. Both eras of the protocol: the initialize
# handshake (2024-11-05 .. 2025-11-25) and 2026-07-28's server/discover with a per-request _meta
# envelope. The legacy HTTP+SSE transport (/sse/<key> + /message/<key>) keeps its session in the
# worker holding the stream. Every tool calls the same functions as the public API.

MCP_HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07")
MCP_MODERN_VERSIONS = ("2026-07-28",)
MCP_LATEST_HANDSHAKE = "2025-11-25"
MCP_MAX_BODY_BYTES = 4 * 1024 * 1024  # a thread of 100 long posts is well under 1 MiB
MCP_MAX_BATCH = 100  # JSON-RPC messages in one POST
MCP_MAX_POSTS_PER_CALL = 50  # socialPost items of one schedule call
MCP_MAX_THREAD_PARTS = 100  # postsAndComments of one socialPost
MCP_MAX_SSE_SESSIONS = 256  # open legacy SSE streams per worker
MCP_SSE_QUEUE_BYTES = 4 * 1024 * 1024  # answers a legacy SSE stream's client may leave unread; more ends the stream
MCP_SSE_ENDED_REMEMBERED = 1024  # streams ended that way, remembered per worker to tell their POSTs why
MCP_CORS_HEADERS = [("Access-Control-Allow-Origin", "*"), ("Access-Control-Allow-Methods", "*"),
                    ("Access-Control-Allow-Headers", "*"), ("Access-Control-Expose-Headers", "*")]
_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
_META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION = -32020, -32022


class McpError(Exception):
    """A JSON-RPC error answer to one request."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def payload(self) -> dict:
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ToolFailed(Exception):
    """A tool cannot do what was asked: an isError result whose text is the message (Postiz's thrown errors)."""


def _rpc_error(code: int, message: str, request_id: Any = None, data: Any = None) -> dict:
    return {"jsonrpc": "2.0", "error": McpError(code, message, data).payload(), "id": request_id}


# --- tool schemas, as zod-to-json-schema writes Postiz's definitions ----------------------------

def _described(schema: dict, description: Optional[str]) -> dict:
    return {**schema, "description": description} if description is not None else schema


def _z_string(description: Optional[str] = None, **extra: Any) -> dict:
    return _described({"type": "string", **extra}, description)


def _z_boolean(description: Optional[str] = None) -> dict:
    return _described({"type": "boolean"}, description)


def _z_any(description: str) -> dict:
    return {"description": description}


def _z_array(items: dict, description: Optional[str] = None) -> dict:
    return _described({"type": "array", "items": items}, description)


def _z_object(properties: dict, optional: tuple = (), description: Optional[str] = None,
              extra_keys: Any = False) -> dict:
    """An object: every key required unless optional or an any (zod's .optional() and z.any())."""
    required = [name for name, schema in properties.items()
                if name not in optional and ("type" in schema or "anyOf" in schema)]
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = extra_keys
    return _described(schema, description)


def _root(schema: dict) -> dict:
    return {**schema, "$schema": "http://json-schema.org/draft-07/schema#"}


def _annotations(title: str, read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> dict:
    return {"title": title, "readOnlyHint": read_only, "destructiveHint": destructive,
            "idempotentHint": idempotent, "openWorldHint": open_world}


_READ_ONLY = (True, False, True, False)
_KEY_VALUE_DESCRIPTION = "Value of the key, always prefer the id then label if possible"
_PLATFORMS_DESCRIPTION = ("platform identifier (x, linkedin, linkedin-page, reddit, instagram, instagram-standalone, "
                          "facebook, threads, youtube, gmb, tiktok, tiktok-business, pinterest, dribbble, discord, "
                          "slack, kick, twitch, mastodon, bluesky, lemmy, wrapcast, telegram, nostr, vk, medium, devto, "
                          "hashnode, wordpress, listmonk, moltbook, whop, skool, mewe, tumblr)")
_ERRORS_OUTPUT = _z_object({"errors": {"type": "string"}})
_POST_ITEM_OUTPUT = _z_object({"id": {"type": "string"}, "publishDate": {"type": "string"},
                               "state": {"type": "string"}, "content": {"type": "string"},
                               "settings": {}, "group": {"type": "string"}, "integrationId": {"type": "string"},
                               "platform": {"type": "string"}, "integrationName": {"type": "string"}})


def _schedule_input() -> dict:
    content = ("The content of the post, HTML, Each line must be wrapped in <p> here is the possible tags: h1, h2, "
               "h3, u, strong, li, ul, p (you can't have u and strong together)")
    part = _z_object({"content": _z_string(content),
                      "attachments": _z_array({"type": "string"}, "The image of the post (URLS)")})
    setting = _z_object({"key": _z_string("Name of the settings key to pass"), "value": _z_any(_KEY_VALUE_DESCRIPTION)})
    post = _z_object({
        "integrationId": _z_string("The id of the integration (not internal id)"),
        "isPremium": _z_boolean("If the integration is X, return if it's premium or not"),
        "date": _z_string("The date of the post in UTC time"),
        "shortLink": _z_boolean("If the post has a link inside, we can ask the user if they want to add a short link"),
        "type": _z_string("The type of the post, if we pass now, we should pass the current date also",
                          enum=["draft", "schedule", "now"]),
        "postsAndComments": _z_array(part, "first item is the post, every other item is the comments"),
        "settings": _z_array(setting, "This relies on the integrationSchema tool to get the settings [input:settings]"),
    })
    return _root(_z_object({"socialPost": _z_array(post, "Individual post")}))


_SCHEDULE_DESCRIPTION = """
Use this when the user wants to create a draft, scheduled, or immediate social media post on their connected channels, based on the integrationSchema tool.
Examples of the input shape:

A single LinkedIn post with one comment
- socialPost array length will be one
- postsAndComments array length will be two (one for the post, one for the comment)

20 Facebook posts each on individual days without comments
- socialPost array length will be 20
- postsAndComments array length will be one

Do not use this to update or delete existing posts.
If validation fails, the result contains output.errors describing what to fix; the call can be retried with corrected parameters.
"""

_POSTS_LIST_DESCRIPTION = """
List the organization's posts scheduled to be published between two dates (the same data as the "List Posts" API endpoint).
Returns every post in the window whatever its state (scheduled, draft, published, errored).
"startDate" and "endDate" are required (UTC) - to list all upcoming posts, pass a wide window (for example from now to a year ahead).
Each item has an "id", its publish date, state, content, channel and current provider settings.
Posts cannot be deleted through the Postiz tools - if the user wants to delete a post, tell them to do it themselves in the Postiz app; never offer to delete a post.
"""

_POST_SETTINGS_DESCRIPTION = """
Update the provider settings of an existing post (scheduled or draft) that was NOT published yet.
Only the settings change - the content and the publish date stay exactly as they are.
Find the post first (list your posts) and pass its "id" here.
The settings are merged into the existing ones, so only pass the keys you want to change; anything you don't pass stays as it is.
This relies on the integrationSchema tool [input:settings] to know which keys exist for the platform.
If validation fails, the result contains output.errors describing what to fix; the call can be retried with corrected parameters.
"""


def _mcp_tool_definitions() -> list:
    """tools/list in Postiz's order (without its AI-generation tools), then rustiz's three additions."""
    return _postiz_tool_definitions() + _rustiz_tool_definitions()


def _postiz_tool_definitions() -> list:
    """Postiz's tools, field by field (descriptions the reference does not give are rustiz's)."""
    trigger_description = (
        "Use this to call a provider helper function (a methodName from the integrationSchema callable tools) "
        "that fetches provider-specific data needed for settings, like ids or search results.\n      Some helper "
        "functions require values provided by the user, like a word to search for. methodName is required "
        "[input:callable-tools].\n      If provider auth is expired, this tool may refresh the stored integration "
        "token; if refresh fails, it marks the channel as needing reconnect and notifies the organization.")
    schema_description = (
        "Everytime we want to schedule a social media post, we need to understand the schema of the integration.\n"
        "         This tool helps us get the schema of the integration.\n         Sometimes we might get a schema "
        "back the requires some id, for that, you can get information from 'tools'\n         And use the "
        "triggerTool function.\n        ")
    schema_output = _z_object({"output": _z_object({
        "rules": {"type": "string"}, "maxLength": {"type": "number"}, "settings": {},
        "tools": {"type": "array", "items": _z_object({
            "description": {"type": "string"}, "methodName": {"type": "string"},
            "dataSchema": {"type": "array", "items": _z_object({
                "key": {"type": "string"}, "description": {"type": "string"}, "type": {"type": "string"}})}})}})})
    return [
        {"name": "integrationList",
         "description": "This tool list available integrations to schedule posts to. Optionally pass a group id "
                        "(from the groupList tool) to only list integrations belonging to that group",
         "inputSchema": _root(_z_object({"group": _z_string(
             "Optional group (customer) id from the groupList tool to filter the integrations")}, optional=("group",))),
         "outputSchema": _root(_z_object({"output": {"type": "array", "items": _z_object({
             "id": {"type": "string"}, "name": {"type": "string"}, "picture": {"type": "string"},
             "platform": {"type": "string"}})}})),
         "annotations": _annotations("List Integrations", *_READ_ONLY)},
        {"name": "groupList",
         "description": "This tool lists the available groups (customers). Use a group id with the integrationList "
                        "tool to filter the integrations belonging to that group",
         "inputSchema": _root(_z_object({})),
         "outputSchema": _root(_z_object({"output": {"type": "array", "items": _z_object({
             "id": {"type": "string"}, "name": {"type": "string"}})}})),
         "annotations": _annotations("List Groups", *_READ_ONLY)},
        {"name": "integrationSchema", "description": schema_description,
         "inputSchema": _root(_z_object({"isPremium": _z_boolean("is this the user premium? if not, set to false"),
                                         "platform": _z_string(_PLATFORMS_DESCRIPTION)})),
         "outputSchema": _root(schema_output),
         "annotations": _annotations("Get Integration Schema", *_READ_ONLY)},
        {"name": "triggerTool", "description": trigger_description,
         "inputSchema": _root(_z_object({
             "integrationId": _z_string("The id of the integration"),
             "methodName": _z_string("The methodName from the `integrationSchema` functions in the tools array, "
                                     "required"),
             "dataSchema": _z_array(_z_object({"key": _z_string("Name of the settings key to pass"),
                                               "value": _z_string("Value of the key")}))})),
         "outputSchema": _root(_z_object({"output": {"anyOf": [
             {"type": "array", "items": {"type": "object", "additionalProperties": {}}},
             {"type": "object", "additionalProperties": {}}, {"type": "string"}]}})),
         "annotations": _annotations("Trigger Integration Tool", False, True, False, True)},
        {"name": "integrationSchedulePostTool", "description": _SCHEDULE_DESCRIPTION,
         "inputSchema": _schedule_input(),
         "outputSchema": _root(_z_object({"output": {"anyOf": [
             {"type": "array", "items": _z_object({"postId": {"type": "string"}, "integration": {"type": "string"}})},
             _ERRORS_OUTPUT]}})),
         "annotations": _annotations("Schedule Social Media Post", False, True, False, True)},
        {"name": "postsListTool", "description": _POSTS_LIST_DESCRIPTION,
         "inputSchema": _root(_z_object({
             "startDate": _z_string("Start of the window (UTC), for example 2026-07-20T00:00:00"),
             "endDate": _z_string("End of the window (UTC), for example 2026-08-20T00:00:00"),
             "customer": _z_string("Optional customer (group) id to filter the channels by")},
             optional=("customer",))),
         "outputSchema": _root(_z_object({"output": _z_object({"posts": {"type": "array",
                                                                         "items": _POST_ITEM_OUTPUT}})})),
         "annotations": _annotations("List Posts", *_READ_ONLY)},
        {"name": "postSettingsTool", "description": _POST_SETTINGS_DESCRIPTION,
         "inputSchema": _root(_z_object({
             "id": _z_string('The "id" of the post to update its settings'),
             "settings": _z_array(_z_object({"key": _z_string("Name of the settings key to change"),
                                             "value": _z_any(_KEY_VALUE_DESCRIPTION)}),
                                  "Settings keys to change, merged into the existing settings. This relies on the "
                                  "integrationSchema tool to get the settings [input:settings]")})),
         "outputSchema": _root(_z_object({"output": {"anyOf": [
             _z_object({"postId": {"type": "string"}, "publishDate": {"type": "string"}}), _ERRORS_OUTPUT]}})),
         "annotations": _annotations("Update Post Settings", False, False, False, False)},
        {"name": "uploadFromUrlTool",
         "description": "Upload a remote image or video into the media library from a public URL.\nUse this before "
                        "scheduling a post when the user provides an external media URL (not already hosted on our "
                        "domain),\nso the attachment passes the upload-domain validation. Returns the hosted media "
                        "{ id, path } to use as an attachment, or { error } on failure.",
         "inputSchema": _root(_z_object({"url": _z_string("The public URL of the image or video to upload",
                                                          format="uri")})),
         # {id, path} or {error}: one object with all three optional, as MCP wants an object at the root.
         "outputSchema": _root(_z_object({"id": {"type": "string"}, "path": {"type": "string"},
                                          "error": {"type": "string"}}, optional=("id", "path", "error"))),
         "annotations": _annotations("Upload Media From URL", False, False, False, True)},
    ]


def _rustiz_tool_definitions() -> list:
    """rustiz's additions, so that an agent can check what became of its posts (and retry a failed one)."""
    return [
        {"name": "postGetTool",
         "description": "Read one post by its \"id\" (from integrationSchedulePostTool or postsListTool): its state "
                        "(QUEUE, DRAFT, PUBLISHING, PUBLISHED, ERROR), the error that stopped it, the URL where it "
                        "was published (releaseURL), its settings, media and the thread replies that follow it.",
         "inputSchema": _root(_z_object({"id": _z_string('The "id" of the post')})),
         "outputSchema": _root(_z_object({"output": {"type": "object", "additionalProperties": {}}})),
         "annotations": _annotations("Get Post", *_READ_ONLY)},
        {"name": "postRetryTool",
         "description": "Put a post in ERROR (and the failed parts of its thread) back in the queue, to be "
                        "published again now. Only for posts whose state is ERROR; read the error with postGetTool "
                        "first and fix its cause (a reconnected channel, new settings) before retrying.",
         "inputSchema": _root(_z_object({"id": _z_string('The "id" of the post in ERROR')})),
         "outputSchema": _root(_z_object({"output": {"anyOf": [{"type": "object", "additionalProperties": {}},
                                                               _ERRORS_OUTPUT]}})),
         "annotations": _annotations("Retry Failed Post", False, False, True, True)},
        {"name": "notificationsListTool",
         "description": "List the organization's notifications, newest first, 100 per page (page 0 first): "
                        "published posts, failures, channels needing to be reconnected.",
         "inputSchema": _root(_z_object({"page": _described(
             {"type": "integer", "minimum": 0, "maximum": MAX_NOTIFICATIONS_PAGE}, "Page number, from 0")},
             optional=("page",))),
         "outputSchema": _root(_z_object({"output": _z_object({
             "notifications": {"type": "array", "items": _z_object({
                 "id": {"type": "string"}, "content": {"type": "string"}, "link": {"type": ["string", "null"]},
                 "createdAt": {"type": "string"}})},
             "total": {"type": "integer"}, "page": {"type": "integer"}, "hasMore": {"type": "boolean"}})})),
         "annotations": _annotations("List Notifications", *_READ_ONLY)},
    ]


# --- arguments checked against the input schema, with zod's messages ---------------------------

def _js_type(value: Any) -> str:
    """zod's name for what it received."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "unknown")


def _schema_type_ok(kind: Any, value: Any) -> bool:
    kinds = kind if isinstance(kind, list) else [kind]
    for each in kinds:
        if each == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if each == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if each != "integer" and each != "number" and _js_type(value) == each:
            return True
    return False


def checked_arguments(schema: dict, value: Any, path: str, problems: list) -> Any:
    """`value` with the keys the schema does not know dropped (zod strips them); what is wrong goes to
    `problems` as (path, message)."""
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            attempt: list = []
            result = checked_arguments(option, value, path, attempt)
            if not attempt:
                return result
        problems.append((path, "Invalid input"))
        return value
    kind = schema.get("type")
    if kind is None:
        return value  # z.any()
    if not _schema_type_ok(kind, value):
        expected = kind if isinstance(kind, str) else " | ".join(kind)
        problems.append((path, f"Expected {expected}, received {_js_type(value)}"))
        return value
    if "enum" in schema and value not in schema["enum"]:
        options = " | ".join(f"'{option}'" for option in schema["enum"])
        problems.append((path, f"Invalid enum value. Expected {options}, received '{value}'"))
    if schema.get("format") == "uri" and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]+\Z", value):
        problems.append((path, "Invalid url"))
    if "minimum" in schema and value < schema["minimum"]:
        problems.append((path, f"Number must be greater than or equal to {schema['minimum']}"))
    if "maximum" in schema and value > schema["maximum"]:
        problems.append((path, f"Number must be less than or equal to {schema['maximum']}"))
    if kind == "array":
        return [checked_arguments(schema["items"], item, f"{path}.{index}", problems)
                for index, item in enumerate(value)]
    if kind == "object" and "properties" in schema:
        kept = {}
        for name, property_schema in schema["properties"].items():
            where = f"{path}.{name}" if path != "root" else name
            if name in value:
                kept[name] = checked_arguments(property_schema, value[name], where, problems)
            elif name in schema.get("required", ()):
                problems.append((where, "Required"))
        return kept
    return value


def _argument_problems_text(problems: list, arguments: Any) -> str:
    """Mastra's wording, which agents already know how to act on."""
    lines = "\n".join(f"- {path}: {message}" for path, message in problems)
    return (f"Tool validation failed. Please fix the following errors and try again:\n{lines}\n\n"
            f"Provided arguments: {json.dumps(arguments, indent=2, ensure_ascii=False)}")


# --- the tools ------------------------------------------------------------------------------------

def _settings_object(pairs: list) -> dict:
    """MCP's settings [{key, value}] as the object the API keeps (a later key wins)."""
    return {pair["key"]: pair.get("value") for pair in pairs}


def _api_error_text(error: ApiError) -> str:
    """What a person reads in an API error body: Postiz's message, msg or error, joined when a list."""
    body = error.body if isinstance(error.body, dict) else {}
    message = body.get("message", body.get("msg", body.get("error", error.body)))
    return "; ".join(map(str, message)) if isinstance(message, list) else str(message)


_EMPTY_CONTENT = "If images do not exist, content must be a non-empty string."


def _mcp_argument_path(message: str) -> str:
    """A POST /posts validation message in the schedule tool's names: "settings.title ...",
    "postsAndComments.1.attachments.0: ..." instead of "posts.0.settings.title ...", "posts.0.value.1.image.0.path ..."."""
    if ".settings." in message:
        return "settings." + message.split(".settings.", 1)[1]
    message = re.sub(r"^posts\.\d+\.value\.", "postsAndComments.", message)
    return re.sub(r"\.image\.(\d+)\.(?:path )?", r".attachments.\1: ", message).replace(".image ", ".attachments ")


def _mcp_publish_date(stored: str) -> str:
    """Postiz's postsListTool date: UTC, seconds, no Z."""
    return stored[:19]


class McpTools:
    """The tools, each one a call into the API's own functions, scoped by the key's organization."""

    def __init__(self, app: "App"):
        self.app = app
        self.store = app.store
        self.channels: ChannelsApi = app.channels_api
        self.posts: PostsApi = app.posts_api
        self.media: MediaApi = app.media_api
        self.definitions = _mcp_tool_definitions()
        self.by_name = {tool["name"]: tool for tool in self.definitions}
        self.by_name["schedulePostTool"] = self.by_name["integrationSchedulePostTool"]  # the name Postiz's docs use
        self.list_result = {"tools": self.definitions}

    def call(self, organization_id: str, name: Any, arguments: Any) -> Union[dict, Awaitable[dict]]:
        """tools/call: the CallToolResult, or an awaitable of it for the tools that wait on the network."""
        tool = self.by_name.get(name) if isinstance(name, str) else None
        if tool is None:
            return _tool_error(f"Unknown tool: {name}")
        problems: list = []
        arguments = {} if arguments is None else arguments
        checked = checked_arguments(tool["inputSchema"], arguments, "root", problems)
        if problems:
            return _tool_error(_argument_problems_text(problems, arguments))
        run = getattr(self, "tool_" + tool["name"])
        try:
            output = run(organization_id, checked)
        except Exception as error:
            return _tool_failure(tool["name"], error)
        if type(output) is not dict:  # a coroutine: the tool waits on the network
            return self._finish(tool["name"], output)
        return _tool_success(output)

    @staticmethod
    async def _finish(name: str, pending: Awaitable[dict]) -> dict:
        try:
            return _tool_success(await pending)
        except Exception as error:
            return _tool_failure(name, error)

    def tool_integrationList(self, organization_id: str, arguments: dict) -> dict:
        channels = self.store.integrations(organization_id, arguments.get("group") or None)
        return {"output": [{"id": channel["id"], "name": channel["name"],
                            "picture": channel["picture"] or "/no-picture.jpg", "platform": channel["identifier"]}
                           for channel in channels]}

    def tool_groupList(self, organization_id: str, arguments: dict) -> dict:
        return {"output": self.store.customers(organization_id)}

    def tool_integrationSchema(self, organization_id: str, arguments: dict) -> dict:
        spec = PROVIDERS.get(arguments["platform"])
        if spec is None:
            return {"output": {"rules": "", "maxLength": 0, "settings": {}, "tools": []}}
        premium = [{"title": "Verified", "value": True}] if arguments["isPremium"] else []
        return {"output": {"rules": spec.rules, "maxLength": provider_max_length(spec.identifier, premium),
                           "settings": spec.settings, "tools": spec.tools}}

    async def tool_triggerTool(self, organization_id: str, arguments: dict) -> dict:
        channel = self.store.channel(organization_id, arguments["integrationId"])
        if channel is None:
            raise ToolFailed("Integration not found, use integrationList to get a valid integration id")
        if channel["provider_identifier"] not in PROVIDERS:
            raise ToolFailed("Integration provider not found, use integrationList to get a valid integration id")
        data = _settings_object(arguments["dataSchema"])
        try:
            output = await self.channels.run_tool(channel, arguments["methodName"], data)
        except ApiError as refused:
            if refused.status == 404:
                raise ToolFailed(f'Method "{arguments["methodName"]}" not found for this integration, use '
                                 f"integrationSchema to get the callable tools") from None
            if refused.status == 401:
                raise ToolFailed("The channel was disconnected because its token expired, the user needs to "
                                 "reconnect it in rustiz") from None
            raise ToolFailed(f"Provider call failed: {_api_error_text(refused)}") from None
        return {"output": output}

    def tool_integrationSchedulePostTool(self, organization_id: str, arguments: dict) -> dict:
        social_posts = arguments["socialPost"]
        too_many = self._too_many(social_posts)
        if too_many:
            return {"output": {"errors": too_many}}
        plans = []
        for item in social_posts:  # the first refused item stops the call before anything is stored
            plan = self._plan(organization_id, item)
            if isinstance(plan, str):
                return {"output": {"errors": plan}}
            plans.append(plan)
        if self.app.config.api_limit and self.app.config.mcp_api_limit:
            limited = self.app.guard.api_limit(organization_id)
            if type(limited) is Response:
                retry_after = dict(limited.headers).get("Retry-After", "?")
                raise ToolFailed(f"ThrottlerException: Too Many Requests. This organization scheduled posts "
                                 f"{self.app.config.api_limit} times in the last hour (API_LIMIT); try again in "
                                 f"{retry_after} seconds. Nothing was scheduled.")
        created = []
        for plan in plans:
            try:
                created.extend(self.posts.save_plan(organization_id, plan)[0])
            except ApiError as refused:
                return {"output": {"errors": _api_error_text(refused)}}
        return {"output": created}

    @staticmethod
    def _too_many(social_posts: list) -> Optional[str]:
        if len(social_posts) > MCP_MAX_POSTS_PER_CALL:
            return (f"At most {MCP_MAX_POSTS_PER_CALL} posts per call, got {len(social_posts)}: split them over "
                    f"several integrationSchedulePostTool calls")
        if not social_posts:
            return "socialPost is empty: pass at least one post"
        for item in social_posts:
            if len(item["postsAndComments"]) > MCP_MAX_THREAD_PARTS:
                return (f"At most {MCP_MAX_THREAD_PARTS} items in postsAndComments (the post and its comments), got "
                        f"{len(item['postsAndComments'])}")
        return None

    def _plan(self, organization_id: str, item: dict) -> Union[dict, str]:
        """One socialPost as the CreatePost body the API validates: its plan, or Postiz's error text."""
        body = {"type": item["type"], "date": item["date"], "shortLink": item["shortLink"], "tags": [],
                "posts": [{"integration": {"id": item["integrationId"]},
                           "value": [{"content": part["content"],
                                      "image": [{"id": new_cuid(), "path": url} for url in part["attachments"]]}
                                     for part in item["postsAndComments"]],
                           "settings": _settings_object(item["settings"])}]}
        channel = self.store.channel(organization_id, item["integrationId"])
        try:
            plan = validate_create_post(body, lambda channel_id: channel if channel_id == item["integrationId"] else None)
            if plan["type"] != "draft":  # checked before anything of the call is stored
                self.posts.refuse_missed_date(plan["date"])
        except ApiError as refused:
            return self._refusal_text(refused, channel, item["integrationId"])
        plan["creationMethod"] = "MCP"
        return plan

    @staticmethod
    def _refusal_text(refused: ApiError, channel: Optional[dict], channel_id: str) -> str:
        """Postiz's MCP wording: "<channel name>: <what is wrong>, please fix it, and try ... again."."""
        if channel is None:
            return f"Integration with id {channel_id} not found, use integrationList to get a valid integration id"
        message = refused.body.get("message") if isinstance(refused.body, dict) else None
        empty = "Your post should have at least one character or one image."
        if message == empty or isinstance(message, list) and any(text.endswith(_EMPTY_CONTENT) for text in message):
            return f"{channel['name']}: {empty}"
        if isinstance(message, list):  # the DTO's "posts.0.settings.<field> <rule>" messages, in MCP's terms
            message = "; ".join(_mcp_argument_path(text) for text in message) or "Please fix your settings"
        elif message == "post is too long, please fix it":
            message = f"The maximum characters is {provider_max_length(channel['provider_identifier'], channel['additional_settings'])}"
        return f"{channel['name']}: {message}, please fix it, and try integrationSchedulePostTool again."

    def tool_postsListTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            listed = self.posts.listing(organization_id, arguments["startDate"], arguments["endDate"],
                                        arguments.get("customer") or None)
        except ApiError as refused:
            text = _api_error_text(refused)
            raise ToolFailed(text + (", for example 2026-07-20T00:00:00" if "ISO 8601" in text else "")) from None
        return {"output": {"posts": [{
            "id": item["id"], "publishDate": _mcp_publish_date(item["publishDate"]), "state": item["state"],
            "content": item["content"], "settings": _parsed_settings(item["settings"]), "group": item["group"],
            "integrationId": item["integration"]["id"], "platform": item["integration"]["providerIdentifier"],
            "integrationName": item["integration"]["name"]} for item in listed]}}

    def tool_postSettingsTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            return {"output": self.posts.change_settings(organization_id, arguments["id"],
                                                         _settings_object(arguments["settings"]))}
        except ApiError as refused:
            return {"output": {"errors": _api_error_text(refused)}}

    async def tool_uploadFromUrlTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            media = await self.media.fetch_and_store(arguments["url"], organization_id)
        except ApiError as refused:
            return {"error": _api_error_text(refused)}
        return {"id": media["id"], "path": media["path"]}

    def tool_postGetTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            return {"output": self.posts.post_view(organization_id, arguments["id"])}
        except ApiError:
            raise ToolFailed(f"Post {arguments['id']} not found; use postsListTool to find the ids of this "
                             f"organization's posts") from None

    def tool_postRetryTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            return {"output": self.posts.retry_post(organization_id, arguments["id"])}
        except ApiError as refused:
            return {"output": {"errors": _api_error_text(refused)}}

    def tool_notificationsListTool(self, organization_id: str, arguments: dict) -> dict:
        return {"output": self.posts.notifications_page(organization_id, arguments.get("page", 0))}


def _parsed_settings(text: Optional[str]) -> Any:
    """Postiz's postsListTool parses the stored settings; {} when they are not JSON."""
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def _tool_success(output: dict) -> dict:
    return {"content": [{"type": "text", "text": json_dumps(output).decode()}], "structuredContent": output,
            "isError": False}


def _tool_error(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _tool_failure(name: str, error: Exception) -> dict:
    """A tool that raised: an isError result (Postiz's thrown errors), never a JSON-RPC error."""
    if isinstance(error, (ToolFailed, DatabaseUnwritable)):  # (the Store has logged a DatabaseUnwritable)
        return _tool_error(str(error))
    if isinstance(error, ApiError):
        return _tool_error(_api_error_text(error))
    log(f"unhandled error in the MCP tool {name}:\n" + traceback.format_exc().rstrip())
    return _tool_error(json.dumps({"id": "TOOL_EXECUTION_FAILED", "tool": name,
                                   "message": f"{name} failed on an internal error; the rustiz log has the details"}))


# --- the transport: JSON-RPC over Streamable HTTP, and the legacy HTTP+SSE ---------------------

def _mcp_openapi_paths() -> dict:
    """The MCP routes in the OpenAPI document: JSON-RPC is described by the MCP specification, not here."""
    key = _parameter("path", "apiKey", "The organization's API key (or send it as `Authorization: Bearer <key>` "
                                       "to the path without it)", required=True)
    message = {"description": "One JSON-RPC 2.0 message or a batch (MCP Streamable HTTP)",
               "content": {"application/json": {"schema": {"anyOf": [{"type": "object"}, {"type": "array"}]}}}}

    def endpoint(parameters: tuple) -> dict:
        post = _operation("MCP (Model Context Protocol) for AI agents: JSON-RPC requests, notifications, batches",
                          ("200", {"description": "The JSON-RPC answer(s); 202 when there is none to give",
                                   "content": {"application/json": {"schema": _ANY},
                                               "text/event-stream": {"schema": _STRING}}}),
                          "BadRequest", parameters, message, public=True)
        refuse = _operation("Refused with 405: rustiz sends no server-initiated messages",
                            ("405", {"type": "object"}), "", parameters, public=True)
        return {"post": post, "delete": _operation("End an MCP session (nothing is kept between requests)",
                                                   ("200", {"description": "Done"}), "", parameters, public=True),
                "get": refuse, "put": refuse, "patch": refuse,
                "options": _operation("CORS preflight", ("200", {"description": "OK"}), "", parameters, public=True)}

    preflight = _operation("CORS preflight", ("200", {"description": "OK"}), "", (key,), public=True)
    session = _parameter("query", "sessionId", "From the stream's endpoint event", required=True)
    return {
        "/mcp": endpoint(()), "/mcp/{apiKey}": endpoint((key,)),
        "/sse/{apiKey}": {"options": preflight, "get": _operation(
            "MCP legacy HTTP+SSE transport: a stream that announces its message endpoint, then carries the answers",
            ("200", {"description": "text/event-stream", "content": {"text/event-stream": {"schema": _STRING}}}),
            "", (key,), public=True)},
        "/message/{apiKey}": {"options": preflight, "post": _operation(
            "MCP legacy HTTP+SSE transport: a message for the stream's session; the answer goes to the stream",
            ("202", {"description": "Accepted"}), "BadRequest NotFound", (key, session), message, public=True)},
    }


class McpCall(NamedTuple):
    """What one POST carries besides its messages: who, and which protocol era its headers claim."""
    organization_id: str
    version_header: Optional[str]
    method_header: Optional[str]


def _text_response(status: int, text: str, headers: Optional[list] = None) -> Response:
    return Response(status, text.encode(), "text/plain; charset=utf-8", MCP_CORS_HEADERS + (headers or []))


def _rpc_response(value: Any, status: int = 200, headers: Optional[list] = None) -> Response:
    return Response(status, json_dumps(value), "application/json", MCP_CORS_HEADERS + (headers or []))


def _mcp_body_too_large(request: Request, size: int, limit: int) -> Response:
    return _rpc_response(_rpc_error(INVALID_REQUEST, f"Request body too large: {size} bytes, at most {limit}"), 413)


def _sse_event(message: dict) -> bytes:
    return b"event: message\ndata: " + json_dumps(message) + b"\n\n"


def _is_modern(params: Any) -> bool:
    """A 2026-07-28 request: its params carry the per-request envelope instead of a prior initialize."""
    return isinstance(params, dict) and isinstance(params.get("_meta"), dict) and _META_VERSION in params["_meta"]


def _wants_only_event_stream(request: Request) -> bool:
    accept = request.headers.get("accept", "").lower()
    return "text/event-stream" in accept and "application/json" not in accept and "*/*" not in accept


class McpServer:
    """The MCP routes: Postiz's URLs, authentication texts and CORS; JSON-RPC dispatch to McpTools."""

    def __init__(self, app: "App"):
        self.app = app
        self.guard = app.guard
        self.tools = McpTools(app)
        self.server_info = {"name": "rustiz", "version": VERSION}
        self.capabilities = {"tools": {}, "logging": {"enabled": True}}
        self.sse_sessions: dict = {}  # session id -> (organization id, its EventStreamResponse)
        self.sse_unread: dict = {}  # session id -> organization id, of streams ended because nobody read them

    def register(self, app: "App") -> None:
        # Postiz's MCP auth texts, checked from the head (so a refused body is never read); CORS preflights
        # carry no credentials.
        def add(method: str, path: str, handler: Callable) -> None:
            app.add(method, path, handler, authenticated=False, authenticate=self._organization,
                    body_limit=MCP_MAX_BODY_BYTES, too_large=_mcp_body_too_large)

        for prefix in ("", "/api"):
            for path in (prefix + "/mcp", prefix + "/mcp/:apiKey"):
                add("POST", path, self.post)
                add("DELETE", path, self.delete)
                for method in ("GET", "PUT", "PATCH"):
                    add(method, path, self.not_allowed)
                app.add("OPTIONS", path, self.preflight, authenticated=False)
            add("GET", prefix + "/sse/:apiKey", self.open_sse)
            app.add("OPTIONS", prefix + "/sse/:apiKey", self.preflight, authenticated=False)
            add("POST", prefix + "/message/:apiKey", self.post_sse_message)
            app.add("OPTIONS", prefix + "/message/:apiKey", self.preflight, authenticated=False)

    # --- HTTP ---------------------------------------------------------------------------------

    @staticmethod
    def preflight(request: Request) -> Response:
        return _text_response(200, "OK")

    def _organization(self, request: Request) -> Union[str, Response]:
        """Postiz's MCP auth: the key in the path (400 when unknown), else `Authorization: [Bearer ]<key>` (401)."""
        if "apiKey" in request.params:
            organization_id = self.guard.organization_for_key(request.params["apiKey"])
            return organization_id if organization_id is not None else _text_response(400, "Invalid API Key")
        header = request.headers.get("authorization")
        if not header:
            return _text_response(401, "Missing Authorization header")
        key = header[7:].strip() if header[:7].lower() == "bearer " else header.strip()
        organization_id = self.guard.organization_for_key(key) if key else None
        if organization_id is None:
            return _text_response(401, "Invalid API Key or OAuth token")
        return organization_id

    @staticmethod
    def not_allowed(request: Request) -> Response:
        # GET would open a stream for server-initiated messages; rustiz sends none (the spec allows 405).
        return _rpc_response(_rpc_error(-32000, "Method not allowed."), 405, [("Allow", "POST, DELETE, OPTIONS")])

    def delete(self, request: Request) -> Response:
        """Ending a session: nothing is kept between requests, so there is nothing to forget."""
        return _text_response(200, "")

    def post(self, request: Request) -> Union[Response, Awaitable[Response]]:
        organization_id = request.organization
        parsed = self._messages(request)
        if type(parsed) is Response:
            return parsed
        messages, batch = parsed
        call = McpCall(organization_id, request.headers.get("mcp-protocol-version"), request.headers.get("mcp-method"))
        answers = self._answer_all(messages, call)
        if not isinstance(answers, list):
            return self._reply_later(answers, request, batch)
        return self._reply(answers, request, batch)

    async def _reply_later(self, pending: Awaitable[list], request: Request, batch: bool) -> Response:
        return self._reply(await pending, request, batch)

    def _reply(self, answers: list, request: Request, batch: bool) -> Response:
        answers = [answer for answer in answers if answer is not None]
        if not answers:
            return _text_response(202, "")  # notifications and responses only
        headers = []
        modern_error = not batch and "error" in answers[0] and answers[0].get("_modern", False)
        if any([answer.pop("_session", False) for answer in answers]):
            headers.append(("Mcp-Session-Id", new_uuid()))
        for answer in answers:
            answer.pop("_modern", None)
        if _wants_only_event_stream(request):
            return Response(200, b"".join(_sse_event(answer) for answer in answers), "text/event-stream",
                            MCP_CORS_HEADERS + headers + [("Cache-Control", "no-cache")])
        status = 200  # the handshake era answers errors with 200, as Postiz's SDK; 2026-07-28 maps them
        if modern_error:
            status = 404 if answers[0]["error"]["code"] == METHOD_NOT_FOUND else 400
        return _rpc_response(answers if batch else answers[0], status, headers)

    def _messages(self, request: Request) -> Union[tuple, Response]:
        """(the JSON-RPC messages of a POST, whether they came as a batch), or the HTTP refusal."""
        if "application/json" not in request.headers.get("content-type", "").lower():
            return _rpc_response(_rpc_error(-32000, "Unsupported Media Type: Content-Type must be application/json"),
                                 415)
        try:
            body = json.loads(request.body)
        except (ValueError, RecursionError):
            return _rpc_response(_rpc_error(PARSE_ERROR, "Parse error: Invalid JSON"), 400)
        messages = body if isinstance(body, list) else [body]
        may_hold_surrogates = b"\\u" in request.body or b"\x00" in request.body[:4]  # as in Request.json
        for message in messages:
            problem = _unanswerable_request(message, may_hold_surrogates)
            if problem is not None:  # JSON-RPC 2.0: an Invalid Request is answered with the id null
                return _rpc_response(_rpc_error(INVALID_REQUEST, f"Invalid Request: {problem}"), 400)
        if not messages or not all(_is_jsonrpc_message(message) for message in messages):
            return _rpc_response(_rpc_error(PARSE_ERROR, "Parse error: Invalid JSON-RPC message"), 400)
        if len(messages) > MCP_MAX_BATCH:
            return _rpc_response(_rpc_error(INVALID_REQUEST, f"Invalid Request: a batch holds at most {MCP_MAX_BATCH} "
                                                             f"messages, got {len(messages)}"), 400)
        initializing = sum(1 for message in messages if message.get("method") == "initialize")
        if initializing and len(messages) > 1:
            return _rpc_response(_rpc_error(INVALID_REQUEST, "Invalid Request: Only one initialization request is "
                                                             "allowed"), 400)
        if isinstance(body, list) and any(_is_modern(message.get("params")) for message in messages):
            return _rpc_response(_rpc_error(INVALID_REQUEST, "Body must be a single JSON-RPC request or notification "
                                                             "object"), 400)
        version = request.headers.get("mcp-protocol-version")
        if version is not None and not initializing and version not in MCP_HANDSHAKE_VERSIONS + MCP_MODERN_VERSIONS:
            supported = ", ".join(MCP_MODERN_VERSIONS + MCP_HANDSHAKE_VERSIONS)
            return _rpc_response(_rpc_error(-32000, f"Bad Request: Unsupported protocol version: {version} "
                                                    f"(supported versions: {supported})"), 400)
        return messages, isinstance(body, list)

    # --- JSON-RPC -----------------------------------------------------------------------------

    def _answer_all(self, messages: list, call: McpCall) -> Union[list, Awaitable[list]]:
        """The answers (None for notifications), or an awaitable of them when a tool waits on the network."""
        answers = [self._answer(message, call) for message in messages]
        if all(answer is None or type(answer) is dict for answer in answers):
            return answers
        return self._gather(answers)

    @staticmethod
    async def _gather(answers: list) -> list:
        return [answer if answer is None or type(answer) is dict else await answer for answer in answers]

    def _answer(self, message: dict, call: McpCall) -> Union[None, dict, Awaitable[dict]]:
        if "method" not in message or "id" not in message:
            return None  # a notification (nothing to do for any of them) or a response to a request never sent
        request_id, params = message["id"], message.get("params")
        modern = _is_modern(params) or call.version_header in MCP_MODERN_VERSIONS
        try:
            if modern and message["method"] != "initialize":
                self._check_envelope(message, call)
            result = self._result(message["method"], params, call.organization_id, modern)
        except McpError as error:
            return {"jsonrpc": "2.0", "id": request_id, "error": error.payload(), "_modern": modern}
        except Exception:
            log("unhandled error in an MCP request:\n" + traceback.format_exc().rstrip())
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": "Internal error"}}
        if type(result) is not dict:  # a coroutine: the tool waits on the network
            return self._finish_answer(request_id, result, modern)
        return self._wrapped(request_id, result, modern, message["method"])

    async def _finish_answer(self, request_id: Any, pending: Awaitable[dict], modern: bool) -> dict:
        try:
            result = await pending
        except Exception:
            log("unhandled error in an MCP tool:\n" + traceback.format_exc().rstrip())
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": "Internal error"}}
        return self._wrapped(request_id, result, modern, "tools/call")

    def _wrapped(self, request_id: Any, result: dict, modern: bool, method: str) -> dict:
        if modern:
            result = {**result, "resultType": "complete", "_meta": {_META_SERVER_INFO: self.server_info}}
        answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
        if method == "initialize":
            answer["_session"] = True  # _reply adds an Mcp-Session-Id header, then drops this mark
        return answer

    @staticmethod
    def _check_envelope(message: dict, call: McpCall) -> None:
        """2026-07-28's per-request fields: the envelope, then the headers agreeing with it, then the version."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        missing = [key for key in (_META_VERSION, _META_CAPABILITIES) if not isinstance(meta, dict) or key not in meta]
        if missing:
            raise McpError(INVALID_PARAMS, f"params._meta is missing the required envelope key(s): {', '.join(missing)}")
        version = meta[_META_VERSION]
        if call.version_header is not None and call.version_header != version:
            raise McpError(HEADER_MISMATCH, "MCP-Protocol-Version header does not match the request envelope's "
                                            "protocol version")
        if call.method_header is not None and call.method_header != message["method"]:
            raise McpError(HEADER_MISMATCH, "Mcp-Method header does not match the request body's method")
        if version not in MCP_MODERN_VERSIONS:
            raise McpError(UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {version}",
                           {"supported": list(MCP_MODERN_VERSIONS + MCP_HANDSHAKE_VERSIONS[:4]), "requested": version})

    def _result(self, method: str, params: Any, organization_id: str, modern: bool) -> Union[dict, Awaitable[dict]]:
        if params is not None and not isinstance(params, dict):
            raise McpError(INVALID_PARAMS, f"Invalid params: {method} takes an object as params")
        params = params or {}
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments")
            if not isinstance(name, str):
                raise McpError(INVALID_PARAMS, "Invalid params: tools/call needs params.name, the tool's name "
                                               "(see tools/list)")
            if arguments is not None and not isinstance(arguments, dict):
                raise McpError(INVALID_PARAMS, f"Invalid params: params.arguments of {name} must be an object")
            return self.tools.call(organization_id, name, arguments)
        if method == "tools/list":
            return {**self.tools.list_result, "cacheScope": "public", "ttlMs": 0} if modern else self.tools.list_result
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in MCP_HANDSHAKE_VERSIONS else MCP_LATEST_HANDSHAKE
            return {"protocolVersion": version, "capabilities": self.capabilities, "serverInfo": self.server_info}
        if method == "server/discover":
            return {"supportedVersions": list(MCP_MODERN_VERSIONS + MCP_HANDSHAKE_VERSIONS[:4]),
                    "capabilities": {"tools": {}}, "cacheScope": "public", "ttlMs": 0}
        if method in ("ping", "logging/setLevel"):
            return {}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    # --- the legacy HTTP+SSE transport (2024-11-05) -------------------------------------------

    def open_sse(self, request: Request) -> Response:
        organization_id = request.organization
        if request.method == "HEAD":  # the head of a stream, without opening a session nobody will read
            return Response(200, b"", "text/event-stream", list(MCP_CORS_HEADERS))
        if len(self.sse_sessions) >= MCP_MAX_SSE_SESSIONS:
            return _text_response(503, f"Too many open MCP SSE streams (at most {MCP_MAX_SSE_SESSIONS} per worker); "
                                       f"use the Streamable HTTP endpoint /mcp/<key> instead")
        from urllib.parse import quote
        session_id = new_uuid()
        events = CountingQueue()
        prefix = "/api" if request.path.startswith("/api/") else ""
        endpoint = f"{prefix}/message/{quote(request.params['apiKey'], safe='')}?sessionId={session_id}"
        events.put_nowait(f"event: endpoint\ndata: {endpoint}\n\n".encode())
        stream = EventStreamResponse(events, lambda: self.sse_sessions.pop(session_id, None), MCP_CORS_HEADERS)
        self.sse_sessions[session_id] = (organization_id, stream)
        return stream

    def post_sse_message(self, request: Request) -> Union[Response, Awaitable[Response]]:
        organization_id = request.organization
        session_id = request.query.get("sessionId", "")
        if self.sse_unread.get(session_id) == organization_id:
            return _stream_ended_unread()
        session = self.sse_sessions.get(session_id)
        if session is None or session[0] != organization_id:
            # Sessions live in the worker holding the stream; another worker cannot reach it.
            workers = (f"; with {self.app.config.workers} workers this message may have reached another worker "
                       f"than the stream's: use the Streamable HTTP endpoint /mcp/<key> instead"
                       if self.app.config.workers > 1 else "")
            return _text_response(404, "Session not found: open a new SSE stream at /sse/<key> and post to the "
                                       "endpoint it announces" + workers)
        parsed = self._messages(request)
        if type(parsed) is Response:
            return parsed
        call = McpCall(organization_id, request.headers.get("mcp-protocol-version"), None)
        answers = self._answer_all(parsed[0], call)
        if isinstance(answers, list):
            return self._post_to_stream(answers, session_id)
        return self._post_to_stream_later(answers, session_id)

    async def _post_to_stream_later(self, pending: Awaitable[list], session_id: str) -> Response:
        return self._post_to_stream(await pending, session_id)

    def _post_to_stream(self, answers: list, session_id: str) -> Response:
        """The answers onto the session's stream; a client that leaves too many unread loses the stream."""
        session = self.sse_sessions.get(session_id)
        if session is None:  # the stream closed while a tool ran
            return _stream_ended_unread() if session_id in self.sse_unread else \
                _text_response(404, "Session not found: the SSE stream closed; open a new one at /sse/<key>")
        stream = session[1]
        for answer in answers:
            if answer is not None:
                answer.pop("_session", None)
                answer.pop("_modern", None)
                event = _sse_event(answer)
                waiting = stream.events.waiting_bytes
                if waiting and waiting + len(event) > MCP_SSE_QUEUE_BYTES:
                    self._end_unread_stream(session_id, session[0], stream)
                    return _stream_ended_unread()
                stream.events.put_nowait(event)
        return _text_response(202, "Accepted")

    def _end_unread_stream(self, session_id: str, organization_id: str, stream: EventStreamResponse) -> None:
        log(f"legacy MCP SSE stream {session_id} ended: its client left more than {MCP_SSE_QUEUE_BYTES} bytes "
            "of answers unread")
        self.sse_sessions.pop(session_id, None)
        self.sse_unread[session_id] = organization_id
        if len(self.sse_unread) > MCP_SSE_ENDED_REMEMBERED:
            del self.sse_unread[next(iter(self.sse_unread))]  # the oldest
        stream.abandon()


class CountingQueue(asyncio.Queue):
    """An asyncio.Queue of bytes (or None) that keeps count of the bytes waiting in it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting_bytes = 0

    def _put(self, item: Optional[bytes]) -> None:  # asyncio.Queue's hooks for subclasses (as PriorityQueue's)
        self.waiting_bytes += len(item) if item else 0
        super()._put(item)

    def _get(self) -> Optional[bytes]:
        item = super()._get()
        self.waiting_bytes -= len(item) if item else 0
        return item


def _stream_ended_unread() -> Response:
    return _rpc_response(_rpc_error(-32000, (
        f"This SSE stream was closed because its client did not read it: more than {MCP_SSE_QUEUE_BYTES // 1048576} "
        "MiB of answers were waiting. Open a new stream at /sse/<key> and read it while posting to the endpoint it "
        "announces (or use the Streamable HTTP endpoint /mcp/<key>)")), 410)


# The ids a request may carry: strings, and the integers every JSON-RPC peer holds (64-bit, signed).
MCP_ID_MIN, MCP_ID_MAX = -2**63, 2**63 - 1


def _unanswerable_request(message: Any, may_hold_surrogates: bool) -> Optional[str]:
    """Why a request parsed but cannot be answered: an id its answer could not carry back exactly (1e400,
    2**64, 1.5), or text that is no Unicode (a lone surrogate from a \\u escape). None when it can be."""
    if not isinstance(message, dict) or "method" not in message:
        return None
    request_id = message.get("id")
    if isinstance(request_id, float) or (type(request_id) is int and not MCP_ID_MIN <= request_id <= MCP_ID_MAX):
        return f"the id must be a string or an integer from {MCP_ID_MIN} to {MCP_ID_MAX}"
    if not may_hold_surrogates:
        return None
    for where, value in (("the id", request_id if isinstance(request_id, str) else ""), ("the message", message)):
        surrogate = lone_surrogate(value)
        if surrogate is not None:
            return (f"{where} holds a lone UTF-16 surrogate ({surrogate} without its pair), which is no "
                    "character; send the character itself or a whole \\uXXXX\\uXXXX pair")
    return None


def _is_jsonrpc_message(message: Any) -> bool:
    """A request, notification or response of JSON-RPC 2.0, as the SDKs' schema accepts them."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "method" in message:
        request_id = message.get("id")
        return isinstance(message["method"], str) and ("id" not in message or (
            isinstance(request_id, (str, int)) and not isinstance(request_id, bool)))
    return "id" in message and ("result" in message or "error" in message)


# =============================================================================
# 10. Web app: the browser UI's files, and sign-in sessions for it
# =============================================================================
# The UI in web/ (packed into the .pyz) talks only to the public API, as any script could. A person
# signs in with the organization's API key or a password (`rustiz user add`); the session is an
# HttpOnly, SameSite=Strict cookie that stands for the key, and every change it makes must also
# carry the session's CSRF token (Guard.session_organization). A session lives in the database (every
# request looks it up there, so every worker sees it end at once) and ends with what signed it in: the
# key rotated, the password changed, the user removed. Passwords are hashed off the event loop, and
# password sign-ins are counted per email and per client address.

SESSION_COOKIE = "rustiz_session"
SESSION_SECONDS = 30 * 86400
PASSWORD_ITERATIONS = 200_000
# What an unknown email's password is checked against, so that it takes as long to refuse as a known one's
# (zeros: no password hashes to them).
UNKNOWN_USER_PASSWORD_HASH = f"pbkdf2_sha256${PASSWORD_ITERATIONS}${'0' * 32}${'0' * 64}"
PASSWORD_THREADS = 2  # per worker: PBKDF2 runs there, never on the event loop
MAX_PASSWORD_CHECKS = 16  # per worker, hashing or waiting for a thread; more sign-ins at once get a 503
SIGN_IN_WINDOW_SECONDS = 15 * 60
SIGN_IN_ATTEMPTS_PER_EMAIL = 10  # password sign-ins per email per window, from any address
SIGN_IN_ATTEMPTS_PER_ADDRESS = 30  # password sign-ins per client address per window, for any email
WEB_CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src 'self' data: blob: https: http:; style-src 'self'; "
                               "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
                               "form-action 'self'")
_WEB_CONTENT_TYPES = {"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                      "css": "text/css; charset=utf-8", "svg": "image/svg+xml", "png": "image/png",
                      "ico": "image/x-icon", "json": "application/json", "webmanifest": "application/manifest+json",
                      "txt": "text/plain; charset=utf-8", "woff2": "font/woff2"}


def session_cookie(request: Request) -> Optional[str]:
    """The web session token from the Cookie header, or None."""
    for part in request.headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == SESSION_COOKIE and value:
            return value
    return None


def hash_password(password: str) -> str:
    """PBKDF2-SHA256 with a random salt, as `pbkdf2_sha256$iterations$salt$hash` (hex)."""
    import hashlib
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, PASSWORD_ITERATIONS)
    return f"pbkdf2_sha256${PASSWORD_ITERATIONS}${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    import hashlib
    scheme, iterations, salt, expected = stored.split("$")
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), int(iterations))
    return scheme == "pbkdf2_sha256" and compare_digest(digest.hex().encode(), expected.encode())


class PasswordChecker:
    """Checks passwords in a few threads of their own, made on first use (hashlib lets go of the GIL while
    it hashes, so the event loop keeps serving); at most MAX_PASSWORD_CHECKS wait or run at once."""

    def __init__(self) -> None:
        self._executor: Any = None
        self.in_flight = 0

    async def matches(self, password: str, stored: str) -> bool:
        if self.in_flight >= MAX_PASSWORD_CHECKS:
            raise ApiError(503, {"statusCode": 503, "error": "Service Unavailable", "message": (
                f"Too many sign-ins at once ({MAX_PASSWORD_CHECKS} are being checked): try again in a few "
                "seconds")}, [("Retry-After", "5")])
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor
            self._executor = ThreadPoolExecutor(PASSWORD_THREADS, thread_name_prefix="rustiz-password")
        self.in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, password_matches, password,
                                                                    stored)
        finally:
            self.in_flight -= 1


def start_web_session(store: Store, guard: "Guard", request: Request, organization_id: str,
                      api_key_hash: Optional[str] = None, web_user_id: Optional[str] = None) -> tuple:
    """A new session signed in with the key of that hash or by that web user: (Set-Cookie value, CSRF token)."""
    token, csrf_token = os.urandom(32).hex(), os.urandom(16).hex()
    store.create_web_session(hash_api_key(token), organization_id, csrf_token, time.time() + SESSION_SECONDS,
                             api_key_hash, web_user_id)
    cookie = (f"{SESSION_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={SESSION_SECONDS}"
              + ("; Secure" if guard.over_https(request) else ""))  # never on plain http: no login loop
    return cookie, csrf_token


def web_files() -> dict:
    """name -> bytes of every file of the UI: web/ beside rustiz.py, or inside the .pyz it runs from."""
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(here, "web")
    files = {}
    if os.path.isdir(folder):
        for directory, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(directory, name)
                with open(path, "rb") as file:
                    files[os.path.relpath(path, folder).replace(os.sep, "/")] = file.read()
    elif os.path.isfile(here):  # `here` is the .pyz itself
        import zipfile
        with zipfile.ZipFile(here) as archive:
            for name in archive.namelist():
                if name.startswith("web/") and not name.endswith("/"):
                    files[name[4:]] = archive.read(name)
    return files


def _web_openapi_paths(root: dict) -> dict:
    """The web app's sign-in routes (its HTML, JavaScript and CSS files are not API, so not listed)."""
    signed_in = _object({"organization": _schema_ref("Organization"), "csrfToken": _STRING})
    unauthorized = ("401", {"description": "Wrong key or password, or not signed in",
                            "content": {"application/json": {"schema": _object({"message": _STRING})}}})
    login = _operation("Sign in to the web app: sets the HttpOnly session cookie", ("200", signed_in), "BadRequest",
                       body={"anyOf": [_object({"apiKey": _STRING}), _object({"email": _STRING, "password": _STRING})]},
                       public=True)
    login["responses"]["401"] = unauthorized[1]
    session = _operation("The signed-in organization and the CSRF token changes must send (X-CSRF-Token)",
                         ("200", signed_in), public=True)
    session["responses"]["401"] = unauthorized[1]
    logout = _operation("Sign out: the session ends and its cookie is cleared",
                        ("204", {"description": "Done, with no body", "content": {}}), public=True)
    return {"/auth/login": {"servers": [root], "post": login}, "/auth/session": {"servers": [root], "get": session},
            "/auth/logout": {"servers": [root], "post": logout}}


# What sign-in and sign-out bodies may weigh: these routes are open to anyone, so nobody may make them
# hold megabytes (a key, an email and a password are well under 1 KiB).
SIGN_IN_BODY_BYTES = 16 * 1024


class WebApp:
    """GET / and /web/<file>; POST /auth/login, GET /auth/session, POST /auth/logout."""

    def __init__(self, config: Config, store: Store, guard: Guard):
        self.config, self.store, self.guard = config, store, guard
        self.passwords = PasswordChecker()

    def register(self, app: "App") -> None:
        files = web_files()
        for name, data in files.items():
            answer = self._file_answer(name, data)
            app.add_file("/web/" + name, lambda request, answer=answer: self._serve(request, answer))
        if "index.html" in files:
            index = self._file_answer("index.html", files["index.html"])
            app.add_file("/", lambda request: self._serve(request, index))
        app.add("POST", "/auth/login", self.login, authenticated=False, body_limit=SIGN_IN_BODY_BYTES)
        app.add("GET", "/auth/session", self.session, authenticated=False)
        app.add("POST", "/auth/logout", self.logout, authenticated=False, body_limit=SIGN_IN_BODY_BYTES)

    @staticmethod
    def _file_answer(name: str, data: bytes) -> tuple:
        content_type = _WEB_CONTENT_TYPES.get(name.rpartition(".")[2], "application/octet-stream")
        etag = '"' + _sha256(data).hexdigest()[:20] + '"'
        return data, content_type, etag

    @staticmethod
    def _serve(request: Request, answer: tuple) -> Response:
        data, content_type, etag = answer
        headers = [("ETag", etag), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"),
                   ("Content-Security-Policy", WEB_CONTENT_SECURITY_POLICY), ("Referrer-Policy", "no-referrer")]
        if etag in request.headers.get("if-none-match", ""):
            return Response(304, b"", "", headers)
        return Response(200, data, content_type, headers)

    def login(self, request: Request) -> Union[Response, Awaitable[Response]]:
        body = _json_object(request)
        if isinstance(body.get("apiKey"), str) and body["apiKey"].strip():
            key = body["apiKey"].strip()
            organization_id = self.guard.organization_for_key(key)
            if organization_id is None:
                raise ApiError(401, {"statusCode": 401, "message": "This API key is not one of this rustiz's "
                                                                   "organizations (`rustiz key rotate` prints a new one)"})
            return self._signed_in(request, organization_id, api_key_hash=hash_api_key(key))
        email, password = body.get("email"), body.get("password")
        if not (isinstance(email, str) and isinstance(password, str) and email and password):
            raise bad_request("Sign in with {\"apiKey\"} or with {\"email\", \"password\"}")
        email = email.strip().lower()
        self._count_sign_in("address:" + self.guard.client_address(request), SIGN_IN_ATTEMPTS_PER_ADDRESS,
                            "from your address")
        self._count_sign_in("email:" + email, SIGN_IN_ATTEMPTS_PER_EMAIL, f"for {email}")
        return self._password_sign_in(request, email, password)

    def _count_sign_in(self, key: str, limit: int, whose: str) -> None:
        """One password sign-in counted against `limit` per window (in the database, shared by every worker)."""
        decision = self.store.count_request("sign-in " + key, limit, SIGN_IN_WINDOW_SECONDS)
        if not decision.allowed:
            raise ApiError(429, {"statusCode": 429, "error": "Too Many Requests", "message": (
                f"Too many sign-in attempts {whose} (at most {limit} in {SIGN_IN_WINDOW_SECONDS // 60} minutes): "
                f"try again in {_duration(decision.retry_after)}")}, [("Retry-After", str(decision.retry_after))])

    async def _password_sign_in(self, request: Request, email: str, password: str) -> Response:
        user = self.store.web_user(email)
        # An unknown email costs the same hashing as a known one: how long a refusal takes tells nothing.
        matches = await self.passwords.matches(password, user[2] if user else UNKNOWN_USER_PASSWORD_HASH)
        if user is None or not matches:
            raise ApiError(401, {"statusCode": 401, "message": "Wrong email or password"})
        return self._signed_in(request, user[1], web_user_id=user[0])

    def _signed_in(self, request: Request, organization_id: str, **made_from: Optional[str]) -> Response:
        cookie, csrf_token = start_web_session(self.store, self.guard, request, organization_id, **made_from)
        return json_response({"organization": self.store.organization(organization_id), "csrfToken": csrf_token},
                             200, [("Set-Cookie", cookie), ("Cache-Control", "no-store")])

    def session(self, request: Request) -> Response:
        token = session_cookie(request)
        found = self.store.web_session(hash_api_key(token)) if token else None
        if found is None:
            raise ApiError(401, {"statusCode": 401, "message": "Not signed in"})
        organization_id, csrf_token = found
        return json_response({"organization": self.store.organization(organization_id), "csrfToken": csrf_token},
                             200, [("Cache-Control", "no-store")])

    def logout(self, request: Request) -> Response:
        token = session_cookie(request)
        if token:
            self.store.end_web_session(hash_api_key(token))
        return Response(204, b"", "", [("Set-Cookie", f"{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; "
                                                      "Max-Age=0")])


# =============================================================================
# 11. Outbound HTTP: the one client every provider and webhook uses
# =============================================================================
# http.client in a small thread pool, behind an async call: the event loop never blocks, and TLS
# comes from the ssl module, imported on first use (see the note on asyncio at the top). What a
# caller must know is whether the platform may have seen the request: ConnectFailed means nothing
# was sent; NoAnswer means it was sent and no complete answer came back.
#
# The address guard. Every connection rustiz opens to another server (platform APIs, media and
# link-card downloads, outgoing webhooks, Nostr relays) starts in HttpClient.checked_addresses: the
# host name is resolved once, every address it resolves to is checked, and the socket is connected to
# a checked address (the Host header and the TLS name check still use the host name), so a DNS answer
# that changes between the check and the connection cannot reach a private service. Redirects go
# through the same check. Private, loopback, link-local, unspecified, multicast and reserved addresses,
# in any spelling (2130706433, 0x7f000001, 127.1, ::ffff:127.0.0.1, 64:ff9b::7f00:1...), are refused
# unless RUSTIZ_FETCH_ALLOW lists the host or the address: the URLs are a tenant's, and must not make
# rustiz a way into its own host or network.

OUTBOUND_THREADS = 8
MAX_OUTBOUND_REPLY_BYTES = 32 * 1024 * 1024  # an answer's size as sent, and again once unpacked (gzip, deflate)
MAX_REDIRECTS = 5
USER_AGENT = f"rustiz/{VERSION} (+https://github.com/rustiz/rustiz)"
ACCEPT_ENCODING = "gzip, deflate"  # the encodings rustiz asks for, and so the only ones it unpacks
ERROR_WORDS_LIMIT = 300  # characters of a platform's own error message that an error quotes
FETCH_ALLOW_HINT = "rustiz does not reach private networks unless RUSTIZ_FETCH_ALLOW lists them"
_REDIRECT_STATUSES = (301, 302, 303, 307, 308)
_READ_PIECE_BYTES = 64 * 1024


class HttpReply(NamedTuple):
    status: int
    headers: dict  # lower-case names; a repeated header keeps its last value
    body: bytes
    url: str  # after redirects

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON (an HTML error page from a proxy, say)."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def described(self, expected: str) -> str:
        """What came back, without quoting it (it may be any server's page): "HTTP 200, 1,234 bytes that
        are not <expected>". There is deliberately no way to quote a raw body in an error."""
        size = len(self.body)
        return f"HTTP {self.status}, " + (f"{size:,} bytes that are not {expected}" if size
                                          else f"an empty answer instead of {expected}")


class ConnectFailed(Exception):
    """Nothing reached the server (name lookup, refused connection, TLS handshake): safe to retry."""


class AddressRefused(ConnectFailed):
    """The address guard refused the host before connecting: nothing was sent, and every retry would be
    refused too, until the operator lists the host in RUSTIZ_FETCH_ALLOW."""


class NoAnswer(Exception):
    """The request was sent, but no complete answer came: the server may have acted on it."""


class Timeouts(NamedTuple):
    connect: float = 10.0
    read: float = 30.0  # the longest silence while waiting for or reading the answer
    total: float = 120.0


class _Redirect(NamedTuple):
    url: str


def parsed_url(url: str, schemes: tuple = ("http", "https")) -> Any:
    """`url` split (urllib's SplitResult) once it is known to name a host and port rustiz can connect to;
    otherwise a ValueError says what is wrong, in words that follow the field's name ("has no host name")."""
    from urllib.parse import urlsplit
    if re.search(r"[\x00-\x20\x7f]", url):
        raise ValueError("must not contain spaces or control characters")
    malformed_ipv6 = f"has a malformed IPv6 address: write it in brackets, like {schemes[-1]}://[2001:db8::1]:8080/"
    try:
        parts = urlsplit(url)
    except ValueError:  # "Invalid IPv6 URL", or brackets around something that is no IP address
        raise ValueError(malformed_ipv6) from None
    if parts.scheme.lower() not in schemes:
        raise ValueError(f"must be a URL address starting with {' or '.join(scheme + '://' for scheme in schemes)}")
    host_and_port = parts.netloc.rpartition("@")[2]
    if not parts.hostname:
        raise ValueError("has no host name")
    if host_and_port.startswith("["):
        import ipaddress
        try:
            ipaddress.IPv6Address(parts.hostname.partition("%")[0])
        except ValueError:
            raise ValueError(malformed_ipv6) from None
        if not re.fullmatch(r"\[[^\]]*\](:[0-9]*)?", host_and_port):
            raise ValueError(malformed_ipv6)
    elif not _valid_host_name(parts.hostname):
        raise ValueError(f"has a host name that cannot exist: {parts.hostname[:100]!r}")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError("has a port that is not a number from 1 to 65535")
    return parts


def _valid_host_name(host: str) -> bool:
    """Labels of letters, digits, '-' and '_' (international names as IDNA), none empty or over 63 characters."""
    try:
        encoded = host.encode("idna")
    except UnicodeError:
        return False
    return re.fullmatch(rb"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?", encoded.lower()) is not None


def _ascii_host(host: str) -> str:
    """An international host name as the ASCII (IDNA) name that Host headers and certificates carry."""
    return host if host.isascii() else host.encode("idna").decode("ascii")


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _carried_ipv4(ip: Any) -> Any:
    """The IPv4 address an IPv6 one leads to (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, IPv4-compatible
    ::a.b.c.d, 6to4 2002::/16), or None."""
    import ipaddress
    if ip.version != 6:
        return None
    if ip.ipv4_mapped is not None or ip.sixtofour is not None:
        return ip.ipv4_mapped or ip.sixtofour
    number = int(ip)
    if number >> 32 == 0x64FF9B << 64 or 1 < number < 2**32:  # NAT64's well-known prefix, or IPv4-compatible
        return ipaddress.IPv4Address(number & 0xFFFFFFFF)
    return None


def address_refusal(address: str) -> Optional[str]:
    """Why rustiz may not connect to the IP `address` ("a loopback address"...), or None for a public one.
    An IPv6 address that leads to an IPv4 one is judged by that IPv4 address."""
    import ipaddress
    ip = ipaddress.ip_address(address.partition("%")[0])
    ip = _carried_ipv4(ip) or ip
    for check, description in (("is_unspecified", "an unspecified address"), ("is_loopback", "a loopback address"),
                               ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address"),
                               ("is_reserved", "a reserved address"), ("is_private", "a private address")):
        if getattr(ip, check):
            return description
    if getattr(ip, "is_site_local", False):
        return "a site-local address"
    return None if ip.is_global else "not a public address"


def _is_address(host: str, address: str) -> bool:
    """Whether `host` is `address` written as an IP address (::7f00:1 is ::127.0.0.1), not a name for it."""
    import ipaddress
    try:
        return ipaddress.ip_address(host) == ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return False


def _listed(allow: tuple, host: str, address: str) -> bool:
    """Whether RUSTIZ_FETCH_ALLOW names the host, or a network holding the address (or the IPv4 it leads to)."""
    import ipaddress
    ip = ipaddress.ip_address(address.partition("%")[0])
    candidates = (ip, _carried_ipv4(ip))
    return any(item == host if type(item) is str else any(candidate in item for candidate in candidates if candidate)
               for item in allow)


def encode_multipart(fields: list) -> tuple:
    """(body, content type) for multipart/form-data; `fields` are (name, value) with value a str, or
    (name, (filename, bytes, content_type)) for a file."""
    boundary = "rustiz" + os.urandom(12).hex()
    pieces = []
    for name, value in fields:
        if isinstance(value, tuple):
            filename, data, content_type = value
            pieces.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                          f'filename="{filename}"\r\nContent-Type: {content_type}\r\n\r\n'.encode() + data + b"\r\n")
        else:
            pieces.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
                          + str(value).encode() + b"\r\n")
    pieces.append(f"--{boundary}--\r\n".encode())
    return b"".join(pieces), f"multipart/form-data; boundary={boundary}"


class _Inflater:
    """A gzip or deflate body unpacked piece by piece, never more than a piece at a time: a few megabytes
    of gzip can hold gigabytes (a decompression bomb), so the caller counts what comes out as it comes."""

    def __init__(self, encoding: str, where: str):
        import zlib
        self.zlib, self.encoding, self.where = zlib, encoding, where
        self.inflate: Any = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding != "deflate" else None
        self.fed = False

    def pieces(self, data: bytes) -> Any:
        """The unpacked pieces of the next `data` (a generator)."""
        zlib = self.zlib
        if self.inflate is None:  # deflate is zlib-wrapped (RFC 9110), but some servers send it raw
            wrapped = len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self.inflate = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        self.fed = self.fed or bool(data)
        while not self.inflate.eof:
            try:
                piece = self.inflate.decompress(data, _READ_PIECE_BYTES)
            except zlib.error as error:
                raise NoAnswer(f"{self.where} sent a broken {self.encoding} body: {error}") from None
            data = self.inflate.unconsumed_tail
            if piece:
                yield piece
            if not data and len(piece) < _READ_PIECE_BYTES:  # a full piece may leave more inside zlib
                return

    def finish(self) -> None:
        if self.fed and not self.inflate.eof:
            raise NoAnswer(f"{self.where} sent a {self.encoding} body that ends too early")


HEADERS_KEPT_ACROSS_ORIGINS = frozenset(("accept", "accept-language", "user-agent"))


def _origin(url: str) -> tuple:
    """(scheme, host, port) of an absolute URL, as a browser compares origins."""
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port or (443 if parts.scheme.lower() == "https" else 80)


class HttpClient:
    """`await client.request(method, url, ...)` -> HttpReply, for any status; raises ConnectFailed (and its
    AddressRefused) or NoAnswer.

    Certificates are verified (the system store, or SSL_CERT_FILE), HTTPS_PROXY/HTTP_PROXY/NO_PROXY
    are honoured, gzip and deflate answers are unpacked (32 MiB at most), GET and HEAD follow up to 5
    redirects, and every connection passes the address guard (see the top of this section)."""

    def __init__(self, allow: tuple, threads: int = OUTBOUND_THREADS):
        self.allow = allow  # Config.fetch_allow: host names and networks the guard lets through although private
        self._threads = threads
        self._executor: Any = None
        self._tls: Any = None

    async def request(self, method: str, url: str, headers: Optional[dict] = None, body: bytes = b"",
                      json_body: Any = None, form: Optional[dict] = None, timeouts: Timeouts = Timeouts()) -> HttpReply:
        headers = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False).encode()
            headers.setdefault("Content-Type", "application/json")
        elif form is not None:
            from urllib.parse import urlencode
            body = urlencode(form, doseq=True).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        return await self.run_blocking(self._exchange, method, url, headers, body, timeouts)

    async def download(self, url: str, read: Callable[[HttpReply, Any], Any], headers: Optional[dict] = None,
                       timeouts: Timeouts = Timeouts(), max_redirects: int = MAX_REDIRECTS) -> Any:
        """GET `url` and hand the answer to `read(head, pieces)` in a client thread, as it arrives: `head` is
        the answer without its body, `pieces` an iterator over the body's (unpacked) bytes. For bodies that
        go to disk rather than memory; `read` bounds their size. Returns what `read` returns."""
        return await self.run_blocking(self._exchange, "GET", url, dict(headers or {}), b"", timeouts, read,
                                       max_redirects)

    async def check_url(self, url: str) -> None:
        """Raise AddressRefused when the guard would refuse `url`'s host, without connecting to it (for a URL
        that is only used later); a host that cannot be resolved now passes (connecting checks it again)."""
        try:
            parts = parsed_url(url, ("http", "https", "ws", "wss"))
        except ValueError:
            return  # a malformed URL is its validator's to refuse, and the client's to fail on
        secure = parts.scheme.lower() in ("https", "wss")
        try:
            await self.run_blocking(self.checked_addresses, parts.hostname, parts.port or (443 if secure else 80))
        except AddressRefused:
            raise
        except ConnectFailed:
            pass

    async def run_blocking(self, function: Callable, *arguments: Any) -> Any:
        """`function(*arguments)` in this client's threads (a download, a blocking library call)."""
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor
            self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="rustiz-http")
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *arguments)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    # --- the address guard -------------------------------------------------------------------------

    def checked_addresses(self, host: str, port: int) -> list:
        """Every address `host` resolves to, each checked: AddressRefused when any is not public and
        RUSTIZ_FETCH_ALLOW lists neither the host nor the address (a name that resolves to a public and a
        private address is refused, whichever would have been tried first); ConnectFailed when it does not
        resolve. Blocking: the client's threads call it."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError) as error:
            raise ConnectFailed(f"cannot resolve {host}: {getattr(error, 'strerror', None) or error}") from None
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        name = host.lower().rstrip(".")
        for address in addresses:
            refusal = address_refusal(address)
            if refusal is not None and not _listed(self.allow, name, address):
                problem = (f"{host} is {refusal}" if _is_address(host, address)
                           else f"{host} resolves to {address}, {refusal}")
                raise AddressRefused(f"{problem}; {FETCH_ALLOW_HINT}")
        return addresses

    def open_socket(self, host: str, port: int, timeout: float, tls: bool) -> socket.socket:
        """A socket to `host`, connected to an address the guard checked (TLS, with `host`'s certificate
        checked, when `tls`); raises AddressRefused, or ConnectFailed when no address could be connected."""
        return self._open_checked(self.checked_addresses(host, port), host, port, timeout, tls)

    def _open_checked(self, addresses: list, host: str, port: int, timeout: float, tls: bool) -> socket.socket:
        failure: BaseException = OSError("no address")
        for address in addresses:  # each was checked: try them in the resolver's order, as browsers do
            try:
                sock = socket.create_connection((address, port), timeout)
            except OSError as error:
                failure = error
                continue
            if not tls:
                return sock
            try:
                return self._tls_context().wrap_socket(sock, server_hostname=host)
            except (OSError, ValueError) as error:  # a refused certificate: another address would not do better
                sock.close()
                failure = error
                break
        raise ConnectFailed(f"cannot connect to {_host_port(host, port)}: {_network_reason(failure)}")

    def _tls_context(self) -> Any:
        if self._tls is None:
            import ssl
            self._tls = ssl.create_default_context()
        return self._tls

    def _connection(self, scheme: str, host: str, port: int, timeout: float) -> tuple:
        """(connection, whether requests carry the full URL): pinned to a checked address, or through the
        environment's proxy."""
        import http.client
        import urllib.request
        proxy = urllib.request.getproxies().get(scheme)
        if not proxy or urllib.request.proxy_bypass(host):
            addresses = self.checked_addresses(host, port)
            https = scheme == "https"
            connection = (http.client.HTTPSConnection(host, port, timeout=timeout, context=self._tls_context())
                          if https else http.client.HTTPConnection(host, port, timeout=timeout))
            connection.connect = lambda: setattr(connection, "sock",
                                                 self._open_checked(addresses, host, port, timeout, https))
            return connection, False
        # The proxy is the operator's, and it resolves the name and connects by itself: what can still be
        # checked here is, and is refused (a literal private address, or a name that resolves here to
        # one). A name that only the proxy can resolve is the proxy's to police, like any egress policy.
        try:
            self.checked_addresses(host, port)
        except AddressRefused:
            raise
        except ConnectFailed:
            pass
        from urllib.parse import urlsplit
        proxy_parts = urlsplit(proxy if "://" in proxy else "http://" + proxy)
        if scheme == "https":  # a CONNECT tunnel, then TLS to the real host inside it
            connection = http.client.HTTPSConnection(proxy_parts.hostname, proxy_parts.port or 80,
                                                     timeout=timeout, context=self._tls_context())
            connection.set_tunnel(host, port)
            return connection, False
        return http.client.HTTPConnection(proxy_parts.hostname, proxy_parts.port or 80, timeout=timeout), True

    # --- one exchange ------------------------------------------------------------------------------

    def _exchange(self, method: str, url: str, headers: dict, body: bytes, timeouts: Timeouts,
                  read: Optional[Callable] = None, max_redirects: int = MAX_REDIRECTS) -> Any:
        deadline = time.monotonic() + timeouts.total
        for _ in range(max_redirects + 1):
            outcome = self._one_exchange(method, url, headers, body, timeouts, deadline, read)
            if type(outcome) is not _Redirect:
                return outcome
            if _origin(outcome.url) != _origin(url):
                # Credentials (Authorization, Dev.to's api-key, cookies...) were meant for the first server
                # only: a redirect elsewhere gets none of them.
                headers = {name: value for name, value in headers.items()
                           if name.lower() in HEADERS_KEPT_ACROSS_ORIGINS}
            url = outcome.url
        raise NoAnswer(f"more than {max_redirects} redirects, the last to {url[:200]}")

    def _one_exchange(self, method: str, url: str, headers: dict, body: bytes, timeouts: Timeouts,
                      deadline: float, read: Optional[Callable]) -> Any:
        """One request and its answer: a redirect to follow, `read`'s result, or the whole HttpReply."""
        import http.client
        try:
            parts = parsed_url(url)
        except ValueError as problem:
            raise ConnectFailed(f"{url[:200]} {problem}") from None
        scheme, host = parts.scheme.lower(), _ascii_host(parts.hostname)
        port = parts.port or (443 if scheme == "https" else 80)
        where = _host_port(host, port)
        connection, absolute = self._connection(scheme, host, port, timeouts.connect)
        target = url if absolute else (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            try:
                connection.connect()
            except OSError as error:  # through a proxy (a direct connection raises ConnectFailed itself)
                raise ConnectFailed(f"cannot connect to {where}: {_network_reason(error)}") from None
            sock = connection.sock  # the response takes it over (and the connection forgets it) on Connection: close
            sock.settimeout(max(0.01, min(timeouts.read, deadline - time.monotonic())))
            try:
                connection.request(method, target, body=body or None,
                                   headers={"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING, **headers})
                response = connection.getresponse()
                head = HttpReply(response.status, {name.lower(): value for name, value in response.getheaders()},
                                 b"", url)
                location = head.headers.get("location")
                if method in ("GET", "HEAD") and response.status in _REDIRECT_STATUSES and location:
                    from urllib.parse import urljoin
                    return _Redirect(urljoin(url, location))
                pieces = self._body_pieces(response, sock, deadline, timeouts.read, where,
                                           None if read else MAX_OUTBOUND_REPLY_BYTES)
                return read(head, pieces) if read else head._replace(body=b"".join(pieces))
            except (OSError, http.client.HTTPException) as error:
                raise NoAnswer(f"{where} did not answer {method} {parts.path or '/'}: "
                               f"{_network_reason(error)}") from None
        finally:
            connection.close()

    @staticmethod
    def _body_pieces(response: Any, sock: Any, deadline: float, read_timeout: float, where: str,
                     limit: Optional[int]) -> Any:
        """The body as it arrives (a generator), unpacked when gzip or deflate: at most `limit` bytes as sent,
        and again at most `limit` once unpacked. Any other encoding is refused: rustiz did not ask for it."""
        encoding = (response.getheader("content-encoding") or "").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise NoAnswer(f"{where} answered in the {encoding[:40]!r} encoding, which rustiz did not ask for "
                           f"(it asks for {ACCEPT_ENCODING})")
        inflater = _Inflater(encoding, where) if encoding not in ("", "identity") else None
        sent = unpacked = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise NoAnswer(f"{where}: the answer took longer than the total time allowed")
            if sock is not None:
                sock.settimeout(min(read_timeout, remaining))
            chunk = response.read1(_READ_PIECE_BYTES)
            if not chunk:
                break
            sent += len(chunk)
            if limit is not None and sent > limit:
                raise NoAnswer(f"{where}: the answer is larger than {limit // 2**20} MiB, rustiz's limit for one answer")
            for piece in (inflater.pieces(chunk) if inflater else (chunk,)):
                unpacked += len(piece)
                if limit is not None and unpacked > limit:
                    raise NoAnswer(f"{where} sent a {encoding} answer that unpacks to more than "
                                   f"{limit // 2**20} MiB, rustiz's limit for one answer")
                yield piece
        if inflater is not None:
            inflater.finish()


def _network_reason(error: BaseException) -> str:
    """Why a connection or exchange failed, in words that never quote what the other side sent."""
    if isinstance(error, socket.timeout) or type(error).__name__ == "TimeoutError":
        return "timed out"
    if type(error).__name__ in ("BadStatusLine", "UnknownProtocol"):  # their text is the line that came back
        return "its answer is not HTTP"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


def platform_url(variable: str, default: str) -> str:
    """A platform's API base URL: `default`, or the environment's override (tests point these at fakes)."""
    return os.environ.get(variable, default).rstrip("/")


def hmac_sha256_hex(secret: str, message: bytes) -> str:
    import hmac
    return hmac.new(secret.encode(), message, "sha256").hexdigest()


# =============================================================================
# 12. Publishers: one small class per platform, registered by identifier
# =============================================================================
# A publisher connects a channel (checks the pasted credentials with the platform and reads the
# account) and publishes one post or thread part at a time. It never sleeps or retries: it raises
# one of the four PublishErrors and the scheduler decides. Platform base URLs come from the
# channel's credentials for self-hosted platforms, else from platform_url() (tests override them).

class MediaFile:
    """One image or video of a post, as a file on this machine (uploads, or downloaded for the publish)."""
    __slots__ = ("url", "path", "content_type", "kind", "alt", "name")

    def __init__(self, url: str, path: str, content_type: str, kind: str, alt: str, name: str):
        self.url, self.path, self.content_type, self.kind, self.alt, self.name = url, path, content_type, kind, alt, name

    def read(self) -> bytes:
        with open(self.path, "rb") as file:
            return file.read()


class OutgoingPost(NamedTuple):
    """What a publisher sends: one post (part 0) or thread part (1, 2...) of a rustiz post."""
    id: str
    html: str  # the content as stored: Postiz's HTML
    media: tuple  # of MediaFile
    settings: dict  # the provider's settings of the post (title, tags, community ...)
    part: int
    idempotency_key: str  # the same on every attempt of this part
    publish_date: str  # the post's date (ISO, UTC): the same on every attempt (an edit makes a new key too)

    @property
    def text(self) -> str:
        return html_to_text(self.html)


class Release(NamedTuple):
    """Where a published part lives: Postiz's releaseId and releaseURL, and what a reply to it needs."""
    id: str
    url: str
    reply_ref: Any = None  # JSON-able, the provider's own (Bluesky's {root, parent} refs, a chat's message id...)


class Connected(NamedTuple):
    account: "ChannelAccount"
    session: Optional[dict] = None  # a cached login (tokens) to store with the channel
    limits: Optional[dict] = None  # the account's own limits, e.g. {"maxLength": 500, "maxMedia": 4}


class PublishError(Exception):
    """Why a part was not published: `message` in the platform's words, its HTTP status, and `body`: the
    platform's error answer when it has the platform's own error shape (Provider.error_excerpt), else ""."""

    def __init__(self, message: str, status: Optional[int] = None, body: str = "", item: str = ""):
        super().__init__(message)
        self.message, self.status, self.body, self.item = message, status, body, item


class Retryable(PublishError):
    """Not accepted, and safe to send again (refused connection, 429, 502/503...), after `after` seconds if known."""

    def __init__(self, message: str, status: Optional[int] = None, body: str = "", item: str = "",
                 after: Optional[float] = None):
        super().__init__(message, status, body, item)
        self.after = after


class NeedsReconnect(PublishError):
    """The platform refused the channel's credentials: the user must connect the channel again."""


class Rejected(PublishError):
    """The platform refused this post (too long, bad media...): sending it again would fail again."""


class OutcomeUnknown(PublishError):
    """The request was sent and no verdict came back: it may be published."""


class AddressNotAllowed(Rejected):
    """The address guard refused the platform's address (a private one, see section 11): nothing was sent,
    and nothing will be until the operator lists it in RUSTIZ_FETCH_ALLOW."""


class Channel:
    """What a publisher is given about the channel: its credentials, its cached session, the HTTP client."""

    def __init__(self, channel_id: str, name: str, credentials: dict, session: Optional[dict], http: HttpClient,
                 save_session: Callable[[dict], None] = lambda session: None):
        self.id, self.name, self.credentials, self.http = channel_id, name, credentials, http
        self.session = dict(session or {})
        self._save_session = save_session
        self.throttled_for = 0.0  # seconds the platform asked us to wait before the next call

    def save_session(self, session: dict) -> None:
        self.session = dict(session)
        self._save_session(self.session)

    def throttle(self, seconds: float) -> None:
        self.throttled_for = max(self.throttled_for, seconds)


PUBLISHERS: dict = {}  # identifier -> Provider instance


def publisher(cls: type) -> type:
    """Class decorator: register one instance of a Provider subclass under its identifier."""
    PUBLISHERS[cls.identifier] = cls()
    return cls


def error_fields(answer: Any, first: str, *more: str) -> Optional[str]:
    """"<first>: <more>..." from a JSON error object whose `first` field is a non-empty string (one
    platform's error shape); None for any other answer (a proxy's page, some other server's JSON)."""
    if not isinstance(answer, dict) or not isinstance(answer.get(first), str) or not answer[first].strip():
        return None
    return ": ".join(answer[key].strip() for key in (first, *more) if isinstance(answer.get(key), str)
                     and answer[key].strip())


def retry_after_seconds(reply: HttpReply) -> Optional[float]:
    """How long a throttled answer asks us to wait: Retry-After, a JSON retry_after, or a rate-limit reset."""
    value = reply.headers.get("retry-after")
    if value:
        if value.strip().replace(".", "", 1).isdigit():
            return float(value)
        from email.utils import parsedate_to_datetime
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            pass
    body = reply.json()
    if isinstance(body, dict):
        after = body.get("retry_after", (body.get("parameters") or {}).get("retry_after")
                         if isinstance(body.get("parameters"), dict) else None)
        if isinstance(after, (int, float)) and not isinstance(after, bool):
            return float(after)
    return rate_limit_reset_seconds(reply)


def rate_limit_reset_seconds(reply: HttpReply) -> Optional[float]:
    """Seconds until a rate-limit window resets: X-RateLimit-Reset / RateLimit-Reset as an epoch, ISO time or delta."""
    value = reply.headers.get("x-ratelimit-reset") or reply.headers.get("ratelimit-reset")
    if not value:
        return None
    value = value.strip()
    if value.replace(".", "", 1).isdigit():
        number = float(value)
        return max(0.0, number - time.time()) if number > 10**9 else number
    moment = parse_iso_instant(value)
    return max(0.0, moment.timestamp() - time.time()) if moment is not None else None


class Provider:
    """The interface every publisher implements; the defaults suit a platform with no special needs."""
    identifier = ""
    label = ""  # the platform's name in messages: "Failed on Mastodon (HTTP 422): ..."
    resend_is_safe = False  # a send with an unknown outcome may be repeated (idempotency key, same signed event)
    threads = True  # thread parts (value[1..]) go out as replies or comments
    concurrency = 4  # publishes at once on this platform, across channels
    spacing = 1.0  # seconds between the starts of two publishes on one channel

    async def connect(self, channel: Channel) -> Connected:
        """Check `channel.credentials` with the platform and read the account; raise a PublishError when refused."""
        raise NotImplementedError

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        """Publish one part; `parent` is the part before it (None for the post itself)."""
        raise NotImplementedError

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        """Why the platform would refuse this post, checked before it is accepted (None when it fits).

        `channel` holds "limits" (what connect() returned); `values` are the thread's parts
        ({"content": html, "image": [...]})."""
        return None

    def where_to_check(self, channel: Channel) -> str:
        """Where a person can see whether a post went out, for 'it may have been published' errors."""
        return f"the {self.label} account of the channel \"{channel.name}\""

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """The platform's own words in an error answer when the answer has the platform's error shape, e.g.
        Mastodon's {"error": ...}; None otherwise. Only these words are ever quoted."""
        return None

    def platform_words(self, reply: HttpReply) -> str:
        """What an error answer says, for messages: the platform's own words (bounded) when it has the
        platform's error shape; else its status and size only, never the body of whatever server answered."""
        words = self.error_words(reply)
        if not words:
            return reply.described(f"{self.label}'s error format")
        return words if len(words) <= ERROR_WORDS_LIMIT else words[:ERROR_WORDS_LIMIT] + "…"

    def error_excerpt(self, reply: HttpReply) -> str:
        """The error answer as compact JSON (bounded), for a failure's details, when it has the platform's
        error shape; "" otherwise."""
        answer = reply.json()
        if not isinstance(answer, dict) or not self.error_words(reply):
            return ""
        return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))[:2 * ERROR_WORDS_LIMIT]

    async def run_tool(self, channel: Channel, method_name: str, data: dict) -> Any:
        """A helper tool of POST /integration-trigger (the methodNames of the provider catalogue's `tools`):
        the `tool_<methodName>(channel, data)` coroutine of the subclass; LookupError when there is none."""
        tool = getattr(self, "tool_" + method_name, None) if re.fullmatch(r"[A-Za-z]\w*", method_name) else None
        if tool is None:
            raise LookupError(method_name)
        return await tool(channel, data)

    async def send(self, channel: Channel, method: str, url: str, visible: bool = False, what: str = "",
                   **request: Any) -> HttpReply:
        """One request to the platform; returns a 2xx reply, else raises the PublishError its answer means.

        `visible`: the request publishes something (a status, a message), so an answer that never
        came means the post may be out; anything else (login, media upload) is safe to repeat."""
        what = what or f"{method} {url.split('?')[0]}"
        try:
            reply = await channel.http.request(method, url, **request)
        except AddressRefused as error:
            raise AddressNotAllowed(str(error)) from None
        except ConnectFailed as error:
            raise Retryable(f"{self.label} could not be reached ({error})") from None
        except NoAnswer as error:
            if visible:
                raise OutcomeUnknown(f"{self.label} did not answer ({error})") from None
            raise Retryable(f"{self.label} did not answer {what} ({error})") from None
        self.note_rate_limit(channel, reply)
        return self.check_reply(reply, visible, what)

    @staticmethod
    def note_rate_limit(channel: Channel, reply: HttpReply) -> None:
        remaining = reply.headers.get("x-ratelimit-remaining") or reply.headers.get("ratelimit-remaining")
        if remaining is not None and remaining.strip() == "0":
            wait = rate_limit_reset_seconds(reply)
            if wait:
                channel.throttle(wait)

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """The reply when its status is 2xx; else the PublishError it means (shared by every publisher).

        The error's message is the platform's own words, plus which request it answered when that
        was not the post itself; the scheduler adds "Failed on <platform> (HTTP <status>)"."""
        status = reply.status
        if 200 <= status < 300:
            return reply
        message, body = self.platform_words(reply), self.error_excerpt(reply)
        if not visible:
            message += f" (on {what})"
        if status == 429:
            raise Retryable(message, status, body, after=retry_after_seconds(reply))
        if status in (401, 403):
            raise NeedsReconnect(message, status, body)
        if status in (502, 503) or (status >= 500 and not visible):
            # Only a Retry-After says when to come back: a rate-limit window's reset (which some platforms
            # send on every answer) says nothing about when the server will be well again.
            raise Retryable(message, status, body,
                            after=retry_after_seconds(reply) if "retry-after" in reply.headers else None)
        if status >= 500:
            raise OutcomeUnknown(f"a server error, after the post was sent: {message}", status, body)
        raise Rejected(message, status, body)


def html_to_text(html: str) -> str:
    """Postiz's HTML as plain text: paragraphs and <br> become line breaks, tags go, entities are decoded."""
    import html as html_module
    text = re.sub(r"(?i)<br\s*/?>", "\n", html)
    text = re.sub(r"(?i)</(p|div|h[1-6]|li|blockquote)>\s*", "\n", text)
    text = re.sub(r"(?i)<li[^>]*>", "- ", text)
    text = html_module.unescape(strip_html(text))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def signed_json_request(payload: dict, secret: Optional[str], event: str, delivery: str) -> tuple:
    """(body, headers) for a JSON POST that a receiver can verify: X-Rustiz-Signature is
    `sha256=` + HMAC-SHA256(secret, timestamp + "." + body) in hex, as Stripe and Slack sign theirs."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", "X-Rustiz-Event": event, "X-Rustiz-Delivery": delivery,
               "X-Rustiz-Timestamp": timestamp, "Idempotency-Key": delivery}
    if secret:
        headers["X-Rustiz-Signature"] = "sha256=" + hmac_sha256_hex(secret, timestamp.encode() + b"." + body)
    return body, headers


@publisher
class WebhookProvider(Provider):
    """rustiz's own: each part POSTed as signed JSON to the channel's URL, for self-built integrations.

    The receiver answers 2xx, optionally with {"id": ..., "url": ...} naming what it made; a refusal's
    reason is quoted when it answers {"message": ...} or {"error": ...}."""
    identifier = "webhook"
    label = "Webhook"
    resend_is_safe = True  # X-Rustiz-Delivery is the same on every attempt: a receiver can drop repeats

    async def connect(self, channel: Channel) -> Connected:
        url = channel.credentials["url"]
        body, headers = signed_json_request({"event": "ping", "channel": {"name": channel.name}},
                                            channel.credentials.get("secret"), "ping", new_uuid())
        await self.send(channel, "POST", url, what="the test event (ping)", body=body, headers=headers)
        return Connected(_secret_account("url", lambda credentials: f"Webhook to {_url_host(url)}")(channel.credentials))

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        payload = {"event": "post.publish", "channel": {"id": channel.id, "name": channel.name}, "post": {
            "id": post.id, "part": post.part, "content": post.html, "text": post.text, "settings": post.settings,
            "media": [{"url": media.url, "type": media.kind, "contentType": media.content_type, "alt": media.alt}
                      for media in post.media],
            "replyTo": parent.id if parent else None}}
        body, headers = signed_json_request(payload, channel.credentials.get("secret"), "post.publish",
                                            post.idempotency_key)
        reply = await self.send(channel, "POST", channel.credentials["url"], visible=True, what="the post",
                                body=body, headers=headers)
        answer = reply.json() if reply.body else None
        answer = answer if isinstance(answer, dict) else {}
        release_id = answer.get("id")
        release_url = answer.get("url")
        return Release(str(release_id) if release_id is not None else post.idempotency_key,
                       release_url if isinstance(release_url, str) else "")

    def where_to_check(self, channel: Channel) -> str:
        return f"the service behind the webhook {_url_host(channel.credentials['url'])}"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "message") or error_fields(reply.json(), "error")

# --- Postiz HTML as the markdown of chat platforms and Lemmy -------------------

# Stored content keeps only p, br, strong, u, a, ul, li, h1-h3 and span (see sanitize_html). The bold
# and underline markers of each dialect: CommonMark for Lemmy (no underline), Discord's markdown, and
# Slack's mrkdwn (*bold*, no underline).
_INLINE_MARKERS = {"markdown": {"strong": "**"}, "discord": {"strong": "**", "u": "__"}, "mrkdwn": {"strong": "*"}}
_HTML_PIECE = r"""<(/?)([A-Za-z][A-Za-z0-9]*)((?:"[^"]*"|'[^']*'|[^'">])*)>|([^<]+)|<"""


def markdown_from_html(html: str, dialect: str) -> str:
    """Postiz's HTML as `dialect` ("markdown", "discord" or "mrkdwn"): bold, underline, links, headings,
    bullets and line breaks kept, other tags dropped, entities decoded. Text is not escaped, so markdown
    a person typed into the editor still works (as in Postiz)."""
    import html as html_module
    paragraph_end = "\n\n" if dialect == "markdown" else "\n"  # CommonMark joins the lines of a paragraph
    out: list = []
    inline: list = []  # open bold, underline, links and headings: (tag, where their text starts in `out`, href)
    for match in re.finditer(_HTML_PIECE, html):
        closing, tag, attributes, text = match.groups()
        if tag is None:
            if text is not None and not text.strip() and "\n" in text:
                continue  # the source's line breaks between tags, not text
            piece = re.sub(r"\s*\n\s*", " ", html_module.unescape(text if text is not None else "<"))
            out.append(escape_markup_characters(piece) if dialect == "mrkdwn" else piece)
            continue
        tag = tag.lower()
        if tag == "br":  # CommonMark reads a lone line break as a space: a backslash makes it a real one
            out.append("\\\n" if dialect == "markdown" else "\n")
        elif tag == "p":
            out.append(paragraph_end if closing else "")
        elif tag == "li" and not closing:
            out.append(_line_start(out) + ("• " if dialect == "mrkdwn" else "- "))
        elif tag == "ul" and closing:
            out.append(paragraph_end)
        elif tag in ("strong", "u", "a", "h1", "h2", "h3"):
            if not closing:
                href = re.search(r"""href\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", attributes or "", re.I)
                inline.append((tag, len(out), html_module.unescape(href[1].strip("\"'")) if href else ""))
            elif any(opened[0] == tag for opened in inline):
                while inline[-1][0] != tag:
                    inline.pop()
                _, start, href = inline.pop()
                inner = "".join(out[start:])
                del out[start:]
                out.append(_formatted(tag, inner, href, dialect, out))
    text = re.sub(r"[ \t]+\n", "\n", "".join(out))
    text = re.sub(r"\\\n(?=\n|\Z)", "\n", text)  # a <br> ending a paragraph needs no backslash
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _formatted(tag: str, inner: str, href: str, dialect: str, out: list) -> str:
    """The text of a closed tag in `dialect`: a link, a heading on its own line (bold in mrkdwn), or bold."""
    if tag == "a":
        return _link(inner, href, dialect)
    if tag.startswith("h"):
        paragraph_end = "\n\n" if dialect == "markdown" else "\n"
        heading = _wrap(inner, "*") if dialect == "mrkdwn" else "#" * int(tag[1]) + " " + inner.strip()
        return _line_start(out) + heading + paragraph_end
    return _wrap(inner, _INLINE_MARKERS[dialect].get(tag, ""))


def _line_start(out: list) -> str:
    """A line break, unless the text so far is empty or already ends with one."""
    tail = next((piece for piece in reversed(out) if piece), "")
    return "" if not tail or tail.endswith("\n") else "\n"


def _wrap(inner: str, marker: str) -> str:
    """**bold** around the words only: markdown ignores markers next to a space ("** bold**")."""
    if not marker or not inner.strip():
        return inner
    stripped = inner.strip()
    return inner[:len(inner) - len(inner.lstrip())] + marker + stripped + marker + inner[len(inner.rstrip()):]


def _link(inner: str, href: str, dialect: str) -> str:
    if not href:
        return inner
    if not inner.strip() or inner.strip() == href:
        return href
    return f"<{href}|{inner.strip()}>" if dialect == "mrkdwn" else f"[{inner.strip()}]({href})"


def escape_markup_characters(text: str) -> str:
    """&, < and > as entities, and nothing else: Slack reads <...> as links and mentions, and Telegram's
    HTML knows only a few named entities (so no &nbsp; and the like, unlike _escape_html)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _with_query(url: str, **parameters: Any) -> str:
    """`url` with these query parameters added (or replaced), keeping the ones it already has."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update({name: str(value) for name, value in parameters.items()})
    return urlunsplit(parts._replace(query=urlencode(query)))


DISCORD_MESSAGE_LIMIT = 2000
DISCORD_ATTACHMENT_LIMIT = 10
DISCORD_REQUEST_BYTES = 25 * 2**20  # a message's files together, on a server without boosts
DISCORD_THREAD_NAME_LIMIT = 100
_DISCORD_UNKNOWN_WEBHOOK = 10015
_DISCORD_FORUM_NEEDS_THREAD = 220001  # "Webhooks posted to forum channels must have a thread_name or thread_id"


@publisher
class DiscordProvider(Provider):
    """A channel's webhook (Server Settings > Integrations > Webhooks): no bot, no developer app.

    Each part is one message, sent with ?wait=true so Discord answers the message (its id) instead of 204."""
    identifier = "discord"
    label = "Discord"
    resend_is_safe = False  # webhooks take no idempotency key: a second send is a second message
    concurrency = 4
    spacing = 2.0  # Discord allows about 30 messages a minute in one channel

    async def connect(self, channel: Channel) -> Connected:
        webhook = await self._webhook(channel)
        avatar = webhook.get("avatar")
        picture = f"https://cdn.discordapp.com/avatars/{webhook['id']}/{avatar}.png" if avatar else None
        account = ChannelAccount(str(webhook["id"]), str(webhook.get("name") or channel.name), None, picture)
        return Connected(account, session=self._where(webhook))

    async def _webhook(self, channel: Channel) -> dict:
        """The webhook object Discord answers a GET of its URL with: id, name, avatar, channel_id, guild_id."""
        reply = await self.send(channel, "GET", channel.credentials["webhookUrl"], what="the webhook")
        webhook = reply.json()
        if not isinstance(webhook, dict) or not webhook.get("id"):
            raise Rejected(f"this URL did not answer like a Discord webhook (expected its id, name and channel; "
                           f"got {reply.described('a Discord webhook')}); copy the URL again from the channel's "
                           "Integrations > Webhooks")
        return webhook

    @staticmethod
    def _where(webhook: dict) -> dict:
        """What a release URL needs and the webhook object alone tells: its server and channel."""
        return {"guild_id": str(webhook.get("guild_id") or ""), "channel_id": str(webhook.get("channel_id") or "")}

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        self._check_media(post.media)
        # A webhook cannot reply to a message (execute takes no message_reference), so thread parts are
        # follow-up messages: in the channel, right after the post, or in the post's thread when the post
        # opened one (a forum channel) or the webhook URL names one (?thread_id=); a follow-up there stays
        # with the post instead of landing in the forum as a new topic.
        thread = parent.reply_ref.get("thread_id") if parent and isinstance(parent.reply_ref, dict) else None
        url = _with_query(channel.credentials["webhookUrl"], wait="true", **({"thread_id": thread} if thread else {}))
        thread_name = None
        if channel.session.get("forum") and not thread:
            thread_name = self._thread_name(post)
        try:
            message = await self._execute(channel, url, post, thread_name)
        except Rejected as refused:
            if thread_name or thread or self._error_code(refused.body) != _DISCORD_FORUM_NEEDS_THREAD:
                raise
            # A forum channel's webhook must open a topic: nothing was posted, so send it again as one,
            # and remember the channel is a forum.
            channel.save_session({**channel.session, "forum": True})
            message = await self._execute(channel, url, post, self._thread_name(post))
        return self._release(channel, message)

    async def _execute(self, channel: Channel, url: str, post: OutgoingPost, thread_name: Optional[str]) -> dict:
        payload: dict = {"content": markdown_from_html(post.html, "discord")}
        if thread_name:
            payload["thread_name"] = thread_name
        if post.media:
            payload["attachments"] = [{"id": index, "filename": media.name, "description": media.alt[:1024]}
                                      for index, media in enumerate(post.media)]
            fields = [("payload_json", json.dumps(payload, ensure_ascii=False))]
            fields += [(f"files[{index}]", (media.name, media.read(), media.content_type))
                       for index, media in enumerate(post.media)]
            body, content_type = encode_multipart(fields)
            request: dict = {"body": body, "headers": {"Content-Type": content_type}}
        else:
            request = {"json_body": payload}
        reply = await self.send(channel, "POST", url, visible=True, what="the message", **request)
        message = reply.json()
        if not isinstance(message, dict) or not message.get("id"):
            raise OutcomeUnknown(f"Discord answered without the message it made ({reply.described('a message')})",
                                 reply.status)
        return message

    @staticmethod
    def _thread_name(post: OutgoingPost) -> str:
        first_line = next((line.strip() for line in post.text.splitlines() if line.strip()), "")
        return first_line[:DISCORD_THREAD_NAME_LIMIT] or (post.media[0].name if post.media else "Post")

    @staticmethod
    def _release(channel: Channel, message: dict) -> Release:
        channel_id = str(message.get("channel_id") or channel.session.get("channel_id", ""))
        guild = channel.session.get("guild_id") or "@me"
        in_thread = channel_id != channel.session.get("channel_id")
        return Release(str(message["id"]), f"https://discord.com/channels/{guild}/{channel_id}/{message['id']}",
                       {"thread_id": channel_id} if in_thread else None)

    @staticmethod
    def _check_media(media: tuple) -> None:
        total = sum(os.path.getsize(item.path) for item in media)
        if total > DISCORD_REQUEST_BYTES:
            raise Rejected(f"the files of this message add up to {total / 2**20:.1f} MiB; a Discord webhook takes "
                           f"at most {DISCORD_REQUEST_BYTES // 2**20} MiB per message on a server without boosts: "
                           "send smaller or fewer files")

    @staticmethod
    def _error_code(body: str) -> Optional[int]:
        try:
            answer = json.loads(body)
        except ValueError:
            return None
        return answer.get("code") if isinstance(answer, dict) else None

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        answer = reply.json()
        if reply.status == 404 and isinstance(answer, dict) and answer.get("code") == _DISCORD_UNKNOWN_WEBHOOK:
            raise NeedsReconnect("Discord says this webhook no longer exists (Unknown Webhook, code 10015): it was "
                                 "deleted or its channel was; make a new webhook in the channel's Integrations "
                                 "settings", reply.status, self.error_excerpt(reply))
        if reply.status in (400, 413) and isinstance(answer, dict) and answer.get("errors"):
            # "Invalid Form Body" alone says nothing: the errors object names the field and the rule
            detail = json.dumps(answer["errors"], ensure_ascii=False)[:400]
            raise Rejected(f"Discord refused {what} (HTTP {reply.status}): {answer.get('message')} "
                           f"(code {answer.get('code')}): {detail}", reply.status, self.error_excerpt(reply))
        return super().check_reply(reply, visible, what)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Discord's errors are {"message", "code"} (a rate limit: {"message", "retry_after"})."""
        answer = reply.json()
        if isinstance(answer, dict) and ("code" in answer or "retry_after" in answer):
            return error_fields(answer, "message")
        return None

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, value in enumerate(values, 1):
            where = "the post" if number == 1 else f"thread part {number}"
            length = len(markdown_from_html(value["content"], "discord"))
            if length > DISCORD_MESSAGE_LIMIT:
                return (f"Discord allows {DISCORD_MESSAGE_LIMIT:,} characters in a message; {where} has {length:,} "
                        "(counted as Discord markdown, with links written out)")
            if len(value["image"]) > DISCORD_ATTACHMENT_LIMIT:
                return (f"Discord allows {DISCORD_ATTACHMENT_LIMIT} files in a message; {where} has "
                        f"{len(value['image'])}")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the Discord channel of the webhook \"{channel.name}\""


SLACK_SECTION_LIMIT = 3000
SLACK_BLOCK_LIMIT = 50
SLACK_FALLBACK_TEXT_LIMIT = 3000  # `text` is only the notification's preview once there are blocks
_SLACK_WEBHOOK_PATH = r"/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+/?"
# Incoming webhooks answer errors as a short code in plain text: what each means, and what to do.
_SLACK_GONE = {
    "no_service": "the webhook was removed or its app uninstalled",
    "no_service_id": "the webhook URL is incomplete",
    "no_team": "the webhook URL names no workspace",
    "team_disabled": "the workspace was disabled",
    "invalid_token": "the webhook URL's token is not valid anymore",
    "channel_not_found": "the webhook's channel was deleted",
}
_SLACK_REFUSALS = {
    "invalid_payload": "Slack could not read the message rustiz built; this is a rustiz bug worth reporting",
    "no_text": "the message had no text and no blocks",
    "channel_is_archived": "the webhook's channel is archived: unarchive it, or connect a webhook of another channel",
    "action_prohibited": "a workspace admin restricted posting to this channel",
    "posting_to_general_channel_denied": "only some members may post in the workspace's general channel",
    "too_many_attachments": "the message has more blocks or attachments than Slack takes",
    "invalid_blocks": "Slack refused a block; an image must be at a public http(s) URL that Slack can download",
    "invalid_blocks_format": "Slack could not read the blocks",
}


def _slack_sections(mrkdwn: str) -> list:
    """The text cut into pieces Slack's section blocks take (3,000 characters), at line breaks when possible."""
    sections, rest = [], mrkdwn
    while len(rest) > SLACK_SECTION_LIMIT:
        cut = rest.rfind("\n", 0, SLACK_SECTION_LIMIT + 1)
        cut = cut if cut > 0 else rest.rfind(" ", 0, SLACK_SECTION_LIMIT + 1)
        cut = cut if cut > 0 else SLACK_SECTION_LIMIT
        sections.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return sections + ([rest] if rest else [])


def _looks_like_video(path: str) -> bool:
    return bool(re.search(r"\.(mp4|m4v|mov|webm|mkv|avi)(\?|#|\Z)", path.lower()))


@publisher
class SlackProvider(Provider):
    """A Slack app's incoming webhook (api.slack.com/apps > Incoming Webhooks): one channel, no bot token.

    It answers plain text: "ok" when the message is posted, else an error code such as no_service."""
    identifier = "slack"
    label = "Slack"
    resend_is_safe = False  # a second send is a second message
    threads = False  # the webhook answers no message ts, so nothing can be threaded under a post
    concurrency = 4
    spacing = 1.0  # Slack allows about one message a second per webhook

    async def connect(self, channel: Channel) -> Connected:
        # An incoming webhook has no read endpoint: the only way to test one is to post to the
        # channel, and a test message in somebody's workspace is not ours to send. So the URL's shape
        # is checked (for Slack's own host), and its address (the guard of every outbound call), and a
        # revoked webhook shows up on the first publish, which then flags the channel for reconnecting.
        url = channel.credentials["webhookUrl"]
        parts = parsed_url(url)
        if parts.hostname == "hooks.slack.com" and (parts.scheme != "https" or
                                                    not re.fullmatch(_SLACK_WEBHOOK_PATH, parts.path)):
            raise Rejected("this is not a Slack incoming webhook URL: it looks like "
                           "https://hooks.slack.com/services/T.../B.../... (copy it from your Slack app's "
                           "Incoming Webhooks page)")
        try:
            await channel.http.check_url(url)
        except AddressRefused as refused:
            raise AddressNotAllowed(str(refused)) from None
        account = _secret_account("webhookUrl", lambda credentials: channel.name)(channel.credentials)
        return Connected(account)

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        videos = [index for index, media in enumerate(post.media, 1) if media.kind == "video"]
        if videos:
            raise Rejected("Slack incoming webhooks cannot upload files, so a video cannot be posted",
                           item=f"media item {videos[0]}")
        mrkdwn = markdown_from_html(post.html, "mrkdwn")
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": section}}
                  for section in _slack_sections(mrkdwn)]
        # Slack downloads each image from its URL: it must be public (FRONTEND_URL, or media from the web).
        blocks += [{"type": "image", "image_url": media.url, "alt_text": media.alt or media.name}
                   for media in post.media]
        fallback = mrkdwn or ", ".join(media.alt or media.name for media in post.media)
        await self.send(channel, "POST", channel.credentials["webhookUrl"], visible=True, what="the message",
                        json_body={"text": fallback[:SLACK_FALLBACK_TEXT_LIMIT], "blocks": blocks})
        # The webhook answers no id or link for the message: the part's own key stands in for the id.
        return Release(post.idempotency_key, "")

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        code = self.error_words(reply)
        if 200 <= reply.status < 300:
            if code == "ok":
                return reply
            if code is None:  # not Slack's words: a proxy or portal answered
                raise OutcomeUnknown(f"Slack answered {reply.described('its ok or an error code')}", reply.status)
        if code in _SLACK_GONE:
            raise NeedsReconnect(f"Slack refused the webhook ({code}): {_SLACK_GONE[code]}; add a new incoming "
                                 "webhook in your Slack app and connect the channel with its URL",
                                 reply.status, code)
        if code in _SLACK_REFUSALS:
            raise Rejected(f"Slack refused {what} ({code}): {_SLACK_REFUSALS[code]}", reply.status, code)
        if 200 <= reply.status < 300:
            raise Rejected(f"Slack refused {what} ({code})", reply.status, code)
        return super().check_reply(reply, visible, what)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Slack's incoming webhooks answer an error as a bare code in plain text, like no_service."""
        code = reply.body.decode("utf-8", "replace").strip() if len(reply.body) <= 64 else ""
        return code if re.fullmatch(r"[a-z_]+", code) else None

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        media = values[0]["image"]
        if any(_looks_like_video(str(item.get("path", ""))) for item in media if isinstance(item, dict)):
            return ("Slack incoming webhooks cannot upload files, and a video cannot be shown from a link: "
                    "post images only (Slack shows them from their public URL)")
        sections = _slack_sections(markdown_from_html(values[0]["content"], "mrkdwn"))
        blocks = len(sections) + len(media)
        if blocks > SLACK_BLOCK_LIMIT:
            return (f"Slack takes at most {SLACK_BLOCK_LIMIT} blocks in a message; this post needs {blocks} "
                    f"({len(sections)} sections of up to {SLACK_SECTION_LIMIT:,} characters of text and "
                    f"{len(media)} images)")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the Slack channel of the webhook \"{channel.name}\""


LEMMY_TITLE_LIMIT = 200
LEMMY_BODY_LIMIT = 10000  # Lemmy's default for a comment, and what Postiz allows for a post
# Lemmy's error codes ({"error": "..."}) with what they mean for the person reading the failure.
_LEMMY_LOGIN_ERRORS = {
    "incorrect_login": "the username or password is wrong",
    "password_incorrect": "the password is wrong",
    "not_logged_in": "the login expired or was revoked",
    "missing_totp_token": ("the account has two-factor authentication, and rustiz cannot log in with a code "
                           "that changes every 30 seconds; turn 2FA off for this account or use another account"),
    "incorrect_totp_token": "the account has two-factor authentication, which rustiz cannot log in with",
    "email_not_verified": "the account's email address is not verified yet: open the link Lemmy emailed",
    "registration_application_is_pending": "the instance's admins have not approved the account yet",
    "registration_denied": "the instance's admins refused the account's registration",
    "site_ban": "the account is banned from this instance",
    "deleted": "the account was deleted",
}
_LEMMY_REFUSALS = {
    "couldnt_find_community": "no community has that id on this instance; pick it again with the subreddits tool",
    "banned_from_community": "the account is banned from that community",
    "only_mods_can_post_in_community": "only that community's moderators may post in it",
    "community_is_deleted": "the community was deleted",
    "community_is_removed": "the community was removed by an admin",
    "invalid_post_title": "the title must be 1 to 200 characters and not only spaces",
    "invalid_body_field": "the text is too long for this instance",
    "invalid_url": "the link (url) is not a valid URL",
    "couldnt_find_post": "the post to comment on was deleted",
    "locked": "the post is locked: no new comments",
    "slurs": "the instance's slur filter matched the text",
}


def _lemmy_communities(settings: dict) -> list:
    """The communities a post goes to: Postiz's `subreddit: [{value: {id, subreddit, title, url?}}]`."""
    entries = settings.get("subreddit") if isinstance(settings, dict) else None
    return [entry["value"] for entry in entries or () if isinstance(entry, dict) and isinstance(entry.get("value"), dict)]


@publisher
class LemmyProvider(Provider):
    """Any Lemmy instance, with the account's username (or email) and password; API v3.

    The post goes to each chosen community; thread parts become comments under each of those posts."""
    identifier = "lemmy"
    label = "Lemmy"
    resend_is_safe = False  # Lemmy takes no idempotency key
    concurrency = 2
    spacing = 2.0  # instances rate-limit posts and comments per IP

    async def connect(self, channel: Channel) -> Connected:
        jwt = await self._log_in(channel)
        reply = await self.send(channel, "GET", self._api(channel, "/site"), what="the account (GET /api/v3/site)",
                                headers={"Authorization": f"Bearer {jwt}"})
        site = reply.json()
        person = (((site or {}).get("my_user") or {}).get("local_user_view") or {}).get("person") \
            if isinstance(site, dict) else None
        if not isinstance(person, dict) or not person.get("name"):
            raise Rejected(f"Lemmy at {self._service(channel)} logged in, but its site answer has no account "
                           f"(my_user); is it a Lemmy instance of version 0.19 or later? "
                           f"({reply.described('a Lemmy site with my_user')})")
        host, name = _url_host(self._service(channel)), str(person["name"])
        account = ChannelAccount(f"{host}/{name.lower()}", str(person.get("display_name") or name),
                                 f"{name}@{host}", person.get("avatar") or None)
        return Connected(account, session={"jwt": jwt})

    @staticmethod
    def _service(channel: Channel) -> str:
        return channel.credentials["service"].rstrip("/")

    def _api(self, channel: Channel, path: str) -> str:
        return f"{self._service(channel)}/api/v3{path}"

    async def _log_in(self, channel: Channel) -> str:
        reply = await self.send(channel, "POST", self._api(channel, "/user/login"), what="the login",
                                json_body={"username_or_email": channel.credentials["identifier"],
                                           "password": channel.credentials["password"]})
        answer = reply.json()
        jwt = answer.get("jwt") if isinstance(answer, dict) else None
        if not isinstance(jwt, str) or not jwt:
            raise NeedsReconnect("Lemmy accepted the login but gave no token: the account may wait for its "
                                 "email to be verified or for the admins to approve it", reply.status)
        return jwt

    async def _call(self, channel: Channel, method: str, path: str, visible: bool, what: str,
                    **request: Any) -> HttpReply:
        """A request with the cached login; a refused login is renewed once (the refused request did nothing)."""
        fresh = not channel.session.get("jwt")
        if fresh:
            channel.save_session({**channel.session, "jwt": await self._log_in(channel)})
        try:
            return await self.send(channel, method, self._api(channel, path), visible, what,
                                   headers={"Authorization": f"Bearer {channel.session['jwt']}"}, **request)
        except NeedsReconnect:
            if fresh:
                raise
            channel.save_session({**channel.session, "jwt": await self._log_in(channel)})
            return await self.send(channel, method, self._api(channel, path), visible, what,
                                   headers={"Authorization": f"Bearer {channel.session['jwt']}"}, **request)

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        service = self._service(channel)
        if parent is None:
            targets = [str(community["id"]) for community in _lemmy_communities(post.settings)]
            if not targets:
                raise Rejected("the post names no Lemmy community: settings.subreddit needs at least one "
                               "{value: {id, subreddit, title}}")
            ids = await self._each(channel, post, targets, self._create_post)
            return Release(",".join(ids), ",".join(f"{service}/post/{id_}" for id_ in ids), {"posts": ids})
        posts = parent.reply_ref.get("posts") if isinstance(parent.reply_ref, dict) else None
        if not posts:
            raise Rejected("the post this comment belongs to left no Lemmy post id to comment on")
        ids = await self._each(channel, post, posts, self._comment)
        return Release(",".join(ids), ",".join(f"{service}/comment/{id_}" for id_ in ids), {"posts": posts})

    async def _each(self, channel: Channel, post: OutgoingPost, targets: list, make: Callable) -> list:
        """`make(channel, post, target)` for each community (or post commented on), in order.

        A post to several communities is several requests: when one fails after others went out, the
        attempt is retried, so the ids already made are kept in the channel's session under this part's
        key and those targets are skipped instead of posted twice."""
        done = dict((channel.session.get("progress") or {}).get(post.idempotency_key) or {})
        for target in targets:
            if target in done:
                continue
            done[target] = await make(channel, post, target)
            progress = {**(channel.session.get("progress") or {}), post.idempotency_key: done}
            channel.save_session({**channel.session, "progress": progress})
        progress = dict(channel.session.get("progress") or {})
        if progress.pop(post.idempotency_key, None) is not None:
            channel.save_session({**channel.session, "progress": progress})
        return [done[target] for target in targets]

    async def _create_post(self, channel: Channel, post: OutgoingPost, community_id: str) -> str:
        community = next(value for value in _lemmy_communities(post.settings) if str(value["id"]) == community_id)
        body = markdown_from_html(post.html, "markdown")
        title = str(community.get("title") or "").strip() or body.split("\n", 1)[0][:LEMMY_TITLE_LIMIT]
        payload: dict = {"community_id": int(community_id), "name": title, "body": body, "nsfw": False}
        image = post.media[0] if post.media else None
        # Lemmy takes media only as URLs it (and readers) fetch: without a link of its own, the post's
        # image is the link (an image post); with one, the image is the link's thumbnail.
        if community.get("url"):
            payload["url"] = community["url"]
            if image is not None:
                payload["custom_thumbnail"] = image.url
        elif image is not None:
            payload["url"] = image.url
        reply = await self._call(channel, "POST", "/post", True, f"the post to community {community_id}",
                                 json_body=payload)
        return self._made_id(reply, "post_view", "post")

    async def _comment(self, channel: Channel, post: OutgoingPost, post_id: str) -> str:
        content = markdown_from_html(post.html, "markdown")
        images = "\n\n".join(f"![{media.alt}]({media.url})" for media in post.media)
        content = "\n\n".join(filter(None, (content, images)))
        reply = await self._call(channel, "POST", "/comment", True, f"the comment on post {post_id}",
                                 json_body={"post_id": int(post_id), "content": content})
        return self._made_id(reply, "comment_view", "comment")

    @staticmethod
    def _made_id(reply: HttpReply, view: str, kind: str) -> str:
        answer = reply.json()
        made = ((answer or {}).get(view) or {}).get(kind) if isinstance(answer, dict) else None
        if not isinstance(made, dict) or made.get("id") is None:
            raise OutcomeUnknown(f"Lemmy answered without the {kind} it made ({reply.described(f'a {view}')})",
                                 reply.status)
        return str(made["id"])

    async def tool_subreddits(self, channel: Channel, data: dict) -> list:
        """Communities matching `data.word`, most active first, as Postiz lists them: [{title, name, id}]."""
        from urllib.parse import urlencode
        query = urlencode({"type_": "Communities", "sort": "Active", "q": str(data.get("word") or "")})
        reply = await self._call(channel, "GET", f"/search?{query}", False, "the community search")
        answer = reply.json()
        found = answer.get("communities") if isinstance(answer, dict) else None
        return [{"title": view["community"].get("title"), "name": view["community"].get("title"),
                 "id": view["community"].get("id")}
                for view in found or () if isinstance(view, dict) and isinstance(view.get("community"), dict)]

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        answer = reply.json()
        code = answer.get("error") if isinstance(answer, dict) and not 200 <= reply.status < 300 else None
        if isinstance(code, str):
            status, body = reply.status, self.error_excerpt(reply)
            if code in _LEMMY_LOGIN_ERRORS:
                raise NeedsReconnect(f"Lemmy refused the login ({code}): {_LEMMY_LOGIN_ERRORS[code]}", status, body)
            if code == "rate_limit_error" or status == 429:
                raise Retryable(f"Lemmy is throttling requests (HTTP {status}, {code})", status, body,
                                after=retry_after_seconds(reply))
            if 400 <= status < 500:
                meaning = _LEMMY_REFUSALS.get(code, "see the instance's Lemmy version for what this code means")
                raise Rejected(f"Lemmy refused {what} ({code}): {meaning}", status, body)
        return super().check_reply(reply, visible, what)

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for community in _lemmy_communities(settings):
            if not re.fullmatch(r"[0-9]+", str(community.get("id", ""))):
                return (f"Lemmy community ids are numbers (the subreddits tool lists them); "
                        f"{json.dumps(community.get('id'))} is not one")
            title = str(community.get("title") or "")
            if len(title) > LEMMY_TITLE_LIMIT:
                return (f"Lemmy allows titles of up to {LEMMY_TITLE_LIMIT} characters; the title for "
                        f"{community.get('subreddit') or community['id']} has {len(title)}")
        for number, value in enumerate(values, 1):
            length = len(markdown_from_html(value["content"], "markdown"))
            if length > LEMMY_BODY_LIMIT:
                where = "the post" if number == 1 else f"comment {number - 1}"
                return (f"Lemmy allows {LEMMY_BODY_LIMIT:,} characters in a post or comment; {where} has "
                        f"{length:,} (counted as markdown)")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the profile of {channel.credentials['identifier']} on {self._service(channel)}"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error", "message")  # {"error": "couldnt_find_community"}


# --- Nostr: secp256k1 and BIP-340 Schnorr signatures, in pure Python ------------------------------
# A post needs one signature, so a plain implementation is fast enough (a few milliseconds) and
# spares a compiled dependency. Points are Jacobian (X, Y, Z), meaning (X/Z², Y/Z³), so adding and
# doubling need no modular inverse; Z = 0 is the point at infinity.

SECP256K1_P = 2**256 - 2**32 - 977  # the field
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # the group order
_SECP256K1_G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
                0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8, 1)
_INFINITY = (0, 1, 0)


def _point_double(point: tuple) -> tuple:
    x, y, z = point
    if not z or not y:
        return _INFINITY
    p = SECP256K1_P
    y_squared = y * y % p
    s = 4 * x * y_squared % p
    m = 3 * x * x % p  # the curve y² = x³ + 7 has a = 0
    new_x = (m * m - 2 * s) % p
    return new_x, (m * (s - new_x) - 8 * y_squared * y_squared) % p, 2 * y * z % p


def _point_add(first: tuple, second: tuple) -> tuple:
    if not first[2]:
        return second
    if not second[2]:
        return first
    p = SECP256K1_P
    (x1, y1, z1), (x2, y2, z2) = first, second
    z1_squared, z2_squared = z1 * z1 % p, z2 * z2 % p
    u1, u2 = x1 * z2_squared % p, x2 * z1_squared % p
    s1, s2 = y1 * z2_squared * z2 % p, y2 * z1_squared * z1 % p
    if u1 == u2:
        return _point_double(first) if s1 == s2 else _INFINITY
    h, r = (u2 - u1) % p, (s2 - s1) % p
    h_squared = h * h % p
    h_cubed, u1_h_squared = h * h_squared % p, u1 * h_squared % p
    new_x = (r * r - h_cubed - 2 * u1_h_squared) % p
    return new_x, (r * (u1_h_squared - new_x) - s1 * h_cubed) % p, h * z1 * z2 % p


def _point_multiply(point: tuple, scalar: int) -> tuple:
    result = _INFINITY
    for bit in bin(scalar)[2:]:
        result = _point_double(result)
        if bit == "1":
            result = _point_add(result, point)
    return result


def _affine(point: tuple) -> Optional[tuple]:
    """(x, y) of a Jacobian point; None for the point at infinity."""
    x, y, z = point
    if not z:
        return None
    p = SECP256K1_P
    z_inverse = pow(z, -1, p)
    z_inverse_squared = z_inverse * z_inverse % p
    return x * z_inverse_squared % p, y * z_inverse_squared * z_inverse % p


def _lift_x(x: int) -> Optional[tuple]:
    """The curve point with this x and an even y (BIP-340's lift_x); None when x is on no point."""
    p = SECP256K1_P
    if x >= p:
        return None
    y_squared = (pow(x, 3, p) + 7) % p
    y = pow(y_squared, (p + 1) // 4, p)
    if y * y % p != y_squared:
        return None
    return x, y if y % 2 == 0 else p - y, 1


def _tagged_hash(tag: str, data: bytes) -> bytes:
    tag_digest = _sha256(tag.encode()).digest()
    return _sha256(tag_digest + tag_digest + data).digest()


def _secret_scalar(secret_key: bytes) -> int:
    scalar = int.from_bytes(secret_key, "big")
    if not 1 <= scalar < SECP256K1_N:
        raise ValueError("the private key is outside the range of secp256k1 keys (1 to n-1)")
    return scalar


def schnorr_public_key(secret_key: bytes) -> bytes:
    """The 32-byte x-only public key of a 32-byte secret key (BIP-340); ValueError for an invalid key."""
    x, _ = _affine(_point_multiply(_SECP256K1_G, _secret_scalar(secret_key)))
    return x.to_bytes(32, "big")


def schnorr_sign(message: bytes, secret_key: bytes, aux_random: bytes) -> bytes:
    """A 64-byte BIP-340 signature of `message` (32 bytes for Nostr: the event id)."""
    n = SECP256K1_N
    secret = _secret_scalar(secret_key)
    public_x, public_y = _affine(_point_multiply(_SECP256K1_G, secret))
    secret = secret if public_y % 2 == 0 else n - secret
    public_key = public_x.to_bytes(32, "big")
    masked = (secret ^ int.from_bytes(_tagged_hash("BIP0340/aux", aux_random), "big")).to_bytes(32, "big")
    nonce = int.from_bytes(_tagged_hash("BIP0340/nonce", masked + public_key + message), "big") % n
    if nonce == 0:
        raise ValueError("BIP-340 nonce is zero (probability 2^-256); sign again with other aux randomness")
    nonce_x, nonce_y = _affine(_point_multiply(_SECP256K1_G, nonce))
    nonce = nonce if nonce_y % 2 == 0 else n - nonce
    nonce_point = nonce_x.to_bytes(32, "big")
    challenge = int.from_bytes(_tagged_hash("BIP0340/challenge", nonce_point + public_key + message), "big") % n
    signature = nonce_point + ((nonce + challenge * secret) % n).to_bytes(32, "big")
    if not schnorr_verify(message, public_key, signature):  # the BIP's advice: never emit a faulty signature
        raise ValueError("the BIP-340 signature did not verify; this machine's arithmetic is faulty")
    return signature


def schnorr_verify(message: bytes, public_key: bytes, signature: bytes) -> bool:
    """Whether `signature` is a valid BIP-340 signature of `message` by the x-only `public_key`."""
    if len(public_key) != 32 or len(signature) != 64:
        return False
    point = _lift_x(int.from_bytes(public_key, "big"))
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    if point is None or r >= SECP256K1_P or s >= SECP256K1_N:
        return False
    challenge = int.from_bytes(_tagged_hash("BIP0340/challenge", signature[:32] + public_key + message),
                               "big") % SECP256K1_N
    nonce_point = _affine(_point_add(_point_multiply(_SECP256K1_G, s),
                                     _point_multiply(point, SECP256K1_N - challenge)))
    return nonce_point is not None and nonce_point[1] % 2 == 0 and nonce_point[0] == r


def bech32_encode(prefix: str, payload: bytes) -> str:
    """A BIP-173 string such as NIP-19's `npub1...` (the inverse of bech32_payload)."""
    values, accumulator, bits = [], 0, 0
    for byte in payload:
        accumulator, bits = (accumulator << 8) | byte, bits + 8
        while bits >= 5:
            bits -= 5
            values.append((accumulator >> bits) & 31)
    if bits:
        values.append((accumulator << (5 - bits)) & 31)
    expanded_prefix = [ord(char) >> 5 for char in prefix] + [0] + [ord(char) & 31 for char in prefix]
    check = _bech32_polymod(expanded_prefix + values + [0] * 6) ^ 1
    values += [(check >> 5 * (5 - index)) & 31 for index in range(6)]
    return prefix + "1" + "".join(_BECH32_CHARSET[value] for value in values)


def nostr_event(secret_key: bytes, created_at: int, kind: int, tags: list, content: str) -> dict:
    """A signed NIP-01 event: id = sha256 of [0, pubkey, created_at, kind, tags, content] as compact JSON."""
    public_key = schnorr_public_key(secret_key).hex()
    serialized = json.dumps([0, public_key, created_at, kind, tags, content], separators=(",", ":"),
                            ensure_ascii=False)
    event_id = _sha256(serialized.encode()).digest()
    return {"id": event_id.hex(), "pubkey": public_key, "created_at": created_at, "kind": kind, "tags": tags,
            "content": content, "sig": schnorr_sign(event_id, secret_key, os.urandom(32)).hex()}


def nostr_event_is_valid(event: Any) -> bool:
    """Whether an event received from a relay is well formed, its id right and its signature valid."""
    try:
        serialized = json.dumps([0, event["pubkey"], event["created_at"], event["kind"], event["tags"],
                                 event["content"]], separators=(",", ":"), ensure_ascii=False)
        event_id = _sha256(serialized.encode()).digest()
        return (event_id.hex() == event["id"]
                and schnorr_verify(event_id, bytes.fromhex(event["pubkey"]), bytes.fromhex(event["sig"])))
    except (KeyError, TypeError, ValueError):
        return False


# --- WebSocket client (RFC 6455), for Nostr relays ---------------------------------------------------
# Blocking sockets, run in the HTTP client's threads (channel.http.run_blocking) like HttpClient
# itself: wss:// needs the ssl module, which asyncio may not use in rustiz (see the note at the top),
# and one code path then serves ws:// and wss:// alike. A relay exchange is short (one message out,
# one or a few in), so a thread per relay for a few seconds costs little.

_WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_WEBSOCKET_MESSAGE_BYTES = 8 * 1024 * 1024
_OPCODE_CONTINUATION, _OPCODE_TEXT, _OPCODE_BINARY = 0x0, 0x1, 0x2
_OPCODE_CLOSE, _OPCODE_PING, _OPCODE_PONG = 0x8, 0x9, 0xA


class WebSocketClosed(Exception):
    """The connection ended: a close frame, the peer went away, a protocol error or a timeout."""


def _websocket_mask(data: bytes, key: bytes) -> bytes:
    """`data` XOR the 4-byte `key` repeated (RFC 6455 §5.3), as one big-integer XOR rather than a byte loop."""
    repeated = (key * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "little") ^ int.from_bytes(repeated, "little")).to_bytes(len(data), "little")


def _websocket_accept(key: str) -> str:
    """The Sec-WebSocket-Accept a server must answer to `key`: base64(SHA-1(key + GUID))."""
    import binascii
    try:
        from _sha1 import sha1  # CPython's built-in SHA-1: hashlib would load OpenSSL
    except ImportError:
        from hashlib import sha1
    return binascii.b2a_base64(sha1((key + _WEBSOCKET_GUID).encode()).digest(), newline=False).decode()


class WebSocketClient:
    """One client connection that exchanges text messages; pings are answered, fragments joined.

    `WebSocketClient(url, deadline, http)` connects (through `http`'s address guard) and upgrades, raising
    ConnectFailed or AddressRefused (nothing was sent); after that, every failure raises WebSocketClosed.
    Deadlines are time.monotonic() values."""

    def __init__(self, url: str, deadline: float, http: "HttpClient"):
        try:
            parts = parsed_url(url, ("ws", "wss"))
        except ValueError as problem:
            raise ConnectFailed(f"{url[:200]} {problem}") from None
        secure = parts.scheme.lower() == "wss"
        self._buffer = bytearray()
        self._sock = http.open_socket(_ascii_host(parts.hostname), parts.port or (443 if secure else 80),
                                      max(0.01, deadline - time.monotonic()), secure)
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            self._upgrade(parts.netloc.rpartition("@")[2], target, deadline)
        except WebSocketClosed as error:
            self._sock.close()
            raise ConnectFailed(f"{parts.netloc} refused the WebSocket connection: {error}") from None

    def _upgrade(self, host: str, target: str, deadline: float) -> None:
        import binascii
        key = binascii.b2a_base64(os.urandom(16), newline=False).decode()
        self._write(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
                    .encode(), deadline)
        while b"\r\n\r\n" not in self._buffer:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise WebSocketClosed("its answer's header is too large")
            self._fill(deadline)
        head, _, rest = bytes(self._buffer).partition(b"\r\n\r\n")
        self._buffer = bytearray(rest)  # a server may send its first message right behind the header
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        status = status_line.split(" ")[1:2]
        if status != ["101"]:  # the status code only: the rest of the line is whatever server answered
            shown = f"HTTP {status[0]}" if status and status[0].isdigit() and len(status[0]) == 3 else "something"
            raise WebSocketClosed(f"it answered {shown} instead of 101 Switching Protocols")
        connection_tokens = [token.strip().lower() for token in headers.get("connection", "").split(",")]
        if headers.get("upgrade", "").lower() != "websocket" or "upgrade" not in connection_tokens:
            raise WebSocketClosed("its 101 answer lacks 'Upgrade: websocket' and 'Connection: Upgrade'")
        if headers.get("sec-websocket-accept") != _websocket_accept(key):
            raise WebSocketClosed("its Sec-WebSocket-Accept does not match our key (a proxy in the way?)")

    def send_text(self, text: str, deadline: float) -> None:
        self._send_frame(_OPCODE_TEXT, text.encode(), deadline)

    def receive_text(self, deadline: float) -> str:
        """The next whole message (text, or binary read as UTF-8); control frames are handled on the way."""
        fragments: list = []
        size = 0
        while True:
            opcode, final, payload = self._read_frame(deadline)
            if opcode == _OPCODE_PING:
                self._send_frame(_OPCODE_PONG, payload, deadline)
            elif opcode == _OPCODE_CLOSE:
                code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
                reason = payload[2:].decode("utf-8", "replace")
                with contextlib.suppress(OSError, WebSocketClosed):
                    self._send_frame(_OPCODE_CLOSE, payload[:2], deadline)
                raise WebSocketClosed(f"it closed the connection (code {code}{': ' + reason if reason else ''})")
            elif opcode in (_OPCODE_TEXT, _OPCODE_BINARY, _OPCODE_CONTINUATION):
                if (opcode == _OPCODE_CONTINUATION) != bool(fragments):
                    raise WebSocketClosed("protocol error: a fragment out of sequence")
                size += len(payload)
                if size > MAX_WEBSOCKET_MESSAGE_BYTES:
                    raise WebSocketClosed(f"a message larger than {MAX_WEBSOCKET_MESSAGE_BYTES // 2**20} MiB")
                fragments.append(payload)
                if final:
                    return b"".join(fragments).decode("utf-8", "replace")
            elif opcode != _OPCODE_PONG:
                raise WebSocketClosed(f"protocol error: unknown opcode {opcode}")

    def close(self) -> None:
        """A polite close frame (not waiting for the echo), then the socket goes."""
        with contextlib.suppress(OSError, WebSocketClosed):
            self._send_frame(_OPCODE_CLOSE, (1000).to_bytes(2, "big"), time.monotonic() + 1.0)
        with contextlib.suppress(OSError):
            self._sock.close()

    def _send_frame(self, opcode: int, payload: bytes, deadline: float) -> None:
        length = len(payload)
        if length < 126:
            header = bytes((0x80 | opcode, 0x80 | length))
        elif length < 65536:
            header = bytes((0x80 | opcode, 0x80 | 126)) + length.to_bytes(2, "big")
        else:
            header = bytes((0x80 | opcode, 0x80 | 127)) + length.to_bytes(8, "big")
        mask = os.urandom(4)  # clients must mask every frame (RFC 6455 §5.1)
        self._write(header + mask + _websocket_mask(payload, mask), deadline)

    def _read_frame(self, deadline: float) -> tuple:
        """(opcode, final, payload) of the next frame."""
        first, second = self._read_exactly(2, deadline)
        if first & 0x70:
            raise WebSocketClosed("protocol error: reserved bits set (an extension was never agreed)")
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(self._read_exactly(2, deadline), "big")
        elif length == 127:
            length = int.from_bytes(self._read_exactly(8, deadline), "big")
        if length > MAX_WEBSOCKET_MESSAGE_BYTES:
            raise WebSocketClosed(f"a frame larger than {MAX_WEBSOCKET_MESSAGE_BYTES // 2**20} MiB")
        mask = self._read_exactly(4, deadline) if second & 0x80 else b""  # servers should not mask; tolerated
        payload = self._read_exactly(length, deadline)
        return first & 0x0F, bool(first & 0x80), _websocket_mask(payload, mask) if mask else payload

    def _read_exactly(self, count: int, deadline: float) -> bytes:
        while len(self._buffer) < count:
            self._fill(deadline)
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WebSocketClosed("no answer in the time allowed")
        try:
            self._sock.settimeout(remaining)
            chunk = self._sock.recv(65536)
        except OSError as error:
            raise WebSocketClosed("no answer in the time allowed" if isinstance(error, socket.timeout)
                                  else _network_reason(error)) from None
        if not chunk:
            raise WebSocketClosed("it closed the connection without a word")
        self._buffer += chunk

    def _write(self, data: bytes, deadline: float) -> None:
        try:
            self._sock.settimeout(max(0.01, deadline - time.monotonic()))
            self._sock.sendall(data)
        except OSError as error:
            raise WebSocketClosed(f"sending failed: {_network_reason(error)}") from None


# --- Nostr relays: one exchange per relay, run in a thread each ----------------------------------------

class RelayAnswer(NamedTuple):
    relay: str
    state: str  # "accepted", "refused", "unanswered" (sent, no verdict), "unreachable" (nothing sent), "connected",
    # or "blocked" (the address guard refused the relay's address: nothing sent, and a retry would not help)
    message: str  # the relay's own words, or what went wrong
    events: tuple = ()  # what a query returned


def _relay_message(text: str) -> list:
    """A relay's message as a JSON array with a string label first (["OK", ...]), or [] when it is not one."""
    try:
        message = json.loads(text)
    except ValueError:
        return []
    return message if isinstance(message, list) and message and isinstance(message[0], str) else []


def _relay_connection(http: "HttpClient", relay: str, timeouts: Timeouts) -> Union[WebSocketClient, RelayAnswer]:
    """A connection to the relay, or the RelayAnswer that says why there is none."""
    try:
        return WebSocketClient(relay, time.monotonic() + timeouts.connect, http)
    except AddressRefused as error:
        return RelayAnswer(relay, "blocked", str(error))
    except ConnectFailed as error:
        return RelayAnswer(relay, "unreachable", str(error))


def publish_to_relay(http: "HttpClient", relay: str, event: dict, timeouts: Timeouts) -> RelayAnswer:
    """Send ["EVENT", event] and wait for the relay's ["OK", id, accepted, message] (NIP-01, NIP-20)."""
    connection = _relay_connection(http, relay, timeouts)
    if isinstance(connection, RelayAnswer):
        return connection
    deadline = time.monotonic() + timeouts.read
    notices: list = []
    try:
        connection.send_text(json.dumps(["EVENT", event], ensure_ascii=False, separators=(",", ":")), deadline)
        while True:
            message = _relay_message(connection.receive_text(deadline))
            # nostr-relay answers a refused event with an empty id; one event per connection keeps it unambiguous
            if message[:1] == ["OK"] and len(message) >= 3 and message[1] in (event["id"], ""):
                words = str(message[3]) if len(message) > 3 else ""
                accepted = message[2] is True or words.startswith("duplicate:")  # already stored counts
                return RelayAnswer(relay, "accepted" if accepted else "refused", words)
            if message[:1] == ["NOTICE"] and len(message) > 1:
                notices.append(str(message[1])[:300])
    except WebSocketClosed as error:
        said = f" (it said: {'; '.join(notices)})" if notices else ""
        return RelayAnswer(relay, "unanswered", f"{error}{said}")
    finally:
        connection.close()


def query_relay(http: "HttpClient", relay: str, query: dict, timeouts: Timeouts) -> RelayAnswer:
    """The events a relay holds for one NIP-01 filter, read until EOSE or the time allowed runs out."""
    connection = _relay_connection(http, relay, timeouts)
    if isinstance(connection, RelayAnswer):
        return connection
    deadline = time.monotonic() + timeouts.read
    subscription = "rustiz-" + os.urandom(4).hex()
    events: list = []
    try:
        connection.send_text(json.dumps(["REQ", subscription, query]), deadline)
        while True:
            message = _relay_message(connection.receive_text(deadline))
            if message[:2] == ["EVENT", subscription] and len(message) > 2:
                events.append(message[2])
            elif message[:2] in (["EOSE", subscription], ["CLOSED", subscription]):
                connection.send_text(json.dumps(["CLOSE", subscription]), deadline)
                return RelayAnswer(relay, "connected", "", tuple(events))
    except WebSocketClosed as error:
        return RelayAnswer(relay, "connected", str(error), tuple(events))
    finally:
        connection.close()


def _temporary_refusal(message: str) -> bool:
    """A relay's refusal that may pass later (NIP-01 prefixes "rate-limited:" and "error:")."""
    return message.startswith(("rate-limited:", "error:"))


def _newest_profile(public_key: str, events: list) -> dict:
    """The newest valid kind-0 metadata (name, display_name, picture, nip05) of `public_key`, or {}."""
    profiles = [event for event in events if isinstance(event, dict) and event.get("pubkey") == public_key
                and event.get("kind") == 0 and isinstance(event.get("created_at"), int)
                and nostr_event_is_valid(event)]
    for event in sorted(profiles, key=lambda event: event["created_at"], reverse=True):
        with contextlib.suppress(ValueError):
            profile = json.loads(event["content"])
            if isinstance(profile, dict):
                return {key: value.strip() for key, value in profile.items()
                        if isinstance(value, str) and value.strip()}
    return {}


def nostr_reply_tags(parent: Optional[Release], public_key: str) -> list:
    """NIP-10 marked tags: the thread's root, the note replied to (when it is not the root), its author."""
    if parent is None:
        return []
    reference = parent.reply_ref if isinstance(parent.reply_ref, dict) else {}
    root = reference.get("root") if isinstance(reference.get("root"), str) else parent.id
    relays = reference.get("relays") if isinstance(reference.get("relays"), list) else []
    hint = relays[0] if relays and isinstance(relays[0], str) else ""
    tags = [["e", root, hint, "root"]]
    if parent.id != root:  # a reply straight to the root carries the root marker only
        tags.append(["e", parent.id, hint, "reply"])
    return tags + [["p", public_key]]


def nevent(event_id: str, public_key: str, relays: list) -> str:
    """NIP-19 `nevent1...`: the event id, where to find it and its author, as TLV entries in bech32."""
    entries = bytes((0, 32)) + bytes.fromhex(event_id)
    for relay in relays:
        entries += bytes((1, len(relay.encode()))) + relay.encode()
    return bech32_encode("nevent", entries + bytes((2, 32)) + bytes.fromhex(public_key))


NOSTR_PROFILE_TIMEOUTS = Timeouts(connect=5.0, read=5.0)  # connecting a channel: a short look for the profile
NOSTR_REMEMBER_SECONDS = 7 * 86400  # how long a part's event time is kept for re-sends


@publisher
class NostrProvider(Provider):
    """Nostr: each part a kind-1 note signed with the channel's key and sent to each of its relays.

    A relay counts only when it answers ["OK", id, true, ...]. The event id is a hash of the note's
    author, time, tags and text, so a re-send of a part is the same event, which relays store once."""
    identifier = "nostr"
    label = "Nostr"
    resend_is_safe = True  # the same event id on every attempt (see _created_at): relays keep it once
    spacing = 1.0

    async def connect(self, channel: Channel) -> Connected:
        public_key = schnorr_public_key(self._secret_key(channel)).hex()
        answers = await self._each_relay(channel, query_relay, {"authors": [public_key], "kinds": [0], "limit": 1},
                                         NOSTR_PROFILE_TIMEOUTS)
        reachable = [answer for answer in answers if answer.state == "connected"]
        if not reachable:
            report = "; ".join(f"{answer.relay}: {answer.message}" for answer in answers)
            if all(answer.state == "blocked" for answer in answers):
                raise AddressNotAllowed(report)
            raise Rejected(f"none of the relays accepted a WebSocket connection: {report}")
        profile = _newest_profile(public_key, [event for answer in reachable for event in answer.events])
        npub = bech32_encode("npub", bytes.fromhex(public_key))
        name = (profile.get("display_name") or profile.get("name") or npub)[:CHANNEL_NAME_MAX_LENGTH]
        picture = profile.get("picture", "")
        return Connected(ChannelAccount(public_key, name, profile.get("nip05") or npub,
                                        picture if re.match(r"https?://", picture) and len(picture) < 2000 else None))

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        secret_key = self._secret_key(channel)
        content = "\n".join(filter(None, [post.text, *(media.url for media in post.media)]))
        if not content:
            raise Rejected("a Nostr note cannot be empty: this part has no text and no media")
        public_key = schnorr_public_key(secret_key).hex()
        event = nostr_event(secret_key, self._created_at(channel, post), 1, nostr_reply_tags(parent, public_key),
                            content)
        answers = await self._each_relay(channel, publish_to_relay, event, self._publish_timeouts())
        accepted = [answer.relay for answer in answers if answer.state == "accepted"]
        if not accepted:
            raise self._failure(answers)
        root = event["tags"][0][1] if event["tags"] else event["id"]
        return Release(event["id"], "https://njump.me/" + nevent(event["id"], public_key, accepted[:2]),
                       {"root": root, "relays": accepted})

    def where_to_check(self, channel: Channel) -> str:
        relays = ", ".join(channel.credentials.get("relays") or [])
        try:
            npub = bech32_encode("npub", schnorr_public_key(self._secret_key(channel)))
        except Rejected:
            return f"the relays {relays}"
        return f"the Nostr profile https://njump.me/{npub} (relays {relays})"

    @staticmethod
    def _secret_key(channel: Channel) -> bytes:
        key = nostr_private_key_hex(str(channel.credentials.get("password") or ""))
        if key is None or not 0 < int(key, 16) < SECP256K1_N:
            raise Rejected("the private key is not a valid secp256k1 key: give 64 hex digits or an nsec1... key "
                           "(the one your Nostr app shows under its key or security settings)")
        return bytes.fromhex(key)

    @staticmethod
    def _publish_timeouts() -> Timeouts:
        """How long each relay has to accept the connection, then to answer the event (tunable for slow relays)."""
        def seconds(variable: str, default: float) -> float:
            with contextlib.suppress(ValueError):
                return max(0.1, float(os.environ.get(variable, default)))
            return default
        return Timeouts(connect=seconds("RUSTIZ_NOSTR_CONNECT_TIMEOUT", 10.0),
                        read=seconds("RUSTIZ_NOSTR_ANSWER_TIMEOUT", 15.0))

    @staticmethod
    async def _each_relay(channel: Channel, exchange: Callable, argument: Any, timeouts: Timeouts) -> list:
        """`exchange(http, relay, argument, timeouts)` with every relay of the channel at once, each in a thread."""
        relays = dict.fromkeys(channel.credentials.get("relays") or [])
        http = channel.http
        return list(await asyncio.gather(*(http.run_blocking(exchange, http, relay, argument, timeouts)
                                           for relay in relays)))

    @staticmethod
    def _created_at(channel: Channel, post: OutgoingPost) -> int:
        """The note's time, the same on every attempt of a part, so that the event and its id are the same.

        It is the part's due time at its first attempt, kept in the channel's session by idempotency
        key, and saved before anything is sent, as a re-send may follow a crash."""
        remembered = channel.session.get("createdAt")
        remembered = remembered if isinstance(remembered, dict) else {}
        created_at = remembered.get(post.idempotency_key)
        if isinstance(created_at, int):
            return created_at
        due = parse_iso_instant(post.publish_date)
        now = time.time()
        created_at = int(min(due.timestamp() if due else now, now))  # relays refuse notes from the future
        kept = {key: value for key, value in remembered.items()
                if isinstance(value, int) and value > now - NOSTR_REMEMBER_SECONDS}
        channel.save_session({**channel.session, "createdAt": {**kept, post.idempotency_key: created_at}})
        return created_at

    def _failure(self, answers: list) -> PublishError:
        """Why no relay accepted the note, as the error the scheduler acts on, naming each relay's answer."""
        described = {"refused": "refused it", "unanswered": "gave no verdict", "unreachable": "could not be reached",
                     "blocked": "was not contacted"}
        report = "; ".join(f"{answer.relay} {described[answer.state]}: {answer.message or 'no reason given'}"
                           for answer in answers)
        if any(answer.state == "unanswered" for answer in answers):
            return OutcomeUnknown(f"no relay confirmed the note, and some may have stored it ({report})")
        if all(answer.state == "blocked" for answer in answers):
            return AddressNotAllowed(report)
        if all(answer.state == "unreachable" for answer in answers):
            return Retryable(f"no relay could be reached ({report})")
        if all(answer.state == "blocked" or answer.state == "refused" and not _temporary_refusal(answer.message)
               for answer in answers):
            return Rejected(f"every relay refused the note ({report})")
        return Retryable(f"no relay accepted the note ({report})")


# --- Mastodon: any instance, with a pasted access token ------------------------------------------

MASTODON_DEFAULT_LIMITS = {"maxLength": 500, "maxMedia": 4, "charactersReservedPerUrl": 23}  # stock Mastodon
MASTODON_MEDIA_WAIT_SECONDS = 60.0  # how long a status waits for the instance to process its media
_MASTODON_URL = r"(?i)\bhttps?://[^\s<>\"]*[^\s<>\".,:;!?'()\]]"
_MASTODON_REMOTE_MENTION = r"(?<![\w@/])@(\w+)@[\w.-]*\w"
def mastodon_length(text: str, characters_per_url: int) -> int:
    """A status's length as Mastodon counts it: every http(s) link is `characters_per_url` long whatever
    its length, a mention of a remote account counts only its @username, the rest in graphemes."""
    text = re.sub(_MASTODON_REMOTE_MENTION, r"@\1", text)
    links = len(re.findall(_MASTODON_URL, text))
    return grapheme_count(re.sub(_MASTODON_URL, "", text)) + links * characters_per_url


def _positive_int(value: Any, fallback: int) -> int:
    return value if type(value) is int and value > 0 else fallback


@publisher
class MastodonProvider(Provider):
    """Any Mastodon instance (or one speaking its API), with an access token made in the account's settings.

    Media go up first (large files are processed in the background: polled, up to a minute), then the
    status, with Idempotency-Key: the instance returns the same status for a repeated key for about an
    hour, so an attempt whose answer was lost can be sent again safely."""
    identifier = "mastodon"
    label = "Mastodon"
    resend_is_safe = True
    concurrency = 5
    spacing = 1.0  # 300 requests per 5 minutes per account: a publish (media, polls, status) a second stays under

    @staticmethod
    def _instance(channel: Channel) -> str:
        return channel.credentials["instance"].rstrip("/")

    @staticmethod
    def _authorization(channel: Channel) -> dict:
        return {"Authorization": f"Bearer {channel.credentials['accessToken'].strip()}"}

    async def connect(self, channel: Channel) -> Connected:
        instance = self._instance(channel)
        reply = await self.send(channel, "GET", instance + "/api/v1/accounts/verify_credentials",
                                what="the access token check (verify_credentials)", headers=self._authorization(channel))
        account = reply.json()
        if not isinstance(account, dict) or account.get("id") is None:
            raise Rejected(f"{instance} does not answer like a Mastodon server: verify_credentials returned "
                           f"{reply.described('a Mastodon account')}", reply.status)
        host = _url_host(instance)
        username = account.get("acct") or account.get("username") or str(account["id"])
        return Connected(ChannelAccount(f"{host}/{account['id']}", account.get("display_name") or username,
                                        username, account.get("avatar") or None),
                         limits=await self._instance_limits(channel))

    async def _instance_limits(self, channel: Channel) -> dict:
        """The instance's own limits (many raise the 500 characters); stock Mastodon's where it does not say.

        Servers before Mastodon 4.0 (and some that speak its API, like Pleroma) have only /api/v1/instance,
        with the same `configuration` or a `max_toot_chars`."""
        try:
            reply = await self.send(channel, "GET", self._instance(channel) + "/api/v2/instance",
                                    what="the instance's limits (/api/v2/instance)")
        except Rejected as refused:
            if refused.status != 404:
                raise
            reply = await self.send(channel, "GET", self._instance(channel) + "/api/v1/instance",
                                    what="the instance's limits (/api/v1/instance)")
        answer = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        configuration = answer.get("configuration") if isinstance(answer.get("configuration"), dict) else {}
        statuses = configuration.get("statuses") if isinstance(configuration.get("statuses"), dict) else {}
        max_characters = statuses.get("max_characters") or answer.get("max_toot_chars")
        return {"maxLength": _positive_int(max_characters, MASTODON_DEFAULT_LIMITS["maxLength"]),
                "maxMedia": _positive_int(statuses.get("max_media_attachments"), MASTODON_DEFAULT_LIMITS["maxMedia"]),
                "charactersReservedPerUrl": _positive_int(statuses.get("characters_reserved_per_url"),
                                                          MASTODON_DEFAULT_LIMITS["charactersReservedPerUrl"])}

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        limits = {**MASTODON_DEFAULT_LIMITS, **(channel.get("limits") or {})}
        for number, value in enumerate(values, 1):
            where = f"thread part {number}" if len(values) > 1 else "the post"
            length = mastodon_length(html_to_text(value["content"]), limits["charactersReservedPerUrl"])
            if length > limits["maxLength"]:
                return (f"{where} is {length} characters long as Mastodon counts them (each link counts as "
                        f"{limits['charactersReservedPerUrl']}), and this instance allows {limits['maxLength']}")
            if len(value["image"]) > limits["maxMedia"]:
                return (f"{where} has {len(value['image'])} images or videos, and this instance allows "
                        f"{limits['maxMedia']} per status")
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        media_ids = [await self._upload(channel, media, f"media item {number}")
                     for number, media in enumerate(post.media, 1)]
        status: dict = {"status": post.text, "visibility": "public", "media_ids": media_ids}
        if parent is not None:
            status["in_reply_to_id"] = parent.id
        reply = await self.send(channel, "POST", self._instance(channel) + "/api/v1/statuses", visible=True,
                                what="the status", json_body=status,
                                headers={**self._authorization(channel), "Idempotency-Key": post.idempotency_key})
        answer = reply.json()
        if not isinstance(answer, dict) or answer.get("id") is None:
            raise OutcomeUnknown(f"Mastodon accepted the status but answered {reply.described('the status')}",
                                 reply.status)
        return Release(str(answer["id"]), self._status_url(channel, answer))

    def _status_url(self, channel: Channel, status: dict) -> str:
        if isinstance(status.get("url"), str) and status["url"]:
            return status["url"]
        account = status.get("account") if isinstance(status.get("account"), dict) else {}
        if account.get("acct"):
            return f"{self._instance(channel)}/@{account['acct']}/{status['id']}"
        return f"{self._instance(channel)}/statuses/{status['id']}"

    async def _upload(self, channel: Channel, media: MediaFile, item: str) -> str:
        """The media attachment's id, once the instance has processed the file (it may take a while for video)."""
        body, content_type = encode_multipart([("file", (media.name, media.read(), media.content_type)),
                                               ("description", media.alt)])
        try:
            reply = await self.send(channel, "POST", self._instance(channel) + "/api/v2/media", what=f"the upload of {item}",
                                    body=body, headers={**self._authorization(channel), "Content-Type": content_type},
                                    timeouts=Timeouts(read=120, total=600))
            attachment = reply.json()
            if not isinstance(attachment, dict) or attachment.get("id") is None:
                raise Rejected(f"Mastodon answered the upload with {reply.described('a media attachment')}",
                               reply.status)
            if reply.status == 202:  # accepted, still being processed: the status must wait for it
                await self._wait_until_processed(channel, str(attachment["id"]), item)
        except PublishError as error:
            error.item = error.item or item
            raise
        return str(attachment["id"])

    async def _wait_until_processed(self, channel: Channel, media_id: str, item: str) -> None:
        """Poll the attachment (206 = still processing, 200 = ready), at growing intervals, for a bounded time."""
        deadline, pause = time.monotonic() + MASTODON_MEDIA_WAIT_SECONDS, 0.25
        while time.monotonic() < deadline:
            await asyncio.sleep(pause)
            reply = await self.send(channel, "GET", f"{self._instance(channel)}/api/v1/media/{media_id}",
                                    what=f"the processing of {item}", headers=self._authorization(channel))
            if reply.status == 200:
                return
            pause = min(pause * 2, 4.0)
        raise Retryable(f"Mastodon was still processing {item} after {MASTODON_MEDIA_WAIT_SECONDS:.0f} s; "
                        "the post waits and tries again", item=item)

    def where_to_check(self, channel: Channel) -> str:
        return f"the profile of the channel \"{channel.name}\" on {_url_host(self._instance(channel))}"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error", "error_description")  # {"error": "Validation failed: ..."}


# --- Telegram: the user's own bot, posting to a channel or group ---------------------------------

TELEGRAM_TEXT_LIMIT = 4096  # characters of a message, as Telegram counts them (UTF-16 code units)
TELEGRAM_CAPTION_LIMIT = 1024  # characters of a photo's or video's caption
TELEGRAM_MEDIA_GROUP_SIZE = 10  # items of one album (sendMediaGroup)
TELEGRAM_PHOTO_BYTES = 10 * 1024 * 1024
TELEGRAM_FILE_BYTES = 50 * 1024 * 1024  # what a bot may upload
# Postiz's tags -> Telegram's (its HTML parse mode knows only a few); headings become bold lines.
_TELEGRAM_TAGS = {"strong": "b", "b": "b", "em": "i", "i": "i", "u": "u", "ins": "u", "s": "s", "strike": "s",
                  "del": "s", "code": "code", "pre": "pre", "blockquote": "blockquote",
                  "h1": "b", "h2": "b", "h3": "b", "h4": "b", "h5": "b", "h6": "b"}
_TELEGRAM_LINE_ENDS = frozenset("p div li h1 h2 h3 h4 h5 h6 blockquote pre".split())
_TELEGRAM_LINK = r"(?i)(?:https?|tg|mailto):"
# 400 answers that no post can get past: the chat or the bot's place in it is gone, so the channel
# must be connected again (connecting checks the bot can post there) rather than each post failing alike.
_TELEGRAM_CHAT_GONE = (r"(?i)chat not found|not enough rights|have no rights|need administrator rights|"
                       r"bot is not a member|upgraded to a supergroup|CHAT_WRITE_FORBIDDEN|"
                       r"CHAT_ADMIN_REQUIRED|CHAT_RESTRICTED")


def telegram_html(html: str) -> str:
    """Postiz's HTML in the subset Telegram's parse_mode HTML takes: <b> <i> <u> <s> <a href> <code>
    <pre> <blockquote>; paragraphs and <br> become line breaks, list items "• " lines, other tags go
    (their text stays), and <, >, & in the text are escaped."""
    from html.parser import HTMLParser

    class Converter(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.output: list = []
            self.open: list = []  # (Postiz tag, Telegram tag written for it)

        def handle_starttag(self, tag: str, attributes: list) -> None:
            if tag == "br":
                self.output.append("\n")
                return
            if tag == "li":
                self.output.append("• ")
            if any(written in ("code", "pre") for _, written in self.open):
                return  # Telegram takes no formatting inside code
            href = dict(attributes).get("href") or ""
            written = "a" if tag == "a" and re.match(_TELEGRAM_LINK, href.strip()) else _TELEGRAM_TAGS.get(tag)
            if written:
                self.output.append(f'<a href="{_escape_html(href.strip(), quote=True)}">' if written == "a"
                                   else f"<{written}>")
                self.open.append((tag, written))

        def handle_endtag(self, tag: str) -> None:
            if any(source == tag for source, _ in self.open):
                while self.open:
                    source, written = self.open.pop()
                    self.output.append(f"</{written}>")
                    if source == tag:
                        break
            if tag in _TELEGRAM_LINE_ENDS:
                self.output.append("\n")

        def handle_data(self, data: str) -> None:
            self.output.append(escape_markup_characters(data))

        def text(self) -> str:
            self.close()
            self.output.extend(f"</{written}>" for _, written in reversed(self.open))
            return re.sub(r"\n{3,}", "\n\n", "".join(self.output)).strip()

    converter = Converter()
    converter.feed(html)
    return converter.text()


def telegram_length(telegram_message: str) -> int:
    """How long Telegram finds a parse_mode HTML message: its text without tags, in UTF-16 code units."""
    import html as html_module
    text = html_module.unescape(re.sub(r"<[^>]*>", "", telegram_message))
    return len(text.encode("utf-16-le")) // 2


def telegram_message_url(message: dict) -> str:
    """The t.me link of a message: public chats by username, private supergroups and channels by id."""
    chat = message.get("chat") if isinstance(message.get("chat"), dict) else {}
    if chat.get("username"):
        return f"https://t.me/{chat['username']}/{message['message_id']}"
    chat_id = str(chat.get("id", ""))
    if chat_id.startswith("-100"):
        return f"https://t.me/c/{chat_id[4:]}/{message['message_id']}"
    return ""  # a basic group or a private chat: Telegram has no link to its messages


@publisher
class TelegramProvider(Provider):
    """The user's own bot (from @BotFather), posting to a channel, group or chat it may write in.

    Text goes out with sendMessage; one photo, video or GIF with its caption; 2 to 10 media as an album
    (sendMediaGroup), larger sets as several albums. Telegram has no idempotency key: an attempt whose
    answer was lost is not sent again. Every answer is {"ok": ...}; ok:false is an error whatever the status."""
    identifier = "telegram"
    label = "Telegram"
    resend_is_safe = False
    concurrency = 10
    spacing = 1.1  # Telegram allows about one message a second in a chat

    async def _call(self, channel: Channel, method: str, what: str, visible: bool = False, **request: Any) -> Any:
        """A Bot API method's `result`; the token (part of the URL) never appears in an error."""
        token = channel.credentials["botToken"].strip()
        url = f"{platform_url('RUSTIZ_TELEGRAM_API_URL', 'https://api.telegram.org')}/bot{token}/{method}"
        try:
            reply = await self.send(channel, "POST", url, visible=visible, what=what, **request)
        except PublishError as error:
            error.message, error.body = error.message.replace(token, "<bot token>"), error.body.replace(token, "")
            raise
        return reply.json()["result"]

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        answer = reply.json()
        if not isinstance(answer, dict) or "ok" not in answer:  # a proxy's page, not the Bot API
            super().check_reply(reply, visible, what)
            problem = f"Telegram answered {what} with {reply.described('a Bot API answer')}"
            raise OutcomeUnknown(problem, reply.status) if visible else Retryable(problem, reply.status)
        if answer["ok"] is True and 200 <= reply.status < 300 and "result" in answer:
            return reply
        description = str(answer.get("description") or "ok:false without a description")[:ERROR_WORDS_LIMIT]
        code = answer.get("error_code") if isinstance(answer.get("error_code"), int) else reply.status
        body = self.error_excerpt(reply)
        if code == 401:
            raise NeedsReconnect(f"Telegram refused the bot token (HTTP 401, {description}): it is mistyped, or was "
                                 "revoked or replaced in @BotFather; paste the bot's current token", 401, body)
        if code == 403 or (code == 400 and re.search(_TELEGRAM_CHAT_GONE, description)):
            new_chat = (answer.get("parameters") or {}).get("migrate_to_chat_id")
            hint = (f"; the group is now the supergroup {new_chat}: use that as the chatId" if new_chat else
                    "; check the bot is still in the chat with the right to post")
            raise NeedsReconnect(f"Telegram refused {what} (HTTP {code}): {description}{hint}", code, body)
        if 200 <= reply.status < 300:  # ok:false in a 200 answer: still a refusal
            raise Rejected(f"Telegram refused {what}: {description}", code, body)
        return super().check_reply(reply, visible, what)

    async def connect(self, channel: Channel) -> Connected:
        chat_id = channel.credentials["chatId"]
        bot = await self._call(channel, "getMe", "the bot token check (getMe)")
        chat = await self._call(channel, "getChat", f"the chat {chat_id} (getChat)", json_body={"chat_id": chat_id})
        if chat.get("type") != "private":  # in a private chat the user talks to the bot: it may always answer
            member = await self._call(channel, "getChatMember", "the bot's rights in the chat (getChatMember)",
                                      json_body={"chat_id": chat_id, "user_id": bot["id"]})
            problem = self._posting_problem(chat, member, bot)
            if problem:
                raise Rejected(problem)
        name = chat.get("title") or " ".join(filter(None, (chat.get("first_name"), chat.get("last_name")))) \
            or f"Telegram {chat_id}"
        # No picture: a chat photo's URL would contain the bot token.
        return Connected(ChannelAccount(f"{bot['id']}/{chat['id']}", name, chat.get("username")))

    @staticmethod
    def _posting_problem(chat: dict, member: dict, bot: dict) -> Optional[str]:
        """Why the bot cannot post in the chat (None when it can): channels need an admin with Post Messages."""
        status, bot_name, title = member.get("status"), f"@{bot.get('username')}", chat.get("title") or chat.get("id")
        if chat.get("type") == "channel":
            if status == "creator" or (status == "administrator" and member.get("can_post_messages")):
                return None
            return (f"the bot {bot_name} is {status} in the channel \"{title}\", and only an administrator with "
                    f"the \"Post Messages\" right can post there: in the channel, open Administrators → Add "
                    f"Admin → {bot_name}, turn on \"Post Messages\", then connect again")
        if status in ("creator", "administrator", "member") or (
                status == "restricted" and member.get("is_member") and member.get("can_send_messages")):
            return None
        return (f"the bot {bot_name} is {status} in the group \"{title}\" and cannot send messages there: "
                f"add it to the group (or lift its restrictions), then connect again")

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, value in enumerate(values, 1):
            where = f"thread part {number}" if len(values) > 1 else "the post"
            length = telegram_length(telegram_html(value["content"]))
            if value["image"] and length > TELEGRAM_CAPTION_LIMIT:
                return (f"{where} has images or videos, so its text is their caption, and it is {length} characters "
                        f"long; Telegram allows {TELEGRAM_CAPTION_LIMIT:,} in a caption ({TELEGRAM_TEXT_LIMIT:,} "
                        "without media): shorten it, or put the media in a thread part of their own")
            if length > TELEGRAM_TEXT_LIMIT:
                return (f"{where} is {length} characters long as Telegram counts them (an emoji is 2), and "
                        f"Telegram allows {TELEGRAM_TEXT_LIMIT:,} in a message")
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        text = telegram_html(post.html)
        target: dict = {"chat_id": channel.credentials["chatId"]}
        if parent is not None:
            target["reply_parameters"] = {"message_id": int(parent.id)}
        if not post.media:
            message = await self._call(channel, "sendMessage", "the message", visible=True,
                                       json_body={**target, "text": text, "parse_mode": "HTML"})
            return Release(str(message["message_id"]), telegram_message_url(message))
        _check_telegram_sizes(post.media)
        return await self._send_albums(channel, post, text, target)

    async def _send_albums(self, channel: Channel, post: OutgoingPost, caption: str, target: dict) -> Release:
        """The media in albums of up to 10, the caption on the first item. Which albums went out is kept in
        the session until the part is done, so a retry after a refused album does not repeat the earlier ones."""
        size = TELEGRAM_MEDIA_GROUP_SIZE
        albums = [post.media[start:start + size] for start in range(0, len(post.media), size)]
        progress = dict(channel.session.get("telegramAlbumsSent", {}).get(post.idempotency_key) or {"albums": 0})
        for index, album in enumerate(albums):
            if index < progress["albums"]:
                continue
            first = await self._send_album(channel, album, caption if index == 0 else "", target, index * size + 1)
            progress = {"albums": index + 1, "release": progress.get("release") or
                        [str(first["message_id"]), telegram_message_url(first)]}
            if index + 1 < len(albums):
                self._remember_albums(channel, post.idempotency_key, progress)
        if len(albums) > 1:
            self._remember_albums(channel, post.idempotency_key, None)
        return Release(*progress["release"])

    @staticmethod
    def _remember_albums(channel: Channel, key: str, progress: Optional[dict]) -> None:
        sent = {name: value for name, value in channel.session.get("telegramAlbumsSent", {}).items() if name != key}
        if progress is not None:
            sent[key] = progress
        channel.save_session({**channel.session, "telegramAlbumsSent": sent})

    async def _send_album(self, channel: Channel, album: tuple, caption: str, target: dict, first_number: int) -> dict:
        """One photo, video or GIF (sendPhoto/sendVideo/sendAnimation), or an album of 2 to 10; its first message."""
        fields = [(name, json.dumps(value) if isinstance(value, dict) else value) for name, value in target.items()]
        described = {"caption": caption, "parse_mode": "HTML"} if caption else {}
        if len(album) == 1:
            media = album[0]
            kind = "video" if media.kind == "video" else "animation" if media.content_type == "image/gif" else "photo"
            method, what, item = "send" + kind.capitalize(), f"the {kind}", f"media item {first_number}"
            fields += [*described.items(), (kind, (media.name, media.read(), media.content_type))]
        else:
            method, what = "sendMediaGroup", "the album"
            item = f"media items {first_number}–{first_number + len(album) - 1}"
            # A GIF in an album goes as a photo (its first frame): albums take no animations.
            fields.append(("media", json.dumps([
                {"type": "video" if media.kind == "video" else "photo", "media": f"attach://file{number}",
                 **(described if number == 0 else {})} for number, media in enumerate(album)])))
            fields += [(f"file{number}", (media.name, media.read(), media.content_type))
                       for number, media in enumerate(album)]
        body, content_type = encode_multipart(fields)
        try:
            result = await self._call(channel, method, what, visible=True,
                                      body=body, headers={"Content-Type": content_type},
                                      timeouts=Timeouts(read=120, total=600))
        except PublishError as error:
            error.item = error.item or item
            raise
        return result[0] if isinstance(result, list) else result

    def where_to_check(self, channel: Channel) -> str:
        return f"the Telegram chat {channel.credentials.get('chatId')} (the channel \"{channel.name}\")"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        answer = reply.json()  # {"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}
        return error_fields(answer, "description") if isinstance(answer, dict) and answer.get("ok") is False else None


def _check_telegram_sizes(media: tuple) -> None:
    """Refuse, before anything is sent, a file larger than a bot may upload (10 MB a photo, 50 MB any file)."""
    for number, item in enumerate(media, 1):
        size = os.path.getsize(item.path)
        photo = item.kind == "image" and item.content_type != "image/gif"
        limit = TELEGRAM_PHOTO_BYTES if photo else TELEGRAM_FILE_BYTES
        if size > limit:
            raise Rejected(f"this {'photo' if photo else 'file'} is {size / 2**20:.1f} MB, and a Telegram bot may "
                           f"send {'photos' if photo else 'files'} of up to {limit // 2**20} MB",
                           item=f"media item {number}")


# --- articles: HTML to Markdown, cover images, Basic auth (WordPress, Dev.to, Hashnode, Listmonk) ----

class _HtmlNode:
    """One element of a parsed HTML fragment; `children` holds _HtmlNodes and text (str)."""
    __slots__ = ("tag", "attributes", "children")

    def __init__(self, tag: str, attributes: dict):
        self.tag, self.attributes, self.children = tag, attributes, []


_VOID_TAGS = frozenset(("br", "img", "hr", "input", "meta", "link", "source", "wbr", "col", "area", "embed"))
_BLOCK_TAGS = frozenset(("p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre",
                         "hr", "table", "section", "article", "header", "footer", "figure"))


def parse_html_fragment(html: str) -> _HtmlNode:
    """A forgiving parse of Postiz's HTML into a tree (an end tag closes everything opened after its start)."""
    from html.parser import HTMLParser

    root = _HtmlNode("", {})
    stack = [root]

    class TreeBuilder(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list) -> None:
            node = _HtmlNode(tag, {name: value or "" for name, value in attrs})
            stack[-1].children.append(node)
            if tag not in _VOID_TAGS:
                stack.append(node)

        def handle_startendtag(self, tag: str, attrs: list) -> None:
            stack[-1].children.append(_HtmlNode(tag, {name: value or "" for name, value in attrs}))

        def handle_endtag(self, tag: str) -> None:
            for depth in range(len(stack) - 1, 0, -1):
                if stack[depth].tag == tag:
                    del stack[depth:]
                    return

        def handle_data(self, data: str) -> None:
            stack[-1].children.append(data)

    builder = TreeBuilder(convert_charrefs=True)
    builder.feed(html)
    builder.close()
    return root


def html_to_markdown(html: str) -> str:
    """Postiz's HTML as Markdown, for platforms that take Markdown (Dev.to, Hashnode): headings, bold,
    italic, strike-through, links, nested lists, quotes, code, images and paragraphs."""
    return _markdown_blocks(parse_html_fragment(html).children).strip()


def _markdown_blocks(children: list, separator: str = "\n\n") -> str:
    """Block-level Markdown of a node's children: runs of inline content become paragraphs."""
    blocks, inline = [], []
    for child in children:
        if isinstance(child, _HtmlNode) and child.tag in _BLOCK_TAGS:
            blocks.append(_markdown_inline_run(inline))
            inline = []
            blocks.append(_markdown_block(child))
        else:
            inline.append(child)
    blocks.append(_markdown_inline_run(inline))
    return separator.join(block for block in blocks if block.strip())


def _markdown_inline_run(nodes: list) -> str:
    return "".join(_markdown_inline(node) for node in nodes).strip(" \t\n")


def _markdown_block(node: _HtmlNode) -> str:
    tag = node.tag
    if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
        return "#" * int(tag[1]) + " " + _markdown_inline_run(node.children).replace("\n", " ")
    if tag in ("ul", "ol"):
        return _markdown_list(node)
    if tag == "blockquote":
        return "\n".join("> " + line if line else ">" for line in _markdown_blocks(node.children).split("\n"))
    if tag == "pre":
        code = _node_text(node).strip("\n")
        fence = "````" if "```" in code else "```"
        return f"{fence}\n{code}\n{fence}"
    if tag == "hr":  # not "---", which Dev.to would read as front matter at the start of an article
        return "***"
    if tag == "li":  # a stray list item outside a list
        return "- " + _markdown_blocks(node.children, "\n")
    return _markdown_blocks(node.children)


def _markdown_list(node: _HtmlNode) -> str:
    start = node.attributes.get("start", "")
    items, number = [], int(start) if start.isdigit() else 1
    for child in node.children:
        if not (isinstance(child, _HtmlNode) and child.tag == "li"):
            continue
        marker = f"{number}. " if node.tag == "ol" else "- "
        number += 1
        lines = _markdown_blocks(child.children, "\n").split("\n")
        items.append(marker + lines[0] + "".join("\n" + (" " * len(marker) + line if line else "")
                                                 for line in lines[1:]))
    return "\n".join(items)


_MARKDOWN_SPECIAL = r"([\\`*_\[\]])"
_EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*", "s": "~~", "del": "~~", "strike": "~~"}


def _markdown_inline(node: Any) -> str:
    if isinstance(node, str):
        return re.sub(_MARKDOWN_SPECIAL, r"\\\1", re.sub(r"\s+", " ", node))
    tag = node.tag
    if tag == "br":
        return "  \n"
    if tag == "img":
        return f"![{node.attributes.get('alt', '')}]({node.attributes.get('src', '')})" \
            if node.attributes.get("src") else ""
    if tag == "code":
        code = _node_text(node)
        fence = "``" if "`" in code else "`"
        return f"{fence}{code}{fence}"
    if tag in _BLOCK_TAGS:  # a block inside inline content (a <p> in a <span>): its own paragraph
        return "\n\n" + _markdown_block(node) + "\n\n"
    inner = "".join(_markdown_inline(child) for child in node.children)
    if tag in _EMPHASIS and inner.strip():
        # Markdown emphasis cannot start or end with a space: keep the spaces outside the markers.
        core = inner.strip()
        lead, trail = inner[:len(inner) - len(inner.lstrip())], inner[len(inner.rstrip()):]
        return f"{lead}{_EMPHASIS[tag]}{core}{_EMPHASIS[tag]}{trail}"
    if tag == "a" and node.attributes.get("href"):
        href = node.attributes["href"]
        target = f"<{href}>" if re.search(r"[\s()<>]", href) else href
        label = inner.strip() or _markdown_inline(href)
        return f"[{label}]({target})"
    return inner


def _node_text(node: Any) -> str:
    if isinstance(node, str):
        return node
    return "\n" if node.tag == "br" else "".join(_node_text(child) for child in node.children)


def _settings_image_path(settings: dict, key: str = "main_image") -> Optional[str]:
    """The path (URL) of a Postiz Media setting ({id, path}), or None when it is not set."""
    image = settings.get(key)
    path = image.get("path") if isinstance(image, dict) else None
    return path if isinstance(path, str) and path else None


def article_cover(post: OutgoingPost) -> tuple:
    """(cover image URL or None, the post's media that go into the body): the settings' main_image,
    else the post's first image, which is then not repeated in the body."""
    cover = _settings_image_path(post.settings)
    if cover:
        return cover, list(post.media)
    for index, media in enumerate(post.media):
        if media.kind == "image":
            return media.url, [other for position, other in enumerate(post.media) if position != index]
    return None, list(post.media)


def _markdown_media(media: list) -> str:
    """Images as Markdown images, videos as links (neither Dev.to nor Hashnode embeds an uploaded video)."""
    lines = [f"![{item.alt}]({item.url})" if item.kind == "image" else f"[{item.alt or item.name}]({item.url})"
             for item in media]
    return "\n\n" + "\n\n".join(lines) if lines else ""


def _canonical_url(settings: dict) -> Optional[str]:
    """The settings' canonical URL; a "(post:...)" reference to another channel's post is left out, as
    rustiz does not resolve those."""
    canonical = settings.get("canonical")
    if isinstance(canonical, str) and canonical.strip() and "(post:" not in canonical:
        return canonical.strip()
    return None


def remember_attempt(channel: Channel, bucket: str, key: str, value: Any) -> None:
    """Keep in the channel's session what an unfinished publish already made on the platform (uploaded
    media, a draft), under the part's idempotency key, so that the next attempt reuses it instead of
    making it twice; `value` None forgets it once the part is published or has failed for good."""
    entries = dict(channel.session.get(bucket) or {})
    if value is None:
        if key not in entries:
            return
        entries.pop(key)
    else:
        entries[key] = value
    channel.save_session({**channel.session, bucket: entries})


def basic_auth_header(user: str, password: str) -> dict:
    import base64
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _whole_number(value: Any) -> Optional[int]:
    """An id given as a number or a string of digits, as an int; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


@publisher
class WordPressProvider(Provider):
    """A WordPress site's REST API with an application password: media uploaded, then the post (or page)."""
    identifier = "wordpress"
    label = "WordPress"
    threads = False  # comments on one's own post are rarely wanted, and need the post to allow them
    concurrency = 2
    spacing = 2.0

    @staticmethod
    def _headers(channel: Channel) -> dict:
        return basic_auth_header(channel.credentials["username"].strip(), channel.credentials["password"])

    @staticmethod
    def _api(channel: Channel) -> str:
        """The REST API root: /wp-json/wp/v2, or ?rest_route=/wp/v2 on sites without pretty permalinks."""
        return channel.session.get("api") or channel.credentials["domain"].rstrip("/") + "/wp-json/wp/v2"

    @staticmethod
    def _endpoint(api: str, path: str, query: str = "") -> str:
        return api + path + (("&" if "?" in api else "?") + query if query else "")

    async def connect(self, channel: Channel) -> Connected:
        domain = channel.credentials["domain"].rstrip("/")
        status = 404
        for api in (domain + "/wp-json/wp/v2", domain + "/?rest_route=/wp/v2"):
            try:
                reply = await self.send(channel, "GET", self._endpoint(api, "/users/me", "context=edit"),
                                        what="the account check (users/me)", headers=self._headers(channel))
            except NeedsReconnect as refused:
                refused.message += (". Use an application password (WordPress admin → Users → Profile → "
                                    "Application Passwords), not the login password")
                if "rest_not_logged_in" in refused.message:  # WordPress saw no credentials at all
                    refused.message += (". If it is right, the web server drops the Authorization header before "
                                        "WordPress sees it (Apache with CGI/FastCGI: add SetEnvIf Authorization "
                                        '"(.*)" HTTP_AUTHORIZATION=$1 to .htaccess)')
                raise
            except Rejected as refused:
                if refused.status == 404:
                    continue
                raise
            me, status = reply.json(), reply.status
            if isinstance(me, dict) and "id" in me:
                return self._connected(channel, api, me)
        raise Rejected(f"{domain} has no WordPress REST API: neither {domain}/wp-json/wp/v2/users/me nor "
                       f"{domain}/?rest_route=/wp/v2/users/me answered with a WordPress user (the last: HTTP "
                       f"{status}). Check that the domain is the address of the WordPress site itself (like "
                       "https://blog.example.com) and that no plugin turns the REST API off", status)

    def _connected(self, channel: Channel, api: str, me: dict) -> Connected:
        roles = ", ".join(me.get("roles") or []) or "none"
        capabilities = me.get("capabilities")  # a security plugin may hide them: then the first post tells
        if isinstance(capabilities, dict) and not capabilities.get("publish_posts"):
            raise Rejected(f"the WordPress user {me.get('name') or me.get('slug')} cannot publish posts (roles: "
                           f"{roles}): give it the Author, Editor or Administrator role, or use another user")
        avatars = me.get("avatar_urls") if isinstance(me.get("avatar_urls"), dict) else {}
        picture = avatars[max(avatars, key=lambda size: int(size) if size.isdigit() else 0)] if avatars else None
        host = _url_host(channel.credentials["domain"])
        account = ChannelAccount(f"{host}/{me['id']}", channel.name, me.get("slug") or me.get("name"), picture)
        return Connected(account, session={"api": api})

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """A 403 is a permission the user lacks for this post (a role, a category), not refused credentials,
        which are a 401."""
        if reply.status == 403 and self.error_words(reply):
            raise Rejected(f"WordPress refused {what} (HTTP 403): {self.platform_words(reply)}", 403,
                           self.error_excerpt(reply))
        return super().check_reply(reply, visible, what)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """WordPress errors are {"code", "message" (with HTML), "data": {"status"}}."""
        answer = reply.json()
        words = error_fields(answer, "code", "message")
        return html_to_text(words) if words and isinstance(answer.get("message"), str) else None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        try:
            release = await self._publish(channel, post)
        except Retryable:
            raise  # the next attempt reuses the media already in the library
        except PublishError:
            remember_attempt(channel, "uploads", post.idempotency_key, None)
            raise
        remember_attempt(channel, "uploads", post.idempotency_key, None)
        return release

    async def _publish(self, channel: Channel, post: OutgoingPost) -> Release:
        settings, api = post.settings, self._api(channel)
        featured_path = _settings_image_path(settings)
        featured_id, inline_html = None, []
        uploads = dict((channel.session.get("uploads") or {}).get(post.idempotency_key) or {})
        for index, media in enumerate(post.media, 1):
            if str(index) not in uploads:
                uploads[str(index)] = await self._upload(channel, api, media, index)
                remember_attempt(channel, "uploads", post.idempotency_key, uploads)
            media_id, source_url = uploads[str(index)]
            if featured_id is None and media.kind == "image" and (not featured_path or featured_path == media.url):
                featured_id = media_id
            elif media.kind == "video":
                inline_html.append(f'<p>[video src="{_escape_html(source_url, quote=True)}"]</p>')
            else:
                inline_html.append(image_paragraph(source_url, media.alt))
        article = {"title": settings.get("title") or "", "content": post.html + "".join(inline_html),
                   "status": settings.get("status") or "publish"}
        if featured_id is not None:
            article["featured_media"] = featured_id
        for key in ("categories", "tags"):
            if settings.get(key):
                article[key] = settings[key]
        post_type = settings.get("type") or "post"
        collection = {"post": "posts", "page": "pages"}.get(post_type, post_type)
        reply = await self.send(channel, "POST", self._endpoint(api, f"/{collection}"), visible=True,
                                what=f"the {post_type}", json_body=article, headers=self._headers(channel))
        answer = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        if "id" not in answer:
            raise OutcomeUnknown(f"WordPress answered the {post_type} without its id: "
                                 f"{reply.described(f'a WordPress {post_type}')}", reply.status)
        return Release(str(answer["id"]), answer.get("link") or "")

    async def _upload(self, channel: Channel, api: str, media: MediaFile, index: int) -> tuple:
        """(media id, source URL) of one file added to the site's media library."""
        from urllib.parse import quote
        filename = re.sub(r'["\\\r\n]', "_", media.name)
        query = "alt_text=" + quote(media.alt) if media.alt else ""
        headers = {**self._headers(channel), "Content-Type": media.content_type,
                   "Content-Disposition": f'attachment; filename="{filename}"'}
        try:
            reply = await self.send(channel, "POST", self._endpoint(api, "/media", query),
                                    what=f"the upload of media item {index}", body=media.read(), headers=headers,
                                    timeouts=Timeouts(read=120, total=600))
        except PublishError as error:
            error.item = f"media item {index}"
            raise
        answer = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        if "id" not in answer:
            raise Retryable(f"WordPress answered the upload of media item {index} without a media id: "
                            f"{reply.described('a WordPress media item')}",
                            reply.status, item=f"media item {index}")
        return answer["id"], answer.get("source_url") or ""

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        featured = _settings_image_path(settings)
        images = [image.get("path") for image in values[0].get("image") or [] if isinstance(image, dict)]
        if featured and featured not in images:
            return (f"WordPress takes the featured image (settings.main_image, {featured}) from the post's own "
                    "images, which rustiz uploads to the site's media library: add it to the post's images too")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the posts of {channel.credentials['domain'].rstrip('/')}/wp-admin/edit.php"

    async def tool_postTypes(self, channel: Channel, data: dict) -> list:
        types = await self._listing(channel, "/types")
        return [{"id": kind.get("rest_base") or slug, "name": kind.get("name") or slug}
                for slug, kind in (types.items() if isinstance(types, dict) else ())
                if isinstance(kind, dict) and slug not in ("attachment", "nav_menu_item", "wp_block", "wp_template",
                                                           "wp_template_part", "wp_navigation")]

    async def tool_categoriesList(self, channel: Channel, data: dict) -> list:
        return [{"id": item["id"], "name": item.get("name", "")}
                for item in await self._listing(channel, "/categories", "per_page=100") if isinstance(item, dict)]

    async def tool_tagsList(self, channel: Channel, data: dict) -> list:
        return [{"id": item["id"], "name": item.get("name", "")}
                for item in await self._listing(channel, "/tags", "per_page=100") if isinstance(item, dict)]

    async def _listing(self, channel: Channel, path: str, query: str = "") -> Any:
        reply = await self.send(channel, "GET", self._endpoint(self._api(channel), path, query),
                                headers=self._headers(channel))
        return reply.json() or []


def image_paragraph(source: str, alt: str, attributes: str = "") -> str:
    """An image of an article or an e-mail (WordPress, Listmonk) as HTML, its address and alt text escaped."""
    return f'<p><img src="{_escape_html(source, quote=True)}" alt="{_escape_html(alt, quote=True)}"{attributes} /></p>'


_DEVTO_TAG = r"[a-z0-9]+"


def _devto_tags(settings: dict) -> list:
    """The tag names of Dev.to settings ([{value, label}]), lower-cased as Dev.to keeps them."""
    tags = settings.get("tags") if isinstance(settings.get("tags"), list) else []
    return [str(tag.get("label") or "").strip().lower() for tag in tags if isinstance(tag, dict)]


@publisher
class DevtoProvider(Provider):
    """Dev.to (Forem) articles with an API key: title, Markdown body, tags, canonical URL, cover image."""
    identifier = "devto"
    label = "Dev.to"
    threads = False
    concurrency = 2
    spacing = 3.0  # Dev.to lets an account create about 10 articles per 30 seconds

    @staticmethod
    def _base() -> str:
        return platform_url("RUSTIZ_DEVTO_API_URL", "https://dev.to")

    @staticmethod
    def _headers(channel: Channel) -> dict:
        return {"api-key": channel.credentials["apiKey"].strip(), "Accept": "application/vnd.forem.api-v1+json"}

    async def connect(self, channel: Channel) -> Connected:
        reply = await self.send(channel, "GET", self._base() + "/api/users/me", what="the account check (users/me)",
                                headers=self._headers(channel))
        me = reply.json()
        if not (isinstance(me, dict) and "id" in me):
            raise Rejected(f"Dev.to answered the account check with {reply.described('a Dev.to account')}",
                           reply.status)
        account = ChannelAccount(f"{_url_host(self._base())}/{me['id']}", me.get("name") or me.get("username") or
                                 channel.name, me.get("username"), me.get("profile_image"))
        return Connected(account)

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        settings = post.settings
        cover, body_media = article_cover(post)
        article = {"title": settings.get("title") or "", "published": True,
                   "body_markdown": html_to_markdown(post.html) + _markdown_media(body_media)}
        tags = _devto_tags(settings)
        if tags:
            article["tags"] = tags
        if cover:
            article["main_image"] = cover
        if _canonical_url(settings):
            article["canonical_url"] = _canonical_url(settings)
        if _whole_number(settings.get("organization")) is not None:
            article["organization_id"] = _whole_number(settings.get("organization"))
        reply = await self.send(channel, "POST", self._base() + "/api/articles", visible=True, what="the article",
                                json_body={"article": article}, headers=self._headers(channel))
        answer = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        if "id" not in answer:
            raise OutcomeUnknown(f"Dev.to answered the article without its id: "
                                 f"{reply.described('a Dev.to article')}", reply.status)
        return Release(str(answer["id"]), answer.get("url") or "")

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, tag in enumerate(_devto_tags(settings), 1):
            if not re.fullmatch(_DEVTO_TAG, tag):
                return (f"Dev.to tags are letters and digits only (no spaces, dashes or other signs): tag {number}, "
                        f"\"{tag}\", is not; use a tag from the \"tags\" tool, like \"javascript\"")
        organization = settings.get("organization")
        if organization not in (None, "") and _whole_number(organization) is None:
            return (f"settings.organization must be the numeric id of a Dev.to organization (from the "
                    f"\"organizations\" tool), not {organization!r}")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the dashboard of the Dev.to account of the channel \"{channel.name}\" ({self._base()}/dashboard)"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error")  # {"error": "unauthorized", "status": 401}

    async def tool_tags(self, channel: Channel, data: dict) -> list:
        reply = await self.send(channel, "GET", self._base() + "/api/tags?per_page=1000",
                                headers=self._headers(channel))
        return [{"value": tag["id"], "label": tag.get("name", "")} for tag in reply.json() or []
                if isinstance(tag, dict) and "id" in tag]

    async def tool_organizations(self, channel: Channel, data: dict) -> list:
        """Dev.to has no "my organizations" call: the organizations of the account's articles, then each one's id."""
        reply = await self.send(channel, "GET", self._base() + "/api/articles/me/all?per_page=1000",
                                headers=self._headers(channel))
        usernames = []
        for article in reply.json() or []:
            organization = article.get("organization") if isinstance(article, dict) else None
            if isinstance(organization, dict) and organization.get("username") not in usernames:
                usernames.append(organization.get("username"))
        organizations = []
        for username in filter(None, usernames):
            details = (await self.send(channel, "GET", f"{self._base()}/api/organizations/{username}",
                                       headers=self._headers(channel))).json() or {}
            organizations.append({"id": str(details.get("id", "")), "name": details.get("name") or username,
                                  "username": username})
        return organizations


_HASHNODE_ME = "query Me { me { id username name profilePicture publications(first: 20) { edges { node { id title url } } } } }"
_HASHNODE_PUBLISH = "mutation PublishPost($input: PublishPostInput!) { publishPost(input: $input) { post { id url } } }"
_HASHNODE_TAGS = ("query PublicationTags($id: ObjectId!) { publication(id: $id) { id posts(first: 50) { edges { node "
                  "{ id tags { id name slug } } } } } }")


def _hashnode_tag(tag: dict) -> dict:
    """A Hashnode tag input: its id when the value is one (24 hex digits), else the slug and name of a new tag."""
    value, label = str(tag.get("value") or "").strip(), str(tag.get("label") or tag.get("value") or "").strip()
    if re.fullmatch(r"[0-9a-f]{24}", value):
        return {"id": value}
    return {"slug": re.sub(r"[^a-z0-9]+", "-", (value or label).lower()).strip("-"), "name": label}


@publisher
class HashnodeProvider(Provider):
    """Hashnode's GraphQL API with a personal access token: publishPost to one of the account's publications."""
    identifier = "hashnode"
    label = "Hashnode"
    threads = False
    concurrency = 2
    spacing = 2.0

    @staticmethod
    def _base() -> str:
        return platform_url("RUSTIZ_HASHNODE_API_URL", "https://gql.hashnode.com")

    async def _graphql(self, channel: Channel, query: str, variables: dict, visible: bool = False,
                       what: str = "") -> dict:
        reply = await self.send(channel, "POST", self._base(), visible=visible, what=what,
                                json_body={"query": query, "variables": variables},
                                headers={"Authorization": channel.credentials["apiKey"].strip()})
        return reply.json().get("data") or {}

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """GraphQL errors come with HTTP 200: {"errors": [{"message", "extensions": {"code"}}], "data": ...}."""
        body = reply.json()
        errors = body.get("errors") if isinstance(body, dict) else None
        if not (200 <= reply.status < 300) or not isinstance(errors, list) or not errors:
            reply = super().check_reply(reply, visible, what)
            if not isinstance(body, dict):  # a proxy's page, say: whether a mutation ran behind it is unknown
                raise (OutcomeUnknown if visible else Retryable)(
                    f"Hashnode answered {what} with {reply.described('GraphQL JSON')}", reply.status)
            return reply
        data = body.get("data")
        if isinstance(data, dict) and data and all(value is not None for value in data.values()):
            return reply  # errors on optional fields only: what was asked for is there
        first = errors[0] if isinstance(errors[0], dict) else {}
        code = str((first.get("extensions") or {}).get("code") or "")[:100]
        text = f"Hashnode refused {what} ({code or 'GraphQL error'}): {self.platform_words(reply)}"
        excerpt = self.error_excerpt(reply)
        if code == "UNAUTHENTICATED":
            raise NeedsReconnect(text, reply.status, excerpt)
        if code in ("TOO_MANY_REQUESTS", "RATE_LIMITED"):
            raise Retryable(text, reply.status, excerpt, after=retry_after_seconds(reply))
        if code == "INTERNAL_SERVER_ERROR":
            raise (OutcomeUnknown if visible else Retryable)(text, reply.status, excerpt)
        raise Rejected(text, reply.status, excerpt)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """GraphQL's {"errors": [{"message": ...}]}."""
        answer = reply.json()
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if not isinstance(errors, list):
            return None
        return "; ".join(error["message"] for error in errors
                         if isinstance(error, dict) and isinstance(error.get("message"), str)) or None

    async def connect(self, channel: Channel) -> Connected:
        me = (await self._graphql(channel, _HASHNODE_ME, {}, what="the account check (me)")).get("me")
        if not isinstance(me, dict) or not me.get("id"):
            raise Rejected("Hashnode answered the account check without an account: the token may be wrong")
        account = ChannelAccount(f"{_url_host(self._base())}/{me['id']}", me.get("name") or me.get("username") or
                                 channel.name, me.get("username"), me.get("profilePicture"))
        return Connected(account)

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        settings = post.settings
        cover, body_media = article_cover(post)
        tags = settings.get("tags") if isinstance(settings.get("tags"), list) else []
        article = {"title": settings.get("title") or "", "publicationId": settings.get("publication") or "",
                   "contentMarkdown": html_to_markdown(post.html) + _markdown_media(body_media),
                   "tags": [_hashnode_tag(tag) for tag in tags if isinstance(tag, dict)]}
        if settings.get("subtitle"):
            article["subtitle"] = settings["subtitle"]
        if cover:
            article["coverImageOptions"] = {"coverImageURL": cover}
        if _canonical_url(settings):
            article["originalArticleURL"] = _canonical_url(settings)
        data = await self._graphql(channel, _HASHNODE_PUBLISH, {"input": article}, visible=True, what="the post")
        published = ((data.get("publishPost") or {}).get("post") or {})
        if not published.get("id"):
            raise OutcomeUnknown(f"Hashnode answered publishPost without the post: {json.dumps(data)[:300]}")
        return Release(str(published["id"]), published.get("url") or "")

    def where_to_check(self, channel: Channel) -> str:
        return f"the Hashnode blog of the channel \"{channel.name}\" (its publication's posts)"

    async def _publications(self, channel: Channel) -> list:
        me = (await self._graphql(channel, _HASHNODE_ME, {}, what="the publications")).get("me") or {}
        return [edge["node"] for edge in (me.get("publications") or {}).get("edges") or []
                if isinstance(edge, dict) and isinstance(edge.get("node"), dict)]

    async def tool_publications(self, channel: Channel, data: dict) -> list:
        return [{"id": node.get("id"), "name": node.get("title"), "url": node.get("url")}
                for node in await self._publications(channel)]

    async def tool_tagsList(self, channel: Channel, data: dict) -> list:
        """Hashnode's API has no list of all tags: the tags of the latest posts of the account's publications."""
        tags: dict = {}
        for publication in await self._publications(channel):
            found = await self._graphql(channel, _HASHNODE_TAGS, {"id": publication["id"]}, what="the tags")
            for edge in ((found.get("publication") or {}).get("posts") or {}).get("edges") or []:
                for tag in (edge.get("node") or {}).get("tags") or []:
                    tags.setdefault(tag.get("id"), {"value": tag.get("id"), "label": tag.get("name")})
        return sorted(tags.values(), key=lambda tag: str(tag["label"]).lower())


@publisher
class ListmonkProvider(Provider):
    """A Listmonk newsletter: a campaign created for the chosen list, then started (sent to the subscribers)."""
    identifier = "listmonk"
    label = "Listmonk"
    threads = False
    concurrency = 2
    spacing = 1.0

    @staticmethod
    def _base(channel: Channel) -> str:
        return channel.credentials["url"].rstrip("/")

    @staticmethod
    def _headers(channel: Channel) -> dict:
        # Basic auth of the API user and its token: what Listmonk documents, and what Listmonk 3 takes too.
        return basic_auth_header(channel.credentials["username"].strip(), channel.credentials["password"])

    async def connect(self, channel: Channel) -> Connected:
        try:
            reply = await self.send(channel, "GET", self._base(channel) + "/api/lists?per_page=1",
                                    what="the access check (lists)", headers=self._headers(channel))
        except NeedsReconnect as refused:
            refused.message += (". Use an API user and its token (Listmonk admin → Users → New, type API; "
                                "Listmonk 3: an admin login), with the permission to manage campaigns")
            raise
        if not isinstance(reply.json(), dict) or "data" not in reply.json():
            raise Rejected(f"{self._base(channel)} does not answer like Listmonk: /api/lists gave "
                           f"{reply.described('a Listmonk list page')}", reply.status)
        host, user = _url_host(self._base(channel)), channel.credentials["username"].strip()
        return Connected(ChannelAccount(f"{host}/{user.lower()}", channel.name, user))

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        campaign_id = (channel.session.get("drafts") or {}).get(post.idempotency_key)
        if campaign_id is None:  # else an earlier attempt made the draft but could not start it: reuse it
            campaign_id = await self._create_campaign(channel, post)
            remember_attempt(channel, "drafts", post.idempotency_key, campaign_id)
        try:
            await self.send(channel, "PUT", f"{self._base(channel)}/api/campaigns/{campaign_id}/status", visible=True,
                            what=f"the start of campaign {campaign_id}", json_body={"status": "running"},
                            headers=self._headers(channel))
        except Retryable as error:
            error.message += f" (draft campaign {campaign_id} was created; the next attempt starts it)"
            raise
        except PublishError as error:
            remember_attempt(channel, "drafts", post.idempotency_key, None)
            error.message += (f" — the campaign was created as draft {campaign_id} but not started: start it in "
                              f"Listmonk ({self._base(channel)}/admin/campaigns/{campaign_id}) or delete it")
            raise
        remember_attempt(channel, "drafts", post.idempotency_key, None)
        return Release(str(campaign_id), f"{self._base(channel)}/admin/campaigns/{campaign_id}")

    async def _create_campaign(self, channel: Channel, post: OutgoingPost) -> int:
        settings = post.settings
        subject = str(settings.get("subject") or "")[:200]  # required by the settings' checks, drafts too
        campaign = {"name": subject, "subject": subject, "lists": [_whole_number(settings.get("list"))],
                    "type": "regular", "content_type": "html", "body": self._body(post), "altbody": post.text}
        if _whole_number(settings.get("template")) is not None:
            campaign["template_id"] = _whole_number(settings.get("template"))
        reply = await self.send(channel, "POST", self._base(channel) + "/api/campaigns", what="the campaign draft",
                                json_body=campaign, headers=self._headers(channel))
        created = (reply.json() or {}).get("data") if isinstance(reply.json(), dict) else None
        if not isinstance(created, dict) or _whole_number(created.get("id")) is None:
            raise Retryable(f"Listmonk answered the campaign draft without its id: "
                            f"{reply.described('a Listmonk campaign')}", reply.status)
        return _whole_number(created["id"])

    @staticmethod
    def _body(post: OutgoingPost) -> str:
        """The e-mail's HTML: the preview text as a hidden preheader (what inboxes show after the subject),
        the post, then its images."""
        preview = str(post.settings.get("preview") or "").strip()
        preheader = (f'<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">{_escape_html(preview)}'
                     "</div>\n" if preview else "")
        images = "".join("\n" + image_paragraph(media.url, media.alt, ' style="max-width:100%"')
                         for media in post.media if media.kind == "image")
        return preheader + post.html + images

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        if _whole_number(settings.get("list")) is None:
            return (f"settings.list must be the numeric id of a Listmonk list (from the \"list\" tool), not "
                    f"{settings.get('list')!r}")
        template = settings.get("template")
        if template not in (None, "") and _whole_number(template) is None:
            return (f"settings.template must be the numeric id of a Listmonk campaign template (from the "
                    f"\"templates\" tool), not {template!r}")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the campaigns of Listmonk at {self._base(channel)}/admin/campaigns"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "message")  # {"message": "Invalid list"}

    async def tool_list(self, channel: Channel, data: dict) -> list:
        reply = await self.send(channel, "GET", self._base(channel) + "/api/lists?per_page=all",
                                headers=self._headers(channel))
        results = ((reply.json() or {}).get("data") or {}).get("results") or []
        return [{"id": str(item["id"]), "name": item.get("name", "")} for item in results
                if isinstance(item, dict) and "id" in item]

    async def tool_templates(self, channel: Channel, data: dict) -> list:
        reply = await self.send(channel, "GET", self._base(channel) + "/api/templates",
                                headers=self._headers(channel))
        templates = (reply.json() or {}).get("data") or []
        return [{"id": str(item["id"]), "name": item.get("name", "")} for item in templates
                if isinstance(item, dict) and "id" in item and item.get("type", "campaign") in ("campaign",
                                                                                               "campaign_visual")]


# --- Bluesky: text facets, graphemes, record keys, image sizes ---------------------------------------

BLUESKY_MAX_GRAPHEMES = 300
BLUESKY_MAX_TEXT_BYTES = 3000
BLUESKY_MAX_IMAGE_BYTES = 1_000_000  # app.bsky.embed.images: maxSize of each image blob
BLUESKY_MAX_VIDEO_BYTES = 100_000_000  # app.bsky.embed.video: maxSize of the video blob


# Common generic TLDs a bare domain may end in (any two-letter country code counts too), so that
# "see example.com" becomes a link as in Bluesky's app, while "file.txt" or "e.g" do not.
_BARE_DOMAIN_TLDS = frozenset(
    "com org net edu gov mil int info biz name pro dev app io ai social blog page site online tech xyz club "
    "news art shop store live life world today space cloud design media network systems digital email link "
    "one top wiki zone fun lol moe gay eu asia mobi travel museum coop aero jobs tel".split())
_TRAILING_PUNCTUATION = ".,;:!?"
_LINK = r"(?i)(?:^|(?<=[\s(]))(?:(https?://\S+)|([a-z][a-z0-9]*(?:\.[a-z0-9]+)+\S*))"
_MENTION = r"(?:^|(?<=[\s(]))@([a-zA-Z0-9.-]+)"
_HASHTAG = r"(?:^|(?<=\s))[#\uff03]((?!\ufe0f)[^\s\u00ad\u2060\u200a\u200b\u200c\u200d\u20e2]+)"


def _trim_link(uri: str) -> str:
    """Bluesky's rule: a link does not end in sentence punctuation, nor in a ")" it did not open (the
    app checks for any "(", which keeps the ")" closing a sentence after a Wikipedia link; this counts)."""
    while uri and (uri[-1] in _TRAILING_PUNCTUATION or (uri[-1] == ")" and uri.count(")") > uri.count("("))):
        uri = uri[:-1]
    return uri


def _is_domain_name(name: str) -> bool:
    labels = name.lower().split(".")
    tld = labels[-1]
    return len(labels) >= 2 and all(labels) and tld.isalpha() and (len(tld) == 2 or tld in _BARE_DOMAIN_TLDS)


def bluesky_text_spans(text: str) -> list:
    """[(kind, start, end, value)] of the links, @mentions and #hashtags in `text` as Bluesky's app detects
    them: character offsets, and the link's full URI, the handle, or the tag without its '#'."""
    spans = []
    for match in re.finditer(_LINK, text):
        uri = _trim_link(match.group(0))
        if match.group(2):  # a bare domain: only with a real-looking TLD, and made https://
            domain = re.match(r"[a-z0-9.]+", uri, re.IGNORECASE).group(0).rstrip(".")
            if not _is_domain_name(domain):
                continue
            spans.append(("link", match.start(), match.start() + len(uri), "https://" + uri))
        elif len(uri) > len("https://"):
            spans.append(("link", match.start(), match.start() + len(uri), uri))
    for match in re.finditer(_MENTION, text):
        handle = match.group(1).rstrip(".-")
        if "." in handle and handle.rsplit(".", 1)[-1].isalpha():  # resolveHandle tells the real ones
            spans.append(("mention", match.start(), match.start(1) + len(handle), handle.lower()))
    for match in re.finditer(_HASHTAG, text):
        tag = match.group(1).rstrip(_TRAILING_PUNCTUATION + "'\")]}")
        if tag and not tag.isdigit() and len(tag) <= 64:
            spans.append(("tag", match.start(), match.start(1) + len(tag), tag))
    spans.sort(key=lambda span: span[1])
    return [span for index, span in enumerate(spans) if index == 0 or span[1] >= spans[index - 1][2]]


def utf8_offset(text: str, index: int) -> int:
    """The byte offset of character `index` in the UTF-8 form of `text` (facets count bytes)."""
    return len(text[:index].encode())


_TID_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"


_TID_FALLBACK_EPOCH = 1_700_000_000  # Nov 2023: a plausible time for a post id that is not a cuid


def deterministic_tid(post_id: str, idempotency_key: str) -> str:
    """A record key in TID form (13 base32-sortable chars: 53 bits of microseconds, 10 bits of clock id)
    that is the same on every attempt of a part: the time in the post's cuid id (when it was created),
    plus microseconds and a clock id from a hash of the part's idempotency key (new for each edit or
    recurrence). A repeated createRecord then meets the first attempt's record instead of making a second."""
    digest = _sha256(idempotency_key.encode()).digest()
    created = re.fullmatch(r"c([0-9a-z]{8})[0-9a-z]{16}", post_id)
    seconds = int(created.group(1), 36) // 1000 if created else _TID_FALLBACK_EPOCH
    micros = seconds * 1_000_000 + int.from_bytes(digest[:4], "big") % 1_000_000
    number = (micros << 10) | (int.from_bytes(digest[4:6], "big") & 0x3FF)
    return "".join(_TID_ALPHABET[(number >> shift) & 31] for shift in range(60, -1, -5))


def image_dimensions(data: bytes) -> Optional[tuple]:
    """(width, height) read from a PNG, GIF, JPEG or WebP header, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data.startswith((b"GIF87a", b"GIF89a")):
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        chunk = data[12:16]
        if chunk == b"VP8X":
            return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
        if chunk == b"VP8 ":
            return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        return None
    if data.startswith(b"\xff\xd8"):
        return _jpeg_dimensions(data)
    return None


def _jpeg_dimensions(data: bytes) -> Optional[tuple]:
    position = 2
    while position + 9 < len(data):
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            position += 1 if marker == 0xFF else 2
            continue
        length = int.from_bytes(data[position + 2:position + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start-of-frame segment
            return int.from_bytes(data[position + 7:position + 9], "big"), int.from_bytes(data[position + 5:position + 7], "big")
        position += 2 + length
    return None


def _page_card(page: str, uri: str) -> dict:
    """An app.bsky.embed.external card from a page's og:title/<title> and og:description."""
    import html as html_module

    def meta(name: str) -> str:
        for tag in re.findall(r"<meta\b[^>]*>", page, re.IGNORECASE):
            if re.search(rf"""(?:property|name)\s*=\s*["']{re.escape(name)}["']""", tag, re.IGNORECASE):
                content = re.search(r"""content\s*=\s*(?:"([^"]*)"|'([^']*)')""", tag, re.IGNORECASE)
                if content:
                    return html_module.unescape(content.group(1) or content.group(2) or "").strip()
        return ""

    title_tag = re.search(r"<title[^>]*>(.*?)</title>", page, re.IGNORECASE | re.DOTALL)
    title = meta("og:title") or (html_module.unescape(title_tag.group(1)).strip() if title_tag else "")
    description = meta("og:description") or meta("description")
    return {"uri": uri, "title": " ".join(title.split())[:300] or uri, "description": description[:1000]}


def _bluesky_session(answer: dict) -> dict:
    return {name: answer[name] for name in ("accessJwt", "refreshJwt", "did", "handle") if name in answer}


def _jwt_expiry(token: str) -> Optional[float]:
    """The `exp` claim of a JWT (not verified: only to refresh before the PDS would refuse it)."""
    import base64
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    expiry = claims.get("exp") if isinstance(claims, dict) else None
    return float(expiry) if isinstance(expiry, (int, float)) else None


class _BlueskyTokenRefused(NeedsReconnect):
    """The PDS refused the session's token (ExpiredToken, InvalidToken): refresh it, or log in again."""


_BLUESKY_ACCOUNT_ERRORS = ("AuthenticationRequired", "AccountTakedown", "AccountDeactivated", "AuthFactorTokenRequired")


@publisher
class BlueskyProvider(Provider):
    """Bluesky, or any AT Protocol PDS: an app password, a cached session (refreshed, not re-logged-in:
    createSession allows 30 logins per 5 min and 100-300 a day), posts with facets, cards, images, replies."""
    identifier = "bluesky"
    label = "Bluesky"
    # Each part has a deterministic record key: a resend finds the first attempt's record instead of
    # making a second post (see _create_post).
    resend_is_safe = True
    concurrency = 2
    spacing = 1.0

    @staticmethod
    def _xrpc(channel: Channel, method: str) -> str:
        return channel.credentials["service"].rstrip("/") + "/xrpc/" + method

    # --- the session ------------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        await self._log_in(channel)
        session = channel.session
        name, picture = session.get("handle") or session["did"], None
        try:
            reply = await self._call(channel, "GET", "app.bsky.actor.getProfile", what="the profile",
                                     params={"actor": session["did"]})
            profile = reply.json() or {}
            name = profile.get("displayName") or name
            picture = profile.get("avatar") if isinstance(profile.get("avatar"), str) else None
        except (Retryable, Rejected):  # a PDS without an AppView (self-hosted, tests): the handle will do
            pass
        account = ChannelAccount(session["did"], name, session.get("handle"), picture)
        return Connected(account, session=channel.session)

    async def _log_in(self, channel: Channel) -> dict:
        """com.atproto.server.createSession: only when there is no session, or its refresh token is dead."""
        credentials = channel.credentials
        reply = await self.send(channel, "POST", self._xrpc(channel, "com.atproto.server.createSession"),
                                what="the login (createSession)",
                                json_body={"identifier": credentials["identifier"].strip().lstrip("@"),
                                           "password": credentials["password"]})
        session = _bluesky_session(reply.json() or {})
        if "accessJwt" not in session or "did" not in session:
            raise Retryable(f"{self.label} answered the login with {reply.described('a session')}")
        channel.save_session(session)
        return channel.session

    async def _refreshed(self, channel: Channel) -> dict:
        """com.atproto.server.refreshSession with the refresh token; a new login when that is refused too."""
        refresh_token = channel.session.get("refreshJwt")
        if refresh_token:
            try:
                reply = await self.send(channel, "POST", self._xrpc(channel, "com.atproto.server.refreshSession"),
                                        what="the session refresh",
                                        headers={"Authorization": f"Bearer {refresh_token}"})
                fresh = _bluesky_session(reply.json() or {})
                if "accessJwt" in fresh:
                    channel.save_session({**channel.session, **fresh})
                    return channel.session
            except NeedsReconnect:
                pass
        return await self._log_in(channel)

    async def _call(self, channel: Channel, method: str, nsid: str, visible: bool = False, what: str = "",
                    params: Optional[dict] = None, headers: Optional[dict] = None, **request: Any) -> HttpReply:
        """An authenticated XRPC call with the cached session, refreshed once if the PDS refuses its token."""
        from urllib.parse import urlencode
        url = self._xrpc(channel, nsid) + ("?" + urlencode(params) if params else "")
        session = channel.session if channel.session.get("accessJwt") else await self._log_in(channel)
        expiry = _jwt_expiry(session["accessJwt"])
        if expiry is not None and expiry < time.time() + 60:
            session = await self._refreshed(channel)

        async def attempt(session: dict) -> HttpReply:
            return await self.send(channel, method, url, visible=visible, what=what, **request,
                                   headers={**(headers or {}), "Authorization": f"Bearer {session['accessJwt']}"})
        try:
            return await attempt(session)
        except _BlueskyTokenRefused:  # refused before acting on it: safe to send again with a new token
            session = await self._refreshed(channel)
        try:
            return await attempt(session)
        except _BlueskyTokenRefused as refused:
            raise NeedsReconnect(f"{self.label} refused a fresh session too: {refused.message}",
                                 refused.status, refused.body) from None

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """XRPC errors are {"error": name, "message": text}: token trouble is told apart from the rest."""
        if 200 <= reply.status < 300:
            return reply
        body = reply.json()
        name = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), str) else ""
        words, excerpt = self.platform_words(reply), self.error_excerpt(reply)
        if name in ("ExpiredToken", "InvalidToken") and reply.status in (400, 401):
            raise _BlueskyTokenRefused(f"{self.label} refused the session token on {what} "
                                       f"(HTTP {reply.status}): {words}", reply.status, excerpt)
        if name in _BLUESKY_ACCOUNT_ERRORS or reply.status == 401:
            raise NeedsReconnect(f"{self.label} refused the account's credentials on {what} (HTTP {reply.status}): "
                                 f"{words}. Check the handle and the app password (Settings > Privacy and "
                                 "security > App passwords)", reply.status, excerpt)
        if 400 <= reply.status < 500 and reply.status != 429:
            raise Rejected(f"{self.label} refused {what} (HTTP {reply.status}): {words}", reply.status, excerpt)
        return super().check_reply(reply, visible, what)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error", "message")  # XRPC's {"error": name, "message": text}

    def where_to_check(self, channel: Channel) -> str:
        handle = channel.session.get("handle") or channel.credentials.get("identifier", "")
        return f"the Bluesky profile https://bsky.app/profile/{handle}"

    # --- checks before a post is accepted -----------------------------------------------------

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        """The 300 graphemes of each part. Media is checked when publishing: sizes need the files, and a
        video with pictures passes Postiz's own rule (which its API accepts), so that mix fails then."""
        for number, value in enumerate(values, 1):
            where = "the post" if number == 1 else f"thread part {number}"
            text = html_to_text(value["content"])
            graphemes = grapheme_count(text)
            if graphemes > BLUESKY_MAX_GRAPHEMES:
                return (f"Bluesky allows {BLUESKY_MAX_GRAPHEMES} characters (graphemes) per post; {where} has "
                        f"{graphemes}: shorten it or split it into thread parts")
            if len(text.encode()) > BLUESKY_MAX_TEXT_BYTES:
                return (f"Bluesky allows {BLUESKY_MAX_TEXT_BYTES} bytes of text per post; {where} has "
                        f"{len(text.encode())}")
        return None

    # --- publishing ---------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        if not channel.session.get("accessJwt"):  # a channel connected before rustiz kept Bluesky sessions
            await self._log_in(channel)
        text = post.text
        record: dict = {"$type": "app.bsky.feed.post", "text": text, "createdAt": utc_now_iso()}
        facets, first_link = await self._facets(channel, text)
        if facets:
            record["facets"] = facets
        if len(post.media) == 1 and post.media[0].kind == "video":
            record["embed"] = await self._video_embed(channel, post.media[0])
        elif post.media:
            record["embed"] = await self._images_embed(channel, post.media)
        elif first_link:
            record["embed"] = {"$type": "app.bsky.embed.external", "external": await self._link_card(channel, first_link)}
        if parent is not None:
            refs = parent.reply_ref if isinstance(parent.reply_ref, dict) else {}
            if not (isinstance(refs.get("root"), dict) and isinstance(refs.get("parent"), dict)):
                raise Rejected(f"the part before this one has no Bluesky reply reference (release {parent.id})")
            record["reply"] = {"root": refs["root"], "parent": refs["parent"]}
        created = await self._create_post(channel, record, deterministic_tid(post.id, post.idempotency_key))
        this = {"uri": created["uri"], "cid": created["cid"]}
        root = record["reply"]["root"] if parent is not None else this
        did, _, rkey = created["uri"][len("at://"):].partition("/app.bsky.feed.post/")
        return Release(created["uri"], f"https://bsky.app/profile/{did}/post/{rkey}", {"root": root, "parent": this})

    async def _create_post(self, channel: Channel, record: dict, rkey: str) -> dict:
        """createRecord under the part's own record key. When the answer is an error or lost, the record
        may exist from this or an earlier attempt (the PDS refuses a second create at the same key): it
        is looked up, and if it is there, that is the post."""
        body = {"repo": channel.session["did"], "collection": "app.bsky.feed.post", "rkey": rkey, "record": record}
        try:
            reply = await self._call(channel, "POST", "com.atproto.repo.createRecord", visible=True,
                                     what="the post", json_body=body)
        except (OutcomeUnknown, Retryable, Rejected) as failed:
            existing = await self._existing_post(channel, rkey)
            if existing is None:
                raise failed
            return existing
        created = reply.json() or {}
        if not (isinstance(created.get("uri"), str) and isinstance(created.get("cid"), str)):
            raise OutcomeUnknown(f"{self.label} accepted the post but did not say where it is: "
                                 f"{reply.described('a record reference')}")
        return created

    async def _existing_post(self, channel: Channel, rkey: str) -> Optional[dict]:
        try:
            reply = await self._call(channel, "GET", "com.atproto.repo.getRecord", what="the post's record",
                                     params={"repo": channel.session["did"], "collection": "app.bsky.feed.post",
                                             "rkey": rkey})
        except PublishError:
            return None
        found = reply.json() or {}
        return found if isinstance(found.get("uri"), str) and isinstance(found.get("cid"), str) else None

    async def _facets(self, channel: Channel, text: str) -> tuple:
        """(app.bsky.richtext.facet list with UTF-8 byte offsets, the first link's URI or None)."""
        facets, first_link = [], None
        for kind, start, end, value in bluesky_text_spans(text):
            if kind == "link":
                feature = {"$type": "app.bsky.richtext.facet#link", "uri": value}
                first_link = first_link or value
            elif kind == "tag":
                feature = {"$type": "app.bsky.richtext.facet#tag", "tag": value}
            else:
                did = await self._resolve_handle(channel, value)
                if did is None:  # not a Bluesky account: it stays plain text, as in the app
                    continue
                feature = {"$type": "app.bsky.richtext.facet#mention", "did": did}
            facets.append({"index": {"byteStart": utf8_offset(text, start), "byteEnd": utf8_offset(text, end)},
                           "features": [feature]})
        return facets, first_link

    async def _resolve_handle(self, channel: Channel, handle: str) -> Optional[str]:
        try:
            reply = await self._call(channel, "GET", "com.atproto.identity.resolveHandle", what=f"the handle @{handle}",
                                     params={"handle": handle})
        except Rejected:  # "Unable to resolve handle"
            return None
        did = (reply.json() or {}).get("did")
        return did if isinstance(did, str) else None

    async def _link_card(self, channel: Channel, uri: str) -> dict:
        """The card of a link: the page's title and description, fetched quickly; the bare URL if that fails."""
        try:
            reply = await channel.http.request("GET", uri, headers={"Accept": "text/html"}, timeouts=Timeouts(3, 5, 8))
        except (ConnectFailed, NoAnswer):
            return {"uri": uri, "title": uri, "description": ""}
        if reply.status != 200 or "html" not in reply.headers.get("content-type", "html"):
            return {"uri": uri, "title": uri, "description": ""}
        return _page_card(reply.body[:512 * 1024].decode("utf-8", "replace"), uri)

    async def _video_embed(self, channel: Channel, video: MediaFile) -> dict:
        """Bluesky's documented simple method: the video uploaded to the PDS as a blob, like an image; the
        video service processes it once the post is out (it plays a few seconds later)."""
        data = video.read()
        if len(data) > BLUESKY_MAX_VIDEO_BYTES:
            raise Rejected(f"Bluesky takes videos up to {BLUESKY_MAX_VIDEO_BYTES:,} bytes and this one has "
                           f"{len(data):,}", item="media item 1")
        try:
            reply = await self._call(channel, "POST", "com.atproto.repo.uploadBlob", what="the video",
                                     body=data, headers={"Content-Type": video.content_type})
        except PublishError as failed:
            failed.item = "media item 1"
            raise
        embed = {"$type": "app.bsky.embed.video", "video": (reply.json() or {}).get("blob")}
        if video.alt:
            embed["alt"] = video.alt
        return embed

    async def _images_embed(self, channel: Channel, media: tuple) -> dict:
        """Each image uploaded as a blob (raw bytes), then one app.bsky.embed.images with alt texts."""
        images = []
        for index, item in enumerate(media, 1):
            if item.kind != "image":
                raise Rejected("a Bluesky post carries either one video or up to 4 pictures, not both: put the "
                               "video in a thread part of its own, then retry the post", item=f"media item {index}")
            data = item.read()
            if len(data) > BLUESKY_MAX_IMAGE_BYTES:
                raise Rejected(f"Bluesky takes images up to {BLUESKY_MAX_IMAGE_BYTES:,} bytes and this one has "
                               f"{len(data):,}: make it smaller, then retry the post", item=f"media item {index}")
        for index, item in enumerate(media, 1):
            data = item.read()
            try:
                reply = await self._call(channel, "POST", "com.atproto.repo.uploadBlob", what=f"image {index}",
                                         body=data, headers={"Content-Type": item.content_type})
            except PublishError as failed:
                failed.item = f"media item {index}"
                raise
            image = {"alt": item.alt or "", "image": (reply.json() or {}).get("blob")}
            size = image_dimensions(data)
            if size and size[0] > 0 and size[1] > 0:
                image["aspectRatio"] = {"width": size[0], "height": size[1]}
            images.append(image)
        return {"$type": "app.bsky.embed.images", "images": images}



# =============================================================================
# 13. Scheduler: due posts to their platforms, exactly once, every outcome recorded
# =============================================================================
# One scheduler per database: whoever holds the flock on <database>-scheduler (the kernel frees it
# when its process dies, even by kill -9), so after a crash the next rustiz takes over at once and
# every post still PUBLISHING was left by a dead process. It sleeps until the earliest due time and
# is woken when posts change (directly in its process, through the shared counter in others).

SCHEDULER_LEASE_SECONDS = 900  # how long a claim stays marked as ours; shown on the post as lease_until
# The scheduler writes "alive at <time>" into its lock file this often, so that the next one knows since
# when no scheduler ran (what a post missed meanwhile is told).
SCHEDULER_HEARTBEAT_SECONDS = 10
RESEND_WINDOW_SECONDS = 1800  # an interrupted publish is repeated only this soon: Mastodon forgets keys after 1 h
RETRY_CAP_SECONDS = 1800


def _epoch(iso: str) -> float:
    """The Unix time of an instant as posts store it ('YYYY-MM-DDTHH:MM:SS.mmmZ')."""
    import calendar
    return calendar.timegm(time.strptime(iso[:19], "%Y-%m-%dT%H:%M:%S")) + int(iso[20:23] or 0) / 1000


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def next_occurrence(publish_date: str, anchor: Optional[str], every_days: int, zone_name: str,
                    after: float) -> Optional[str]:
    """A recurring post's first occurrence later than `after` (a Unix time), at its local time in the
    organization's timezone; None when the calendar ends first."""
    import datetime
    series = recurrence_of(publish_date, anchor, every_days, _timezone(zone_name))
    moment = series.next_after(datetime.datetime.fromtimestamp(after, datetime.timezone.utc))
    return None if moment is None else iso_ms(moment)


def failure_text(label: str, error: PublishError, part: int) -> str:
    """"Failed on Mastodon (HTTP 422) at thread part 2, media item 1: <message> — <body excerpt>"."""
    where = ", ".join(filter(None, (f"thread part {part + 1}" if part else "", error.item)))
    text = f"Failed on {label}" + (f" (HTTP {error.status})" if error.status else "") + (f" at {where}" if where else "")
    text += f": {error.message}"
    if error.body and error.body not in error.message and len(error.body) > len(error.message) + 40:
        text += f" — {label} answered: {error.body}"  # the body says more than the message we picked
    return text[:2000]


class Scheduler:
    """Claims due posts, hands each to its publisher, records PUBLISHED or ERROR, notifies, calls webhooks."""

    def __init__(self, config: Config, store: Store, loop: asyncio.AbstractEventLoop):
        self.config, self.store, self.loop = config, store, loop
        self.http = HttpClient(config.fetch_allow, threads=max(OUTBOUND_THREADS, config.publish_concurrency))
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self.lock_descriptor: Optional[int] = None
        self.timer: Optional[asyncio.TimerHandle] = None
        self.wake_pending = False
        self.busy_channels: set = set()
        self.busy_per_provider: dict = {}
        self.channel_free_at: dict = {}  # channel id -> Unix time its next publish may start (spacing, throttling)
        self.tasks: set = set()
        self.seen_generation = b""
        self.started_at = 0.0  # when this process took the lock
        self.last_alive_before: Optional[float] = None  # the previous scheduler's last heartbeat, when known
        self.beaten_at = 0.0
        self.throttled: dict = {}  # channel id -> (until, platform label): the platform asked us to wait

    # --- running: the lock, waking, and the loop over due posts ---------------------------------

    def tick(self) -> None:
        """Called every second: take the lock if its holder died, and notice changes other processes made."""
        if self.lock_descriptor is None:
            if not self._take_lock():
                return
            self._recover_interrupted()
            self.store.on_posts_changed = self.wake
            log(f"scheduler running in process {os.getpid()}")
            self.wake()
        if time.time() - self.beaten_at >= SCHEDULER_HEARTBEAT_SECONDS:
            self._beat()
        generation = self.store.posts_generation()
        if generation != self.seen_generation:
            self.seen_generation = generation
            self.wake()

    def _take_lock(self) -> bool:
        import fcntl
        descriptor = os.open(self.store.path + "-scheduler", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            return False
        self.lock_descriptor = descriptor
        self.started_at = time.time()
        heartbeat = re.search(rb"alive at (\d+)", os.pread(descriptor, 200, 0))
        self.last_alive_before = int(heartbeat[1]) if heartbeat else None
        self._beat()
        return True

    def _beat(self) -> None:
        """Write this scheduler's sign of life into the lock file (read by whoever takes the lock next)."""
        self.beaten_at = time.time()
        line = f"rustiz scheduler {self.owner} alive at {self.beaten_at:.0f} ({iso_at(self.beaten_at)})\n".encode()
        try:
            os.pwrite(self.lock_descriptor, line, 0)
            os.ftruncate(self.lock_descriptor, len(line))
        except OSError as error:  # a full disk: missed posts are told less precisely, nothing else changes
            log(f"scheduler: cannot write its heartbeat into its lock file: {error.strerror}")

    def wake(self) -> None:
        if not self.wake_pending and self.lock_descriptor is not None:
            self.wake_pending = True
            self.loop.call_soon(self._run_due)

    def _run_due(self) -> None:
        self.wake_pending = False
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        now = time.time()
        try:
            next_free = self._start_due_posts(now)
            next_due = self.store.next_due_time(iso_at(now))
        except sqlite3.Error as error:
            log(f"scheduler: the database failed ({error}); trying again in 5 s")
            self.timer = self.loop.call_later(5, self.wake)
            return
        wakes = [moment for moment in (next_free, next_due and _epoch(next_due)) if moment]
        if wakes:  # capped at an hour: a clock that jumps cannot make rustiz oversleep
            self.timer = self.loop.call_later(min(3600.0, max(0.0, min(wakes) - time.time())), self.wake)

    def _start_due_posts(self, now: float) -> Optional[float]:
        """Claim and start what is due and allowed by the caps; returns when a spaced-out channel frees up."""
        next_free = None
        for post_id, channel_id, provider in self.store.due_posts(iso_at(now)):
            if len(self.busy_channels) >= self.config.publish_concurrency:
                break
            if channel_id in self.busy_channels:
                continue  # one publish at a time per channel; its end wakes us
            free_at = self.channel_free_at.get(channel_id, 0.0)
            if free_at > now:
                next_free = free_at if next_free is None else min(next_free, free_at)
                continue
            publisher_ = PUBLISHERS.get(provider)
            if self.busy_per_provider.get(provider, 0) >= (publisher_.concurrency if publisher_ else 1):
                continue
            claim = self.store.claim_post(post_id, self.owner, iso_at(now + SCHEDULER_LEASE_SECONDS))
            if claim is None:
                continue
            self.busy_channels.add(channel_id)
            self.busy_per_provider[provider] = self.busy_per_provider.get(provider, 0) + 1
            task = self.loop.create_task(self._publish(claim))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return next_free

    async def _publish(self, claim: dict) -> None:
        publisher_ = PUBLISHERS.get(claim["provider"])
        channel = Channel(claim["channel_id"], claim["channel_name"], json.loads(claim["credentials"] or "{}"),
                          json.loads(claim["session"] or "null"), self.http,
                          lambda session: self.store.save_channel_session(claim["channel_id"], session))
        try:
            await self._attempt(claim, publisher_, channel)
        except Exception:  # a bug in rustiz: the post must still end in a state that says so
            log(f"publishing post {claim['id']} failed unexpectedly:\n{traceback.format_exc()}")
            self._fail(claim, publisher_, "rustiz failed while publishing this post (its log has the details); "
                                          "it may or may not have been published")
        finally:
            self.busy_channels.discard(claim["channel_id"])
            self.busy_per_provider[claim["provider"]] -= 1
            spacing = publisher_.spacing if publisher_ else 0.0
            self.channel_free_at[claim["channel_id"]] = time.time() + max(spacing, channel.throttled_for)
            if channel.throttled_for:
                self.throttled[claim["channel_id"]] = (time.time() + channel.throttled_for,
                                                       publisher_.label if publisher_ else claim["provider"])
            self.wake()

    async def _attempt(self, claim: dict, publisher_: Optional[Provider], channel: Channel) -> None:
        label = publisher_.label if publisher_ else claim["provider"]
        refusal = self._refusal_before_publishing(claim, publisher_, label)
        if refusal:
            self._fail(claim, publisher_, refusal)
            return
        due = max(claim["publish_date"], claim["not_before"] or "")
        late = time.time() - _epoch(due)
        if late > self.config.publish_grace_seconds and claim["attempts"] == 1:
            self._missed(claim, due, late)
            return
        staged: list = []
        try:
            media = await self._media(claim, staged)
            post = OutgoingPost(claim["id"], claim["content"], media, json.loads(claim["settings"] or "{}"),
                                claim["part"], claim["idempotency_key"], claim["publish_date"])
            parent = (Release(claim["parent_release_id"] or "", claim["parent_release_url"] or "",
                              json.loads(claim["parent_reply_ref"] or "null")) if claim["parent_id"] else None)
            release = await publisher_.publish(channel, post, parent)
        except PublishError as error:
            self._failed_attempt(claim, publisher_, channel, error)
            return
        finally:
            for path in staged:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        self._published(claim, label, release)

    @staticmethod
    def _refusal_before_publishing(claim: dict, publisher_: Optional[Provider], label: str) -> Optional[str]:
        if publisher_ is None:
            return (f"rustiz cannot publish to {label} channels: it publishes to "
                    f"{', '.join(sorted(PUBLISHERS))}")
        if claim["disabled"]:
            return "Channel disabled: enable the channel, then retry the post"
        if claim["refresh_needed"]:
            return (f"Reconnect needed: {label} refused this channel's credentials earlier; connect the channel "
                    "again with new credentials, then retry the post")
        return None

    async def _media(self, claim: dict, staged: list) -> tuple:
        """The post's images and videos as local files: our uploads directly, other URLs downloaded now."""
        from urllib.parse import urlsplit
        files = []
        for index, item in enumerate(json.loads(claim["image"] or "[]"), 1):
            url = (item.get("path") or "") if isinstance(item, dict) else ""
            try:
                match = re.search(r"/uploads/(\d{4}/\d{2}/\d{2}/[^/]+)\Z", urlsplit(url).path)
            except ValueError:  # a malformed URL: fetch_media says what is wrong with it
                match = None
            path = os.path.join(self.config.uploads, *match[1].split("/")) if match else ""
            if not (path and os.path.isfile(path)):
                try:
                    download = await fetch_media(self.http, url, self.config.uploads, self.config.max_video_bytes)
                except ApiError as refused:
                    reason = str(refused.body.get("message", refused.body)).removeprefix("upload-from-url: ")
                    raise Rejected(f"the media could not be read from {url[:200]}: {reason}",
                                   item=f"media item {index}") from None
                staged.append(download.temporary_path)
                path = download.temporary_path
            with open(path, "rb") as file:
                kind = sniff_media_type(file.read(64))
            if isinstance(kind, str):
                raise Rejected(f"{url[:200]} is not an image or video rustiz can publish ({kind})",
                               item=f"media item {index}")
            alt = item.get("alt") if isinstance(item, dict) and isinstance(item.get("alt"), str) else ""
            files.append(MediaFile(url, path, kind.content_type, kind.kind, alt, os.path.basename(path)))
        return tuple(files)

    # --- outcomes ---------------------------------------------------------------------------------

    def _published(self, claim: dict, label: str, release: Release) -> None:
        self.store.record_published(claim["id"], release.id, release.url, release.reply_ref)
        what = f"part {claim['part'] + 1} of a thread" if claim["part"] else "a post"
        self.store.add_notification(claim["organization_id"],
                                    f"Published {what} on {label} ({claim['channel_name']}): "
                                    f"{release.url or release.id}", release.url or None)
        self._send_event(claim, "post.published", {"releaseId": release.id, "releaseURL": release.url})
        recurring = self.store.finished_recurring_root(claim["group"])
        if recurring is not None:
            root_id, publish_date, every_days, anchor = recurring
            upcoming = next_occurrence(publish_date, anchor, every_days,
                                       self.store.organization_timezone(claim["organization_id"]), time.time())
            if upcoming is not None:  # None: the calendar ends (9999-12-31) before the next occurrence
                self.store.rearm_recurring(root_id, upcoming)

    def _failed_attempt(self, claim: dict, publisher_: Provider, channel: Channel, error: PublishError) -> None:
        attempts, label = claim["attempts"], publisher_.label
        if isinstance(error, Retryable) or (isinstance(error, OutcomeUnknown) and publisher_.resend_is_safe):
            if attempts <= self.config.retry_limit:
                wait = error.after if getattr(error, "after", None) else min(
                    RETRY_CAP_SECONDS, self.config.retry_base_seconds * 2 ** (attempts - 1))
                channel.throttle(wait if getattr(error, "after", None) else 0.0)
                self.store.requeue_post(claim["id"], iso_at(time.time() + wait),
                                        f"Attempt {attempts} of {self.config.retry_limit + 1}: "
                                        f"{failure_text(label, error, claim['part'])}; trying again in "
                                        f"{_duration(wait)}")
                return
            error.message = f"gave up after {attempts} attempts; the last one: {error.message}"
        elif isinstance(error, OutcomeUnknown):
            error.message += (f". It may have been published: check {publisher_.where_to_check(channel)} before "
                              "retrying; rustiz does not send it again by itself, so that it is never posted twice")
        elif isinstance(error, NeedsReconnect):
            self.store.mark_refresh_needed(claim["channel_id"])
            error.message = (f"the channel's credentials were refused: {error.message}. Connect the channel "
                             "again with working credentials, then retry the post")
        self._fail(claim, publisher_, failure_text(label, error, claim["part"]))

    def _fail(self, claim: dict, publisher_: Optional[Provider], text: str) -> None:
        later_parts = self.store.record_failed(claim["id"], text)
        suffix = f" ({later_parts} later thread part{'s' if later_parts > 1 else ''} not published)" if later_parts else ""
        self.store.add_notification(claim["organization_id"], f"{claim['channel_name']}: {text}{suffix}")
        self._send_event(claim, "post.failed", {"error": text})

    def _missed(self, claim: dict, due: str, late: float) -> None:
        grace = _duration(self.config.publish_grace_seconds)
        why = self._why_late(claim["channel_id"], _epoch(due))
        upcoming = None
        if claim["interval_days"] and not claim["parent_id"]:
            upcoming = next_occurrence(claim["publish_date"], claim["recurrence_anchor"], claim["interval_days"],
                                       self.store.organization_timezone(claim["organization_id"]), time.time())
        if upcoming is not None:
            self.store.rearm_recurring(claim["id"], upcoming)
            self.store.add_notification(claim["organization_id"],
                                        f"{claim['channel_name']}: skipped the occurrence due at {due}: {why}, and it "
                                        f"was {_duration(late)} late, more than the {grace} grace period "
                                        f"(PUBLISH_GRACE); the recurring post next goes out at {upcoming}")
            return
        self._fail(claim, None, f"Missed: this post was due at {due}, but {why}; it was {_duration(late)} late, "
                                f"more than the {grace} grace period (PUBLISH_GRACE), so it was not sent. Retry it "
                                "to publish it now")

    def _why_late(self, channel_id: str, due: float) -> str:
        """What kept a post from going out at its time, from what this scheduler knows."""
        if due < self.started_at:
            started = iso_at(self.started_at)
            stopped = self.last_alive_before
            if stopped is None:
                return f"no rustiz scheduler was running then (this one started at {started})"
            if due >= stopped:
                return (f"rustiz was not running from {iso_at(stopped)} (its last sign of life) to {started} "
                        "(stopped, restarting, or its machine asleep)")
            return (f"it was still waiting for its turn when rustiz stopped at {iso_at(stopped)}, and rustiz only "
                    f"started again at {started}")
        until, label = self.throttled.get(channel_id, (0.0, ""))
        if until > due:
            return (f"rustiz was running, and {label} had asked it to wait before the next post on this channel "
                    f"(a rate limit, until {iso_at(until)})")
        return (f"rustiz was running, and the post waited behind other posts and their retries (rustiz publishes "
                f"{self.config.publish_concurrency} posts at once at most, one at a time per channel)")

    def _recover_interrupted(self) -> None:
        """Posts left PUBLISHING by a process that died: sent again where that cannot duplicate, else ERROR."""
        for post_id, provider, owner, channel_name, since, credentials in self.store.publishing_posts():
            publisher_ = PUBLISHERS.get(provider)
            recent = time.time() - _epoch(since) < RESEND_WINDOW_SECONDS
            if publisher_ is not None and publisher_.resend_is_safe and recent:
                self.store.requeue_post(post_id, iso_at(time.time()),
                                        f"rustiz stopped while publishing this post ({owner}); sending it again, "
                                        f"which {publisher_.label} recognises as the same post")
                continue
            label = publisher_.label if publisher_ else provider
            channel = Channel("", channel_name, json.loads(credentials or "{}"), None, self.http)
            where = publisher_.where_to_check(channel) if publisher_ else f"the channel \"{channel_name}\""
            claim = self.store.post_for_publishing(post_id)
            self._fail(claim, publisher_, f"Failed on {label}: rustiz stopped (a crash, a kill or a power cut) while "
                                          f"publishing this post at {since}, so it may have been published: check "
                                          f"{where} before retrying")

    # --- outgoing webhooks --------------------------------------------------------------------

    def _send_event(self, claim: dict, event: str, details: dict) -> None:
        targets = self.store.webhook_targets(claim["organization_id"], claim["channel_id"])
        if not targets:
            return
        payload = {"event": event, "organizationId": claim["organization_id"],
                   "channel": {"id": claim["channel_id"], "name": claim["channel_name"],
                               "provider": claim["provider"]},
                   "post": {"id": claim["id"], "group": claim["group"], "part": claim["part"],
                            "publishDate": claim["publish_date"], **details}}
        for url, secret in targets:
            task = self.loop.create_task(self._deliver(url, secret, event, payload))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _deliver(self, url: str, secret: Optional[str], event: str, payload: dict) -> None:
        """Best effort, three tries (now, after 5 s, after 30 s); a receiver that stays down gets a log line."""
        body, headers = signed_json_request(payload, secret, event, new_uuid())
        problem = ""
        for wait in (0, 5, 30):
            await asyncio.sleep(wait)
            try:
                reply = await self.http.request("POST", url, body=body, headers=headers,
                                                timeouts=Timeouts(10, 15, 30))
            except AddressRefused as error:  # refused again on every try: one log line says so
                problem = str(error)
                break
            except (ConnectFailed, NoAnswer) as error:
                problem = str(error)
                continue
            if reply.status < 300:
                return
            problem = f"HTTP {reply.status}"  # the receiver's body is not quoted: it may be any server's page
        log(f"webhook {_url_host(url)} did not take the {event} event of post {payload['post']['id']}: {problem}")

    async def stop(self, timeout: float) -> None:
        """Let publishes in flight finish (up to `timeout`); what is still running is recovered at the next start."""
        if self.timer is not None:
            self.timer.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=timeout)
        if self.lock_descriptor is not None:
            self._beat()  # the moment this scheduler stopped, for the next one
        self.http.close()


# =============================================================================
# 14. Speedups: orjson and uvloop when importable, or unpacked once from the .pyz
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


def _with_stdlib_fallback(fast_dumps: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """orjson.dumps, except for what orjson refuses and the standard library writes: integers beyond 64 bits
    (a post's settings may hold any JSON number a client sent) and keys that are not strings."""
    def dumps(value: Any) -> bytes:
        try:
            return fast_dumps(value)
        except TypeError:  # orjson.JSONEncodeError
            return _json_dumps_stdlib(value)
    return dumps


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
        json_dumps = _with_stdlib_fallback(orjson.dumps)
        used.append("orjson")
    except ImportError:
        used.append("json")
    return ", ".join(used) + (f"; {note}" if note else "")


# =============================================================================
# 15. CLI
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
        make_private_folders(uploads)
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
    keep_private(config.uploads)  # (what is inside a 0700 folder is out of others' reach, whatever its mode)
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


def command_org_add(arguments: argparse.Namespace) -> int:
    name = arguments.name.strip()
    if not name:
        raise UserError("the organization needs a name: rustiz org add \"Acme Inc\"")
    config = load_config(dict(os.environ))
    key = new_api_key()
    store = Store(config.database)
    try:
        organization_id = store.create_organization(name, hash_api_key(key))
    finally:
        store.close()
    print(key)
    log(f"organization {name} ({organization_id}) created; the key above is shown once: only its hash is stored")
    return 0


def _email_argument(arguments: argparse.Namespace) -> str:
    email = arguments.email.strip().lower()
    if not re.fullmatch(r"[^@\s]+@[^@\s]+", email):
        raise UserError(f"{email!r} is not an email address: rustiz user {arguments.user_command} alice@example.com")
    return email


def command_user_add(arguments: argparse.Namespace) -> int:
    """A web app user: the password is read from standard input (one line) or asked for twice."""
    email = _email_argument(arguments)
    password_hash = hash_password(_new_password())

    def add(store: Store, organization: dict) -> None:
        try:
            store.add_web_user(organization["id"], email, password_hash)
        except sqlite3.IntegrityError:
            raise UserError(f"{email} already has a web app password") from None

    organization = _in_chosen_organization(arguments.org, add)
    log(f"{email} can now sign in to the web app of organization {organization['name']}")
    return 0


def command_user_password(arguments: argparse.Namespace) -> int:
    """A new password for a web app user, read as `user add` reads it; the user's sessions end."""
    email = _email_argument(arguments)
    password_hash = hash_password(_new_password())

    def change(store: Store, organization: dict) -> None:
        if not store.set_web_user_password(organization["id"], email, password_hash):
            raise _no_such_web_user(email, organization)

    _in_chosen_organization(arguments.org, change)
    log(f"{email} has a new web app password; the browsers signed in with the old one are signed out")
    return 0


def command_user_remove(arguments: argparse.Namespace) -> int:
    email = _email_argument(arguments)

    def remove(store: Store, organization: dict) -> None:
        if not store.remove_web_user(organization["id"], email):
            raise _no_such_web_user(email, organization)

    organization = _in_chosen_organization(arguments.org, remove)
    log(f"{email} can no longer sign in to the web app of organization {organization['name']}; "
        "its browsers are signed out")
    return 0


def _in_chosen_organization(organization_id: Optional[str], action: Callable[[Store, dict], None]) -> dict:
    """Run `action(store, organization)` for the organization --org names (see _chosen_organization); returns it."""
    config = load_config(dict(os.environ))
    store = Store(config.database)
    try:
        organization = _chosen_organization(config, store, organization_id)
        action(store, organization)
    finally:
        store.close()
    return organization


def _no_such_web_user(email: str, organization: dict) -> UserError:
    return UserError(f"{email} is not a web app user of organization {organization['name']} "
                     f"({organization['id']}); `rustiz user add {email}` makes one, --org ORG_ID chooses "
                     "another organization")


def _new_password() -> str:
    if sys.stdin.isatty():
        import getpass
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            raise UserError("the two passwords differ; nothing was saved")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if len(password) < 10:
        raise UserError("the password needs at least 10 characters; nothing was saved")
    return password


def command_org_list(arguments: argparse.Namespace) -> int:
    config = load_config(dict(os.environ))
    store = Store(config.database)
    try:
        organizations = store.organization_summaries()
    finally:
        store.close()
    print("ID\tNAME\tCHANNELS")
    for organization in organizations:
        print(f"{organization['id']}\t{organization['name']}\t{organization['channels']}")
    return 0


def _chosen_organization(config: Config, store: Store, organization_id: Optional[str]) -> dict:
    """The organization --org names, else the one whose key is in the config, else the only one."""
    organizations = store.organizations()
    if organization_id is not None:
        for organization in organizations:
            if organization["id"] == organization_id:
                return organization
        raise UserError(f"no organization has the id {organization_id}; `rustiz org list` shows the ids")
    current = hash_api_key(config.api_key) if config.api_key else None
    for organization in organizations:
        if organization["api_key_hash"] == current:
            return organization
    if len(organizations) == 1:
        return organizations[0]
    raise UserError(f"the database has {len(organizations)} organizations and RUSTIZ_API_KEY in "
                    f"{config.config_path} matches none of them: choose one with --org ORG_ID "
                    "(`rustiz org list` shows the ids)")


def _refusal_text(refused: ApiError) -> str:
    """What an API refusal says, as one line for the terminal."""
    message = refused.body.get("message", refused.body) if isinstance(refused.body, dict) else refused.body
    return "; ".join(message) if isinstance(message, list) else str(message)


def command_org_timezone(arguments: argparse.Namespace) -> int:
    config = load_config(dict(os.environ))
    store = Store(config.database)
    try:
        organization = _chosen_organization(config, store, arguments.org)
        changes = validate_organization_changes({"timezone": arguments.zone})
        store.update_organization(organization["id"], **changes)
    except ApiError as refused:
        raise UserError(_refusal_text(refused)) from None
    finally:
        store.close()
    print(f"organization {organization['name']} ({organization['id']}) now uses the timezone {changes['timezone']}")
    return 0


def credentials_from_arguments(provider: str, pairs: list) -> dict:
    """`--credential KEY=VALUE` pairs as a credentials object. A list (nostr's relays) takes its items
    comma-separated or from the key repeated."""
    spec = CREDENTIAL_SPECS.get(provider)
    list_keys = {key.name for key in spec.keys if key.kind == "relays"} if spec else set()
    credentials: dict = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name:  # the value is not echoed: it may be a secret
            raise UserError("each --credential needs the form KEY=VALUE, e.g. --credential webhookUrl=https://...")
        if name in list_keys:
            credentials.setdefault(name, []).extend(item.strip() for item in value.split(",") if item.strip())
        else:
            credentials[name] = value
    return credentials


def command_channel_add(arguments: argparse.Namespace) -> int:
    body = {"provider": arguments.provider, "name": arguments.name, "customer": arguments.customer,
            "credentials": credentials_from_arguments(arguments.provider, arguments.credential)}
    config = load_config(dict(os.environ))
    store = Store(config.database)
    try:
        organization = _chosen_organization(config, store, arguments.org)
        http = HttpClient(config.fetch_allow)
        try:
            channel = asyncio.run(connect_channel(store, organization["id"], body, http))
        finally:
            http.close()
    except ApiError as refused:
        raise UserError(f"cannot add the {arguments.provider} channel: {_refusal_text(refused)}") from None
    finally:
        store.close()
    print(channel["id"])
    log(f"channel {channel['name']} ({channel['identifier']}) added to organization {organization['name']}")
    return 0


def command_channel_list(arguments: argparse.Namespace) -> int:
    config = load_config(dict(os.environ))
    store = Store(config.database)
    try:
        organization = _chosen_organization(config, store, arguments.org)
        channels = store.integrations(organization["id"])
    finally:
        store.close()
    print("ID\tPROVIDER\tNAME\tPROFILE\tGROUP\tDISABLED")
    for channel in channels:
        group = channel["customer"]["name"] if "customer" in channel else "-"
        print(f"{channel['id']}\t{channel['identifier']}\t{channel['name']}\t{channel['profile'] or '-'}\t"
              f"{group}\t{'yes' if channel['disabled'] else 'no'}")
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
    org = commands.add_parser("org", formatter_class=_help_formatter, help="manage organizations",
                              description="One rustiz serves several organizations; each API key sees only "
                                          "its own organization's channels, posts, media and groups.")
    org_commands = org.add_subparsers(dest="org_command", metavar="{add,list,timezone}", required=True)
    org_add = org_commands.add_parser("add", formatter_class=_help_formatter,
                                      help="create an organization and print its API key",
                                      description="Create an organization and print its new API key (once: "
                                                  "only a hash of it is stored).")
    org_add.add_argument("name", metavar="NAME", help="the organization's name")
    org_add.set_defaults(run=command_org_add)
    org_list = org_commands.add_parser("list", formatter_class=_help_formatter,
                                       help="list organizations: id, name, number of channels",
                                       description="Print one tab-separated line per organization: id, name, "
                                                   "number of channels.")
    org_list.set_defaults(run=command_org_list)
    org_timezone = org_commands.add_parser(
        "timezone", formatter_class=_help_formatter, help="set the organization's IANA timezone",
        description="Set the organization's timezone (an IANA name such as Europe/Paris); posting slots "
                    "(find-slot) are local times in it. Dates in the API stay UTC.")
    org_timezone.add_argument("zone", metavar="ZONE", help="an IANA timezone name, e.g. America/New_York")
    org_timezone.add_argument("--org", metavar="ORG_ID", help="which organization (default: the config's key's)")
    org_timezone.set_defaults(run=command_org_timezone)
    _add_channel_commands(commands)
    user = commands.add_parser("user", formatter_class=_help_formatter, help="web app users",
                               description="People who sign in to the web app with an email and a password "
                                           "(the organization's API key signs in too).")
    user_commands = user.add_subparsers(dest="user_command", metavar="{add,password,remove}", required=True)
    for name, run, help_text, description in (
            ("add", command_user_add, "let an email sign in to the web app with a password",
             "Let EMAIL sign in to the web app of the organization with a password, read from standard input "
             "(one line) or asked for twice on a terminal. At least 10 characters."),
            ("password", command_user_password, "set a web app user's new password; their sessions end",
             "Give EMAIL a new password, read as `user add` reads it. The browsers signed in with the old "
             "password are signed out, in running servers too."),
            ("remove", command_user_remove, "stop an email from signing in; their sessions end",
             "EMAIL can no longer sign in to the web app; the browsers signed in as EMAIL are signed out, in "
             "running servers too.")):
        command = user_commands.add_parser(name, formatter_class=_help_formatter, help=help_text,
                                           description=description)
        command.add_argument("email", metavar="EMAIL")
        command.add_argument("--org", metavar="ORG_ID", help="which organization (default: the config's key's)")
        command.set_defaults(run=run)
    version = commands.add_parser("version", formatter_class=_help_formatter, help="print the version",
                                  description="Print the version.")
    version.set_defaults(run=command_version)
    return parser


def _add_channel_commands(commands: Any) -> None:
    connectable = ", ".join(sorted(CREDENTIAL_SPECS))
    channel = commands.add_parser("channel", formatter_class=_help_formatter, help="add and list channels",
                                  description="Channels (Postiz's integrations) of an organization.")
    channel_commands = channel.add_subparsers(dest="channel_command", metavar="{add,list}", required=True)
    add = channel_commands.add_parser(
        "add", formatter_class=_help_formatter, help="connect a channel with its credentials, print its id",
        description=f"Connect a channel that needs no developer app ({connectable}) with its credentials, as "
                    "POST /public/v1/integrations does, and print the new channel's id. Example: rustiz channel "
                    "add bluesky --credential service=https://bsky.social --credential identifier=me.bsky.social "
                    "--credential password=APP-PASSWORD")
    add.add_argument("provider", metavar="PROVIDER", help=f"one of: {connectable}")
    add.add_argument("--credential", action="append", default=[], metavar="KEY=VALUE",
                     help="one credential key (repeat for each; nostr relays: comma-separated)")
    add.add_argument("--name", help="the channel's name (default: from the credentials, e.g. the handle)")
    add.add_argument("--customer", metavar="GROUP", help="a group's id or name (a new name makes a new group)")
    add.add_argument("--org", metavar="ORG_ID", help="which organization (default: the config's key's)")
    add.set_defaults(run=command_channel_add)
    listing = channel_commands.add_parser(
        "list", formatter_class=_help_formatter, help="list channels",
        description="Print one tab-separated line per channel: id, provider, name, profile, group, disabled.")
    listing.add_argument("--org", metavar="ORG_ID", help="which organization (default: the config's key's)")
    listing.set_defaults(run=command_channel_list)


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
