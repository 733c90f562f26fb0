#!/usr/bin/env python3
"""rustiz: a self-hosted social-media scheduler that speaks the Postiz public API.

One process, one SQLite file. Run it with ``python3 rustiz.pyz serve``.

This module is the core: it serves HTTP, stores, authenticates and routes, and imports only the standard
library when it loads. Everything else is a feature module of the rustiz_features package beside it
(rustiz_features/__init__.py maps them), imported the first time it is needed: the route table (section 7)
names each route's module, imported on the route's first request; the scheduler is imported when the
primary worker starts it; main() imports rustiz_features.cli for any command but init, serve
and version.

Map of this file (each section starts with a banner comment):
  1. Constants        version, defaults, small helpers (ids, time and dates, JSON)
  2. Config           config.env parsing, environment overrides -> one frozen Config
  3. Storage          Store, the storage engine: connections, transactions, migrations and the request path's
                      queries, on a SQLite file or, through rustiz_features.postgres, on PostgreSQL shared by
                      many processes (each feature's SQL: rustiz_features/storage/)
  4. HTTP protocol    sans-IO: RequestParser.feed(bytes) -> events; Response and its serialisation
  5. Server           Request, ApiError (what handlers and checks raise to refuse); the asyncio Protocol,
                      limits, back-pressure, shutdown, --workers; RequestTally (what GET /metrics counts)
  6. Auth and limits  API keys (and their scopes) and web sessions, REQUEST_LIMIT per client, API_LIMIT per
                      organization
  7. Routing          the route table (method, path -> feature module and handler) and App: admit, respond
  8. Speedups         orjson/uvloop when importable, or unpacked from the .pyz bundle
  9. CLI              init, serve, version, and main(): the one dispatch, which asks rustiz_features.cli for
                      every other command (key, org, channel, user, posts, db copy, backup, restore, doctor,
                      example)
"""
from __future__ import annotations

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
from _bisect import bisect_left  # (bisect's C half: the module itself imports nothing more)
from _operator import _compare_digest as compare_digest  # what hmac.compare_digest is, minus hmac's OpenSSL
from typing import TYPE_CHECKING, Any, Awaitable, Callable, NamedTuple, Optional, Union

if TYPE_CHECKING:  # names in annotations only: the core imports no feature module at load time
    import argparse  # (imported by the CLI when a command needs it: `serve` does not)
    import datetime  # (imported where a date is parsed: most requests parse none)

# Key hashing uses CPython's built-in SHA-256: importing hashlib (or hmac) loads OpenSSL's libcrypto,
# which costs about a tenth of start-up and several MiB, for 64-byte inputs where speed is equal.
try:
    from _sha2 import sha256 as sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256 as sha256  # Python 3.10, 3.11
    except ImportError:  # an interpreter built without its own hashes
        from hashlib import sha256 as sha256

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
NAME_MAX_LENGTH = 100  # characters of an organization's or a group's (customer's) name: pages and lists show them
MAX_IMAGE_BYTES = 10 * 1024 * 1024  # Postiz's limit for uploaded images
DEFAULT_MAX_VIDEO_BYTES = 1024 * 1024 * 1024  # Postiz's limit for uploaded video
MAX_HEAD_BYTES = 16 * 1024
DEFAULT_MAX_CONNECTIONS = 4096  # per worker
DEFAULT_BODY_MEMORY_BUDGET = 256 * 1024 * 1024  # request bodies held in memory at once, per worker
DEFAULT_BODY_MIN_RATE = 4096  # bytes/s: a 1 GiB video over a 33 kbit/s link still gets through
DEFAULT_BODY_RATE_WINDOW = 30.0  # seconds over which that rate is averaged
API_LIMIT_WINDOW_SECONDS = 3600
REQUEST_LIMIT_WINDOW_SECONDS = 60
# API key scopes, each allowing what the ones before it allow (see docs/api.md, "API keys and scopes"): read (GET),
# drafts (also drafts that wait for review, and uploads), full (everything, the organization's own key).
SCOPES = ("read", "drafts", "full")
# What a caller may do, from the narrowest to the widest: the key scopes, with "posts" between drafts and full for
# a person whose role is editor (every post, no settings). A route declares the level it needs (Route.scope).
LEVELS = ("read", "drafts", "posts", "full")
# A person's role in an organization (membership.role) and the level it gives (docs/teams.md).
ROLE_SCOPES = {"viewer": "read", "author": "drafts", "editor": "posts", "admin": "full"}
ROLES = tuple(ROLE_SCOPES)
KEY_LAST_USE_SECONDS = 60  # a key's last use is written at most this often (per key and worker)
DEFAULT_MCP_TOOL_LIMIT = 60  # MCP tool calls per minute per key
DEFAULT_MCP_POST_LIMIT = 10  # of which tool calls that create posts


LOG_FORMATS = ("plain", "json")
_log_as_json = False  # RUSTIZ_LOG_FORMAT=json (set by load_config): one JSON object per line


def log(message: str, level: str = "info") -> None:
    """Every log line goes to stderr, one line each, so a supervisor can collect them: plain text, or with
    RUSTIZ_LOG_FORMAT=json one JSON object {"time", "level", "message", "pid"} per line (a message with
    several lines, a traceback, stays one JSON line)."""
    if _log_as_json:
        line = json.dumps({"time": utc_now_iso(), "level": level, "message": message, "pid": os.getpid()},
                          ensure_ascii=False)
        sys.stderr.write(line + "\n")
    else:
        sys.stderr.write(f"rustiz[{os.getpid()}]: {message}\n")
    sys.stderr.flush()


def set_log_format(name: str) -> None:
    global _log_as_json
    if name.strip().lower() not in ("", *LOG_FORMATS):
        raise UserError(f"RUSTIZ_LOG_FORMAT={name!r}: use plain (one line of text per event) or json "
                        "(one JSON object per line)")
    _log_as_json = name.strip().lower() == "json"


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
    instant = parse_iso_date(text) if isinstance(text, str) else None
    return None if instant is None else datetime.datetime.strptime(instant, "%Y-%m-%dT%H:%M:%S.%f%z")


def iso_ms(moment: "datetime.datetime") -> str:
    """A UTC datetime as Postiz serialises instants (and rustiz stores them, so text order is time order)."""
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
            f"{moment.second:02d}.{moment.microsecond // 1000:03d}Z")


# ASCII digits only ("\d" would take Arabic-Indic or fullwidth digits too), and UTC offsets as
# validator.js's isISO8601 (Postiz's IsDateString) takes them: hours 00-23, minutes 00-59.
_ISO_8601 = (r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?"
             r"(Z|z|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)?)?")


def parse_iso_date(text: str) -> Optional[str]:
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


def duration(seconds: float) -> str:
    """A span of time as a person reads it: "45 s", "12 min", "6.0 h"."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


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
    return sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def _make_json_encoders() -> tuple:
    """Compact JSON as text and as UTF-8 bytes. json.dumps() builds a new encoder per call; the C encoder made
    once is ~20x faster (and each function below is one call deep: every answer pays for it)."""
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:  # an interpreter without the C accelerator
        encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
        return encode, lambda value: encode(value).encode("utf-8")
    iterencode = make_encoder(None, None, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    return (lambda value: "".join(iterencode(value, 0)),
            lambda value: "".join(iterencode(value, 0)).encode("utf-8"))


encode_json, _json_dumps_stdlib = _make_json_encoders()


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
    mcp_tool_limit: int = DEFAULT_MCP_TOOL_LIMIT  # MCP tool calls per minute per API key (0: no limit)
    mcp_post_limit: int = DEFAULT_MCP_POST_LIMIT  # of which calls of tools that create posts (0: no limit)
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # per worker; beyond it new requests get 503 (/health still answers)
    body_memory_budget: int = DEFAULT_BODY_MEMORY_BUDGET  # bytes of request bodies in memory at once, per worker
    body_min_rate: int = DEFAULT_BODY_MIN_RATE  # bytes/s a body must average over each body_rate_window, or 408
    body_rate_window: float = DEFAULT_BODY_RATE_WINDOW
    database_threads: int = 8  # PostgreSQL: requests answered at once per worker (each thread its connection)
    scheduler: bool = True  # False: this process publishes nothing (an API-only node beside others that publish)
    # Every setting by name (config.env, then the environment): what features read by Postiz's names, such
    # as an OAuth platform's app (LINKEDIN_CLIENT_ID...), which the core need not know.
    settings: Optional[dict] = None
    # RUSTIZ_STORAGE=s3://bucket/prefix: an object_storage.S3Storage, where uploads live (`uploads` then only
    # stages them); None: in the `uploads` folder.
    storage: Any = None
    # E-mail (issue 25): RUSTIZ_SMTP_URL as an SmtpServer (None: no mail is sent), and RUSTIZ_MAIL_FROM.
    smtp: Any = None
    mail_from: str = ""
    audit_days: int = 365  # RUSTIZ_AUDIT_DAYS: how long the audit log keeps an entry
    # Single sign-on (RUSTIZ_OIDC_ISSUER...): an OidcSettings, or None when it is off.
    oidc: Any = None


class OidcSettings(NamedTuple):
    """Single sign-on with OpenID Connect (rustiz_features/oidc.py): the issuer, rustiz's client there, whether
    passwords are off (RUSTIZ_OIDC_ONLY=1), and the name the sign-in button shows."""
    issuer: str
    client_id: str
    client_secret: str
    only: bool
    name: str


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
        if not sep or not (name.isascii() and name.isidentifier()):  # [A-Za-z_][A-Za-z0-9_]*
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


def _switch_setting(values: dict, name: str, default: bool, meaning: str) -> bool:
    raw = values.get(name, "").strip().lower()
    if not raw:
        return default
    if raw not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        raise UserError(f"{name}={raw!r}: use {meaning}")
    return raw in ("1", "true", "yes", "on")


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


def _oidc_settings(values: dict) -> Optional[OidcSettings]:
    """RUSTIZ_OIDC_*: None when no issuer is set (RUSTIZ_OIDC_ONLY=1 without one is a mistake: nobody could sign in)."""
    issuer = values.get("RUSTIZ_OIDC_ISSUER", "").strip()  # (as the issuer spells itself: a final / or none)
    only = _switch_setting(values, "RUSTIZ_OIDC_ONLY", False, "1 (sign-in through single sign-on only) or 0")
    if not issuer:
        if only:
            raise UserError("RUSTIZ_OIDC_ONLY=1 needs RUSTIZ_OIDC_ISSUER (and its client): without single sign-on "
                            "nobody could sign in with an email")
        return None
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", issuer):
        raise UserError(f"RUSTIZ_OIDC_ISSUER={issuer!r}: use the issuer's https:// URL, as its "
                        "/.well-known/openid-configuration names it")
    client_id, client_secret = values.get("RUSTIZ_OIDC_CLIENT_ID", "").strip(), values.get("RUSTIZ_OIDC_CLIENT_SECRET", "")
    if not client_id or not client_secret:
        raise UserError("RUSTIZ_OIDC_ISSUER needs RUSTIZ_OIDC_CLIENT_ID and RUSTIZ_OIDC_CLIENT_SECRET: register rustiz "
                        "as a client (a web application) with the issuer")
    name = values.get("RUSTIZ_OIDC_NAME", "").strip()[:60]  # (empty: the button says "single sign-on")
    return OidcSettings(issuer, client_id, client_secret, only, name)


def load_config(environ: dict, workers_flag: Optional[int] = None) -> Config:
    """The config file named by RUSTIZ_CONFIG, then environment variables on top of it."""
    path = default_config_path(environ)
    values = read_config_file(path)
    values.update({name: value for name, value in environ.items() if value != ""})
    return config_from_values(path, values, environ, workers_flag)


def config_from_values(path: str, values: dict, environ: dict, workers_flag: Optional[int] = None) -> Config:
    """The Config that `values` (the file's, the environment's on top) make, each setting checked: a UserError
    names the first one that is wrong."""
    base = os.path.dirname(os.path.abspath(path))
    set_log_format(values.get("RUSTIZ_LOG_FORMAT", ""))

    def resolve(name: str, default: str) -> str:
        return os.path.join(base, values.get(name) or default)

    host = values.get("HOST", DEFAULT_HOST)
    port = _int_setting(values, "PORT", DEFAULT_PORT, 0, 65535)
    workers = workers_flag if workers_flag is not None else _int_setting(values, "RUSTIZ_WORKERS", 1, 1, 64)
    if not 1 <= workers <= 64:
        raise UserError(f"--workers {workers} is out of range: use 1..64")
    max_body_bytes = _int_setting(values, "RUSTIZ_MAX_BODY", DEFAULT_MAX_BODY_BYTES, 1024, 2**40)
    body_memory_budget = _int_setting(values, "RUSTIZ_BODY_MEMORY_BUDGET", DEFAULT_BODY_MEMORY_BUDGET, 1024, 2**44)
    if body_memory_budget < max_body_bytes:
        raise UserError(f"RUSTIZ_BODY_MEMORY_BUDGET={body_memory_budget} is below RUSTIZ_MAX_BODY={max_body_bytes}: "
                        "a body of the largest size allowed could never be accepted; raise the budget")
    return Config(
        config_path=path,
        database=database_setting(values, environ, resolve),
        uploads=resolve("RUSTIZ_STORAGE" if _local_storage(values) else "RUSTIZ_UPLOADS", "uploads"),
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
        access_log=_switch_setting(values, "RUSTIZ_ACCESS_LOG", False, "1 or 0"),
        trusted_proxies=_trusted_proxies(values.get("RUSTIZ_TRUSTED_PROXIES", "")),
        max_video_bytes=_int_setting(values, "RUSTIZ_MAX_VIDEO_BYTES", DEFAULT_MAX_VIDEO_BYTES, 1024, 2**40),
        fetch_allow=_fetch_allow(values.get("RUSTIZ_FETCH_ALLOW", "")),
        publish_grace_seconds=_seconds_setting(values, "PUBLISH_GRACE", 6 * 3600.0, maximum=30 * 86400),
        retry_base_seconds=_seconds_setting(values, "RUSTIZ_RETRY_BASE", 30.0),
        retry_limit=_int_setting(values, "RUSTIZ_RETRY_LIMIT", 5, 0, 50),
        publish_concurrency=_int_setting(values, "RUSTIZ_PUBLISH_CONCURRENCY", 8, 1, 256),
        mcp_api_limit=_switch_setting(values, "MCP_API_LIMIT", True,
                                      "1 (MCP scheduling counts against API_LIMIT) or 0"),
        mcp_tool_limit=_int_setting(values, "RUSTIZ_MCP_TOOL_LIMIT", DEFAULT_MCP_TOOL_LIMIT, 0, 10**6),
        mcp_post_limit=_int_setting(values, "RUSTIZ_MCP_POST_LIMIT", DEFAULT_MCP_POST_LIMIT, 0, 10**6),
        max_connections=_int_setting(values, "RUSTIZ_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS, 1, 10**6),
        body_memory_budget=body_memory_budget,
        settings=values,
        body_min_rate=_int_setting(values, "RUSTIZ_BODY_MIN_RATE", DEFAULT_BODY_MIN_RATE, 1, 2**30),
        body_rate_window=_seconds_setting(values, "RUSTIZ_BODY_RATE_WINDOW", DEFAULT_BODY_RATE_WINDOW, maximum=3600),
        database_threads=_int_setting(values, "RUSTIZ_DATABASE_THREADS", 8, 1, 256),
        scheduler=_switch_setting(values, "RUSTIZ_SCHEDULER", True, "1 (this process publishes due posts and "
                                                                    "delivers webhooks) or 0 (it only answers requests)"),
        audit_days=_int_setting(values, "RUSTIZ_AUDIT_DAYS", 365, 1, 36500),
        storage=None if _local_storage(values) or not values.get("RUSTIZ_STORAGE") else _bucket_storage(values),
        smtp=smtp_setting(values.get("RUSTIZ_SMTP_URL", "")),
        mail_from=mail_from_setting(values.get("RUSTIZ_MAIL_FROM", ""), values.get("FRONTEND_URL", "")),
        oidc=_oidc_settings(values),
    )


def is_postgres_url(database: str) -> bool:
    return database.startswith(("postgresql://", "postgres://"))


def redacted_url(url: str) -> str:
    """A database URL without its password, for messages and logs."""
    return re.sub(r"(//[^/:@]*):[^/@]*@", r"\1:***@", url)


# What stands for a credential in a request's target: an API key in an MCP address (/mcp/<key>, /sse/<key>,
# /message/<key>), a client review link's token (/p/<token>), and a `token` (invite, reset) or `code`/`state`
# (single sign-on, OAuth) query parameter. The access log writes "***" in their place.
_SECRETS_IN_TARGET = re.compile(r"(/(?:mcp|sse|message|p)/)[^/?#]+|([?&](?:token|code|state)=)[^&#]*")


def loggable_target(target: str) -> str:
    """A request's target for the access log, with the credentials it may carry replaced by ***."""
    return _SECRETS_IN_TARGET.sub(lambda found: (found.group(1) or found.group(2)) + "***", target)


def database_setting(values: dict, environ: dict, resolve: Callable[[str, str], str]) -> str:
    """A SQLite file (a path, relative to the config file) or a PostgreSQL URL. RUSTIZ_DATABASE wins;
    DATABASE_URL (Postiz's name) counts when the environment gives no RUSTIZ_DATABASE and names PostgreSQL."""
    chosen = environ.get("RUSTIZ_DATABASE") or ""
    if not chosen and is_postgres_url(environ.get("DATABASE_URL") or ""):
        chosen = environ["DATABASE_URL"]
    chosen = chosen or values.get("RUSTIZ_DATABASE") or ""
    if not chosen and is_postgres_url(values.get("DATABASE_URL") or ""):
        chosen = values["DATABASE_URL"]
    if is_postgres_url(chosen):
        return chosen
    if "://" in chosen:
        raise UserError(f"RUSTIZ_DATABASE={chosen.split('://')[0]}://...: rustiz stores in a SQLite file (a path) "
                        "or in PostgreSQL (postgresql://user:password@host:port/database)")
    return resolve("RUSTIZ_DATABASE", chosen or "rustiz.db")


