"""Instagram end to end, with the built server and one fake of both Graph hosts: `instagram` connects through
Facebook Login and waits for its Instagram account to be chosen (a user with two pages, one linked to an
account), `instagram-standalone` through Instagram Login; scheduled Reels with a first comment go out at their
time, the video sent through the resumable upload (`instagram`) or downloaded by Instagram (the fake) from
rustiz's own /uploads URL (`instagram-standalone`); processing errors, carousels,
the standalone token's refresh (ig_refresh_token), dead tokens (190) and throttling."""
from __future__ import annotations

import time

import pytest

from fakes.instagram import IG_STANDALONE, PAGES, THROTTLED, FakeInstagram
from support import (
    API, api, connect_database, connect_oauth, expire_token_in, get_post, iso, jpeg_file, mp4_file, refresh_needed,
    oauth_channel, scheduled, settled, trigger, uploaded, waiting_for_reconnect,
)

IG_ACCOUNT = PAGES[0]["ig"]["id"]
POST = {"post_type": "post"}


@pytest.fixture
def fake():
    platform = FakeInstagram()
    yield platform
    platform.close()


@pytest.fixture
def server(start_server_with_fakes, fake):
    return start_server_with_fakes(env={**fake.env, "RUSTIZ_RETRY_BASE": "0.3"})


def instagram_channel(server) -> str:
    back = connect_oauth(server, "instagram")
    assert back["notice"] == "pick", back
    status, choices = api(server, "GET", f"{API}/integrations/{back['channel']}/steps")
    assert status == 200 and choices == [{"id": IG_ACCOUNT, "name": "Analytical Engines",
                                          "picture": "https://scontent.example/engines.jpg"}], choices
    status, row = api(server, "POST", f"{API}/integrations/{back['channel']}/steps", {"id": IG_ACCOUNT})
    assert status == 200 and (row["name"], row["inBetweenSteps"]) == ("Analytical Engines", False), row
    return back["channel"]


def reel_with_comment(server, channel_id: str, provider: str, seconds: float = 3.0) -> tuple:
    """(post id, the video's URL, when it is due): a Reel scheduled `seconds` ahead, with a first comment."""
    video = uploaded(server, mp4_file(4096), "clip.mp4")
    post_id = scheduled(server, channel_id, "<p>Engines at work #rustiz</p>", "<p>Sound on!</p>", images=[video],
                        settings=POST, provider=provider, type="schedule", date=iso(seconds))
    return post_id, video["path"], time.monotonic() + seconds - 0.5


def stored_token(server, channel_id: str) -> tuple:
    with connect_database(server.database) as db:
        return db.execute("SELECT token, refresh_token, token_expiration FROM integration WHERE id = ?",
                          (channel_id,)).fetchone()


# --- instagram (Facebook Login) ------------------------------------------------------------------------------

def test_a_scheduled_reel_and_its_first_comment_go_out_at_their_time(server, fake):
    channel_id = instagram_channel(server)
    post_id, _, due = reel_with_comment(server, channel_id, "instagram")
    post = settled(server, post_id)
    assert [post["state"]] + [part["state"] for part in post["thread"]] == ["PUBLISHED", "PUBLISHED"], post
    [published] = fake.published
    assert published["type"] == "REELS" and published["fields"]["upload_type"] == "resumable"
    assert fake.fetched == {} and list(fake.uploaded.values()) == [mp4_file(4096)]  # sent through rupload
    [publish] = fake.requests_to("POST", rf"/v25\.0/{IG_ACCOUNT}/media_publish")
    assert publish.received >= due  # not before its time
    assert fake.comments == [{"id": fake.comments[0]["id"], "media": published["id"], "message": "Sound on!"}]
    assert post["releaseId"] == published["id"] and post["releaseURL"].startswith("https://www.instagram.com/p/")
    statuses = [r for r in fake.requests_to("GET", r"/v25\.0/\d+") if r.query.get("fields") == "status_code,status"]
    assert len(statuses) == 3  # IN_PROGRESS, IN_PROGRESS, FINISHED


def test_a_processing_error_fails_the_post_with_instagrams_words(server, fake):
    channel_id = instagram_channel(server)
    fake.next_processing_error = "Error: Media upload has failed with error code 2207026"
    post = settled(server, reel_with_comment(server, channel_id, "instagram", 1)[0], stop_at_error=True)
    assert post["state"] == "ERROR" and "2207026" in post["error"], post
    assert fake.published == []


def test_a_carousel_goes_out_as_one_post(server, fake):
    channel_id = instagram_channel(server)
    pictures = [uploaded(server, jpeg_file(), "a.jpg"), uploaded(server, jpeg_file() + b"\x00", "b.jpg")]
    post = settled(server, scheduled(server, channel_id, "<p>Two views</p>", images=pictures, settings=POST,
                                     provider="instagram"))
    assert post["state"] == "PUBLISHED", post
    [published] = fake.published
    assert published["type"] == "CAROUSEL" and published["fields"]["caption"] == "Two views"
    assert [child["image_url"] for child in published["children"]] == [item["path"] for item in pictures]


