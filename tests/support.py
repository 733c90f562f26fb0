"""What the tests share, as plain functions over a running server (tests/conftest.py keeps the fixtures):
calling the public API as a client does, rows written straight into the database, media files to upload,
channels to connect, posts to schedule and wait for, and FakeOrigin, a web server with files to fetch."""
from __future__ import annotations

import hashlib
import html
import http.client
import json
import re
import secrets
import sqlite3
import struct
import time
import urllib.request
import zlib
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

from fakes import UNSIZED, FakePlatform, answer

if TYPE_CHECKING:
    from conftest import RustizServer

API = "/public/v1"
PREFIXES = ("/public/v1", "/api/public/v1")  # the public API answers under both
FAST_RETRIES = {"RUSTIZ_RETRY_BASE": "0.2"}
DONE = ("PUBLISHED", "ERROR")

# --- calling the API ---------------------------------------------------------------------------------

def run(coroutine) -> Any:
    """A provider's coroutine run to its end, for tests that drive a provider object directly."""
    import asyncio
    return asyncio.run(coroutine)


def media_file(tmp_path, data: bytes, name: str, content_type: str, kind: str = "image", alt: str = ""):
    """A MediaFile of `data` written to tmp_path/name, as the scheduler hands a provider one it stored."""
    from rustiz_features.publishers.base import MediaFile
    path = tmp_path / name
    path.write_bytes(data)
    return MediaFile(f"https://rustiz.example/uploads/{name}", str(path), content_type, kind, alt, name)


def oauth_channel(server: RustizServer, identifier: str) -> str:
    """The id of a channel connected through the platform's consent (connect_oauth), which must succeed."""
    back = connect_oauth(server, identifier)
    assert back["notice"] == "connected", back
    return back["channel"]


def api(server: RustizServer, method: str, path: str, body=None, *, key: str | None = None,
        headers: dict | None = None, timeout: float = 30) -> tuple[int, Any]:
    """(status, parsed JSON answer, or None when the answer is empty) of one call with the server's key,
    or `key`. A body that is not bytes is sent as JSON; every answer with a body must be JSON."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Authorization": server.key if key is None else key,
            **({"Content-Type": "application/json"} if data is not None else {}), **(headers or {})}
    status, answer_headers, raw = server.request(method, path, sent, data, timeout=timeout)
    if not raw:
        return status, None
    assert answer_headers.get("content-type", "").startswith("application/json"), (status, answer_headers, raw)
    return status, json.loads(raw)


def mcp_tool_call(server: RustizServer, key: str, tool: str, arguments: dict) -> dict:
    """The result of one MCP tools/call over Streamable HTTP, with `key` in the Authorization header."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    status, _, body = server.request("POST", "/mcp", {"Authorization": f"Bearer {key}",
                                                      "Content-Type": "application/json",
                                                      "Accept": "application/json, text/event-stream"},
                                     json.dumps(message).encode())
    assert status == 200, body
    return json.loads(body)["result"]


def auth(key: str) -> dict:
    """The header that carries an API key."""
    return {"Authorization": key}


def iso(seconds_from_now: float = 0.0) -> str:
    """The UTC time `seconds_from_now`, as the API writes dates (milliseconds, Z)."""
    moment = time.time() + seconds_from_now
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment)) + f".{int(moment % 1 * 1000):03d}Z"


def wait_for(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float = 20.0) -> Any:
    """Call `read()` until `done` holds for what it returned, and return that; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"still not done after {timeout} s: {value}"
        time.sleep(0.05)


# --- rows written straight into the database ----------------------------------------------------------

class _PostgresConnection:
    """The few sqlite3.Connection manners the tests use (execute with ? placeholders, fetchone/fetchall, a
    `with` block that commits), over a psycopg connection, so a test's direct rows work on both backends."""

    def __init__(self, url: str):
        import psycopg
        self.connection = psycopg.connect(url)

    def execute(self, sql: str, parameters: tuple = ()):
        return self.connection.execute(sql.replace("%", "%%").replace("?", "%s"),
                                       tuple(int(v) if type(v) is bool else v for v in parameters))

    def executemany(self, sql: str, rows: list) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(sql.replace("%", "%%").replace("?", "%s"), rows)

    def commit(self) -> None:
        self.connection.commit()

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> "_PostgresConnection":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        """Commit (or roll back) and close: each `with` block is one connection, so none is left open."""
        if kind is None:
            self.connection.commit()
        else:
            self.connection.rollback()
        self.connection.close()


