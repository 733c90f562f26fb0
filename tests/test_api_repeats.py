"""Repeating posts with an end (issue 26): repeatUntil (a day or an instant) or repeatCount (the first time
counted) beside inter, stored and shown on post objects, honoured by the listing (no occurrence after the end)
and by the scheduler (after the last one the post stays PUBLISHED at its date); GET /posts/:id's occurrences;
every malformed end refused with a 400 naming the field, never a 5xx."""
from __future__ import annotations

import datetime
import json
import random
import time

import pytest

from support import API, Database, api, connect_database, get_post, iso, scheduled, wait_for, webhook_channel

PARIS_NINE = "2030-03-29T09:00:00+01:00"  # the last Friday before the clocks go forward in Paris


@pytest.fixture
def server(standby_server):
    """Posts written for the listing stay as written: the scheduler stands by."""
    return standby_server


@pytest.fixture
def channel(server) -> str:
    return Database(server).channel("Sky", "bluesky", profile="sky")


def body(channel_id: str, date: str = PARIS_NINE, text: str = "<p>daily</p>", **extra) -> dict:
    return {"type": "schedule", "date": date, "shortLink": False, "tags": [], "allowDuplicate": True,
            "posts": [{"integration": {"id": channel_id}, "value": [{"content": text, "image": []}],
                       "settings": {"__type": "bluesky"}}], **extra}


def create(server, channel_id: str, **extra) -> str:
    status, answer = api(server, "POST", f"{API}/posts", body(channel_id, **extra))
    assert status == 201, answer
    return answer[0]["postId"]


def listed(server, start: str = "2030-03-01", end: str = "2030-12-31") -> list:
    status, answer = api(server, "GET", f"{API}/posts?startDate={start}&endDate={end}")
    assert status == 200, answer
    return answer["posts"]


def in_paris(server) -> None:
    assert api(server, "PUT", f"{API}/organization", {"timezone": "Europe/Paris"})[0] == 200


def test_repeat_count_3_lists_exactly_3_occurrences_and_the_post_shows_its_end(server, channel):
    post_id = create(server, channel, inter=1, repeatCount=3)
    items = listed(server)
    assert [item["publishDate"] for item in items] == [
        "2030-03-29T08:00:00.000Z", "2030-03-30T08:00:00.000Z", "2030-03-31T08:00:00.000Z"]
    assert {(item["id"], item["repeatCount"], item["repeatUntil"]) for item in items} == {(post_id, 3, None)}
    post = get_post(server, post_id)
    assert (post["repeatCount"], post["repeatUntil"]) == (3, None)
    assert post["occurrences"] == {"next": [item["publishDate"] for item in items], "last": "2030-03-31T08:00:00.000Z"}


def test_repeat_until_a_day_across_the_daylight_saving_change_keeps_the_local_time(server, channel):
    in_paris(server)
    post_id = create(server, channel, inter=1, repeatUntil="2030-04-01")
    assert [item["publishDate"] for item in listed(server)] == [
        "2030-03-29T08:00:00.000Z", "2030-03-30T08:00:00.000Z", "2030-03-31T07:00:00.000Z",
        "2030-04-01T07:00:00.000Z"]  # 09:00 in Paris each day, the last day included
    post = get_post(server, post_id)
    assert post["repeatUntil"] == "2030-04-01" and post["repeatCount"] is None
    assert post["occurrences"]["last"] == "2030-04-01T07:00:00.000Z"


def test_repeat_until_an_instant_includes_an_occurrence_at_that_instant(server, channel):
    in_paris(server)
    create(server, channel, inter=1, repeatUntil="2030-03-31T09:00:00+02:00")
    assert [item["publishDate"] for item in listed(server)] == [
        "2030-03-29T08:00:00.000Z", "2030-03-30T08:00:00.000Z", "2030-03-31T07:00:00.000Z"]
    weekly = create(server, channel, inter=7, repeatUntil="2030-04-12T08:59:59Z", date="2030-03-29T10:00:00Z")
    assert [item["publishDate"] for item in listed(server) if item["id"] == weekly] == [
        "2030-03-29T10:00:00.000Z", "2030-04-05T09:00:00.000Z"]  # 11:00 in Paris; 04-12 09:00Z is past the end


