"""The choice after consent, end to end with the built server and a fake LinkedIn: a LinkedIn Page
channel waits in inBetweenSteps (its posts wait too) until a page is picked through the API, then posts as
that page; a consent for another account than the channel's changes nothing."""
from __future__ import annotations


import pytest

from fakes.linkedin import CLIENT_ID, CLIENT_SECRET, FakeLinkedIn
from support import API, api, connect_oauth, get_post, scheduled, settled, wait_for


@pytest.fixture
def linkedin():
    fake = FakeLinkedIn()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, linkedin):
    return start_server_with_fakes(env={
        "RUSTIZ_LINKEDIN_PAGE_AUTH_URL": linkedin.url, "RUSTIZ_LINKEDIN_PAGE_API_URL": linkedin.url,
        "RUSTIZ_LINKEDIN_AUTH_URL": linkedin.url, "RUSTIZ_LINKEDIN_API_URL": linkedin.url,
        "LINKEDIN_CLIENT_ID": CLIENT_ID, "LINKEDIN_CLIENT_SECRET": CLIENT_SECRET, "RUSTIZ_RETRY_BASE": "0.3"})


def test_a_page_channel_waits_for_its_page_then_posts_as_it(server, linkedin):
    back = connect_oauth(server, "linkedin-page")
    assert back["notice"] == "pick", back
    channel_id = back["channel"]
    row = api(server, "GET", f"{API}/integrations/{channel_id}")[1]
    assert row["inBetweenSteps"] is True
    post_id = scheduled(server, channel_id, "<p>For the page</p>", type="schedule")
    waiting = wait_for(lambda: get_post(server, post_id), lambda post: (post.get("error") or "").startswith("Waiting"))
    assert waiting["state"] == "QUEUE" and "page or board to be chosen" in waiting["error"]
    status, choices = api(server, "GET", f"{API}/integrations/{channel_id}/steps")
    assert status == 200 and [c["name"] for c in choices] == ["Analytical Engines Ltd", "Difference Society"]
    status, answer = api(server, "POST", f"{API}/integrations/{channel_id}/steps", {"id": "7777777"})
    assert status == 400 and "none of the choices" in answer["message"]
    status, row = api(server, "POST", f"{API}/integrations/{channel_id}/steps", {"id": choices[0]["id"]})
    assert status == 200 and (row["inBetweenSteps"], row["name"]) == (False, "Analytical Engines Ltd"), row
    assert settled(server, post_id)["state"] == "PUBLISHED"
    [post] = linkedin.posts.values()
    assert post["author"] == "urn:li:organization:2414183"
    status, answer = api(server, "GET", f"{API}/integrations/{channel_id}/steps")
    assert status == 409 and "not waiting for a choice" in answer["message"]


def test_reconnecting_a_page_channel_keeps_its_page(server, linkedin):
    channel_id = connect_oauth(server, "linkedin-page")["channel"]
    api(server, "POST", f"{API}/integrations/{channel_id}/steps", {"id": "5590001"})
    back = connect_oauth(server, "linkedin-page", refresh=channel_id)
    assert (back["notice"], back["channel"]) == ("reconnected", channel_id)
    row = api(server, "GET", f"{API}/integrations/{channel_id}")[1]
    assert (row["name"], row["inBetweenSteps"]) == ("Difference Society", False)


def test_a_member_channel_connects_without_a_choice_and_publishes(server, linkedin):
    channel_id = connect_oauth(server, "linkedin")["channel"]
    assert settled(server, scheduled(server, channel_id, "<p>Hello #rustiz</p>"))["state"] == "PUBLISHED"
    [post] = linkedin.posts.values()
    assert post["author"] == "urn:li:person:aB3dE5fG7h"
    status, answer = api(server, "GET", f"{API}/integrations/{channel_id}/steps")
    assert status == 409


def test_a_page_s_analytics_are_its_followers_and_its_posts_statistics(server, linkedin):
    channel_id = connect_oauth(server, "linkedin-page")["channel"]
    api(server, "POST", f"{API}/integrations/{channel_id}/steps", {"id": "2414183"})
    post = settled(server, scheduled(server, channel_id, "<p>Counted</p>"))
    status, answer = api(server, "GET", f"{API}/analytics/{channel_id}?date=30")
    totals = {item["label"]: item["data"][0]["total"] for item in answer}
    assert status == 200 and totals["Followers"] == "1500" and totals["Impressions"] == "250", answer
    status, answer = api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert {item["label"] for item in answer} == {"Impressions", "Clicks", "Likes", "Comments", "Reposts"}


def test_a_member_s_analytics_are_an_empty_list_as_linkedin_gives_no_member_statistics(server, linkedin):
    channel_id = connect_oauth(server, "linkedin")["channel"]
    assert api(server, "GET", f"{API}/analytics/{channel_id}") == (200, [])