def is_postgresql(database: str) -> bool:
    return database.startswith(("postgresql://", "postgres://"))


def connect_database(database: str):
    """The server's database for a test's direct reads and writes: its SQLite file, or its PostgreSQL database."""
    return _PostgresConnection(database) if is_postgresql(database) else sqlite3.connect(database)


def insertion_order(database: str) -> str:
    """A column that orders rows of one table as they were inserted, to break ties of created_at (rows written by
    one request share it): SQLite's rowid; PostgreSQL's ctid, the row's place in the table, which follows
    insertion for rows never updated since (the only ones the tests sort this way)."""
    return "ctid" if is_postgresql(database) else "rowid"


def dict_rows(database: str, sql: str, *parameters) -> list:
    """The rows of one query, each a dict by column name, on either backend."""
    with connect_database(database) as db:
        cursor = db.execute(sql, parameters)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]


class Database:
    """Rows written straight into the server's database, as a later rustiz feature (or Postiz) would:
    organizations, customers, channels, posts, tags and notifications."""

    def __init__(self, server: RustizServer):
        self.path = server.database
        with self.connect() as db:
            self.organization_id = db.execute("SELECT id FROM organization").fetchone()[0]
        self.clock = 0

    def connect(self):
        return connect_database(self.path)

    def stamp(self) -> str:
        self.clock += 1
        return f"2024-05-01T10:00:{self.clock:02d}.000Z"

    def organization(self) -> tuple:
        """Another organization; returns (id, key)."""
        organization_id, key = secrets.token_hex(8), secrets.token_hex(32)
        now = self.stamp()
        with self.connect() as db:
            db.execute("INSERT INTO organization (id, name, api_key_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                       (organization_id, "Other org", hashlib.sha256(key.encode()).hexdigest(), now, now))
        return organization_id, key

    def customer(self, name: str, organization_id: str | None = None) -> str:
        customer_id = "cust-" + secrets.token_hex(6)
        now = self.stamp()
        with self.connect() as db:
            db.execute("INSERT INTO customer (id, organization_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                       (customer_id, organization_id or self.organization_id, name, now, now))
        return customer_id

    def channel(self, name: str, provider: str, *, picture: str | None = None, profile: str | None = None,
                disabled: bool = False, customer_id: str | None = None, deleted: bool = False,
                organization_id: str | None = None) -> str:
        channel_id = "chan-" + secrets.token_hex(6)
        now = self.stamp()
        with self.connect() as db:
            db.execute(
                "INSERT INTO integration (id, internal_id, organization_id, name, picture, provider_identifier, "
                "profile, disabled, created_at, updated_at, customer_id, deleted_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (channel_id, "internal-" + channel_id, organization_id or self.organization_id, name, picture,
                 provider, profile, int(disabled), now, now, customer_id, now if deleted else None))
        return channel_id

    def post(self, channel_id: str, publish_date: str, *, state: str = "QUEUE", content: str = "<p>Hello</p>",
             group: str | None = None, parent: str | None = None, interval: int | None = None,
             settings: str = '{"__type":"x","who_can_reply_post":"everyone"}', image: str = "[]",
             release_id: str | None = None, release_url: str | None = None, error: str | None = None,
             deleted: bool = False, organization_id: str | None = None, creation_method: str = "API") -> str:
        post_id = "post" + secrets.token_hex(8)
        now = self.stamp()
        with self.connect() as db:
            db.execute(
                "INSERT INTO post (id, state, publish_date, organization_id, integration_id, content, post_group, "
                "parent_post_id, interval_in_days, settings, image, release_id, release_url, error, creation_method, "
                "created_at, updated_at, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (post_id, state, publish_date, organization_id or self.organization_id, channel_id, content,
                 group or secrets.token_hex(16), parent, interval, settings, image, release_id, release_url, error,
                 creation_method, now, now, now if deleted else None))
        return post_id

    def thread(self, channel_id: str, publish_date: str, contents: list, **options) -> list:
        """A root post and its replies, chained by parent, in one group; returns their ids."""
        group, ids, parent = secrets.token_hex(16), [], None
        for content in contents:
            parent = self.post(channel_id, publish_date, content=content, group=group, parent=parent, **options)
            ids.append(parent)
        return ids

    def tag(self, name: str, color: str = "#ff0000", organization_id: str | None = None) -> str:
        tag_id = "tag-" + secrets.token_hex(6)
        now = self.stamp()
        with self.connect() as db:
            db.execute("INSERT INTO tag (id, organization_id, name, color, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (tag_id, organization_id or self.organization_id, name, color, now, now))
        return tag_id

    def link_tag(self, post_id: str, tag_id: str) -> None:
        with self.connect() as db:
            db.execute("INSERT INTO tag_post (post_id, tag_id) VALUES (?, ?)", (post_id, tag_id))

    def notification(self, content: str, created_at: str, organization_id: str | None = None) -> str:
        notification_id = secrets.token_hex(16)
        with self.connect() as db:
            db.execute("INSERT INTO notification (id, organization_id, content, link, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (notification_id, organization_id or self.organization_id,
                                                     content, None, created_at, created_at))
        return notification_id

    def row(self, sql: str, *parameters) -> tuple:
        with self.connect() as db:
            return db.execute(sql, parameters).fetchone()

    def execute(self, sql: str, *parameters) -> None:
        with self.connect() as db:
            db.execute(sql, parameters)


