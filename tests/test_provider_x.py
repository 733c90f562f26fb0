"""The X provider object against a fake X, over real sockets: the OAuth 1.0a consent (request token,
authenticate page, access token), signatures, connecting, posts, threads, images with alt text, video with
processing, X's error shapes, 403s that are not about the token, and its rate limits."""
from __future__ import annotations

import time
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import client_for_fakes
from fakes.x import FakeX
from support import run, jpeg_file, mp4_file, png_file
from rustiz_features.publishers import x as x_module
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused

PROVIDER = x_module.PROVIDER
APP = AppCredentials("x-app-key", "x-app-secret")
CALLBACK = "https://rustiz.example/integrations/social/x"


@pytest.fixture
def fake(monkeypatch):
    platform = FakeX()
    monkeypatch.setenv("RUSTIZ_X_AUTH_URL", platform.url)
    monkeypatch.setenv("RUSTIZ_X_API_URL", platform.url)
    yield platform
    platform.close()


def channel_for(fake: FakeX, **credentials) -> Channel:
    channel = Channel("ch1", "Ada on X", {**fake.credentials(), **credentials}, None, client_for_fakes())
    channel.app = APP
    return channel


def post(text: str = "<p>Hello X</p>", media: tuple = (), settings: dict | None = None, part: int = 0) -> OutgoingPost:
    return OutgoingPost("post1", text, media, settings or {}, part, f"key-{part}", "2026-12-03T13:00:00Z")


def media_file(tmp_path, name: str, data: bytes, content_type: str, kind: str, alt: str = "") -> MediaFile:
    path = tmp_path / name
    path.write_bytes(data)
    return MediaFile(f"https://uploads.example/{name}", str(path), content_type, kind, alt, name)


def consent(fake: FakeX, authorize_url: str, decision: str = "allow") -> dict:
    """What the user's browser does: open X's authenticate page, press a button, land on the callback."""
    with urllib.request.urlopen(authorize_url) as page:
        assert f"decision={decision}" in page.read().decode()
    token = parse_qs(urlsplit(authorize_url).query)["oauth_token"][0]
    with fake.lock:
        fake.requests.clear()
    request = urllib.request.Request(f"{fake.url}/oauth/consent?oauth_token={token}&decision={decision}")
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(request)
    except urllib.error.HTTPError as redirect:
        location = redirect.headers["Location"]
    assert location.startswith(CALLBACK)
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


# --- signing ---------------------------------------------------------------------------------------------

def test_the_signature_matches_xs_documented_example():
    # developer.x.com "Creating a signature": the same request, nonce and time give X's signature.
    header = x_module.oauth_header(
        "POST", "https://api.twitter.com/1.1/statuses/update.json?include_entities=true",
        AppCredentials("xvz1evFS4wEEPTGEFPHBog", "kAcSOqF21Fu85e7zjz7ZN2U4ZRhfV3WpwPAoE3Z7kBw"),
        "370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb", "LswwdoUaIvS8ltyTt5jkRh4J50vUPVVHtR2YPi5kE",
        form={"status": "Hello Ladies + Gentlemen, a signed OAuth request!"},
        nonce="kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg", timestamp="1318622958")
    assert 'oauth_signature="hCtSmYh%2BiHYCEqBWrE7C7hYmtUk%3D"' in header
    assert header.startswith('OAuth oauth_consumer_key="xvz1evFS4wEEPTGEFPHBog", oauth_nonce=')


def test_the_base_string_uri_drops_default_ports_and_lowercases_the_host():
    assert x_module.base_string_uri("HTTPS://API.X.com:443/2/tweets?a=1") == "https://api.x.com/2/tweets"
    assert x_module.base_string_uri("http://127.0.0.1:8080/oauth/request_token") == \
        "http://127.0.0.1:8080/oauth/request_token"


# --- the consent flow ---------------------------------------------------------------------------------

