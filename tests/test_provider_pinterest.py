"""The pinterest provider object against a fake Pinterest, over real sockets: the consent URL, the code
exchange and refresh (and their refusals), the account, the boards tool, pins with one picture, a carousel
and a video with its cover, and how each kind of error answer is classified."""
from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.pinterest import FakePinterest
from rustiz_features.publishers import provider_for
from rustiz_features.publishers import pinterest as pinterest_module
from rustiz_features.publishers.base import (
    Channel, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from support import follow_consent, gif_file, jpeg_file, media_file, mp4_file, png_file, run

REDIRECT = "https://rustiz.example/integrations/social/pinterest"
provider = provider_for("pinterest")


fake = fake_fixture(FakePinterest)


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_id, fake.client_secret)


@pytest.fixture
def channel(fake, http) -> Channel:
    return Channel("channel-1", "ada_bakes", fake.credentials(), None, http)


def post(html_text: str = "<p>Sourdough, step by step</p>", media: tuple = (), **settings) -> OutgoingPost:
    return OutgoingPost("post-1", html_text, media, {"board": "549755885175", **settings}, 0, "key-1",
                        "2026-12-03T13:00:00Z")


def connected_tokens(fake, http, app):
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    callback = follow_consent(url)
    return run(provider.exchange_code(http, app, callback["code"], REDIRECT, None, {}))


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_consent_url_is_pinterests_with_the_scopes_comma_separated_and_no_pkce(fake, http, app):
    assert provider.pkce is False and provider.between_steps is False and provider.threads is False
    assert provider.app_variables == ("PINTEREST_CLIENT_ID", "PINTEREST_CLIENT_SECRET")
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/oauth/"
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    assert query == {"response_type": "code", "client_id": fake.client_id, "redirect_uri": REDIRECT,
                     "state": "state-1", "scope": "boards:read,boards:write,pins:read,pins:write,user_accounts:read"}


def test_pinterests_own_origins_are_the_defaults_without_overrides(monkeypatch):
    monkeypatch.delenv("RUSTIZ_PINTEREST_AUTH_URL", raising=False)
    monkeypatch.delenv("RUSTIZ_PINTEREST_API_URL", raising=False)
    assert (provider.auth_base(), provider.api_base()) == ("https://www.pinterest.com", "https://api.pinterest.com")
    assert "{FRONTEND_URL}/integrations/social/pinterest" in provider.operator_guide


def test_consent_then_the_code_exchange_gives_tokens_with_http_basic(fake, http, app):
    tokens = connected_tokens(fake, http, app)
    assert tokens.access_token in fake.access_tokens and tokens.refresh_token in fake.refresh_tokens
    assert tokens.expires_in == 2592000
    [request] = fake.requests_to("POST", "/v5/oauth/token")
    assert request.headers["authorization"] == "Basic " + base64.b64encode(
        f"{fake.client_id}:{fake.client_secret}".encode()).decode()
    assert request.form()["grant_type"] == "authorization_code" and request.form()["redirect_uri"] == REDIRECT
    assert "code_verifier" not in request.form()


def test_a_cancelled_consent_comes_back_with_access_denied(fake, http, app):
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    assert follow_consent(url, "deny") == {"error": "access_denied", "state": "state-1"}


def test_a_used_code_is_token_refused(fake, http, app):
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    code = follow_consent(url)["code"]
    run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    with pytest.raises(TokenRefused) as refused:
        run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    assert refused.value.status == 401 and "The authorization grant is invalid (code 283)" in refused.value.message


def test_a_refresh_replaces_the_refresh_token_when_pinterest_sends_a_new_one(fake, http, app):
    first = connected_tokens(fake, http, app)
    refreshed = run(provider.refresh_tokens(http, app, first.refresh_token))
    assert refreshed.access_token in fake.access_tokens and refreshed.access_token != first.access_token
    assert refreshed.refresh_token in fake.refresh_tokens and refreshed.refresh_token != first.refresh_token
    assert fake.requests_to("POST", "/v5/oauth/token")[-1].form() == {
        "grant_type": "refresh_token", "refresh_token": first.refresh_token}


