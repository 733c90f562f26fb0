"""Facebook Page end to end with the built server and a fake Facebook: Facebook Login (the short-lived token
exchanged for a long-lived one), a user with two pages picking one through /integrations/:id/steps, a
scheduled video post with a first comment going out at its time as the page, photos sent as bytes, a dead
token waiting for a reconnect that reads the page token again, throttling, and a refused permission."""
from __future__ import annotations

import time
import urllib.request

import pytest

from fakes.facebook import FakeFacebook, graph_error
from support import (
    API, api, connect_database, connect_oauth, get_post, iso, jpeg_file, mp4_file, png_file, refresh_needed,
    refused_post, scheduled, settled, uploaded, waiting_for_reconnect,
)

PAGE_ONE, PAGE_TWO = "101000000000001", "102000000000002"


@pytest.fixture
def facebook():
    fake = FakeFacebook()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, facebook):
    return start_server_with_fakes(env={**facebook.env, "RUSTIZ_RETRY_BASE": "0.3",
                                        "RUSTIZ_FACEBOOK_POLL_SECONDS": "0.05"})


def page_channel(server, page: str = PAGE_ONE) -> str:
    back = connect_oauth(server, "facebook")
    assert back["notice"] == "pick", back
    status, row = api(server, "POST", f"{API}/integrations/{back['channel']}/steps", {"id": page})
    assert status == 200 and row["inBetweenSteps"] is False, row
    return back["channel"]


def test_consent_exchanges_for_a_long_lived_token_then_the_user_picks_one_of_two_pages(server, facebook):
    back = connect_oauth(server, "facebook")
    channel_id = back["channel"]
    exchanges = facebook.requests_to("GET", "/v25.0/oauth/access_token")
    assert [request.query.get("grant_type") for request in exchanges] == [None, "fb_exchange_token"]
    with connect_database(server.database) as db:
        token, refresh_token, expiry = db.execute("SELECT token, refresh_token, token_expiration FROM integration "
                                                  "WHERE id = ?", (channel_id,)).fetchone()
    long_lived = [value for value, info in facebook.user_tokens.items() if info["long"]]
    assert long_lived and long_lived[0] in token and (refresh_token, expiry) == (None, None)
    assert api(server, "GET", f"{API}/integrations/{channel_id}")[1]["inBetweenSteps"] is True
    status, choices = api(server, "GET", f"{API}/integrations/{channel_id}/steps")
    assert status == 200 and [(c["id"], c["name"]) for c in choices] == [
        (PAGE_ONE, "Analytical Engines"), (PAGE_TWO, "Difference Society")]
    with urllib.request.urlopen(choices[1]["picture"], timeout=10) as picture:  # what a browser shows
        assert picture.headers["Content-Type"] == "image/png"
    status, row = api(server, "POST", f"{API}/integrations/{channel_id}/steps", {"id": PAGE_TWO})
    assert status == 200 and (row["name"], row["inBetweenSteps"]) == ("Difference Society", False), row
    # The same user connects again for the other page: a second channel.
    other = page_channel(server, PAGE_ONE)
    assert other != channel_id
    names = {row["name"] for row in api(server, "GET", f"{API}/integrations")[1]}
    assert {"Analytical Engines", "Difference Society"} <= names


def test_a_scheduled_video_with_a_first_comment_goes_out_at_its_time_as_the_page(server, facebook):
    channel_id = page_channel(server)
    video = uploaded(server, mp4_file(8192), "mp4")
    due = time.monotonic() + 3  # (the fake notes when requests arrive on the monotonic clock)
    post_id = scheduled(server, channel_id, "<p>The engine runs</p>", "<p>More in the comments</p>",
                        images=[video], provider="facebook", type="schedule", date=iso(3))
    post = settled(server, post_id, timeout=30)
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED", "PUBLISHED"], post
    [upload] = facebook.requests_to("POST", rf"/v25.0/{PAGE_ONE}/videos")
    assert upload.received >= due - 0.1, "the video went out before the post's date"
    made = [item for item in facebook.objects.values() if item["kind"] == "video"][0]
    comment = [item for item in facebook.objects.values() if item["kind"] == "comment"][0]
    assert (made["data"], made["description"]) == (mp4_file(8192), "The engine runs")
    assert (comment["on"], comment["message"]) == (made["id"], "More in the comments")
    page_token = made["page_token"]
    assert facebook.page_tokens[page_token][0] == PAGE_ONE and comment["page_token"] == page_token
    assert upload.headers["authorization"] == f"Bearer {page_token}"
    assert upload.query["appsecret_proof"] == facebook.proof(page_token)
    assert post["releaseURL"] == f"{facebook.url}/{PAGE_ONE}/videos/{made['id']}/"