def test_begin_gets_a_request_token_and_sends_the_user_to_xs_authenticate_page(fake):
    details: dict = {}
    url = run(PROVIDER.begin(client_for_fakes(), APP, CALLBACK, "ignored-state", None, details))
    assert PROVIDER.pkce is False
    assert url.startswith(f"{fake.url}/oauth/authenticate?oauth_token=")
    token = parse_qs(urlsplit(url).query)["oauth_token"][0]
    # The callback carries oauth_token, not state: the flow is found by the request token.
    assert details["state"] == details["oauth_token"] == token
    assert details["oauth_token_secret"] == fake.request_tokens[token]["secret"]
    assert fake.request_tokens[token]["callback"] == CALLBACK
    [request] = fake.requests_to("POST", "/oauth/request_token")
    assert request.form() == {"x_auth_access_type": "write"}


def test_consent_then_exchange_gives_a_token_and_secret_that_never_expire(fake):
    details: dict = {}
    url = run(PROVIDER.begin(client_for_fakes(), APP, CALLBACK, "s", None, details))
    callback = consent(fake, url)
    assert callback["oauth_token"] == details["state"]
    tokens = run(PROVIDER.exchange_code(client_for_fakes(), APP, callback["oauth_verifier"], CALLBACK, None, details))
    assert tokens.refresh_token is None and tokens.expires_in is None
    assert fake.access_tokens[tokens.access_token] == tokens.extra["accessSecret"]
    assert tokens.extra["userId"] == fake.user["id"] and tokens.extra["screenName"] == "ada"
    # The new token works for signed calls.
    channel = channel_for(fake, accessToken=tokens.access_token, accessSecret=tokens.extra["accessSecret"])
    assert run(PROVIDER.connect(channel)).account.internal_id == fake.user["id"]


def test_a_denied_consent_comes_back_as_denied(fake):
    url = run(PROVIDER.begin(client_for_fakes(), APP, CALLBACK, "s", None, {}))
    callback = consent(fake, url, "deny")
    assert set(callback) == {"denied"}


def test_a_wrong_verifier_or_a_used_request_token_is_a_definite_refusal(fake):
    details: dict = {}
    url = run(PROVIDER.begin(client_for_fakes(), APP, CALLBACK, "s", None, details))
    callback = consent(fake, url)
    with pytest.raises(TokenRefused) as refused:
        run(PROVIDER.exchange_code(client_for_fakes(), APP, "wrong-verifier", CALLBACK, None, details))
    assert refused.value.status == 401
    assert "Invalid oauth_verifier" not in refused.value.message  # a plain-text body is never quoted
    run(PROVIDER.exchange_code(client_for_fakes(), APP, callback["oauth_verifier"], CALLBACK, None, details))
    with pytest.raises(TokenRefused):  # a request token is exchanged once
        run(PROVIDER.exchange_code(client_for_fakes(), APP, callback["oauth_verifier"], CALLBACK, None, details))


def test_an_exchange_that_meets_a_503_is_retryable(fake):
    fake.fail_next("POST", "/oauth/access_token", 503, {"errors": [{"message": "Over capacity", "code": 130}]})
    details = {"oauth_token": "req-1", "oauth_token_secret": "s"}
    with pytest.raises(Retryable) as error:
        run(PROVIDER.exchange_code(client_for_fakes(), APP, "v", CALLBACK, None, details))
    assert "Over capacity (code 130)" in error.value.message


def test_wrong_app_keys_are_refused_in_xs_words(fake):
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.begin(client_for_fakes(), AppCredentials("x-app-key", "wrong"), CALLBACK, "s", None, {}))
    assert "X_API_KEY" in refused.value.message and "Could not authenticate you. (code 32)" in refused.value.message


def test_an_unregistered_callback_is_refused_with_xs_xml_words(fake):
    fake.approved_callbacks = ["https://elsewhere.example/cb"]
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.begin(client_for_fakes(), APP, CALLBACK, "s", None, {}))
    assert refused.value.status == 403
    assert "Callback URL not approved for this client application" in refused.value.message
    assert "(code 415)" in refused.value.message


