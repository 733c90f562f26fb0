"""The instagram and instagram-standalone provider objects against one fake of both Graph hosts, over real
sockets: Facebook Login (code -> long-lived user token, permissions), the Instagram account chosen among the
pages' accounts, Instagram Login (code -> short -> long-lived token, ig_refresh_token), and the container flow
both share: a Reel with a first comment (the Facebook side sends the video through the resumable upload; the
fake GETs MediaFile.url for pictures, and for videos on the standalone side), IN_PROGRESS -> FINISHED, ERROR in
Instagram's words, a carousel, a story, dead tokens, throttling, insights and the audio search."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.instagram import DEAD_TOKEN, FB_SCOPES, IG_STANDALONE, PAGES, THROTTLED, FakeInstagram, graph_error
from rustiz_features.publishers import provider_for
from rustiz_features.publishers import instagram_shared
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutgoingPost, Rejected, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from support import FakeOrigin, follow_consent, jpeg_file, mp4_file, run

FB_REDIRECT = "https://rustiz.example/integrations/social/instagram"
IG_REDIRECT = "https://rustiz.example/integrations/social/instagram-standalone"
facebook_side = provider_for("instagram")
standalone = provider_for("instagram-standalone")
IG_ACCOUNT = PAGES[0]["ig"]["id"]


fake = fake_fixture(FakeInstagram)


FILES = {"clip.mp4": mp4_file(2048), "a.jpg": jpeg_file(), "b.jpg": jpeg_file() + b"b"}


@pytest.fixture
def origin(tmp_path):
    """FRONTEND_URL's /uploads (what Instagram downloads), and the same files on this machine (what is sent)."""
    files = FakeOrigin()
    files.folder = tmp_path
    for name, data in FILES.items():
        files.serve(f"/uploads/2026/12/03/{name}", data, "video/mp4" if name.endswith(".mp4") else "image/jpeg")
        (tmp_path / name).write_bytes(data)
    yield files
    files.close()


def fb_app() -> AppCredentials:
    return AppCredentials("1234567890", "facebook-app-secret")


def ig_app() -> AppCredentials:
    return AppCredentials("9876543210", "instagram-app-secret")


def facebook_channel(fake, http) -> Channel:
    """A channel of the Facebook side with its Instagram account chosen (page 1110001)."""
    channel = Channel("channel-1", "Analytical Engines", {"accessToken": fake.fb_user_token()},
                      {"page": PAGES[0]["id"], "instagram": IG_ACCOUNT}, http)
    channel.app = fb_app()
    return channel


def standalone_channel(fake, http) -> Channel:
    channel = Channel("channel-2", "Ada", {"accessToken": fake.ig_token()}, {"instagram": IG_STANDALONE["user_id"]},
                      http)
    channel.app = ig_app()
    return channel


def media(origin, name: str, content_type: str, kind: str) -> MediaFile:
    path = origin.folder / name
    return MediaFile(f"{origin.url}/uploads/2026/12/03/{name}", str(path) if path.exists() else "/nonexistent",
                     content_type, kind, "", name)


def post(text: str = "<p>Engines at work #rustiz</p>", items: tuple = (), part: int = 0, **settings) -> OutgoingPost:
    return OutgoingPost("post-1", text, items, {"post_type": "post", **settings}, part, "key-1", "2026-12-03T13:00:00Z")


def status_reads(fake) -> list:
    return [request for request in fake.requests_to("GET", r"/v25\.0/\d+")
            if request.query.get("fields") == "status_code,status"]


# --- Facebook Login ---------------------------------------------------------------------------------------

def test_facebook_consent_and_the_long_lived_user_token(fake, http):
    url = run(facebook_side.begin(http, fb_app(), FB_REDIRECT, "state-1", None, {}))
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/v25.0/dialog/oauth"
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    assert query["scope"] == ",".join(FB_SCOPES) and query["client_id"] == "1234567890"
    code = follow_consent(url)["code"]
    tokens = run(facebook_side.exchange_code(http, fb_app(), code, FB_REDIRECT, None, {}))
    assert fake.tokens[tokens.access_token]["kind"] == "fb-user"
    assert (tokens.refresh_token, tokens.expires_in) == (None, None)
    exchanges = fake.requests_to("GET", "/v25.0/oauth/access_token")
    assert [request.query.get("grant_type") for request in exchanges] == [None, "fb_exchange_token"]
    connected = run(facebook_side.connect(Channel("", "", {"accessToken": tokens.access_token}, None, http)))
    assert connected.account.name == "Ada Lovelace"


