"""Tokens that never strand a channel, end to end with the built server and a fake Reddit (hour-long access
tokens, permanent refresh tokens): refreshed ahead of expiry and after a 401, one refresh across workers,
a dead grant flags the channel once and its posts wait, a platform's bad minute changes nothing."""
from __future__ import annotations

import threading
import time

import pytest

from fakes.reddit import FakeReddit
from support import (
    API, api, connect_database, connect_oauth, expire_token_in, notifications, refresh_needed, scheduled, settled,
    waiting_for_reconnect,
)

SETTINGS = {"__type": "reddit", "subreddit": [{"value": {"subreddit": "python", "title": "Hello", "type": "self",
                                                         "url": "", "is_flair_required": False}}]}


@pytest.fixture
def reddit():
    fake = FakeReddit()
    yield fake
    fake.close()


def reddit_env(reddit: FakeReddit) -> dict:
    return {**reddit.env, "REDDIT_CLIENT_ID": reddit.client_id, "REDDIT_CLIENT_SECRET": reddit.client_secret,
            "RUSTIZ_RETRY_BASE": "0.3"}


@pytest.fixture
def server(start_server_with_fakes, reddit):
    return start_server_with_fakes(env=reddit_env(reddit))


def connect_reddit(server, refresh: str = "") -> str:
    """The id of the Reddit channel connected (or, with `refresh`, connected again) through OAuth."""
    return connect_oauth(server, "reddit", refresh)["channel"]


def refresh_grants(reddit: FakeReddit) -> int:
    return sum(1 for request in reddit.requests_to("POST", "/api/v1/access_token")
               if b"grant_type=refresh_token" in request.body)


def publish(server, channel_id: str, text: str = "<p>Hello Reddit</p>") -> dict:
    return settled(server, scheduled(server, channel_id, text, settings=SETTINGS))


def test_the_connect_stores_the_tokens_and_their_expiry(server, reddit):
    channel_id = connect_reddit(server)
    with connect_database(server.database) as db:
        token, refresh_token, expiry = db.execute("SELECT token, refresh_token, token_expiration FROM integration "
                                                  "WHERE id = ?", (channel_id,)).fetchone()
    assert refresh_token in reddit.refresh_tokens and '"accessToken"' in token and expiry > time.strftime("%Y")
    status, row = api(server, "GET", f"{API}/integrations/{channel_id}")
    assert (row["refreshNeeded"], row["inBetweenSteps"]) == (False, False)


def test_a_token_about_to_expire_is_refreshed_before_publishing(server, reddit):
    channel_id = connect_reddit(server)
    expire_token_in(server, channel_id, 60)
    assert publish(server, channel_id)["state"] == "PUBLISHED"
    assert refresh_grants(reddit) == 1


def test_a_401_is_cured_by_a_refresh_and_the_call_is_made_once_more(server, reddit):
    channel_id = connect_reddit(server)
    reddit.access_tokens.clear()  # the platform forgot every access token: the next call gets 401
    post = publish(server, channel_id)
    assert post["state"] == "PUBLISHED", post
    assert refresh_grants(reddit) == 1 and len(reddit.published) == 1


def test_a_refresh_without_a_new_refresh_token_keeps_the_old_one(server, reddit):
    channel_id = connect_reddit(server)
    reddit.refresh_answer_has_refresh_token = False
    expire_token_in(server, channel_id, 60)
    assert publish(server, channel_id)["state"] == "PUBLISHED"
    with connect_database(server.database) as db:
        [refresh_token] = db.execute("SELECT refresh_token FROM integration WHERE id = ?", (channel_id,)).fetchone()
    assert refresh_token in reddit.refresh_tokens


def test_a_dead_grant_flags_the_channel_once_its_posts_wait_and_a_reconnect_releases_them(server, reddit):
    channel_id = connect_reddit(server)
    reddit.access_tokens.clear()
    reddit.refresh_tokens.clear()  # the user revoked the app
    first = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>one</p>", settings=SETTINGS))
    assert "invalid_grant" in first["error"], first["error"]
    second = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>two</p>", settings=SETTINGS))
    assert refresh_needed(server, channel_id)
    assert sum("reconnect this Reddit channel" in text for text in notifications(server)) == 1
    assert reddit.published == []
    assert connect_reddit(server, refresh=channel_id) == channel_id
    assert not refresh_needed(server, channel_id)
    assert settled(server, first["id"])["state"] == "PUBLISHED" and settled(server, second["id"])["state"] == "PUBLISHED"


def test_a_5xx_while_refreshing_leaves_the_channel_connected_and_the_post_goes_out_later(server, reddit):
    channel_id = connect_reddit(server)
    expire_token_in(server, channel_id, -10)
    reddit.fail_next("POST", "/api/v1/access_token", 503, {"message": "Service Unavailable", "error": 503})
    post = publish(server, channel_id)
    assert post["state"] == "PUBLISHED", post
    assert not refresh_needed(server, channel_id) and refresh_grants(reddit) >= 1


def test_a_network_error_while_refreshing_is_retried_too(server, reddit):
    channel_id = connect_reddit(server)
    expire_token_in(server, channel_id, -10)
    reddit.drop_next("POST", "/api/v1/access_token")
    assert publish(server, channel_id)["state"] == "PUBLISHED"
    assert not refresh_needed(server, channel_id)


def test_two_workers_needing_a_refresh_at_once_refresh_once(start_server_with_fakes, reddit):
    server = start_server_with_fakes(env=reddit_env(reddit), args=("--workers", "2"))
    channel_id = connect_reddit(server)
    reddit.access_tokens.clear()
    answers = []

    def ask() -> None:
        answers.append(api(server, "GET", f"{API}/analytics/{channel_id}?date={len(answers) + 1}")[0])
    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert refresh_grants(reddit) == 1, "one refresh, whichever worker won the lease"
    assert set(answers) <= {200, 502}
    assert api(server, "GET", f"{API}/analytics/{channel_id}?date=99")[0] == 200


def test_refresh_needed_is_true_once_a_token_without_a_refresh_token_has_expired(server, reddit):
    channel_id = connect_reddit(server)
    with connect_database(server.database) as db:
        db.execute("UPDATE integration SET refresh_token = NULL WHERE id = ?", (channel_id,))
    expire_token_in(server, channel_id, 3600)
    assert api(server, "GET", f"{API}/integrations/{channel_id}")[1]["refreshNeeded"] is False
    expire_token_in(server, channel_id, -1)
    assert api(server, "GET", f"{API}/integrations/{channel_id}")[1]["refreshNeeded"] is True
