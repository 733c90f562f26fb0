"""The scheduler, through rustiz's own `webhook` provider and a local receiver: due posts go out at
their time, once; retries follow the rules; every failure ends in ERROR with the platform's words
and a notification; deleted and edited posts never publish their old version; missed posts are
not sent in a burst; outgoing webhooks are signed."""
from __future__ import annotations

import json
import signal
import time

import pytest

from fake_webhook import FakeWebhookReceiver, signature_ok

FAST = {"RUSTIZ_RETRY_BASE": "0.2"}


def call(server, method: str, path: str, body=None) -> tuple:
    status, _, answer = server.request(method, path, {"Authorization": server.key, "Content-Type": "application/json"},
                                       None if body is None else json.dumps(body).encode())
    return status, json.loads(answer or b"null")


def iso(seconds_from_now: float) -> str:
    moment = time.time() + seconds_from_now
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment)) + f".{int(moment % 1 * 1000):03d}Z"


def connect(server, receiver, name: str | None = None, path: str = "/hook") -> str:
    credentials = {**receiver.credentials(), "url": receiver.url + path}
    status, channel = call(server, "POST", "/public/v1/integrations",
                           {"provider": "webhook", "credentials": credentials, **({"name": name} if name else {})})
    assert status == 201, channel
    return channel["id"]


def schedule(server, channel_id: str, *parts: str, date: str | None = None, delay: int = 0, **extra) -> str:
    body = {"type": "schedule", "date": date or iso(1), "shortLink": False, "tags": [], **extra,
            "posts": [{"integration": {"id": channel_id}, "settings": {},
                       "value": [{"content": f"<p>{part}</p>", "image": [], "delay": delay} for part in parts]}]}
    status, answer = call(server, "POST", "/public/v1/posts", body)
    assert status == 201, answer
    return answer[0]["postId"]


def post(server, post_id: str) -> dict:
    status, answer = call(server, "GET", f"/public/v1/posts/{post_id}")
    assert status == 200, answer
    return answer


def settled(server, post_id: str, timeout: float = 15) -> dict:
    """The post once it and its thread are PUBLISHED or ERROR."""
    deadline = time.monotonic() + timeout
    while True:
        answer = post(server, post_id)
        if all(part["state"] in ("PUBLISHED", "ERROR") for part in [answer, *answer["thread"]]):
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)


def notifications(server) -> list:
    return [item["content"] for item in call(server, "GET", "/public/v1/notifications")[1]["notifications"]]


@pytest.fixture
def receiver():
    fake = FakeWebhookReceiver()
    yield fake
    fake.close()


@pytest.fixture
def fast_server(start_server_with_fakes):
    return start_server_with_fakes(env=FAST)


def test_a_post_goes_out_at_its_time_and_its_thread_parts_reply_in_order(fast_server, receiver):
    channel = connect(fast_server, receiver)
    due = time.time() + 2
    post_id = schedule(fast_server, channel, "the post", "the reply", date=iso(2))
    root = settled(fast_server, post_id)
    first, second = receiver.published
    assert (first["text"], second["text"]) == ("the post", "the reply")
    assert second["replyTo"] == "msg-1" and first["replyTo"] is None
    assert root["state"] == "PUBLISHED" and root["releaseId"] == "msg-1"
    assert root["releaseURL"] == f"{receiver.url}/m/1"
    assert root["thread"][0]["state"] == "PUBLISHED" and root["thread"][0]["releaseId"] == "msg-2"
    assert time.time() >= due
    assert any(text.startswith("Published a post on Webhook") and f"{receiver.url}/m/1" in text
               for text in notifications(fast_server))


def test_a_post_is_not_sent_before_its_time(fast_server, receiver):
    channel = connect(fast_server, receiver)
    schedule(fast_server, channel, "later", date=iso(3))
    time.sleep(1.5)
    assert receiver.published == []
    receiver.wait_for(lambda: receiver.published, timeout=10)


def test_a_deleted_post_never_publishes(fast_server, receiver):
    channel = connect(fast_server, receiver)
    post_id = schedule(fast_server, channel, "deleted", date=iso(1.5))
    assert call(fast_server, "DELETE", f"/public/v1/posts/{post_id}")[0] == 200
    kept = schedule(fast_server, channel, "kept", date=iso(2))
    settled(fast_server, kept)
    assert [item["text"] for item in receiver.published] == ["kept"]


def test_an_edited_post_publishes_its_new_version_at_its_new_time(fast_server, receiver):
    channel = connect(fast_server, receiver)
    post_id = schedule(fast_server, channel, "old words", date=iso(1.5))
    status, _ = call(fast_server, "PUT", f"/public/v1/posts/{post_id}", {"content": "<p>new words</p>",
                                                                        "date": iso(2.5)})
    assert status == 200
    time.sleep(1.8)
    assert receiver.published == []
    settled(fast_server, post_id)
    assert [item["text"] for item in receiver.published] == ["new words"]


