"""The linkedin and linkedin-page providers driven directly against a fake LinkedIn over real sockets: the
OAuth flow (authorize URL, code exchange, refresh), the member and the page choice, posts with images,
several images and video, comments as thread parts, LinkedIn-Version, and LinkedIn's errors."""
from __future__ import annotations

import re
import struct
import zlib
from urllib.parse import parse_qs, urlsplit

import pytest

from fakes.linkedin import ACTIVE_VERSIONS, CLIENT_ID, CLIENT_SECRET, LOGOS, MEMBER, PERSONAL_SCOPES, FakeLinkedIn
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.linkedin_page import logo_image
from rustiz_features.publishers.linkedin_shared import LINKEDIN_VERSION_DEFAULT, little_text
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from support import run, jpeg_file, mp4_file, png_file, webp_file, follow_consent

APP = AppCredentials(CLIENT_ID, CLIENT_SECRET)
REDIRECT = "https://rustiz.example/integrations/social/linkedin"


@pytest.fixture
def fake(monkeypatch):
    fake = FakeLinkedIn()
    for prefix in ("RUSTIZ_LINKEDIN_", "RUSTIZ_LINKEDIN_PAGE_"):
        monkeypatch.setenv(prefix + "AUTH_URL", fake.url)
        monkeypatch.setenv(prefix + "API_URL", fake.url)
    monkeypatch.delenv("LINKEDIN_VERSION", raising=False)
    yield fake
    fake.close()


@pytest.fixture
def linkedin():
    return provider_for("linkedin")


@pytest.fixture
def page_provider():
    return provider_for("linkedin-page")


def channel_of(fake: FakeLinkedIn, http, session: dict | None = None, **credentials) -> Channel:
    saved = []
    channel = Channel("ch1", "Ada on LinkedIn", {**fake.credentials(), **credentials}, session, http,
                      save_session=saved.append)
    channel.saved = saved
    return channel


def outgoing(html: str, media: tuple = (), part: int = 0) -> OutgoingPost:
    return OutgoingPost("post1", html, media, {}, part, f"key-{part}", "2026-12-03T13:00:00Z")


def media_file(tmp_path, name: str, data: bytes, content_type: str, kind: str, alt: str = "") -> MediaFile:
    path = tmp_path / name
    path.write_bytes(data)
    return MediaFile(f"https://uploads.example/{name}", str(path), content_type, kind, alt, name)


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_authorize_url_asks_linkedin_for_a_code_with_the_scopes_and_no_pkce(fake, http, linkedin, page_provider):
    assert linkedin.pkce is False and page_provider.pkce is False
    url = run(linkedin.begin(http, APP, REDIRECT, "state-1", None, {}))
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{fake.url}/oauth/v2/authorization"
    query = {name: values[0] for name, values in parse_qs(parts.query).items()}
    assert query == {"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": REDIRECT, "state": "state-1",
                     "scope": "openid profile w_member_social"}
    page_query = parse_qs(urlsplit(run(page_provider.begin(http, APP, REDIRECT + "-page", "s", None, {}))).query)
    assert page_query["scope"] == ["openid profile w_member_social r_organization_social w_organization_social "
                                   "rw_organization_admin"]
    assert linkedin.app({"LINKEDIN_CLIENT_ID": "id", "LINKEDIN_CLIENT_SECRET": "secret"}) == ("id", "secret")
    assert page_provider.app({"LINKEDIN_CLIENT_ID": "id", "LINKEDIN_CLIENT_SECRET": ""}) is None


def test_consent_then_the_code_exchange_sends_the_app_in_the_form_and_yields_both_tokens(fake, http, linkedin):
    callback = follow_consent(run(linkedin.begin(http, APP, REDIRECT, "state-2", None, {})))
    assert callback["state"] == "state-2"
    tokens = run(linkedin.exchange_code(http, APP, callback["code"], REDIRECT, None, {}))
    assert tokens.access_token in fake.tokens and tokens.refresh_token in fake.refresh
    assert tokens.expires_in == 5183999
    [request] = fake.requests_to("POST", "/oauth/v2/accessToken")
    form = request.form()
    assert (form["client_id"], form["client_secret"], form["grant_type"]) == (CLIENT_ID, CLIENT_SECRET,
                                                                              "authorization_code")
    assert "authorization" not in request.headers and "code_verifier" not in form