def test_a_refresh_without_a_new_refresh_token_keeps_the_stored_one(fake, http, app):
    fake.rotate_refresh_tokens = False  # a legacy refresh token: the answer carries an access token only
    first = connected_tokens(fake, http, app)
    refreshed = run(provider.refresh_tokens(http, app, first.refresh_token))
    assert refreshed.refresh_token is None and refreshed.access_token in fake.access_tokens
    assert run(provider.refresh_tokens(http, app, first.refresh_token)).access_token in fake.access_tokens


def test_a_dead_refresh_token_is_token_refused(fake, http, app):
    with pytest.raises(TokenRefused) as refused:
        run(provider.refresh_tokens(http, app, "pinr_revoked"))
    assert "The authorization grant is invalid" in refused.value.message


def test_a_wrong_app_secret_needs_reconnect_but_is_not_a_dead_grant(fake, http):
    first = connected_tokens(fake, http, AppCredentials(fake.client_id, fake.client_secret))
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.refresh_tokens(http, AppCredentials(fake.client_id, "wrong"), first.refresh_token))
    assert not isinstance(refused.value, TokenRefused)
    assert "Authentication failed. (code 2)" in refused.value.message


def test_a_503_on_refresh_is_retryable(fake, http, app):
    first = connected_tokens(fake, http, app)
    fake.fail_next("POST", "/v5/oauth/token", 503, {"code": 0, "message": "Something went wrong on our end"},
                   {"Retry-After": "30"})
    with pytest.raises(Retryable) as passing:
        run(provider.refresh_tokens(http, app, first.refresh_token))
    assert passing.value.after == 30.0
    assert run(provider.refresh_tokens(http, app, first.refresh_token)).access_token in fake.access_tokens


# --- the account and its boards ----------------------------------------------------------------------------

def test_connect_reads_the_account_by_its_stable_id(fake, channel):
    connected = run(provider.connect(channel))
    assert connected.account == ("870462240001", "ada_bakes", "ada_bakes", f"{fake.url}/images/ada_60x60.jpg")
    assert connected.session is None
    [request] = fake.requests_to("GET", "/v5/user_account")
    assert request.headers["authorization"] == f"Bearer {channel.credentials['accessToken']}"


def test_an_expired_token_needs_reconnect(fake, http):
    channel = Channel("channel-1", "ada_bakes", {"accessToken": "pina_expired"}, None, http)
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.connect(channel))
    assert refused.value.status == 401 and "Authentication failed. (code 2)" in refused.value.message


def test_the_boards_tool_lists_every_page_in_postizs_shape(fake, channel):
    fake.boards += [{"id": str(600000000000 + number), "name": f"Board {number}", "privacy": "PUBLIC"}
                    for number in range(300)]
    boards = run(provider.run_tool(channel, "boards", {}))
    assert boards[:2] == [{"name": "Recipes", "id": "549755885175"}, {"name": "Travel", "id": "549755885176"}]
    assert len(boards) == 302 and all(set(board) == {"name", "id"} for board in boards)
    pages = fake.requests_to("GET", "/v5/boards")
    assert [request.query.get("bookmark") for request in pages] == [None, "250"]
    assert all(request.query["page_size"] == "250" for request in pages)


# --- pins ------------------------------------------------------------------------------------------------

def test_one_picture_is_an_image_base64_pin_with_its_title_link_and_alt_text(fake, channel, tmp_path):
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png", alt="A loaf on a board")
    release = run(provider.publish(channel, post("<p>Sourdough, <strong>step</strong> by step</p>", (picture,),
                                                 title="Sourdough", link="https://ada.example/bread"), None))
    [pin] = fake.published
    assert (release.id, release.url) == (pin["id"], f"{fake.url}/pin/{pin['id']}")
    assert (pin["board_id"], pin["title"], pin["link"], pin["description"], pin["alt_text"]) == (
        "549755885175", "Sourdough", "https://ada.example/bread", "Sourdough, step by step", "A loaf on a board")
    assert pin["media_source"]["source_type"] == "image_base64" and pin["media_source"]["content_type"] == "image/png"
    assert fake.pin_images(pin) == [png_file()]
    assert pin["dominant_color"] is None  # only sent when the post sets it