def test_facebook_connect_refuses_a_consent_without_publishing_permission(fake, http):
    fake.granted_fb.remove("instagram_content_publish")
    channel = Channel("", "", {"accessToken": fake.fb_user_token()}, None, http)
    with pytest.raises(Rejected, match="instagram_content_publish"):
        run(facebook_side.connect(channel))


def test_the_choice_lists_only_pages_with_an_instagram_account_and_keeps_the_page(fake, http):
    channel = Channel("c", "Ada Lovelace", {"accessToken": fake.fb_user_token()}, None, http)
    channel.app = fb_app()
    choices = run(facebook_side.step_choices(channel))
    assert choices == [{"id": IG_ACCOUNT, "name": "Analytical Engines",
                        "picture": "https://scontent.example/engines.jpg"}]
    connected = run(facebook_side.choose(channel, IG_ACCOUNT))
    assert connected.account.internal_id == IG_ACCOUNT and connected.account.profile == "analytical_engines"
    assert connected.session["page"] == "1110001" and connected.session["instagram"] == IG_ACCOUNT
    with pytest.raises(Rejected):
        run(facebook_side.choose(channel, "1110002"))


def test_calls_carry_the_bearer_token_and_appsecret_proof_never_the_token_in_the_url(fake, http, origin):
    channel = facebook_channel(fake, http)
    run(facebook_side.publish(channel, post(items=(media(origin, "a.jpg", "image/jpeg", "image"),)), None))
    for request in fake.requests_to("POST", r"/v25\.0/.*"):
        assert request.headers["authorization"].startswith("Bearer EAAP") and "access_token" not in request.query
        assert len(request.query["appsecret_proof"]) == 64


# --- the container flow (Facebook side) -------------------------------------------------------------------

def test_a_reel_waits_for_processing_then_publishes_and_takes_a_first_comment(fake, http, origin):
    channel = facebook_channel(fake, http)
    clip = media(origin, "clip.mp4", "video/mp4", "video")
    release = run(facebook_side.publish(channel, post(items=(clip,)), None))
    assert fake.fetched == {} and list(fake.uploaded.values()) == [mp4_file(2048)]  # sent, not pulled
    [published] = fake.published
    assert published["type"] == "REELS" and published["fields"]["caption"] == "Engines at work #rustiz"
    assert published["fields"]["upload_type"] == "resumable" and "video_url" not in published["fields"]
    assert len(status_reads(fake)) == 3  # IN_PROGRESS twice, then FINISHED
    assert release.id == published["id"] and release.url.startswith("https://www.instagram.com/p/")
    comment = run(facebook_side.publish(channel, post("<p>Sound on!</p>", part=1), release))
    assert fake.comments == [{"id": comment.id, "media": release.id, "message": "Sound on!"}]
    second = run(facebook_side.publish(channel, post("<p>And more</p>", part=2), comment))
    assert fake.comments[-1]["media"] == release.id and second.url == release.url


def test_a_processing_error_fails_the_post_in_instagrams_words(fake, http, origin):
    fake.next_processing_error = "Error: Media upload has failed with error code 2207026"
    with pytest.raises(Rejected) as refused:
        run(facebook_side.publish(facebook_channel(fake, http), post(items=(media(origin, "clip.mp4", "video/mp4",
                                                                                   "video"),)), None))
    assert "2207026" in refused.value.message and refused.value.item == "the media"
    assert fake.published == []


def test_a_media_fetch_failure_is_retried(fake, http, origin):
    missing = MediaFile(f"{origin.url}/uploads/gone.mp4", "/nonexistent", "video/mp4", "video", "", "gone.mp4")
    with pytest.raises(Retryable, match="2207052"):  # (standalone: Instagram downloads videos there)
        run(standalone.publish(standalone_channel(fake, http), post(items=(missing,)), None))