def test_refresh_is_refused_because_oauth1_tokens_cannot_be_refreshed(fake):
    with pytest.raises(TokenRefused):
        run(PROVIDER.refresh_tokens(client_for_fakes(), APP, "anything"))
    assert fake.requests == []


def test_the_app_reads_postiz_variable_names():
    assert PROVIDER.app({"X_API_KEY": " k ", "X_API_SECRET": "s"}) == AppCredentials("k", "s")
    assert PROVIDER.app({"X_API_KEY": "k"}) is None


# --- connecting ---------------------------------------------------------------------------------------

def test_connect_reads_the_account_with_a_large_picture(fake):
    connected = run(PROVIDER.connect(channel_for(fake)))
    account = connected.account
    assert (account.internal_id, account.name, account.profile) == (fake.user["id"], "Ada Lovelace", "ada")
    assert account.picture == "https://pbs.twimg.com/profile_images/1/ada_400x400.jpg"
    assert connected.limits is None  # unverified: 280, or 4,000 when the channel is marked Verified
    [request] = fake.requests_to("GET", "/2/users/me")
    assert request.query["user.fields"] == "profile_image_url,verified,verified_type"


def test_a_verified_account_may_post_4000_characters(fake):
    fake.verified = True
    assert run(PROVIDER.connect(channel_for(fake))).limits == {"maxLength": 4000}


def test_a_revoked_token_needs_a_reconnect(fake):
    with pytest.raises(NeedsReconnect) as error:
        run(PROVIDER.connect(channel_for(fake, accessSecret="revoked")))
    assert error.value.status == 401 and "Unauthorized" in error.value.message


def test_a_channel_without_the_operators_app_is_refused_before_sending(fake):
    channel = channel_for(fake)
    channel.app = None
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, post(), None))
    assert "X_API_KEY" in refused.value.message and fake.requests == []


# --- publishing ---------------------------------------------------------------------------------------

def test_a_text_post_is_plain_text_with_its_release_url(fake):
    release = run(PROVIDER.publish(channel_for(fake), post("<p>Hello <strong>X</strong> &amp; friends</p>"), None))
    [published] = fake.published
    assert published["text"] == "Hello X & friends" and "reply" not in published and "media" not in published
    assert release.id == published["id"] and release.url == f"https://x.com/ada/status/{published['id']}"


def test_the_release_url_works_without_a_known_handle(fake):
    channel = channel_for(fake)
    del channel.credentials["screenName"]
    release = run(PROVIDER.publish(channel, post(), None))
    assert release.url == f"https://x.com/i/web/status/{release.id}"


def test_a_thread_is_replies_to_the_previous_part_and_settings_apply_as_postiz_does(fake):
    channel = channel_for(fake)
    settings = {"who_can_reply_post": "following", "community": "https://x.com/i/communities/1493446837214187523",
                "made_with_ai": True, "paid_partnership": False}
    first = run(PROVIDER.publish(channel, post("<p>one</p>", settings=settings), None))
    second = run(PROVIDER.publish(channel, post("<p>two</p>", settings=settings, part=1), first))
    one, two = fake.published
    assert one["reply_settings"] == "following" and one["community_id"] == "1493446837214187523"
    assert one["share_with_followers"] is True and one["made_with_ai"] is True and "paid_partnership" not in one
    assert two["reply"] == {"in_reply_to_tweet_id": first.id}
    assert "reply_settings" not in two and "community_id" not in two and two["made_with_ai"] is True
    assert second.id == two["id"]


def test_everyone_may_reply_is_xs_default_and_not_sent(fake):
    run(PROVIDER.publish(channel_for(fake), post(settings={"who_can_reply_post": "everyone"}), None))
    assert "reply_settings" not in fake.published[0]


