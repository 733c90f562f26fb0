"""YouTube end to end with the built server and the fake (tests/fakes/youtube.py): connecting through Google's
consent, a scheduled video with its thumbnail and first comment going out at its time, an upload that fails
halfway and resumes from the acknowledged byte, the daily quota, token expiry, a 401 cured by a refresh, and a
reconnect where Google sends no refresh token keeping the stored one (Postiz #1884, #1595)."""
from __future__ import annotations

import time

import pytest

from fakes.youtube import FakeYouTube
from support import (
    API, Database, FakeOrigin, api, channel_session, connect_database, connect_oauth, expire_token_in, get_post, iso,
    mp4_file, notifications, parts_of, png_file, refresh_needed, schedule, scheduled, settled, upload, uploaded,
    wait_for,
)

CHUNK = 1024
VIDEO = mp4_file(5000)


@pytest.fixture
def youtube():
    fake = FakeYouTube()
    fake.granularity = CHUNK
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, youtube):
    return start_server_with_fakes(env={
        **youtube.env, "YOUTUBE_CLIENT_ID": youtube.client_id, "YOUTUBE_CLIENT_SECRET": youtube.client_secret,
        "RUSTIZ_YOUTUBE_CHUNK_BYTES": str(CHUNK), "RUSTIZ_RETRY_BASE": "0.3"})


def tokens_of(server, channel_id: str) -> tuple:
    with connect_database(server.database) as db:
        return db.execute("SELECT token, refresh_token, token_expiration FROM integration WHERE id = ?",
                          (channel_id,)).fetchone()


def refresh_grants(youtube: FakeYouTube) -> int:
    return sum(b"grant_type=refresh_token" in request.body for request in youtube.requests_to("POST", "/token"))


def video_post(server, channel_id: str, *comments: str, **settings) -> str:
    return scheduled(server, channel_id, "<p>Engines at work</p>", *comments, provider="youtube",
                     settings={"title": "Engines", "type": "unlisted", **settings},
                     images=[uploaded(server, VIDEO, "mp4")], type="schedule", date=iso(3))


def test_connect_a_channel_and_a_scheduled_video_goes_out_with_its_thumbnail_and_first_comment(server, youtube):
    back = connect_oauth(server, "youtube")
    assert back["notice"] == "connected", back
    channel_id = back["channel"]
    with connect_database(server.database) as db:
        account = db.execute("SELECT internal_id, name, profile FROM integration WHERE id = ?", (channel_id,)).fetchone()
    assert account == ("UCfake0000000000000000001", "Ada's Engines", "@adaengines")
    token, refresh_token, expiry = tokens_of(server, channel_id)
    assert refresh_token in youtube.refresh_tokens and expiry > time.strftime("%Y")
    thumbnail = uploaded(server, png_file(4, 3), "png")
    post_id = video_post(server, channel_id, "<p>Questions welcome below</p>",
                         thumbnail=thumbnail, tags=[{"value": "g", "label": "gears"}])
    time.sleep(1)
    assert youtube.published == []  # not before its time
    post = settled(server, post_id)
    assert [part["state"] for part in parts_of(post)] == ["PUBLISHED", "PUBLISHED"], post
    [video_id] = youtube.published
    video = youtube.videos[video_id]
    assert video["data"] == VIDEO and video["thumbnail"] == png_file(4, 3)
    assert video["metadata"]["snippet"]["tags"] == ["gears"]
    assert video["metadata"]["status"]["privacyStatus"] == "unlisted"
    [comment] = youtube.comments.values()
    assert comment == {"video": video_id, "parent": None, "text": "Questions welcome below"}
    assert post["releaseURL"] == f"https://www.youtube.com/watch?v={video_id}"
    assert channel_session(server, channel_id).get("youtubeUploads") == {}


