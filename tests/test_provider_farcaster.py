"""Farcaster (`wrapcast`) through Neynar against a fake Neynar, through the real server (issue 28): the
connect page Sign In With Neynar answers, the callback checking the signer with the operator's key, casts
with embeds in the chosen Farcaster channels, thread parts as replies, the channel search tool, retries and
refusals; deleting casts, driven in-process."""
from __future__ import annotations

import base64
import json
import urllib.request
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from fakes.farcaster import FakeNeynar
from support import (
    API, api, notifications, png_file, redirect_query, refused_post, run, scheduled, settled, trigger, uploaded,
    visit,
)
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel, NeedsReconnect, Release
from rustiz_features.publishers.oauth import AppCredentials

provider = provider_for("wrapcast")


@pytest.fixture
def fake():
    neynar = FakeNeynar()
    yield neynar
    neynar.close()


@pytest.fixture
def server(start_server_with_fakes, fake):
    return start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.2", **fake.env})


def start(server) -> dict:
    status, body = api(server, "GET", f"{API}/social/wrapcast")
    assert status == 200, body
    return body


def come_back(server, url: str, code: str) -> dict:
    """What the connect page does once Neynar's window answered: the callback with the code and the state."""
    query = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    callback = urlsplit(query["callback"])
    status, headers = visit(server, callback.path + "?" + urlencode({"code": code, "state": query["state"]}))
    assert status == 303, status
    return redirect_query(headers["location"])


def connected_channel(server, fake) -> str:
    back = come_back(server, start(server)["url"], fake.sign_in())
    assert back["notice"] == "connected", back
    return back["channel"]


def cast(server, channel_id: str, *parts, channels: tuple = (), **options) -> dict:
    settings = {"subreddit": [{"value": {"id": channel}} for channel in channels]}
    return settled(server, scheduled(server, channel_id, *parts, provider="wrapcast", settings=settings, **options),
                   stop_at_error=True)


def test_the_consent_url_is_rustizs_connect_page_opening_sign_in_with_neynar(server, fake):
    url = urlsplit(start(server)["url"])
    query = {name: values[0] for name, values in parse_qs(url.query).items()}
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{server.url}/web/farcaster-connect.html"
    assert query["login"] == f"{fake.url}/login?client_id={fake.client_id}"
    assert query["callback"] == f"{server.url}/integrations/social/wrapcast" and len(query["state"]) >= 32
    page = urllib.request.urlopen(f"{server.url}/web/farcaster-connect.html?{url.query}", timeout=10).read().decode()
    assert 'src="/web/farcaster-connect.js"' in page


def test_without_the_operators_neynar_app_connecting_says_which_variables_to_set(start_server_with_fakes):
    server = start_server_with_fakes()
    status, body = api(server, "GET", f"{API}/social/wrapcast")
    assert status == 400 and body["needsOperatorApp"] and body["variables"] == ["NEYNAR_CLIENT_ID", "NEYNAR_SECRET_KEY"]


def test_the_signer_is_checked_with_neynar_and_the_account_is_its_fids(server, fake):
    channel_id = connected_channel(server, fake)
    status, channels = api(server, "GET", f"{API}/integrations")
    [channel] = channels
    assert (channel["id"], channel["identifier"], channel["name"], channel["profile"]) == (
        channel_id, "wrapcast", "Ada Lovelace", "ada")
    [check] = fake.requests_to("GET", "/v2/farcaster/signer")[:1]
    assert check.headers["x-api-key"] == fake.api_key


@pytest.mark.parametrize("code", ["pending", "unknown", "garbage"])
def test_a_signer_neynar_does_not_approve_connects_nothing(server, fake, code):
    claim = {"pending": lambda: fake.sign_in(status="pending_approval"),
             "unknown": lambda: base64.b64encode(json.dumps({"signer_uuid": "00000000-0000-4000-8000-000000000000",
                                                             "fid": 6841}).encode()).decode(),
             "garbage": lambda: "not-base64-json"}[code]()
    back = come_back(server, start(server)["url"], claim)
    assert back["problem"] == "refused", back
    assert any("Farcaster refused the connection" in text for text in notifications(server))
    assert api(server, "GET", f"{API}/integrations")[1] == []


def test_a_cast_carries_its_pictures_as_embeds_in_the_chosen_channels_and_replies_to_each(server, fake):
    channel_id = connected_channel(server, fake)
    image = uploaded(server, png_file())
    post = cast(server, channel_id, ("<p>Hello Farcaster</p>", [image]), "<p>and a reply</p>",
                channels=("rustiz", "rust"))
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED"] * 2, post
    first, second, reply_one, reply_two = fake.published
    assert (first["channel_id"], second["channel_id"], first["text"]) == ("rustiz", "rust", "Hello Farcaster")
    assert first["embeds"] == [{"url": image["path"]}]
    assert {reply_one["parent_hash"], reply_two["parent_hash"]} == {first["hash"], second["hash"]}
    assert post["releaseId"] == f"{first['hash']},{second['hash']}"
    assert post["releaseURL"].split(",")[0] == f"https://farcaster.xyz/ada/{first['hash']}"
    [request] = fake.requests_to("POST", "/v2/farcaster/cast")[:1]
    assert request.headers["x-api-key"] == fake.api_key and len(request.json()["idem"]) == 16


