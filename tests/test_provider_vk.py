"""VK against a fake VK (tests/fakes/vk.py): end to end through the built server (VK ID consent with PKCE and
the device_id, a post with a picture, a video and a comment, the refresh with the device id, a dead token
waiting for a reconnect, flood control retried), and the provider object directly for what the server does
not show (the refusals' kinds, the upload server's refusals, delete, analytics)."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.vk import AUTH_FAILED, FLOOD, RATE_LIMIT, TOO_MANY, FakeVk, vk_error
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused, pkce_pair
from support import (
    API, api, connect_database, connect_oauth, expire_token_in, follow_consent, mp4_file, png_file, refresh_needed,
    run, scheduled, settled, uploaded, waiting_for_reconnect,
)

REDIRECT = "https://rustiz.example/integrations/social/vk"
provider = provider_for("vk")


# --- end to end, through the built server -------------------------------------------------------------

@pytest.fixture
def vk():
    fake = FakeVk()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, vk):
    return start_server_with_fakes(env={**vk.env, "VK_ID": vk.client_id, "RUSTIZ_RETRY_BASE": "0.3"})


def stored_tokens(server, channel_id: str) -> tuple:
    with connect_database(server.database) as db:
        token, refresh_token = db.execute("SELECT token, refresh_token FROM integration WHERE id = ?",
                                          (channel_id,)).fetchone()
    return json.loads(token), refresh_token


def test_connecting_through_vk_id_with_pkce_keeps_the_device_id_with_the_refresh_token(server, vk):
    status, body = api(server, "GET", f"{API}/social/vk")
    assert status == 200, body
    query = {name: values[-1] for name, values in parse_qs(urlsplit(body["url"]).query).items()}
    assert query["code_challenge_method"] == "S256" and query["scope"] == "vkid.personal_info wall photos video"
    back = connect_oauth(server, "vk")
    assert back["notice"] == "connected", back
    credentials, refresh_token = stored_tokens(server, back["channel"])
    assert credentials["userId"] == str(vk.user_id) and credentials["accessToken"] in vk.access_tokens
    refresh, _, device = refresh_token.partition("&&&&")
    assert refresh in vk.refresh_tokens and device == vk.device_id
    exchange = vk.requests_to("POST", "/oauth2/auth")[-1].form()
    assert (exchange["grant_type"], exchange["device_id"], exchange["client_id"]) == (
        "authorization_code", vk.device_id, vk.client_id) and exchange["code_verifier"]
    status, row = api(server, "GET", f"{API}/integrations/{back['channel']}")
    assert (row["name"], row["providerIdentifier"]) == ("Ada Lovelace", "vk"), row


def test_a_refused_consent_connects_nothing(server, vk):
    back = connect_oauth(server, "vk", link="deny")
    assert back["problem"] == "denied" and vk.requests_to("POST", "/oauth2/auth") == []


def test_a_post_with_a_picture_and_a_video_then_a_comment(server, vk):
    channel_id = connect_oauth(server, "vk")["channel"]
    picture, video = uploaded(server, png_file()), uploaded(server, mp4_file(2048), "mp4")
    post = settled(server, scheduled(server, channel_id, ("<p>Hello <strong>VK</strong></p>", [picture, video]),
                                     "<p>First comment</p>"), timeout=30)
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED", "PUBLISHED"], post
    [wall] = vk.published
    [photo_id] = vk.photos
    [video_id] = vk.videos
    assert wall["message"] == "Hello VK" and wall["owner_id"] == str(vk.user_id)
    assert wall["attachments"] == f"photo{vk.user_id}_{photo_id},video{vk.user_id}_{video_id}"
    assert vk.photos[photo_id] == png_file() and vk.videos[video_id] == mp4_file(2048)
    [(comment_id, comment)] = wall["comments"].items()
    assert comment["message"] == "First comment"
    assert post["releaseURL"] == f"https://vk.com/wall{vk.user_id}_{post['releaseId']}"
    assert post["thread"][0]["releaseURL"] == f"https://vk.com/wall{vk.user_id}_{post['releaseId']}?reply={comment_id}"
    assert all("access_token" not in request.query for request in vk.requests)  # the token goes in the form


def test_an_hour_old_token_is_refreshed_with_the_device_id(server, vk):
    channel_id = connect_oauth(server, "vk")["channel"]
    _, old_refresh = stored_tokens(server, channel_id)
    expire_token_in(server, channel_id, 10)
    assert settled(server, scheduled(server, channel_id, "<p>Fresh</p>"))["state"] == "PUBLISHED"
    refresh = vk.requests_to("POST", "/oauth2/auth")[-1].form()
    assert (refresh["grant_type"], refresh["refresh_token"], refresh["device_id"]) == (
        "refresh_token", old_refresh.partition("&&&&")[0], vk.device_id)
    credentials, new_refresh = stored_tokens(server, channel_id)
    assert new_refresh != old_refresh and new_refresh.endswith("&&&&" + vk.device_id)
    assert credentials["userId"] == str(vk.user_id)


def test_a_dead_token_waits_for_a_reconnect(server, vk):
    channel_id = connect_oauth(server, "vk")["channel"]
    vk.access_tokens.clear()
    vk.refresh_tokens.clear()  # the user revoked the app: the refresh is refused too
    post = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>Later</p>"))
    assert "invalid_grant" in post["error"] and "on the token refresh" in post["error"], post["error"]
    assert refresh_needed(server, channel_id)


def test_a_refused_access_token_is_refreshed_once_and_the_post_goes_out(server, vk):
    channel_id = connect_oauth(server, "vk")["channel"]
    vk.access_tokens.clear()  # expired early: the refresh token still works
    assert settled(server, scheduled(server, channel_id, "<p>Again</p>"))["state"] == "PUBLISHED"
    assert vk.requests_to("POST", "/oauth2/auth")[-1].form()["grant_type"] == "refresh_token"


def test_flood_control_is_retried_and_published_once(server, vk):
    channel_id = connect_oauth(server, "vk")["channel"]
    vk.fail_next("POST", "/method/wall.post", 200, TOO_MANY)
    post = settled(server, scheduled(server, channel_id, "<p>Patience</p>"), timeout=30)
    assert post["state"] == "PUBLISHED", post
    assert len(vk.requests_to("POST", "/method/wall.post")) == 2 and len(vk.published) == 1


# --- the provider object, against the fake ----------------------------------------------------------------

fake = fake_fixture(FakeVk)


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_id, "")


@pytest.fixture
def channel(fake, http) -> Channel:
    return Channel("channel-1", "Ada", fake.credentials(), None, http)


def media_file(tmp_path, data: bytes, name: str, content_type: str, kind: str = "image") -> MediaFile:
    path = tmp_path / name
    path.write_bytes(data)
    return MediaFile(f"https://rustiz.example/uploads/{name}", str(path), content_type, kind, "", name)


def post(html_text: str = "<p>Hello</p>", media: tuple = ()) -> OutgoingPost:
    return OutgoingPost("post-1", html_text, media, {}, 0, "key-1", "2026-12-06T13:00:00Z")


def test_the_app_is_vk_id_alone_and_vks_origins_are_the_defaults(monkeypatch):
    monkeypatch.delenv("RUSTIZ_VK_AUTH_URL", raising=False)
    monkeypatch.delenv("RUSTIZ_VK_API_URL", raising=False)
    assert (provider.auth_base(), provider.api_base()) == ("https://id.vk.com", "https://api.vk.com")
    assert provider.app({"VK_ID": " 51234567 "}) == AppCredentials("51234567", "")
    assert provider.app({}) is None and provider.app_variables == ("VK_ID",)
    assert "{FRONTEND_URL}/integrations/social/vk" in provider.operator_guide


def test_a_used_code_and_a_dead_refresh_token_are_token_refused(fake, http, app):
    verifier, challenge = pkce_pair()
    callback = follow_consent(run(provider.begin(http, app, REDIRECT, "s", challenge, {})))
    details = {"device_id": callback["device_id"]}
    tokens = run(provider.exchange_code(http, app, callback["code"], REDIRECT, verifier, details))
    with pytest.raises(TokenRefused) as refused:
        run(provider.exchange_code(http, app, callback["code"], REDIRECT, verifier, details))
    assert "code is invalid or expired" in refused.value.message
    run(provider.refresh_tokens(http, app, tokens.refresh_token))
    with pytest.raises(TokenRefused):  # refresh tokens rotate: the old one is dead
        run(provider.refresh_tokens(http, app, tokens.refresh_token))


def test_a_refusal_vk_id_answers_with_http_200_is_still_a_refusal(fake, http, app):
    fake.fail_next("POST", "/oauth2/auth", 200, {"error": "invalid_grant", "error_description": "token expired"})
    with pytest.raises(TokenRefused) as refused:
        run(provider.refresh_tokens(http, app, "vk2.a.x&&&&" + fake.device_id))
    assert "invalid_grant: token expired" in refused.value.message


def test_a_code_without_device_id_is_rejected_before_anything_is_sent(fake, http, app):
    with pytest.raises(Rejected) as refused:
        run(provider.exchange_code(http, app, "code", REDIRECT, "verifier", {}))
    assert "device_id" in refused.value.message and fake.requests == []


def test_a_5xx_on_refresh_is_retryable(fake, http, app):
    fake.fail_next("POST", "/oauth2/auth", 503, "<html>down</html>")
    with pytest.raises(Retryable):
        run(provider.refresh_tokens(http, app, "vk2.a.x&&&&" + fake.device_id))


def test_connect_reads_the_account(fake, channel):
    account = run(provider.connect(channel)).account
    assert account == (str(fake.user_id), "Ada Lovelace", "ada_l", f"{fake.url}/ada_200.jpg")


@pytest.mark.parametrize("error, kind, after", [(TOO_MANY, Retryable, 1.0), (FLOOD, Retryable, 60.0),
                                                (RATE_LIMIT, Retryable, 3600.0), (AUTH_FAILED, NeedsReconnect, None),
                                                (vk_error(214, "Access to adding post denied"), Rejected, None)])
def test_vk_api_errors_come_with_http_200_and_are_classified_by_code(fake, channel, error, kind, after):
    fake.fail_next("POST", "/method/wall.post", 200, error)
    with pytest.raises(kind) as failed:
        run(provider.publish(channel, post(), None))
    assert type(failed.value) is kind and error["error"]["error_msg"] in failed.value.message
    assert f"(error {error['error']['error_code']})" in failed.value.message
    if after is not None:
        assert failed.value.after == after


def test_an_internal_error_on_the_post_may_have_published_it(fake, channel):
    fake.fail_next("POST", "/method/wall.post", 200, vk_error(10, "Internal server error"))
    with pytest.raises(OutcomeUnknown):
        run(provider.publish(channel, post(), None))


def test_a_malformed_answer_is_described_not_quoted(fake, channel):
    fake.fail_next("POST", "/method/wall.post", 200, "<html>a proxy's secret page</html>",
                   {"Content-Type": "text/html"})
    with pytest.raises(OutcomeUnknown) as unknown:
        run(provider.publish(channel, post(), None))
    assert "secret" not in unknown.value.message


def test_a_picture_the_upload_server_refuses_is_rejected_and_nothing_is_posted(fake, channel, tmp_path):
    picture = media_file(tmp_path, b"not a picture at all", "fake.png", "image/png")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(media=(picture,)), None))
    assert "did not take the picture" in refused.value.message and refused.value.item == "fake.png"
    assert fake.published == []


def test_more_than_ten_attachments_are_refused_at_post_time():
    values = [{"content": "<p>x</p>", "image": [{"path": f"https://x.example/{n}.png"} for n in range(11)]}]
    assert "at most 10" in provider.post_problem({}, values, {})


def test_delete_removes_the_post_and_the_comment_and_a_gone_one_is_rejected(fake, channel):
    release = run(provider.publish(channel, post(), None))
    comment = run(provider.publish(channel, post("<p>reply</p>"), release))
    assert provider.can_delete is True
    run(provider.delete(channel, Release(comment.id, comment.url)))
    assert fake.published[0]["comments"] == {}
    run(provider.delete(channel, Release(release.id, release.url)))
    assert fake.posts == {}
    with pytest.raises(Rejected):
        run(provider.delete(channel, Release(release.id, release.url)))


def test_post_analytics_are_the_posts_counts(fake, channel):
    release = run(provider.publish(channel, post(), None))
    counts = {item["label"]: item["data"][0]["total"] for item in run(provider.post_analytics(channel, release, 7))}
    assert counts == {"Likes": "7", "Reposts": "2", "Comments": "1", "Views": "140"}
    [followers] = run(provider.channel_analytics(channel, 7))
    assert (followers["label"], followers["data"][0]["total"]) == ("Followers", "321")
