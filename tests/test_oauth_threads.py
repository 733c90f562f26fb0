"""Threads end to end with the built server and the fake (tests/fakes/threads.py): connecting through the
real flow (code -> short-lived -> long-lived token), a scheduled post with a video and a first reply that
Threads fetches from rustiz's own /uploads, a container Threads cannot process, the 60-day token refreshed
a month ahead with th_refresh_token, a dead token (Graph code 190) waiting for a reconnect, throttling."""
from __future__ import annotations

import json
import time

import pytest

from fakes.threads import THROTTLED, FakeThreads
from support import (
    API, api, connect_database, connect_oauth, expire_token_in, get_post, iso, mp4_file, notifications,
    refresh_needed, scheduled, settled, uploaded, wait_for, waiting_for_reconnect,
)

CONTAINERS = r"/v1.0/\w+/threads"


@pytest.fixture
def threads():
    fake = FakeThreads()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, threads):
    return start_server_with_fakes(env={**threads.env, "THREADS_APP_ID": threads.client_id,
                                        "THREADS_APP_SECRET": threads.client_secret, "RUSTIZ_RETRY_BASE": "0.3"})


def stored_tokens(server, channel_id: str) -> tuple:
    with connect_database(server.database) as db:
        token, refresh_token, expiry = db.execute("SELECT token, refresh_token, token_expiration FROM integration "
                                                  "WHERE id = ?", (channel_id,)).fetchone()
    return json.loads(token), refresh_token, expiry


def test_connecting_exchanges_the_code_for_a_long_lived_token(server, threads):
    back = connect_oauth(server, "threads")
    assert back["notice"] == "connected", back
    channel_id = back["channel"]
    [(short, long_lived)] = threads.exchanges
    credentials, refresh_token, expiry = stored_tokens(server, channel_id)
    assert credentials == {"accessToken": long_lived, "userId": threads.user_id}
    assert refresh_token == long_lived
    assert expiry[:10] == time.strftime("%Y-%m-%d", time.gmtime(time.time() + 5183944))
    status, row = api(server, "GET", f"{API}/integrations/{channel_id}")
    assert status == 200 and (row["name"], row["providerIdentifier"], row["refreshNeeded"]) == ("Ada Lovelace", "threads",
                                                                                        False), row


def test_a_scheduled_video_post_and_its_reply_go_out_at_their_time(server, threads):
    channel_id = connect_oauth(server, "threads")["channel"]
    threads.processing_polls = 2
    video = uploaded(server, mp4_file(8192), "mp4")
    started = time.monotonic()  # the fake stamps requests with time.monotonic() too
    post_id = scheduled(server, channel_id, ("<p>Watch this</p>", [video]), "<p>First comment</p>",
                        type="schedule", date=iso(3))
    post = settled(server, post_id, timeout=30)
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED", "PUBLISHED"], post
    first, reply = threads.media()
    assert (first["media_type"], first["text"], first["video_url"]) == ("VIDEO", "Watch this", video["path"])
    assert (reply["media_type"], reply["text"], reply["reply_to_id"]) == ("TEXT", "First comment", first["id"])
    assert threads.fetched[video["path"]] == mp4_file(8192)  # Threads really downloaded it from rustiz
    [create] = [request for request in threads.requests_to("POST", CONTAINERS) if b"VIDEO" in request.body]
    assert create.received >= started + 2.9, "nothing went to Threads before the post's time"
    assert (post["releaseId"], post["releaseURL"]) == (first["id"], first["permalink"])
    assert post["thread"][0]["releaseURL"] == reply["permalink"]


def test_a_video_threads_cannot_process_fails_the_post_in_threads_words(server, threads):
    channel_id = connect_oauth(server, "threads")["channel"]
    threads.processing_error = "FAILED_PROCESSING_VIDEO"
    post = settled(server, scheduled(server, channel_id, ("<p>Broken</p>", [uploaded(server, mp4_file(1024), "mp4")])))
    assert post["state"] == "ERROR" and "FAILED_PROCESSING_VIDEO" in post["error"], post
    assert "Threads" in post["error"] and threads.media() == []


