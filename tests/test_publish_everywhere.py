"""The whole path for each of the twelve providers at once: a channel connected with credentials,
an image uploaded, a post (with a thread part where the platform has replies) scheduled through
POST /public/v1/posts, and the platform's fake receiving it at its time, ending PUBLISHED."""
from __future__ import annotations

import json
import time

import pytest

from fake_hashnode import PUBLICATION_ID
from platforms import FAKES, Platforms
from provider_flow import png_file
from test_scheduler import iso

# Settings each provider's Postiz DTO requires (others need none).
SETTINGS = {
    "discord": {"channel": "general"},  # Postiz's DTOs ask for a channel; the webhook decides it
    "slack": {"channel": "general"},
    "devto": {"title": "Shipping rustiz", "tags": [{"value": 1, "label": "python"}]},
    "hashnode": {"title": "Shipping rustiz", "publication": PUBLICATION_ID,
                 "tags": [{"value": "python", "label": "Python"}]},
    "lemmy": {"subreddit": [{"value": {"subreddit": "rust", "id": "2", "title": "Shipping rustiz"}}]},
    "wordpress": {"title": "Shipping rustiz", "type": "post"},
    "listmonk": {"subject": "Shipping rustiz", "preview": "What is new", "list": "3"},
}
NO_THREADS = {"devto", "hashnode", "wordpress", "listmonk", "slack"}


@pytest.fixture(scope="module")
def platforms():
    fakes = Platforms()
    yield fakes
    fakes.close()


def call(server, method: str, path: str, body=None, headers: dict | None = None) -> tuple:
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    status, _, answer = server.request(method, path, {"Authorization": server.key, "Content-Type": "application/json",
                                                      **(headers or {})}, data, timeout=30)
    return status, json.loads(answer)


def upload(server) -> dict:
    boundary = "rustiz-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + png_file() + f"\r\n--{boundary}--\r\n".encode()
    status, media = call(server, "POST", "/public/v1/upload", body,
                         {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert status == 201, media
    return media


def test_a_scheduled_post_reaches_every_provider_at_its_time_with_its_media_and_thread(start_server_with_fakes, platforms):
    server = start_server_with_fakes(env={**platforms.env, "RUSTIZ_RETRY_BASE": "0.2", "API_LIMIT": "0"})
    media = upload(server)
    image = [{"id": media["id"], "path": media["path"]}]
    due = iso(3)
    posts = {}
    for provider in sorted(FAKES):
        status, channel = call(server, "POST", "/public/v1/integrations",
                               {"provider": provider, "credentials": platforms.credentials(provider)})
        assert status == 201, (provider, channel)
        value = [{"content": f"<p>Hello from rustiz to {provider}</p>", "image": image}]
        if provider not in NO_THREADS:
            value.append({"content": "<p>and a reply</p>", "image": [], "delay": 0})
        status, answer = call(server, "POST", "/public/v1/posts", {
            "type": "schedule", "date": due, "shortLink": False, "tags": [],
            "posts": [{"integration": {"id": channel["id"]}, "value": value,
                       "settings": {"__type": provider, **SETTINGS.get(provider, {})}}]})
        assert status == 201, (provider, answer)
        posts[provider] = answer[0]["postId"]
    time.sleep(max(0.0, 2.5 - 0.5))
    assert all(call(server, "GET", f"/public/v1/posts/{post_id}")[1]["state"] == "QUEUE" for post_id in posts.values())
    deadline = time.monotonic() + 60
    outcomes = {}
    while len(outcomes) < len(posts):
        assert time.monotonic() < deadline, {provider: call(server, "GET", f"/public/v1/posts/{post_id}")[1]
                                             for provider, post_id in posts.items() if provider not in outcomes}
        for provider, post_id in posts.items():
            post = call(server, "GET", f"/public/v1/posts/{post_id}")[1]
            if all(part["state"] in ("PUBLISHED", "ERROR") for part in [post, *post["thread"]]):
                outcomes[provider] = post
        time.sleep(0.1)
    for provider, post in outcomes.items():
        assert post["state"] == "PUBLISHED" and post["releaseId"], (provider, post)
        assert [part["state"] for part in post["thread"]] == ([] if provider in NO_THREADS else ["PUBLISHED"]), provider
        assert platforms.fakes[provider].published, provider