def test_occurrences_next_five_from_now_and_last(server, channel):
    endless = get_post(server, create(server, channel, inter=2))
    assert endless["repeatUntil"] is None and endless["repeatCount"] is None
    assert endless["occurrences"] == {"next": ["2030-03-29T08:00:00.000Z", "2030-03-31T08:00:00.000Z",
                                               "2030-04-02T08:00:00.000Z", "2030-04-04T08:00:00.000Z",
                                               "2030-04-06T08:00:00.000Z"], "last": None}
    once = get_post(server, create(server, channel, date="2030-05-01T10:00:00Z"))
    assert once["occurrences"] == {"next": ["2030-05-01T10:00:00.000Z"], "last": "2030-05-01T10:00:00.000Z"}
    # A series partly gone: its 4th occurrence is pending, the 5th and last follows.
    started = create(server, channel, inter=1, repeatCount=5, date="2030-06-04T10:00:00Z")
    with connect_database(server.database) as db:
        db.execute("UPDATE post SET recurrence_anchor = ? WHERE id = ?", ("2030-06-01T10:00:00.000Z", started))
    assert get_post(server, started)["occurrences"] == {
        "next": ["2030-06-04T10:00:00.000Z", "2030-06-05T10:00:00.000Z"], "last": "2030-06-05T10:00:00.000Z"}


def test_a_put_sets_replaces_and_clears_the_end(server, channel):
    post_id = create(server, channel, inter=1)
    status, post = api(server, "PUT", f"{API}/posts/{post_id}", {"repeatCount": 2})
    assert status == 200 and post["repeatCount"] == 2 and post["occurrences"]["last"] == "2030-03-30T08:00:00.000Z"
    status, post = api(server, "PUT", f"{API}/posts/{post_id}", {"repeatUntil": "2030-04-02", "content": "<p>x</p>"})
    assert status == 200 and (post["repeatUntil"], post["repeatCount"]) == ("2030-04-02", None)
    assert len(listed(server)) == 5
    status, post = api(server, "PUT", f"{API}/posts/{post_id}", {"content": "<p>kept</p>"})
    assert status == 200 and post["repeatUntil"] == "2030-04-02"  # (an edit that does not name the end keeps it)
    status, post = api(server, "PUT", f"{API}/posts/{post_id}", {"repeatUntil": None})
    assert status == 200 and post["repeatUntil"] is None and post["occurrences"]["last"] is None
    once = create(server, channel, date="2030-06-01T10:00:00Z")
    status, answer = api(server, "PUT", f"{API}/posts/{once}", {"repeatCount": 3})
    assert status == 400 and any(message.startswith("repeatCount needs inter") for message in answer["message"])
    status, answer = api(server, "PUT", f"{API}/posts/{post_id}", {"date": "2030-05-01T09:00:00Z",
                                                                   "repeatUntil": "2030-04-01"})
    assert status == 400 and any("repeatUntil must be after date" in message for message in answer["message"])


def refusal(server, channel_id: str, **extra) -> list:
    status, answer = api(server, "POST", f"{API}/posts", body(channel_id, **extra))
    assert status == 400, (extra, answer)
    return answer["message"]


def test_malformed_ends_are_refused_naming_the_field(server, channel):
    count_rule = ("repeatCount must be how many times the post goes out, the first time included: a whole number "
                  "from 1 to 1000")
    for count in (0, 1001, "abc", 2.5, True, -1, 1e308, [], {}):
        assert refusal(server, channel, inter=1, repeatCount=count) == [count_rule], count
    for until in ("abc", "2030-02-30", 12345, True, {}, "2030-03-29T07:59:59Z", "2030-03-27", "9" * 100):
        messages = refusal(server, channel, inter=1, repeatUntil=until)
        assert len(messages) == 1 and messages[0].startswith("repeatUntil must be"), (until, messages)
    assert refusal(server, channel, inter=1, repeatUntil="2030-05-01", repeatCount=3) == [
        "repeatUntil and repeatCount cannot both be given: a repeating post ends on a date or after a number of times"]
    for name, value in (("repeatUntil", "2030-05-01"), ("repeatCount", 3)):
        for inter in ({}, {"inter": 0}, {"inter": None}):
            (message,) = refusal(server, channel, **inter, **{name: value})
            assert message.startswith(f"{name} needs inter"), message
    assert listed(server) == []


