"""The OAuth connect flow, end to end over real sockets: GET /social/:integration, the platform's consent
page (a fake Mastodon instance, on which rustiz registers its own app), the callback that stores the
channel, reconnecting, and the posts that wait for a channel to be reconnected."""
from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest

from fakes.mastodon import FakeMastodon
from support import (
    API, Database, api, browser_session, consent_link, notifications, redirect_query, refresh_needed, scheduled,
    settled, visit, wait_for,
)


@pytest.fixture
def mastodon():
    fake = FakeMastodon()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes):
    return start_server_with_fakes()


def start(server, identifier: str, **query) -> tuple:
    return start_as(server, None, identifier, **query)


def start_as(server, key: str | None, identifier: str, **query) -> tuple:
    suffix = "&".join(f"{name}={value}" for name, value in query.items())
    return api(server, "GET", f"{API}/social/{identifier}" + (f"?{suffix}" if suffix else ""), key=key)


def consent(server, url: str, choice: str = "allow") -> str:
    """Follow the platform's consent page as a browser would: the link the user clicks, then rustiz's
    callback; the Location rustiz redirects to."""
    parts = urlsplit(consent_link(url, choice))
    assert f"{parts.scheme}://{parts.netloc}" == server.url
    status, headers = visit(server, parts.path + "?" + parts.query)
    assert status == 303, status
    return headers["location"]


def connect_mastodon(server, mastodon) -> str:
    status, body = start(server, "mastodon", instance=mastodon.url)
    assert status == 200, body
    back = redirect_query(consent(server, body["url"]))
    assert back["notice"] == "connected", back
    return back["channel"]


def test_one_click_mastodon_registers_rustiz_on_the_instance_and_asks_for_consent_with_pkce(server, mastodon):
    status, body = start(server, "mastodon", instance=mastodon.url)
    assert status == 200, body
    url = urlsplit(body["url"])
    query = {name: values[0] for name, values in parse_qs(url.query).items()}
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{mastodon.url}/oauth/authorize"
    assert query["redirect_uri"] == f"{server.url}/integrations/social/mastodon"
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 32 and query["client_id"] in mastodon.apps
    start(server, "mastodon", instance=mastodon.url)
    assert len(mastodon.apps) == 1, "the app registered on an instance is kept and used again"


def test_consent_lands_back_on_the_channels_page_with_the_channel_connected_and_publishing(server, mastodon):
    channel_id = connect_mastodon(server, mastodon)
    status, channels = api(server, "GET", f"{API}/integrations")
    assert [(c["id"], c["identifier"], c["name"]) for c in channels] == [(channel_id, "mastodon", "Ada Lovelace")]
    post = settled(server, scheduled(server, channel_id, "<p>Hello from OAuth</p>"))
    assert post["state"] == "PUBLISHED", post
    assert mastodon.published[0]["content"] == "Hello from OAuth"


def test_a_state_works_once(server, mastodon):
    status, body = start(server, "mastodon", instance=mastodon.url)
    link = urlsplit(consent_link(body["url"]))
    first = visit(server, link.path + "?" + link.query)
    again = visit(server, link.path + "?" + link.query)
    assert redirect_query(first[1]["location"])["notice"] == "connected"
    assert redirect_query(again[1]["location"])["problem"] == "expired"


def test_an_unknown_state_and_a_denied_consent_say_what_happened_and_connect_nothing(server, mastodon):
    status, headers = visit(server, "/integrations/social/mastodon?code=abc&state=forged")
    assert status == 303 and redirect_query(headers["location"]) == {"problem": "expired", "provider": "mastodon"}
    status, body = start(server, "mastodon", instance=mastodon.url)
    assert redirect_query(consent(server, body["url"], "deny")) == {"problem": "denied", "provider": "mastodon"}
    assert api(server, "GET", f"{API}/integrations")[1] == []


def channels_of(server, key: str | None = None) -> list:
    return api(server, "GET", f"{API}/integrations", key=key)[1]


def test_a_link_started_by_another_organization_connects_nothing_in_a_browser_signed_in_elsewhere(server, mastodon):
    # The attack: org B starts a flow and sends its consent link to a person of org A, who consents.
    _, other_key = Database(server).organization()
    status, body = start_as(server, other_key, "mastodon", instance=mastodon.url)
    assert status == 200, body
    link = urlsplit(consent_link(body["url"]))
    status, headers = visit(server, link.path + "?" + link.query, browser_session(server))  # signed in to A
    assert status == 303 and redirect_query(headers["location"]) == {"problem": "other-organization",
                                                                      "provider": "mastodon"}
    assert channels_of(server) == [] and channels_of(server, other_key) == []
    status, headers = visit(server, link.path + "?" + link.query, browser_session(server, other_key))
    assert redirect_query(headers["location"])["problem"] == "expired"  # the flow ended
    assert channels_of(server, other_key) == []


