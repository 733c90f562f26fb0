"""Twitch (`twitch`) against a fake Twitch (id.twitch.tv and Helix): the consent URL and the token form, the
refusals of a dead code or refresh token, then through the built server: connecting, a chat message, thread
parts as chat replies, an announcement with its colour, a message AutoMod dropped, media refused at
scheduling, a refresh after Helix's 401, a refused refresh, and a 429 retried after Ratelimit-Reset."""
from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.twitch import FakeTwitch, helix_error
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from support import (
    api, dict_rows, follow_consent, jpeg_file, oauth_channel, refresh_needed, refused_post, run, scheduled, settled,
    settled_rows, uploaded, waiting_for_reconnect,
)

REDIRECT = "https://rustiz.example/integrations/social/twitch"
provider = provider_for("twitch")
fake = fake_fixture(FakeTwitch)


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_id, fake.client_secret)


def test_the_consent_url_and_the_token_form_are_twitch_s(fake, http, app):
    assert provider.app_variables == ("TWITCH_CLIENT_ID", "TWITCH_CLIENT_SECRET") and provider.concurrency == 1
    parts = urlsplit(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/oauth2/authorize"
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    assert query["scope"] == "user:write:chat user:read:chat moderator:manage:announcements moderator:manage:chat_messages"
    assert (query["client_id"], query["redirect_uri"], query["response_type"]) == (fake.client_id, REDIRECT, "code")
    callback = follow_consent(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))
    tokens = run(provider.exchange_code(http, app, callback["code"], REDIRECT, None, {}))
    assert tokens.access_token in fake.access_tokens and tokens.expires_in == 14124
    [request] = fake.requests_to("POST", "/oauth2/token")
    assert (request.form()["client_id"], request.form()["client_secret"]) == (fake.client_id, fake.client_secret)
    assert "authorization" not in request.headers
    with pytest.raises(TokenRefused, match="Invalid authorization code"):  # a used code
        run(provider.exchange_code(http, app, callback["code"], REDIRECT, None, {}))
    renewed = run(provider.refresh_tokens(http, app, tokens.refresh_token))
    assert renewed.refresh_token in fake.refresh_tokens
    with pytest.raises(TokenRefused, match="Invalid refresh token"):
        run(provider.refresh_tokens(http, app, tokens.refresh_token))


def test_a_wrong_client_secret_is_not_a_dead_grant(fake, http):
    with pytest.raises(Exception) as refused:
        run(provider.refresh_tokens(http, AppCredentials(fake.client_id, "wrong"), "whatever"))
    assert not isinstance(refused.value, TokenRefused) and "invalid client secret" in refused.value.message


# --- end to end ------------------------------------------------------------------------------------------

@pytest.fixture
def twitch():
    platform = FakeTwitch()
    yield platform
    platform.close()


@pytest.fixture
def server(start_server_with_fakes, twitch):
    return start_server_with_fakes(env={**twitch.app_env(), "RUSTIZ_RETRY_BASE": "0.3"})


def test_connect_then_a_message_and_its_thread_as_chat_replies(server, twitch):
    channel_id = oauth_channel(server, "twitch")
    [row] = dict_rows(server.database, "SELECT internal_id, name, profile FROM integration WHERE id = ?", channel_id)
    assert (row["internal_id"], row["name"], row["profile"]) == ("141981764", "AdaBakes", "adabakes")
    post_id = scheduled(server, channel_id, "<p>Stream starts at 8!</p>", "<p>Bring bread</p>",
                        settings={"__type": "twitch"})
    rows = settled_rows(server, post_id)
    assert [part["state"] for part in rows] == ["PUBLISHED", "PUBLISHED"], rows
    first, second = twitch.published
    assert (first["message"], second["message"]) == ("Stream starts at 8!", "Bring bread")
    assert "reply_parent_message_id" not in first and second["reply_parent_message_id"] == first["id"]
    assert rows[0]["release_id"] == first["id"] and rows[0]["release_url"] == "https://www.twitch.tv/adabakes"