class SmtpServer(NamedTuple):
    """RUSTIZ_SMTP_URL read: smtps:// speaks TLS from the start; smtp:// upgrades with STARTTLS when the server
    offers it, and must when a user and password are given (they never cross the network in clear)."""
    tls: bool  # smtps://
    host: str
    port: int
    user: str  # "" : no login
    password: str

    def redacted(self) -> str:
        from urllib.parse import quote
        who = f"{quote(self.user, safe='')}:***@" if self.user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'smtps' if self.tls else 'smtp'}://{who}{host}:{self.port}"


_SMTP_URL = re.compile(r"(?i)(smtps?)://(?:([^:@/\s]*)(?::([^@/\s]*))?@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)"
                       r"(?::(\d{1,5}))?/?")


def smtp_setting(raw: str) -> Optional[SmtpServer]:
    """RUSTIZ_SMTP_URL: smtp://user:pass@host:587 (STARTTLS), smtps://user:pass@host:465, smtp://host:25 (no
    login); the user and password percent-encoded. "" : mail is off. Raises UserError naming the setting."""
    raw = raw.strip()
    if not raw:
        return None
    shown = re.sub(r"(//[^/:@]*):[^/@]*@", r"\1:***@", raw)[:200]
    match = _SMTP_URL.fullmatch(raw)
    if not match:
        raise UserError(f"RUSTIZ_SMTP_URL={shown!r}: use smtp://user:password@host:587 (STARTTLS), "
                        "smtps://user:password@host:465 (TLS) or smtp://host:25 (no login); percent-encode "
                        "characters such as @ : / in the user and password")
    scheme, user, password, host, port = match.groups()
    tls = scheme.lower() == "smtps"
    number = int(port) if port else (465 if tls else 587 if user else 25)
    if not 1 <= number <= 65535:
        raise UserError(f"RUSTIZ_SMTP_URL={shown!r}: the port {number} is out of range: use 1..65535")
    from urllib.parse import unquote  # (only when mail is configured)
    user, password = unquote(user or ""), unquote(password or "")
    if password and not user:
        raise UserError(f"RUSTIZ_SMTP_URL={shown!r}: a password needs a user (smtp://user:password@host)")
    return SmtpServer(tls, host.strip("[]"), number, user, password)


def mail_from_setting(raw: str, frontend_url: str) -> str:
    """RUSTIZ_MAIL_FROM: "rustiz@example.com" or "Rustiz <rustiz@example.com>"; by default rustiz@ the host of
    FRONTEND_URL (rustiz@localhost without one)."""
    raw = raw.strip()
    if not raw:
        host = re.sub(r"^[a-z]+://|[:/].*$", "", frontend_url.lower()) or "localhost"
        return f"rustiz@{host}"
    if re.search(r"[\r\n]", raw) or not re.fullmatch(r"[^<>@]*<[^<>@\s]+@[^<>@\s]+>|[^<>@\s]+@[^<>@\s]+", raw):
        raise UserError(f"RUSTIZ_MAIL_FROM={raw[:200]!r}: use an address (rustiz@example.com) or a name and an "
                        "address (Rustiz <rustiz@example.com>)")
    return raw


def _local_storage(values: dict) -> bool:
    """Whether RUSTIZ_STORAGE names a folder (as RUSTIZ_UPLOADS does); unset, or a bucket, is not."""
    raw = values.get("RUSTIZ_STORAGE", "")
    return bool(raw) and "://" not in raw


def _bucket_storage(values: dict) -> Any:
    """The bucket RUSTIZ_STORAGE names, its settings checked (object_storage, loaded only for a bucket)."""
    if not values["RUSTIZ_STORAGE"].lower().startswith("s3://"):
        raise UserError(f"RUSTIZ_STORAGE={values['RUSTIZ_STORAGE']!r}: use s3://bucket/prefix for an S3-compatible "
                        "bucket, or a folder for uploads on this machine")
    from rustiz_features.object_storage import storage_from_settings
    return storage_from_settings(values)


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

class PostgresOnly(NamedTuple):
    """A migration step that PostgreSQL alone runs (SQLite counts it and skips it), statement by statement as
    written: a function's body has semicolons of its own, so these are not split as the other steps are."""
    statements: tuple


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
    # OAuth: a connect flow between the consent page and its callback (single-use, any worker may finish
    # it); the apps rustiz registered itself (Mastodon, per instance); and the lease that lets one worker
    # at a time refresh a channel's tokens.
    """
    CREATE TABLE oauth_flow (
        state TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        provider TEXT NOT NULL,
        code_verifier TEXT,
        refresh_channel_id TEXT,
        details TEXT NOT NULL DEFAULT '{}',
        expires_at REAL NOT NULL
    );
    CREATE TABLE oauth_app (
        provider TEXT NOT NULL,
        origin TEXT NOT NULL,
        client_id TEXT NOT NULL,
        client_secret TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (provider, origin)
    );
    ALTER TABLE integration ADD COLUMN refresh_lease_owner TEXT;
    ALTER TABLE integration ADD COLUMN refresh_lease_until REAL;
    """,
    # Outgoing webhook deliveries as rows, so that a crash or a restart loses none and several processes
    # share them: queued with the post's outcome, claimed under a lease, retried until delivered or given up.
    # The id is the delivery id the receiver sees (X-Rustiz-Delivery), the same on every try.
    """
    CREATE TABLE webhook_delivery (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        webhook_id TEXT NOT NULL REFERENCES webhook(id),
        event TEXT NOT NULL,
        payload TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at REAL NOT NULL,
        lease_owner TEXT,
        lease_until REAL,
        delivered_at TEXT,
        gave_up_at TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX webhook_delivery_pending ON webhook_delivery(next_attempt_at)
        WHERE delivered_at IS NULL AND gave_up_at IS NULL;
    CREATE INDEX webhook_delivery_webhook ON webhook_delivery(webhook_id);
    """,
    # PostgreSQL: each scheduler's sign of life (SQLite keeps it in the scheduler's lock file), so that one
    # starting after all were down can tell a missed post when rustiz last ran.
    """
    CREATE TABLE scheduler_heartbeat (owner TEXT PRIMARY KEY, alive_at REAL NOT NULL);
    """,
    # Named API keys with a scope (full, drafts, read) beside the organization's own key, which stays in
    # organization.api_key_hash (full; `rustiz key rotate` and Postiz clients keep using it) and gets its
    # creation and last-use times here. Posts made with a drafts key wait for a person's review: `review`
    # is 'review' or 'rejected' (NULL: no review pending), with the reviewer's reason.
    """
    CREATE TABLE api_key (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        name TEXT NOT NULL,
        scope TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        last_used_at TEXT,
        UNIQUE (organization_id, name)
    );
    ALTER TABLE organization ADD COLUMN api_key_created_at TEXT;
    ALTER TABLE organization ADD COLUMN api_key_last_used_at TEXT;
    ALTER TABLE post ADD COLUMN review TEXT;
    ALTER TABLE post ADD COLUMN review_reason TEXT;
    CREATE INDEX post_review ON post(organization_id, review) WHERE review IS NOT NULL;
    """,
    # Alerts: the channel an organization is told of trouble on, and how late a post may be before it is told
    # (NULL: RUSTIZ_ALERT_LATE_MINUTES); one alert row per event, unique, so that each is announced once,
    # whichever process finds it and however often (see rustiz_features/alerts.py). No foreign key to the
    # channel: `db copy` copies organizations before channels.
    """
    ALTER TABLE organization ADD COLUMN alert_channel_id TEXT;
    ALTER TABLE organization ADD COLUMN alert_late_minutes INTEGER;
    CREATE TABLE alert (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        kind TEXT NOT NULL,
        subject_id TEXT NOT NULL,
        channel_id TEXT NOT NULL,
        text TEXT NOT NULL,
        link TEXT,
        status TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until REAL,
        attempted_at REAL,
        error TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (organization_id, kind, subject_id)
    );
    CREATE INDEX alert_pending ON alert(created_at) WHERE status = 'pending';
    CREATE INDEX alert_recent ON alert(organization_id, attempted_at);
    """,
    # PostgreSQL: whoever changes channels or their groups (any rustiz process, a psql shell) tells every
    # process, whose listings of channels are remembered until then (Store.channels_version). A statement
    # trigger: once per statement, and the notices of one transaction are folded into one at its commit.
    # (SQLite needs no trigger: each reader asks PRAGMA data_version whether another connection wrote.)
    PostgresOnly((
        "CREATE FUNCTION rustiz_channels_changed() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_notify('rustiz_channels', ''); RETURN NULL; END $$",
        "CREATE TRIGGER integration_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON integration "
        "FOR EACH STATEMENT EXECUTE FUNCTION rustiz_channels_changed()",
        "CREATE TRIGGER customer_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON customer "
        "FOR EACH STATEMENT EXECUTE FUNCTION rustiz_channels_changed()",
    )),
    # The post a notification is about, for the web app's link to its page (GET /notifications: postId).
    "ALTER TABLE notification ADD COLUMN post_id TEXT;",
    # The library of issue 24: tags unique per organization whatever their case (a database from before may
    # hold live tags whose names differ only in case: each such name keeps its row of the smallest id, which
    # takes over the others' posts; the others are soft-deleted, dated at their last change), signatures (text
    # added to new posts, at most one of them automatically) and sets (a saved choice of channels with their
    # settings).
    """
    INSERT INTO tag_post (post_id, tag_id)
        SELECT DISTINCT tp.post_id, (SELECT MIN(k.id) FROM tag k WHERE k.organization_id = d.organization_id
                                     AND lower(k.name) = lower(d.name) AND k.deleted_at IS NULL)
        FROM tag_post tp JOIN tag d ON d.id = tp.tag_id
        WHERE d.deleted_at IS NULL AND d.id <> (SELECT MIN(k.id) FROM tag k WHERE k.organization_id = d.organization_id
                                                AND lower(k.name) = lower(d.name) AND k.deleted_at IS NULL)
        AND NOT EXISTS (SELECT 1 FROM tag_post x WHERE x.post_id = tp.post_id AND x.tag_id = (
            SELECT MIN(k.id) FROM tag k WHERE k.organization_id = d.organization_id AND lower(k.name) = lower(d.name)
            AND k.deleted_at IS NULL));
    DELETE FROM tag_post WHERE tag_id IN (
        SELECT d.id FROM tag d WHERE d.deleted_at IS NULL AND d.id <> (
            SELECT MIN(k.id) FROM tag k WHERE k.organization_id = d.organization_id AND lower(k.name) = lower(d.name)
            AND k.deleted_at IS NULL));
    UPDATE tag SET deleted_at = updated_at WHERE deleted_at IS NULL AND id <> (
        SELECT MIN(k.id) FROM tag k WHERE k.organization_id = tag.organization_id AND lower(k.name) = lower(tag.name)
        AND k.deleted_at IS NULL);
    CREATE UNIQUE INDEX tag_organization_name ON tag(organization_id, lower(name)) WHERE deleted_at IS NULL;
    CREATE TABLE signature (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        content TEXT NOT NULL,
        auto_add INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX signature_organization ON signature(organization_id, deleted_at);
    CREATE UNIQUE INDEX signature_auto_add ON signature(organization_id) WHERE auto_add = 1 AND deleted_at IS NULL;
    CREATE TABLE post_set (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        name TEXT NOT NULL,
        channels TEXT NOT NULL DEFAULT '[]',
        settings TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX post_set_organization ON post_set(organization_id, deleted_at);
    """,
    # The threads one POST /posts made on several channels share a multi-channel group (each keeps its own
    # `post_group`, its thread on its channel): the web app shows them as one post, a duplicate copies them all.
    """
    ALTER TABLE post ADD COLUMN multi_channel_group TEXT;
    CREATE INDEX post_multi_channel_group ON post(organization_id, multi_channel_group);
    """,
    # The media library: a picture's size in pixels, read from its header when it is uploaded (NULL: a video,
    # a header rustiz cannot read, or an upload made before this step).
    """
    ALTER TABLE media ADD COLUMN width INTEGER;
    ALTER TABLE media ADD COLUMN height INTEGER;
    """,
    # Teams (issue 25): a person (web_user, now with a name) is a member of one or more organizations with one
    # role each; web_user.organization_id stays the organization the person first joined. Everyone who could
    # sign in before could do everything: each becomes an admin of their organization. A post records the
    # person who made it (an author edits only their own drafts).
    """
    ALTER TABLE web_user ADD COLUMN name TEXT;
    CREATE TABLE membership (
        user_id TEXT NOT NULL REFERENCES web_user(id),
        organization_id TEXT NOT NULL REFERENCES organization(id),
        role TEXT NOT NULL CHECK (role IN ('admin', 'editor', 'author', 'viewer')),
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, organization_id)
    );
    CREATE INDEX membership_organization ON membership(organization_id);
    INSERT INTO membership (user_id, organization_id, role, created_at)
        SELECT id, organization_id, 'admin', created_at FROM web_user;
    ALTER TABLE post ADD COLUMN created_by TEXT;
    """,
    # E-mail (issue 25, the mail part): a durable outbox, one row per message (unique by its dedupe key, so the
    # same event never queues a second mail), claimed under a lease by one process at a time, sent with its own
    # Message-ID on every try, and marked sent or given up; and each person's e-mail preferences per
    # organization (NULL: the default of the person's role there).
    """
    CREATE TABLE mail_outbox (
        id TEXT PRIMARY KEY,
        organization_id TEXT,
        kind TEXT NOT NULL,
        recipient TEXT NOT NULL,
        subject TEXT NOT NULL,
        text_body TEXT NOT NULL,
        html_body TEXT NOT NULL,
        dedupe_key TEXT NOT NULL UNIQUE,
        message_id TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at REAL NOT NULL,
        lease_owner TEXT,
        lease_until REAL,
        sent_at TEXT,
        gave_up_at TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX mail_outbox_pending ON mail_outbox(next_attempt_at) WHERE sent_at IS NULL AND gave_up_at IS NULL;
    CREATE TABLE mail_preference (
        user_id TEXT NOT NULL,
        organization_id TEXT NOT NULL,
        failed INTEGER,
        reconnect INTEGER,
        review INTEGER,
        digest INTEGER,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user_id, organization_id)
    );
    """,
    # The audit log (issue 25, part "audit"): one row per change made by a person, a key, an agent (MCP) or a
    # client, who it was (names stored as they were: a removed person's entries still say who), what, on
    # what, when and from which address; forgotten after RUSTIZ_AUDIT_DAYS (App.housekeeping). No foreign key
    # to the organization: `db copy` and a deleted organization's entries need none.
    """
    CREATE TABLE audit_entry (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL,
        at TEXT NOT NULL,
        actor_type TEXT NOT NULL,
        actor_id TEXT,
        actor_name TEXT,
        actor_email TEXT,
        action TEXT NOT NULL,
        subject_type TEXT,
        subject_id TEXT,
        address TEXT
    );
    CREATE INDEX audit_entry_organization ON audit_entry(organization_id, at);
    CREATE INDEX audit_entry_at ON audit_entry(at);
    """,
    # Single sign-on (issue 25, sso): a sign-in waiting for the identity provider, between GET /auth/oidc/start
    # and its callback (single use, minutes long, bound to the browser that started it; any worker may finish it).
    """
    CREATE TABLE oidc_flow (
        state TEXT PRIMARY KEY,
        browser_hash TEXT NOT NULL,
        nonce TEXT NOT NULL,
        code_verifier TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    """,
    # Members (issue 25, the members part): invites to join an organization with a role (single use, 7 days)
    # and password reset links (single use, 1 hour); only a hash of each link's token is stored.
    """
    CREATE TABLE invite (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        email TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('admin', 'editor', 'author', 'viewer')),
        token_hash TEXT NOT NULL UNIQUE,
        expires_at TEXT NOT NULL,
        invited_by TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (organization_id, email)
    );
    CREATE TABLE password_reset (
        token_hash TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES web_user(id),
        expires_at TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX password_reset_user ON password_reset(user_id);
    """,
    # Client review links and comments (issue 25, review-links): a link (its token stored hashed) shows one
    # post group (review_group: the post's multi-channel group, or its own group when it has none) to a client
    # with no account; comments on a post group come from the team (a person, a key, MCP) and from clients.
    """
    CREATE TABLE preview_link (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        token_hash TEXT NOT NULL UNIQUE,
        form_token TEXT NOT NULL,
        review_group TEXT NOT NULL,
        allow_approval INTEGER NOT NULL DEFAULT 0,
        created_by TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        revoked_at TEXT
    );
    CREATE INDEX preview_link_group ON preview_link(organization_id, review_group);
    CREATE TABLE post_comment (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        review_group TEXT NOT NULL,
        author_type TEXT NOT NULL CHECK (author_type IN ('user', 'key', 'mcp', 'client')),
        author_id TEXT,
        author_name TEXT NOT NULL,
        content TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT 'comment' CHECK (kind IN ('comment', 'approved', 'changes')),
        created_at TEXT NOT NULL,
        deleted_at TEXT
    );
    CREATE INDEX post_comment_group ON post_comment(organization_id, review_group, created_at);
    """,
    # Short links (issue 26, shortlinks): the organization's preference; the posts whose links are to be
    # shortened when published; each (post, original link) once, with its code (the built-in /s/<code>) or
    # the external shortener's link; clicks per link and day, link-preview fetchers and bots apart.
    """
    ALTER TABLE organization ADD COLUMN short_link TEXT NOT NULL DEFAULT 'ask';
    CREATE TABLE short_link_wanted (
        post_id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id)
    );
    CREATE TABLE short_link (
        code TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        post_id TEXT NOT NULL,
        url TEXT NOT NULL,
        external TEXT,
        place INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (post_id, url)
    );
    CREATE TABLE short_link_click (
        code TEXT NOT NULL,
        day TEXT NOT NULL,
        clicks INTEGER NOT NULL DEFAULT 0,
        bot_clicks INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (code, day)
    );
    """,
    # Analytics over time (issue 26, analytics): a channel's figures once a day and a published post's at about
    # 1 h, 24 h and 7 days (one row per channel+metric+day, per post+age+metric), and the claims that make each
    # snapshot taken once whichever process gets there first (rustiz_features/analytics_snapshots.py).
    """
    CREATE TABLE analytics_day (
        integration_id TEXT NOT NULL,
        metric TEXT NOT NULL,
        day TEXT NOT NULL,
        total REAL NOT NULL,
        taken_at TEXT NOT NULL,
        PRIMARY KEY (integration_id, metric, day)
    );
    CREATE TABLE analytics_post (
        post_id TEXT NOT NULL,
        age TEXT NOT NULL,
        metric TEXT NOT NULL,
        total REAL NOT NULL,
        taken_at TEXT NOT NULL,
        PRIMARY KEY (post_id, age, metric)
    );
    CREATE TABLE analytics_claim (
        subject TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        lease_until REAL NOT NULL,
        done INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    );
    CREATE INDEX analytics_claim_created ON analytics_claim(created_at);
    """,
    # Repeats with an end, and webhook events (issue 26, repeats): a repeating post's last day or instant
    # (repeat_until) or number of times (repeat_count), and the events each webhook is sent (JSON list; the
    # webhooks made before keep the two events they had).
    """
    ALTER TABLE post ADD COLUMN repeat_until TEXT;
    ALTER TABLE post ADD COLUMN repeat_count INTEGER;
    ALTER TABLE webhook ADD COLUMN events TEXT NOT NULL DEFAULT '["post.published","post.failed"]';
    """,
    # The queue (issue 26, queue): a channel's weekly schedule and queue switches, the organization's default
    # schedule, the slot each queued root post holds (one post per slot of a channel: the unique constraint
    # that keeps processes adding at once apart), and evergreen posts (source_id: the post an evergreen copy
    # repeats; NULL for a post marked evergreen).
    """
    CREATE TABLE queue_channel (
        integration_id TEXT PRIMARY KEY REFERENCES integration(id),
        schedule TEXT,
        paused INTEGER NOT NULL DEFAULT 0,
        reflow INTEGER NOT NULL DEFAULT 1,
        evergreen INTEGER NOT NULL DEFAULT 0,
        evergreen_cooldown_days INTEGER NOT NULL DEFAULT 30
    );
    CREATE TABLE queue_default (
        organization_id TEXT PRIMARY KEY REFERENCES organization(id),
        schedule TEXT NOT NULL,
        set_at TEXT NOT NULL
    );
    CREATE TABLE queue_slot (
        post_id TEXT PRIMARY KEY REFERENCES post(id),
        integration_id TEXT NOT NULL REFERENCES integration(id),
        slot TEXT NOT NULL,
        UNIQUE (integration_id, slot)
    );
    CREATE TABLE evergreen_post (
        post_id TEXT PRIMARY KEY REFERENCES post(id),
        source_id TEXT REFERENCES post(id)
    );
    CREATE INDEX evergreen_post_source ON evergreen_post(source_id);
    """,
    # RSS/Atom autopost (issue 26, autopost): an organization's feeds (what to post where, how often, the last
    # fetch, a lease so that one process fetches a feed at a time) and every item seen in each, unique by
    # (feed, item key), recorded in the transaction of the posts it became (see rustiz_features/autopost.py).
    """
    CREATE TABLE autopost_feed (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        url TEXT NOT NULL,
        integrations TEXT NOT NULL,
        template TEXT NOT NULL,
        mode TEXT NOT NULL,
        include_image INTEGER NOT NULL DEFAULT 0,
        interval_minutes INTEGER NOT NULL DEFAULT 60,
        paused INTEGER NOT NULL DEFAULT 0,
        paused_reason TEXT,
        etag TEXT,
        last_modified TEXT,
        primed INTEGER NOT NULL DEFAULT 0,
        next_fetch_at REAL NOT NULL,
        last_fetch_at TEXT,
        last_result TEXT,
        last_error TEXT,
        failures INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until REAL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX autopost_feed_organization ON autopost_feed(organization_id, created_at);
    CREATE INDEX autopost_feed_due ON autopost_feed(next_fetch_at) WHERE paused = 0;
    CREATE TABLE autopost_item (
        feed_id TEXT NOT NULL,
        item_key TEXT NOT NULL,
        title TEXT NOT NULL,
        link TEXT NOT NULL,
        outcome TEXT NOT NULL,
        reason TEXT,
        post_id TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (feed_id, item_key)
    );
    CREATE INDEX autopost_item_recent ON autopost_item(feed_id, created_at);
    """,
    # rustiz as an OAuth 2.1 authorization server for MCP clients (issue 27, storage/oauth_server.py): clients
    # registered dynamically (an unused one expires after 24 h), authorization codes and tokens, stored hashed;
    # a refresh chain groups the tokens one grant gave, so that a reused refresh token revokes them all.
    """
    CREATE TABLE oauth_client (
        client_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        redirect_uris TEXT NOT NULL,
        source TEXT NOT NULL,
        created_at REAL NOT NULL,
        last_used_at REAL,
        used INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE oauth_code (
        code_hash TEXT PRIMARY KEY,
        client_id TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        resource TEXT NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        user_id TEXT,
        scope TEXT NOT NULL,
        expires_at REAL NOT NULL,
        used INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE oauth_token (
        token_hash TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        chain_id TEXT NOT NULL,
        client_id TEXT NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        user_id TEXT,
        scope TEXT NOT NULL,
        resource TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        revoked_at REAL,
        used_at REAL
    );
    CREATE INDEX oauth_token_chain ON oauth_token(chain_id);
    CREATE INDEX oauth_token_client ON oauth_token(client_id);
    """,
    # Issue 28, chat: Telegram's operator bot (rustiz_features/telegram_bot.py). The /connect codes the web app
    # shows (their SHA-256 only; single use, expiring, each an organization's), and the one watcher of the
    # bot's updates: the lease of the process that long-polls getUpdates, and the offset it reached.
    """
    CREATE TABLE telegram_connect_code (
        code_hash TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        expires_at REAL NOT NULL,
        used INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE telegram_bot_watch (
        id INTEGER PRIMARY KEY,
        next_offset BIGINT NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until REAL
    );
    """,
    # Issue 28, delete on the platform: a channel whose platform failed for a passing reason (a 5xx, a rate
    # limit, no answer in time) is tried again later (rustiz_features/platform_delete.py); the post is gone from
    # rustiz, so the row keeps what is left there (its parts as JSON) and the notification's words.
    """
    CREATE TABLE platform_delete_retry (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organization(id),
        channel_id TEXT NOT NULL,
        post_id TEXT NOT NULL,
        parts TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 1,
        next_attempt_at REAL NOT NULL,
        last_reason TEXT NOT NULL,
        lease_owner TEXT,
        lease_until REAL
    );
    CREATE INDEX platform_delete_retry_due ON platform_delete_retry(next_attempt_at);
    """,
)




