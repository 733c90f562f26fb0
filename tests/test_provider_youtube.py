"""The YouTube provider driven directly against the fake (tests/fakes/youtube.py), over real sockets: the consent
URL (offline, consent, PKCE), the code exchange and refresh with Google's refusals, the channel, the resumable
upload (chunks, 308 + Range, resuming after a failed chunk or a lost attempt, a lost session), thumbnail and
comments, quota and upload limits, analytics."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.youtube import GRANTED, SCOPE, THUMBNAIL_PNG, FakeYouTube
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused, pkce_pair
from rustiz_features.publishers.youtube import PROVIDER, UPLOADS_KEY
from support import follow_consent, mp4_file, run

REDIRECT = "https://rustiz.example/integrations/social/youtube"
CHUNK = 1024


def small_chunked_youtube() -> FakeYouTube:
    youtube = FakeYouTube()
    youtube.granularity = CHUNK  # chunks in multiples of CHUNK bytes, as RUSTIZ_YOUTUBE_CHUNK_BYTES below
    return youtube


fake = fake_fixture(small_chunked_youtube, RUSTIZ_YOUTUBE_CHUNK_BYTES=str(CHUNK))


@pytest.fixture
def app(fake):
    return AppCredentials(fake.client_id, fake.client_secret)


@pytest.fixture
def channel(fake, http):
    return Channel("ch-1", "Ada's Engines", fake.credentials(), None, http)


@pytest.fixture
def video(tmp_path) -> MediaFile:
    path = tmp_path / "clip.mp4"
    path.write_bytes(mp4_file(5000) + b"")
    return MediaFile("https://rustiz.example/uploads/clip.mp4", str(path), "video/mp4", "video", "", "clip.mp4")


def outgoing(media: tuple = (), part: int = 0, key: str = "key-1", html: str = "<p>All about engines</p>",
             thumbnail: MediaFile | None = None, **settings) -> OutgoingPost:
    settings = {"__type": "youtube", "title": "Engines", "type": "public", **settings} if part == 0 else {}
    if thumbnail is not None:
        settings["thumbnail"] = {"id": "t", "path": thumbnail.url}
    return OutgoingPost("post-1", html, media, settings, part, key, "2026-12-03T12:00:00Z",
                        {"thumbnail": thumbnail} if thumbnail else None)


@pytest.fixture
def thumbnail(tmp_path) -> MediaFile:
    """The thumbnail setting as the scheduler hands it over: a file on this machine."""
    path = tmp_path / "thumb.png"
    path.write_bytes(THUMBNAIL_PNG)
    return MediaFile("https://rustiz.example/uploads/thumb.png", str(path), "image/png", "image", "", "thumb.png")


def connect_tokens(fake, http, app):
    verifier, challenge = pkce_pair()
    url = run(PROVIDER.begin(http, app, REDIRECT, "state-9", challenge, {}))
    return run(PROVIDER.exchange_code(http, app, follow_consent(url)["code"], REDIRECT, verifier, {}))


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_consent_url_asks_offline_access_every_time_with_pkce_and_the_scopes(fake, http, app):
    url = run(PROVIDER.begin(http, app, REDIRECT, "state-9", "challenge", {}))
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{fake.url}/o/oauth2/v2/auth"
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    assert query == {"response_type": "code", "client_id": fake.client_id, "redirect_uri": REDIRECT,
                     "state": "state-9", "scope": GRANTED, "code_challenge": "challenge",
                     "code_challenge_method": "S256", "access_type": "offline", "prompt": "consent",
                     "include_granted_scopes": "true"}
    assert PROVIDER.app_variables == ("YOUTUBE_CLIENT_ID", "YOUTUBE_CLIENT_SECRET")


def test_the_default_hosts_are_google_s_own(monkeypatch, http):
    for name in ("RUSTIZ_YOUTUBE_AUTH_URL", "RUSTIZ_YOUTUBE_API_URL"):
        monkeypatch.delenv(name, raising=False)
    url = run(PROVIDER.begin(http, AppCredentials("id", "secret"), REDIRECT, "s", None, {}))
    assert url.startswith("https://accounts.google.com/o/oauth2/v2/auth?")
    assert PROVIDER.token_base() == "https://oauth2.googleapis.com" and PROVIDER.api_base() == "https://www.googleapis.com"


def test_the_code_exchange_sends_the_app_in_the_form_with_the_verifier(fake, http, app):
    tokens = connect_tokens(fake, http, app)
    assert tokens.access_token in fake.access_tokens and tokens.refresh_token in fake.refresh_tokens
    assert tokens.expires_in == 3599
    form = fake.requests_to("POST", "/token")[0].form()
    assert (form["client_id"], form["client_secret"], form["grant_type"]) == (
        fake.client_id, fake.client_secret, "authorization_code")
    assert form["code_verifier"] and "authorization" not in fake.requests_to("POST", "/token")[0].headers


def test_a_consent_with_a_permission_unticked_is_refused_clearly(fake, http, app):
    fake.granted = SCOPE + "youtube.readonly " + SCOPE + "userinfo.profile"
    with pytest.raises(Rejected) as refused:
        connect_tokens(fake, http, app)
    assert "youtube.upload" in refused.value.message and "every box ticked" in refused.value.message


def test_a_refresh_keeps_the_stored_refresh_token_as_google_sends_none(fake, http, app):
    tokens = connect_tokens(fake, http, app)
    refreshed = run(PROVIDER.refresh_tokens(http, app, tokens.refresh_token))
    assert refreshed.access_token in fake.access_tokens and refreshed.refresh_token is None


def test_a_revoked_refresh_token_is_a_definite_refusal(fake, http, app):
    with pytest.raises(TokenRefused) as refused:
        run(PROVIDER.refresh_tokens(http, app, "1//revoked"))
    assert refused.value.status == 400 and refused.value.message.startswith("invalid_grant: Token has been expired")


def test_a_wrong_client_secret_is_not_a_dead_grant_and_a_503_is_retryable(fake, http, app):
    with pytest.raises(NeedsReconnect) as refused:
        run(PROVIDER.refresh_tokens(http, AppCredentials(fake.client_id, "wrong"), "1//any"))
    assert not isinstance(refused.value, TokenRefused) and refused.value.message.startswith("invalid_client")
    fake.fail_next("POST", "/token", 503, "<html>busy</html>")
    with pytest.raises(Retryable):
        run(PROVIDER.refresh_tokens(http, app, "1//any"))


# --- the channel ---------------------------------------------------------------------------------------

def test_connect_reads_the_youtube_channel_of_the_account(fake, channel):
    account = run(PROVIDER.connect(channel)).account
    assert (account.internal_id, account.name, account.profile, account.picture) == (
        "UCfake0000000000000000001", "Ada's Engines", "@adaengines", "https://yt3.ggpht.example/ada=s800")
    assert fake.requests_to("GET", "/youtube/v3/channels")[0].query == {"part": "snippet,statistics", "mine": "true"}


def test_an_account_without_a_channel_is_told_to_create_one(fake, channel):
    fake.has_channel = False
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.connect(channel))
    assert "has no YouTube channel" in refused.value.message


def test_an_unknown_token_is_a_401_that_needs_a_refresh(fake, http):
    with pytest.raises(NeedsReconnect) as refused:
        run(PROVIDER.connect(Channel("ch-1", "x", {"accessToken": "ya29.expired"}, None, http)))
    assert refused.value.status == 401 and "(authError)" in refused.value.message


def test_analytics_are_the_channel_s_and_the_video_s_statistics(fake, channel, video):
    totals = {item["label"]: item["data"][0]["total"] for item in run(PROVIDER.channel_analytics(channel, 7))}
    assert totals == {"Subscribers": "678", "Views": "12345", "Videos": "9"}
    release = run(PROVIDER.publish(channel, outgoing((video,)), None))
    totals = {item["label"]: item["data"][0]["total"] for item in run(PROVIDER.post_analytics(channel, release, 7))}
    assert totals == {"Views": "321", "Likes": "45", "Comments": "6"}


# --- publishing ----------------------------------------------------------------------------------------

def test_a_video_goes_up_in_chunks_with_its_metadata(fake, channel, video):
    release = run(PROVIDER.publish(channel, outgoing((video,), tags=[{"value": "a", "label": "steam"},
                                                                    {"value": "b", "label": "brass gears"}],
                                                     selfDeclaredMadeForKids="no"), None))
    [video_id] = fake.published
    assert release == Release(video_id, f"https://www.youtube.com/watch?v={video_id}", {"video": video_id})
    stored = fake.videos[video_id]
    assert stored["data"] == mp4_file(5000) and stored["type"] == "video/mp4"
    assert stored["metadata"] == {"snippet": {"title": "Engines", "description": "All about engines",
                                              "categoryId": "22", "tags": ["steam", "brass gears"]},
                                  "status": {"privacyStatus": "public", "selfDeclaredMadeForKids": False}}
    start = fake.requests_to("POST", "/upload/youtube/v3/videos")[0]
    assert start.query == {"uploadType": "resumable", "part": "snippet,status"}
    assert (start.headers["x-upload-content-length"], start.headers["x-upload-content-type"]) == ("5000", "video/mp4")
    chunks = fake.requests_to("PUT", "/upload/youtube/v3/videos")
    assert [request.headers["content-range"] for request in chunks] == [
        "bytes 0-1023/5000", "bytes 1024-2047/5000", "bytes 2048-3071/5000", "bytes 3072-4095/5000",
        "bytes 4096-4999/5000"]
    assert channel.session == {UPLOADS_KEY: {}}  # nothing left behind once the video is out


def test_a_chunk_that_fails_halfway_resumes_from_the_byte_google_acknowledges(fake, channel, video):
    fake.partial_next = 300  # the first chunk: 300 bytes kept, then a 503
    run(PROVIDER.publish(channel, outgoing((video,)), None))
    [video_id] = fake.published
    assert fake.videos[video_id]["data"] == mp4_file(5000)
    ranges = [request.headers["content-range"] for request in fake.requests_to("PUT", "/upload/youtube/v3/videos")]
    assert ranges[:3] == ["bytes 0-1023/5000", "bytes */5000", "bytes 300-1323/5000"]
    assert len(fake.requests_to("POST", "/upload/youtube/v3/videos")) == 1  # never started over


def test_a_dropped_chunk_then_a_lost_attempt_resume_the_same_session(fake, http, video):
    saved = []
    channel = Channel("ch-1", "Ada", fake.credentials(), None, http, save_session=saved.append)
    fake.drop_next("PUT", "/upload/youtube/v3/videos", times=3)  # a chunk, then two status queries: the attempt ends
    with pytest.raises(Retryable):
        run(PROVIDER.publish(channel, outgoing((video,)), None))
    uri = saved[-1][UPLOADS_KEY]["key-1"]["uri"]
    assert "upload_id=" in uri and fake.published == []
    again = Channel("ch-1", "Ada", channel.credentials, saved[-1], http, save_session=saved.append)
    run(PROVIDER.publish(again, outgoing((video,)), None))
    [video_id] = fake.published
    assert fake.videos[video_id]["data"] == mp4_file(5000)
    assert len(fake.requests_to("POST", "/upload/youtube/v3/videos")) == 1
    assert saved[-1] == {UPLOADS_KEY: {}}


def test_a_lost_session_starts_a_new_upload(fake, http, video):
    progress = {UPLOADS_KEY: {"key-1": {"uri": f"{fake.url}/upload/youtube/v3/videos?upload_id=gone"}}}
    channel = Channel("ch-1", "Ada", fake.credentials(), progress, http)
    release = run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert fake.videos[release.id]["data"] == mp4_file(5000)
    assert fake.requests_to("PUT", "/upload/youtube/v3/videos")[0].headers["content-range"] == "bytes */5000"


def test_a_session_uri_on_another_host_gets_no_token(fake, channel, video):
    fake.fail_next("POST", "/upload/youtube/v3/videos", 200, b"", {"Location": "https://elsewhere.example/up?x=1"})
    with pytest.raises(Retryable) as error:
        run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert "session URI on its own host" in error.value.message


def test_the_daily_quota_is_retried_after_the_pacific_midnight_not_a_reconnect(fake, channel, video):
    fake.quota_exceeded = True
    with pytest.raises(Retryable) as error:
        run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert error.value.status == 403 and 60 <= error.value.after <= 25 * 3600
    assert "quota is used up" in error.value.message and "(quotaExceeded)" in error.value.message
    assert "<a" not in error.value.message


def test_the_channel_s_upload_limit_is_retried_a_day_later(fake, channel, video):
    fake.upload_limit = True
    with pytest.raises(Retryable) as error:
        run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert error.value.status == 400 and error.value.after == 86400 and "daily upload limit" in error.value.message


def test_a_403_that_is_not_about_the_token_is_a_refusal(fake, channel, video):
    fake.fail_next("POST", "/upload/youtube/v3/videos", 403, {"error": {
        "code": 403, "message": "YouTube Data API v3 has not been used in project 1 before or it is disabled.",
        "errors": [{"message": "disabled", "domain": "usageLimits", "reason": "accessNotConfigured"}]}})
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert "has not been used in project" in refused.value.message


def test_a_thumbnail_and_comments_follow_the_video(fake, channel, video, thumbnail):
    first = run(PROVIDER.publish(channel, outgoing((video,), thumbnail=thumbnail),
                                 None))
    assert fake.videos[first.id]["thumbnail"] == THUMBNAIL_PNG
    second = run(PROVIDER.publish(channel, outgoing(part=1, key="key-2", html="<p>First comment</p>"), first))
    third = run(PROVIDER.publish(channel, outgoing(part=2, key="key-3", html="<p>And a reply</p>"), second))
    assert fake.comments[second.id] == {"video": first.id, "parent": None, "text": "First comment"}
    assert fake.comments[third.id] == {"video": first.id, "parent": second.id, "text": "And a reply"}
    assert second.url == f"https://www.youtube.com/watch?v={first.id}&lc={second.id}"
    assert third.reply_ref == {"video": first.id, "thread": second.id}


def test_a_failed_thumbnail_is_retried_without_uploading_the_video_again(fake, http, video, thumbnail):
    saved = []
    channel = Channel("ch-1", "Ada", fake.credentials(), None, http, save_session=saved.append)
    fake.fail_next("POST", "/upload/youtube/v3/thumbnails/set", 503, {"error": {"code": 503, "message": "Backend Error",
                                                                              "errors": [{"reason": "backendError"}]}})
    post = outgoing((video,), thumbnail=thumbnail)
    with pytest.raises(Retryable):
        run(PROVIDER.publish(channel, post, None))
    again = Channel("ch-1", "Ada", channel.credentials, saved[-1], http, save_session=saved.append)
    release = run(PROVIDER.publish(again, post, None))
    assert fake.published == [release.id] and fake.videos[release.id]["thumbnail"] == THUMBNAIL_PNG


def test_a_refused_thumbnail_says_the_video_is_out(fake, channel, video, thumbnail):
    fake.fail_next("POST", "/upload/youtube/v3/thumbnails/set", 403, {"error": {
        "code": 403, "message": "The authenticated user doesnt have permissions to upload and set custom video "
        "thumbnails.", "errors": [{"reason": "forbidden"}]}})
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing((video,), thumbnail=thumbnail),
                             None))
    assert refused.value.message.startswith("the video is published (https://www.youtube.com/watch?v=vid")
    assert "permissions to upload and set custom video thumbnails" in refused.value.message


def test_post_problems_youtube_would_refuse(fake):
    values = [{"content": "<p>a &lt;b&gt;</p>", "image": []}]
    assert "cannot contain < or >" in PROVIDER.post_problem({}, values, {"title": "t"})
    assert "title" in PROVIDER.post_problem({}, [{"content": "x", "image": []}], {"title": "a<b"})
    assert "5,000 bytes" in PROVIDER.post_problem({}, [{"content": "é" * 2600, "image": []}], {"title": "t"})
    assert PROVIDER.post_problem({}, [{"content": "fine", "image": []}], {"title": "t"}) is None


def test_error_words_quote_google_s_shape_only(fake, channel, video):
    fake.fail_next("POST", "/upload/youtube/v3/videos", 400, {"message": "some proxy's words"})
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert "some proxy" not in refused.value.message and refused.value.body == ""


def test_a_last_chunk_whose_answer_was_lost_is_found_done_by_the_status_query(fake, channel, video, monkeypatch):
    monkeypatch.setenv("RUSTIZ_YOUTUBE_CHUNK_BYTES", str(8 * CHUNK))  # the whole video in one (last) chunk
    fake.drop_next("PUT", "/upload/youtube/v3/videos", after_handling=True)
    release = run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert fake.published == [release.id] and fake.videos[release.id]["data"] == mp4_file(5000)
    assert [request.headers["content-range"] for request in fake.requests_to("PUT", "/upload/youtube/v3/videos")] == [
        "bytes 0-4999/5000", "bytes */5000"]


def test_a_401_on_the_thumbnail_keeps_the_video_for_the_attempt_after_the_refresh(fake, http, video, thumbnail):
    saved = []
    channel = Channel("ch-1", "Ada", fake.credentials(), None, http, save_session=saved.append)
    fake.fail_next("POST", "/upload/youtube/v3/thumbnails/set", 401, {"error": {
        "code": 401, "message": "Invalid Credentials", "errors": [{"reason": "authError"}]}})
    post = outgoing((video,), thumbnail=thumbnail)
    with pytest.raises(NeedsReconnect):
        run(PROVIDER.publish(channel, post, None))
    [video_id] = fake.published
    assert saved[-1] == {UPLOADS_KEY: {"key-1": {"video": video_id}}}
    again = Channel("ch-1", "Ada", channel.credentials, saved[-1], http, save_session=saved.append)
    assert run(PROVIDER.publish(again, post, None)).id == video_id and fake.published == [video_id]


def test_a_refused_upload_forgets_its_session(fake, http, video):
    saved = []
    channel = Channel("ch-1", "Ada", fake.credentials(), None, http, save_session=saved.append)
    fake.fail_next("PUT", "/upload/youtube/v3/videos", 400, {"error": {
        "code": 400, "message": "The video file is not a video.", "errors": [{"reason": "invalidVideo"}]}})
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert refused.value.message == "The video file is not a video. (invalidVideo) (on the video's upload)"
    assert saved[-1] == {UPLOADS_KEY: {}}


def test_a_session_that_takes_no_more_bytes_ends_the_attempt(fake, channel, video):
    fake.fail_next("PUT", "/upload/youtube/v3/videos", 308, b"", times=5)  # no Range: it holds nothing
    with pytest.raises(Retryable) as error:
        run(PROVIDER.publish(channel, outgoing((video,)), None))
    assert "takes no more" in error.value.message and len(fake.requests_to("PUT", "/upload/youtube/v3/videos")) == 3


def test_a_thumbnail_youtube_would_refuse_fails_the_post_before_the_video_goes_up(fake, channel, video, tmp_path):
    path = tmp_path / "big.png"
    path.write_bytes(THUMBNAIL_PNG + b"\0" * (2 * 2**20))
    too_large = MediaFile("https://rustiz.example/uploads/big.png", str(path), "image/png", "image", "", "big.png")
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing((video,), thumbnail=too_large), None))
    assert "at most 2 MiB" in refused.value.message and refused.value.item == "the thumbnail"
    assert fake.requests_to("POST", "/upload/youtube/v3/videos") == [] and fake.published == []
    assert "JPEG and PNG" in PROVIDER.post_problem({}, [{"content": "x", "image": []}],
                                                   {"title": "t", "thumbnail": {"id": "t", "path": "https://h/t.gif"}})
