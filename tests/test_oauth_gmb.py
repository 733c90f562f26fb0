"""Google Business Profile end to end with the built server and the fake (tests/fakes/gmb.py): Google's consent
(offline, consent), the location picked through /integrations/:id/steps, a scheduled event post whose photo
Google downloads from rustiz, the location's and the post's figures, posts refused before sending, a token
refreshed ahead of expiry and after a 401, a revoked grant waiting for a reconnect that keeps the location,
and the operator's app (Postiz's GOOGLE_GMB_* variables, YouTube's as the fallback)."""
from __future__ import annotations

import time

import pytest

from fakes.gmb import FakeGmb
from support import (
    API, api, channel_session, connect_database, connect_oauth, expire_token_in, iso, png_file,
    refresh_needed, refused_post, scheduled, settled, uploaded, waiting_for_reconnect,
)

LOCATION = "accounts/111/locations/9001"
PICTURE = png_file(3, 2, padding=12 * 1024)  # Google takes 10 KB to 5 MB


@pytest.fixture
def gmb():
    fake = FakeGmb()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, gmb):
    return start_server_with_fakes(env={**gmb.env, "GOOGLE_GMB_CLIENT_ID": gmb.client_id,
                                        "GOOGLE_GMB_CLIENT_SECRET": gmb.client_secret, "RUSTIZ_RETRY_BASE": "0.3"})


def location_channel(server, location: str = LOCATION) -> str:
    back = connect_oauth(server, "gmb")
    assert back["notice"] == "pick", back
    status, row = api(server, "POST", f"{API}/integrations/{back['channel']}/steps", {"id": location})
    assert status == 200 and row["inBetweenSteps"] is False, row
    return back["channel"]


def refresh_token_of(server, channel_id: str) -> str:
    with connect_database(server.database) as db:
        return db.execute("SELECT refresh_token FROM integration WHERE id = ?", (channel_id,)).fetchone()[0]


def test_consent_then_a_location_then_a_scheduled_event_with_a_photo_google_downloads(server, gmb):
    back = connect_oauth(server, "gmb")
    channel_id = back["channel"]
    consent = gmb.requests_to("GET", "/o/oauth2/v2/auth")[0].query
    assert back["notice"] == "pick" and (consent["access_type"], consent["prompt"]) == ("offline", "consent")
    assert refresh_token_of(server, channel_id) in gmb.refresh_tokens
    status, choices = api(server, "GET", f"{API}/integrations/{channel_id}/steps")
    assert status == 200 and [(choice["id"], choice["name"]) for choice in choices] == [
        (LOCATION, "Ada Bakes (Lyon)"), *((f"accounts/222/locations/{9100 + n}", f"Shop {n}") for n in range(3))]
    status, row = api(server, "POST", f"{API}/integrations/{channel_id}/steps", {"id": LOCATION})
    assert status == 200 and (row["name"], row["inBetweenSteps"]) == ("Ada Bakes", False), row
    assert channel_session(server, channel_id)["location"] == LOCATION
    picture = uploaded(server, PICTURE, "png")
    due = time.monotonic() + 3
    post_id = scheduled(server, channel_id, "<p>Open day: come taste</p>", images=[picture], provider="gmb",
                        type="schedule", date=iso(3),
                        settings={"topicType": "EVENT", "eventTitle": "Open day", "eventStartDate": "2026-12-24",
                                  "eventEndDate": "2026-12-24", "eventStartTime": "09:00", "eventEndTime": "18:00",
                                  "callToActionType": "LEARN_MORE", "callToActionUrl": "https://ada.example"})
    post = settled(server, post_id, timeout=30)
    assert post["state"] == "PUBLISHED", post
    [made] = gmb.published
    assert gmb.requests_to("POST", rf"/v4/{LOCATION}/localPosts")[0].received >= due - 0.1
    assert (made["summary"], made["topicType"], made["event"]["title"]) == ("Open day: come taste", "EVENT", "Open day")
    assert made["callToAction"] == {"actionType": "LEARN_MORE", "url": "https://ada.example"}
    assert gmb.photos[made["name"]] == PICTURE  # fetched from rustiz's FRONTEND_URL/uploads/...
    assert post["releaseURL"] == made["searchUrl"]