class KeyIdentity(NamedTuple):
    """An API key as the Guard knows it: its organization, its scope, its api_key row (None: the org's own key)."""
    organization: str
    scope: str
    key_id: Optional[str]


class RateDecision(NamedTuple):
    """The outcome of counting one request against a fixed window."""
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int  # until the window ends
    retry_after: int  # seconds until a refused caller may try again (0 when allowed)


class RateWindow(NamedTuple):
    """A fixed-window counter's row: when its window began, its hits in it, and until when it is blocked."""
    start: float
    hits: int
    blocked_until: Optional[float]


def count_in_window(window: Optional[RateWindow], now: float, limit: int, window_seconds: int,
                    block_seconds: Optional[int]) -> tuple:
    """One more hit on a fixed-window counter: (the window after it, RateDecision). The first hit opens a
    window; a hit over the limit blocks the key for `block_seconds` from that moment (Postiz's throttler) or,
    when None, until the window ends; a blocked key's hits are refused and not counted; afterwards counting
    restarts at 1."""
    if window is not None and window.blocked_until is not None and now < window.blocked_until:
        wait = math.ceil(window.blocked_until - now)
        return window, RateDecision(False, limit, 0, wait, wait)
    if window is None or now >= window.start + window_seconds or window.blocked_until is not None:
        start, hits = now, 1
    else:
        start, hits = window.start, window.hits + 1
    blocked_until = None
    if hits > limit:
        blocked_until = now + block_seconds if block_seconds else start + window_seconds
    reset = max(0, math.ceil(start + window_seconds - now))
    if blocked_until is not None:
        decision = RateDecision(False, limit, 0, reset, max(1, math.ceil(blocked_until - now)))
    else:
        decision = RateDecision(True, limit, max(0, limit - hits), reset, 0)
    return RateWindow(start, hits, blocked_until), decision


def increment_counter(memory: Any, offset: int) -> None:
    """Add one to the 8-byte little-endian counter at `offset` of `memory` (an mmap or a bytearray), wrapping."""
    counter = int.from_bytes(memory[offset:offset + 8], "little")
    memory[offset:offset + 8] = ((counter + 1) % 2**64).to_bytes(8, "little")


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
# PostgreSQL: the advisory lock every write transaction takes (see Store.writing), and so also the one that
# makes processes started together run the migrations once (the first migrates; the others then find it done).
WRITE_LOCK_KEY = 0x72757374