def test_two_to_five_pictures_are_one_carousel_pin(fake, channel, tmp_path):
    pictures = (media_file(tmp_path, png_file(), "one.png", "image/png"),
                media_file(tmp_path, jpeg_file(), "two.jpg", "image/jpeg"),
                media_file(tmp_path, png_file(2, 2), "three.png", "image/png"))
    run(provider.publish(channel, post(media=pictures, dominant_color="#6E7874"), None))
    [pin] = fake.published
    assert pin["media_source"]["source_type"] == "multiple_image_base64"
    assert [item["content_type"] for item in pin["media_source"]["items"]] == ["image/png", "image/jpeg", "image/png"]
    assert fake.pin_images(pin) == [png_file(), jpeg_file(), png_file(2, 2)]
    assert pin["dominant_color"] == "#6E7874" and pin["alt_text"] is None


def test_a_video_is_uploaded_processed_and_pinned_with_the_picture_as_its_cover(fake, channel, tmp_path):
    fake.processing_polls = 2
    video = media_file(tmp_path, mp4_file(4096), "clip.mp4", "video/mp4", kind="video")
    cover = media_file(tmp_path, jpeg_file(), "cover.jpg", "image/jpeg")
    run(provider.publish(channel, post(media=(video, cover)), None))
    [pin] = fake.published
    source = pin["media_source"]
    assert source["source_type"] == "video_id" and source["cover_image_content_type"] == "image/jpeg"
    assert fake.media[source["media_id"]]["file"] == mp4_file(4096)
    assert fake.pin_images(pin) == [jpeg_file()]
    assert len(fake.requests_to("GET", r"/v5/media/\d+")) == 3  # processing, processing, succeeded
    [upload] = fake.requests_to("POST", "/upload-bucket/")
    assert "authorization" not in upload.headers  # the bucket is signed by its form fields, not our token


def test_a_refused_bucket_upload_is_retryable_not_a_reconnect(fake, channel, tmp_path):
    fake.fail_next("POST", "/upload-bucket/", 403, "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>",
                   {"Content-Type": "application/xml"})
    video = media_file(tmp_path, mp4_file(4096), "clip.mp4", "video/mp4", kind="video")
    cover = media_file(tmp_path, png_file(), "cover.png", "image/png")
    with pytest.raises(Retryable) as refused:
        run(provider.publish(channel, post(media=(video, cover)), None))
    assert refused.value.item == "the video" and "AccessDenied" not in refused.value.message
    assert fake.published == []
    run(provider.publish(channel, post(media=(video, cover)), None))
    assert len(fake.requests_to("POST", "/v5/media")) == 2 and len(fake.published) == 1


def test_a_video_pinterest_cannot_process_is_rejected(fake, channel, tmp_path):
    fake.video_fails = True
    video = media_file(tmp_path, mp4_file(4096), "clip.mp4", "video/mp4", kind="video")
    cover = media_file(tmp_path, png_file(), "cover.png", "image/png")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(media=(video, cover)), None))
    assert "failed" in refused.value.message and refused.value.item == "the video"
    assert fake.published == []


def test_a_video_still_processing_after_the_wait_is_retryable_and_nothing_is_pinned(fake, channel, tmp_path,
                                                                                    monkeypatch):
    monkeypatch.setattr(pinterest_module, "PINTEREST_MEDIA_WAIT_SECONDS", 0.6)
    fake.processing_polls = 1000
    video = media_file(tmp_path, mp4_file(4096), "clip.mp4", "video/mp4", kind="video")
    cover = media_file(tmp_path, png_file(), "cover.png", "image/png")
    with pytest.raises(Retryable) as waiting:
        run(provider.publish(channel, post(media=(video, cover)), None))
    assert "still processing" in waiting.value.message and fake.published == []
    assert 2 <= len(fake.requests_to("GET", r"/v5/media/\d+")) <= 4


