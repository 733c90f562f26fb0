"""Analytics over time: a channel's daily snapshots over 30 simulated days answered as Postiz's series, a post's
figures at 1 h, 24 h and 7 days taken once even by two processes at once, best times from the channel's own
posts (and why there are none yet), refusals, and a platform whose figures fail leaving its channel alone.

The days are played by calling the sweep (analytics_snapshots.take_due_snapshots) in the test's process with a
`now` of its own, on the server's database, against the fake platform; past rows are written straight in."""
from __future__ import annotations

import asyncio
import datetime
import random
import threading
import time

import pytest

import rustiz
from conftest import provider_fixtures
from fakes.mastodon import FakeMastodon
from support import API, api, connect_database, scheduled, settled, two_organizations

mastodon, server, channel = provider_fixtures("mastodon", FakeMastodon, names=("mastodon", "server", "channel"))
DAY = 86400


def sweep(server, now: float, owner: str = "test-process") -> int:
    """One sweep of the due snapshots as a rustiz process would run it, at `now`."""
    from rustiz_features.analytics_snapshots import take_due_snapshots
    from rustiz_features.http_client import HttpClient
    config = rustiz.load_config(server.env())
    store, http = rustiz.Store(server.database), HttpClient(config.fetch_allow)
    try:
        return asyncio.run(take_due_snapshots(config, store, http, owner, now))
    finally:
        http.close()
        store.close()