def test_an_upload_that_fails_halfway_resumes_from_the_acknowledged_byte(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    youtube.partial_next = 700  # the first chunk: 700 bytes kept, then 503
    youtube.fail_next("PUT", "/upload/youtube/v3/videos", 503, {"error": {"code": 503, "message": "Backend Error",
                                                                          "errors": [{"reason": "backendError"}]}},
                      times=1)
    post = settled(server, video_post(server, channel_id))
    assert post["state"] == "PUBLISHED", post
    [video_id] = youtube.published
    assert youtube.videos[video_id]["data"] == VIDEO
    assert len(youtube.requests_to("POST", "/upload/youtube/v3/videos")) == 1  # one session, never started over
    ranges = [request.headers["content-range"] for request in youtube.requests_to("PUT", "/upload/youtube/v3/videos")]
    assert "bytes 700-1723/5000" in ranges, ranges


def test_an_attempt_that_ends_mid_upload_is_resumed_by_the_next_attempt(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    youtube.drop_next("PUT", "/upload/youtube/v3/videos", times=3)  # the first attempt gives up on the upload
    post = settled(server, video_post(server, channel_id))
    assert post["state"] == "PUBLISHED", post
    assert youtube.videos[youtube.published[0]]["data"] == VIDEO
    assert len(youtube.requests_to("POST", "/upload/youtube/v3/videos")) == 1


def test_the_daily_quota_keeps_the_post_waiting_until_it_is_reset_not_the_channel_flagged(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    youtube.quota_exceeded = True
    post_id = video_post(server, channel_id)
    post = wait_for(lambda: get_post(server, post_id), lambda post: "quota" in (post.get("error") or ""))
    assert post["state"] == "QUEUE" and "midnight Pacific time" in post["error"], post
    assert not refresh_needed(server, channel_id)


def test_a_token_about_to_expire_is_refreshed_before_uploading(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    expire_token_in(server, channel_id, 60)
    assert settled(server, video_post(server, channel_id))["state"] == "PUBLISHED"
    assert refresh_grants(youtube) == 1
    assert tokens_of(server, channel_id)[1] in youtube.refresh_tokens  # Google sent none: the stored one stays


def test_a_401_mid_upload_is_cured_by_a_refresh_and_the_upload_resumes(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    # the session starts, then every access token is forgotten: the next chunk gets 401
    original = youtube.start_upload

    def start_then_forget(request):
        result = original(request)
        youtube.access_tokens.clear()
        return result
    youtube.routes = [(method, pattern, start_then_forget if handler == original else handler)
                      for method, pattern, handler in youtube.routes]
    post = settled(server, video_post(server, channel_id))
    assert post["state"] == "PUBLISHED", post
    assert refresh_grants(youtube) == 1
    assert len(youtube.requests_to("POST", "/upload/youtube/v3/videos")) == 1
    assert youtube.videos[youtube.published[0]]["data"] == VIDEO


def test_a_reconnect_without_a_new_refresh_token_keeps_the_stored_one_and_refreshes_still_work(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    first_refresh_token = tokens_of(server, channel_id)[1]
    youtube.send_refresh_token = False
    back = connect_oauth(server, "youtube", refresh=channel_id)
    assert (back["notice"], back["channel"]) == ("reconnected", channel_id), back
    assert tokens_of(server, channel_id)[1] == first_refresh_token
    youtube.access_tokens.clear()  # the reconnect's access token dies: only the kept refresh token can help
    assert settled(server, video_post(server, channel_id))["state"] == "PUBLISHED"
    assert refresh_grants(youtube) == 1 and not refresh_needed(server, channel_id)


def test_a_revoked_grant_flags_the_channel(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    youtube.access_tokens.clear()
    youtube.refresh_tokens.clear()
    post_id = video_post(server, channel_id)
    post = wait_for(lambda: get_post(server, post_id),
                    lambda post: (post.get("error") or "").startswith("Waiting for the channel to be reconnected"))
    assert "invalid_grant" in post["error"] and refresh_needed(server, channel_id)
    assert youtube.published == []


def test_analytics_of_the_channel_and_of_a_video(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    post = settled(server, video_post(server, channel_id))
    status, answer = api(server, "GET", f"{API}/analytics/{channel_id}?date=7")
    assert status == 200 and {item["label"] for item in answer} == {"Subscribers", "Views", "Videos"}, answer
    status, answer = api(server, "GET", f"{API}/analytics/post/{post['id']}")
    assert status == 200 and {item["label"] for item in answer} == {"Views", "Likes", "Comments"}, answer


def test_an_account_without_a_channel_is_told_to_create_one_and_nothing_is_connected(server, youtube):
    youtube.has_channel = False
    back = connect_oauth(server, "youtube")
    assert back == {"problem": "refused", "provider": "youtube"}, back
    assert "has no YouTube channel" in notifications(server)[0]
    assert api(server, "GET", f"{API}/integrations") == (200, [])


def test_a_thumbnail_from_the_web_is_fetched_and_set_and_another_organization_s_is_refused(server, youtube):
    channel_id = connect_oauth(server, "youtube")["channel"]
    origin = FakeOrigin()
    try:
        origin.serve("/thumbs/engines.png", png_file(8, 6))
        post_id = video_post(server, channel_id, thumbnail={"id": "web", "path": f"{origin.url}/thumbs/engines.png"})
        assert settled(server, post_id)["state"] == "PUBLISHED"
        assert youtube.videos[youtube.published[0]]["thumbnail"] == png_file(8, 6)
    finally:
        origin.close()
    _, other_key = Database(server).organization()
    status, theirs = upload(server, png_file(), key=other_key)
    assert status == 201
    refused = schedule(server, channel_id, "<p>x</p>", provider="youtube", images=[uploaded(server, VIDEO, "mp4")],
                       settings={"title": "Engines", "type": "unlisted",
                                 "thumbnail": {"id": theirs["id"], "path": theirs["path"]}})
    assert refused[0] == 400 and "posts.0.settings.thumbnail" in refused[1]["message"][0]
    assert "is not an upload of this organization" in refused[1]["message"][0] and len(youtube.published) == 1