def test_an_app_without_refresh_tokens_yields_an_access_token_alone(fake, http, linkedin):
    fake.refresh_tokens = False
    callback = follow_consent(run(linkedin.begin(http, APP, REDIRECT, "s", None, {})))
    tokens = run(linkedin.exchange_code(http, APP, callback["code"], REDIRECT, None, {}))
    assert tokens.access_token in fake.tokens and tokens.refresh_token is None


def test_a_cancelled_consent_comes_back_as_linkedins_error(fake, http, linkedin):
    callback = follow_consent(run(linkedin.begin(http, APP, REDIRECT, "s", None, {})), link="deny")
    assert callback["error"] == "user_cancelled_authorize" and callback["state"] == "s" and "code" not in callback


def test_a_wrong_code_is_refused_in_linkedins_words(fake, http, linkedin):
    with pytest.raises(Rejected) as refused:
        run(linkedin.exchange_code(http, APP, "not-a-code", REDIRECT, None, {}))
    assert not isinstance(refused.value, TokenRefused)
    assert "Unable to retrieve access token" in refused.value.message and refused.value.status == 400


def test_a_token_without_the_posting_scope_is_refused_with_what_to_add_to_the_app(fake, http, linkedin, page_provider):
    fake.granted_scopes = "openid,profile"
    callback = follow_consent(run(linkedin.begin(http, APP, REDIRECT, "s", None, {})))
    with pytest.raises(TokenRefused) as refused:
        run(linkedin.exchange_code(http, APP, callback["code"], REDIRECT, None, {}))
    assert "not w_member_social" in refused.value.message and "Share on LinkedIn" in refused.value.message
    fake.granted_scopes = PERSONAL_SCOPES  # enough for a member, not for a page
    callback = follow_consent(run(page_provider.begin(http, APP, REDIRECT, "s", None, {})))
    with pytest.raises(TokenRefused) as refused:
        run(page_provider.exchange_code(http, APP, callback["code"], REDIRECT, None, {}))
    assert "w_organization_social" in refused.value.message and "Community Management API" in refused.value.message


def test_a_refresh_keeps_linkedins_refresh_token_or_takes_a_new_one(fake, http, linkedin):
    callback = follow_consent(run(linkedin.begin(http, APP, REDIRECT, "s", None, {})))
    first = run(linkedin.exchange_code(http, APP, callback["code"], REDIRECT, None, {}))
    again = run(linkedin.refresh_tokens(http, APP, first.refresh_token))
    assert again.access_token != first.access_token and again.refresh_token == first.refresh_token
    form = fake.requests_to("POST", "/oauth/v2/accessToken")[-1].form()
    assert (form["grant_type"], form["refresh_token"], form["client_id"]) == ("refresh_token", first.refresh_token,
                                                                              CLIENT_ID)
    fake.rotate_refresh_tokens = True
    rotated = run(linkedin.refresh_tokens(http, APP, again.refresh_token))
    assert rotated.refresh_token not in (None, first.refresh_token) and rotated.refresh_token in fake.refresh
    fake.refresh_tokens = False  # an answer without a refresh token: the stored one stays (None here)
    assert run(linkedin.refresh_tokens(http, APP, rotated.refresh_token)).refresh_token is None


def test_a_dead_refresh_token_is_a_definite_refusal(fake, http, linkedin):
    with pytest.raises(TokenRefused) as refused:
        run(linkedin.refresh_tokens(http, APP, "expired-refresh-token"))
    assert "invalid_grant" in refused.value.message and refused.value.status == 400


def test_a_refresh_meeting_a_503_is_retried_later_not_a_disconnect(fake, http, linkedin):
    fake.fail_next("POST", "/oauth/v2/accessToken", 503, "<html>Service Unavailable</html>",
                   {"Content-Type": "text/html", "Retry-After": "30"})
    with pytest.raises(Retryable) as retry:
        run(linkedin.refresh_tokens(http, APP, "any"))
    assert retry.value.after == 30 and "Service Unavailable" not in retry.value.message