def test_an_announcement_goes_with_its_colour(server, twitch):
    channel_id = oauth_channel(server, "twitch")
    done = settled(server, scheduled(server, channel_id, "<p>Giveaway tonight</p>",
                                     settings={"__type": "twitch", "messageType": "announcement",
                                               "announcementColor": "purple"}))
    assert done["state"] == "PUBLISHED", done
    assert twitch.published == [{"kind": "announcement", "message": "Giveaway tonight", "color": "purple"}]


def test_a_message_automod_dropped_is_an_error_in_twitch_s_words(server, twitch):
    channel_id = oauth_channel(server, "twitch")
    twitch.drop_next = {"code": "msg_rejected", "message": "Your message is being checked by mods"}
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={"__type": "twitch"}))
    assert done["state"] == "ERROR" and "Your message is being checked by mods" in done["error"], done


def test_media_is_refused_at_scheduling(server, twitch):
    channel_id = oauth_channel(server, "twitch")
    answer = refused_post(server, channel_id, "<p>x</p>", images=[uploaded(server, jpeg_file(), "jpg")],
                          settings={"__type": "twitch"})
    assert "Twitch chat takes text only" in answer


def test_a_refused_token_is_refreshed_once_and_a_dead_refresh_flags_the_channel(server, twitch):
    channel_id = oauth_channel(server, "twitch")
    twitch.access_tokens.clear()
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={"__type": "twitch"}))
    assert done["state"] == "PUBLISHED", done
    assert len([r for r in twitch.requests_to("POST", "/oauth2/token")
                if r.form().get("grant_type") == "refresh_token"]) == 1
    twitch.access_tokens.clear()
    twitch.refresh_tokens.clear()
    waiting = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>y</p>", settings={"__type": "twitch"}))
    assert "Invalid refresh token" in waiting["error"] and refresh_needed(server, channel_id)


def test_a_429_is_retried_after_the_rate_limit_window(server, twitch):
    channel_id = oauth_channel(server, "twitch")
    status, body, _ = helix_error(429, "Too Many Requests", "Too many requests")
    twitch.fail_next("POST", "/helix/chat/messages", status, body,
                     {"Ratelimit-Remaining": "0", "Ratelimit-Reset": str(int(time.time()) + 1)})
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={"__type": "twitch"}), timeout=60)
    assert done["state"] == "PUBLISHED", done
    assert len(twitch.requests_to("POST", "/helix/chat/messages")) == 2


def test_a_message_answer_that_says_nothing_may_have_been_sent(server, twitch):
    channel_id = oauth_channel(server, "twitch")
    twitch.fail_next("POST", "/helix/chat/messages", 200, b"<html>proxy</html>")
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={"__type": "twitch"}))
    assert done["state"] == "ERROR" and "accepted the message" in done["error"], done
    assert len(twitch.requests_to("POST", "/helix/chat/messages")) == 1  # never sent twice


def test_a_chat_message_is_deleted_and_one_gone_already_is_done_but_an_announcement_cannot(fake, http, app):
    from rustiz_features.publishers.base import Channel, OutgoingPost, Rejected
    token = fake.issue_access_token()
    channel = Channel("c", "AdaBakes", {"accessToken": token}, None, http)
    channel.app = app
    assert provider.can_delete
    post = OutgoingPost("p", "<p>hello</p>", (), {}, 0, "key-1", "2026-12-03T13:00:00Z")
    release = run(provider.publish(channel, post, None))
    assert len(fake.published) == 1
    run(provider.delete(channel, release))
    assert fake.published == []
    run(provider.delete(channel, release))  # 404: already gone
    announcement = run(provider.publish(channel, post._replace(settings={"messageType": "announcement"}), None))
    with pytest.raises(Rejected, match="announcement no id"):
        run(provider.delete(channel, announcement))


def test_the_channel_reports_its_followers(server, twitch):
    channel_id = oauth_channel(server, "twitch")
    status, answer = api(server, "GET", f"/public/v1/analytics/{channel_id}?date=7")
    assert status == 200, answer
    assert {item["label"]: item["data"][0]["total"] for item in answer} == {"Followers": "1523"}, answer
