"""Platforms that download a post's media themselves (Instagram, Threads, TikTok photos) from rustiz's
FRONTEND_URL: when that address cannot be reached from the internet, rustiz says so, naming the setting, at
connect and when such a post is scheduled, and fails a post that was queued before FRONTEND_URL changed
before sending anything (Postiz's #1004/#928/#1129: an opaque "media fetch failed" hours later)."""
from __future__ import annotations

import json

from support import API, Database, api, iso, png_file, settled, uploaded

META_APP = {"FACEBOOK_APP_ID": "1234567890", "FACEBOOK_APP_SECRET": "meta-secret"}


def test_connecting_instagram_is_refused_while_frontend_url_is_a_loopback_address(start_server):
    server = start_server(env={**META_APP, "INSTAGRAM_APP_ID": "9876543210", "INSTAGRAM_APP_SECRET": "ig-secret"})
    status, body = api(server, "GET", f"{API}/social/instagram-standalone")
    assert status == 400, body
    assert body["message"].startswith("FRONTEND_URL: Instagram (Standalone) downloads a post's media itself"), body
    assert "a loopback address" in body["message"] and "config.env" in body["message"]
    # Through Facebook Login videos go up through the resumable upload: only a picture post needs the address
    # (refused when it is scheduled), so connecting does not.
    status, body = api(server, "GET", f"{API}/social/instagram")
    assert status == 200 and body["url"].startswith("https://www.facebook.com/"), body


def test_a_platform_on_the_local_network_may_reach_a_local_frontend_url(start_server):
    # A self-hosted or test platform (its API on a private address) can fetch from a private FRONTEND_URL.
    server = start_server(env={**META_APP, "RUSTIZ_INSTAGRAM_API_URL": "http://127.0.0.1:9"})
    status, body = api(server, "GET", f"{API}/social/instagram")
    assert status == 200 and body["url"].startswith("https://www.facebook.com/"), body


def test_a_threads_post_with_media_is_refused_at_scheduling_and_one_without_is_taken(start_server):
    server = start_server()
    channel_id = Database(server).channel("Threads", "threads")
    picture = uploaded(server, png_file())
    post = {"integration": {"id": channel_id}, "settings": {"__type": "threads"},
            "value": [{"content": "<p>With a picture</p>", "image": [{"id": picture["id"], "path": picture["path"]}]}]}
    status, body = api(server, "POST", f"{API}/posts", {"type": "schedule", "date": iso(86400 * 300),
                                                        "shortLink": False, "tags": [], "posts": [post]})
    assert status == 400, body
    assert "FRONTEND_URL" in json.dumps(body) and "Threads downloads a post's media itself" in json.dumps(body)
    post["value"][0]["image"] = []
    status, body = api(server, "POST", f"{API}/posts", {"type": "schedule", "date": iso(86400 * 300),
                                                        "shortLink": False, "tags": [], "posts": [post]})
    assert status == 201, body


def test_a_queued_post_whose_media_cannot_be_fetched_fails_before_anything_is_sent(start_server):
    server = start_server()
    database = Database(server)
    channel_id = database.channel("Threads", "threads")
    picture = uploaded(server, png_file())
    post_id = database.post(channel_id, iso(-1), settings='{"__type":"threads"}',
                            image=json.dumps([{"id": picture["id"], "path": picture["path"]}]))
    server.stop()  # (a row written behind the server's back is seen when the scheduler starts)
    server.start()
    post = settled(server, post_id)
    assert post["state"] == "ERROR", post
    assert "FRONTEND_URL" in post["error"] and "a loopback address" in post["error"], post
