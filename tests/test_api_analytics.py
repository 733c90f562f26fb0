"""GET /analytics/:integration and GET /analytics/post/:postId: the platforms' own counts in Postiz's
shape, fetched on demand and cached briefly; [] where a platform gives none; never invented."""
from __future__ import annotations

import time

import pytest

from conftest import provider_fixtures
from fakes.bluesky import FakeBluesky
from fakes.mastodon import FakeMastodon
from support import API, api, scheduled, settled, webhook_channel

mastodon, server, channel = provider_fixtures("mastodon", FakeMastodon, names=("mastodon", "server", "channel"))
pds, bluesky_server, bluesky_channel = provider_fixtures("bluesky", FakeBluesky,
                                                         names=("pds", "bluesky_server", "bluesky_channel"))
TODAY = time.strftime("%Y-%m-%d", time.gmtime())


def figures(answer: list) -> dict:
    assert all(set(item) == {"label", "data", "percentageChange"} for item in answer), answer
    return {item["label"]: item["data"][0]["total"] for item in answer}


def test_a_mastodon_channel_reports_its_followers_and_posts(server, mastodon, channel):
    status, answer = api(server, "GET", f"{API}/analytics/{channel['id']}?date=30")
    assert status == 200 and figures(answer) == {"Followers": "1200", "Following": "80", "Posts": "0"}
    assert answer[0]["data"][0]["date"] == TODAY


def test_a_published_mastodon_post_reports_its_favourites_boosts_and_replies(server, mastodon, channel):
    post = settled(server, scheduled(server, channel["id"], "<p>Counted</p>"))
    status, answer = api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert status == 200, "\n".join(server.stderr_lines)
    assert figures(answer) == {"Favourites": "7", "Boosts": "3", "Replies": "2"}
    api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert len(mastodon.requests_to("GET", f"/api/v1/statuses/{post['releaseId']}")) == 1, "cached"


def test_bluesky_counts_come_from_the_appview(bluesky_server, pds, bluesky_channel):
    status, answer = api(bluesky_server, "GET", f"{API}/analytics/{bluesky_channel['id']}")
    assert status == 200 and figures(answer)["Followers"] == "420"
    post = settled(bluesky_server, scheduled(bluesky_server, bluesky_channel["id"], "<p>Counted</p>"))
    status, answer = api(bluesky_server, "GET", f"{API}/analytics/post/{post['id']}")
    assert status == 200 and figures(answer) == {"Likes": "11", "Reposts": "4", "Replies": "1", "Quotes": "0"}


def test_a_platform_without_counts_and_an_unpublished_post_answer_an_empty_list(server, receiver):
    hook = webhook_channel(server, receiver)
    assert api(server, "GET", f"{API}/analytics/{hook}") == (200, [])
    draft = scheduled(server, hook, "<p>Later</p>", type="draft")
    assert api(server, "GET", f"{API}/analytics/post/{draft}") == (200, [])


@pytest.mark.parametrize("date", ["0", "366", "abc", "-1", "1e3"])
def test_the_date_must_be_a_number_of_days(server, channel, date):
    mastodon_post = scheduled(server, channel["id"], "<p>Later</p>", type="draft")
    status, answer = api(server, "GET", f"{API}/analytics/post/{mastodon_post}?date={date}")
    assert status == 400 and answer["message"].startswith("date must be a whole number of days")
    status, answer = api(server, "GET", f"{API}/analytics/{channel['id']}?date={date}")
    assert status == 400 and answer["message"].startswith("date must be a whole number of days")


def test_unknown_ids_are_404_and_a_failing_platform_is_502_saying_so(server, mastodon, channel):
    assert api(server, "GET", f"{API}/analytics/nope")[0] == 404
    assert api(server, "GET", f"{API}/analytics/post/nope")[0] == 404
    mastodon.fail_next("GET", "/api/v1/accounts/verify_credentials", 503, {"error": "Down for maintenance"})
    status, answer = api(server, "GET", f"{API}/analytics/{channel['id']}?date=7")
    assert status == 502 and "Mastodon did not give its figures" in answer["message"], answer
