"""Steps the provider tests share: connect a channel, upload media, schedule a post and wait for its
outcome, all over HTTP against the real server (plus a read of the database for thread parts)."""
from __future__ import annotations

import json
import sqlite3
import struct
import time
import zlib

from conftest import RustizServer, read_config

NOW = "now"


def call(server: RustizServer, method: str, path: str, body=None, headers: dict | None = None) -> tuple:
    """(status, parsed JSON or raw bytes) of one API call with the server's key."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    all_headers = {"Authorization": server.key, **({"Content-Type": "application/json"} if data and not headers
                                                   else {}), **(headers or {})}
    status, _, answer = server.request(method, path, all_headers, data, timeout=30)
    try:
        return status, json.loads(answer)
    except ValueError:
        return status, answer


def connect(server: RustizServer, provider: str, credentials: dict, name: str | None = None) -> tuple:
    body = {"provider": provider, "credentials": credentials, **({"name": name} if name else {})}
    return call(server, "POST", "/public/v1/integrations", body)


def connected(server: RustizServer, provider: str, credentials: dict) -> dict:
    status, channel = connect(server, provider, credentials)
    assert status == 201, channel
    return channel


def png_file(padding: int = 0) -> bytes:
    """A 1x1 PNG, `padding` bytes larger by a comment chunk."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    comment = chunk(b"tEXt", b"Comment\x00" + b"x" * padding) if padding else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)) + comment
            + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))


def mp4_file() -> bytes:
    def box(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", 8 + len(payload)) + kind + payload
    return box(b"ftyp", b"isom" + b"\x00\x00\x02\x00" + b"isomiso2avc1mp41") + box(b"moov", b"")


def upload(server: RustizServer, data: bytes, filename: str = "picture.png") -> dict:
    boundary = "----providerFlowBoundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    status, media = call(server, "POST", "/public/v1/upload", body,
                         {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert status in (200, 201), media
    return {"id": media["id"], "path": media["path"]}


def schedule(server: RustizServer, channel_id: str, contents: list, settings: dict, images: list | None = None,
             when: str = NOW) -> tuple:
    """POST /posts for one channel: `contents` are the thread's parts, `images` the media of the first part."""
    values = [{"content": content, "image": (images or []) if index == 0 else [], "delay": 0}
              for index, content in enumerate(contents)]
    body = {"type": "now" if when == NOW else "schedule", "date": "2024-01-01T00:00:00.000Z" if when == NOW else when,
            "shortLink": False, "tags": [], "posts": [{"integration": {"id": channel_id}, "value": values,
                                                      "settings": settings}]}
    return call(server, "POST", "/public/v1/posts", body)


def scheduled(server: RustizServer, channel_id: str, contents: list, settings: dict,
              images: list | None = None) -> str:
    status, answer = schedule(server, channel_id, contents, settings, images)
    assert status == 201, answer
    return answer[0]["postId"]


def thread_rows(server: RustizServer, root_id: str) -> list:
    """Every part of the root post's thread, in order, as stored: state, releaseId, releaseURL, error."""
    database = read_config(server.config_path)["RUSTIZ_DATABASE"]
    with sqlite3.connect(database) as connection:
        connection.row_factory = sqlite3.Row
        group = connection.execute("SELECT post_group FROM post WHERE id = ?", (root_id,)).fetchone()[0]
        rows = connection.execute("SELECT id, state, release_id, release_url, error FROM post WHERE post_group = ? "
                                  "ORDER BY created_at, rowid", (group,)).fetchall()
    return [dict(row) for row in rows]


def finished(server: RustizServer, root_id: str, timeout: float = 20.0) -> list:
    """The thread's parts once none is waiting or publishing any more."""
    deadline = time.monotonic() + timeout
    while True:
        rows = thread_rows(server, root_id)
        if all(row["state"] in ("PUBLISHED", "ERROR") for row in rows) or \
                any(row["state"] == "ERROR" for row in rows):
            return rows
        assert time.monotonic() < deadline, rows
        time.sleep(0.05)


def post_view(server: RustizServer, post_id: str) -> dict:
    status, post = call(server, "GET", f"/public/v1/posts/{post_id}")
    assert status == 200, post
    return post


def reconnect_needed(server: RustizServer, channel_id: str) -> bool:
    """Whether the channel is flagged for connecting again (Postiz's refreshNeeded)."""
    database = read_config(server.config_path)["RUSTIZ_DATABASE"]
    with sqlite3.connect(database) as connection:
        return bool(connection.execute("SELECT refresh_needed FROM integration WHERE id = ?",
                                       (channel_id,)).fetchone()[0])


def notifications(server: RustizServer) -> list:
    """The notifications' texts, newest first."""
    status, answer = call(server, "GET", "/public/v1/notifications")
    assert status == 200, answer
    return [item["content"] for item in answer["notifications"]]