def test_a_gif_is_refused_before_anything_is_sent(fake, channel, tmp_path):
    animation = media_file(tmp_path, gif_file(), "dance.gif", "image/gif")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(media=(animation,)), None))
    assert "JPEG and PNG" in refused.value.message and fake.requests == []
    assert provider.post_problem({}, [{"content": "<p>x</p>", "image": [{"path": "https://x.example/u/dance.gif"}]}],
                                 {}) == "Pinterest takes JPEG and PNG pictures only, not .gif"
    assert provider.post_problem({}, [{"content": "<p>x</p>", "image": [{"path": "https://x.example/u/a.png"},
                                                                       {"path": "https://x.example/u/b.mp4"}]}], {}) is None


def test_a_pin_without_a_board_is_rejected_before_anything_is_sent(fake, channel, tmp_path):
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png")
    with pytest.raises(Rejected):
        run(provider.publish(channel, post(media=(picture,), board=""), None))
    assert fake.requests == []


def test_pinterests_error_words_are_passed_through(fake, channel, tmp_path):
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(media=(picture,), board="999"), None))
    assert refused.value.status == 404 and refused.value.message == "Board not found. (code 40)"
    assert '"code":40' in refused.value.body


def test_an_unknown_error_body_is_described_not_quoted(fake, channel, tmp_path):
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png")
    fake.fail_next("POST", "/v5/pins", 400, "<html>a proxy's secret page</html>", {"Content-Type": "text/html"})
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(media=(picture,)), None))
    assert "secret" not in refused.value.message and refused.value.body == ""


def test_a_trial_app_is_rejected_with_pinterests_words_not_sent_to_reconnect(fake, channel, tmp_path):
    fake.trial_access = True
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(media=(picture,)), None))
    assert not isinstance(refused.value, NeedsReconnect) and refused.value.status == 403
    assert "api-sandbox.pinterest.com" in refused.value.message and "(code 29)" in refused.value.message


def test_a_429_is_retryable_after_the_rate_limit_reset(fake, channel, tmp_path):
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png")
    fake.fail_next("POST", "/v5/pins", 429, {"code": 8, "message": "You have exceeded your rate limit. Try again later."},
                   {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "42"})
    with pytest.raises(Retryable) as throttled:
        run(provider.publish(channel, post(media=(picture,)), None))
    assert throttled.value.after == 42.0 and throttled.value.status == 429
    assert "You have exceeded your rate limit" in throttled.value.message
    assert channel.throttled_for == 42.0
    assert run(provider.publish(channel, post(media=(picture,)), None)).id == fake.published[0]["id"]


def test_a_401_while_pinning_needs_reconnect(fake, channel, tmp_path):
    fake.access_tokens.clear()
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png")
    with pytest.raises(NeedsReconnect):
        run(provider.publish(channel, post(media=(picture,)), None))


def test_a_pin_whose_answer_is_lost_is_outcome_unknown(fake, channel, tmp_path):
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png")
    fake.drop_next("POST", "/v5/pins", after_handling=True)
    with pytest.raises(OutcomeUnknown):
        run(provider.publish(channel, post(media=(picture,)), None))
    assert len(fake.published) == 1 and provider.resend_is_safe is False


def test_analytics_are_the_account_s_counts_and_the_pin_s_daily_metrics(fake, channel, tmp_path):
    picture = media_file(tmp_path, png_file(), "bread.png", "image/png")
    release = run(provider.publish(channel, post("<p>Counted</p>", (picture,)), None))
    figures = run(provider.post_analytics(channel, release, 7))
    impressions = next(item for item in figures if item["label"] == "Impressions")
    assert [point["total"] for point in impressions["data"]] == ["10", "20", "30", "40", "50", "60", "70"]
    assert impressions["percentageChange"] == 600.0
    assert {item["label"] for item in figures} == {"Impressions", "Saves", "Pin clicks", "Outbound clicks"}
    assert len(run(provider.post_analytics(channel, release, 365))[0]["data"]) == 90  # Pinterest keeps 90 days
    counts = {item["label"]: item["data"][0]["total"] for item in run(provider.channel_analytics(channel, 30))}
    assert counts == {"Followers": "310", "Pins": "1", "Monthly views": "12000"}
