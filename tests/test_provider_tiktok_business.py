"""TikTok Business (`tiktok-business`) against a fake of TikTok's API for Business: the provider object over real
sockets (the consent URL, the JSON token calls and their refusals in TikTok's envelope, the account, the music
and location tools, the video and photo bodies, the status polling, the envelope's codes classified), then the
built server end to end (connect, a video and a photo post TikTok pulls from rustiz's upload URLs, a refresh
after a dead token, throttling, the tools through POST /integration-trigger)."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.tiktok_business import API, FakeTikTokBusiness, envelope
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from support import (
    connect_database, connect_oauth, dict_rows, follow_consent, jpeg_file, mp4_file, png_file, refresh_needed,
    refused_post, run, scheduled, settled, trigger, uploaded, waiting_for_reconnect,
)

REDIRECT = "https://rustiz.example/integrations/social/tiktok-business"
provider = provider_for("tiktok-business")
SETTINGS = {"privacy_level": "FOLLOWER_OF_CREATOR", "duet": True, "stitch": False, "comment": True,
            "autoAddMusic": "no", "brand_content_toggle": False, "brand_organic_toggle": True,
            "content_posting_method": "DIRECT_POST"}

fake = fake_fixture(FakeTikTokBusiness, RUSTIZ_TIKTOK_BUSINESS_POLL_SECONDS="0.01")


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_id, fake.client_secret)


@pytest.fixture
def channel(fake, http) -> Channel:
    return Channel("channel-1", "Ada", fake.credentials(), {"username": "ada.business"}, http)


def media(fake, tmp_path, name: str, data: bytes, content_type: str, kind: str) -> MediaFile:
    fake.files[name] = data
    (tmp_path / name).write_bytes(data)
    return MediaFile(f"{fake.url}/files/{name}", str(tmp_path / name), content_type, kind, "", name)


def post(items: tuple, text: str = "<p>Sourdough, step by step</p>", **settings) -> OutgoingPost:
    return OutgoingPost("post-1", text, items, {**SETTINGS, **settings}, 0, "key-1", "2026-12-03T13:00:00Z")


def connected_tokens(http, app):
    callback = follow_consent(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))
    return run(provider.exchange_code(http, app, callback["code"], REDIRECT, None, {}))


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_consent_url_names_the_business_app_and_postiz_s_scopes(fake, http, app):
    assert (provider.pkce, provider.threads, provider.needs_public_media) == (False, False, True)
    assert provider.app_variables == ("TIKTOK_BUSINESS_CLIENT_ID", "TIKTOK_BUSINESS_CLIENT_SECRET")
    parts = urlsplit(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/v2/auth/authorize/"
    assert {name: values[-1] for name, values in parse_qs(parts.query).items()} == {
        "client_key": fake.client_id, "response_type": "code", "redirect_uri": REDIRECT, "state": "state-1",
        "disable_auto_auth": "1",
        "scope": "user.info.basic,user.info.username,user.info.stats,video.list,video.upload,video.publish"}


def test_tiktoks_own_origins_are_the_defaults(monkeypatch):
    monkeypatch.delenv("RUSTIZ_TIKTOK_BUSINESS_AUTH_URL", raising=False)
    monkeypatch.delenv("RUSTIZ_TIKTOK_BUSINESS_API_URL", raising=False)
    assert (provider.auth_base(), provider.api_base()) == ("https://www.tiktok.com", "https://business-api.tiktok.com")
    assert "{FRONTEND_URL}/integrations/social/tiktok-business" in provider.operator_guide


def test_the_code_exchange_is_json_with_the_auth_code_and_keeps_the_business_id(fake, http, app):
    tokens = connected_tokens(http, app)
    assert tokens.access_token in fake.access_tokens and tokens.refresh_token in fake.refresh_tokens
    assert (tokens.expires_in, tokens.extra) == (86400, {"businessId": fake.open_id})
    assert provider.credentials_for(tokens, {}) == {"accessToken": tokens.access_token, "businessId": fake.open_id}
    [request] = fake.requests_to("POST", API + "/tt_user/oauth2/token/")
    body = request.json()
    assert {key: body[key] for key in ("client_id", "client_secret", "grant_type", "redirect_uri")} == {
        "client_id": fake.client_id, "client_secret": fake.client_secret, "grant_type": "authorization_code",
        "redirect_uri": REDIRECT}
    assert body["auth_code"].startswith("code-")


def test_a_private_frontend_url_is_refused_before_connecting_since_tiktok_pulls_every_medium(monkeypatch):
    monkeypatch.delenv("RUSTIZ_TIKTOK_BUSINESS_API_URL", raising=False)
    problem = provider.media_origin_problem("http://192.168.1.20:8080")
    assert problem and "TikTok Business downloads a post's media itself" in problem
    assert provider.pulls_media([{"content": "x", "image": [{"path": "a.mp4"}]}], {})
    assert not provider.pulls_media([{"content": "x", "image": []}], {})


def test_a_consent_without_every_scope_is_refused(fake, http, app):
    fake.granted_scopes = "user.info.basic,video.list,user.info.stats"
    with pytest.raises(Rejected) as refused:
        connected_tokens(http, app)
    assert "did not grant user.info.username, video.upload, video.publish;" in refused.value.message


def test_a_used_code_and_a_dead_refresh_token_are_token_refused(fake, http, app):
    code = follow_consent(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))["code"]
    tokens = run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    with pytest.raises(TokenRefused) as refused:
        run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    assert "auth_code is invalid or expired. (code 40002)" in refused.value.message
    renewed = run(provider.refresh_tokens(http, app, tokens.refresh_token))
    assert renewed.refresh_token != tokens.refresh_token and renewed.extra == {"businessId": fake.open_id}
    with pytest.raises(TokenRefused):  # rotated: the old one is dead
        run(provider.refresh_tokens(http, app, tokens.refresh_token))


def test_a_wrong_app_secret_is_shown_without_disconnecting(fake, http):
    with pytest.raises(Rejected) as refused:
        run(provider.refresh_tokens(http, AppCredentials(fake.client_id, "wrong"), "rft.x"))
    assert not isinstance(refused.value, TokenRefused) and "Invalid app id or secret. (code 40001)" in refused.value.message


def test_a_throttled_or_failing_token_endpoint_is_retryable(fake, http, app):
    tokens = connected_tokens(http, app)
    status, body, _ = envelope(40100, "Too many requests. Please retry in some time.")
    fake.fail_next("POST", API + "/tt_user/oauth2/refresh_token/", status, body)
    with pytest.raises(Retryable):
        run(provider.refresh_tokens(http, app, tokens.refresh_token))
    fake.fail_next("POST", API + "/tt_user/oauth2/refresh_token/", 503, b"<html>busy</html>")
    with pytest.raises(Retryable):
        run(provider.refresh_tokens(http, app, tokens.refresh_token))
    fake.fail_next("POST", API + "/tt_user/oauth2/refresh_token/", 200, {"code": 0, "data": {}})
    with pytest.raises(Retryable):  # a malformed answer
        run(provider.refresh_tokens(http, app, tokens.refresh_token))


# --- the account and the tools -------------------------------------------------------------------------

def test_connect_reads_the_business_account_with_the_access_token_header(fake, channel):
    connected = run(provider.connect(channel))
    assert connected.account.internal_id == fake.open_id
    assert (connected.account.name, connected.account.profile) == ("Ada's Bakery", "ada.business")
    assert connected.session == {"username": "ada.business"}
    [request] = fake.requests_to("GET", API + "/business/get/")
    assert json.loads(request.query["fields"]) == ["username", "display_name", "profile_image"]
    assert request.query["business_id"] == fake.open_id


def test_a_dead_access_token_asks_for_a_refresh(fake, channel):
    fake.access_tokens.clear()
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.connect(channel))
    assert not isinstance(refused.value, TokenRefused)
    assert "Access token is incorrect or has been revoked. (code 40105)" in refused.value.message


def test_music_search_lists_the_publishable_song_clips_as_postiz(fake, channel):
    tracks = run(provider.run_tool(channel, "musicSearch", {"genre": "POP"}))
    assert tracks == [
        {"id": "clip-1", "title": "Rise", "artist": "Dawn", "image": "", "duration": 31000, "previewUrl": ""},
        {"id": "clip-2", "title": "Crust", "artist": "Oven", "image": "", "duration": 30000, "previewUrl": "p2"}]
    assert fake.requests_to("GET", API + "/discovery/cml/trending_list/")[0].query["genre"] == "POP"


def test_location_search_asks_with_the_query_and_nothing_without_one(fake, channel):
    assert run(provider.run_tool(channel, "locationSearch", {"q": ""})) == []
    assert run(provider.run_tool(channel, "locationSearch", {"q": "Lyon"})) == [
        {"id": "loc-1", "name": "Lyon Bakery", "address": "1 Flour St"}]
    assert [request.query["search_query"] for request in fake.requests_to("GET", API + "/business/publish/location/")] \
        == ["Lyon"]


def test_analytics_give_the_account_counts_and_a_video_s_counts(fake, channel, tmp_path):
    release = run(provider.publish(channel, post((media(fake, tmp_path, "clip.mp4", mp4_file(900), "video/mp4",
                                                        "video"),)), None))
    figures = {item["label"]: item["data"][0]["total"] for item in run(provider.channel_analytics(channel, 7))}
    assert figures == {"Followers": "5100", "Following": "12", "Total Likes": "40200", "Videos": "88", "Views": "610",
                       "Recent Likes": "21", "Recent Comments": "4", "Recent Shares": "3"}
    counts = {item["label"]: item["data"][0]["total"] for item in run(provider.post_analytics(channel, release, 7))}
    assert counts == {"Views": "610", "Likes": "21", "Comments": "4", "Shares": "3"}
    by_share = Release(release.reply_ref["shareId"], "")
    assert run(provider.post_analytics(channel, by_share, 7)) == run(provider.post_analytics(channel, release, 7))


# --- publishing ------------------------------------------------------------------------------------------

def test_a_video_is_pulled_by_tiktok_with_the_direct_post_settings(fake, channel, tmp_path):
    video = media(fake, tmp_path, "clip.mp4", mp4_file(900), "video/mp4", "video")
    release = run(provider.publish(channel, post((video,), music={"id": "clip-1", "audio_volume": 80},
                                                 location={"id": "loc-1", "name": "Lyon Bakery"}), None))
    [entry] = fake.published
    assert entry["media"] == [mp4_file(900)] and entry["body"]["video_url"] == video.url
    assert entry["post_info"] == {
        "caption": "Sourdough, step by step", "is_brand_organic": True, "is_branded_content": False,
        "disable_comment": False, "disable_duet": False, "disable_stitch": True, "is_ai_generated": False,
        "location_id": "loc-1", "location_name": "Lyon Bakery",
        "music_sound_info": {"music_sound_id": "clip-1", "music_sound_volume": 80, "video_original_sound_volume": 50}}
    assert release.id == entry["public_id"]
    assert release.url == f"{fake.url}/@ada.business/video/{entry['public_id']}"


def test_an_upload_goes_to_the_inbox_as_a_draft_with_only_the_caption(fake, channel, tmp_path):
    video = media(fake, tmp_path, "clip.mp4", mp4_file(900), "video/mp4", "video")
    release = run(provider.publish(channel, post((video,), content_posting_method="UPLOAD",
                                                 music={"id": "clip-1"}), None))
    [entry] = fake.published
    assert entry["post_info"] == {"caption": "Sourdough, step by step", "is_brand_organic": True,
                                  "is_branded_content": False, "upload_to_draft": True}
    assert entry["status"] == "SEND_TO_USER_INBOX" and release.reply_ref["inbox"] is True


def test_a_photo_post_with_random_music_and_the_privacy_level(fake, channel, tmp_path):
    pictures = tuple(media(fake, tmp_path, f"loaf{number}.jpg", jpeg_file() + bytes([number]), "image/jpeg", "image")
                     for number in (1, 2))
    run(provider.publish(channel, post(pictures, title="Two loaves", autoAddMusic="yes"), None))
    [entry] = fake.published
    info = entry["post_info"]
    assert entry["media"] == [jpeg_file() + b"\x01", jpeg_file() + b"\x02"]
    assert entry["body"]["photo_images"] == [picture.url for picture in pictures]
    assert (info["title"], info["caption"], info["privacy_level"]) == (
        "Two loaves", "Sourdough, step by step", "FOLLOWER_OF_CREATOR")
    assert info["music_sound_info"]["music_sound_id"] in ("clip-1", "clip-2") and info["auto_add_music"] is False


def test_a_png_or_a_video_with_pictures_is_refused_before_anything_is_sent(fake, channel, tmp_path):
    png = media(fake, tmp_path, "p.png", png_file(), "image/png", "image")
    with pytest.raises(Rejected, match="JPEG and WebP pictures only, and p.png is image/png"):
        run(provider.publish(channel, post((png,)), None))
    video = media(fake, tmp_path, "clip.mp4", mp4_file(900), "video/mp4", "video")
    with pytest.raises(Rejected, match="one video, or one or more pictures"):
        run(provider.publish(channel, post((video, png)), None))
    assert fake.requests_to("POST", API + r"/business/.+/publish/") == []


def test_a_failed_post_is_refused_in_clear_words_and_an_internal_failure_passes(fake, channel, tmp_path):
    video = media(fake, tmp_path, "clip.mp4", mp4_file(900), "video/mp4", "video")
    fake.fail_reason = "frame_rate_check_failed"
    with pytest.raises(Rejected, match=r"frame rate .* \(frame_rate_check_failed\)"):
        run(provider.publish(channel, post((video,)), None))
    fake.fail_reason = "internal"
    with pytest.raises(Retryable):
        run(provider.publish(channel, post((video,)), None))


def test_the_envelope_s_codes_on_the_publish_call(fake, channel, tmp_path):
    video = media(fake, tmp_path, "clip.mp4", mp4_file(900), "video/mp4", "video")
    path = API + "/business/video/publish/"
    for code, message, error in ((40100, "Too many requests.", Retryable),
                                 (40002, "spam_risk_too_many_posts: the daily limit", Rejected),
                                 (40001, "No permission to operate this business account.", TokenRefused),
                                 (50002, "System error.", OutcomeUnknown)):
        status, body, _ = envelope(code, message)
        fake.fail_next("POST", path, status, body)
        with pytest.raises(error) as raised:
            run(provider.publish(channel, post((video,)), None))
        assert f"(code {code})" in raised.value.message
    fake.fail_next("POST", path, 200, {"code": 0, "message": "OK", "data": {}})
    with pytest.raises(OutcomeUnknown, match="without a share_id"):
        run(provider.publish(channel, post((video,)), None))


def test_a_lost_status_after_the_post_was_sent_is_outcome_unknown(fake, channel, tmp_path):
    video = media(fake, tmp_path, "clip.mp4", mp4_file(900), "video/mp4", "video")
    fake.fail_next("GET", API + "/business/publish/status/", 503, b"")
    with pytest.raises(OutcomeUnknown, match="TikTok has the post"):
        run(provider.publish(channel, post((video,)), None))


# --- end to end, through the built server -----------------------------------------------------------------

@pytest.fixture
def business():
    platform = FakeTikTokBusiness()
    yield platform
    platform.close()


@pytest.fixture
def server(start_server_with_fakes, business):
    return start_server_with_fakes(env={**business.app_env(), "RUSTIZ_RETRY_BASE": "0.3",
                                        "RUSTIZ_TIKTOK_BUSINESS_POLL_SECONDS": "0.05",
                                        "RUSTIZ_TIKTOK_BUSINESS_THROTTLE_SECONDS": "0.5"})


def connected_channel(server) -> str:
    back = connect_oauth(server, "tiktok-business")
    assert back["notice"] == "connected", back
    return back["channel"]


def refresh_grants(business: FakeTikTokBusiness) -> int:
    return len(business.requests_to("POST", API + "/tt_user/oauth2/refresh_token/"))


def test_connect_then_a_video_pulled_from_rustiz_is_published(server, business):
    channel_id = connected_channel(server)
    [stored] = dict_rows(server.database, "SELECT internal_id, name, refresh_token FROM integration WHERE id = ?",
                         channel_id)
    assert (stored["internal_id"], stored["name"]) == (business.open_id, "Ada's Bakery")
    assert stored["refresh_token"] in business.refresh_tokens
    [exchange] = business.requests_to("POST", API + "/tt_user/oauth2/token/")  # Postiz's callback, trailing slash
    assert exchange.json()["redirect_uri"] == server.url + "/integrations/social/tiktok-business/"
    video = uploaded(server, mp4_file(1200), "mp4")
    post_id = scheduled(server, channel_id, "<p>Sourdough</p>", images=[video],
                        settings={"__type": "tiktok-business", **SETTINGS})
    done = settled(server, post_id)
    assert done["state"] == "PUBLISHED", done
    [entry] = business.published
    assert entry["media"] == [mp4_file(1200)] and entry["body"]["video_url"] == video["path"]
    assert done["releaseURL"] == f"{business.url}/@ada.business/video/{entry['public_id']}"


def test_a_photo_post_is_pulled_and_a_png_is_refused_at_scheduling(server, business):
    channel_id = connected_channel(server)
    picture = uploaded(server, jpeg_file(), "jpg")
    done = settled(server, scheduled(server, channel_id, "<p>Loaf</p>", images=[picture],
                                     settings={"__type": "tiktok-business", **SETTINGS}))
    assert done["state"] == "PUBLISHED", done
    assert business.published[0]["media"] == [jpeg_file()]
    answer = refused_post(server, channel_id, "<p>x</p>", images=[uploaded(server, png_file(), "png")],
                          settings={"__type": "tiktok-business", **SETTINGS})
    assert "TikTok photo posts take JPEG and WebP pictures only, not .png" in answer


def test_a_dead_token_is_refreshed_and_the_rotated_refresh_token_kept(server, business):
    channel_id = connected_channel(server)
    [before] = dict_rows(server.database, "SELECT refresh_token FROM integration WHERE id = ?", channel_id)
    business.access_tokens.clear()  # the stored token now gets code 40105
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[uploaded(server, mp4_file(900), "mp4")],
                                     settings={"__type": "tiktok-business", **SETTINGS}))
    assert done["state"] == "PUBLISHED", done
    assert refresh_grants(business) == 1 and len(business.published) == 1
    [after] = dict_rows(server.database, "SELECT refresh_token FROM integration WHERE id = ?", channel_id)
    assert after["refresh_token"] != before["refresh_token"] and after["refresh_token"] in business.refresh_tokens


def test_a_refused_refresh_flags_the_channel_and_the_post_waits(server, business):
    channel_id = connected_channel(server)
    business.access_tokens.clear()
    business.refresh_tokens.clear()
    post_id = scheduled(server, channel_id, "<p>x</p>", images=[uploaded(server, mp4_file(900), "mp4")],
                        settings={"__type": "tiktok-business", **SETTINGS})
    waiting = waiting_for_reconnect(server, post_id)
    assert "refresh_token is invalid or expired." in waiting["error"] and business.published == []
    assert refresh_needed(server, channel_id)


def test_throttling_is_tried_again_later(server, business):
    channel_id = connected_channel(server)
    status, body, _ = envelope(40100, "Too many requests.")
    business.fail_next("POST", API + "/business/video/publish/", status, body)
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[uploaded(server, mp4_file(900), "mp4")],
                                     settings={"__type": "tiktok-business", **SETTINGS}), timeout=90)
    assert done["state"] == "PUBLISHED", done
    assert len(business.requests_to("POST", API + "/business/video/publish/")) == 2


def test_the_tools_answer_through_integration_trigger(server, business):
    channel_id = connected_channel(server)
    status, answer = trigger(server, channel_id, "locationSearch", {"q": "Paris"})
    assert status == 200 and answer["output"] == [{"id": "loc-1", "name": "Paris Bakery", "address": "1 Flour St"}]
    status, answer = trigger(server, channel_id, "musicSearch", {})
    assert status == 200 and [track["id"] for track in answer["output"]] == ["clip-1", "clip-2"], answer


def test_expiry_ahead_triggers_a_refresh_before_publishing(server, business):
    import time
    channel_id = connected_channel(server)
    moment = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 60))
    with connect_database(server.database) as db:
        db.execute("UPDATE integration SET token_expiration = ? WHERE id = ?", (moment, channel_id))
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[uploaded(server, mp4_file(900), "mp4")],
                                     settings={"__type": "tiktok-business", **SETTINGS}))
    assert done["state"] == "PUBLISHED" and refresh_grants(business) == 1


def test_analytics_through_the_server(server, business):
    from support import API, api
    channel_id = connected_channel(server)
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[uploaded(server, mp4_file(900), "mp4")],
                                     settings={"__type": "tiktok-business", **SETTINGS}))
    status, figures = api(server, "GET", f"{API}/analytics/{channel_id}?date=7")
    totals = {item["label"]: item["data"][0]["total"] for item in figures} if status == 200 else figures
    assert status == 200 and totals["Followers"] == "5100" and totals["Views"] == "610", figures
    status, figures = api(server, "GET", f"{API}/analytics/post/{done['id']}")
    assert status == 200 and {item["label"] for item in figures} == {"Views", "Likes", "Comments", "Shares"}, figures