def test_fuzzed_ends_never_make_a_5xx(server, channel):
    generator = random.Random(26)
    samples = [None, 0, 1, 1000, -5, 3.7, 10**30, float("1e300"), "", "1", "2030-04-01", "2030-04-01T00:00:00Z",
               "2030-13-01", "2030-04-01T25:00", "\u0000", "\U0001F600" * 50, [1], {"a": 1}, False]
    for _ in range(60):
        extra = {"inter": generator.choice([None, 0, 1, 7, "3", 3650])}
        for name in ("repeatUntil", "repeatCount"):
            if generator.random() < 0.7:
                extra[name] = generator.choice(samples)
        status, answer = api(server, "POST", f"{API}/posts", body(channel, **extra))
        assert status in (201, 400), (extra, status, answer)
        if status == 400:
            assert any(name in message for message in answer["message"] for name in ("repeat", "inter")), answer


# --- the scheduler: after the last occurrence the post stays PUBLISHED ------------------------------------------

def test_the_scheduler_stops_after_the_third_of_three(start_server_with_fakes, receiver):
    server = start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.2"})
    channel_id = webhook_channel(server, receiver)
    post_id = scheduled(server, channel_id, "<p>three times</p>", type="schedule", date=iso(1), inter=1,
                        repeatCount=3)
    for occurrence in (1, 2, 3):
        receiver.wait_for(lambda: len(receiver.published) == occurrence)
        if occurrence == 3:
            break
        wait_for(lambda: get_post(server, post_id),
                        lambda post: post["state"] == "QUEUE" and post["publishDate"] > iso(3600))
        # The next occurrence comes a day later: move the series back so that it is due in a second.
        due = iso(1)
        anchor = datetime.datetime.fromisoformat(due.replace("Z", "+00:00")) - datetime.timedelta(days=occurrence)
        with connect_database(server.database) as db:
            db.execute("UPDATE post SET publish_date = ?, recurrence_anchor = ? WHERE id = ?",
                       (due, anchor.strftime("%Y-%m-%dT%H:%M:%S.") + due[20:], post_id))
        scheduled(server, channel_id, f"<p>a draft that wakes the scheduler ({occurrence})</p>", type="draft",
                  date=iso(86400 * occurrence))
    post = wait_for(lambda: get_post(server, post_id), lambda post: post["state"] != "PUBLISHING")
    last = post["publishDate"]
    assert post["state"] == "PUBLISHED" and last < iso(0) and post["occurrences"] == {"next": [], "last": last}
    time.sleep(1.5)
    assert len(receiver.published) == 3 and get_post(server, post_id)["state"] == "PUBLISHED"


def test_an_export_keeps_the_end_and_imports_back_to_the_same_occurrences(server, channel):
    create(server, channel, inter=1, repeatUntil="2030-04-01", date="2030-03-29T09:00:00Z", text="<p>daily</p>")
    create(server, channel, inter=2, repeatCount=3, date="2030-03-29T10:00:00Z", text="<p>every other day</p>")
    last = create(server, channel, inter=7, repeatCount=4, date="2030-03-29T11:00:00Z", text="<p>weekly</p>")
    with connect_database(server.database) as db:  # (its 4th and last occurrence is the pending one)
        db.execute("UPDATE post SET recurrence_anchor = ? WHERE id = ?", ("2030-03-08T11:00:00.000Z", last))
    before = sorted((item["content"], item["publishDate"]) for item in listed(server))
    status, headers, raw = server.request("GET", f"{API}/posts/export?startDate=2030-03-01&endDate=2030-04-30",
                                          {"Authorization": server.key})
    assert status == 200, raw
    bodies = json.loads(raw)
    assert [(body.get("repeatUntil"), body.get("repeatCount")) for body in bodies] == [
        ("2030-04-01", None), ("2030-04-02T10:00:00.000Z", None), (None, 1)]
    with connect_database(server.database) as db:
        db.execute("DELETE FROM post")
    status, report = api(server, "POST", f"{API}/posts/import", bodies)
    assert status in (200, 201) and report.get("ok") is not False, report
    assert sorted((item["content"], item["publishDate"]) for item in listed(server)) == before


def test_a_duplicate_and_the_review_listing_keep_the_end(server, channel):
    original = create(server, channel, inter=1, repeatCount=3, type="draft")
    status, copy = api(server, "POST", f"{API}/posts/{original}/duplicate")
    assert status in (200, 201), copy
    copied = get_post(server, copy["posts"][0]["id"])
    assert (copied["repeatCount"], copied["occurrences"]["last"]) == (3, "2030-03-31T08:00:00.000Z")
    with connect_database(server.database) as db:
        db.execute("UPDATE post SET review = 'review' WHERE id = ?", (original,))
    status, answer = api(server, "GET", f"{API}/posts?state=review")
    assert status == 200 and [(item["id"], item["repeatCount"]) for item in answer["posts"]] == [(original, 3)]