def test_a_picture_instagram_cannot_download_is_retried_and_a_checkpoint_needs_the_owner(fake, http, origin):
    missing = MediaFile(f"{origin.url}/uploads/gone.jpg", "/nonexistent", "image/jpeg", "image", "", "gone.jpg")
    with pytest.raises(Retryable, match="could not download the media from FRONTEND_URL"):
        run(facebook_side.publish(facebook_channel(fake, http), post(items=(missing,)), None))
    fake.fail_next("POST", r"/v25\.0/\d+/media", 400, graph_error(
        "You cannot access the app till you log in to www.instagram.com and follow the instructions given", 190))
    with pytest.raises(NeedsReconnect, match="Log in at instagram.com"):
        run(facebook_side.publish(facebook_channel(fake, http), post(items=(media(origin, "a.jpg", "image/jpeg",
                                                                                   "image"),)), None))


def test_processing_that_never_ends_is_bounded(fake, http, origin, monkeypatch):
    fake.processing_polls = 10**6
    monkeypatch.setattr(instagram_shared, "INSTAGRAM_MOST_POLLS", 4)
    with pytest.raises(Retryable, match="still processing"):
        run(facebook_side.publish(facebook_channel(fake, http), post(items=(media(origin, "clip.mp4", "video/mp4",
                                                                                   "video"),)), None))
    assert len(status_reads(fake)) == 4 and fake.published == []


def test_a_carousel_of_a_picture_and_a_video(fake, http, origin):
    fake.processing_polls = 1
    items = (media(origin, "a.jpg", "image/jpeg", "image"), media(origin, "clip.mp4", "video/mp4", "video"))
    run(facebook_side.publish(facebook_channel(fake, http),
                              post(items=items, collaborators=[{"label": "@babbage"}]), None))
    [published] = fake.published
    assert published["type"] == "CAROUSEL" and published["fields"]["collaborators"] == '["babbage"]'
    assert [child.get("media_type", "IMAGE") for child in published["children"]] == ["IMAGE", "VIDEO"]
    assert all(child["is_carousel_item"] == "true" and "caption" not in child for child in published["children"])


def test_a_story_and_a_trial_reel(fake, http, origin):
    channel = facebook_channel(fake, http)
    run(facebook_side.publish(channel, post(items=(media(origin, "a.jpg", "image/jpeg", "image"),),
                                            post_type="story"), None))
    assert fake.published[-1]["type"] == "STORIES" and "caption" not in fake.published[-1]["fields"]
    run(facebook_side.publish(channel, post(items=(media(origin, "clip.mp4", "video/mp4", "video"),),
                                            is_trial_reel=True, graduation_strategy="SS_PERFORMANCE"), None))
    assert fake.published[-1]["fields"]["trial_params"] == '{"graduation_strategy": "SS_PERFORMANCE"}'


def test_a_png_picture_is_refused_before_anything_is_sent(fake, http, origin):
    picture = media(origin, "a.png", "image/png", "image")
    with pytest.raises(Rejected, match="JPEG"):
        run(facebook_side.publish(facebook_channel(fake, http), post(items=(picture,)), None))
    assert fake.requests_to("POST", r".*") == []
    problem = facebook_side.post_problem({}, [{"content": "x", "image": [{"path": "https://x/a.png"}]}], {})
    assert "JPEG" in problem


def test_a_dead_token_needs_a_reconnect_and_throttling_is_retried(fake, http, origin):
    channel = facebook_channel(fake, http)
    picture = (media(origin, "a.jpg", "image/jpeg", "image"),)
    fake.fail_next("POST", r"/v25\.0/\d+/media", 400, THROTTLED,
                   {"X-Business-Use-Case-Usage": '{"1110001": [{"type": "instagram", "call_count": 100, '
                                                 '"estimated_time_to_regain_access": 2}]}'})
    with pytest.raises(Retryable) as throttled:
        run(facebook_side.publish(channel, post(items=picture), None))
    assert throttled.value.after == 120 and "Application request limit reached" in throttled.value.message
    fake.fail_next("POST", r"/v25\.0/\d+/media", 400, DEAD_TOKEN)
    with pytest.raises(NeedsReconnect, match="Session has expired"):
        run(facebook_side.publish(channel, post(items=picture), None))


