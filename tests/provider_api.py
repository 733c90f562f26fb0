"""What a provider test does through rustiz's public API: connect a channel, upload media, post now,
and wait for the scheduler's verdict."""
from __future__ import annotations

import datetime
import json
import time

from conftest import RustizServer
from provider_flow import connect, notifications, upload
from provider_flow import reconnect_needed as refresh_needed

# What the provider tests import from here (some of it shared with the other provider tests).
__all__ = [
    "connect", "notifications", "upload", "refresh_needed", "api", "post_body", "post_now", "finished"
]


def api(server: RustizServer, method: str, path: str, body=None) -> tuple:
    """(status, parsed JSON body) of one call to /public/v1."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": server.key, **({"Content-Type": "application/json"} if data is not None else {})}
    status, _, raw = server.request(method, "/public/v1" + path, headers, data)
    return status, json.loads(raw)


def post_body(channel_id: str, *parts, settings: dict | None = None) -> dict:
    """A POST /posts body publishing now; each part is its HTML, or (HTML, [media items])."""
    values = [{"content": part, "image": [], "delay": 0} if isinstance(part, str)
              else {"content": part[0], "image": part[1], "delay": 0} for part in parts]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return {"type": "now", "date": now, "shortLink": False, "tags": [],
            "posts": [{"integration": {"id": channel_id}, "value": values, "settings": settings or {}}]}


def post_now(server: RustizServer, channel_id: str, *parts, settings: dict | None = None) -> str:
    status, body = api(server, "POST", "/posts", post_body(channel_id, *parts, settings=settings))
    assert status == 201, body
    return body[0]["postId"]


def finished(server: RustizServer, post_id: str, timeout: float = 20.0) -> dict:
    """The post (GET /posts/:id) once it and all its thread parts are PUBLISHED or ERROR."""
    deadline = time.monotonic() + timeout
    while True:
        status, post = api(server, "GET", f"/posts/{post_id}")
        assert status == 200, post
        states = [post["state"]] + [part["state"] for part in post["thread"]]
        if "ERROR" in states or all(state == "PUBLISHED" for state in states):
            return post
        assert time.monotonic() < deadline, f"still {states} after {timeout} s: {post}"
        time.sleep(0.05)
