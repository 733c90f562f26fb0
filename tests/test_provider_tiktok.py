"""The tiktok provider object against a fake TikTok, over real sockets: the consent URL, the code exchange and
refresh (and their refusals), the account and creator info, the scheduling checks, a video in ordered chunks
(Direct Post and inbox), photo posts pulled from their URLs, the status polling, and how TikTok's error
codes are classified."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.tiktok import FakeTikTok, api_error
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from rustiz_features.publishers.tiktok import chunk_plan, movie_seconds
from support import follow_consent, iso_box, jpeg_file, mp4_file, png_file, run

REDIRECT = "https://rustiz.example/integrations/social/tiktok"
provider = provider_for("tiktok")
SETTINGS = {"privacy_level": "FOLLOWER_OF_CREATOR", "duet": True, "stitch": False, "comment": True,
            "autoAddMusic": "no", "brand_content_toggle": False, "brand_organic_toggle": False,
            "content_posting_method": "DIRECT_POST"}


def small_chunked_tiktok() -> FakeTikTok:
    platform = FakeTikTok()
    platform.min_chunk = 1000  # the fake's chunk rules at small sizes, as RUSTIZ_TIKTOK_CHUNK_BYTES below
    return platform


fake = fake_fixture(small_chunked_tiktok, RUSTIZ_TIKTOK_CHUNK_BYTES="1000", RUSTIZ_TIKTOK_POLL_SECONDS="0.01")


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_key, fake.client_secret)


@pytest.fixture
def channel(fake, http) -> Channel:
    return Channel("channel-1", "Ada", fake.credentials(), None, http)


def video_file(tmp_path, size: int = 3500) -> MediaFile:
    path = tmp_path / "clip.mp4"
    data = mp4_file(size)
    path.write_bytes(data)
    return MediaFile("https://rustiz.example/uploads/clip.mp4", str(path), "video/mp4", "video", "", "clip.mp4")


def picture(fake, tmp_path, name: str) -> MediaFile:
    data = jpeg_file() + name.encode()
    fake.files[name] = data
    (tmp_path / name).write_bytes(data)
    return MediaFile(f"{fake.url}/files/{name}", str(tmp_path / name), "image/jpeg", "image", "", name)


def post(media: tuple, text: str = "<p>Sourdough, step by step</p>", **settings) -> OutgoingPost:
    return OutgoingPost("post-1", text, media, {**SETTINGS, **settings}, 0, "key-1", "2026-12-03T13:00:00Z")


def connected_tokens(http, app):
    callback = follow_consent(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))
    return run(provider.exchange_code(http, app, callback["code"], REDIRECT, None, {}))


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_consent_url_is_login_kit_s_with_the_client_key_and_comma_separated_scopes(fake, http, app):
    assert (provider.pkce, provider.between_steps, provider.threads) == (False, False, False)
    assert provider.app_variables == ("TIKTOK_CLIENT_ID", "TIKTOK_CLIENT_SECRET")
    parts = urlsplit(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/v2/auth/authorize/"
    assert {name: values[-1] for name, values in parse_qs(parts.query).items()} == {
        "client_key": fake.client_key, "response_type": "code", "redirect_uri": REDIRECT, "state": "state-1",
        "scope": "video.list,user.info.basic,video.publish,video.upload,user.info.profile,user.info.stats"}


def test_tiktoks_own_origins_are_the_defaults(monkeypatch):
    monkeypatch.delenv("RUSTIZ_TIKTOK_AUTH_URL", raising=False)
    monkeypatch.delenv("RUSTIZ_TIKTOK_API_URL", raising=False)
    assert (provider.auth_base(), provider.api_base()) == ("https://www.tiktok.com", "https://open.tiktokapis.com")
    assert "{FRONTEND_URL}/integrations/social/tiktok" in provider.operator_guide


def test_the_code_exchange_sends_the_client_key_and_secret_in_the_form(fake, http, app):
    tokens = connected_tokens(http, app)
    assert tokens.access_token in fake.access_tokens and tokens.refresh_token in fake.refresh_tokens
    assert tokens.expires_in == 86400
    [request] = fake.requests_to("POST", "/v2/oauth/token/")
    form = request.form()
    assert "authorization" not in request.headers
    assert {key: form[key] for key in ("client_key", "client_secret", "grant_type", "redirect_uri")} == {
        "client_key": fake.client_key, "client_secret": fake.client_secret, "grant_type": "authorization_code",
        "redirect_uri": REDIRECT}


def test_a_consent_without_every_scope_is_refused(fake, http, app):
    fake.granted_scopes = "user.info.basic,video.list,user.info.profile,user.info.stats"
    with pytest.raises(Rejected) as refused:
        connected_tokens(http, app)
    assert "did not grant video.publish, video.upload;" in refused.value.message


def test_a_cancelled_consent_comes_back_with_access_denied(fake, http, app):
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    assert follow_consent(url, "deny")["error"] == "access_denied"


@pytest.mark.parametrize("status", [400, 200])  # TikTok's refusal shape, whichever status carries it
def test_a_used_code_is_token_refused(fake, http, app, status):
    fake.token_error_status = status
    code = follow_consent(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))["code"]
    run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    with pytest.raises(TokenRefused) as refused:
        run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    assert "invalid_grant: Authorization code is expired." in refused.value.message


def test_a_refresh_replaces_the_refresh_token_tiktok_sends(fake, http, app):
    first = connected_tokens(http, app)
    refreshed = run(provider.refresh_tokens(http, app, first.refresh_token))
    assert refreshed.access_token in fake.access_tokens and refreshed.access_token != first.access_token
    assert refreshed.refresh_token in fake.refresh_tokens and refreshed.refresh_token != first.refresh_token
    form = fake.requests_to("POST", "/v2/oauth/token/")[-1].form()
    assert form == {"client_key": fake.client_key, "client_secret": fake.client_secret,
                    "grant_type": "refresh_token", "refresh_token": first.refresh_token}
    with pytest.raises(TokenRefused):  # the old one died with the rotation
        run(provider.refresh_tokens(http, app, first.refresh_token))


def test_a_wrong_client_secret_is_refused_but_not_a_dead_grant(fake, http, app):
    first = connected_tokens(http, app)
    with pytest.raises(Rejected) as refused:
        run(provider.refresh_tokens(http, AppCredentials(fake.client_key, "wrong"), first.refresh_token))
    assert not isinstance(refused.value, TokenRefused) and "invalid_client" in refused.value.message


def test_a_503_on_refresh_is_retryable(fake, http, app):
    first = connected_tokens(http, app)
    fake.fail_next("POST", "/v2/oauth/token/", 503, b"upstream unavailable", {"Retry-After": "20"})
    with pytest.raises(Retryable) as passing:
        run(provider.refresh_tokens(http, app, first.refresh_token))
    assert passing.value.after == 20


# --- the account ---------------------------------------------------------------------------------------

def test_connect_reads_the_account_by_open_id_and_stores_the_creator_options(fake, channel):
    connected = run(provider.connect(channel))
    assert connected.account.internal_id == fake.open_id
    assert (connected.account.name, connected.account.profile) == ("Ada", "ada.bakes")
    assert connected.limits == {"privacyLevelOptions": ["FOLLOWER_OF_CREATOR", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"],
                                "commentDisabled": False, "duetDisabled": False, "stitchDisabled": True,
                                "maxVideoPostDurationSec": 300}
    [user] = fake.requests_to("GET", "/v2/user/info/")
    assert user.query["fields"] == "open_id,union_id,avatar_url,display_name,username"


def test_an_unknown_token_needs_reconnect(fake, http):
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.connect(Channel("c", "Ada", {"accessToken": "act.gone"}, None, http)))
    assert not isinstance(refused.value, TokenRefused)
    assert "access_token_invalid" in refused.value.message


def test_missing_scopes_need_a_new_consent(fake, channel):
    fake.fail_next("GET", "/v2/user/info/", *api_error(401, "scope_not_authorized",
                                                       "The user did not authorize the scope required.")[:2])
    with pytest.raises(TokenRefused):
        run(provider.connect(channel))


def test_analytics_are_the_account_counts_and_the_video_counts(fake, channel, tmp_path):
    figures = run(provider.channel_analytics(channel, 7))
    assert {item["label"]: item["data"][0]["total"] for item in figures} == {
        "Followers": "1200", "Following": "35", "Total Likes": "9800", "Videos": "42"}
    release = run(provider.publish(channel, post((video_file(tmp_path),)), None))
    figures = run(provider.post_analytics(channel, release, 7))
    assert {item["label"]: item["data"][0]["total"] for item in figures} == {
        "Views": "450", "Likes": "17", "Comments": "3", "Shares": "2"}
    [query] = fake.requests_to("POST", "/v2/video/query/")
    assert query.query["fields"] == "id,like_count,comment_count,share_count,view_count"
    assert query.json() == {"filters": {"video_ids": [release.id]}}


# --- scheduling checks ---------------------------------------------------------------------------------

LIMITS = {"limits": {"privacyLevelOptions": ["FOLLOWER_OF_CREATOR", "SELF_ONLY"], "commentDisabled": True,
                     "duetDisabled": False, "stitchDisabled": True}}
VIDEO_VALUES = [{"content": "<p>x</p>", "image": [{"id": "1", "path": "https://r.example/uploads/a.mp4"}]}]
PHOTO_VALUES = [{"content": "<p>x</p>", "image": [{"id": "1", "path": "https://r.example/uploads/a.jpg"}]}]


def test_a_privacy_level_the_creator_does_not_offer_is_refused_naming_the_offered_ones():
    problem = provider.post_problem(LIMITS, VIDEO_VALUES, {**SETTINGS, "privacy_level": "PUBLIC_TO_EVERYONE",
                                                           "comment": False})
    assert problem == ("privacy_level PUBLIC_TO_EVERYONE is not offered by this TikTok account; it offers: "
                       "FOLLOWER_OF_CREATOR, SELF_ONLY")


def test_switches_the_creator_turned_off_are_refused():
    assert "comment is on" in provider.post_problem(LIMITS, VIDEO_VALUES, SETTINGS)
    assert "stitch is on" in provider.post_problem(LIMITS, VIDEO_VALUES, {**SETTINGS, "comment": False,
                                                                          "stitch": True})
    # photos have no duet or stitch; a draft's settings are made in the app
    assert provider.post_problem(LIMITS, PHOTO_VALUES, {**SETTINGS, "comment": False, "stitch": True}) is None
    assert provider.post_problem(LIMITS, VIDEO_VALUES, {**SETTINGS, "content_posting_method": "UPLOAD"}) is None


def test_only_photo_posts_pull_their_media():
    assert provider.pulls_media(PHOTO_VALUES, SETTINGS) is True
    assert provider.pulls_media(VIDEO_VALUES, SETTINGS) is False


def test_photo_posts_take_jpeg_and_webp_only():
    png = [{"content": "<p>x</p>", "image": [{"id": "1", "path": "https://r.example/uploads/a.png"}]}]
    assert provider.post_problem(LIMITS, png, {**SETTINGS, "comment": False}) == (
        "TikTok photo posts take JPEG and WebP pictures only, not .png")
    many = [{"content": "<p>x</p>", "image": PHOTO_VALUES[0]["image"] * 36}]
    assert provider.post_problem(LIMITS, many, {**SETTINGS, "comment": False}) == (
        "A TikTok photo post takes at most 35 pictures, not 36")


def movie(seconds: int, version: int = 0) -> bytes:
    """An MP4 whose moov/mvhd says it lasts `seconds` (timescale 1000)."""
    import struct
    times = struct.pack(">IIII", 0, 0, 1000, seconds * 1000) if version == 0 else \
        struct.pack(">QQIQ", 0, 0, 1000, seconds * 1000)
    head = iso_box(b"ftyp", b"isom" + b"\x00\x00\x02\x00" + b"isomiso2avc1mp41")
    return head + iso_box(b"moov", iso_box(b"mvhd", bytes([version, 0, 0, 0]) + times + b"\x00" * 80)) \
        + iso_box(b"mdat", b"\x00" * 3000)


def test_the_duration_is_read_from_the_movie_header(tmp_path):
    for version in (0, 1):
        (tmp_path / "m.mp4").write_bytes(movie(42, version))
        assert movie_seconds(str(tmp_path / "m.mp4")) == 42
    (tmp_path / "m.mp4").write_bytes(mp4_file(3500))  # no mvhd: unknown, left to TikTok
    assert movie_seconds(str(tmp_path / "m.mp4")) is None


def test_a_video_longer_than_the_creator_may_post_is_refused_before_the_upload(fake, channel, tmp_path):
    path = tmp_path / "long.mp4"
    path.write_bytes(movie(400))
    long = MediaFile("https://rustiz.example/uploads/long.mp4", str(path), "video/mp4", "video", "", "long.mp4")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post((long,)), None))
    assert refused.value.message == "the video lasts 400 s, and @ada.bakes may post videos up to 300 s on TikTok"
    assert fake.requests_to("POST", "/v2/post/publish/video/init/") == []
    path.write_bytes(movie(30))
    assert run(provider.publish(channel, post((long,)), None)).id


def test_a_png_is_refused_before_anything_is_sent(fake, channel, tmp_path):
    (tmp_path / "a.png").write_bytes(png_file())
    image = MediaFile(f"{fake.url}/files/a.png", str(tmp_path / "a.png"), "image/png", "image", "", "a.png")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post((image,)), None))
    assert "JPEG and WebP pictures only, and a.png is image/png" in refused.value.message
    assert fake.requests_to("POST", "/v2/post/publish/content/init/") == []


def test_chunk_plans_follow_tiktoks_rules():
    mib = 1024 * 1024
    assert chunk_plan(3 * mib, 10 * mib) == (3 * mib, 1)  # under one chunk: whole
    assert chunk_plan(25 * mib + 7, 10 * mib) == (10 * mib, 2)  # the last chunk takes the trailing bytes
    assert chunk_plan(20_000 * mib, 10 * mib) == (20 * mib, 1000)  # never more than 1,000 chunks


# --- publishing ----------------------------------------------------------------------------------------

def test_a_video_is_sent_in_ordered_chunks_then_polled_to_publish_complete(fake, channel, tmp_path):
    video = video_file(tmp_path)
    release = run(provider.publish(channel, post((video,)), None))
    [entry] = fake.published
    assert entry["video"] == open(video.path, "rb").read() and len(entry["chunks"]) == 3
    assert [len(chunk) for chunk in entry["chunks"]] == [1000, 1000, 1500]
    ranges = [request.headers["content-range"] for request in fake.requests_to("PUT", r"/upload/.+")]
    assert ranges == ["bytes 0-999/3500", "bytes 1000-1999/3500", "bytes 2000-3499/3500"]
    [init] = fake.requests_to("POST", "/v2/post/publish/video/init/")
    assert init.json() == {
        "source_info": {"source": "FILE_UPLOAD", "video_size": 3500, "chunk_size": 1000, "total_chunk_count": 3},
        "post_info": {"title": "Sourdough, step by step", "privacy_level": "FOLLOWER_OF_CREATOR",
                      "disable_comment": False, "brand_content_toggle": False, "brand_organic_toggle": False,
                      "disable_duet": False, "disable_stitch": True, "is_aigc": False}}
    statuses = fake.requests_to("POST", "/v2/post/publish/status/fetch/")
    assert len(statuses) == 2  # PROCESSING_UPLOAD once, then PUBLISH_COMPLETE
    assert release.id == entry["public_id"]
    assert release.url == f"{fake.url}/@ada.bakes/video/{entry['public_id']}"


def test_a_small_video_is_one_chunk(fake, channel, tmp_path, monkeypatch):
    monkeypatch.setenv("RUSTIZ_TIKTOK_CHUNK_BYTES", "8000")
    run(provider.publish(channel, post((video_file(tmp_path),)), None))
    assert len(fake.published[0]["chunks"]) == 1


def test_upload_mode_sends_the_video_to_the_inbox_as_a_draft(fake, channel, tmp_path):
    release = run(provider.publish(channel, post((video_file(tmp_path),), content_posting_method="UPLOAD"), None))
    [init] = fake.requests_to("POST", "/v2/post/publish/inbox/video/init/")
    assert init.json()["post_info"] == {"title": "Sourdough, step by step"}
    assert fake.requests_to("POST", "/v2/post/publish/video/init/") == []
    assert release.reply_ref["inbox"] is True and release.id.startswith("v_pub_file~")
    assert fake.published[0]["status"] == "SEND_TO_USER_INBOX"


def test_a_photo_post_is_pulled_from_the_media_urls(fake, channel, tmp_path):
    pictures = (picture(fake, tmp_path, "one.jpg"), picture(fake, tmp_path, "two.jpg"))
    release = run(provider.publish(channel, post(pictures, title="Bread"), None))
    [entry] = fake.published
    assert entry["photos"] == [fake.files["one.jpg"], fake.files["two.jpg"]]
    assert len(fake.requests_to("GET", r"/files/.+")) == 2  # TikTok really fetched them
    [init] = fake.requests_to("POST", "/v2/post/publish/content/init/")
    body = init.json()
    assert (body["media_type"], body["post_mode"]) == ("PHOTO", "DIRECT_POST")
    assert body["source_info"] == {"source": "PULL_FROM_URL", "photo_cover_index": 0,
                                   "photo_images": [media.url for media in pictures]}
    assert body["post_info"]["title"] == "Bread" and body["post_info"]["description"] == "Sourdough, step by step"
    assert "disable_duet" not in body["post_info"] and release.id == entry["public_id"]


def test_a_photo_tiktok_cannot_pull_is_rejected_in_clear_words(fake, channel, tmp_path):
    missing = MediaFile(f"{fake.url}/files/gone.jpg", str(tmp_path / "x"), "image/jpeg", "image", "", "gone.jpg")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post((missing,)), None))
    assert "could not download a picture from rustiz's public URL" in refused.value.message
    assert "photo_pull_failed" in refused.value.message


def test_a_failed_post_is_rejected_with_its_reason(fake, channel, tmp_path):
    fake.fail_reason = "duration_check_failed"
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post((video_file(tmp_path),)), None))
    assert refused.value.message == ("the post failed in TikTok's processing: the video is too long or too short "
                                     "for this account (duration_check_failed)")


def test_an_internal_failure_is_retryable(fake, channel, tmp_path):
    fake.fail_reason = "internal"
    with pytest.raises(Retryable):
        run(provider.publish(channel, post((video_file(tmp_path),)), None))


def test_a_privacy_level_withdrawn_since_scheduling_is_refused_before_anything_is_sent(fake, channel, tmp_path):
    fake.creator["privacy_level_options"] = ["SELF_ONLY"]
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post((video_file(tmp_path),)), None))
    assert refused.value.message == ("privacy_level FOLLOWER_OF_CREATOR is not offered by the TikTok account "
                                     "@ada.bakes; it offers: SELF_ONLY")
    assert fake.requests_to("POST", "/v2/post/publish/video/init/") == []


def test_rate_limit_exceeded_is_retryable(fake, channel, tmp_path):
    fake.fail_next("POST", "/v2/post/publish/video/init/", *api_error(429, "rate_limit_exceeded",
                                                                      "API rate limit was exceeded.")[:2])
    with pytest.raises(Retryable) as passing:
        run(provider.publish(channel, post((video_file(tmp_path),)), None))
    assert "rate_limit_exceeded" in passing.value.message and passing.value.after == 60


def test_the_daily_post_limit_is_a_refusal_of_the_post_not_of_the_channel(fake, channel, tmp_path):
    fake.fail_next("POST", "/v2/post/publish/video/init/", *api_error(
        403, "spam_risk_too_many_posts", "The daily post cap is reached.")[:2])
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post((video_file(tmp_path),)), None))
    assert not isinstance(refused.value, NeedsReconnect)
    assert "daily limit of posts" in refused.value.message


def test_access_token_invalid_while_publishing_needs_reconnect(fake, channel, tmp_path):
    fake.access_tokens.clear()
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.publish(channel, post((video_file(tmp_path),)), None))
    assert not isinstance(refused.value, TokenRefused)


def test_a_lost_status_answer_after_the_upload_is_outcome_unknown_not_a_retry(fake, channel, tmp_path):
    fake.fail_next("POST", "/v2/post/publish/status/fetch/", 503, b"busy")
    with pytest.raises(OutcomeUnknown) as unknown:
        run(provider.publish(channel, post((video_file(tmp_path),)), None))
    assert "publish_id v_pub_file~" in unknown.value.message


def test_an_expired_upload_url_is_retryable(fake, channel, tmp_path):
    fake.fail_next("PUT", r"/upload/.+", 403, b"")
    with pytest.raises(Retryable):
        run(provider.publish(channel, post((video_file(tmp_path),)), None))


def test_an_unknown_error_body_is_described_not_quoted(fake, channel, tmp_path):
    fake.fail_next("POST", "/v2/post/publish/video/init/", 400, {"detail": "secret proxy words"})
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post((video_file(tmp_path),)), None))
    assert "secret proxy words" not in refused.value.message


def test_a_release_without_a_public_id_is_the_publish_id_on_the_profile(fake, channel, tmp_path):
    release = run(provider.publish(channel, post((video_file(tmp_path),), privacy_level="SELF_ONLY"), None))
    assert release == Release(release.reply_ref["publishId"], f"{fake.url}/@ada.bakes", release.reply_ref)
    assert run(provider.post_analytics(channel, release, 7)) == []

