"""The scheduler, through rustiz's own `webhook` provider and a local receiver: due posts go out at
their time, once; retries follow the rules; every failure ends in ERROR with the platform's words
and a notification; deleted and edited posts never publish their old version; missed posts are
not sent in a burst; outgoing webhooks are signed."""
from __future__ import annotations

import datetime
import re
import signal
import time

import pytest

from conftest import run_cli
from fakes.slow_server import SlowServer
from fakes.webhook import FakeWebhookReceiver, signature_ok
from support import waiting_for_reconnect, FAST_RETRIES, api, channel_post, connected, post_body, wait_for, connect_database, get_post, iso, notifications, scheduled, settled, webhook_channel


@pytest.fixture
def fast_server(start_server_with_fakes):
    return start_server_with_fakes(env=FAST_RETRIES)


def test_a_post_goes_out_at_its_time_and_its_thread_parts_reply_in_order(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    due = time.time() + 2
    post_id = scheduled(fast_server, channel, "<p>the post</p>", "<p>the reply</p>", type="schedule", date=iso(2))
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


def test_a_reply_waiting_for_its_delay_shows_when_it_goes_out_not_its_parent_s_date(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    later = scheduled(fast_server, channel, "<p>later</p>", "<p>+3</p>", "<p>+6</p>", type="schedule",
                      date="2030-09-01T10:00:00.000Z", delay=3)
    post = get_post(fast_server, later)
    assert post["goesOutAt"] == "2030-09-01T10:00:00.000Z"
    assert [part["goesOutAt"] for part in post["thread"]] == ["2030-09-01T10:03:00.000Z", "2030-09-01T10:06:00.000Z"]

    post_id = scheduled(fast_server, channel, "<p>now</p>", "<p>in two minutes</p>", delay=2)
    root = wait_for(lambda: get_post(fast_server, post_id), lambda post: post["state"] == "PUBLISHED")
    published_by = time.time()
    reply = root["thread"][0]
    assert reply["state"] == "QUEUE" and root["goesOutAt"] is None
    goes_out = datetime.datetime.fromisoformat(reply["goesOutAt"].replace("Z", "+00:00")).timestamp()
    date = datetime.datetime.fromisoformat(root["publishDate"].replace("Z", "+00:00")).timestamp()
    # two minutes after the post went out: after its date ("now": this minute), before the test saw it out
    assert date + 120 <= goes_out <= published_by + 120


def test_a_post_is_not_sent_before_its_time(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    scheduled(fast_server, channel, "<p>later</p>", type="schedule", date=iso(3))
    time.sleep(1.5)
    assert receiver.published == []
    receiver.wait_for(lambda: receiver.published, timeout=10)


def test_a_deleted_post_never_publishes(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    post_id = scheduled(fast_server, channel, "<p>deleted</p>", type="schedule", date=iso(1.5))
    assert api(fast_server, "DELETE", f"/public/v1/posts/{post_id}")[0] == 200
    kept = scheduled(fast_server, channel, "<p>kept</p>", type="schedule", date=iso(2))
    settled(fast_server, kept)
    assert [item["text"] for item in receiver.published] == ["kept"]


def test_an_edited_post_publishes_its_new_version_at_its_new_time(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    post_id = scheduled(fast_server, channel, "<p>old words</p>", type="schedule", date=iso(1.5))
    status, _ = api(fast_server, "PUT", f"/public/v1/posts/{post_id}", {"content": "<p>new words</p>",
                                                                       "date": iso(2.5)})
    assert status == 200
    time.sleep(1.8)
    assert receiver.published == []
    settled(fast_server, post_id)
    assert [item["text"] for item in receiver.published] == ["new words"]


def test_server_errors_are_retried_with_backoff_then_published_once(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    receiver.fail_next("POST", "/hook", 503, {"message": "down for maintenance"}, times=2)
    answer = settled(fast_server, scheduled(fast_server, channel, "<p>persistent</p>", type="schedule"))
    assert answer["state"] == "PUBLISHED" and answer["error"] is None
    assert [item["text"] for item in receiver.published] == ["persistent"]
    attempts = receiver.requests_to("POST", "/hook")
    deliveries = {request.headers["x-rustiz-delivery"] for request in attempts[1:]}
    assert len(deliveries) == 1  # every attempt of a post carries the same delivery id


def test_a_429_is_retried_after_its_retry_after(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    receiver.fail_next("POST", "/hook", 429, {"message": "slow down"}, {"Retry-After": "2"})
    settled(fast_server, scheduled(fast_server, channel, "<p>throttled</p>", type="schedule"))
    throttled, accepted = receiver.requests_to("POST", "/hook")[1:]
    assert accepted.received - throttled.received >= 1.9


def test_a_refusal_is_an_error_in_the_platform_s_words_and_later_parts_are_not_sent(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver, name="My hook")
    receiver.fail_next("POST", "/hook", 422, {"message": "text is too long for this receiver"})
    answer = settled(fast_server,
                     scheduled(fast_server, channel, "<p>refused</p>", "<p>never sent</p>", type="schedule"))
    assert answer["state"] == "ERROR"
    assert answer["error"] == "Failed on Webhook (HTTP 422): text is too long for this receiver"
    assert answer["thread"][0]["state"] == "ERROR"
    assert answer["thread"][0]["error"].startswith("Not published: an earlier part of this thread failed")
    assert receiver.published == []
    wait_for(lambda: notifications(fast_server), lambda texts: any(  # (written just after the post's state)
        text.startswith("My hook: Failed on Webhook (HTTP 422)") and "1 later thread part not published" in text
        for text in texts))


def test_retrying_stops_at_the_limit_with_the_last_reason(start_server_with_fakes, receiver):
    server = start_server_with_fakes(env={**FAST_RETRIES, "RUSTIZ_RETRY_LIMIT": "1"})
    channel = webhook_channel(server, receiver)
    receiver.fail_next("POST", "/hook", 502, b"<html>Bad Gateway</html>", times=5)
    answer = settled(server, scheduled(server, channel, "<p>doomed</p>", type="schedule"))
    assert answer["state"] == "ERROR"
    assert "gave up after 2 attempts" in answer["error"] and "HTTP 502" in answer["error"]
    assert len(receiver.requests_to("POST", "/hook")) == 1 + 2  # the connect ping, then two attempts


def test_a_failed_post_retried_through_the_api_goes_out(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    receiver.fail_next("POST", "/hook", 400, {"message": "not today"})
    post_id = scheduled(fast_server, channel, "<p>second chance</p>", type="schedule")
    assert settled(fast_server, post_id)["state"] == "ERROR"
    status, _ = api(fast_server, "POST", f"/public/v1/posts/{post_id}/retry")
    assert status == 201
    assert settled(fast_server, post_id)["state"] == "PUBLISHED"
    # both notifications name the post they are about (the web app links to its page)
    about = [(item["postId"], item["content"].split(":")[0]) for item in
             api(fast_server, "GET", "/public/v1/notifications")[1]["notifications"] if item["postId"] == post_id]
    assert len(about) == 2 and about[0][1].startswith("Published"), about


def test_refused_credentials_flag_the_channel_and_its_posts_wait_without_calling_the_platform(fast_server,
                                                                                                receiver):
    channel = webhook_channel(fast_server, receiver)
    receiver.fail_next("POST", "/hook", 401, {"message": "token revoked"})
    first = waiting_for_reconnect(fast_server, scheduled(fast_server, channel, "<p>first</p>", type="schedule"))
    assert first["error"].startswith(
        "Waiting for the channel to be reconnected (Failed on Webhook (HTTP 401): token revoked)")
    calls = len(receiver.requests)
    second = waiting_for_reconnect(fast_server, scheduled(fast_server, channel, "<p>second</p>", type="schedule"))
    assert "PUBLISH_GRACE" in second["error"] and len(receiver.requests) == calls
    assert sum("reconnect this Webhook channel" in text for text in notifications(fast_server)) == 1


def test_a_lost_answer_is_sent_again_and_the_receiver_sees_one_delivery(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    receiver.drop_next("POST", "/hook", after_handling=True)  # acted on, but the answer never came back
    answer = settled(fast_server, scheduled(fast_server, channel, "<p>exactly once</p>", type="schedule"))
    assert answer["state"] == "PUBLISHED"
    assert [item["text"] for item in receiver.published] == ["exactly once"]
    assert len(receiver.requests_to("POST", "/hook")) == 3  # ping, lost attempt, repeat


def down_until(server, moment: float) -> None:
    """Stop the server (its scheduler notes when), keep it down until the Unix time `moment`, start it again."""
    server.stop()
    time.sleep(max(0.0, moment - time.time()))
    server.start()


def test_a_post_missed_by_more_than_the_grace_period_is_not_sent(start_server_with_fakes, receiver):
    """rustiz was down when the post was due: more than PUBLISH_GRACE late, it is not sent (no burst of stale
    posts), and its error says when rustiz was down; a post only a little late still goes out."""
    server = start_server_with_fakes(env={**FAST_RETRIES, "PUBLISH_GRACE": "6"})
    channel = webhook_channel(server, receiver)
    start = time.time()
    missed = scheduled(server, channel, "<p>stale</p>", type="schedule", date=iso(1))
    recent = scheduled(server, channel, "<p>a little late</p>", type="schedule", date=iso(10))
    down_until(server, start + 11.5)
    assert settled(server, recent)["state"] == "PUBLISHED"
    answer = settled(server, missed)
    assert answer["state"] == "ERROR" and answer["error"].startswith("Missed: this post was due at ")
    down = re.search(r"but rustiz was not running from (\S+) \(its last sign of life\) to (\S+) \(stopped, "
                     r"restarting, or its machine asleep\)", answer["error"])
    assert down and down[1] < answer["publishDate"] < down[2], answer["error"]
    assert "more than the 6 s grace period (PUBLISH_GRACE)" in answer["error"]
    assert [item["text"] for item in receiver.published] == ["a little late"]


def test_a_post_held_back_by_a_rate_limit_past_the_grace_period_says_so(start_server_with_fakes, receiver):
    """Missed while rustiz was running: the error names what held the post back, not an outage."""
    server = start_server_with_fakes(env={**FAST_RETRIES, "PUBLISH_GRACE": "2"})
    channel = webhook_channel(server, receiver)
    receiver.fail_next("POST", "/hook", 429, {"message": "slow down"}, {"Retry-After": "6"})
    throttled = scheduled(server, channel, "<p>first</p>", type="schedule")
    waiting = scheduled(server, channel, "<p>second</p>", type="schedule", date=iso(2))
    answer = settled(server, waiting)
    assert answer["state"] == "ERROR" and answer["error"].startswith("Missed: this post was due at ")
    assert "but rustiz was running, and Webhook had asked it to wait before the next post on this channel " \
           "(a rate limit, until " in answer["error"], answer["error"]
    assert settled(server, throttled)["state"] == "PUBLISHED"


def test_a_recurring_post_goes_again_at_its_next_occurrence(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    post_id = scheduled(fast_server, channel, "<p>every week</p>", type="schedule", date=iso(0.5), inter=7)
    receiver.wait_for(lambda: receiver.published)
    deadline = time.monotonic() + 10
    while (answer := get_post(fast_server, post_id))["state"] != "QUEUE" or answer["releaseId"] is None:
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)
    assert answer["publishDate"] > iso(6.9 * 86400) and answer["releaseId"] == "msg-1"


def test_a_recurring_post_goes_again_at_its_local_time_in_the_organization_s_timezone(fast_server, receiver):
    """A daily post first dated 09:00 in Paris in the other half of the year (summer time or winter time)
    is re-armed for the next 09:00 in Paris, not 24 h steps of UTC from its first date."""
    from zoneinfo import ZoneInfo
    paris, utc = ZoneInfo("Europe/Paris"), datetime.timezone.utc
    now = datetime.datetime.now(utc)
    other_season = datetime.datetime(now.year - 1, 1 if now.astimezone(paris).dst() else 7, 15, 9, tzinfo=paris)
    assert api(fast_server, "PUT", "/public/v1/organization", {"timezone": "Europe/Paris"})[0] == 200
    channel = webhook_channel(fast_server, receiver)
    post_id = scheduled(fast_server, channel, "<p>daily at nine</p>", type="schedule", date=iso(3), inter=1)
    with connect_database(fast_server.database) as db:  # as if created on that day, with the first date it was given then
        db.execute("UPDATE post SET recurrence_anchor = ? WHERE id = ?",
                   (other_season.astimezone(utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"), post_id))
    receiver.wait_for(lambda: receiver.published)
    deadline = time.monotonic() + 10
    while (answer := get_post(fast_server, post_id))["state"] != "QUEUE" or answer["releaseId"] is None:
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)
    nine = datetime.datetime.combine(now.astimezone(paris).date(), datetime.time(9), tzinfo=paris)
    expected = next(moment for moment in (nine, nine + datetime.timedelta(days=1)) if moment > now).astimezone(utc)
    assert answer["publishDate"] == expected.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_next_occurrence_keeps_the_local_time_across_daylight_saving_changes():
    from rustiz_features.recurrence import next_occurrence

    def after(moment: str) -> float:
        return datetime.datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp()

    paris_nine = "2030-01-10T08:00:00.000Z"  # 09:00 CET
    assert next_occurrence(paris_nine, None, 1, "Europe/Paris", after("2030-03-30T08:00:00Z")) == \
        "2030-03-31T07:00:00.000Z"  # 09:00 CEST
    assert next_occurrence(paris_nine, None, 7, "Europe/Paris", after("2030-10-24T07:00:00Z")) == \
        "2030-10-31T08:00:00.000Z"  # 09:00 CET again
    # The gap: 02:30 does not exist in Paris on 2030-03-31 (02:00 -> 03:00), nor in New York on 2030-03-10.
    assert next_occurrence("2030-03-20T01:30:00.000Z", None, 1, "Europe/Paris", after("2030-03-30T02:00:00Z")) == \
        "2030-03-31T01:00:00.000Z"  # 03:00 CEST
    assert next_occurrence("2030-03-01T07:30:00.000Z", None, 1, "America/New_York",
                           after("2030-03-09T08:00:00Z")) == "2030-03-10T07:00:00.000Z"  # 03:00 EDT
    # The doubled hour: 01:30 happens twice in New York on 2030-11-03; the occurrence is the first of them.
    new_york_half_past_one = "2030-10-01T05:30:00.000Z"
    assert next_occurrence(new_york_half_past_one, None, 1, "America/New_York", after("2030-11-02T06:00:00Z")) == \
        "2030-11-03T05:30:00.000Z"
    assert next_occurrence(new_york_half_past_one, None, 1, "America/New_York", after("2030-11-03T05:30:00Z")) == \
        "2030-11-04T06:30:00.000Z"  # not 06:30 on the 3rd, the same local time again
    # The anchor, not the date the scheduler last moved the post to, keeps the local time.
    assert next_occurrence("2030-03-31T01:00:00.000Z", "2030-03-20T01:30:00.000Z", 1, "Europe/Paris",
                           after("2030-03-31T01:00:00Z")) == "2030-04-01T00:30:00.000Z"  # 02:30 CEST
    # The calendar ends: no next occurrence (an interval of 3,000,000 days once re-armed a post in 10240).
    assert next_occurrence("2026-12-01T10:00:00.000Z", None, 3000000, "UTC", after("2026-12-02T00:00:00Z")) is None
    assert next_occurrence("9999-12-31T10:00:00.000Z", None, 1, "America/New_York",
                           after("9999-12-31T10:00:00Z")) is None


def test_a_recurring_post_missed_while_down_skips_to_its_next_future_occurrence(start_server_with_fakes, receiver):
    server = start_server_with_fakes(env={**FAST_RETRIES, "PUBLISH_GRACE": "2"})
    channel = webhook_channel(server, receiver)
    start = time.time()
    post_id = scheduled(server, channel, "<p>daily</p>", type="schedule", date=iso(1), inter=1)
    due = get_post(server, post_id)["publishDate"]
    down_until(server, start + 4.5)
    deadline = time.monotonic() + 10
    while (answer := get_post(server, post_id))["publishDate"] < iso(0):
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)
    assert answer["state"] == "QUEUE" and answer["publishDate"] < iso(86400)
    assert receiver.published == []
    assert any(text.startswith(f"{answer['integration']['name']}: skipped the occurrence due at {due}: rustiz was "
                               "not running from ") for text in notifications(server)), notifications(server)


def test_outgoing_webhooks_get_signed_events_for_published_and_failed_posts(fast_server, receiver):
    channel = webhook_channel(fast_server, receiver)
    listener = FakeWebhookReceiver(secret="events-secret")
    try:
        status, webhook = api(fast_server, "POST", "/public/v1/webhooks",
                              {"name": "n8n", "url": listener.url + "/hook", "secret": "events-secret",
                               "integrations": [{"id": channel}], "events": ["post.published", "post.failed"]})
        assert status == 201 and webhook["signed"] is True and "secret" not in webhook
        assert api(fast_server, "GET", "/public/v1/webhooks")[1] == [webhook]
        settled(fast_server, scheduled(fast_server, channel, "<p>announced</p>", type="schedule"))
        receiver.fail_next("POST", "/hook", 400, {"message": "nope"})
        settled(fast_server, scheduled(fast_server, channel, "<p>refused</p>", type="schedule"))
        listener.wait_for(lambda: len(listener.events) == 2)
        published, failed = sorted(listener.events, key=lambda event: event["event"], reverse=True)
        assert published["event"] == "post.published" and published["post"]["releaseURL"].endswith("/m/1")
        assert failed["event"] == "post.failed" and "HTTP 400" in failed["post"]["error"]
        assert all(signature_ok(request, "events-secret") for request in listener.requests)
        assert api(fast_server, "DELETE", f"/public/v1/webhooks/{webhook['id']}")[0] == 200
        assert api(fast_server, "GET", "/public/v1/webhooks")[1] == []
    finally:
        listener.close()


def test_webhook_registrations_are_checked(fast_server, receiver):
    status, answer = api(fast_server, "POST", "/public/v1/webhooks",
                         {"url": "ftp://example.com", "integrations": ["no-such-channel"]})
    assert status == 400
    assert answer["message"] == ["url must be a URL address starting with http:// or https://",
                                 'integrations.0 is not a channel of this organization: "no-such-channel"']
    status, answer = api(fast_server, "DELETE", "/public/v1/webhooks/nope")
    assert status == 404 and answer["message"] == "No webhook nope in this organization"


def test_with_two_workers_each_post_is_published_once(start_server_with_fakes, receiver):
    server = start_server_with_fakes(env=FAST_RETRIES, args=("--workers", "2"))
    channel = webhook_channel(server, receiver)
    posts = [scheduled(server, channel, f"<p>post {number}</p>", type="schedule", date=iso(1)) for number in range(6)]
    for post_id in posts:
        assert settled(server, post_id, timeout=30)["state"] == "PUBLISHED"
    assert sorted(item["text"] for item in receiver.published) == sorted(f"post {n}" for n in range(6))


def test_a_second_server_on_the_same_database_stands_by_and_takes_over_when_the_first_dies(start_server_with_fakes, receiver,
                                                                                          tmp_path):
    first = start_server_with_fakes(env=FAST_RETRIES, data_dir=tmp_path / "shared")
    # The ready line comes before the scheduler's first tick: the first must hold the lock before the second starts.
    wait_for(lambda: first.stderr_lines, lambda lines: any("scheduler running" in line for line in lines))
    second = start_server_with_fakes(env=FAST_RETRIES, data_dir=tmp_path / "shared")
    channel = webhook_channel(first, receiver)
    settled(first, scheduled(first, channel, "<p>by the first</p>", type="schedule"))
    first.stop(signal.SIGKILL)
    settled(second, scheduled(second, channel, "<p>by the second</p>", type="schedule", date=iso(0.5)))
    assert [item["text"] for item in receiver.published] == ["by the first", "by the second"]
    assert sum("scheduler running" in line for line in first.stderr_lines + second.stderr_lines) == 2


def test_one_organization_s_hanging_servers_do_not_hold_up_another_organization_s_posts(start_server_with_fakes,
                                                                                          receiver):
    # Two publishing slots; org A's three webhook channels point at a server that answers a header line every
    # 0.3 s (for 15 s), org B's at a receiver that answers at once.
    server = start_server_with_fakes(env={"RUSTIZ_PUBLISH_CONCURRENCY": "2", "RUSTIZ_OUTBOUND_TOTAL_TIMEOUT": "10",
                                          **FAST_RETRIES})
    hanging = SlowServer(b"HTTP/1.1 200 OK\r\n", b"X-Slow: 1\r\n", quick=lambda request: (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}" if b'"ping"' in request else None))
    try:
        result = run_cli(server.pyz, "org", "add", "Second", env={"RUSTIZ_CONFIG": str(server.config_path)})
        assert result.returncode == 0, result.stderr
        other_key = next(word for word in result.stdout.split() if len(word) == 64)
        slow_channels = [connected(server, "webhook", {"url": f"{hanging.url}/hook{number}"}, f"slow {number}")["id"]
                         for number in range(3)]
        status, channel = api(server, "POST", "/public/v1/integrations",
                              {"provider": "webhook", "credentials": receiver.credentials()}, key=other_key)
        assert status == 201, channel
        for number, channel_id in enumerate(slow_channels):
            scheduled(server, channel_id, f"<p>slow {number}</p>", type="schedule", date=iso(1))
        time.sleep(2)  # org A's posts are being published (hanging) when org B's comes due
        due = time.time() + 1
        status, created = api(server, "POST", "/public/v1/posts", post_body(
            channel_post(channel["id"], "<p>org B</p>"), type="schedule", date=iso(1)), key=other_key)
        assert status == 201, created
        wait_for(lambda: receiver.published, bool, timeout=15)
        assert time.time() - due < 4, f"org B's post went out {time.time() - due:.1f} s late"
    finally:
        hanging.close()