# --- the member and the page ---------------------------------------------------------------------------

def test_connecting_reads_the_member_from_userinfo(fake, http, linkedin):
    connected = run(linkedin.connect(channel_of(fake, http)))
    assert connected.account == (MEMBER["sub"], "Ada Lovelace", None, MEMBER["picture"])
    assert connected.session == {"author": f"urn:li:person:{MEMBER['sub']}"}
    assert fake.requests_to("GET", "/v2/userinfo")[0].headers["authorization"] == f"Bearer {fake.token}"


def test_an_expired_token_needs_a_reconnect_with_linkedins_words(fake, http, linkedin):
    with pytest.raises(NeedsReconnect) as refused:
        run(linkedin.connect(channel_of(fake, http, accessToken="expired")))
    assert refused.value.status == 401
    assert "Invalid access token (INVALID_ACCESS_TOKEN, serviceErrorCode 65600)" in refused.value.message


def test_a_page_channel_lists_the_pages_the_member_may_post_as_and_becomes_the_chosen_one(fake, http, page_provider):
    channel = channel_of(fake, http)
    assert page_provider.between_steps
    assert run(page_provider.connect(channel)).account.internal_id == MEMBER["sub"]
    choices = run(page_provider.step_choices(channel))
    assert choices == [{"id": "2414183", "name": "Analytical Engines Ltd", "picture": LOGOS[ENGINES_LOGO]},
                       {"id": "5590001", "name": "Difference Society", "picture": None}]  # not the ANALYST one
    acls = fake.requests_to("GET", "/rest/organizationAcls")[0]
    assert acls.query["q"] == "roleAssignee" and acls.query["state"] == "APPROVED"
    assert fake.requests_to("GET", "/rest/organizations")[0].query["ids"] == "List(2414183,5590001)"
    chosen = run(page_provider.choose(channel, "5590001"))
    assert chosen.account == ("5590001", "Difference Society", "difference-society", None)
    assert chosen.session == {"organization": "urn:li:organization:5590001"}
    with pytest.raises(Rejected):
        run(page_provider.choose(channel, "7777777"))  # an analyst may not post as it


def test_a_page_post_is_authored_by_the_organization_and_a_page_never_chosen_needs_a_reconnect(
        fake, http, page_provider, tmp_path):
    channel = channel_of(fake, http, session={"organization": "urn:li:organization:2414183"})
    image = media_file(tmp_path, "a.png", png_file(), "image/png", "image")
    release = run(page_provider.publish(channel, outgoing("<p>News from the engine room</p>", (image,)), None))
    [post] = fake.published
    assert post["author"] == "urn:li:organization:2414183" and release.id == post["urn"]
    [upload] = fake.requests_to("POST", "/rest/images")
    assert upload.json()["initializeUploadRequest"]["owner"] == "urn:li:organization:2414183"
    comment = run(page_provider.publish(channel, outgoing("<p>More below</p>", part=1), release))
    assert fake.comments[0]["actor"] == "urn:li:organization:2414183" and comment.reply_ref == {"root": release.id}
    with pytest.raises(NeedsReconnect) as unchosen:
        run(page_provider.publish(channel_of(fake, http), outgoing("<p>Hi</p>"), None))
    assert "connect it again" in unchosen.value.message


# --- posting ---------------------------------------------------------------------------------------------

def test_a_text_post_goes_to_the_posts_api_with_the_version_headers_and_escaped_text(fake, http, linkedin):
    channel = channel_of(fake, http, session={"author": f"urn:li:person:{MEMBER['sub']}"})
    release = run(linkedin.publish(channel, outgoing("<p>Hello (world) #rustiz &amp; a_b @ada</p>"), None))
    [post] = fake.published
    assert post["author"] == f"urn:li:person:{MEMBER['sub']}" and post["visibility"] == "PUBLIC"
    assert post["lifecycleState"] == "PUBLISHED" and post["distribution"]["feedDistribution"] == "MAIN_FEED"
    assert post["commentary"] == "Hello \\(world\\) {hashtag|\\#|rustiz} & a\\_b \\@ada"
    assert "content" not in post
    assert release == Release(post["urn"], f"{fake.url}/feed/update/{post['urn']}", {"root": post["urn"]})
    [request] = fake.requests_to("POST", "/rest/posts")
    assert request.headers["linkedin-version"] == LINKEDIN_VERSION_DEFAULT in ACTIVE_VERSIONS
    assert request.headers["x-restli-protocol-version"] == "2.0.0"
    assert request.headers["authorization"] == f"Bearer {fake.token}"
    assert fake.requests_to("GET", "/v2/userinfo") == []  # the session named the author