def test_a_reconnect_reads_the_page_token_again(fake, http, origin):
    channel = facebook_channel(fake, http)
    picture = (media(origin, "a.jpg", "image/jpeg", "image"),)
    run(facebook_side.publish(channel, post(items=picture), None))
    first = channel.session["pageToken"]
    channel.credentials = {"accessToken": fake.fb_user_token()}  # a reconnect: a new user token
    fake.expire(first)
    run(facebook_side.publish(channel, post(items=picture), None))
    assert channel.session["pageToken"] != first and len(fake.published) == 2


def test_insights_and_the_audio_search(fake, http, origin):
    channel = facebook_channel(fake, http)
    release = run(facebook_side.publish(channel, post(items=(media(origin, "a.jpg", "image/jpeg", "image"),)), None))
    totals = {item["label"]: item["data"][0]["total"] for item in run(facebook_side.channel_analytics(channel, 90))}
    assert totals["Followers"] == "1024" and totals["Reach"] == "100" and totals["Saves"] == "600"
    figures = {item["label"]: item["data"][0]["total"] for item in run(facebook_side.post_analytics(channel, release, 7))}
    assert set(figures) == {"Views", "Reach", "Likes", "Comments", "Saves", "Shares"}
    [audio] = run(facebook_side.run_tool(channel, "audioSearch", {"q": "drive"}))
    assert audio["id"] == "18000000000000001" and audio["title"] == "Late Night drive"
    request = fake.requests_to("GET", "/v25.0/ig_audio")[-1]
    assert request.query["user_id"] == IG_ACCOUNT and request.headers["authorization"].startswith("Bearer EAAL")
    reel = (media(origin, "clip.mp4", "video/mp4", "video"),)
    run(facebook_side.publish(channel, post(items=reel, audio={"id": audio["id"], "audio_volume": 80}), None))
    assert fake.published[-1]["fields"]["audio_configuration"] == '{"audio_id": "18000000000000001", "audio_volume": 80}'


# --- Instagram Login (standalone) -------------------------------------------------------------------------

def test_instagram_login_gives_a_long_lived_token_that_is_its_own_refresh_token(fake, http):
    url = run(standalone.begin(http, ig_app(), IG_REDIRECT, "state-2", None, {}))
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/oauth/authorize"
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    assert query["scope"] == ("instagram_business_basic,instagram_business_content_publish,"
                              "instagram_business_manage_comments,instagram_business_manage_insights")
    tokens = run(standalone.exchange_code(http, ig_app(), follow_consent(url)["code"], IG_REDIRECT, None, {}))
    assert fake.tokens[tokens.access_token]["kind"] == "ig" and tokens.refresh_token == tokens.access_token
    assert tokens.expires_in == 5183944 and standalone.refresh_ahead_seconds == 30 * 86400
    [exchange] = fake.requests_to("POST", "/oauth/access_token")
    assert exchange.form()["grant_type"] == "authorization_code" and exchange.form()["redirect_uri"] == IG_REDIRECT
    connected = run(standalone.connect(Channel("", "", {"accessToken": tokens.access_token}, None, http)))
    assert connected.account.internal_id == IG_STANDALONE["user_id"] and connected.account.profile == "ada_on_ig"
    assert connected.session == {"instagram": IG_STANDALONE["user_id"]}


def test_instagram_login_refusals(fake, http):
    with pytest.raises(Rejected, match="Error validating verification code"):
        run(standalone.exchange_code(http, ig_app(), "AQunknown", IG_REDIRECT, None, {}))
    fake.granted_ig.remove("instagram_business_content_publish")
    url = run(standalone.begin(http, ig_app(), IG_REDIRECT, "state-2", None, {}))
    with pytest.raises(Rejected, match="instagram_business_content_publish"):
        run(standalone.exchange_code(http, ig_app(), follow_consent(url)["code"], IG_REDIRECT, None, {}))


def test_the_refresh_uses_ig_refresh_token_and_a_dead_token_is_refused(fake, http):
    token = fake.ig_token()
    refreshed = run(standalone.refresh_tokens(http, ig_app(), token))
    request = fake.requests_to("GET", "/refresh_access_token")[-1]
    assert request.query == {"grant_type": "ig_refresh_token", "access_token": token}
    assert refreshed.access_token == refreshed.refresh_token and refreshed.access_token in fake.tokens
    fake.expire(token)
    with pytest.raises(TokenRefused, match="Session has expired"):
        run(standalone.refresh_tokens(http, ig_app(), token))