def test_server_errors_are_retried_with_backoff_then_published_once(fast_server, receiver):
    channel = connect(fast_server, receiver)
    receiver.fail_next("POST", "/hook", 503, {"message": "down for maintenance"}, times=2)
    answer = settled(fast_server, schedule(fast_server, channel, "persistent"))
    assert answer["state"] == "PUBLISHED" and answer["error"] is None
    assert [item["text"] for item in receiver.published] == ["persistent"]
    attempts = receiver.requests_to("POST", "/hook")
    deliveries = {request.headers["x-rustiz-delivery"] for request in attempts[1:]}
    assert len(deliveries) == 1  # every attempt of a post carries the same delivery id


def test_a_429_is_retried_after_its_retry_after(fast_server, receiver):
    channel = connect(fast_server, receiver)
    receiver.fail_next("POST", "/hook", 429, {"message": "slow down"}, {"Retry-After": "2"})
    settled(fast_server, schedule(fast_server, channel, "throttled"))
    throttled, accepted = receiver.requests_to("POST", "/hook")[1:]
    assert accepted.received - throttled.received >= 1.9


def test_a_refusal_is_an_error_in_the_platform_s_words_and_later_parts_are_not_sent(fast_server, receiver):
    channel = connect(fast_server, receiver, name="My hook")
    receiver.fail_next("POST", "/hook", 422, {"message": "text is too long for this receiver"})
    answer = settled(fast_server, schedule(fast_server, channel, "refused", "never sent"))
    assert answer["state"] == "ERROR"
    assert answer["error"] == "Failed on Webhook (HTTP 422): text is too long for this receiver"
    assert answer["thread"][0]["state"] == "ERROR"
    assert answer["thread"][0]["error"].startswith("Not published: an earlier part of this thread failed")
    assert receiver.published == []
    assert any(text.startswith("My hook: Failed on Webhook (HTTP 422)") and "1 later thread part not published" in text
               for text in notifications(fast_server))


def test_retrying_stops_at_the_limit_with_the_last_reason(start_server_with_fakes, receiver):
    server = start_server_with_fakes(env={**FAST, "RUSTIZ_RETRY_LIMIT": "1"})
    channel = connect(server, receiver)
    receiver.fail_next("POST", "/hook", 502, b"<html>Bad Gateway</html>", times=5)
    answer = settled(server, schedule(server, channel, "doomed"))
    assert answer["state"] == "ERROR"
    assert "gave up after 2 attempts" in answer["error"] and "HTTP 502" in answer["error"]
    assert len(receiver.requests_to("POST", "/hook")) == 1 + 2  # the connect ping, then two attempts


def test_a_failed_post_retried_through_the_api_goes_out(fast_server, receiver):
    channel = connect(fast_server, receiver)
    receiver.fail_next("POST", "/hook", 400, {"message": "not today"})
    post_id = schedule(fast_server, channel, "second chance")
    assert settled(fast_server, post_id)["state"] == "ERROR"
    status, _ = call(fast_server, "POST", f"/public/v1/posts/{post_id}/retry")
    assert status == 201
    assert settled(fast_server, post_id)["state"] == "PUBLISHED"


def test_refused_credentials_flag_the_channel_and_its_next_posts_fail_without_calling_the_platform(fast_server,
                                                                                                   receiver):
    channel = connect(fast_server, receiver)
    receiver.fail_next("POST", "/hook", 401, {"message": "token revoked"})
    first = settled(fast_server, schedule(fast_server, channel, "first"))
    assert first["state"] == "ERROR" and first["error"].startswith(
        "Failed on Webhook (HTTP 401): the channel's credentials were refused: token revoked")
    assert "Connect the channel again" in first["error"]
    calls = len(receiver.requests)
    second = settled(fast_server, schedule(fast_server, channel, "second"))
    assert second["error"].startswith("Reconnect needed")
    assert len(receiver.requests) == calls


def test_a_lost_answer_is_sent_again_and_the_receiver_sees_one_delivery(fast_server, receiver):
    channel = connect(fast_server, receiver)
    receiver.drop_next("POST", "/hook", after_handling=True)  # acted on, but the answer never came back
    answer = settled(fast_server, schedule(fast_server, channel, "exactly once"))
    assert answer["state"] == "PUBLISHED"
    assert [item["text"] for item in receiver.published] == ["exactly once"]
    assert len(receiver.requests_to("POST", "/hook")) == 3  # ping, lost attempt, repeat