def test_the_locations_and_the_posts_figures(server, gmb):
    channel_id = location_channel(server)
    post = settled(server, scheduled(server, channel_id, "<p>Counted</p>", provider="gmb"))
    status, answer = api(server, "GET", f"{API}/analytics/{channel_id}?date=7")
    assert status == 200 and {item["label"] for item in answer} == {
        "Website Clicks", "Phone Calls", "Direction Requests", "Desktop Map Views", "Mobile Map Views"}, answer
    status, answer = api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert status == 200 and {item["label"]: item["data"][0]["total"] for item in answer} == {
        "Views on Search": "40", "Button clicks": "41"}, answer


def test_posts_google_would_refuse_are_refused_when_scheduled(server, gmb):
    channel_id = location_channel(server)
    two = [uploaded(server, png_file(), "png"), uploaded(server, png_file(2, 2), "png")]
    assert "can only have one image" in refused_post(server, channel_id, "<p>Two</p>", images=two, provider="gmb")
    assert "Offer posts require a title" in refused_post(server, channel_id, "<p>Sale</p>", provider="gmb",
                                                         settings={"topicType": "OFFER"})
    assert "no replies or comments" in refused_post(server, channel_id, "<p>One</p>", "<p>Two</p>", provider="gmb")
    assert gmb.published == []


def test_tokens_are_refreshed_ahead_of_expiry_and_after_a_401(server, gmb):
    channel_id = location_channel(server)
    stored = refresh_token_of(server, channel_id)
    expire_token_in(server, channel_id, 60)
    assert settled(server, scheduled(server, channel_id, "<p>Fresh</p>", provider="gmb"))["state"] == "PUBLISHED"
    gmb.access_tokens.clear()  # Google forgets the access token early: 401, then a refresh cures it
    assert settled(server, scheduled(server, channel_id, "<p>Again</p>", provider="gmb"))["state"] == "PUBLISHED"
    grants = [request for request in gmb.requests_to("POST", "/token") if b"grant_type=refresh_token" in request.body]
    assert len(grants) == 2 and refresh_token_of(server, channel_id) == stored  # Google sends none: it stays


def test_a_revoked_grant_waits_for_a_reconnect_that_keeps_the_location(server, gmb):
    channel_id = location_channel(server)
    gmb.access_tokens.clear()
    gmb.refresh_tokens.clear()
    waiting = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>After</p>", provider="gmb"))
    assert "Token has been expired or revoked." in waiting["error"], waiting["error"]
    assert refresh_needed(server, channel_id)
    back = connect_oauth(server, "gmb", refresh=channel_id)
    assert (back.get("notice"), back["channel"]) == ("reconnected", channel_id), back
    assert settled(server, waiting["id"])["state"] == "PUBLISHED"
    assert gmb.published[-1]["name"].startswith(LOCATION + "/localPosts/")
    assert api(server, "GET", f"{API}/integrations/{channel_id}")[1]["name"] == "Ada Bakes"


def test_a_refused_consent_makes_no_channel(server, gmb):
    assert connect_oauth(server, "gmb", link="deny")["problem"] == "denied"
    assert [row for row in api(server, "GET", f"{API}/integrations")[1] if row["identifier"] == "gmb"] == []


def test_youtubes_app_serves_when_gmbs_is_unset_and_without_either_the_operator_is_told(start_server_with_fakes,
                                                                                         gmb):
    fallback = start_server_with_fakes(env={**gmb.env, "YOUTUBE_CLIENT_ID": "yt-client", "YOUTUBE_CLIENT_SECRET": "s"})
    status, body = api(fallback, "GET", f"{API}/social/gmb")
    assert status == 200 and "client_id=yt-client" in body["url"], body
    bare = start_server_with_fakes(env=gmb.env)
    status, body = api(bare, "GET", f"{API}/social/gmb")
    assert status == 400 and body["needsOperatorApp"] is True, body
    assert body["variables"] == ["GOOGLE_GMB_CLIENT_ID", "GOOGLE_GMB_CLIENT_SECRET"]
    assert body["callbackUrl"].endswith("/integrations/social/gmb")