def test_standalone_publishes_on_graph_instagram_com_without_appsecret_proof(fake, http, origin):
    channel = standalone_channel(fake, http)
    clip = media(origin, "clip.mp4", "video/mp4", "video")
    release = run(standalone.publish(channel, post(items=(clip,)), None))
    assert fake.fetched[clip.url] and fake.published[0]["type"] == "REELS"
    assert fake.requests_to("POST", f"/v25.0/{IG_STANDALONE['user_id']}/media")
    assert all("appsecret_proof" not in request.query for request in fake.requests)
    run(standalone.publish(channel, post("<p>First!</p>", part=1), release))
    assert fake.comments[0]["media"] == release.id
    totals = {item["label"] for item in run(standalone.channel_analytics(channel, 7))}
    assert {"Followers", "Reach", "Views"} <= totals
    problem = standalone.post_problem({}, [{"content": "x", "image": [{"path": "https://x/c.mp4"}]}],
                                      {"audio": {"id": "1"}})
    assert "Facebook Business" in problem


def test_standalone_dead_token_needs_reconnect(fake, http, origin):
    channel = standalone_channel(fake, http)
    fake.expire(channel.credentials["accessToken"])
    with pytest.raises(NeedsReconnect, match="code 190"):
        run(standalone.publish(channel, post(items=(media(origin, "a.jpg", "image/jpeg", "image"),)), None))


def test_both_default_to_metas_own_origins(monkeypatch):
    for name in ("RUSTIZ_INSTAGRAM_AUTH_URL", "RUSTIZ_INSTAGRAM_API_URL", "RUSTIZ_INSTAGRAM_STANDALONE_AUTH_URL",
                 "RUSTIZ_INSTAGRAM_STANDALONE_API_URL"):
        monkeypatch.delenv(name, raising=False)
    assert (facebook_side.auth_base(), facebook_side.api_base()) == ("https://www.facebook.com",
                                                                     "https://graph.facebook.com")
    assert (standalone.auth_base(), standalone.token_base(), standalone.api_base()) == (
        "https://www.instagram.com", "https://api.instagram.com", "https://graph.instagram.com")
    assert "{FRONTEND_URL}/integrations/social/instagram-standalone" in standalone.operator_guide
    assert "{FRONTEND_URL}/integrations/social/instagram" in facebook_side.operator_guide
    assert standalone.needs_public_media and not facebook_side.needs_public_media
    assert facebook_side.pulls_media([{"image": [{"path": "x"}]}], {})


# --- videos through the resumable upload (rupload; Facebook Login only) -------------------------------------

def rupload_requests(fake) -> list:
    return fake.requests_to("POST", r"/ig-api-upload/v25\.0/\d+")


def test_videos_go_up_through_rupload_with_the_oauth_header_offset_and_file_size(fake, http, origin):
    channel = facebook_channel(fake, http)
    clip = media(origin, "clip.mp4", "video/mp4", "video")
    run(facebook_side.publish(channel, post(items=(clip,), post_type="story"), None))
    run(facebook_side.publish(channel, post(items=(media(origin, "a.jpg", "image/jpeg", "image"), clip)), None))
    story, carousel = fake.published
    assert story["type"] == "STORIES" and story["fields"]["upload_type"] == "resumable"
    assert [child["media_type"] for child in carousel["children"][1:]] == ["VIDEO"]
    assert carousel["children"][1]["upload_type"] == "resumable" and "image_url" in carousel["children"][0]
    assert fake.fetched == {f"{origin.url}/uploads/2026/12/03/a.jpg": jpeg_file()}  # only the picture is pulled
    uploads = rupload_requests(fake)
    assert len(uploads) == 2
    for request in uploads:
        token = request.headers["authorization"].removeprefix("OAuth ")
        assert fake.tokens[token]["kind"] == "page" and request.headers["offset"] == "0"
        assert request.headers["file_size"] == "2048" and request.body == mp4_file(2048) and request.query == {}