def day_of(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


def rows(server, sql: str, *parameters) -> list:
    with connect_database(server.database) as db:
        return db.execute(sql, parameters).fetchall()


def test_thirty_days_of_snapshots_make_the_series_postiz_draws(server, mastodon, channel):
    today = time.time()
    for days_ago in range(29, -1, -1):
        mastodon.followers = 1000 + (29 - days_ago) * 10
        assert sweep(server, today - days_ago * DAY) == 1
    stored = rows(server, "SELECT metric, day, total FROM analytics_day WHERE integration_id = ? ORDER BY day",
                  channel["id"])
    assert len(stored) == 90 and {metric for metric, _, _ in stored} == {"Followers", "Following", "Posts"}
    calls = len(mastodon.requests_to("GET", "/api/v1/accounts/verify_credentials"))
    assert sweep(server, today) == 0 and sweep(server, today - 3 * DAY) == 0, "each day's snapshot is taken once"
    assert len(mastodon.requests_to("GET", "/api/v1/accounts/verify_credentials")) == calls

    status, answer = api(server, "GET", f"{API}/analytics/{channel['id']}?date=30")
    assert status == 200 and all(set(item) == {"label", "data", "percentageChange"} for item in answer)
    series = {item["label"]: item for item in answer}
    followers = series["Followers"]
    assert [point["date"] for point in followers["data"]] == [day_of(today - n * DAY) for n in range(29, -1, -1)]
    assert [point["total"] for point in followers["data"]] == [str(1000 + n * 10) for n in range(30)]
    assert followers["percentageChange"] == 29.0 and series["Following"]["percentageChange"] == 0
    week = {item["label"]: item for item in api(server, "GET", f"{API}/analytics/{channel['id']}?date=7")[1]}
    assert [point["total"] for point in week["Followers"]["data"]] == [str(1000 + n * 10) for n in range(23, 30)]
    assert week["Followers"]["percentageChange"] == round((1290 - 1230) / 1230 * 100, 2)
    quarter = api(server, "GET", f"{API}/analytics/{channel['id']}?date=90")[1]
    assert len({item["label"]: item for item in quarter}["Followers"]["data"]) == 30


def test_the_first_request_answers_today_s_figures_and_starts_the_series(server, mastodon, channel):
    status, answer = api(server, "GET", f"{API}/analytics/{channel['id']}")
    assert status == 200 and {item["label"]: item["data"][0]["total"] for item in answer}["Followers"] == "1200"
    assert rows(server, "SELECT metric, total FROM analytics_day WHERE integration_id = ? AND day = ? ORDER BY metric",
                channel["id"], day_of(time.time())) == [("Followers", 1200), ("Following", 80), ("Posts", 0)]
    calls = len(mastodon.requests_to("GET", "/api/v1/accounts/verify_credentials"))
    assert sweep(server, time.time()) == 0, "today's snapshot is already taken"
    assert len(mastodon.requests_to("GET", "/api/v1/accounts/verify_credentials")) == calls


def test_a_post_s_figures_are_taken_at_1_hour_24_hours_and_7_days_once_even_by_two_processes(server, mastodon, channel):
    post = settled(server, scheduled(server, channel["id"], "<p>Counted over time</p>"))
    (published_at,), = rows(server, "SELECT published_at FROM post WHERE id = ?", post["id"])
    out = datetime.datetime.fromisoformat(published_at.replace("Z", "+00:00")).timestamp()
    status_path = f"/api/v1/statuses/{post['releaseId']}"
    for age, seconds in (("1h", 3700), ("24h", DAY + 100), ("7d", 7 * DAY + 100)):
        start, results = threading.Barrier(2), []

        def process(number: int) -> None:  # (each with its own connection, as two processes would)
            start.wait()
            results.append(sweep(server, out + seconds, f"process-{number}"))
        threads = [threading.Thread(target=process, args=(number,)) for number in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sum(results) >= 1, age  # (the channel's day is among them the first time)
        assert rows(server, "SELECT metric, total FROM analytics_post WHERE post_id = ? AND age = ? ORDER BY metric",
                    post["id"], age) == [("Boosts", 3), ("Favourites", 7), ("Replies", 2)]
    assert len(mastodon.requests_to("GET", status_path)) == 3, "one read per age, whichever process took it"
    sweep(server, out + 8 * DAY)  # (that day's channel snapshot, and nothing more of the post)
    assert len(mastodon.requests_to("GET", status_path)) == 3

    status, history = api(server, "GET", f"{API}/analytics/post/{post['id']}/history")
    assert status == 200 and [entry["age"] for entry in history["snapshots"]] == ["1h", "24h", "7d"]
    assert history["snapshots"][0]["figures"] == [{"label": "Boosts", "total": "3"}, {"label": "Favourites", "total": "7"},
                                                  {"label": "Replies", "total": "2"}]


def test_a_draft_has_no_history(server, channel):
    draft = scheduled(server, channel["id"], "<p>Later</p>", type="draft")
    assert api(server, "GET", f"{API}/analytics/post/{draft}/history") == (200, {"snapshots": []})


def published_posts(server, channel_id: str, moments: list) -> list:
    """Drafts made into posts published at `moments` (UTC datetimes), as if they had gone out then."""
    ids = [scheduled(server, channel_id, f"<p>Post {number}</p>", type="draft") for number in range(len(moments))]
    with connect_database(server.database) as db:
        for number, (post_id, moment) in enumerate(zip(ids, moments)):
            db.execute("UPDATE post SET state = 'PUBLISHED', release_id = ?, published_at = ? WHERE id = ?",
                       (f"r{number}", moment.strftime("%Y-%m-%dT%H:%M:%S.000Z"), post_id))
    return ids


def figures_at(server, post_id: str, age: str, **figures: float) -> None:
    with connect_database(server.database) as db:
        for metric, total in figures.items():
            db.execute("INSERT INTO analytics_post (post_id, age, metric, total, taken_at) VALUES (?, ?, ?, ?, ?)",
                       (post_id, age, metric, total, "2026-01-20T00:00:00.000Z"))


def test_best_times_come_from_the_channel_s_own_posts_in_the_organization_s_timezone(server, channel):
    assert api(server, "PUT", f"{API}/organization", {"timezone": "Europe/Paris"})[0] == 200
    monday_morning = [datetime.datetime(2026, 1, 5 + 7 * week, 9, 0) for week in range(4)]  # 10:00 in Paris
    tuesday_afternoon = [datetime.datetime(2026, 1, 6 + 7 * week, 15, 30) for week in range(4)]  # 16:30
    friday_night = [datetime.datetime(2026, 1, 9 + 7 * week, 20, 0) for week in range(2)]  # 21:00
    posts = published_posts(server, channel["id"], monday_morning + tuesday_afternoon + friday_night)
    for post_id in posts[:4]:
        figures_at(server, post_id, "24h", Favourites=10, Boosts=2)
        figures_at(server, post_id, "7d", Favourites=30, Boosts=6)  # (the week's figures count, not the day's)
    for post_id in posts[4:8]:
        figures_at(server, post_id, "24h", Favourites=9, Boosts=3)
    status, answer = api(server, "GET", f"{API}/integrations/{channel['id']}/best-times")
    assert status == 200 and answer["basedOn"] == 8 and answer["times"] == []
    assert "at least 10 published posts" in answer["reason"] and "2 more are needed" in answer["reason"]

    for post_id in posts[8:]:
        figures_at(server, post_id, "24h", Favourites=1)
    status, answer = api(server, "GET", f"{API}/integrations/{channel['id']}/best-times")
    assert status == 200 and set(answer) == {"times", "basedOn", "reason"} and answer["reason"] is None
    assert answer["basedOn"] == 10
    average = (4 * 36 + 4 * 12 + 2 * 1) / 10
    assert answer["times"] == [{"day": "monday", "time": "10:00", "score": round(36 / average, 2)},
                               {"day": "tuesday", "time": "16:00", "score": round(12 / average, 2)},
                               {"day": "friday", "time": "21:00", "score": round(1 / average, 2)}]


def test_refusals_name_what_is_wrong_and_nothing_answers_5xx(server, channel):
    assert api(server, "GET", f"{API}/analytics/{channel['id']}?date=14")[0] == 200  # (any days back, as Postiz)
    for date in ("0", "366", "abc", "7.0", "%00", "-7"):
        status, answer = api(server, "GET", f"{API}/analytics/{channel['id']}?date={date}")
        assert status == 400 and answer["message"].startswith("date must be a whole number of days"), (date, answer)
    for path in ("/analytics/nope", "/analytics/post/nope/history", "/integrations/nope/best-times"):
        assert api(server, "GET", API + path)[0] == 404
    both = two_organizations(server)
    theirs = both["theirs"]
    assert api(server, "GET", f"{API}/integrations/{theirs}/best-times")[0] == 404
    assert api(server, "GET", f"{API}/analytics/{theirs}?date=7")[0] == 404
    assert api(server, "GET", f"{API}/integrations/{channel['id']}/best-times", key=both["other_key"])[0] == 404
    fuzz = random.Random(26)
    for _ in range(60):
        junk = "".join(fuzz.choice([*"ab%0123456789-_.~'\"<>;:", "%C3%A9", "%2F", "%00", "%ZZ", "9" * 30])
                       for _ in range(fuzz.randint(1, 40)))
        for path in (f"/analytics/{junk}?date={junk}", f"/analytics/post/{junk}/history",
                     f"/integrations/{junk}/best-times", f"/analytics/{channel['id']}?date={junk}"):
            status, _ = api(server, "GET", API + path)
            assert status < 500, (path, status)


def test_failing_figures_neither_fail_nor_disconnect_the_channel_and_the_next_day_tries_again(server, mastodon,
                                                                                                channel):
    now, calls = time.time(), len(mastodon.requests_to("GET", "/api/v1/accounts/verify_credentials"))
    mastodon.fail_next("GET", "/api/v1/accounts/verify_credentials", 503, {"error": "Down for maintenance"})
    assert sweep(server, now) == 0
    assert sweep(server, now) == 0, "a failed day is not tried again that day"
    assert len(mastodon.requests_to("GET", "/api/v1/accounts/verify_credentials")) == calls + 1
    status, shown = api(server, "GET", f"{API}/integrations/{channel['id']}")
    assert status == 200 and not shown["disabled"] and not shown.get("refreshNeeded"), shown
    assert rows(server, "SELECT disabled, refresh_needed FROM integration WHERE id = ?", channel["id"]) == [(0, 0)]
    mastodon.fail_next("GET", "/api/v1/accounts/verify_credentials", 401, {"error": "The access token is invalid"})
    assert sweep(server, now + DAY) == 0
    assert rows(server, "SELECT disabled, refresh_needed FROM integration WHERE id = ?", channel["id"]) == [(0, 0)]
    mastodon.trouble.clear()
    assert sweep(server, now + 2 * DAY) == 1
    assert rows(server, "SELECT COUNT(*) FROM analytics_day WHERE integration_id = ?", channel["id"]) == [(3,)]


def test_a_platform_without_figures_is_passed_over_once_a_day_without_a_call(server, channel, receiver):
    from support import webhook_channel
    hook = webhook_channel(server, receiver)
    before = len(receiver.requests)
    assert sweep(server, time.time()) == 1  # (the Mastodon channel's day)
    assert rows(server, "SELECT done FROM analytics_claim WHERE subject = ?", f"day:{hook}:{day_of(time.time())}") == [(1,)]
    assert rows(server, "SELECT COUNT(*) FROM analytics_day WHERE integration_id = ?", hook) == [(0,)]
    assert len(receiver.requests) == before  # (nothing asked of a webhook channel)