def test_little_text_escapes_every_reserved_character_and_keeps_mentions():
    assert little_text("|{}@[]()<>#\\*_~") == "\\|\\{\\}\\@\\[\\]\\(\\)\\<\\>\\#\\\\\\*\\_\\~"
    assert little_text("Thanks @[Analytical Engines](urn:li:organization:2414183)!") == \
        "Thanks @[Analytical Engines](urn:li:organization:2414183)!"
    assert little_text("#one, #two_x and a#b") == "{hashtag|\\#|one}, {hashtag|\\#|two\\_x} and a\\#b"
    assert little_text("We are #1 at https://x.example/#/docs") == "We are \\#1 at https://x.example/\\#/docs"


def test_a_channel_without_its_author_in_the_session_reads_it_once_and_keeps_it(fake, http, linkedin):
    channel = channel_of(fake, http)
    run(linkedin.publish(channel, outgoing("<p>First</p>"), None))
    run(linkedin.publish(channel, outgoing("<p>Second</p>"), None))
    assert len(fake.requests_to("GET", "/v2/userinfo")) == 1
    assert channel.saved == [{"author": f"urn:li:person:{MEMBER['sub']}"}]
    assert [post["author"] for post in fake.published] == [f"urn:li:person:{MEMBER['sub']}"] * 2


def test_linkedin_version_comes_from_the_environment_and_a_retired_one_names_the_variable(
        fake, http, linkedin, monkeypatch):
    channel = channel_of(fake, http)
    monkeypatch.setenv("LINKEDIN_VERSION", "202611")
    run(linkedin.publish(channel, outgoing("<p>On the new version</p>"), None))
    assert fake.requests_to("POST", "/rest/posts")[-1].headers["linkedin-version"] == "202611"
    monkeypatch.setenv("LINKEDIN_VERSION", "202501")
    with pytest.raises(Rejected) as refused:
        run(linkedin.publish(channel, outgoing("<p>On an old version</p>"), None))
    assert refused.value.status == 426
    assert "Requested version 202501 is not active (NONEXISTENT_VERSION)" in refused.value.message
    assert "set LINKEDIN_VERSION to a current version" in refused.value.message
    assert '"NONEXISTENT_VERSION"' in refused.value.body
    monkeypatch.setenv("LINKEDIN_VERSION", "2026-07")
    with pytest.raises(Rejected) as refused:
        run(linkedin.publish(channel, outgoing("<p>On no version</p>"), None))
    assert "LINKEDIN_VERSION is '2026-07', which is not a LinkedIn API version" in refused.value.message


def test_one_image_is_uploaded_with_its_alt_text_and_the_token_goes_only_to_linkedins_upload_url(
        fake, http, linkedin, tmp_path):
    channel = channel_of(fake, http, session={"author": f"urn:li:person:{MEMBER['sub']}"})
    image = media_file(tmp_path, "a.jpg", jpeg_file(), "image/jpeg", "image", alt="A brass engine")
    run(linkedin.publish(channel, outgoing("<p>Look</p>", (image,)), None))
    [post] = fake.published
    [(urn, stored)] = fake.images.items()
    assert post["content"] == {"media": {"id": urn, "altText": "A brass engine"}}
    assert stored["bytes"] == jpeg_file() and stored["content_type"] == "image/jpeg"
    assert stored["authorization"] == f"Bearer {fake.token}"  # the upload URL is on the API's origin
    assert "Authorization" not in linkedin.upload_headers(channel, "https://elsewhere.example/up", "image/png")
    assert "Authorization" in linkedin.upload_headers(channel, "https://www.linkedin.com/dms-uploads/x", "image/png")
    assert "Authorization" not in linkedin.upload_headers(channel, "http://www.linkedin.com/dms-uploads/x", "image/png")