def test_the_upload_hosts_refusals_in_its_own_words(fake, http, origin):
    channel = facebook_channel(fake, http)
    reel = post(items=(media(origin, "clip.mp4", "video/mp4", "video"),))
    upload = r"/ig-api-upload/v25\.0/\d+"
    fake.fail_next("POST", upload, 500, {"debug_info": {"retriable": True, "type": "UploadTimeout",
                                                        "message": "Upload timed out, please retry"}})
    with pytest.raises(Retryable, match="Upload timed out, please retry") as retried:
        run(facebook_side.publish(channel, reel, None))
    assert retried.value.item == "the media"
    fake.fail_next("POST", upload, 400, {"debug_info": {"retriable": False, "type": "ProcessingFailedError",
                                                        "message": "Request processing failed"}})
    with pytest.raises(Rejected, match="Request processing failed: ProcessingFailedError"):
        run(facebook_side.publish(channel, reel, None))
    fake.fail_next("POST", upload, 401, {"debug_info": {"retriable": False, "type": "OAuthException",
                                                        "message": "Invalid OAuth access token."}})
    with pytest.raises(NeedsReconnect, match="Invalid OAuth access token"):
        run(facebook_side.publish(channel, reel, None))
    fake.fail_next("POST", upload, 200, "<html>proxy</html>", {"Content-Type": "text/html"})
    with pytest.raises(Retryable, match="did not confirm the upload"):
        run(facebook_side.publish(channel, reel, None))
    fake.fail_next("POST", upload, 502, "<html>Bad gateway</html>", {"Content-Type": "text/html"})
    with pytest.raises(Retryable) as gateway:
        run(facebook_side.publish(channel, reel, None))
    assert "Bad gateway" not in gateway.value.message  # an unknown body is never quoted
    (origin.folder / "clip.mp4").write_bytes(jpeg_file())  # not a video at all: Instagram's words
    with pytest.raises(Rejected, match="not a video"):
        run(facebook_side.publish(channel, reel, None))
    assert fake.published == []
    run(facebook_side.publish(channel, post(items=(media(origin, "a.jpg", "image/jpeg", "image"),)), None))
    assert len(fake.published) == 1  # and nothing stuck: the next post goes out


def test_an_upload_address_off_metas_upload_host_never_gets_the_token(fake, http, origin):
    channel = facebook_channel(fake, http)
    reel = post(items=(media(origin, "clip.mp4", "video/mp4", "video"),))
    for uri in ("https://rupload.facebook.com.evil.example/ig-api-upload/v25.0/1", None):
        fake.fail_next("POST", r"/v25\.0/\d+/media$", 200, {"id": "17900000000000999", **({"uri": uri} if uri else {})})
        with pytest.raises(Retryable, match="upload host"):
            run(facebook_side.publish(channel, reel, None))
    assert rupload_requests(fake) == [] and fake.published == []


def test_an_oversize_video_is_refused_before_anything_is_sent(fake, http, origin, monkeypatch):
    monkeypatch.setitem(instagram_shared.VIDEO_BYTES, "REELS", 1000)
    with pytest.raises(Rejected, match="at most 0 MB") as refused:
        run(facebook_side.publish(facebook_channel(fake, http),
                                  post(items=(media(origin, "clip.mp4", "video/mp4", "video"),)), None))
    assert refused.value.item == "the media"
    assert fake.requests_to("POST", r".*") == []


def test_a_video_post_needs_no_public_frontend_url_a_picture_does(monkeypatch):
    for name in ("RUSTIZ_INSTAGRAM_API_URL", "RUSTIZ_INSTAGRAM_STANDALONE_API_URL"):
        monkeypatch.delenv(name, raising=False)
    video = [{"content": "<p>x</p>", "image": [{"path": "http://localhost:5000/uploads/2026/12/03/clip.mp4"}]}]
    picture = [{"content": "<p>x</p>", "image": [{"path": "http://localhost:5000/uploads/2026/12/03/a.jpg"}]}]
    assert facebook_side.media_refusal(video, {}, "http://localhost:5000") is None
    assert "FRONTEND_URL" in facebook_side.media_refusal(picture, {}, "http://localhost:5000")
    assert "FRONTEND_URL" in standalone.media_refusal(video, {}, "http://localhost:5000")  # Instagram Login pulls