class Store:
    """The storage engine: the connection (one per process; WAL lets workers share the file), transactions,
    migrations, the counters that tell other processes of changes, and the few queries the request path and
    `init`/`serve` need (keys, sessions, the organization, the integrations listing, rate limits). Each
    feature's own SQL is in rustiz_features/storage/, one module per area (posts, review, scheduling,
    deliveries, alerts, notifications, idempotency, channels, oauth, keys, organizations, web_users,
    media_library, operations), as functions that take this Store and use `read` and `writing` alone.

    Reads go through `read`, writes through `writing()`. In the server, reads made in one turn of
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
        self.remote = is_postgres_url(path)  # PostgreSQL, shared by processes on several machines
        self._threads: Any = None
        self._schema_tables: Optional[list] = None  # (table_names: the schema is fixed once migrated)
        # SQLite: the write transactions this connection committed (PRAGMA data_version counts only the other
        # connections'), and the version of the channels the current turn's shared read sees (channels_version).
        self._writes_committed = 0
        self._turn_version: Optional[tuple] = None
        self.thread_count = 8  # (PostgreSQL: RUSTIZ_DATABASE_THREADS, set by the worker)
        if self.remote:
            try:
                self._open_postgres(path)
            except DatabaseUnwritable as error:
                raise UserError(str(error)) from None
            return
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

    def for_a_thread(self) -> "Store":
        """A Store that a thread of its own may use while the event loop uses this one (an import): on SQLite
        the same database on a connection of its own (this one's reads are shared per loop turn); on
        PostgreSQL this Store, whose queries already run on threads. Not a new Store(path): that opens and
        closes the database file, and closing any descriptor of it drops this process's SQLite locks."""
        if self.remote:
            return self
        twin = object.__new__(Store)
        twin.__dict__.update(self.__dict__)
        twin._schedule_end_of_turn, twin._read_open, twin.on_posts_changed = None, False, None
        twin.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, cached_statements=256)
        for pragma in ("busy_timeout = 5000", "synchronous = NORMAL", "foreign_keys = ON"):
            twin.db.execute(f"PRAGMA {pragma}")
        return twin

    # PostgreSQL: the memory in which the workers one `serve` forks share their counters (made before the
    # fork), so that a key revoked through one worker is forgotten by its siblings at once, not only once the
    # notice reaches each of them. Bytes 0-7 count changes of keys, 8-15 of posts; from byte 16, one 8-byte
    # slot per worker counts changes of channels (see channels_version): each process moves only its own
    # slot, so no increment of another process can overwrite its own, and any slot moving is a change.
    shared_generations: Optional[mmap.mmap] = None
    generation_slot = 0  # this worker's slot (its index among the workers)

    def _open_postgres(self, url: str) -> None:
        """PostgreSQL through rustiz_features.postgres: the same SQL, translated; the shared counters become
        NOTIFY messages (every process on every machine hears them) and the SQLite file lock is not used."""
        import threading
        from rustiz_features.postgres import Database
        self.db = Database(url)
        self.listener: Any = None
        # the two counters of _map_shared_counters, moved by notices (and shared by the workers of one serve)
        self._generations = Store.shared_generations if Store.shared_generations is not None else bytearray(24)
        self._channels_slot = 16 + 8 * Store.generation_slot
        self._slot_lock = threading.Lock()  # (the loop, the Store's threads and the listener all move the slot)
        self._migrate()

    @property
    def threads(self) -> Any:
        """PostgreSQL: the bounded pool of threads whose queries may wait on the network (see `off_loop`)."""
        if self._threads is None:
            import concurrent.futures
            self._threads = concurrent.futures.ThreadPoolExecutor(self.thread_count, thread_name_prefix="rustiz-db")
        return self._threads

    async def off_loop(self, function: Callable, *arguments: Any) -> Any:
        """`function(*arguments)` (a Store method, or code that calls some) for a coroutine on an event loop: on
        PostgreSQL on the Store's threads, so that the loop never waits on the network; on SQLite right here
        (a read of a local file costs microseconds, less than a thread's hand-over)."""
        if not self.remote:
            return function(*arguments)
        return await asyncio.get_running_loop().run_in_executor(self.threads, function, *arguments)

    def listen_for_changes(self) -> None:
        """PostgreSQL: hear what every process changes (keys, posts) from now on (see `_noticed`)."""
        from rustiz_features.postgres import Listener
        self.listener = Listener(self.db.url, self._noticed)

    def _acknowledging_listener(self) -> Any:
        """PostgreSQL: the listener that hears the acknowledgements of this process's notices: the server's, or
        in a process that does not listen yet (the CLI changing keys or channels), one started now, so that the
        servers have heard the change before the command ends."""
        if self.listener is None:
            self.listen_for_changes()
        return self.listener

    @property
    def hears_changes(self) -> bool:
        """PostgreSQL: whether this process hears every change now (its listener is connected and listening);
        while it does not, what is remembered from the database must be read again."""
        return self.listener is not None and self.listener.listening

    def _noticed(self, channel: str) -> None:
        """(In the listener's thread) another process, or this one, changed keys, posts or channels."""
        if channel == "rustiz_channels":
            self._channels_changed_here()
            return
        offset = 0 if channel == "rustiz_credentials" else 8
        increment_counter(self._generations, offset)
        if offset and self.on_posts_changed is not None:
            self.on_posts_changed()  # (the scheduler's wake-up, safe to call from this thread)

    @staticmethod
    def _keep_private(path: str) -> None:
        """The database holds channel credentials: only its owner may read it, nor its -wal and -shm files
        (SQLite makes new ones with the database's mode; ones left by an older rustiz may be 0644)."""
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))  # created 0600 before SQLite writes a byte
        for name in (path, path + "-wal", path + "-shm"):
            keep_private(name)

    def close(self) -> None:
        if self.remote:
            if self.listener is not None:
                self.listener.stop()
            if self._threads is not None:
                self._threads.shutdown(wait=False)
            self.db.close()
            return
        self._end_shared_read()
        self.db.close()
        self._shared_counters.close()

    def share_reads_per_loop_turn(self, call_soon: Callable[[Callable[[], None]], Any]) -> None:
        """`call_soon(callback)` must run callback after the current turn of the event loop. (SQLite only: on
        PostgreSQL a read is one statement, and requests run on the Store's threads, not in loop turns.)"""
        if not self.remote:
            self._schedule_end_of_turn = call_soon

    def read(self, sql: str, parameters: tuple = ()) -> sqlite3.Cursor:
        if not self._read_open and self._schedule_end_of_turn is not None:
            self.db.execute("BEGIN")
            self._read_open = True
            self._schedule_end_of_turn(self._end_shared_read)
        return self.db.execute(sql, parameters)

    def _end_shared_read(self) -> None:
        if self._read_open:
            self._read_open = False
            self._turn_version = None
            self.db.execute("COMMIT")

    def channels_version(self) -> Any:
        """A value that changes whenever the tables integration and customer may have changed, for remembering
        what was read from them: an answer read after this call (in the same loop turn, on SQLite) may be
        kept under it. None: nothing may be remembered now (no shared reads; PostgreSQL: not listening).

        SQLite: PRAGMA data_version (which moves when another connection commits: a worker, the CLI, the
        sqlite3 shell) with this connection's own commits, asked once per turn inside the turn's read
        transaction, where it is the version of that transaction's snapshot: a value is never kept under a
        version newer than what it was read from. PostgreSQL: this process's slots of `_generations`, moved
        by the triggers' notices (every writer) and by each commit of this process and its sibling workers
        (read-your-writes before the notice arrives)."""
        if self.remote:
            return bytes(self._generations[16:]) if self.hears_changes else None
        if self._schedule_end_of_turn is None:
            return None
        if self._turn_version is None:
            data_version = self.read("PRAGMA data_version").fetchone()[0]  # (opens the turn's read if not yet)
            self._turn_version = (data_version, self._writes_committed)
        return self._turn_version

    def _channels_changed_here(self) -> None:
        with self._slot_lock:
            increment_counter(self._generations, self._channels_slot)

    @contextlib.contextmanager
    def writing(self, shared: bool = False, no_channels: bool = False):
        """One write transaction, committed when the block ends (rolled back if it raises). Raises
        DatabaseUnwritable when the file cannot be written, and remembers why in `write_problem`.

        Writers take turns, one at a time, as SQLite makes them (on PostgreSQL through an advisory lock), so
        a read-then-write inside the block sees no other writer. `shared` (PostgreSQL): this transaction
        only locks the rows it changes (the scheduler's claims), and runs beside other shared ones.
        `no_channels`: it writes no channel or customer row, so what was read from them stays remembered (the
        request path's own writes: a rate-limit count, a key's last use)."""
        self._end_shared_read()
        announced = None
        try:
            if self.remote:  # (BEGIN and the lock in one round trip: two statements, no parameters)
                self.db.execute(f"BEGIN; SELECT pg_advisory_xact_lock{'_shared' if shared else ''}({WRITE_LOCK_KEY})")
            else:
                self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
                if self.remote and self.db.changes_channels:
                    announced = self._acknowledging_listener().announce(self.db, "rustiz_channels")
                self.db.execute("COMMIT")
                if self.remote:
                    if not no_channels:  # (whatever it changed: a commit is rarer than a read)
                        self._channels_changed_here()
                    if announced is not None:  # the others know before this process answers
                        self.listener.heard_by_all(announced)
                elif not no_channels:
                    self._writes_committed += 1
            except BaseException:
                if announced is not None:
                    self.listener.forget(announced)
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
        if self.remote:
            return self._postgres_problem()
        now = time.monotonic()
        if self.write_problem is not None and now >= self._next_write_probe \
                and now - self._write_failed_at >= WRITE_PROBE_SECONDS:
            self._next_write_probe = now + WRITE_PROBE_SECONDS
            if os.statvfs(os.path.dirname(os.path.abspath(self.path))).f_bavail > 0:
                with contextlib.suppress(sqlite3.OperationalError), self.writing() as db:
                    # (a new value: SQLite leaves a page alone when an UPDATE writes back the same bytes)
                    db.execute("INSERT OR REPLACE INTO write_probe (id, written_at) VALUES (1, ?)", (time.time(),))
        return self.write_problem

    def _postgres_problem(self) -> Optional[str]:
        """PostgreSQL: why the database cannot be used (unreachable, read-only), or None; asked by /health."""
        return self.write_probe_problem()

    def write_probe_problem(self) -> Optional[str]:
        """Why a small write fails now, or None when it succeeds (rustiz doctor; /health on PostgreSQL)."""
        try:
            with self.writing() as db:
                db.execute("INSERT OR REPLACE INTO write_probe (id, written_at) VALUES (1, ?)", (time.time(),))
        except sqlite3.DatabaseError as error:
            return str(error)
        return None

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
        if self.remote:  # every process that listens, this one too, counts it when the notice arrives
            channel, announced = ("rustiz_credentials" if offset == 0 else "rustiz_posts"), None
            with contextlib.suppress(sqlite3.DatabaseError):  # (a lost notice costs a wake-up a second later)
                if offset == 0:  # keys: every process acknowledges it
                    announced = self._acknowledging_listener().announce(self.db, channel)
                if announced is None:
                    self.db.execute(f"NOTIFY {channel}")
            if offset == 0:  # keys: this process and its sibling workers forget theirs now, before the answer,
                self._noticed(channel)  # and the other processes have heard it too (or a tenth of a second passed)
                if announced is not None:
                    self.listener.heard_by_all(announced)
            return
        increment_counter(self._shared_counters, offset)

    def credentials_generation(self) -> bytes:
        return bytes(self._generations[:8]) if self.remote else self._shared_counters[:8]

    def credentials_changed(self) -> None:
        self._bump(0)

    def posts_generation(self) -> bytes:
        return bytes(self._generations[8:16]) if self.remote else self._shared_counters[8:16]

    def posts_changed(self) -> None:
        """Tell the scheduler: at once in this process (on_posts_changed), within a second in the others.
        (PostgreSQL: every scheduler, this process's too, hears it as a notice within milliseconds.)"""
        self._bump(8)
        if self.on_posts_changed is not None and not self.remote:
            self.on_posts_changed()

    def _migrate(self) -> None:
        with self.writing() as db:
            run = db.execute_schema if self.remote else db.execute
            run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            current = row[0] if row else 0
            if current > len(MIGRATIONS):
                raise UserError(
                    f"database {self.path} has schema version {current}, but this rustiz {VERSION} knows "
                    f"versions up to {len(MIGRATIONS)}: run a newer rustiz, or point RUSTIZ_DATABASE elsewhere")
            for step in MIGRATIONS[current:]:
                if type(step) is PostgresOnly:
                    for statement in step.statements if self.remote else ():
                        run(statement)
                    continue
                for statement in step.split(";"):
                    if statement.strip():
                        run(statement)
            if row is None:
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (len(MIGRATIONS),))
            else:
                db.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS),))

    def schema_version(self) -> int:
        return self.read("SELECT version FROM schema_version").fetchone()[0]

    # --- organizations ------------------------------------------------------

    def create_organization(self, name: str, api_key_hash: str) -> str:
        organization_id = new_uuid()
        now = utc_now_iso()
        with self.writing() as db:
            db.execute("INSERT INTO organization (id, name, api_key_hash, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?)", (organization_id, name, api_key_hash, now, now))
        return organization_id

    def organizations(self) -> list:
        rows = self.read(
            "SELECT id, name, api_key_hash FROM organization WHERE deleted_at IS NULL ORDER BY created_at, id")
        return [{"id": row[0], "name": row[1], "api_key_hash": row[2]} for row in rows]

    def organization_for_key_hash(self, api_key_hash: str) -> Optional[str]:
        row = self.read(
            "SELECT id, api_key_hash FROM organization WHERE api_key_hash = ? AND deleted_at IS NULL",
            (api_key_hash,)).fetchone()
        # The index finds the row; the constant-time compare keeps the final check free of timing leaks.
        if row is not None and compare_digest(row[1], api_key_hash):
            return row[0]
        return None

    def set_api_key_hash(self, organization_id: str, api_key_hash: str) -> None:
        """A new key for the organization; the web sessions signed in with the old one end with it."""
        now = utc_now_iso()
        with self.writing() as db:
            db.execute("DELETE FROM web_session WHERE api_key_hash = "
                       "(SELECT api_key_hash FROM organization WHERE id = ?)", (organization_id,))
            db.execute("UPDATE organization SET api_key_hash = ?, api_key_created_at = ?, api_key_last_used_at = NULL, "
                       "updated_at = ? WHERE id = ?", (api_key_hash, now, now, organization_id))
        self.credentials_changed()

    # --- named API keys with a scope (the organization's own key is the full key named "default") ------

    def key_for_hash(self, api_key_hash: str) -> Optional[KeyIdentity]:
        """Whose key this is and what it may do: the organization's own key (full), or a named key."""
        organization_id = self.organization_for_key_hash(api_key_hash)
        if organization_id is not None:
            return KeyIdentity(organization_id, "full", None)
        row = self.read("SELECT k.organization_id, k.scope, k.id, k.key_hash FROM api_key k JOIN organization o "
                         "ON o.id = k.organization_id WHERE k.key_hash = ? AND o.deleted_at IS NULL",
                         (api_key_hash,)).fetchone()
        if row is not None and compare_digest(row[3], api_key_hash):
            return KeyIdentity(row[0], row[1], row[2])
        return None

    def record_key_use(self, key: KeyIdentity, when: str) -> None:
        """A key's last use (the caller writes it at most every KEY_LAST_USE_SECONDS)."""
        with self.writing(no_channels=True) as db:
            if key.key_id is None:
                db.execute("UPDATE organization SET api_key_last_used_at = ? WHERE id = ?", (when, key.organization))
            else:
                db.execute("UPDATE api_key SET last_used_at = ? WHERE id = ?", (when, key.key_id))

    # --- channels (integrations): the listing (the rest: rustiz_features/storage/channels.py) ---------

    INTEGRATIONS_SQL = (
        "SELECT i.id, i.name, i.provider_identifier, i.picture, i.disabled, i.profile, c.id, c.name "
        "FROM integration i LEFT JOIN customer c ON c.id = i.customer_id "
        "WHERE i.organization_id = ? AND i.deleted_at IS NULL")
    # Whole statements made once: the statement cache finds a string it has seen faster than a new equal one.
    _ALL_INTEGRATIONS_SQL = INTEGRATIONS_SQL + " ORDER BY i.created_at, i.id"
    _GROUP_INTEGRATIONS_SQL = INTEGRATIONS_SQL + " AND i.customer_id = ? ORDER BY i.created_at, i.id"

    def integrations(self, organization_id: str, customer_id: Optional[str] = None) -> list:
        """Channels in Postiz's public shape; `customer` is omitted when the channel has none."""
        if customer_id is None:
            rows = self.read(self._ALL_INTEGRATIONS_SQL, (organization_id,))
        else:
            rows = self.read(self._GROUP_INTEGRATIONS_SQL, (organization_id, customer_id))
        return [self.integration_item(row) for row in rows]

    @staticmethod
    def integration_item(row: tuple) -> dict:
        """A row of INTEGRATIONS_SQL as GET /integrations lists a channel."""
        channel = {"id": row[0], "name": row[1], "identifier": row[2], "picture": row[3],
                   "disabled": bool(row[4]), "profile": row[5]}
        if row[6] is not None:
            channel["customer"] = {"id": row[6], "name": row[7]}
        return channel

    # --- the organization a request acts for ----------------------------------------------------------

    def organization(self, organization_id: str) -> Optional[dict]:
        """{id, name, timezone} of a live organization."""
        row = self.read("SELECT id, name, timezone FROM organization WHERE id = ? AND deleted_at IS NULL",
                         (organization_id,)).fetchone()
        return None if row is None else {"id": row[0], "name": row[1], "timezone": row[2]}

    # --- one consistent snapshot (what /metrics, doctor, backup and db copy read within it:
    # rustiz_features/storage/operations.py) ------------------------------------------------------------

    @contextlib.contextmanager
    def consistent_read(self):
        """One read-only transaction around the block, every read in it seeing the same moment (PostgreSQL:
        REPEATABLE READ, a snapshot taken at its first read), while other processes go on writing."""
        self._end_shared_read()
        self.db.execute("BEGIN")
        try:
            if self.remote:
                self.db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield
        finally:
            self.db.execute("ROLLBACK")

    # --- the web app's sign-in session of a request (the rest: rustiz_features/storage/web_users.py) --

    def web_session(self, token_hash: str) -> Optional[tuple]:
        """(organization id, CSRF token, role, web user id or None) of a live session, or None. A session signed
        in with an API key (a full one) is an admin's; a person's role is read at each request (a changed role
        holds at once), and a person no longer a member of the session's organization has no session there."""
        return self.read("SELECT s.organization_id, s.csrf_token, CASE WHEN s.web_user_id IS NULL THEN 'admin' "
                         "ELSE m.role END, s.web_user_id FROM web_session s LEFT JOIN membership m "
                         "ON m.user_id = s.web_user_id AND m.organization_id = s.organization_id "
                         "WHERE s.token_hash = ? AND s.expires_at > ? AND (s.web_user_id IS NULL OR m.role IS NOT NULL)",
                         (token_hash, time.time())).fetchone()

    # --- idempotency keys (POST /posts): their rows are rustiz_features/storage/idempotency.py's; the
    # housekeeping here forgets them after a day -----------------------------------------------

    IDEMPOTENCY_SECONDS = 24 * 3600

    def forget_expired_idempotency_keys(self, now: float) -> int:
        with self.writing() as db:
            return db.execute("DELETE FROM idempotency_key WHERE created_at <= ?",
                              (now - self.IDEMPOTENCY_SECONDS,)).rowcount

    # --- the audit log: its rows are rustiz_features/storage/audit.py's; the housekeeping here forgets
    # those older than RUSTIZ_AUDIT_DAYS -------------------------------------------------------------

    def forget_old_audit_entries(self, before: str) -> int:
        with self.writing() as db:
            return db.execute("DELETE FROM audit_entry WHERE at < ?", (before,)).rowcount

    # --- rate limits ----------------------------------------------------------

    def count_request(self, key: str, limit: int, window_seconds: int, block_seconds: Optional[int] = None,
                      now: Optional[float] = None) -> RateDecision:
        """Fixed-window counter shared by every worker and kept across restarts.

        The first hit opens a window; a hit over the limit blocks the key for `block_seconds` from that
        moment (Postiz's throttler) or, when None, until the window ends; afterwards counting restarts at 1.
        """
        now = time.time() if now is None else now
        with self.writing(no_channels=True) as db:
            row = db.execute(self._RATE_WINDOW_SQL, (key,)).fetchone()
            before = None if row is None else RateWindow(*row)
            after, decision = count_in_window(before, now, limit, window_seconds, block_seconds)
            if after is not before:  # (a blocked key's refused hit changes nothing)
                db.execute(self._RATE_WINDOW_WRITE_SQL, (key, *after))
        return decision

    def take_back_hit(self, key: str) -> None:
        """One hit of a counter that is not blocked taken back (a sign-in that succeeded counts no attempt
        against the lockout, which counts failures)."""
        with self.writing(no_channels=True) as db:
            db.execute("UPDATE rate_limit SET hits = hits - 1 WHERE key = ? AND hits > 0 AND blocked_until IS NULL",
                       (key,))

    _RATE_WINDOW_SQL = "SELECT window_start, hits, blocked_until FROM rate_limit WHERE key = ?"
    _RATE_WINDOW_WRITE_SQL = ("INSERT OR REPLACE INTO rate_limit (key, window_start, hits, blocked_until) "
                              "VALUES (?, ?, ?, ?)")

    def rate_window(self, key: str) -> Optional[RateWindow]:
        """A fixed-window counter as stored (see count_request), or None."""
        row = self.read(self._RATE_WINDOW_SQL, (key,)).fetchone()
        return None if row is None else RateWindow(*row)

    def add_to_rate_windows(self, counted: dict) -> None:
        """Write what a process counted in memory since it read them: key -> (the window as read, the window
        after its hits). Hits another process wrote meanwhile in the same window are kept (added to ours); a
        window one of them opened later than ours wins, ours being the older."""
        with self.writing(no_channels=True) as db:
            for key, (read, counted_to) in counted.items():
                row = db.execute(self._RATE_WINDOW_SQL, (key,)).fetchone()
                stored = None if row is None else RateWindow(*row)
                ours = counted_to.hits - (read.hits if read is not None and read.start == counted_to.start else 0)
                if stored is not None and stored.start > counted_to.start:
                    continue
                if stored is not None and stored.start == counted_to.start:
                    blocked = max((value for value in (stored.blocked_until, counted_to.blocked_until)
                                   if value is not None), default=None)
                    counted_to = RateWindow(stored.start, stored.hits + ours, blocked)
                db.execute(self._RATE_WINDOW_WRITE_SQL, (key, *counted_to))

    def at_end_of_turn(self, callback: Callable[[], None]) -> bool:
        """Run `callback` after this turn of the server's event loop; False (not run) outside the server."""
        if self._schedule_end_of_turn is None:
            return False
        self._schedule_end_of_turn(callback)
        return True

    def forget_expired_rate_limits(self, now: float, longest_window: int) -> int:
        with self.writing() as db:
            cursor = db.execute(
                "DELETE FROM rate_limit WHERE window_start < ? AND (blocked_until IS NULL OR blocked_until < ?)",
                (now - longest_window, now))
        return cursor.rowcount

    # --- a whole database, table by table (rustiz db copy) ------------------------------------------------

    # Tables in an order where each row's references are already copied (post's parent_post_id aside: see
    # copy_rows in rustiz_features/storage/operations.py). Tables a later migration adds, and this list does not
    # name, are copied after these.
    TABLES_BY_REFERENCE = ("organization", "customer", "integration", "post", "tag", "tag_post", "notification",
                           "idempotency_key", "media", "webhook", "web_user", "web_session", "oauth_flow",
                           "oauth_app", "rate_limit")
    NOT_COPIED = ("schema_version", "write_probe")  # (each database has its own)

    def table_names(self) -> list:
        """Every table of rustiz's schema that holds data, in TABLES_BY_REFERENCE's order."""
        if self._schema_tables is not None:
            return self._schema_tables
        if self.remote:
            names = [row[0] for row in self.read("SELECT table_name FROM information_schema.tables "
                                                  "WHERE table_schema = current_schema()")]
        else:
            names = [row[0] for row in self.read("SELECT name FROM sqlite_master WHERE type = 'table'")]
        names = [name for name in names if name not in self.NOT_COPIED and not name.startswith("sqlite_")]
        known = [name for name in self.TABLES_BY_REFERENCE if name in names]
        self._schema_tables = known + sorted(set(names) - set(known))
        return self._schema_tables


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