def test_a_post_missed_by_more_than_the_grace_period_is_not_sent(start_server_with_fakes, receiver):
    server = start_server_with_fakes(env={**FAST, "PUBLISH_GRACE": "60"})
    channel = connect(server, receiver)
    missed = schedule(server, channel, "stale", date=iso(-3600))
    recent = schedule(server, channel, "a little late", date=iso(-30))
    assert settled(server, recent)["state"] == "PUBLISHED"
    answer = settled(server, missed)
    assert answer["state"] == "ERROR" and answer["error"].startswith("Missed: this post was due at ")
    assert "more than the 60 s grace period (PUBLISH_GRACE)" in answer["error"]
    assert [item["text"] for item in receiver.published] == ["a little late"]


def test_a_recurring_post_goes_again_at_its_next_occurrence(fast_server, receiver):
    channel = connect(fast_server, receiver)
    post_id = schedule(fast_server, channel, "every week", date=iso(0.5), inter=7)
    receiver.wait_for(lambda: receiver.published)
    deadline = time.monotonic() + 10
    while (answer := post(fast_server, post_id))["state"] != "QUEUE" or answer["releaseId"] is None:
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)
    assert answer["publishDate"] > iso(6.9 * 86400) and answer["releaseId"] == "msg-1"


def test_a_recurring_post_missed_while_down_skips_to_its_next_future_occurrence(start_server_with_fakes, receiver):
    server = start_server_with_fakes(env={**FAST, "PUBLISH_GRACE": "60"})
    channel = connect(server, receiver)
    post_id = schedule(server, channel, "daily", date=iso(-3 * 86400 - 3600), inter=1)
    deadline = time.monotonic() + 10
    while (answer := post(server, post_id))["publishDate"] < iso(0):
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)
    assert answer["state"] == "QUEUE" and answer["publishDate"] < iso(86400)
    assert receiver.published == []
    assert any("skipped the occurrence" in text for text in notifications(server))


def test_outgoing_webhooks_get_signed_events_for_published_and_failed_posts(fast_server, receiver):
    channel = connect(fast_server, receiver)
    listener = FakeWebhookReceiver(secret="events-secret")
    try:
        status, webhook = call(fast_server, "POST", "/public/v1/webhooks",
                               {"name": "n8n", "url": listener.url + "/hook", "secret": "events-secret",
                                "integrations": [{"id": channel}]})
        assert status == 201 and webhook["signed"] is True and "secret" not in webhook
        assert call(fast_server, "GET", "/public/v1/webhooks")[1] == [webhook]
        settled(fast_server, schedule(fast_server, channel, "announced"))
        receiver.fail_next("POST", "/hook", 400, {"message": "nope"})
        settled(fast_server, schedule(fast_server, channel, "refused"))
        listener.wait_for(lambda: len(listener.events) == 2)
        published, failed = sorted(listener.events, key=lambda event: event["event"], reverse=True)
        assert published["event"] == "post.published" and published["post"]["releaseURL"].endswith("/m/1")
        assert failed["event"] == "post.failed" and "HTTP 400" in failed["post"]["error"]
        assert all(signature_ok(request, "events-secret") for request in listener.requests)
        assert call(fast_server, "DELETE", f"/public/v1/webhooks/{webhook['id']}")[0] == 200
        assert call(fast_server, "GET", "/public/v1/webhooks")[1] == []
    finally:
        listener.close()


def test_webhook_registrations_are_checked(fast_server, receiver):
    status, answer = call(fast_server, "POST", "/public/v1/webhooks",
                          {"url": "ftp://example.com", "integrations": ["no-such-channel"]})
    assert status == 400
    assert answer["message"] == ["url must be a URL address starting with http:// or https://",
                                 'integrations.0 is not a channel of this organization: "no-such-channel"']
    status, answer = call(fast_server, "DELETE", "/public/v1/webhooks/nope")
    assert status == 404 and answer["message"] == "No webhook nope in this organization"


def test_with_two_workers_each_post_is_published_once(start_server_with_fakes, receiver):
    server = start_server_with_fakes(env=FAST, args=("--workers", "2"))
    channel = connect(server, receiver)
    posts = [schedule(server, channel, f"post {number}", date=iso(1)) for number in range(6)]
    for post_id in posts:
        assert settled(server, post_id, timeout=30)["state"] == "PUBLISHED"
    assert sorted(item["text"] for item in receiver.published) == sorted(f"post {n}" for n in range(6))


def test_a_second_server_on_the_same_database_stands_by_and_takes_over_when_the_first_dies(start_server_with_fakes, receiver,
                                                                                          tmp_path):
    first = start_server_with_fakes(env=FAST, data_dir=tmp_path / "shared")
    second = start_server_with_fakes(env=FAST, data_dir=tmp_path / "shared")
    channel = connect(first, receiver)
    settled(first, schedule(first, channel, "by the first"))
    first.stop(signal.SIGKILL)
    settled(second, schedule(second, channel, "by the second", date=iso(0.5)))
    assert [item["text"] for item in receiver.published] == ["by the first", "by the second"]
    assert sum("scheduler running" in line for line in first.stderr_lines + second.stderr_lines) == 2