def test_several_images_make_a_multi_image_post(fake, http, linkedin, tmp_path):
    channel = channel_of(fake, http)
    images = tuple(media_file(tmp_path, f"{number}.png", png_file(pixel=bytes([number])), "image/png", "image")
                   for number in range(3))
    run(linkedin.publish(channel, outgoing("<p>Three</p>", images), None))
    [post] = fake.published
    assert post["content"] == {"multiImage": {"images": [{"id": urn} for urn in fake.images]}}
    assert [image["bytes"] for image in fake.images.values()] == [image.read() for image in images]


def test_a_video_is_uploaded_in_linkedins_parts_finalized_and_awaited_before_the_post(fake, http, linkedin, tmp_path):
    fake.part_size, fake.processing_polls = 1000, 2
    data = mp4_file(2500)
    video = media_file(tmp_path, "v.mp4", data, "video/mp4", "video")
    run(linkedin.publish(channel_of(fake, http), outgoing("<p>Watch</p>", (video,)), None))
    [(urn, stored)] = fake.videos.items()
    assert b"".join(stored["parts"][number] for number in sorted(stored["parts"])) == data
    assert len(stored["parts"]) == 3 and stored["finalized"]
    init = fake.requests_to("POST", "/rest/videos")[0].json()["initializeUploadRequest"]
    assert init["fileSizeBytes"] == 2500 and init["owner"] == f"urn:li:person:{MEMBER['sub']}"
    assert len(fake.requests_to("GET", r"/rest/videos/.+")) == 3  # PROCESSING twice, then AVAILABLE
    assert fake.published[0]["content"] == {"media": {"id": urn}}


def test_a_video_linkedin_cannot_process_is_rejected_naming_the_item(fake, http, linkedin, tmp_path, monkeypatch):
    original = fake.video_action

    def failing(request):
        result = original(request)
        for video in fake.videos.values():
            video["status"] = "PROCESSING_FAILED"
        return result
    fake.routes = [(method, pattern, fake.versioned(failing) if pattern.pattern == "/rest/videos" else handler)
                   for method, pattern, handler in fake.routes]
    video = media_file(tmp_path, "v.mp4", mp4_file(1200), "video/mp4", "video")
    with pytest.raises(Rejected) as refused:
        run(linkedin.publish(channel_of(fake, http), outgoing("<p>Watch</p>", (video,)), None))
    assert "could not process media item 1: Video codec not supported" in refused.value.message
    assert refused.value.item == "media item 1" and fake.published == []


def test_thread_parts_are_comments_on_the_post(fake, http, linkedin):
    channel = channel_of(fake, http)
    root = run(linkedin.publish(channel, outgoing("<p>The post</p>"), None))
    first = run(linkedin.publish(channel, outgoing("<p>Comment (one) #tag</p>", part=1), root))
    second = run(linkedin.publish(channel, outgoing("<p>Comment two</p>", part=2), first))
    assert [comment["object"] for comment in fake.comments] == [root.id, root.id]
    assert fake.comments[0]["message"] == {"text": "Comment \\(one\\) \\#tag"}
    assert fake.comments[0]["actor"] == f"urn:li:person:{MEMBER['sub']}"
    assert first.id == fake.comments[0]["commentUrn"] and second.reply_ref == {"root": root.id}
    assert first.url.startswith(f"{fake.url}/feed/update/{root.id}?commentUrn=urn%3Ali%3Acomment%3A")
    [request, _] = fake.requests_to("POST", r"/rest/socialActions/.+/comments")
    assert request.path == f"/rest/socialActions/{root.id.replace(':', '%3A')}/comments"


def test_a_throttled_post_is_retried_after_linkedins_wait(fake, http, linkedin):
    fake.fail_next("POST", "/rest/posts", 429, {"status": 429, "serviceErrorCode": 101, "code": "TOO_MANY_REQUESTS",
                                                "message": "Resource level throttle APPLICATION DAY limit for calls "
                                                           "to this resource is reached."}, {"Retry-After": "120"})
    with pytest.raises(Retryable) as throttled:
        run(linkedin.publish(channel_of(fake, http), outgoing("<p>Busy</p>"), None))
    assert throttled.value.status == 429 and throttled.value.after == 120
    assert "APPLICATION DAY limit" in throttled.value.message and fake.published == []


