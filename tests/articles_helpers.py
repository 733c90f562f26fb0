"""What the article providers' tests (WordPress, Dev.to, Hashnode, Listmonk) share: connecting a channel,
uploading an image, scheduling a post and waiting for its outcome, over the real server's API."""
from __future__ import annotations

import json
import sqlite3
import time

from conftest import RustizServer, read_config
from provider_flow import notifications, png_file, upload
from provider_flow import connect, connected as connected_channel
from provider_flow import reconnect_needed as refresh_needed

# What the provider tests import from here (some of it shared with the other provider tests).
__all__ = [
    "notifications", "png_file", "upload", "connect", "connected_channel", "refresh_needed", "api",
    "upload_image", "post_body", "schedule", "refused_post", "wait_for_state", "channel_session", "trigger"
]


def api(server: RustizServer, method: str, path: str, body=None) -> tuple:
    """(status, JSON answer) of one public API call."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": server.key, **({"Content-Type": "application/json"} if data else {})}
    status, _, raw = server.request(method, path, headers, data)
    return status, json.loads(raw) if raw else None


def upload_image(server: RustizServer) -> dict:
    """A small PNG uploaded to rustiz: {"id", "path"} as a post's image entry."""
    return upload(server, png_file())


def post_body(channel_id: str, provider: str, contents: list, settings: dict, images: list | None = None) -> dict:
    values = [{"content": content, "image": (images or []) if number == 0 else [], "delay": 0}
              for number, content in enumerate(contents)]
    return {"type": "now", "date": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), "shortLink": False,
            "tags": [], "posts": [{"integration": {"id": channel_id}, "value": values,
                                   "settings": {"__type": provider, **settings}}]}


def schedule(server: RustizServer, channel_id: str, provider: str, contents: list, settings: dict,
             images: list | None = None) -> str:
    """Publish now; returns the post's id."""
    status, answer = api(server, "POST", "/public/v1/posts", post_body(channel_id, provider, contents, settings, images))
    assert status == 201, answer
    return answer[0]["postId"]


def refused_post(server: RustizServer, channel_id: str, provider: str, contents: list, settings: dict,
                 images: list | None = None) -> str:
    """The message of a POST /posts that must be refused with a 400."""
    status, answer = api(server, "POST", "/public/v1/posts", post_body(channel_id, provider, contents, settings, images))
    assert status == 400, answer
    return json.dumps(answer)


def wait_for_state(server: RustizServer, post_id: str, *states: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status, post = api(server, "GET", f"/public/v1/posts/{post_id}")
        assert status == 200, post
        if post["state"] in (states or ("PUBLISHED", "ERROR")):
            return post
        assert time.monotonic() < deadline, f"post still {post['state']}: {post.get('error')}"
        time.sleep(0.05)


def channel_session(server: RustizServer, channel_id: str) -> dict:
    with sqlite3.connect(read_config(server.config_path)["RUSTIZ_DATABASE"]) as db:
        return json.loads(db.execute("SELECT session FROM integration WHERE id = ?", (channel_id,)).fetchone()[0]
                          or "null") or {}


def trigger(server: RustizServer, channel_id: str, method_name: str, data: dict | None = None) -> tuple:
    return api(server, "POST", f"/public/v1/integration-trigger/{channel_id}",
               {"methodName": method_name, "data": data or {}})