def test_a_token_due_for_renewal_is_refreshed_with_th_refresh_token(server, threads):
    channel_id = connect_oauth(server, "threads")["channel"]
    expire_token_in(server, channel_id, 20 * 86400)  # a month ahead of expiry is due
    assert settled(server, scheduled(server, channel_id, "<p>Fresh</p>"))["state"] == "PUBLISHED"
    [(old, new)] = threads.refreshes
    credentials, refresh_token, expiry = stored_tokens(server, channel_id)
    assert credentials["accessToken"] == refresh_token == new and credentials["userId"] == threads.user_id
    assert expiry > iso(50 * 86400)
    [request] = threads.requests_to("GET", "/refresh_access_token")
    assert request.query == {"grant_type": "th_refresh_token", "access_token": old}


def test_a_channel_that_publishes_nothing_has_its_token_refreshed_by_the_sweep(server, threads):
    channel_id = connect_oauth(server, "threads")["channel"]
    expire_token_in(server, channel_id, 20 * 86400)
    server.stop()  # the sweep runs when the scheduler starts, then hourly
    server.start()
    wait_for(lambda: stored_tokens(server, channel_id), lambda stored: stored[2] > iso(50 * 86400))
    [(old, new)] = threads.refreshes
    assert stored_tokens(server, channel_id)[:2] == ({"accessToken": new, "userId": threads.user_id}, new)
    # (the log line is written just after the tokens are stored, and read from the process's stderr pipe)
    wait_for(lambda: server.stderr_lines,
             lambda lines: any("its token was refreshed ahead of its expiry" in line for line in lines))


def test_a_token_the_sweep_finds_revoked_flags_the_channel_once(server, threads):
    channel_id = connect_oauth(server, "threads")["channel"]
    expire_token_in(server, channel_id, 20 * 86400)
    threads.tokens.clear()  # revoked on Threads: the refresh answers code 190
    server.stop()
    server.start()
    wait_for(lambda: refresh_needed(server, channel_id), bool)
    assert [text for text in notifications(server) if "reconnect this Threads channel" in text] != []


def test_a_token_far_from_expiry_is_not_refreshed(server, threads):
    channel_id = connect_oauth(server, "threads")["channel"]
    assert settled(server, scheduled(server, channel_id, "<p>Hello</p>"))["state"] == "PUBLISHED"
    assert threads.refreshes == []


def test_a_dead_token_flags_the_channel_and_a_reconnect_keeps_it_and_releases_its_posts(server, threads):
    channel_id = connect_oauth(server, "threads")["channel"]
    threads.tokens.clear()  # the user revoked the app: code 190 everywhere
    post = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>Later</p>"))
    assert "code 190" in post["error"], post["error"]
    assert refresh_needed(server, channel_id) and threads.refreshes == []  # no pointless refresh of a dead token
    back = connect_oauth(server, "threads", refresh=channel_id)
    assert (back["notice"], back["channel"]) == ("reconnected", channel_id)
    assert settled(server, post["id"])["state"] == "PUBLISHED" and not refresh_needed(server, channel_id)


@pytest.mark.parametrize("status", [400, 429])
def test_throttling_is_retried_later(server, threads, status):
    channel_id = connect_oauth(server, "threads")["channel"]
    threads.fail_next("POST", CONTAINERS, status, THROTTLED, {"Retry-After": "1"} if status == 429 else None)
    post = settled(server, scheduled(server, channel_id, "<p>Patience</p>"), timeout=30)
    assert post["state"] == "PUBLISHED", post
    assert len(threads.requests_to("POST", CONTAINERS)) == 2 and len(threads.media()) == 1


def test_analytics_of_the_profile_and_of_a_post(server, threads):
    channel_id = connect_oauth(server, "threads")["channel"]
    post = settled(server, scheduled(server, channel_id, "<p>Counted</p>"))
    status, figures = api(server, "GET", f"{API}/analytics/{channel_id}?date=7")
    assert status == 200 and {item["label"] for item in figures} >= {"Views", "Likes", "Followers"}, figures
    status, figures = api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert status == 200 and {item["label"]: item["data"][0]["total"] for item in figures}["Views"] == "321"
    assert get_post(server, post["id"])["state"] == "PUBLISHED"