def test_a_revoked_token_on_posting_needs_a_reconnect(fake, http, linkedin):
    with pytest.raises(NeedsReconnect) as refused:
        run(linkedin.publish(channel_of(fake, http, session={"author": "urn:li:person:x"}, accessToken="revoked"),
                             outgoing("<p>Hi</p>"), None))
    assert refused.value.status == 401 and "Invalid access token" in refused.value.message


def test_a_duplicate_post_is_rejected_in_linkedins_words(fake, http, linkedin):
    channel = channel_of(fake, http)
    first = run(linkedin.publish(channel, outgoing("<p>Same words</p>"), None))
    with pytest.raises(Rejected) as refused:
        run(linkedin.publish(channel, outgoing("<p>Same words</p>"), None))
    assert refused.value.status == 422 and f"Content is a duplicate of {first.id}" in refused.value.message


def test_a_refused_field_is_named_from_linkedins_input_errors(fake, http, linkedin):
    with pytest.raises(Rejected) as refused:
        run(linkedin.publish(channel_of(fake, http), outgoing("<p>" + "a" * 3001 + "</p>"), None))
    assert "/commentary: Text is too long" in refused.value.message


def test_an_answer_not_in_linkedins_error_shape_is_never_quoted(fake, http, linkedin):
    fake.fail_next("POST", "/rest/posts", 400, "<html>proxy says no: secret-internal-host</html>",
                   {"Content-Type": "text/html"})
    with pytest.raises(Rejected) as refused:
        run(linkedin.publish(channel_of(fake, http), outgoing("<p>Hi</p>"), None))
    assert "secret-internal-host" not in refused.value.message and refused.value.body == ""


def test_a_lost_answer_to_the_post_is_an_unknown_outcome(fake, http, linkedin):
    channel = channel_of(fake, http, session={"author": f"urn:li:person:{MEMBER['sub']}"})
    fake.drop_next("POST", "/rest/posts", after_handling=True)
    with pytest.raises(OutcomeUnknown):
        run(linkedin.publish(channel, outgoing("<p>Maybe</p>"), None))
    assert len(fake.published) == 1 and "LinkedIn feed" in linkedin.where_to_check(channel)


# --- carousels -------------------------------------------------------------------------------------------

def jpeg_with_frame(width: int, height: int) -> bytes:
    """A JPEG's header up to its frame (SOF0, three components): enough for the carousel to size its page."""
    frame = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return jpeg_file()[:-2] + b"\xff\xc0" + struct.pack(">H", 2 + len(frame)) + frame + b"\xff\xd9"


def pdf_objects(pdf: bytes) -> list:
    """The objects a PDF's cross-reference table points at, checking that each offset is right."""
    table = int(pdf.rsplit(b"startxref\n", 1)[1].split(b"\n")[0])
    lines = pdf[table:].split(b"\n")
    count = int(lines[1].split()[1])
    offsets = [int(line.split()[0]) for line in lines[3:2 + count]]
    for number, offset in enumerate(offsets, 1):
        assert pdf[offset:].startswith(b"%d 0 obj\n" % number), number
    return [pdf[offset:pdf.index(b"endobj", offset)] for offset in offsets]


def test_a_carousel_is_the_images_as_pages_of_one_pdf_document(fake, http, linkedin, tmp_path):
    jpeg, png = jpeg_with_frame(40, 30), png_file(20, 10, pixel=b"\x10\x20\x30")
    images = (media_file(tmp_path, "1.jpg", jpeg, "image/jpeg", "image"),
              media_file(tmp_path, "2.png", png, "image/png", "image"))
    post = OutgoingPost("post1", "<p>Deck</p>", images, {"post_as_images_carousel": True, "carousel_name": "Q4 deck"},
                        0, "key", "2026-12-03T13:00:00Z")
    run(linkedin.publish(channel_of(fake, http), post, None))
    [(urn, document)] = fake.documents.items()
    assert fake.published[0]["content"] == {"media": {"title": "Q4 deck", "id": urn}}
    assert fake.images == {} and document["content_type"] == "application/pdf"
    pdf = document["bytes"]
    assert pdf.startswith(b"%PDF-1.4") and pdf.endswith(b"%%EOF\n")
    objects = pdf_objects(pdf)
    pages = [body for body in objects if b"/Type /Page " in body]
    assert [re.search(rb"/MediaBox \[0 0 (\d+) (\d+)\]", page).groups() for page in pages] == [
        (b"40", b"30"), (b"20", b"10")]
    assert b"/Count 2" in objects[1]
    assert jpeg in pdf and b"/Filter /DCTDecode" in pdf
    assert b"/Predictor 15 /Colors 3 /BitsPerComponent 8 /Columns 20" in pdf
    idat = png[png.index(b"IDAT") + 4:png.index(b"IEND") - 8]
    assert zlib.decompress(idat) and idat in pdf