# --- media files, tiny and valid, of every accepted type ------------------------------------------------

def png_file(width: int = 1, height: int = 1, *, pixel: bytes = b"\x80", padding: int = 0) -> bytes:
    """A PNG of one colour: `pixel` is one grey byte or three RGB bytes; `padding` bytes more in a comment."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    colour_type = 0 if len(pixel) == 1 else 2
    rows = b"".join(b"\x00" + pixel * width for _ in range(height))
    comment = chunk(b"tEXt", b"Comment\x00" + b"x" * padding) if padding else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0))
            + comment + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def jpeg_file() -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    return b"\xff\xd8" + app0 + b"\xff\xd9"


def gif_file() -> bytes:
    return (b"GIF89a" + struct.pack("<HHBBB", 1, 1, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
            + b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")


def webp_file() -> bytes:
    vp8l = b"\x2f\x00\x00\x00\x00\x88\x88\x08\x00"  # 1x1 lossless
    payload = b"WEBP" + b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l + b"\x00"
    return b"RIFF" + struct.pack("<I", len(payload)) + payload


def bmp_file() -> bytes:
    pixels = b"\x00\x00\xff\x00"  # one red pixel, padded to 4 bytes
    info = struct.pack("<IiiHHIIiiII", 40, 1, 1, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + len(info) + len(pixels), 0, 0, 14 + len(info)) + info + pixels


def tiff_file() -> bytes:
    entries = [(256, 3, 1, 1), (257, 3, 1, 1), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
               (273, 4, 1, 8 + 2 + 12 * 8 + 4), (278, 3, 1, 1), (279, 4, 1, 1)]
    ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", *entry) for entry in entries)
    return b"II*\x00" + struct.pack("<I", 8) + ifd + struct.pack("<I", 0) + b"\x80"


def iso_box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def avif_file() -> bytes:
    return iso_box(b"ftyp", b"avif" + b"\x00\x00\x00\x00" + b"avifmif1miaf") + iso_box(b"meta", b"\x00" * 4)


def mp4_file(size: int = 0) -> bytes:
    """An MP4's first boxes; with `size`, zeros in an mdat box make it that many bytes."""
    head = iso_box(b"ftyp", b"isom" + b"\x00\x00\x02\x00" + b"isomiso2avc1mp41") + iso_box(b"moov", b"")
    return head + (iso_box(b"mdat", b"\x00" * (size - len(head) - 8)) if size else b"")


# --- uploading -----------------------------------------------------------------------------------------