def test_photos_go_as_bytes_attached_to_one_post(server, facebook):
    channel_id = page_channel(server)
    photos = [uploaded(server, png_file(), "png"), uploaded(server, jpeg_file(), "jpg")]
    post = settled(server, scheduled(server, channel_id, "<p>Two pictures</p>", images=photos, provider="facebook",
                                     settings={"url": "https://example.com/engines"}))
    assert post["state"] == "PUBLISHED", post
    [made] = [item for item in facebook.objects.values() if item["kind"] == "post"]
    assert (made["photos"], made["link"]) == ([png_file(), jpeg_file()], "https://example.com/engines")
    assert all("source" in request.multipart() and "url" not in request.multipart()
               for request in facebook.requests_to("POST", rf"/v25.0/{PAGE_ONE}/photos"))


def test_a_dead_token_waits_for_a_reconnect_which_reads_the_page_token_again(server, facebook):
    channel_id = page_channel(server)
    first = settled(server, scheduled(server, channel_id, "<p>Before</p>", provider="facebook"))
    assert first["state"] == "PUBLISHED"
    old_token = next(item["page_token"] for item in facebook.objects.values() if item["kind"] == "post")
    facebook.expire_user_tokens()
    waiting = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>After</p>", provider="facebook"))
    assert "code 190" in waiting["error"], waiting["error"]
    assert refresh_needed(server, channel_id)
    back = connect_oauth(server, "facebook", refresh=channel_id)
    assert (back.get("notice"), back["channel"]) == ("reconnected", channel_id), back
    assert settled(server, waiting["id"])["state"] == "PUBLISHED"
    new_token = [item["page_token"] for item in facebook.objects.values() if item["kind"] == "post"][-1]
    assert new_token != old_token and facebook.page_tokens[new_token][0] == PAGE_ONE
    assert api(server, "GET", f"{API}/integrations/{channel_id}")[1]["name"] == "Analytical Engines"


def test_throttling_is_retried_later(server, facebook):
    channel_id = page_channel(server)
    facebook.throttle_next(rf"/v25.0/{PAGE_ONE}/feed", code=4, minutes=0)
    post = settled(server, scheduled(server, channel_id, "<p>Patience</p>", provider="facebook"), timeout=30)
    assert post["state"] == "PUBLISHED", post
    assert len(facebook.requests_to("POST", rf"/v25.0/{PAGE_ONE}/feed")) == 2


def test_a_refused_permission_fails_the_post_with_the_advice(server, facebook):
    channel_id = page_channel(server)
    facebook.fail_next("POST", rf"/v25.0/{PAGE_ONE}/feed", 403, graph_error(
        200, "(#200) The user hasn't authorized the application to perform this action"))
    post = settled(server, scheduled(server, channel_id, "<p>Denied</p>", provider="facebook"))
    assert post["state"] == "ERROR" and "full control of the page" in post["error"], post
    assert not refresh_needed(server, channel_id)


def test_the_page_and_post_analytics(server, facebook):
    channel_id = page_channel(server)
    post = settled(server, scheduled(server, channel_id, "<p>Counted</p>", provider="facebook"))
    status, answer = api(server, "GET", f"{API}/analytics/{channel_id}?date=7")
    assert status == 200 and {item["label"] for item in answer} == {
        "Page reach", "Media views", "Posts engagement", "New followers"}, answer
    status, answer = api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert status == 200 and {item["label"]: item["data"][0]["total"] for item in answer} == {
        "Reach": "120", "Reactions": "9", "Clicks": "15"}, answer
    assert get_post(server, post["id"])["releaseURL"].startswith("https://www.facebook.com/")


def test_a_story_publishes_each_media_as_its_own_story(server, facebook):
    channel_id = page_channel(server)
    media = [uploaded(server, png_file(), "png"), uploaded(server, mp4_file(4096), "mp4")]
    post = settled(server, scheduled(server, channel_id, "<p>Stories</p>", images=media, provider="facebook",
                                     settings={"post_type": "story"}))
    assert post["state"] == "PUBLISHED", post
    stories = [item for item in facebook.objects.values() if item["kind"] == "story"]
    assert [story["media"] for story in stories] == [png_file(), mp4_file(4096)]
    assert post["releaseURL"] == f"{facebook.url}/stories/{stories[-1]['id']}"


def test_photos_and_a_video_in_one_post_are_refused_when_scheduled(server, facebook):
    channel_id = page_channel(server)
    media = [uploaded(server, png_file(), "png"), uploaded(server, mp4_file(4096), "mp4")]
    assert "photos or one video" in refused_post(server, channel_id, "<p>Both</p>", images=media, provider="facebook")