# The methods the router answers; the parser also lets through any other well-formed token (a 405 then).
KNOWN_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # all but TAB, CR and LF
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))
_HTTP_VERSION = re.compile(r"HTTP/(\d)\.(\d)\Z")
_checked_header_names: dict = {}  # raw name -> lower-cased name, for names already proven to be tokens
# Heads already parsed, by their bytes: a client polling the same route sends the same head again and again, and
# parsing is a function of the bytes alone. Only valid heads of at most PARSED_HEAD_BYTES are kept, at most
# PARSED_HEADS of them (the memo starts over when full, so a client sending ever-new heads gains nothing). A
# RequestHead and its `headers` dict are shared by every request with those bytes: nothing may change them.
_parsed_heads: dict = {}
PARSED_HEADS = 512
PARSED_HEAD_BYTES = 1024
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

    `feed(data, max_requests)` stops after that many request heads and keeps the rest of the bytes
    (`backlog` is then True); `feed(b"", max_requests)` goes on with them. So one read holding a thousand
    pipelined requests can be worked through a batch at a time.
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
        self.backlog = False  # the last feed stopped at max_requests with more bytes buffered

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

    def feed(self, data: bytes, max_requests: int = 0) -> "list[Event]":
        """The events `data` completes; with `max_requests`, at most that many heads (see `backlog`)."""
        self.backlog = False
        if self._state == _HEAD and not self._buffer:
            # The usual read: one whole head of a request without a body, seen before (see _parsed_heads).
            end = data.find(b"\r\n\r\n")
            if 0 < end == len(data) - 4 and end <= PARSED_HEAD_BYTES and end <= self.max_head_bytes:
                head = _parsed_heads.get(data[:end])
                if head is not None and head.content_length == 0:
                    return [head, _END_OF_MESSAGE]
        elif self._state == _FAILED:
            return []
        buffer = self._buffer + data if self._buffer else data
        events: list = []
        position = 0
        size = len(buffer)
        heads = 0
        while position < size:
            state = self._state
            if state == _HEAD:
                if heads == max_requests and heads:
                    self.backlog = True
                    break
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
                raw = buffer[position:end]
                head = _parsed_heads.get(raw)
                if head is None:
                    head = self._parse_head(raw)
                    if type(head) is ParseError:
                        return self._fail(events, head.status, head.reason)
                    if end - position <= PARSED_HEAD_BYTES:
                        if len(_parsed_heads) >= PARSED_HEADS:
                            _parsed_heads.clear()
                        _parsed_heads[raw] = head
                position = end + 4
                if head.content_length and head.content_length > self.max_body_bytes:
                    limit = self._body_limit(head)
                    if head.content_length > limit:
                        # Refused before the head is reported, so no 100 Continue invites the body first.
                        return self._fail(events, 413, f"request body of {head.content_length} bytes is over "
                                                       f"the limit of {limit} bytes")
                events.append(head)
                heads += 1
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
        self.backlog = False

    def _parse_head(self, raw: bytes) -> Union[RequestHead, ParseError]:
        text = raw.decode("latin-1")
        lines = text.split("\r\n")
        # A head of printable ASCII and CRLF line ends has no byte but the line ends' outside that range: one
        # pass clears most heads. Any other (a TAB, a Latin-1 byte, a control character) takes the checks below.
        if len(raw.translate(None, _PRINTABLE_ASCII)) != 2 * (len(lines) - 1):
            bad = _CONTROL_CHARACTERS.search(text)
            if bad is not None:
                return ParseError(400, f"request head contains the control character {bad.group()!r}")
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
            try:
                name = _checked_header_names[raw_name]
            except KeyError:
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
            if name in headers:
                headers[name] = f"{headers[name]}, {value}"
            else:
                headers[name] = value
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
        expect_continue = not http10 and "expect" in headers and headers["expect"].lower() == "100-continue"
        # (tuple.__new__ itself: the NamedTuple's __new__ would add a Python call to every request)
        return tuple.__new__(RequestHead, (method, target, "1.0" if http10 else "1.1", headers, keep_alive,
                                           expect_continue, content_length, chunked))


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
    303: "See Other", 304: "Not Modified", 400: "Bad Request",
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


async def _with_headers(awaitable: Awaitable[Response], headers: list) -> Response:
    response = await awaitable
    response.headers.extend(headers)
    return response


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


# =============================================================================
# 5. Server: the asyncio transport around the parser, timeouts, shutdown, workers
# =============================================================================

class Request:
    """One complete request, as handlers see it.

    `route`, `organization` and `rate_headers` are set by App.admit, which decides from the head alone
    whether the request goes on (its body may not have arrived yet). On a route that streams its body
    (uploads), `sink` is where the body went as it arrived, and `body` stays empty."""
    __slots__ = ("method", "target", "path", "query_string", "headers", "body", "peer", "http10",
                 "keep_alive", "params", "_query", "route", "organization", "rate_headers", "sink", "scope", "key",
                 "user", "role")

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
        self.sink: Optional[BodySink] = None
        self.scope = "read"  # what the caller's key may do (SCOPES), set with `organization` by the Guard
        self.key: Optional[KeyIdentity] = None  # the API key that called (None: a web session, or no key)
        self.user: Optional[str] = None  # the person (web_user id) of a web session signed in with a password
        self.role: Optional[str] = None  # a web session's role in the organization (ROLES; "admin" for a key's)
        self.route: Optional[Route] = None  # (None: refused before a route was found; see RequestTally)

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
        encode_json(value).encode("utf-8")
    except UnicodeEncodeError as error:
        return f"\\u{ord(error.object[error.start]):x}"
    return None


def _refuse_lone_surrogates(value: Any) -> None:
    surrogate = lone_surrogate(value)
    if surrogate is not None:
        raise bad_request(f"The request body has a lone UTF-16 surrogate ({surrogate} without its pair); send the "
                          "character itself or a whole \\uXXXX\\uXXXX pair")


def json_object(request: Request) -> dict:
    """The body as a JSON object; other JSON (a list, a number) counts as an empty object, as Nest's DTOs do."""
    body = request.json()
    return body if isinstance(body, dict) else {}


class BodySink:
    """Where a streaming route's body goes, piece by piece, instead of being joined in memory.

    The connection calls `feed` for each piece and `close` once the response is out or the client is
    gone; `close` must undo whatever the handler did not keep (temporary files), and may run twice."""

    def feed(self, data: bytes) -> None:
        pass  # this base class is the sink that drops the body (for a request that will be refused)

    def close(self) -> None:
        pass


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


class PlainRefusal(ApiError):
    """An ApiError whose answer is not a JSON body of rustiz's making (MCP's plain-text and JSON-RPC
    refusals): raised with the Response itself."""

    def __init__(self, answer: Response):
        super().__init__(answer.status, answer.body, answer.headers)
        self.answer = answer

    def response(self) -> Response:
        return self.answer


def nest_error(status: int, message: Any) -> ApiError:
    """Nest's built-in exception body, which Postiz clients parse: {statusCode, message, error}."""
    return ApiError(status, {"statusCode": status, "message": message, "error": _REASONS.get(status, "Error")})


def bad_request(message: Any) -> ApiError:
    return nest_error(400, message)


def not_found(message: str) -> ApiError:
    return nest_error(404, message)


class ServerState:
    """What the connections of one worker share: the app, the config, the live connections, the bytes of
    request bodies they hold in memory (at most config.body_memory_budget), and the connections whose
    answers wait for the end of this turn of the event loop (see HttpConnection._send_at_end_of_turn)."""

    def __init__(self, config: Config, app: "App", max_connections: Optional[int] = None,
                 call_soon: Optional[Callable[..., Any]] = None):
        self.config = config
        self.app = app
        # `call_soon(callback, state)` runs it after this turn of the event loop (the loop's call_soon); without
        # it answers are sent as they are made
        self.call_soon = call_soon
        self.admit = app.admit
        self.respond = app.respond if app.store.remote else app.respond_here
        self.write_counts = app.guard.write_turn_counts
        self.connections: set = set()
        self.max_connections = max_connections or config.max_connections
        self.overflow: dict = {}  # the connections beyond max_connections, oldest first (an ordered set)
        self.body_memory = 0
        self.closing = False
        self.answers_due: list = []  # connections holding answers to send at the end of this loop turn


# Connections beyond RUSTIZ_MAX_CONNECTIONS are still accepted, up to this many at once, to answer /health
# (anything else gets 503). Each has OVERFLOW_HEAD_SECONDS to send its request, and when they are all taken
# the oldest makes room for the newest: a crowd of idle connections cannot keep a health check out.
class RequestTally:
    """Requests this process answered, by route and status, with how long each took: the one counting the hot
    path does (a dictionary look-up and three list updates per answer); rustiz_features/metrics.py reads it.

    `rows[(handler, status)]` is [count, seconds in total, then one count per LATENCY_BUCKETS bucket and one
    above the last]; `handler` is the route's handler (None for requests refused before a route was found)."""
    LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

    def __init__(self) -> None:
        self.rows: dict = {}

    def add(self, route: Optional["Route"], status: int, seconds: float) -> None:
        key = (route.handler if route is not None else None, status)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [0, 0.0] + [0] * (len(self.LATENCY_BUCKETS) + 1)
        row[0] += 1
        row[1] += seconds
        row[2 + bisect_left(self.LATENCY_BUCKETS, seconds)] += 1


REQUEST_TALLY = RequestTally()  # this process's (each worker has its own; GET /metrics sums them)


OVERFLOW_CONNECTIONS = 64
OVERFLOW_HEAD_SECONDS = 2.0
DROPPED_BODY_BYTES = 64 * 1024  # a refused request's body up to this size is read and dropped; larger: close
LINGER_SECONDS = 1.0  # after answering a client that is still sending, time for the answer to reach it
BODYLESS_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))  # routes for these take no request body
PIPELINE_BATCH = 16  # pipelined requests one connection has answered per turn of the event loop
HELD_ANSWER_BYTES = 16 * 1024  # a larger answer is written at once (see _send_at_end_of_turn)


def service_unavailable(message: str, retry_after: int = 5) -> Response:
    return json_response({"statusCode": 503, "error": "Service Unavailable", "message": message}, 503,
                         [("Retry-After", str(retry_after))])


class HttpConnection(asyncio.Protocol):
    """Feeds socket bytes to a RequestParser and answers the requests strictly in order.

    Each request is admitted (App.admit: method, rate limits, route, key) as soon as its head is parsed,
    so a request that will be refused is answered without its body being read. A connection reads only
    while it has nothing left to answer: once a request waits behind an earlier answer, or the client
    leaves our answers unread, reading pauses. So besides the body of the request being received, a
    connection holds at most what one read brought (256 KiB) of pipelined requests, and answers them
    PIPELINE_BATCH per turn of the event loop; bodies held in memory count, as their bytes arrive,
    against the worker's body_memory_budget."""

    def __init__(self, state: ServerState):
        self.state = state
        self.answers_held: list = []  # answers to send at the end of this turn of the loop, in order
        self.parser = RequestParser(MAX_HEAD_BYTES, state.config.max_body_bytes, state.app.body_limit_for)
        self.admit = state.admit  # an over-capacity connection admits /health only
        self.transport: Optional[asyncio.Transport] = None
        self.peer = ""
        self.pending: list = []  # Requests and Refused waiting their turn (or a final ParseError)
        self.request: Optional[Request] = None  # the request whose body is being received
        self.refusal: Optional[Response] = None  # its answer when it was refused from its head: its body is dropped
        self.body_parts: list = []
        self.body_charge = 0  # bytes of that body counted in state.body_memory
        self.dropping_body = False  # that body means nothing (a GET's): read and dropped, as long as it is small
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
        self.client_done = False  # the client half-closed: it sends no more, but still reads the answers due
        self.body_unread = False  # the client may still be sending: close gracefully (see close)
        self.lingering_until = 0.0
        self.reading_paused = False
        self.backlog_due = False  # _read_backlog is scheduled
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
                oldest._write(serialize_response(self._over_capacity(), False, False, False))
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

    def eof_received(self) -> Optional[bool]:
        """The client sends no more (a half-close, as `nc -N` or shutdown(SHUT_WR) do). Answers still being
        made (an asynchronous handler, a file, pipelined requests) go out first, then the connection closes;
        with none due it closes now. A stream of events has no last answer: it ends with the connection."""
        if self.closed or self.event_stream is not None or not (self.busy or self.pending or self.parser.backlog):
            return None
        self.client_done = True
        return True

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
        if self.closed:
            return  # the rest of a body we refused, arriving while we linger (see close): dropped
        parser = self.parser
        now = time.monotonic()
        if parser.idle:
            self.message_started = now
        events = parser.feed(data, PIPELINE_BATCH)
        if events or not parser.idle:  # stray blank lines alone do not keep a connection alive
            self.last_activity = now
        for event in events:
            kind = type(event)
            if kind is RequestHead:
                request = self.request = Request(event, b"", self.peer)
                refusal = self.admit(request)
                # (a route that streams its body opens its sink even for an empty one, which then tells why)
                if (refusal is not None or event.content_length != 0 or request.route.open_sink is not None) \
                        and self._start_body(event, refusal):
                    break  # the rest of the stream is not read
            elif kind is Body:
                self.continue_due = False
                self.body_received += len(event.data)
                if self.sink is not None:
                    self.sink.feed(event.data)
                elif self.refusal is None and not self.dropping_body:
                    self.body_parts.append(event.data)
                    if self._charge_piece(len(event.data)):  # (counted as it comes, not as announced)
                        break
                elif self.body_received > DROPPED_BODY_BYTES:  # a refused or dropped chunked body that goes on and on
                    if self.refusal is None:
                        self.refusal = self._no_body_here()
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
        if parser.backlog and not self.reading_paused and not self.closed:
            self._pause_reading()  # the rest of what was read waits its turn (see _continue_reading)
        if self.pending or self.continue_due:
            self._answer_pending()
        if (self.pending or (self.busy and not parser.idle)) and not self.reading_paused and not self.closed:
            self._pause_reading()  # requests wait behind an answer still being made: read no further

    def _start_body(self, head: RequestHead, refusal: Optional[Response]) -> bool:
        """Where the body of the request just admitted goes (a sink, or memory within the worker's budget),
        or how a refused one is answered: True when the rest of the stream is not to be read."""
        request = self.request
        self.dropping_body = False
        if refusal is None:
            if request.route.open_sink is not None:
                try:
                    request.sink = self.sink = request.route.open_sink(request, request.organization)
                except ApiError as error:
                    refusal = error.response()
                except Exception:
                    refusal = internal_error_response()
            elif request.method in BODYLESS_METHODS:
                # Such a body means nothing (RFC 9110): a small one is read and dropped, never held nor counted
                # against the budget (some clients send "{}" with a GET); a larger one is refused from the head.
                if (head.content_length or 0) > DROPPED_BODY_BYTES:
                    refusal = self._no_body_here()
                else:
                    self.dropping_body = True
            elif head.content_length:
                # Counted against the budget as its bytes arrive (_charge_piece), not as announced: announcing
                # costs a client nothing, so a few announced bodies trickled in could otherwise hold it all.
                refusal = self._over_route_limit(head.content_length) or self._budget_full(head.content_length)
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

    def _no_body_here(self) -> Response:
        request = self.request
        return nest_error(400, f"{request.method} {request.path} takes no request body: send the request without "
                               "one (no Content-Length or Transfer-Encoding)").response()

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

    def _budget_full(self, size: int) -> Optional[Response]:
        """The 503 when `size` more bytes of body would not fit in the worker's budget now, else None."""
        state = self.state
        if state.body_memory + size > state.config.body_memory_budget:
            return service_unavailable(f"rustiz already holds {state.body_memory} bytes of request bodies in memory, "
                                       f"near RUSTIZ_BODY_MEMORY_BUDGET ({state.config.body_memory_budget}); "
                                       "retry in a few seconds")
        return None

    def _charge(self, size: int) -> Optional[Response]:
        """Count `size` more bytes of body in memory against the worker's budget, or the 503 when they do not fit."""
        refusal = self._budget_full(size)
        if refusal is not None:
            return refusal
        self.state.body_memory += size
        self.body_charge += size
        return None

    def _charge_piece(self, size: int) -> bool:
        """A piece of a body held in memory: counted, or, over a limit, the request refused; True if refused."""
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
        if request.sink is not None:
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
            self._write(CONTINUE_RESPONSE)
            self._restart_rate_window()  # the client sends its body from now
        if self.client_done and not pending and not self.busy and not self.parser.backlog and not self.closed:
            self.close()  # every answer the half-closed client waited for is out
            return
        if self.reading_paused and not pending and not self.writing_paused and not self.closed and (
                not self.busy or self.event_stream is not None):  # (a stream is the last answer: read to see it end)
            self._continue_reading()

    def _continue_reading(self) -> None:
        """Read on: first the pipelined requests already read, a batch per turn of the event loop, so that a
        connection with a thousand of them delays every other connection by one batch at most; then the socket."""
        if not self.parser.backlog:
            self._resume_reading()
        elif not self.backlog_due:
            self.backlog_due = True
            asyncio.get_running_loop().call_soon(self._read_backlog)

    def _read_backlog(self) -> None:
        self.backlog_due = False
        if not self.closed:
            self.data_received(b"")

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
        if request.body or request.sink is not None:
            self._release(request)  # before the answer leaves, so a client that got it finds no temporary file
        keep_alive = request.keep_alive and not self.state.closing
        HTTP_DATE.refresh()
        answer = serialize_response(response, keep_alive, request.http10, request.method == "HEAD")
        if keep_alive and type(response) is Response and len(answer) <= HELD_ANSWER_BYTES and self.state.call_soon:
            self._send_at_end_of_turn(answer)
        else:
            self._write(answer)
        self.answered += 1
        self.last_activity = time.monotonic()
        elapsed = time.perf_counter() - started
        REQUEST_TALLY.add(request.route, response.status, elapsed)
        if self.state.config.access_log:
            log(f'{request.peer} "{request.method} {loggable_target(request.target)} HTTP/{"1.0" if request.http10 else "1.1"}" '
                f"{response.status} {response.length if type(response) is FileResponse else len(response.body)} "
                f"{elapsed * 1000:.1f}ms")
        if type(response) is FileResponse and request.method != "HEAD":
            self._start_file(response, keep_alive)
        elif not keep_alive:
            self.close()

    def _send_at_end_of_turn(self, answer: bytes) -> None:
        """Hold a keep-alive answer until the connections of this turn of the event loop have all been served,
        then send them one after the other (ServerState's send_held_answers). Sent the moment each is made, every
        answer would wake a client process waiting on the other core, one wake-up per answer; sent together,
        the first wakes it and the rest find it awake. (And pipelined answers go out in one send.)"""
        if not self.answers_held:
            state = self.state
            if not state.answers_due:
                state.call_soon(send_held_answers, state)
            state.answers_due.append(self)
        self.answers_held.append(answer)

    def send_held_answers(self) -> None:
        """What _send_at_end_of_turn held, now: before anything else is written, and before closing (after this
        turn's REQUEST_LIMIT counts are stored)."""
        held = self.answers_held
        if held:
            self.state.write_counts()
            self.answers_held = []
            self.transport.write(held[0] if len(held) == 1 else b"".join(held))

    def _write(self, data: bytes) -> None:
        """Every write but a held answer: after the held ones, so that the client reads them all in order, and
        after this turn's REQUEST_LIMIT counts are stored (see Guard._count_this_turn)."""
        self.state.write_counts()
        if self.answers_held:
            self.send_held_answers()
        self.transport.write(data)

    def _start_event_stream(self, request: Request, response: EventStreamResponse) -> None:
        """The head without a length (the body ends when the connection does), then events as they come."""
        HTTP_DATE.refresh()
        head = [_status_line(200), HTTP_DATE.line, b"Content-Type: text/event-stream\r\n",
                b"Cache-Control: no-cache\r\n", b"Connection: close\r\n"]
        head += [f"{name}: {value}\r\n".encode("latin-1") for name, value in response.headers]
        self._write(b"".join(head) + b"\r\n")
        self.answered += 1
        if self.state.config.access_log:
            log(f'{request.peer} "{request.method} {loggable_target(request.target)}" 200 event stream opened')
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
                        self._write(b": keepalive\n\n")
                        quiet_seconds = 0
                    continue
                quiet_seconds = 0
                if event is None:
                    break
                self._write(event)
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
                self._write(piece)
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
        self._write(serialize_response(response, False, False, False))
        if self.state.config.access_log:
            log(f"{self.peer} rejected with {error.status}: {error.reason}")
        self.body_unread = True  # (whatever follows a broken request is not read)
        self.close()

    def close(self) -> None:
        """Close once what was written is sent. When the client may still be sending a body we did not read,
        half-close first, read and drop what still comes for LINGER_SECONDS, then close: closing a socket
        with unread bytes makes the kernel reset the connection, which can destroy the answer on its way
        to a client still busy sending (as nginx's lingering close)."""
        if not self.closed:
            self.closed = True
            self._drop_pending()
            self.send_held_answers()
            if (self.body_unread or not self.parser.idle) and self.transport.can_write_eof():  # (or pipelined requests)
                if self.reading_paused:
                    self.reading_paused = False
                    self.transport.resume_reading()
                self.transport.write_eof()
                self.lingering_until = time.monotonic() + LINGER_SECONDS
            else:
                self.transport.close()

    def _abort(self) -> None:
        """Close at once, dropping unsent answers: for a client that stopped reading them."""
        self.closed = True
        self._drop_pending()
        self.answers_held = []
        self.transport.abort()

    def _drop_pending(self) -> None:
        for item in self.pending:
            if type(item) is Request:
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