def test_images_go_up_in_chunks_with_their_alt_text(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(x_module, "X_CHUNK_BYTES", 100)
    png = png_file(20, 20, padding=250)
    media = (media_file(tmp_path, "a.png", png, "image/png", "image", "A grey square"),
             media_file(tmp_path, "b.jpg", jpeg_file(), "image/jpeg", "image"))
    run(PROVIDER.publish(channel_for(fake), post(media=media), None))
    [published] = fake.published
    first, second = (fake.media[media_id] for media_id in published["media_ids"])
    assert first["bytes"] == png and len(first["segments"]) == (len(png) + 99) // 100
    assert first["category"] == "tweet_image" and first["type"] == "image/png" and first["alt"] == "A grey square"
    assert second["bytes"] == jpeg_file() and second["alt"] is None
    assert len(fake.requests_to("POST", "/2/media/metadata")) == 1
    # Media alone: X takes a post without text, not one with empty text.
    run(PROVIDER.publish(channel_for(fake), post("<p></p>", media=media[1:]), None))
    assert "text" not in fake.published[1] and len(fake.published[1]["media_ids"]) == 1


def test_a_video_is_awaited_until_x_has_processed_it(fake, tmp_path):
    fake.processing_polls = 2
    video = media_file(tmp_path, "v.mp4", mp4_file(3000), "video/mp4", "video", "ignored for video")
    run(PROVIDER.publish(channel_for(fake), post(media=(video,)), None))
    [published] = fake.published
    [media] = [fake.media[media_id] for media_id in published["media_ids"]]
    assert media["category"] == "tweet_video" and media["state"] == "succeeded"
    assert len(fake.requests_to("GET", "/2/media/upload")) == 3
    assert fake.requests_to("POST", "/2/media/metadata") == []


def test_a_video_x_cannot_process_is_rejected_with_its_reason(fake, tmp_path):
    fake.fail_processing = "Unsupported video codec"
    video = media_file(tmp_path, "v.mp4", mp4_file(3000), "video/mp4", "video")
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel_for(fake), post(media=(video,)), None))
    assert "Unsupported video codec" in refused.value.message and refused.value.item == "media item 1"
    assert fake.published == []


def test_processing_that_outlasts_the_wait_is_retryable(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(x_module, "X_MEDIA_WAIT_SECONDS", 0.6)
    fake.processing_polls = 100
    video = media_file(tmp_path, "v.mp4", mp4_file(3000), "video/mp4", "video")
    with pytest.raises(Retryable) as error:
        run(PROVIDER.publish(channel_for(fake), post(media=(video,)), None))
    assert "still processing" in error.value.message and fake.published == []


# --- X's errors and limits ----------------------------------------------------------------------------

def test_a_duplicate_post_is_rejected_in_xs_words_and_the_channel_stays_connected(fake):
    channel = channel_for(fake)
    run(PROVIDER.publish(channel, post("<p>same</p>"), None))
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, post("<p>same</p>"), None))
    assert not isinstance(refused.value, NeedsReconnect)
    assert refused.value.message == "Forbidden: You are not allowed to create a Tweet with duplicate content."
    assert '"title":"Forbidden"' in refused.value.body


def test_an_app_without_access_to_v2_posting_says_so_in_xs_words(fake):
    fake.fail_next("POST", "/2/tweets", 403, {"errors": [{"message": (
        "You currently have access to a subset of X API V2 endpoints and limited v1.1 endpoints (e.g. media post, "
        "oauth) only. If you need access to this endpoint, you may need a different access level."), "code": 453}]})
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel_for(fake), post(), None))
    assert refused.value.message.startswith("You currently have access to a subset of X API V2 endpoints")
    assert refused.value.message.endswith("(code 453)")