def multipart(fields: list, boundary: str = "----rustizTestBoundary7MA4YWxk") -> tuple:
    """fields: (name, filename or None, bytes); returns (content type, body)."""
    parts = []
    for name, filename, data in fields:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        parts.append(f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    return f"multipart/form-data; boundary={boundary}", b"".join(parts) + f"--{boundary}--\r\n".encode()


def upload(server: RustizServer, data: bytes, filename: str | None = "png", *, field: str = "file",
           key: str | None = None, prefix: str = API) -> tuple:
    """(status, answer) of POST /upload with `data` as the file."""
    content_type, body = multipart([(field, filename, data)])
    return api(server, "POST", f"{prefix}/upload", body, key=key, headers={"Content-Type": content_type})


def upload_from_url(server: RustizServer, url, *, key: str | None = None) -> tuple:
    """(status, answer) of POST /upload-from-url (given a minute: the server fetches the file first)."""
    return api(server, "POST", f"{API}/upload-from-url", {"url": url}, key=key, timeout=60)


def uploaded(server: RustizServer, data: bytes, filename: str = "png") -> dict:
    """`data` uploaded: {"id", "path"}, as a post's image item."""
    status, media = upload(server, data, filename)
    assert status == 201, media
    return {"id": media["id"], "path": media["path"]}


# --- channels ------------------------------------------------------------------------------------------

def connect(server: RustizServer, provider: str, credentials: dict, name: str | None = None) -> tuple:
    """(status, answer) of POST /integrations."""
    body = {"provider": provider, "credentials": credentials, **({"name": name} if name else {})}
    return api(server, "POST", f"{API}/integrations", body)


def connected(server: RustizServer, provider: str, credentials: dict, name: str | None = None) -> dict:
    """A new channel (its JSON), connected with `credentials`."""
    status, channel = connect(server, provider, credentials, name)
    assert status == 201, channel
    return channel


def webhook_channel(server: RustizServer, receiver, name: str | None = None, path: str = "/hook") -> str:
    """The id of a new `webhook` channel that posts to `receiver` (a FakeWebhookReceiver) at `path`."""
    return connected(server, "webhook", {**receiver.credentials(), "url": receiver.url + path}, name)["id"]


def expire_token_in(server: RustizServer, channel_id: str, seconds_from_now: float) -> None:
    """Make the channel's stored token expire `seconds_from_now` (negative: already expired)."""
    with connect_database(server.database) as db:
        db.execute("UPDATE integration SET token_expiration = ? WHERE id = ?", (iso(seconds_from_now), channel_id))


def refresh_needed(server: RustizServer, channel_id: str) -> bool:
    """Whether the channel is flagged for connecting again (Postiz's refreshNeeded)."""
    with connect_database(server.database) as db:
        return bool(db.execute("SELECT refresh_needed FROM integration WHERE id = ?", (channel_id,)).fetchone()[0])


def channel_session(server: RustizServer, channel_id: str) -> dict:
    """What the channel's publisher keeps between calls (a login, a cached token), as stored."""
    with connect_database(server.database) as db:
        return json.loads(db.execute("SELECT session FROM integration WHERE id = ?", (channel_id,)).fetchone()[0]
                          or "null") or {}


def trigger(server: RustizServer, channel_id: str, method_name: str, data: dict | None = None) -> tuple:
    """(status, answer) of a channel's tool, through POST /integration-trigger."""
    body = {"methodName": method_name, "data": data or {}}
    return api(server, "POST", f"{API}/integration-trigger/{channel_id}", body)


# --- connecting through OAuth, as a browser does ----------------------------------------------------------

def browser_session(server: RustizServer, key: str | None = None) -> str:
    """The Cookie header of a browser signed in to the web app with `key` (the server's own by default)."""
    request = urllib.request.Request(server.url + "/auth/login", json.dumps({"apiKey": key or server.key}).encode(),
                                     {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Set-Cookie"].partition(";")[0]


def visit(server: RustizServer, path: str, cookie: str | None = None, *, signed_in: bool = True) -> tuple:
    """(status, headers) of a GET as a browser's first hop: a redirect is not followed. The browser is signed
    in to the web app (`cookie`, or a new session of the server's key) unless signed_in is False."""
    if signed_in and cookie is None:
        cookie = browser_session(server)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("GET", path, headers={"Cookie": cookie} if signed_in else {})
        response = connection.getresponse()
        response.read()
        return response.status, {name.lower(): value for name, value in response.getheaders()}
    finally:
        connection.close()


def redirect_query(location: str) -> dict:
    """The query of the channels page rustiz redirects to (notice, problem, channel)."""
    assert location.startswith("/#/channels?") or "/#/channels?" in location, location
    return {name: values[0] for name, values in parse_qs(location.split("?", 1)[1]).items()}


def consent_link(url: str, link: str = "allow") -> str:
    """Open a fake platform's consent page and read one of its links (id="allow", "deny", "decline"...):
    the URL the user's click leads to."""
    page = urllib.request.urlopen(url, timeout=10).read().decode()
    return html.unescape(re.search(rf'id="{link}" href="([^"]+)"', page)[1])


def follow_consent(url: str, link: str = "allow") -> dict:
    """Open the fake's consent page and follow one of its links (id="allow", "deny", "decline"...): the query of
    the callback URL it leads to (the last value of each name)."""
    return {name: values[-1] for name, values in parse_qs(urlsplit(consent_link(url, link)).query).items()}


def connect_oauth(server: RustizServer, identifier: str, refresh: str = "", link: str = "allow") -> dict:
    """Connect through GET /social/:identifier, the fake platform's consent page and rustiz's callback, as a
    browser does: the query of the channels page rustiz redirects to (notice, problem, channel)."""
    status, body = api(server, "GET", f"{API}/social/{identifier}" + (f"?refresh={refresh}" if refresh else ""))
    assert status == 200, body
    callback = urlsplit(consent_link(body["url"], link))
    return redirect_query(visit(server, callback.path + "?" + callback.query)[1]["location"])


# --- posts ---------------------------------------------------------------------------------------------

def channel_post(channel_id: str, *parts, settings: dict | None = None, images: list | None = None,
                 delay: int = 0, **fields) -> dict:
    """One channel's entry of a POST /posts body: each part of the thread is its HTML, or (HTML, [image
    items]); `images` go with the first part."""
    values = []
    for number, part in enumerate(parts):
        if isinstance(part, tuple):
            content, media = part
        else:
            content, media = part, (images or []) if number == 0 else []
        values.append({"content": content, "image": media, "delay": delay})
    return {"integration": {"id": channel_id}, "value": values, "settings": settings or {}, **fields}


def post_body(*posts: dict, type: str = "now", date: str | None = None, **fields) -> dict:
    """A POST /posts body for the channel_post() entries; the date defaults to now."""
    return {"type": type, "date": date or iso(), "shortLink": False, "tags": [], **fields, "posts": list(posts)}


def schedule(server: RustizServer, channel_id: str, *parts, settings: dict | None = None, images: list | None = None,
             provider: str | None = None, type: str = "now", date: str | None = None, delay: int = 0,
             **fields) -> tuple:
    """(status, answer) of POST /posts for one channel (see channel_post): `provider` names the settings'
    __type; a post of type "schedule" is due a second from now unless `date` says when; `fields` go into
    the body (inter, customer...)."""
    if provider is not None:
        settings = {"__type": provider, **(settings or {})}
    if type == "schedule" and date is None:
        date = iso(1)
    entry = channel_post(channel_id, *parts, settings=settings, images=images, delay=delay)
    return api(server, "POST", f"{API}/posts", post_body(entry, type=type, date=date, **fields))


def scheduled(server: RustizServer, channel_id: str, *parts, **options) -> str:
    """The id of a post schedule() created (see there for the options)."""
    status, answer = schedule(server, channel_id, *parts, **options)
    assert status == 201, answer
    return answer[0]["postId"]


def refused_post(server: RustizServer, channel_id: str, *parts, **options) -> str:
    """The answer, as JSON text, of a schedule() that must be refused with a 400."""
    status, answer = schedule(server, channel_id, *parts, **options)
    assert status == 400, answer
    return json.dumps(answer)


def get_post(server: RustizServer, post_id: str) -> dict:
    """GET /posts/:id: the post with its thread parts."""
    status, post = api(server, "GET", f"{API}/posts/{post_id}")
    assert status == 200, post
    return post


def parts_of(post: dict) -> list:
    """The post and its thread parts, in order."""
    return [post, *post["thread"]]


def waiting_for_reconnect(server: RustizServer, post_id: str, timeout: float = 20.0) -> dict:
    """The post once it waits in the queue for its channel to be reconnected (the platform refused the
    channel's credentials); its error says what the platform said."""
    post = wait_for(lambda: get_post(server, post_id),
                    lambda post: (post.get("error") or "").startswith("Waiting for the channel to be reconnected"),
                    timeout)
    assert post["state"] == "QUEUE", post
    return post


def settled(server: RustizServer, post_id: str, timeout: float = 20.0, *, stop_at_error: bool = False) -> dict:
    """The post once it and every thread part is PUBLISHED or ERROR (with `stop_at_error`, once any is ERROR)."""
    def done(post: dict) -> bool:
        states = [part["state"] for part in parts_of(post)]
        return all(state in DONE for state in states) or (stop_at_error and "ERROR" in states)
    return wait_for(lambda: get_post(server, post_id), done, timeout)


def published(server: RustizServer, channel_id: str, *parts, state: str = "PUBLISHED", **options) -> dict:
    """The settled post (see settled, stop_at_error) of a post scheduled now, which must end in `state`."""
    post = settled(server, scheduled(server, channel_id, *parts, **options), stop_at_error=True)
    assert post["state"] == state, post
    return post


def thread_rows(server: RustizServer, root_id: str) -> list:
    """Every part of the root post's thread, in order (each part's parent is the one before), as stored: id,
    state, release_id, release_url, error."""
    rows = dict_rows(server.database, "SELECT id, parent_post_id, state, release_id, release_url, error FROM post "
                     "WHERE post_group = (SELECT post_group FROM post WHERE id = ?)", root_id)
    reply_to = {row.pop("parent_post_id"): row for row in rows}
    thread = [next(row for row in rows if row["id"] == root_id)]
    while thread[-1]["id"] in reply_to:
        thread.append(reply_to[thread[-1]["id"]])
    return thread


def settled_rows(server: RustizServer, root_id: str, timeout: float = 20.0) -> list:
    """thread_rows() once every part is PUBLISHED or ERROR, or any part is ERROR."""
    return wait_for(lambda: thread_rows(server, root_id), lambda rows: all(row["state"] in DONE for row in rows)
                    or any(row["state"] == "ERROR" for row in rows), timeout)


def notifications(server: RustizServer) -> list:
    """The notifications' texts, newest first."""
    status, answer = api(server, "GET", f"{API}/notifications")
    assert status == 200, answer
    return [item["content"] for item in answer["notifications"]]


# --- a web server with files ----------------------------------------------------------------------------

class FakeOrigin(FakePlatform):
    """A web server with files, as upload-from-url (or a post's media) finds them: what serve() put at a
    path; /redirect/<n>, n redirects that end at /file/png; /to/<URL, percent-encoded>, a redirect there."""

    def __init__(self):
        super().__init__()
        self.route("GET", r"/redirect/(\d+)", self.hop)
        self.route("GET", r"/to/(.+)", lambda request: answer(302, b"", {"Location": unquote(request.match[1])}))

    def serve(self, path: str, data: bytes, content_type: str | None = None, sized: bool = True) -> None:
        """GET `path` answers `data`; not `sized`, without a Content-Length (the body ends with the connection)."""
        headers = {**({"Content-Type": content_type} if content_type else {}), **({} if sized else UNSIZED)}
        self.route("GET", re.escape(path), lambda request: answer(200, data, headers))

    @staticmethod
    def hop(request) -> tuple:
        hops = int(request.match[1])
        return answer(302, b"", {"Location": "/file/png" if hops <= 1 else f"/redirect/{hops - 1}"})


# --- the library: tags, signatures and sets (the composer's; rustiz_features/api_library.py) -------------------

def new_key(server: RustizServer, name: str, scope: str) -> str:
    """A new named API key of `scope` in the server's organization."""
    status, made = api(server, "POST", f"{API}/api-keys", {"name": name, "scope": scope})
    assert status == 201, made
    return made["apiKey"]


def library_create(server: RustizServer, area: str, body: Any, key: str | None = None) -> tuple:
    """(status, answer) of POST /public/v1/<area> ("tags", "signatures", "sets")."""
    return api(server, "POST", f"{API}/{area}", body, key=key)


def library_item(server: RustizServer, area: str, body: dict, key: str | None = None) -> dict:
    """A new item of the library's `area`, which must be made (201)."""
    status, item = library_create(server, area, body, key)
    assert status == 201, item
    return item


def library_items(server: RustizServer, area: str, key: str | None = None) -> list:
    """The organization's items of the library's `area`, as GET /public/v1/<area> lists them."""
    status, answer = api(server, "GET", f"{API}/{area}", key=key)
    assert status == 200 and set(answer) == {area}, answer
    return answer[area]


def two_organizations(server: RustizServer) -> dict:
    """The server's organization with a channel ("sky"), and another organization ("other_org", "other_key") with
    its own channel ("theirs"); "db" writes rows straight into the database."""
    db = Database(server)
    other_org, other_key = db.organization()
    return {"db": db, "other_org": other_org, "other_key": other_key, "sky": db.channel("Sky", "bluesky"),
            "theirs": db.channel("Theirs", "x", organization_id=other_org)}