def test_a_carousel_image_rustiz_cannot_embed_is_rejected_naming_it(fake, http, linkedin, tmp_path):
    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    transparent = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + header
                   + struct.pack(">I", zlib.crc32(b"IHDR" + header)) + png_file()[33:])
    images = (media_file(tmp_path, "1.jpg", jpeg_with_frame(4, 4), "image/jpeg", "image"),
              media_file(tmp_path, "2.png", transparent, "image/png", "image"))
    post = OutgoingPost("post1", "<p>Deck</p>", images, {"post_as_images_carousel": True}, 0, "key",
                        "2026-12-03T13:00:00Z")
    with pytest.raises(Rejected) as refused:
        run(linkedin.publish(channel_of(fake, http), post, None))
    assert refused.value.item == "media item 2" and "PNG images without transparency" in refused.value.message
    assert fake.documents == {} and fake.published == []


def test_an_image_type_linkedin_does_not_take_is_rejected_before_any_upload(fake, http, linkedin, tmp_path):
    image = media_file(tmp_path, "a.webp", webp_file(), "image/webp", "image")
    with pytest.raises(Rejected) as refused:
        run(linkedin.publish(channel_of(fake, http), outgoing("<p>Hi</p>", (image,)), None))
    assert refused.value.item == "media item 1" and "image/webp" in refused.value.message
    assert fake.requests_to("POST", "/rest/images") == [] and fake.published == []


# --- the pages' logos in the page choice ---------------------------------------------------------------------

ENGINES_LOGO = "urn:li:image:C4D0BAQEnginesCrop"


def test_the_page_choice_shows_each_pages_logo_from_one_images_batch_read(fake, http, page_provider):
    channel = channel_of(fake, http)
    choices = run(page_provider.step_choices(channel))
    assert [choice["picture"] for choice in choices] == [LOGOS[ENGINES_LOGO], None]  # the cropped logo; none
    [batch] = fake.requests_to("GET", "/rest/images")
    assert batch.query["ids"] == f"List({ENGINES_LOGO})" and batch.headers["linkedin-version"]
    chosen = run(page_provider.choose(channel, "2414183"))
    assert chosen.account == ("2414183", "Analytical Engines Ltd", "analytical-engines", LOGOS[ENGINES_LOGO])


def test_logos_linkedin_does_not_give_never_stop_the_page_choice(fake, http, page_provider):
    channel = channel_of(fake, http)
    for status, body in ((403, {"status": 403, "message": "Not enough permissions to access: images.BATCH_GET",
                                "code": "ACCESS_DENIED", "serviceErrorCode": 100}),
                         (500, {"status": 500, "message": "Internal Server Error"}), (200, "<html>ok</html>"),
                         (200, {"results": {ENGINES_LOGO: {"downloadUrl": "http://plain.example/logo.png"}}})):
        fake.fail_next("GET", "/rest/images", status, body)
        choices = run(page_provider.step_choices(channel))
        assert [(choice["id"], choice["picture"]) for choice in choices] == [("2414183", None), ("5590001", None)]
    assert logo_image({"logoV2": {"original": "urn:li:digitalmediaAsset:C4E0BAQEnginesOrig"}}) == \
        "urn:li:image:C4E0BAQEnginesOrig"
    assert logo_image({"logoV2": {"cropped": "not a urn"}}) is None and logo_image(None) is None