def send_held_answers(state: ServerState) -> None:
    """The end of a turn of the event loop: send the answers its connections held (see _send_at_end_of_turn)."""
    due, state.answers_due = state.answers_due, []
    for connection in due:
        if not connection.closed:
            connection.send_held_answers()


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
               supervisor: Optional[int] = None, store: Optional[Store] = None) -> int:
    """Serve on `listener` until SIGTERM or SIGINT (or the death of the `supervisor` process), then drain.

    `primary` marks the one worker that runs what must run once per server: housekeeping and the
    scheduler (which also checks, through a file lock, that no other process schedules this database).
    `store` is the database already open in this process, if any (closed when the worker ends)."""
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    store = store or Store(config.database)
    store.share_reads_per_loop_turn(loop.call_soon)
    if store.remote:
        store.thread_count = config.database_threads
        store.listen_for_changes()
    app = App(config, store)
    state = ServerState(config, app, connections_within_open_file_limit(config.max_connections), loop.call_soon)
    stop = loop.create_future()

    def request_stop() -> None:
        if not stop.done():
            stop.set_result(None)

    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, request_stop)
    server = loop.run_until_complete(
        loop.create_server(lambda: HttpConnection(state), sock=listener, backlog=1024))

    scheduler = None

    def start_scheduler() -> None:
        """Run once the server is up: loading the scheduler's module need not delay the ready line."""
        nonlocal scheduler
        from rustiz_features.scheduler import Scheduler, SchedulerThread
        if store.remote:  # its queries wait on the network: on a loop of its own, never the requests' loop
            scheduler = SchedulerThread(config, store)
            return
        scheduler = Scheduler(config, store, loop)
        scheduler.tick()

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
    if supervisor is not None:  # one of several workers: GET /metrics in any of them sums them all
        from rustiz_features.metrics import share_counters
        share_counters(loop, config)
    if primary:
        loop.call_soon(app.housekeeping, loop)
        if config.scheduler:
            loop.call_soon(start_scheduler)
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


def serve(config: Config, startup_note: str, store: Store) -> int:
    """Bind, start the workers, print the ready line, and wait for a signal. `store`, the database opened
    (and migrated) at start, serves a single worker; with several, each opens its own after the fork."""
    try:
        sockets = bind_sockets(config)
    except BaseException:
        store.close()
        raise
    port = bound_port(sockets)
    url_host = f"[{config.host}]" if ":" in config.host else config.host
    url = f"http://{url_host}:{port}"
    config = config._replace(port=port, frontend_url=config.frontend_url or url)
    plural = "worker" if config.workers == 1 else "workers"
    ready_line = f"rustiz {VERSION} ready on {url} ({config.workers} {plural}; {startup_note})"
    if config.workers == 1:
        return run_worker(config, sockets[0], True, lambda: log(ready_line), store=store)
    if store.remote:
        # (anonymous and shared: every forked worker sees it; see Store.shared_generations)
        Store.shared_generations = mmap.mmap(-1, 16 + 8 * config.workers)
    store.close()  # (an SQLite connection must not cross a fork)
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
                Store.generation_slot = index
                code = run_worker(config, sockets[index], index == 0, on_ready or (lambda: None), supervisor)
            except UserError as error:
                log(f"error: {error}", "error")
            except BaseException:
                log("worker crashed:\n" + traceback.format_exc().rstrip(), "error")
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


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, {"msg": message})


def _too_many_requests(retry_after: int) -> ApiError:
    return ApiError(429, {"statusCode": 429, "message": "ThrottlerException: Too Many Requests"},
                    [("Retry-After", str(retry_after))])


def scope_allows(scope: str, needed: str) -> bool:
    """Whether a caller at level `scope` may do what needs `needed` (LEVELS go from the narrowest to the widest)."""
    return LEVELS.index(scope) >= LEVELS.index(needed)


def scope_refusal(scope: str, needed: str, what: str, role: Optional[str] = None) -> ApiError:
    """403 for a key whose scope, or a person whose role (`role`: a web session), does not allow `what` (the
    same words for the API and MCP's tool errors)."""
    return nest_error(403, role_refusal_text(role, needed, what) if role else scope_refusal_text(scope, needed, what))


def scope_refusal_text(scope: str, needed: str, what: str) -> str:
    needed = needed if needed in SCOPES else "full"  # (no key has the level "posts": a full one is needed)
    return (f"This API key has the scope {scope!r}; {what} needs the scope {needed!r}. Use a key with that "
            f"scope (`rustiz key add --scope {needed}`) or the organization's own key")


def role_refusal_text(role: str, needed: str, what: str) -> str:
    allowed = [name for name, level in ROLE_SCOPES.items() if scope_allows(level, needed)]
    return (f"Your role in this organization is {role!r}; {what} needs the role "
            f"{' or '.join(repr(name) for name in allowed)}. Ask an admin of the organization to change your role")


NO_API_KEY = "No API Key found"
INVALID_API_KEY = "Invalid API key"
INVALID_OAUTH_TOKEN = "Invalid OAuth token"


# A web session (web.py signs people in) is this cookie; Guard takes it for the key it stands for.
SESSION_COOKIE = "rustiz_session"


def session_cookie(request: Request) -> Optional[str]:
    """The web session token from the Cookie header, or None."""
    for part in request.headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == SESSION_COOKIE and value:
            return value
    return None