def test_no_channel_chosen_casts_to_the_feed_and_more_than_two_pictures_are_refused(server, fake):
    channel_id = connected_channel(server, fake)
    assert cast(server, channel_id, "<p>To my feed</p>")["state"] == "PUBLISHED"
    assert fake.published[0]["channel_id"] is None
    image = uploaded(server, png_file())
    answer = refused_post(server, channel_id, ("<p>Three</p>", [image] * 3), provider="wrapcast",
                          settings={"subreddit": []})
    assert "at most 2 embeds" in answer


def test_a_429_is_retried_and_a_lost_answer_is_recognised_by_its_idem(server, fake):
    channel_id = connected_channel(server, fake)
    fake.fail_next("POST", "/v2/farcaster/cast", 429, {"code": "RateLimitExceeded", "message": "Too many requests"},
                   {"Retry-After": "1"})
    assert cast(server, channel_id, "<p>Patience</p>")["state"] == "PUBLISHED"
    fake.drop_next("POST", "/v2/farcaster/cast", after_handling=True)
    post = cast(server, channel_id, "<p>Exactly once</p>")
    assert post["state"] == "PUBLISHED" and len(fake.published) == 2, post
    *_, first, second = fake.requests_to("POST", "/v2/farcaster/cast")
    assert first.json()["idem"] == second.json()["idem"]


def test_neynars_refusal_fails_the_post_in_its_words(server, fake):
    channel_id = connected_channel(server, fake)
    post = cast(server, channel_id, "<p>Somewhere</p>", channels=("nowhere",))
    assert post["state"] == "ERROR" and "Channel nowhere not found" in post["error"], post


def test_the_subreddits_tool_searches_farcaster_channels(server, fake):
    channel_id = connected_channel(server, fake)
    status, found = trigger(server, channel_id, "subreddits", {"word": "rust"})
    assert status == 200 and {"title": "Rust", "name": "Rust", "id": "rust"} in found["output"], found
    assert fake.requests_to("GET", "/v2/farcaster/channel/search")[0].query == {"q": "rust", "limit": "10"}


def test_deleting_removes_every_cast_of_a_part_and_a_cast_gone_counts_as_deleted(fake, http, monkeypatch):
    for name, value in fake.env.items():
        monkeypatch.setenv(name, value)
    signer = json.loads(base64.b64decode(fake.sign_in()))["signer_uuid"]
    channel = Channel("c1", "Ada", {"accessToken": signer, "fid": 6841}, None, http)
    channel.app = AppCredentials(fake.client_id, fake.api_key)
    fake.casts.update({"0x1": {"hash": "0x1"}, "0x2": {"hash": "0x2"}})
    assert provider.can_delete
    run(provider.delete(channel, Release("0x1,0x2", "")))
    assert fake.deleted == ["0x1", "0x2"] and not fake.casts
    run(provider.delete(channel, Release("0x1", "")))  # already gone: a 404
    fake.signers[signer]["status"] = "revoked"
    with pytest.raises(NeedsReconnect):
        run(provider.delete(channel, Release("0x3", "")))


def test_a_server_error_and_an_answer_without_its_cast_are_sent_again_with_the_same_idem(server, fake):
    channel_id = connected_channel(server, fake)
    fake.fail_next("POST", "/v2/farcaster/cast", 503, {"code": "ServiceUnavailable", "message": "Try again later"})
    assert cast(server, channel_id, "<p>After the outage</p>")["state"] == "PUBLISHED"
    fake.fail_next("POST", "/v2/farcaster/cast", 200, {"success": True})  # no cast in it: the outcome is unknown
    post = cast(server, channel_id, "<p>Unknown, then known</p>")
    assert post["state"] == "PUBLISHED" and len(fake.published) == 2, post
    *_, first, second = fake.requests_to("POST", "/v2/farcaster/cast")
    assert first.json()["idem"] == second.json()["idem"]


def test_the_account_and_a_cast_report_their_counts(server, fake):
    channel_id = connected_channel(server, fake)
    status, answer = api(server, "GET", f"{API}/analytics/{channel_id}?date=30")
    assert status == 200 and {item["label"]: item["data"][0]["total"] for item in answer} == {
        "Followers": "420", "Following": "42"}, answer
    post = cast(server, channel_id, "<p>Counted</p>")
    status, answer = api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert status == 200 and {item["label"]: item["data"][0]["total"] for item in answer} == {
        "Likes": "5", "Recasts": "2", "Replies": "1"}, answer
    assert fake.requests_to("GET", "/v2/farcaster/cast")[0].query == {"identifier": post["releaseId"], "type": "hash"}