def test_depleted_credits_are_rejected_in_xs_words(fake):
    fake.fail_next("POST", "/2/tweets", 402, {"title": "Payment Required", "detail": "credits depleted",
                                              "type": "https://api.x.com/2/problems/credits-depleted"})
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel_for(fake), post(), None))
    assert refused.value.message == "Payment Required: credits depleted" and refused.value.status == 402


def test_an_invalid_request_gives_the_problem_and_each_error(fake):
    fake.max_length = 5
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel_for(fake), post("<p>too long for the fake</p>"), None))
    assert refused.value.message == ("Invalid Request: One or more parameters to your request was invalid. - "
                                     "Your Tweet text is too long.")


def test_an_unknown_error_body_is_never_quoted(fake):
    fake.fail_next("POST", "/2/tweets", 400, "<html>proxy says no</html>", {"Content-Type": "text/html"})
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel_for(fake), post(), None))
    assert "proxy" not in refused.value.message and refused.value.body == ""


def test_a_429_waits_for_xs_rate_limit_reset(fake):
    reset = int(time.time()) + 600
    fake.fail_next("POST", "/2/tweets", 429, {"title": "Too Many Requests", "detail": "Too Many Requests",
                                              "type": "about:blank", "status": 429},
                   {"x-rate-limit-remaining": "0", "x-rate-limit-reset": str(reset)})
    channel = channel_for(fake)
    with pytest.raises(Retryable) as error:
        run(PROVIDER.publish(channel, post(), None))
    assert 590 <= error.value.after <= 600 and error.value.message == "Too Many Requests: Too Many Requests"
    assert 590 <= channel.throttled_for <= 600


def test_a_429_from_the_daily_post_cap_waits_for_that_cap(fake):
    fake.fail_next("POST", "/2/tweets", 429, {"title": "Too Many Requests", "detail": "Too Many Requests",
                                              "type": "about:blank", "status": 429},
                   {"x-rate-limit-remaining": "50", "x-user-limit-24hour-remaining": "0",
                    "x-user-limit-24hour-reset": str(int(time.time()) + 7200)})
    with pytest.raises(Retryable) as error:
        run(PROVIDER.publish(channel_for(fake), post(), None))
    assert 7190 <= error.value.after <= 7200


def test_a_401_while_publishing_needs_a_reconnect(fake):
    with pytest.raises(NeedsReconnect) as error:
        run(PROVIDER.publish(channel_for(fake, accessToken="gone"), post(), None))
    assert error.value.status == 401 and fake.published == []


def test_a_lost_answer_to_the_post_is_an_unknown_outcome(fake):
    fake.drop_next("POST", "/2/tweets", after_handling=True)
    with pytest.raises(OutcomeUnknown):
        run(PROVIDER.publish(channel_for(fake), post(), None))
    assert PROVIDER.resend_is_safe is False and len(fake.published) == 1


def test_a_503_on_an_upload_is_retryable_and_names_the_item(fake, tmp_path):
    fake.fail_next("POST", "/2/media/upload/initialize", 503, {"title": "Service Unavailable",
                                                               "detail": "Service Unavailable", "type": "about:blank"})
    image = media_file(tmp_path, "a.png", png_file(), "image/png", "image")
    with pytest.raises(Retryable) as error:
        run(PROVIDER.publish(channel_for(fake), post(media=(image,)), None))
    assert error.value.item == "media item 1" and "(on the upload of media item 1)" in error.value.message


def test_post_problem_refuses_what_x_would(fake):
    video, image = {"path": "https://u.example/v.mp4"}, {"path": "https://u.example/a.png"}
    assert PROVIDER.post_problem({}, [{"content": "<p>a</p>", "image": [image] * 4}], {}) is None
    assert "up to 4" in PROVIDER.post_problem({}, [{"content": "<p>a</p>", "image": [image] * 5}], {})
    assert "one video alone" in PROVIDER.post_problem({}, [{"content": "", "image": [video, image]}], {})
    assert "articles" in PROVIDER.post_problem({}, [{"content": "", "image": []}], {"post_type": "article"})