class Guard:
    """Who is calling (organization, client address) and whether they may go on (rate limits)."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store
        # key -> (credentials generation, KeyIdentity), valid while the generation holds: a known key costs a
        # dict lookup, not a hash. (The key itself: str hashes are salted per process, so a lookup reveals
        # nothing by its timing.) The generation is the one read before the lookup (whose answer is at least
        # that new): a lookup made on a Store thread before a key was revoked, and kept after, is not valid.
        self._known_keys: dict = {}
        self._key_use_written: dict = {}  # KeyIdentity -> time.monotonic() of its last use written
        # PostgreSQL: REQUEST_LIMIT counts in this process only (a write to the shared database for every
        # request would cost more than the requests): client address -> (window start, hits).
        self._local_windows: dict = {}
        # SQLite: REQUEST_LIMIT counts of this turn of the event loop, written at its end (see _count_this_turn):
        # key -> (its window as read from the database, its window now)
        self._counted_this_turn: dict = {}

    def organization(self, request: Request) -> str:
        """Postiz clients send `Authorization: <key>`; `Authorization: Bearer <key>` is accepted too. The
        web app's session cookie stands for the key when there is no Authorization header. Raises ApiError
        (401, or 403 for a session's change without its CSRF token)."""
        key = self.presented_key(request)
        if not key:
            token = session_cookie(request)
            if not token:
                raise _unauthorized(NO_API_KEY)
            return self.session_organization(request, token)
        identity = self.key_identity(key)
        if identity is None:
            # rustiz issues no OAuth tokens (yet), so a pos_ token can only be unknown.
            raise _unauthorized(INVALID_OAUTH_TOKEN if key.startswith("pos_") else INVALID_API_KEY)
        request.scope, request.key = identity.scope, identity
        return identity.organization

    @staticmethod
    def presented_key(request: Request) -> str:
        """The API key in the Authorization header ("" when there is none: the session cookie may stand for it)."""
        key = request.headers.get("authorization", "")
        return key[7:].strip() if key[:7].lower() == "bearer " else key

    def session_organization(self, request: Request, token: str) -> str:
        """The organization of a web session, and the person's role there (request.role, .user, .scope); a
        request that changes anything must also carry the session's CSRF token in X-CSRF-Token (a cookie alone
        is what a forged cross-site form would have)."""
        session = self.store.web_session(hash_api_key(token))
        if session is None:
            raise _unauthorized("Your session has ended: sign in again")
        organization_id, csrf_token, request.role, request.user = session
        request.scope = ROLE_SCOPES[request.role]
        if request.method not in ("GET", "HEAD", "OPTIONS") and not compare_digest(
                request.headers.get("x-csrf-token", "").encode(), csrf_token.encode()):
            raise nest_error(403, "This request came with the session cookie but without its X-CSRF-Token header "
                                  "(the csrfToken of POST /auth/login or GET /auth/session)")
        return organization_id

    def organization_for_key(self, key: str) -> Optional[str]:
        """The organization an API key (of any scope) belongs to, or None."""
        identity = self.key_identity(key)
        return None if identity is None else identity.organization

    def key_identity(self, key: str) -> Optional[KeyIdentity]:
        """Whose key this is and its scope, or None; known keys are remembered per credentials generation,
        and each one's last use is written at most every KEY_LAST_USE_SECONDS."""
        generation = self.store.credentials_generation()
        known = self._known_keys.get(key)
        # (PostgreSQL, not listening: a key revoked now would not be heard, so each is looked up)
        if known is not None and known[0] == generation and (not self.store.remote or self.store.hears_changes):
            identity = known[1]
        else:
            identity = self.store.key_for_hash(hash_api_key(key))
            if identity is None:
                return None
            if len(self._known_keys) >= 1024:
                self._known_keys.clear()
            self._known_keys[key] = (generation, identity)
        if self._key_use_due(identity):
            self._write_key_use(identity)
        return identity

    def remembered_identity(self, key: str) -> Optional[KeyIdentity]:
        """PostgreSQL, on the event loop: key_identity from memory alone, without the database. None when the
        key is not known in the current credentials generation, or this process hears no changes now; a last
        use due is written on a Store thread."""
        known = self._known_keys.get(key)
        if known is None or known[0] != self.store.credentials_generation() or not self.store.hears_changes:
            return None
        identity = known[1]
        if self._key_use_due(identity):
            self.store.threads.submit(self._write_key_use, identity)
        return identity

    def _key_use_due(self, identity: KeyIdentity) -> bool:
        """Whether the key's last use is to be written now (then it is counted as written)."""
        now = time.monotonic()
        if now < self._key_use_written.get(identity, -KEY_LAST_USE_SECONDS) + KEY_LAST_USE_SECONDS:
            return False
        if len(self._key_use_written) >= 1024:
            self._key_use_written.clear()
        self._key_use_written[identity] = now
        return True

    def _write_key_use(self, identity: KeyIdentity) -> None:
        with contextlib.suppress(sqlite3.Error):  # (a last use not written is no reason to refuse the call)
            self.store.record_key_use(identity, utc_now_iso())

    @staticmethod
    def check_scope(request: Request, needed: str, what: str) -> None:
        """Raises ApiError 403 unless the caller's key has the scope `needed` (or a wider one) for `what`."""
        if not scope_allows(request.scope, needed):
            raise scope_refusal(request.scope, needed, what, request.role)

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

    def count_request(self, request: Request) -> None:
        """REQUEST_LIMIT: requests per minute per client address, all routes but /health; raises ApiError 429.
        Shared by the workers of one SQLite file; on PostgreSQL counted per process (see _local_windows)."""
        if self.store.remote:
            self._count_locally(self.client_address(request))
            return
        decision = self._count_this_turn("client:" + self.client_address(request))
        if not decision.allowed:
            raise _too_many_requests(decision.retry_after)

    def _count_this_turn(self, key: str) -> RateDecision:
        """REQUEST_LIMIT on SQLite, counted in memory for one turn of the event loop and written once at its end
        (Store.add_to_rate_windows), instead of a write transaction per request. The count's row is read once per
        turn; the other workers' hits written since are added when ours are written, so a worker sees them one
        turn late at most. (Outside the server's loop: written at once, by Store.count_request.)"""
        counted = self._counted_this_turn
        entry = counted.get(key)
        if entry is None:
            if not counted and not self.store.at_end_of_turn(self.write_turn_counts):
                return self.store.count_request(key, self.config.request_limit, REQUEST_LIMIT_WINDOW_SECONDS)
            read = self.store.rate_window(key)
            entry = counted[key] = (read, read)
        window, decision = count_in_window(entry[1], time.time(), self.config.request_limit,
                                           REQUEST_LIMIT_WINDOW_SECONDS, None)
        counted[key] = (entry[0], window)
        return decision

    def write_turn_counts(self) -> None:
        """Write the REQUEST_LIMIT counts of this turn now (the end of the turn, or before an answer that is not
        held for it leaves: a client's next request, on any worker, finds its count)."""
        if not self._counted_this_turn:
            return
        counted, self._counted_this_turn = self._counted_this_turn, {}
        changed = {key: entry for key, entry in counted.items() if entry[1] is not entry[0]}
        if changed:
            try:  # (a count not written is no reason to stop serving)
                self.store.add_to_rate_windows(changed)
            except DatabaseUnwritable:
                pass  # (the Store has logged why, once; /health says it until writes succeed again)
            except sqlite3.Error as error:
                log(f"REQUEST_LIMIT counts of this turn not written: {error}")

    def _count_locally(self, client: str) -> None:
        now = time.monotonic()
        start, hits = self._local_windows.get(client, (now, 0))
        if now >= start + REQUEST_LIMIT_WINDOW_SECONDS:
            start, hits = now, 0
        if hits >= self.config.request_limit:
            raise _too_many_requests(max(1, math.ceil(start + REQUEST_LIMIT_WINDOW_SECONDS - now)))
        if len(self._local_windows) >= 100_000:  # (bounded: a flood of addresses forgets the oldest windows)
            self._local_windows = {address: window for address, window in self._local_windows.items()
                                   if now < window[0] + REQUEST_LIMIT_WINDOW_SECONDS}
            if len(self._local_windows) >= 100_000:
                self._local_windows.clear()
        self._local_windows[client] = (start, hits + 1)

    def count_post(self, organization_id: str) -> list:
        """API_LIMIT: POST /public/v1/posts per organization per fixed hour; Postiz's X-RateLimit-* headers for
        the answer, or ApiError 429 with Postiz's body (and Retry-After)."""
        decision = self.store.count_request(f"posts:{organization_id}", self.config.api_limit,
                                            API_LIMIT_WINDOW_SECONDS, API_LIMIT_WINDOW_SECONDS)
        if not decision.allowed:
            raise _too_many_requests(decision.retry_after)
        return [("X-RateLimit-Limit", str(decision.limit)), ("X-RateLimit-Remaining", str(decision.remaining)),
                ("X-RateLimit-Reset", str(decision.reset_seconds))]


# =============================================================================
# 7. Routing: the route table, and the order every request goes through
# =============================================================================

class Route(NamedTuple):
    handler: Callable[..., Union[Response, Awaitable[Response]]]
    authenticated: bool = True  # by the organization's key or a web session, before the handler runs
    # Routes that take credentials their own way (the MCP key in the URL) check them from the head with
    # `authenticate(request) -> organization id` (raising ApiError), so a refused body is never read.
    authenticate: Optional[Callable[["Request"], str]] = None
    # This route's own body limit: smaller than RUSTIZ_MAX_BODY for routes open to anyone, larger for a
    # route whose body streams to `open_sink(request, organization_id) -> BodySink` (uploads).
    body_limit: Optional[int] = None
    too_large: Optional[Callable[["Request", int, int], Response]] = None  # the route's own 413 (MCP's JSON-RPC)
    open_sink: Optional[Callable[["Request", str], BodySink]] = None
    # On PostgreSQL, handlers run on the Store's threads (a query waits on the network); a handler that must
    # run on the event loop's thread (it hands data to a stream the loop writes) says so here.
    on_loop: bool = False
    # PostgreSQL: `from_memory(request, organization_id) -> Response or None` answers a GET or HEAD from what
    # this process remembers, on the event loop itself (no thread, no query), when the key is one the Guard
    # knows; None sends the request to a Store thread and `handler` as usual (see App.respond).
    from_memory: Optional[Callable[["Request", str], Optional["Response"]]] = None
    # The level (LEVELS: a key scope, or "posts" for an editor) the route needs; None: "read" for GET and HEAD,
    # "full" for anything else.
    # Handlers whose body decides (a draft or a scheduled post) check again with Guard.check_scope.
    scope: Optional[str] = None
    # The audit log's action for a successful (2xx) answer ("post.deleted"): rustiz_features/audit.py records
    # it, with who called and the subject (the path's :id or the answer's ids). None: the route changes
    # nothing worth an entry (tests/test_api_audit.py names each such route with its reason).
    audit: Optional[str] = None


def route_options(**options: Any) -> Callable:
    """Written above a handler in its feature module: how the router treats the handler's requests, as the
    fields of Route (`authenticated=False`...). A string value names an attribute of the handler's object
    (`open_sink="open_upload"`), read when the route is first used; but `scope` is a scope (`scope="drafts"`)
    and `audit` the audit log's action (`audit="post.deleted"`)."""
    def mark(handler: Callable) -> Callable:
        handler.route_options = options
        return handler
    return mark


class LazyRoute(NamedTuple):
    """A route whose handler is `Class.method` of a feature module, imported on its first request."""
    module: str  # in rustiz_features
    handler: str  # "Class.method"


def _pattern_family(path: str) -> str:
    """A route template's first two segments when both are literal, else its first (App._find_routes looks
    for a request's path under its first two segments, then under its first)."""
    segments = path.strip("/").split("/")
    if len(segments) > 2 and not segments[0].startswith(":") and not segments[1].startswith(":"):
        return f"{segments[0]}/{segments[1]}"
    return segments[0]


def template_parameters(template: tuple, parts: Optional[list]) -> Optional[dict]:
    """The parameters of a path (its `parts` between slashes) that a route template (its segments) matches:
    a literal segment matches itself, a `:name` segment any non-empty part. None when it does not match."""
    if parts is None or len(parts) != len(template):
        return None
    params = {}
    for segment, part in zip(template, parts):
        if segment.startswith(":"):
            if not part:
                return None
            params[segment[1:]] = part
        elif segment != part:
            return None
    return params


# The route table. Each handler is `Class.method` in a module of rustiz_features/, imported on the first
# request to one of its routes; each Class is built once per worker, from the App (App.feature). A
# handler's own options (no key, its body limit...) are written beside it with @route_options, and its
# OpenAPI description with @documented (rustiz_features/api_docs.py): openapi.py reads this table.
# The public API, served under each of API_PREFIXES:
API_ROUTES = (
    ("GET", "/is-connected", "api_channels", "ChannelsApi.is_connected"),
    ("GET", "/integrations", "api_channels", "ChannelsApi.integrations"),
    ("POST", "/integrations", "api_channels", "ChannelsApi.add_channel"),
    ("GET", "/integrations/:id", "api_channels", "ChannelsApi.show_channel"),
    ("PUT", "/integrations/:id", "api_channels", "ChannelsApi.update_channel"),
    ("DELETE", "/integrations/:id", "api_channels", "ChannelsApi.delete_channel"),
    ("GET", "/integration-settings/:id", "api_channels", "ChannelsApi.integration_settings"),
    ("POST", "/integration-trigger/:id", "api_channels", "ChannelsApi.integration_trigger"),
    ("GET", "/groups", "api_channels", "ChannelsApi.groups"),
    ("GET", "/providers", "api_channels", "ChannelsApi.providers"),
    ("GET", "/social/:integration", "connect", "ConnectFlow.start"),
    ("GET", "/integrations/:id/steps", "connect", "ConnectFlow.step_choices"),
    ("GET", "/integrations/:id/picture", "pictures", "ChannelPictures.serve"),
    ("POST", "/integrations/:id/steps", "connect", "ConnectFlow.choose"),
    ("GET", "/posts", "api_posts", "PostsApi.list_posts"),
    ("POST", "/posts", "api_posts", "PostsApi.create_posts"),
    ("GET", "/posts/export", "posts_files", "PostsFiles.export"),
    ("POST", "/posts/import", "posts_files", "PostsFiles.import_posts"),
    ("DELETE", "/posts/group/:group", "api_posts", "PostsApi.delete_group"),
    ("GET", "/posts/:id", "api_posts", "PostsApi.get_post"),
    ("PUT", "/posts/:id", "api_posts", "PostsApi.edit_post"),
    ("DELETE", "/posts/:id", "api_posts", "PostsApi.delete_post"),
    ("PUT", "/posts/:id/settings", "api_posts", "PostsApi.update_settings"),
    ("PUT", "/posts/:id/status", "api_posts", "PostsApi.change_status"),
    ("PUT", "/posts/:id/release-id", "api_posts", "PostsApi.link_release"),
    ("GET", "/posts/:id/missing", "api_posts", "PostsApi.missing_releases"),
    ("POST", "/posts/:id/retry", "api_posts", "PostsApi.retry"),
    ("GET", "/notifications", "api_posts", "PostsApi.notifications"),
    ("GET", "/find-slot/:id", "api_posts", "PostsApi.find_slot"),
    ("GET", "/analytics/post/:postId", "analytics", "AnalyticsApi.post"),
    ("GET", "/analytics/:integration", "analytics", "AnalyticsApi.channel"),
    ("POST", "/upload", "media", "MediaApi.upload"),
    ("POST", "/upload-from-url", "media", "MediaApi.upload_from_url"),
    ("GET", "/webhooks", "api_channels", "WebhooksApi.list_webhooks"),
    ("POST", "/webhooks", "api_channels", "WebhooksApi.create"),
    ("DELETE", "/webhooks/:id", "api_channels", "WebhooksApi.delete"),
    # Webhook events (issue 26, repeats): a webhook's events, channels, url, name or secret changed.
    ("PUT", "/webhooks/:id", "api_channels", "WebhooksApi.update"),
    ("GET", "/organization", "api_channels", "OrganizationApi.show"),
    ("PUT", "/organization", "api_channels", "OrganizationApi.update"),
    ("POST", "/organization/api-key", "api_channels", "OrganizationApi.rotate_key"),
    ("GET", "/api-keys", "api_keys", "KeysApi.list_keys"),
    ("POST", "/api-keys", "api_keys", "KeysApi.add"),
    ("DELETE", "/api-keys/:id", "api_keys", "KeysApi.revoke"),
    ("POST", "/posts/:id/approve", "review", "ReviewApi.approve"),
    ("POST", "/posts/:id/reject", "review", "ReviewApi.reject"),
    ("GET", "/alerts", "alerts", "AlertsApi.show"),
    ("PUT", "/alerts", "alerts", "AlertsApi.update"),
    ("GET", "/openapi.json", "openapi", "OpenApiRoute.serve"),
    # The library the composer draws on (issue 24): tags, signatures, sets, and a post copied as drafts.
    ("GET", "/tags", "api_library", "TagsApi.list_tags"),
    ("POST", "/tags", "api_library", "TagsApi.create"),
    ("PUT", "/tags/:id", "api_library", "TagsApi.update"),
    ("DELETE", "/tags/:id", "api_library", "TagsApi.delete"),
    ("GET", "/signatures", "api_library", "SignaturesApi.list_signatures"),
    ("POST", "/signatures", "api_library", "SignaturesApi.create"),
    ("PUT", "/signatures/:id", "api_library", "SignaturesApi.update"),
    ("DELETE", "/signatures/:id", "api_library", "SignaturesApi.delete"),
    ("GET", "/sets", "api_library", "SetsApi.list_sets"),
    ("POST", "/sets", "api_library", "SetsApi.create"),
    ("PUT", "/sets/:id", "api_library", "SetsApi.update"),
    ("DELETE", "/sets/:id", "api_library", "SetsApi.delete"),
    ("POST", "/posts/:id/duplicate", "api_library", "PostCopies.duplicate"),
    # The media library (issue 24).
    ("GET", "/media", "media_library", "MediaLibraryApi.list_media"),
    ("POST", "/media/delete", "media_library", "MediaLibraryApi.delete_many"),
    ("PUT", "/media/:id", "media_library", "MediaLibraryApi.update_media"),
    ("DELETE", "/media/:id", "media_library", "MediaLibraryApi.delete_media"),
    # E-mail (issue 25): the signed-in person's e-mail preferences.
    ("GET", "/me/notifications", "mail", "NotificationPreferencesApi.show"),
    ("PUT", "/me/notifications", "mail", "NotificationPreferencesApi.update"),
    # The audit log (issue 25, part "audit"): admins read who changed what.
    ("GET", "/audit", "audit", "AuditApi.list_entries"),
    ("GET", "/audit/actors", "audit", "AuditApi.list_actors"),
    # Members and invites (issue 25, members): the organization's admins only.
    ("GET", "/members", "team", "MembersApi.list_members"),
    ("POST", "/members", "team", "MembersApi.invite"),
    ("PUT", "/members/:id", "team", "MembersApi.change_role"),
    ("DELETE", "/members/:id", "team", "MembersApi.remove"),
    ("POST", "/members/invites/:id/resend", "team", "MembersApi.resend_invite"),
    ("DELETE", "/members/invites/:id", "team", "MembersApi.revoke_invite"),
    # Client review links and comments on a post (issue 25, review-links).
    ("POST", "/posts/:id/preview-link", "preview_links", "ReviewLinksApi.create"),
    ("DELETE", "/posts/:id/preview-link", "preview_links", "ReviewLinksApi.revoke"),
    ("GET", "/posts/:id/comments", "preview_links", "CommentsApi.list_comments"),
    ("POST", "/posts/:id/comments", "preview_links", "CommentsApi.add"),
    ("DELETE", "/posts/:id/comments/:commentId", "preview_links", "CommentsApi.delete"),
    # Short links (issue 26, shortlinks): a post's links with their clicks.
    ("GET", "/posts/:id/links", "short_links", "ShortLinksApi.links"),
    # Analytics over time (issue 26, analytics): a post's snapshots at 1 h, 24 h, 7 d and a channel's best times.
    ("GET", "/analytics/post/:postId/history", "analytics", "AnalyticsApi.post_history"),
    ("GET", "/integrations/:id/best-times", "analytics", "AnalyticsApi.best_times"),
    # The queue (issue 26, queue): weekly posting schedules, a channel's queue, its order and its switches.
    ("GET", "/integrations/:id/schedule", "api_queue", "QueueApi.show_schedule"),
    ("PUT", "/integrations/:id/schedule", "api_queue", "QueueApi.update_schedule"),
    ("PUT", "/integrations/:id/queue", "api_queue", "QueueApi.update_settings"),
    ("GET", "/queue", "api_queue", "QueueApi.show_queue"),
    ("POST", "/queue/reorder", "api_queue", "QueueApi.reorder"),
    ("GET", "/integrations/:id/free-slot", "api_posts", "PostsApi.find_slot"),  # (find-slot's other name)
    # RSS/Atom autopost (issue 26, autopost): feeds whose new items become posts.
    ("GET", "/autopost", "autopost", "AutopostApi.list_feeds"),
    ("POST", "/autopost", "autopost", "AutopostApi.create"),
    ("POST", "/autopost/preview", "autopost", "AutopostApi.preview_post"),
    ("PUT", "/autopost/:id", "autopost", "AutopostApi.update"),
    ("DELETE", "/autopost/:id", "autopost", "AutopostApi.delete"),
    ("POST", "/autopost/:id/fetch", "autopost", "AutopostApi.fetch"),
    # The MCP clients connected through rustiz's OAuth server (issue 27), and their revocation.
    ("GET", "/oauth/clients", "oauth_server", "ConnectedClients.list_clients"),
    ("DELETE", "/oauth/clients/:id", "oauth_server", "ConnectedClients.revoke"),
)
# Everything else; each of these paths is served under "" and "/api", as Postiz's backend is.
OTHER_ROUTES = (
    ("GET", "/uploads/:year/:month/:day/:name", "media", "MediaApi.serve_upload"),
    ("POST", "/mcp", "mcp", "McpServer.post"),
    ("POST", "/mcp/:apiKey", "mcp", "McpServer.post"),
    ("DELETE", "/mcp", "mcp", "McpServer.delete"),
    ("DELETE", "/mcp/:apiKey", "mcp", "McpServer.delete"),
    ("GET PUT PATCH", "/mcp", "mcp", "McpServer.not_allowed"),
    ("GET PUT PATCH", "/mcp/:apiKey", "mcp", "McpServer.not_allowed"),
    ("GET", "/sse/:apiKey", "mcp", "McpServer.open_sse"),
    ("POST", "/message/:apiKey", "mcp", "McpServer.post_sse_message"),
    ("OPTIONS", "/mcp", "mcp", "McpServer.preflight"),
    ("OPTIONS", "/mcp/:apiKey", "mcp", "McpServer.preflight"),
    ("OPTIONS", "/sse/:apiKey", "mcp", "McpServer.preflight"),
    ("OPTIONS", "/message/:apiKey", "mcp", "McpServer.preflight"),
)
# Served at these paths only: the metrics, the web app's sign-in, and the OAuth callback.
ROOT_ROUTES = (
    ("GET", "/metrics", "metrics", "Metrics.serve"),
    ("POST", "/auth/login", "web", "WebApp.login"),
    ("GET", "/auth/session", "web", "WebApp.session"),
    ("POST", "/auth/logout", "web", "WebApp.logout"),
    ("POST", "/auth/switch", "web", "WebApp.switch"),
    # Accepting an invite, and a forgotten password (issue 25, members): open to anyone.
    ("GET", "/auth/invite", "team", "TeamSignIn.invite"),
    ("POST", "/auth/invite", "team", "TeamSignIn.accept"),
    ("POST", "/auth/forgot", "team", "TeamSignIn.forgot"),
    ("POST", "/auth/reset", "team", "TeamSignIn.reset"),
    ("GET", "/integrations/social/:identifier", "connect", "ConnectFlow.callback"),  # OAuth's way back, as Postiz's
    ("GET", "/integrations/social/:identifier/", "connect", "ConnectFlow.callback"),  # (TikTok Business's, as Postiz's)
    # Issue 28, chat: Telegram's operator bot, its updates when Telegram sends them (its secret header decides).
    ("POST", "/integrations/telegram/updates", "telegram_bot", "TelegramUpdates.receive"),
    # Single sign-on (issue 25): the ways to sign in, the way to the identity provider, and the way back.
    ("GET", "/auth/methods", "oidc", "SingleSignOn.methods"),
    ("GET", "/auth/oidc/start", "oidc", "SingleSignOn.start"),
    ("GET", "/auth/oidc/callback", "oidc", "SingleSignOn.callback"),
    # A review link's page for a client without an account, and its form (issue 25, review-links).
    ("GET", "/p/:token", "client_review", "ClientReviewPage.page"),
    ("POST", "/p/:token/comment", "client_review", "ClientReviewPage.comment"),
    ("POST", "/p/:token/approve", "client_review", "ClientReviewPage.approve"),
    ("POST", "/p/:token/request-changes", "client_review", "ClientReviewPage.request_changes"),
    ("GET", "/p/:token/picture/:n", "client_review", "ClientReviewPage.picture"),
    # A short link (issue 26, shortlinks): open to anyone, a 302 to the original link, the click counted.
    ("GET", "/s/:code", "short_links", "ShortLinkRedirect.follow"),
    # rustiz as an OAuth 2.1 authorization server for MCP clients (issue 27): metadata, registration, tokens.
    ("GET", "/.well-known/oauth-authorization-server", "oauth_server", "OAuthServer.server_metadata"),
    ("GET", "/.well-known/openid-configuration", "oauth_server", "OAuthServer.server_metadata"),
    ("GET", "/.well-known/oauth-protected-resource", "oauth_server", "OAuthServer.resource_metadata"),
    ("GET", "/.well-known/oauth-protected-resource/mcp", "oauth_server", "OAuthServer.resource_metadata"),
    ("POST", "/oauth/register", "oauth_server", "OAuthServer.register"),
    ("GET", "/oauth/authorize", "oauth_consent", "ConsentPage.page"),
    ("POST", "/oauth/authorize", "oauth_consent", "ConsentPage.decide"),
    ("POST", "/oauth/token", "oauth_server", "OAuthServer.token"),
    ("POST", "/oauth/revoke", "oauth_server", "OAuthServer.revoke"),
    *(("OPTIONS", path, "oauth_server", "OAuthServer.preflight") for path in (
        "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration",
        "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/oauth/register",
        "/oauth/token", "/oauth/revoke")),
)
# The web app's files (GET and HEAD, no key), kept apart from the routes above, which are the API.
WEB_FILES = (("/", "web", "WebApp.index"), ("/web/:name", "web", "WebApp.file"))


class App:
    """The routing table, and the order every request goes through: method, limits, route, auth, handler."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store
        self.guard = Guard(config, store)
        self.routes: dict = {}  # path -> {method: Route or LazyRoute}, for paths without parameters
        self.patterns: dict = {}  # path template -> (its segments, {method: Route or LazyRoute})
        # The same patterns by their literal leading segments ("public/v1", "mcp"), so that a path is
        # matched against its own family only: /mcp/<key> need not fail thirty API patterns first.
        self.pattern_families: dict = {}
        self.files: dict = {}  # the web app's files: path or template -> {"GET": Route or LazyRoute}
        self.features: dict = {}  # feature class -> its one object in this worker
        self._http: Any = None
        self.add("GET", "/health", Route(self.health, authenticated=False))
        for method, path, module, handler in API_ROUTES:
            for prefix in API_PREFIXES:
                self.add(method, prefix + path, LazyRoute(module, handler))
        for methods, path, module, handler in OTHER_ROUTES:
            for prefix in ("", "/api"):
                for method in methods.split():
                    self.add(method, prefix + path, LazyRoute(module, handler))
        for method, path, module, handler in ROOT_ROUTES:
            self.add(method, path, LazyRoute(module, handler))
        for path, module, handler in WEB_FILES:
            self.files[path] = {"GET": LazyRoute(module, handler)}

    def add(self, method: str, path: str, handler: Union[Route, LazyRoute, Callable], **options: Any) -> None:
        """Route `method` on `path` to a Route, a LazyRoute, or a handler with Route's `options`; a segment
        written `:name` matches any one segment, given as request.params[name]."""
        route = handler if type(handler) in (Route, LazyRoute) else Route(handler, **options)
        if ":" not in path:
            self.routes.setdefault(path, {})[method] = route
            return
        if path not in self.patterns:
            # Matched segment by segment (template_parameters): compiling a regular expression for each of
            # the sixty-odd templates would cost every start-up a few milliseconds.
            self.patterns[path] = (tuple(path[1:].split("/")), {})  # (a trailing "/" is an empty last segment)
            self.pattern_families.setdefault(_pattern_family(path), []).append(self.patterns[path])
        self.patterns[path][1][method] = route

    def feature(self, cls: type) -> Any:
        """The one object of a feature class (PostsApi, McpServer...) in this worker, built from the App."""
        found = self.features.get(cls)
        if found is None:
            found = self.features[cls] = cls(self)
        return found

    def resolve(self, lazy: LazyRoute) -> Route:
        """The Route a LazyRoute stands for: its module imported, its object built, its options read."""
        import importlib
        module = importlib.import_module("rustiz_features." + lazy.module)
        class_name, _, method_name = lazy.handler.partition(".")
        owner = self.feature(getattr(module, class_name))
        handler = getattr(owner, method_name)
        options = {name: getattr(owner, value) if isinstance(value, str) and name not in ("scope", "audit") else value
                   for name, value in getattr(handler, "route_options", {}).items()}
        if options.get("audit"):  # the one place a change's audit entry is written, around its handler
            from rustiz_features.audit import audited
            handler = audited(self, handler, options["audit"])
        return Route(handler, **options)

    @property
    def http(self) -> Any:
        """The one outbound client of this worker (channel connect, helper tools, upload-from-url), with its
        address guard; made on first use: most processes never call another server."""
        if self._http is None:
            from rustiz_features.http_client import HttpClient
            self._http = HttpClient(self.config.fetch_allow)
        return self._http

    def body_limit_for(self, head: RequestHead) -> Optional[int]:
        """A larger body limit for a route that streams its body (uploads); asked by the parser only about
        chunked bodies and bodies over RUSTIZ_MAX_BODY."""
        request = Request(head, b"", "")
        routes = self._find_routes(request)
        route = routes.get(head.method) if routes is not None else None
        if route is None:
            return None
        if type(route) is LazyRoute:
            route = routes[head.method] = self.resolve(route)
        return route.body_limit if route.open_sink is not None else None

    def _find_routes(self, request: Request) -> Optional[dict]:
        path = request.path
        routes = self.routes.get(path) or self.files.get(path)
        if routes is not None:
            return routes
        segments = path.split("/", 3)  # "", first, second, rest
        if segments[1:2] == ["web"] and len(segments) == 3:
            request.params = {"name": segments[2]}
            return self.files["/web/:name"]
        families = ("/".join(segments[1:3]), segments[1]) if len(segments) > 2 else (segments[-1],)
        parts = path.split("/")[1:] if path.startswith("/") else None
        for family in families:
            for template, methods in self.pattern_families.get(family, ()):
                params = template_parameters(template, parts)
                if params is not None:
                    from urllib.parse import unquote
                    request.params = {name: unquote(value) for name, value in params.items()}
                    if any("\x00" in value for value in request.params.values()):
                        return None  # no id holds a NUL (and PostgreSQL refuses one in any text it is sent)
                    return methods
        return None


    def handle(self, request: Request) -> Union[Response, Awaitable[Response]]:
        """Admit `request`, then answer it (a connection calls the two apart: admit as soon as the head is in)."""
        refused = self.admit(request)
        return refused if refused is not None else self.respond(request)

    def admit(self, request: Request) -> Optional[Response]:
        """None when `request` goes on, decided from its head alone (method, limits, route, key), with its
        route and organization recorded on it for `respond`; else its answer (405, 429, 404, 401...).

        On PostgreSQL what needs the database (the key, the session, API_LIMIT) is decided by `respond`, on a
        Store thread, except for a route that streams its body (an upload): it is let in by its key first."""
        try:
            method = request.method
            if method not in KNOWN_METHODS:
                return self._method_not_allowed(request, KNOWN_METHODS)
            if self.config.request_limit and request.path != "/health":
                try:
                    self.guard.count_request(request)
                except ApiError:
                    request.keep_alive = False  # a client past REQUEST_LIMIT loses its connection, pipeline and all
                    raise
            request.rate_headers = ()
            if method == "POST" and not self.store.remote:  # (PostgreSQL: counted on a Store thread)
                self._count_post(request)
            routes = self._find_routes(request)
            if routes is None:
                if request.path == "*":  # OPTIONS * (the parser lets no other method through with it)
                    return Response(204, b"", "", [("Allow", ", ".join(KNOWN_METHODS))])
                return json_response({"message": f"Cannot {method} {request.target}", "error": "Not Found",
                                      "statusCode": 404}, 404, list(request.rate_headers))
            key = "GET" if method == "HEAD" else method
            route = routes.get(key)
            if route is None:
                allowed = sorted(routes) + (["HEAD"] if "GET" in routes else [])
                if method == "OPTIONS":
                    return Response(204, b"", "", [("Allow", ", ".join(allowed + ["OPTIONS"]))])
                return self._method_not_allowed(request, allowed)
            if type(route) is LazyRoute:
                route = routes[key] = self.resolve(route)
            request.route, request.organization = route, None
            if not self.store.remote or route.open_sink is not None or route.on_loop:
                self._authorize(request)
            elif route.authenticated and not Guard.presented_key(request) and not session_cookie(request):
                raise _unauthorized(NO_API_KEY)  # (needs no database: refused before any of its body is read)
            return None
        except ApiError as error:
            return error.response()
        except Exception:
            return internal_error_response()

    def _count_post(self, request: Request) -> None:
        """API_LIMIT, with Postiz's X-RateLimit-* headers for the answer; raises ApiError (429, or 401)."""
        if request.method == "POST" and "/public/v1/posts" in request.path and self.config.api_limit:
            # Postiz's throttler counts every POST to /public/v1/posts* after auth, valid or not.
            request.rate_headers = self.guard.count_post(self.guard.organization(request))

    def _authorize(self, request: Request) -> None:
        """Who calls: the organization of the key or session, or of the MCP URL's key; raises ApiError (401...)."""
        route = request.route
        if route.authenticated:
            request.organization = self.guard.organization(request)
            if request.scope != "full":
                needed = route.scope or ("read" if request.method in ("GET", "HEAD") else "full")
                self.guard.check_scope(request, needed, f"{request.method} {request.path}")
        elif route.authenticate is not None:  # (MCP: each tool checks the key's scope)
            request.organization = route.authenticate(request)

    def respond(self, request: Request) -> Union[Response, Awaitable[Response]]:
        """The answer to an admitted request, body and all: on PostgreSQL from a Store thread, so that
        the event loop never waits on the database (or from memory, on the loop: see Route.from_memory)."""
        if self.store.remote and not request.route.on_loop:
            if request.route.from_memory is not None:
                answer = self._answer_from_memory(request)
                if answer is not None:
                    return answer
            return self._respond_on_thread(request)
        return self.respond_here(request)

    def _answer_from_memory(self, request: Request) -> Optional[Response]:
        """The route's answer from memory alone, or None (the key not known in this credentials generation, a
        scope that would be refused, nothing remembered): the loop does no database work here."""
        route = request.route
        key = Guard.presented_key(request)
        if request.method not in ("GET", "HEAD") or not route.authenticated or not key:
            return None
        identity = self.guard.remembered_identity(key)
        if identity is None or not scope_allows(identity.scope, route.scope or "read"):
            return None  # (the refusal is worded on the thread, as for any other request)
        try:
            answer = route.from_memory(request, identity.organization)
        except Exception:
            return None  # (the thread answers, or explains the failure, as for any other request)
        if answer is not None:
            request.scope, request.key, request.organization = identity.scope, identity, identity.organization
        return answer

    async def _respond_on_thread(self, request: Request) -> Response:
        result = await self.store.off_loop(self._authorize_and_respond, request)
        if type(result) is Response or type(result) is FileResponse or type(result) is EventStreamResponse:
            return result
        return await result  # a handler that goes on waiting for the network (a coroutine, awaited on the loop)

    def _authorize_and_respond(self, request: Request) -> Union[Response, Awaitable[Response]]:
        try:
            self._count_post(request)
            if request.organization is None:
                self._authorize(request)
        except ApiError as error:
            return error.response()
        except Exception:
            return internal_error_response()
        return self.respond_here(request)

    def respond_here(self, request: Request) -> Union[Response, Awaitable[Response]]:
        """The answer to an admitted request, on the calling thread (SQLite: the event loop's)."""
        try:
            if request.route.authenticated:
                try:
                    response = request.route.handler(request, request.organization)
                except ApiError as refused:  # a refused create post still shows what it cost, as in Postiz
                    response = refused.response()
            else:
                response = request.route.handler(request)
            if request.rate_headers:
                if hasattr(response, "headers"):
                    response.headers.extend(request.rate_headers)
                else:  # a handler that awaits (an import, on its thread): the headers go on its answer
                    response = _with_headers(response, request.rate_headers)
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
        audit entries older than RUSTIZ_AUDIT_DAYS, and uploads abandoned by a crash."""
        if self.store.remote:  # (PostgreSQL: its queries wait on the network, so not on this loop)
            loop.run_in_executor(None, self._forget_expired_rows)
        else:
            self._forget_expired_rows()
        from rustiz_features.media import ABANDONED_UPLOAD_SECONDS, remove_abandoned_uploads
        remove_abandoned_uploads(self.config.uploads, time.time() - ABANDONED_UPLOAD_SECONDS)
        loop.call_later(300, self.housekeeping, loop)

    def _forget_expired_rows(self) -> None:
        try:
            self.store.forget_expired_rate_limits(time.time(), API_LIMIT_WINDOW_SECONDS)
            self.store.forget_expired_idempotency_keys(time.time())
            self.store.forget_old_audit_entries(iso_at(time.time() - self.config.audit_days * 86400))
        except sqlite3.Error as error:
            log(f"housekeeping failed, will retry: {error}")

    # --- handlers ---------------------------------------------------------------

    def health(self, request: Request) -> Response:
        if request.query_string and request.query.get("verbose") not in (None, "", "0"):
            return self.resolve(LazyRoute("metrics", "Metrics.verbose_health")).handler(request)
        problem = self.store.current_write_problem()
        if problem is not None:
            return service_unavailable(problem, 30)
        return Response(200, b"ok", "text/plain; charset=utf-8")


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
# 9. CLI
# =============================================================================

def initialize(config_path: str, force: bool, settings: Optional[dict] = None) -> tuple:
    """Create the config file (0600) with `settings` (checked first) in it, the database and one organization
    beside it.

    Returns (config path, API key, database path, uploads path)."""
    config_path = os.path.abspath(config_path)
    directory = os.path.dirname(config_path)
    settings = settings or {}
    if os.path.exists(config_path) and not force:
        raise UserError(f"{config_path} already exists; keeping it. Use --force to replace it "
                        f"(that makes a new API key and the old one stops working)", exit_code=1)
    if settings:  # checked as serve will read them, before anything is written
        config_from_values(config_path, {**{name: value for name, value in os.environ.items() if value != ""},
                                         **settings}, dict(os.environ))

    def beside_config(name: str, default: str) -> str:
        return os.path.join(directory, settings.get(name) or default)

    database = database_setting(settings, dict(os.environ), beside_config)
    uploads = beside_config("RUSTIZ_UPLOADS", "uploads")
    try:
        make_private_folders(uploads)
    except OSError as error:
        raise UserError(f"cannot create {directory}: {error.strerror}") from None
    key = new_api_key()
    store = Store(database)
    try:
        organizations = store.organizations()
        if organizations and store.remote and not force:
            raise UserError(f"the PostgreSQL database {redacted_url(database)} already has its organization, whose "
                            "key was made on the first machine: copy that machine's config.env here instead "
                            "(or use --force to make a new key, which stops the old one)", exit_code=1)
        if organizations:  # --force over an existing database: re-key it rather than add a second org
            store.set_api_key_hash(organizations[0]["id"], hash_api_key(key))
        else:
            store.create_organization("My organization", hash_api_key(key))
    finally:
        store.close()
    # Paths inside the config's folder are written relative to it, so that the folder moved or copied whole
    # opens its own database.
    write_config_file(config_path, {"RUSTIZ_API_KEY": key, **{
        name: os.path.relpath(path, directory) if path.startswith(directory + os.sep) else path
        for name, path in (("RUSTIZ_DATABASE", database), ("RUSTIZ_UPLOADS", uploads))}, **{
        name: value for name, value in settings.items() if name not in ("RUSTIZ_DATABASE", "RUSTIZ_UPLOADS")}})
    return config_path, key, database, uploads


def settings_from_arguments(pairs: list) -> dict:
    """`--set NAME=VALUE` pairs, each a line of config.env."""
    settings: dict = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not (name.isascii() and name.isidentifier()):
            raise UserError(f"--set {pair!r}: use --set NAME=VALUE, e.g. --set RUSTIZ_FETCH_ALLOW=127.0.0.1")
        if name in ("RUSTIZ_API_KEY", "RUSTIZ_CONFIG"):
            raise UserError(f"--set {name}: init makes the API key and writes the config where --dir says")
        if "\n" in value or "\r" in value:
            raise UserError(f"--set {name}: a value is one line")
        settings[name] = value
    return settings


def command_init(arguments: argparse.Namespace) -> int:
    config_path, key, database, uploads = initialize(os.path.join(arguments.dir, "config.env"), arguments.force,
                                                     settings_from_arguments(arguments.set))
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
            raise UserError(f"RUSTIZ_API_KEY in {config.config_path} matches no organization of the database "
                            f"{redacted_url(config.database)}: this config and that database belong to different "
                            "instances (a data folder moved or copied with an absolute RUSTIZ_DATABASE?). Point "
                            "RUSTIZ_DATABASE at this config's own database (a path relative to the config's folder, "
                            "e.g. rustiz.db); if it is the right database and the key is lost, `rustiz key rotate` "
                            "saves a new key in the config")
    except BaseException:
        store.close()
        raise
    return serve(config, note, store)


def command_version(arguments: argparse.Namespace) -> int:
    print(f"rustiz {VERSION} (Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})")
    return 0


def help_formatter(prog: str) -> argparse.HelpFormatter:
    """A fixed width: argparse's default asks the terminal through shutil, which costs start-up time."""
    import argparse
    return argparse.HelpFormatter(prog, width=100, max_help_position=32)


def build_argument_parser(argv: list, add_other_commands: Optional[Callable[..., None]]) -> argparse.ArgumentParser:
    """init, serve and version; between them, when given, the commands of rustiz_features.cli."""
    import argparse
    parser = argparse.ArgumentParser(
        prog="rustiz", description="A self-hosted social-media scheduler that speaks the Postiz public API.",
        epilog="rustiz help COMMAND (or rustiz COMMAND --help) shows what a command does and its options.",
        formatter_class=help_formatter)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    init = commands.add_parser("init", formatter_class=help_formatter,
                               help="create a config file, a database and an API key",
                               description="Create DIR/config.env (mode 0600), the SQLite database and one "
                                           "organization with a new API key, and print them. config.env is where "
                                           "every setting lives; --set writes settings into it.")
    init.add_argument("--dir", default=DEFAULT_DATA_DIR, help="where to create them (default: ./rustiz-data)")
    init.add_argument("--force", action="store_true", help="replace an existing config (makes a new API key)")
    init.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                      help="a setting to write into config.env, where every command reads it (repeat for each; "
                           "e.g. --set PORT=8080 --set RUSTIZ_FETCH_ALLOW=127.0.0.1)")
    init.set_defaults(run=command_init)
    serve_parser = commands.add_parser(
        "serve", formatter_class=help_formatter, help="run the server",
        description="Run the server with the config named by RUSTIZ_CONFIG (default ./rustiz-data/config.env; "
                    "created by init if missing). Environment variables override the file: PORT, HOST, "
                    "FRONTEND_URL, REQUEST_LIMIT, API_LIMIT, RUSTIZ_WORKERS, RUSTIZ_MAX_BODY, "
                    "RUSTIZ_HEADER_TIMEOUT, RUSTIZ_KEEPALIVE_TIMEOUT, RUSTIZ_SHUTDOWN_TIMEOUT, RUSTIZ_ACCESS_LOG, "
                    "RUSTIZ_TRUSTED_PROXIES, RUSTIZ_NO_SPEEDUPS.")
    serve_parser.add_argument("--workers", type=int, metavar="N",
                              help="processes sharing the port (default: RUSTIZ_WORKERS or 1)")
    serve_parser.set_defaults(run=command_serve)
    if add_other_commands is not None:
        add_other_commands(commands, help_formatter, argv)
    version = commands.add_parser("version", formatter_class=help_formatter, help="print the version",
                                  description="Print the version.")
    version.set_defaults(run=command_version)
    return parser


