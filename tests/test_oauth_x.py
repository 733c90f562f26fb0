"""X through the built server: the OAuth 1.0a sign-in (request token, X's consent page, the callback with
oauth_token and oauth_verifier, no state), a cancelled consent, publishing signed with the operator's app,
and analytics; and the operator's guide when X_API_KEY / X_API_SECRET are not set."""
from __future__ import annotations

import re
import urllib.request
from html import unescape
from urllib.parse import urljoin, urlsplit

import pytest

from fakes.x import FakeX
from support import API, api, redirect_query, scheduled, settled, visit


@pytest.fixture
def x():
    fake = FakeX()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, x):
    return start_server_with_fakes(env={"RUSTIZ_X_AUTH_URL": x.url, "RUSTIZ_X_API_URL": x.url,
                                        "X_API_KEY": x.consumer_key, "X_API_SECRET": x.consumer_secret})


def sign_in(server, x, choice: str = "allow") -> dict:
    status, body = api(server, "GET", f"{API}/social/x")
    assert status == 200, body
    assert body["url"].startswith(f"{x.url}/oauth/authenticate?oauth_token=")
    page = urllib.request.urlopen(body["url"], timeout=10).read().decode()
    consent = urljoin(x.url, unescape(re.search(rf'id="{choice}" href="([^"]+)"', page)[1]))
    import http.client
    parts = urlsplit(consent)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("GET", parts.path + "?" + parts.query)
    back = urlsplit(connection.getresponse().getheader("location"))
    connection.close()
    return redirect_query(visit(server, back.path + "?" + back.query)[1]["location"])


def test_x_connects_with_oauth_1a_publishes_signed_and_reports_its_counts(server, x):
    back = sign_in(server, x)
    assert back["notice"] == "connected", back
    channel_id = back["channel"]
    post = settled(server, scheduled(server, channel_id, "<p>Hello X</p>", settings={"__type": "x",
                                                                                     "who_can_reply_post": "everyone"}))
    assert post["state"] == "PUBLISHED", post
    assert post["releaseURL"] == f"https://x.com/ada/status/{post['releaseId']}"
    totals = {item["label"]: item["data"][0]["total"] for item in api(server, "GET", f"{API}/analytics/{channel_id}")[1]}
    assert totals == {"Followers": "2048", "Following": "64", "Posts": "1"}
    totals = {item["label"]: item["data"][0]["total"]
              for item in api(server, "GET", f"{API}/analytics/post/{post['id']}")[1]}
    assert totals["Impressions"] == "1234" and totals["Likes"] == "30"


def test_a_cancelled_x_consent_connects_nothing_and_says_so(server, x):
    back = sign_in(server, x, "deny")
    assert back == {"problem": "denied", "provider": "x"}, back
    assert api(server, "GET", f"{API}/integrations")[1] == []


def test_without_the_operator_s_app_the_answer_says_what_to_register(start_server_with_fakes):
    server = start_server_with_fakes()
    status, body = api(server, "GET", f"{API}/social/x")
    assert status == 400 and body["needsOperatorApp"] is True
    assert body["callbackUrl"] == f"{server.url}/integrations/social/x"
    assert body["variables"] == ["X_API_KEY", "X_API_SECRET"] and body["guide"]
    assert "X needs the operator's app" in body["message"]