def test_a_dead_token_waits_for_a_reconnect_which_keeps_the_channel(server, fake):
    channel_id = instagram_channel(server)
    for token in [token for token, about in fake.tokens.items() if about["kind"] in ("fb-user", "page")]:
        fake.expire(token)
    post_id = scheduled(server, channel_id, "<p>After the reconnect</p>",
                        images=[uploaded(server, jpeg_file(), "a.jpg")], settings=POST, provider="instagram")
    waiting = waiting_for_reconnect(server, post_id)
    assert "Session has expired" in waiting["error"] and refresh_needed(server, channel_id)
    back = connect_oauth(server, "instagram", refresh=channel_id)
    assert (back["notice"], back["channel"]) == ("reconnected", channel_id)
    assert settled(server, post_id)["state"] == "PUBLISHED"
    row = api(server, "GET", f"{API}/integrations/{channel_id}")[1]
    assert (row["name"], row["inBetweenSteps"], row["refreshNeeded"]) == ("Analytical Engines", False, False)
    assert fake.published[0]["owner"] == IG_ACCOUNT


def test_throttling_is_retried_later(server, fake):
    channel_id = instagram_channel(server)
    fake.fail_next("POST", rf"/v25\.0/{IG_ACCOUNT}/media", 400, THROTTLED)
    post = settled(server, scheduled(server, channel_id, "<p>Patience</p>",
                                     images=[uploaded(server, jpeg_file(), "a.jpg")], settings=POST,
                                     provider="instagram"))
    assert post["state"] == "PUBLISHED", post
    assert len(fake.requests_to("POST", rf"/v25\.0/{IG_ACCOUNT}/media")) == 2 and len(fake.published) == 1


def test_analytics_and_the_audio_search_tool(server, fake):
    channel_id = instagram_channel(server)
    post = settled(server, scheduled(server, channel_id, "<p>Counted</p>",
                                     images=[uploaded(server, jpeg_file(), "a.jpg")], settings=POST,
                                     provider="instagram"))
    status, figures = api(server, "GET", f"{API}/analytics/{channel_id}?date=7")
    totals = {item["label"]: item["data"][0]["total"] for item in figures}
    assert status == 200 and totals["Followers"] == "1024" and totals["Reach"] == "100", figures
    status, figures = api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert status == 200 and {item["label"] for item in figures} >= {"Views", "Likes", "Saves"}, figures
    status, audio = trigger(server, channel_id, "audioSearch", {"q": "drive", "type": "music"})
    assert status == 200 and audio["output"][0]["id"] == "18000000000000001", audio


# --- instagram-standalone (Instagram Login) ---------------------------------------------------------------

def test_standalone_connects_and_posts_a_scheduled_reel_with_a_first_comment(server, fake):
    channel_id = oauth_channel(server, "instagram-standalone")
    token, refresh_token, expiry = stored_token(server, channel_id)
    assert refresh_token in fake.tokens and f'"{refresh_token}"' in token and expiry > time.strftime("%Y")
    row = api(server, "GET", f"{API}/integrations/{channel_id}")[1]
    assert row["name"] == IG_STANDALONE["name"] and row["inBetweenSteps"] is False
    post_id, video_url, due = reel_with_comment(server, channel_id, "instagram-standalone")
    post = settled(server, post_id)
    assert [post["state"]] + [part["state"] for part in post["thread"]] == ["PUBLISHED", "PUBLISHED"], post
    assert fake.fetched[video_url] and fake.published[0]["owner"] == IG_STANDALONE["user_id"]
    [publish] = fake.requests_to("POST", rf"/v25\.0/{IG_STANDALONE['user_id']}/media_publish")
    assert publish.received >= due and fake.comments[0]["message"] == "Sound on!"


def test_standalone_refreshes_its_token_30_days_ahead(server, fake):
    channel_id = oauth_channel(server, "instagram-standalone")
    before = stored_token(server, channel_id)[1]
    expire_token_in(server, channel_id, 10 * 86400)  # lapses in 10 days: due (30 days ahead)
    post = settled(server, scheduled(server, channel_id, "<p>Fresh</p>", images=[uploaded(server, jpeg_file(), "a.jpg")],
                                     settings=POST, provider="instagram-standalone"))
    assert post["state"] == "PUBLISHED", post
    [refresh] = fake.requests_to("GET", "/refresh_access_token")
    assert refresh.query == {"grant_type": "ig_refresh_token", "access_token": before}
    token, refresh_token, expiry = stored_token(server, channel_id)
    assert refresh_token != before and f'"{refresh_token}"' in token
    assert expiry > time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 50 * 86400))
    publish = fake.requests_to("POST", rf"/v25\.0/{IG_STANDALONE['user_id']}/media_publish")[-1]
    assert publish.headers["authorization"] == f"Bearer {refresh_token}"


def test_standalone_dead_token_flags_the_channel_and_its_post_waits(server, fake):
    channel_id = oauth_channel(server, "instagram-standalone")
    fake.expire(stored_token(server, channel_id)[1])
    post_id = scheduled(server, channel_id, "<p>Waiting</p>", images=[uploaded(server, jpeg_file(), "a.jpg")],
                        settings=POST, provider="instagram-standalone")
    waiting_for_reconnect(server, post_id)
    assert refresh_needed(server, channel_id) and fake.published == []
    assert len(fake.requests_to("GET", "/refresh_access_token")) >= 1
    assert get_post(server, post_id)["state"] == "QUEUE"