def plain_serve_arguments(argv: list) -> Optional[Any]:
    """`serve` and `serve --workers N` as argparse would parse them, without argparse: importing it and
    building the parser of every command cost several milliseconds of each start. None for anything else
    (--help, other spellings, mistakes), which argparse parses and explains."""
    if argv[:1] != ["serve"]:
        return None
    if len(argv) == 1:
        workers = None
    elif len(argv) == 3 and argv[1] == "--workers" and argv[2].isascii() and argv[2].isdigit():
        workers = int(argv[2])
    else:
        return None
    from types import SimpleNamespace
    return SimpleNamespace(command="serve", workers=workers, run=command_serve)


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["help"]:  # `rustiz help [COMMAND...]` is `rustiz [COMMAND...] --help`
        argv = [*argv[1:], "--help"]
    arguments = plain_serve_arguments(argv)
    if arguments is None:
        add_other_commands = None
        if argv[:1] not in (["init"], ["serve"], ["version"]):  # every other command lives beside the core
            from rustiz_features.cli import add_commands as add_other_commands
        arguments = build_argument_parser(argv, add_other_commands).parse_args(argv)
    try:
        return arguments.run(arguments)
    except UserError as error:
        print(f"rustiz: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    # Run as a script, this module is __main__: the feature modules' `from rustiz import ...` must find it
    # under its own name rather than load a second copy.
    sys.modules.setdefault("rustiz", sys.modules[__name__])
    sys.exit(main())
