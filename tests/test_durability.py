"""Crash safety and load: kill -9 while posts are being published loses none and publishes none
twice; 1,000 posts due in the same minute on 50 channels all go out once, within the caps."""
from __future__ import annotations

import signal
import time
from collections import Counter

from fakes.webhook import FakeWebhookReceiver
from support import FAST_RETRIES, api, channel_post, iso, post_body, settled, webhook_channel


def schedule_many(server, channel_ids: list, date: str, label: str) -> list:
    """One post per channel in one request; returns the post ids."""
    entries = [channel_post(channel, f"<p>{label} on {index}</p>") for index, channel in enumerate(channel_ids)]
    status, answer = api(server, "POST", "/public/v1/posts", post_body(*entries, type="schedule", date=date))
    assert status == 201, answer
    return [item["postId"] for item in answer]


class CountingReceiver(FakeWebhookReceiver):
    """Also measures how many publishes are in flight at once, and when each channel got each post."""

    def __init__(self, answer_after: float = 0.0):
        super().__init__()
        self.answer_after = answer_after
        self.in_flight = self.most_in_flight = 0
        self.arrivals: dict = {}

    def receive(self, request):
        if request.json()["event"] != "post.publish":
            return super().receive(request)
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.arrivals.setdefault(request.query.get("c"), []).append(time.monotonic())
        try:
            time.sleep(self.answer_after)  # the platform acts on it; its answer comes later
            return super().receive(request)
        finally:
            with self.lock:
                self.in_flight -= 1


def test_kill_9_while_publishing_loses_no_post_and_publishes_none_twice(start_server_with_fakes, tmp_path):
    receiver = CountingReceiver(answer_after=1.5)
    data = tmp_path / "data"
    try:
        server = start_server_with_fakes(env=FAST_RETRIES, data_dir=data)
        channels = [webhook_channel(server, receiver, path=f"/hook?c={number}") for number in range(6)]
        posts = schedule_many(server, channels, iso(1), "first") + schedule_many(server, channels, iso(1), "second")
        # Some accepted, and at least one in flight (its answer still to come) when the kill lands.
        receiver.wait_for(lambda: len(receiver.published) >= 2 and receiver.in_flight >= 1)
        server.stop(signal.SIGKILL)
        restarted = start_server_with_fakes(env=FAST_RETRIES, data_dir=data)
        outcomes = [settled(restarted, post_id, timeout=60) for post_id in posts]
        assert {outcome["state"] for outcome in outcomes} == {"PUBLISHED"}
        published = Counter(item["text"] for item in receiver.published)
        assert sorted(published) == sorted(f"{label} on {n}" for label in ("first", "second") for n in range(6))
        assert set(published.values()) == {1}  # each exactly once on the platform's side
        # (a request cut short by the kill arrives without its whole JSON body: it delivered nothing)
        repeated = Counter(request.headers["x-rustiz-delivery"] for request in receiver.requests
                           if (request.json() or {}).get("event") == "post.publish")
        assert max(repeated.values()) >= 2  # the interrupted ones were sent again, and recognised
    finally:
        receiver.close()


def test_a_thousand_posts_due_in_the_same_minute_on_fifty_channels_all_go_out_once_within_the_caps(start_server_with_fakes):
    receiver = CountingReceiver()
    try:
        server = start_server_with_fakes(env={**FAST_RETRIES, "API_LIMIT": "0"})
        channels = [webhook_channel(server, receiver, path=f"/hook?c={number}") for number in range(50)]
        due = iso(5)
        posts = [post_id for batch in range(20) for post_id in schedule_many(server, channels, due, f"batch {batch}")]
        assert len(posts) == 1000
        receiver.wait_for(lambda: len(receiver.published) == 1000, timeout=110)
        published = Counter(item["text"] for item in receiver.published)
        assert len(published) == 1000 and set(published.values()) == {1}
        assert receiver.most_in_flight <= 4  # the webhook provider's concurrency cap
        for times in receiver.arrivals.values():  # one channel's posts at least its spacing apart
            assert len(times) == 20
            assert min(later - earlier for earlier, later in zip(times, times[1:])) >= 0.9
        sample = settled(server, posts[-1])
        assert sample["state"] == "PUBLISHED"
    finally:
        receiver.close()
