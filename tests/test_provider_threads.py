"""The Threads provider driven directly against the fake (tests/fakes/threads.py), over real sockets: the
authorization URL, the code -> short-lived -> long-lived exchange and th_refresh_token, the profile, text,
image, video and carousel containers polled until processed then published, replies, Threads downloading
the media from their URLs, Graph's error codes (190, throttling, permissions), insights."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.threads import EXPIRED_TOKEN, THROTTLED, FakeThreads, graph_error
from rustiz_features.http_client import HttpReply
from rustiz_features.publishers import threads as threads_module
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from rustiz_features.publishers.threads import PROVIDER
from support import FakeOrigin, follow_consent, jpeg_file, mp4_file, png_file, run

REDIRECT = "https://rustiz.example/integrations/social/threads"
CONTAINERS = r"/v1.0/\w+/threads"


fake = fake_fixture(FakeThreads)


@pytest.fixture
def origin():
    files = FakeOrigin()
    yield files
    files.close()


@pytest.fixture
def app(fake):
    return AppCredentials(fake.client_id, fake.client_secret)


@pytest.fixture
def channel(fake, http):
    channel = Channel("ch-1", "Ada on Threads", fake.credentials(), None, http)
    channel.session = {"username": "ada.lovelace"}
    return channel


def media_file(origin, tmp_path, name: str, data: bytes, content_type: str, kind: str, alt: str = "") -> MediaFile:
    origin.serve(f"/uploads/{name}", data, content_type)
    path = tmp_path / name
    path.write_bytes(data)
    return MediaFile(f"{origin.url}/uploads/{name}", str(path), content_type, kind, alt, name)


def outgoing(html: str, media: tuple = (), part: int = 0) -> OutgoingPost:
    return OutgoingPost("post-1", html, media, {}, part, f"key-{part}", "2026-12-03T12:00:00Z")


def begin(http, app) -> str:
    return run(PROVIDER.begin(http, app, REDIRECT, "state-123", None, {}))


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_authorization_url_asks_for_postiz_s_scopes_and_threads_delete_comma_separated(fake, http, app):
    parts = urlsplit(begin(http, app))
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{fake.url}/oauth/authorize"
    assert {name: values[-1] for name, values in parse_qs(parts.query).items()} == {
        "client_id": fake.client_id, "redirect_uri": REDIRECT, "response_type": "code", "state": "state-123",
        "scope": "threads_basic,threads_content_publish,threads_manage_replies,threads_manage_insights,"
                 "threads_delete"}  # (issue 28: threads_delete, so that a post can be deleted from rustiz too)
    assert PROVIDER.pkce is False and PROVIDER.app_variables == ("THREADS_APP_ID", "THREADS_APP_SECRET")
    assert PROVIDER.refresh_ahead_seconds == 30 * 86400
    assert "{FRONTEND_URL}/integrations/social/threads" in PROVIDER.operator_guide


def test_the_code_becomes_a_long_lived_token_that_is_its_own_refresh_token(fake, http, app):
    callback = follow_consent(begin(http, app))
    assert callback["state"] == "state-123"
    tokens = run(PROVIDER.exchange_code(http, app, callback["code"], REDIRECT, None, {}))
    [(short, long_lived)] = fake.exchanges
    assert tokens.access_token == long_lived and fake.tokens[long_lived]["kind"] == "long"
    assert tokens.refresh_token == long_lived and tokens.expires_in == 5183944
    assert tokens.extra == {"userId": fake.user_id}
    [request] = fake.requests_to("POST", "/oauth/access_token")
    assert request.form() == {"client_id": fake.client_id, "client_secret": fake.client_secret,
                              "grant_type": "authorization_code", "redirect_uri": REDIRECT, "code": callback["code"]}
    [exchange] = fake.requests_to("GET", "/access_token")
    assert exchange.query == {"grant_type": "th_exchange_token", "client_secret": fake.client_secret,
                              "access_token": short}
    assert PROVIDER.credentials_for(tokens, {}) == {"accessToken": long_lived, "userId": fake.user_id}


def test_a_declined_consent_and_a_used_code(fake, http, app):
    assert follow_consent(begin(http, app), "deny")["error"] == "access_denied"
    code = follow_consent(begin(http, app))["code"]
    run(PROVIDER.exchange_code(http, app, code, REDIRECT, None, {}))
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.exchange_code(http, app, code, REDIRECT, None, {}))
    assert refused.value.message.startswith("This authorization code has been used (code 100)")


def test_a_refresh_uses_th_refresh_token_and_a_dead_token_is_refused_for_good(fake, http, app):
    token = fake.credentials()["accessToken"]
    tokens = run(PROVIDER.refresh_tokens(http, app, token))
    assert fake.refreshes == [(token, tokens.access_token)]
    assert tokens.refresh_token == tokens.access_token and tokens.expires_in == 5183944
    assert fake.requests_to("GET", "/refresh_access_token")[0].query == {"grant_type": "th_refresh_token",
                                                                          "access_token": token}
    with pytest.raises(TokenRefused) as refused:
        run(PROVIDER.refresh_tokens(http, app, "THAA-unknown"))
    assert "Session has expired" in refused.value.message and "code 190, subcode 463" in refused.value.message


def test_a_refresh_refused_for_another_reason_leaves_the_token_to_a_later_try(fake, http, app):
    fake.fail_next("GET", "/refresh_access_token", 400, graph_error("Token is too new to be refreshed", 100))
    with pytest.raises(Retryable):
        run(PROVIDER.refresh_tokens(http, app, fake.credentials()["accessToken"]))


# --- the profile ---------------------------------------------------------------------------------------

def test_connect_reads_the_profile(fake, channel):
    connected = run(PROVIDER.connect(channel))
    assert connected.account.internal_id == fake.user_id
    assert (connected.account.name, connected.account.profile) == ("Ada Lovelace", "ada.lovelace")
    assert connected.account.picture == f"{fake.url}/pictures/ada.jpg"
    assert connected.session == {"username": "ada.lovelace"}
    assert fake.requests_to("GET", "/v1.0/me")[0].query["fields"] == "id,username,name,threads_profile_picture_url"


# --- publishing ----------------------------------------------------------------------------------------

def test_a_text_post_and_a_reply_to_it(fake, channel):
    release = run(PROVIDER.publish(channel, outgoing("<p>Hello Threads</p>"), None))
    reply = run(PROVIDER.publish(channel, outgoing("<p>and more</p>", part=1), release))
    first, second = fake.media()
    assert (first["media_type"], first["text"], first["reply_to_id"]) == ("TEXT", "Hello Threads", None)
    assert release == Release(first["id"], first["permalink"])
    assert (second["text"], second["reply_to_id"]) == ("and more", release.id) and reply.id == second["id"]
    status_checks = fake.requests_to("GET", r"/v1.0/\d+")
    assert status_checks[0].query["fields"] == "status,error_message"


def test_an_image_is_fetched_by_threads_from_its_url_with_its_alt_text(fake, channel, origin, tmp_path):
    image = media_file(origin, tmp_path, "cat.jpg", jpeg_file(), "image/jpeg", "image", "A cat")
    run(PROVIDER.publish(channel, outgoing("<p>A cat</p>", (image,)), None))
    [post] = fake.media()
    assert (post["media_type"], post["image_url"], post["alt_text"]) == ("IMAGE", image.url, "A cat")
    assert fake.fetched[image.url] == jpeg_file()


def test_a_video_is_published_once_processed(fake, channel, origin, tmp_path):
    fake.processing_polls = 3
    video = media_file(origin, tmp_path, "clip.mp4", mp4_file(4096), "video/mp4", "video")
    run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", (video,)), None))
    [post] = fake.media()
    assert (post["media_type"], post["video_url"]) == ("VIDEO", video.url)
    assert fake.fetched[video.url] == mp4_file(4096)
    assert len(fake.requests_to("GET", r"/v1.0/\d+")) == 4 + 1  # three IN_PROGRESS, FINISHED, the permalink


def test_a_carousel_is_items_then_a_carousel_container(fake, channel, origin, tmp_path):
    items = (media_file(origin, tmp_path, "a.png", png_file(2, 2), "image/png", "image"),
             media_file(origin, tmp_path, "b.jpg", jpeg_file(), "image/jpeg", "image"),
             media_file(origin, tmp_path, "c.mp4", mp4_file(2048), "video/mp4", "video"))
    run(PROVIDER.publish(channel, outgoing("<p>Three</p>", items), None))
    [post] = fake.media()
    assert post["media_type"] == "CAROUSEL" and post["text"] == "Three"
    assert [(child["media_type"], child["is_carousel_item"]) for child in post["children"]] == [
        ("IMAGE", "true"), ("IMAGE", "true"), ("VIDEO", "true")]
    assert set(fake.fetched) == {item.url for item in items}


def test_a_container_that_fails_processing_is_refused_in_threads_words(fake, channel, origin, tmp_path):
    fake.processing_error = "FAILED_PROCESSING_VIDEO"
    video = media_file(origin, tmp_path, "clip.mp4", mp4_file(1024), "video/mp4", "video")
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", (video,)), None))
    assert refused.value.message == "Threads could not process the video: FAILED_PROCESSING_VIDEO"
    assert fake.media() == [] and fake.requests_to("POST", r"/v1.0/\w+/threads_publish") == []


def test_a_video_threads_cannot_download_fails_with_its_reason(fake, channel, tmp_path):
    path = tmp_path / "clip.mp4"
    path.write_bytes(mp4_file(1024))
    video = MediaFile(f"{fake.url}/nowhere/clip.mp4", str(path), "video/mp4", "video", "", "clip.mp4")
    with pytest.raises(Rejected, match="FAILED_DOWNLOADING_VIDEO"):
        run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", (video,)), None))


def test_processing_is_waited_for_a_bounded_number_of_checks(fake, channel, origin, tmp_path, monkeypatch):
    monkeypatch.setattr(threads_module, "THREADS_MAX_POLLS", 4)
    fake.processing_polls = 1000
    video = media_file(origin, tmp_path, "clip.mp4", mp4_file(1024), "video/mp4", "video")
    with pytest.raises(Retryable, match="still processing the video after 4 checks"):
        run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", (video,)), None))
    assert len(fake.requests_to("GET", r"/v1.0/\d+")) == 4 and fake.media() == []


def test_processing_is_waited_for_a_bounded_time(fake, channel, monkeypatch):
    monkeypatch.setattr(threads_module, "THREADS_WAIT_SECONDS", 0.2)
    monkeypatch.setenv("RUSTIZ_THREADS_POLL_SECONDS", "0.08")
    fake.processing_polls = 1000
    with pytest.raises(Retryable, match="still processing"):
        run(PROVIDER.publish(channel, outgoing("<p>Slow</p>"), None))
    assert len(fake.requests_to("GET", r"/v1.0/\d+")) <= 4


def test_a_lost_answer_to_threads_publish_may_have_published(fake, channel):
    fake.drop_next("POST", r"/v1.0/\w+/threads_publish", after_handling=True)
    with pytest.raises(OutcomeUnknown):
        run(PROVIDER.publish(channel, outgoing("<p>Maybe</p>"), None))
    assert len(fake.media()) == 1


def test_a_permalink_that_cannot_be_read_does_not_fail_a_live_post(fake, channel):
    original = fake.read_object

    def no_permalink(request):
        if request.query.get("fields") == "permalink":
            return 503, {"error": {"message": "Service unavailable", "code": 2}}, {}
        return original(request)
    fake.routes = [(m, p, no_permalink if h == original else h) for m, p, h in fake.routes]
    release = run(PROVIDER.publish(channel, outgoing("<p>Live</p>"), None))
    assert release.id == fake.media()[0]["id"] and release.url == f"{fake.url}/@ada.lovelace"


# --- Graph's errors ---------------------------------------------------------------------------------------

def test_code_190_means_the_token_is_dead(fake, channel):
    fake.tokens.clear()
    with pytest.raises(TokenRefused) as refused:
        run(PROVIDER.publish(channel, outgoing("<p>Hello</p>"), None))
    assert "Invalid OAuth access token" in refused.value.message and "code 190" in refused.value.message


@pytest.mark.parametrize("status", [400, 403, 429])
def test_throttling_codes_are_retryable_whatever_the_status(fake, channel, status):
    fake.fail_next("POST", CONTAINERS, status, THROTTLED, {"Retry-After": "7"} if status == 429 else None)
    with pytest.raises(Retryable) as throttled:
        run(PROVIDER.publish(channel, outgoing("<p>Hello</p>"), None))
    assert throttled.value.message.startswith("Application request limit reached (code 4)")
    assert throttled.value.after == (7 if status == 429 else None)


def test_a_missing_permission_asks_for_a_reconnect_and_a_bad_request_is_refused(fake, channel):
    fake.fail_next("POST", CONTAINERS, 403, graph_error("Application does not have permission for this action", 10))
    with pytest.raises(NeedsReconnect) as reconnect:
        run(PROVIDER.publish(channel, outgoing("<p>Hello</p>"), None))
    assert not isinstance(reconnect.value, TokenRefused)
    fake.fail_next("POST", CONTAINERS, 403, graph_error("We restrict certain activity", 100, 2207051))
    with pytest.raises(Rejected, match="We restrict certain activity"):
        run(PROVIDER.publish(channel, outgoing("<p>Hello</p>"), None))


def test_only_graph_s_error_shape_is_quoted(fake, channel):
    fake.fail_next("POST", CONTAINERS, 400, "<html>a proxy's page</html>")
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing("<p>Hello</p>"), None))
    assert "proxy" not in refused.value.message and refused.value.body == ""
    for body in (b'{"error": "invalid_token"}', b'{"message": "nope"}', json.dumps(EXPIRED_TOKEN).encode()):
        words = PROVIDER.error_words(HttpReply(400, {}, body, ""))
        assert words == (None if b"Session" not in body else EXPIRED_TOKEN["error"]["message"] + " (code 190, subcode 463)")


def test_media_threads_does_not_take_is_refused_before_anything_is_sent(fake, channel, tmp_path):
    path = tmp_path / "a.gif"
    path.write_bytes(b"GIF89a")
    gif = MediaFile("https://rustiz.example/uploads/a.gif", str(path), "image/gif", "image", "", "a.gif")
    with pytest.raises(Rejected, match="JPEG and PNG"):
        run(PROVIDER.publish(channel, outgoing("<p>Hello</p>", (gif,)), None))
    assert fake.requests_to("POST", CONTAINERS) == []


# --- what rustiz checks before scheduling ------------------------------------------------------------------

def test_threads_pulls_media_and_refuses_what_it_cannot_take():
    text_only = [{"content": "<p>Hi</p>", "image": []}, {"content": "<p>more</p>", "image": []}]
    assert PROVIDER.pulls_media(text_only, {}) is False
    assert PROVIDER.pulls_media(text_only + [{"content": "", "image": [{"path": "https://x/a.png"}]}], {}) is True
    assert PROVIDER.post_problem({}, text_only, {}) is None
    many = [{"content": "", "image": [{"path": f"https://x/{n}.png"} for n in range(21)]}]
    assert "at most 20" in PROVIDER.post_problem({}, many, {})
    gif = [{"content": "", "image": [{"path": "https://x/a.gif"}]}]
    assert ".gif" in PROVIDER.post_problem({}, gif, {})


# --- insights ----------------------------------------------------------------------------------------------

def test_the_profile_s_insights(fake, channel):
    figures = run(PROVIDER.channel_analytics(channel, 7))
    by_label = {item["label"]: item["data"] for item in figures}
    assert set(by_label) == {"Views", "Likes", "Replies", "Reposts", "Quotes", "Followers"}
    assert [point["total"] for point in by_label["Views"]] == ["40", "41"] and by_label["Followers"][0]["total"] == "1200"
    query = fake.requests_to("GET", r"/v1.0/\w+/threads_insights")[0].query
    assert query["metric"] == "views,likes,replies,reposts,quotes,followers_count"
    assert int(query["until"]) - int(query["since"]) == 7 * 86400


def test_a_post_s_insights(fake, channel):
    release = run(PROVIDER.publish(channel, outgoing("<p>Counted</p>"), None))
    figures = run(PROVIDER.post_analytics(channel, release, 7))
    assert {item["label"]: item["data"][0]["total"] for item in figures} == {
        "Views": "321", "Likes": "12", "Replies": "2", "Reposts": "1", "Quotes": "0"}


def test_a_carousel_with_one_item_threads_cannot_take_makes_no_container(fake, channel, origin, tmp_path):
    good = media_file(origin, tmp_path, "a.png", png_file(2, 2), "image/png", "image")
    bad = media_file(origin, tmp_path, "b.webp", b"RIFF0000WEBP", "image/webp", "image")
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing("<p>Two</p>", (good, bad)), None))
    assert refused.value.item == "media item 2" and fake.requests_to("POST", CONTAINERS) == []


def test_a_reply_with_a_picture_and_no_text(fake, channel, origin, tmp_path):
    release = run(PROVIDER.publish(channel, outgoing("<p>Look below</p>"), None))
    image = media_file(origin, tmp_path, "a.png", png_file(2, 2), "image/png", "image")
    run(PROVIDER.publish(channel, outgoing("", (image,), part=1), release))
    reply = fake.media()[1]
    assert (reply["media_type"], reply["reply_to_id"], reply["text"]) == ("IMAGE", release.id, None)
    assert "text" not in fake.requests_to("POST", CONTAINERS)[-1].form()