def test_a_signed_out_browser_is_sent_to_sign_in_and_finishes_once_signed_in(server, mastodon):
    # As postiz-agent does: an API client asks for the URL; its person consents in a browser not signed in.
    status, body = start(server, "mastodon", instance=mastodon.url)
    link = urlsplit(consent_link(body["url"]))
    callback = link.path + "?" + link.query
    status, headers = visit(server, callback, signed_in=False)
    assert status == 303 and headers["location"].startswith(f"{server.url}/#/connect?resume=")
    assert parse_qs(headers["location"].split("?", 1)[1])["resume"] == [callback]
    assert channels_of(server) == []
    status, headers = visit(server, callback, "rustiz_session=" + "0" * 64)  # a session that has ended
    assert status == 303 and "/#/connect?resume=" in headers["location"]
    status, headers = visit(server, callback, browser_session(server))
    assert redirect_query(headers["location"])["notice"] == "connected"
    assert [channel["name"] for channel in channels_of(server)] == ["Ada Lovelace"]


def test_a_forged_or_expired_state_is_refused_before_any_sign_in_is_asked_for(server, mastodon):
    status, headers = visit(server, "/integrations/social/mastodon?code=abc&state=forged", signed_in=False)
    assert status == 303 and redirect_query(headers["location"])["problem"] == "expired"


def test_a_start_names_what_is_wrong_with_its_request(server, mastodon):
    assert start(server, "mastodon")[0] == 400
    status, body = start(server, "mastodon", instance="ftp://example.com")
    assert status == 400 and body["message"].startswith("instance")
    status, body = start(server, "nowhere")
    assert status == 404 and "nowhere" in body["message"]
    status, body = start(server, "bluesky")
    assert status == 400 and "POST /public/v1/integrations" in body["message"]
    status, body = start(server, "mastodon", instance=mastodon.url, refresh="no-such-channel")
    assert status == 404 and body["message"].startswith("refresh")


def test_the_instance_must_pass_the_address_guard(start_server):
    server = start_server()  # no RUSTIZ_FETCH_ALLOW: loopback is refused
    status, body = start(server, "mastodon", instance="http://127.0.0.1:9")
    assert status == 400 and "RUSTIZ_FETCH_ALLOW" in body["message"], body


def test_reconnecting_keeps_the_channel_and_releases_the_posts_that_waited_for_it(server, mastodon):
    channel_id = connect_mastodon(server, mastodon)
    good_token = mastodon.token
    mastodon.token = "revoked"
    post_id = scheduled(server, channel_id, "<p>While revoked</p>")
    waiting = wait_for(lambda: api(server, "GET", f"{API}/posts/{post_id}")[1],
                       lambda post: (post.get("error") or "").startswith("Waiting"))
    assert waiting["state"] == "QUEUE" and "reconnected" in waiting["error"] and "PUBLISH_GRACE" in waiting["error"]
    assert refresh_needed(server, channel_id)
    second = scheduled(server, channel_id, "<p>Also waiting</p>")
    wait_for(lambda: api(server, "GET", f"{API}/posts/{second}")[1],
             lambda post: (post.get("error") or "").startswith("Waiting"))
    assert sum("reconnect this Mastodon channel" in text for text in notifications(server)) == 1
    mastodon.token = good_token
    status, body = start(server, "mastodon", instance=mastodon.url, refresh=channel_id)
    back = redirect_query(consent(server, body["url"]))
    assert (back["notice"], back["channel"]) == ("reconnected", channel_id)
    assert not refresh_needed(server, channel_id)
    assert settled(server, post_id)["state"] == "PUBLISHED" and settled(server, second)["state"] == "PUBLISHED"
    assert [c["id"] for c in api(server, "GET", f"{API}/integrations")[1]] == [channel_id]


def test_a_post_that_waited_past_the_grace_period_fails_saying_why(start_server_with_fakes, mastodon):
    server = start_server_with_fakes(env={"PUBLISH_GRACE": "2", "RUSTIZ_RETRY_BASE": "0.2"})
    channel_id = connect_mastodon(server, mastodon)
    mastodon.token = "revoked"
    post = settled(server, scheduled(server, channel_id, "<p>Never reconnected</p>", type="schedule"), timeout=30)
    assert post["state"] == "ERROR"
    assert "still needed reconnecting" in post["error"] and "PUBLISH_GRACE" in post["error"], post["error"]


def test_one_refresh_lease_per_channel_across_workers(server, mastodon):
    """take_refresh_lease as two workers call it: the second gets the lease only once the first gives it
    back or its lease runs out."""
    import rustiz
    from rustiz_features.storage import oauth as oauth_store
    channel_id = connect_mastodon(server, mastodon)
    store, now = rustiz.Store(server.database), time.time()
    try:
        assert oauth_store.take_refresh_lease(store, channel_id, "worker-1", now, 60)
        assert not oauth_store.take_refresh_lease(store, channel_id, "worker-2", now, 60)
        assert oauth_store.take_refresh_lease(store, channel_id, "worker-2", now + 61, 60)
        oauth_store.release_refresh_lease(store, channel_id, "worker-2")
        assert oauth_store.take_refresh_lease(store, channel_id, "worker-1", now, 60)
    finally:
        store.close()


def test_a_platform_error_during_the_exchange_is_shown_in_its_own_words(server, mastodon):
    status, body = start(server, "mastodon", instance=mastodon.url)
    mastodon.fail_next("POST", "/oauth/token", 400, {"error": "invalid_grant", "error_description": "code expired"})
    assert redirect_query(consent(server, body["url"])) == {"problem": "refused", "provider": "mastodon"}
    problem = notifications(server)[0]  # the platform's words: in the notifications, never in the link
    assert problem.startswith("Mastodon refused the connection") and "invalid_grant" in problem, problem
    assert api(server, "GET", f"{API}/integrations")[1] == []

