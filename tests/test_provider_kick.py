"""Kick (`kick`) against a fake Kick (id.kick.com and the public API): the consent URL with PKCE, the token form
with the verifier, the refusals of a dead code or refresh token, then through the built server: connecting, a
chat message and its thread as chat replies, a message Kick did not send, media refused at scheduling, a refresh
after a 401, a refused refresh, and a 5xx before sending retried."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.kick import FakeKick
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused, pkce_pair
from support import (
    api, dict_rows, follow_consent, jpeg_file, oauth_channel, refresh_needed, refused_post, run, scheduled, settled,
    settled_rows, uploaded, waiting_for_reconnect,
)

REDIRECT = "https://rustiz.example/integrations/social/kick"
provider = provider_for("kick")
fake = fake_fixture(FakeKick)


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_id, fake.client_secret)


def test_the_consent_url_has_pkce_and_the_exchange_sends_the_verifier(fake, http, app):
    assert provider.app_variables == ("KICK_CLIENT_ID", "KICK_SECRET") and provider.pkce
    verifier, challenge = pkce_pair()
    url = run(provider.begin(http, app, REDIRECT, "state-1", challenge, {}))
    query = {name: values[-1] for name, values in parse_qs(urlsplit(url).query).items()}
    assert (query["scope"], query["code_challenge"], query["code_challenge_method"]) == (
        "chat:write user:read channel:read moderation:chat_message:manage", challenge, "S256")
    code = follow_consent(url)["code"]
    tokens = run(provider.exchange_code(http, app, code, REDIRECT, verifier, {}))
    assert tokens.access_token in fake.access_tokens and tokens.expires_in == 7200
    form = fake.requests_to("POST", "/oauth/token")[0].form()
    assert (form["client_id"], form["client_secret"], form["code_verifier"]) == (fake.client_id, fake.client_secret,
                                                                                  verifier)
    with pytest.raises(TokenRefused, match="invalid_grant"):
        run(provider.exchange_code(http, app, code, REDIRECT, verifier, {}))
    renewed = run(provider.refresh_tokens(http, app, tokens.refresh_token))
    assert renewed.refresh_token in fake.refresh_tokens
    with pytest.raises(TokenRefused):  # rotated
        run(provider.refresh_tokens(http, app, tokens.refresh_token))


def test_a_wrong_client_secret_is_not_a_dead_grant(fake, http):
    with pytest.raises(Exception) as refused:
        run(provider.refresh_tokens(http, AppCredentials(fake.client_id, "wrong"), "x"))
    assert not isinstance(refused.value, TokenRefused) and "invalid_client" in refused.value.message


@pytest.fixture
def kick():
    platform = FakeKick()
    yield platform
    platform.close()


@pytest.fixture
def server(start_server_with_fakes, kick):
    return start_server_with_fakes(env={**kick.app_env(), "RUSTIZ_RETRY_BASE": "0.3"})


def test_connect_then_a_message_and_its_thread_as_chat_replies(server, kick):
    channel_id = oauth_channel(server, "kick")
    [row] = dict_rows(server.database, "SELECT internal_id, name FROM integration WHERE id = ?", channel_id)
    assert (row["internal_id"], row["name"]) == ("4377088", "adabakes")
    rows = settled_rows(server, scheduled(server, channel_id, "<p>Live now</p>", "<p>Come say hi</p>",
                                          settings={"__type": "kick"}))
    assert [part["state"] for part in rows] == ["PUBLISHED", "PUBLISHED"], rows
    first, second = kick.published
    assert (first["content"], first["broadcaster_user_id"], first["type"]) == ("Live now", 4377088, "user")
    assert "reply_to_message_id" not in first and second["reply_to_message_id"] == first["id"]
    assert rows[0]["release_id"] == first["id"] and rows[0]["release_url"] == "https://kick.com/adabakes"


def test_a_message_kick_did_not_send_is_an_error(server, kick):
    channel_id = oauth_channel(server, "kick")
    kick.not_sent_next = True
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={"__type": "kick"}))
    assert done["state"] == "ERROR" and "Kick did not send the message" in done["error"], done


def test_media_is_refused_at_scheduling(server, kick):
    channel_id = oauth_channel(server, "kick")
    answer = refused_post(server, channel_id, "<p>x</p>", images=[uploaded(server, jpeg_file(), "jpg")],
                          settings={"__type": "kick"})
    assert "Kick chat takes text only" in answer


def test_a_401_is_cured_by_a_refresh_and_a_dead_refresh_flags_the_channel(server, kick):
    channel_id = oauth_channel(server, "kick")
    kick.access_tokens.clear()
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={"__type": "kick"}))
    assert done["state"] == "PUBLISHED", done
    kick.access_tokens.clear()
    kick.refresh_tokens.clear()
    waiting = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>y</p>", settings={"__type": "kick"}))
    assert "invalid_grant" in waiting["error"] and refresh_needed(server, channel_id)


def test_a_503_is_tried_again(server, kick):
    channel_id = oauth_channel(server, "kick")
    kick.fail_next("POST", "/public/v1/chat", 503, {"data": {}, "message": "Service Unavailable"}, {"Retry-After": "1"})
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={"__type": "kick"}), timeout=60)
    assert done["state"] == "PUBLISHED" and len(kick.published) == 1, done


def test_a_message_answer_that_says_nothing_may_have_been_sent(server, kick):
    channel_id = oauth_channel(server, "kick")
    kick.fail_next("POST", "/public/v1/chat", 200, {"message": "OK"})
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={"__type": "kick"}))
    assert done["state"] == "ERROR" and "accepted the message" in done["error"], done
    assert len(kick.requests_to("POST", "/public/v1/chat")) == 1  # never sent twice


def test_a_chat_message_is_deleted_and_one_gone_already_is_done(fake, http, app):
    from rustiz_features.publishers.base import Channel, OutgoingPost
    token = "tok-" + "x" * 8
    fake.access_tokens.add(token)
    channel = Channel("c", "adabakes", {"accessToken": token}, None, http)
    assert provider.can_delete
    release = run(provider.publish(channel, OutgoingPost("p", "<p>hi</p>", (), {}, 0, "k", "2026-12-03T13:00:00Z"),
                                   None))
    run(provider.delete(channel, release))
    assert fake.published == []
    run(provider.delete(channel, release))  # 404: already gone


def test_the_channel_reports_its_subscribers(server, kick):
    channel_id = oauth_channel(server, "kick")
    status, answer = api(server, "GET", f"/public/v1/analytics/{channel_id}?date=7")
    assert status == 200, answer
    assert {item["label"]: item["data"][0]["total"] for item in answer} == {"Subscribers": "37"}, answer
