"""The facebook provider object against a fake Facebook, over real sockets: Facebook Login (the short-lived
token exchanged for a long-lived one), the permissions check, a user's several pages and the choice of one,
posts as the page (text and link, photos uploaded as bytes, a small and a large video, comments, stories),
the page token read again after a reconnect, insights, and how Graph's errors are classified."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.facebook import FakeFacebook, graph_error
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import (
    Channel, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials
from support import follow_consent, jpeg_file, media_file, mp4_file, png_file, run

REDIRECT = "https://rustiz.example/integrations/social/facebook"
ADA, PAGE_ONE, PAGE_TWO = "10158000000000001", "101000000000001", "102000000000002"
provider = provider_for("facebook")


fake = fake_fixture(FakeFacebook)


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_id, fake.client_secret)


def channel_of(fake, http, app, credentials: dict | None = None, session: dict | None = None) -> Channel:
    saved: list = []
    channel = Channel("channel-1", "Analytical Engines", credentials or fake.credentials(), session, http,
                      saved.append)
    channel.app = app
    channel.saved = saved
    return channel


@pytest.fixture
def channel(fake, http, app) -> Channel:
    """A channel of the first page, chosen."""
    channel = channel_of(fake, http, app)
    connected = run(provider.choose(channel, PAGE_ONE))
    channel.session = connected.session
    return channel


def post(text: str = "<p>Hello from the engine room</p>", media: tuple = (), part: int = 0, **settings) -> OutgoingPost:
    return OutgoingPost("post-1", text, media, settings, part, "key-1", "2026-12-03T13:00:00Z")


def connected_channel(fake, http, app) -> Channel:
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    tokens = run(provider.exchange_code(http, app, follow_consent(url)["code"], REDIRECT, None, {}))
    return channel_of(fake, http, app, provider.credentials_for(tokens, {}))


# --- Facebook Login -----------------------------------------------------------------------------------------

def test_the_consent_url_is_facebook_logins_dialog_with_postiz_scopes(fake, http, app):
    assert (provider.pkce, provider.between_steps) == (False, True)
    assert provider.app_variables == ("FACEBOOK_APP_ID", "FACEBOOK_APP_SECRET")
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/v25.0/dialog/oauth"
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    assert query == {"client_id": fake.client_id, "redirect_uri": REDIRECT, "state": "state-1",
                     "response_type": "code", "scope": "pages_show_list,business_management,pages_manage_posts,"
                                                       "pages_manage_engagement,pages_read_engagement,read_insights"}


def test_facebooks_own_origins_are_the_defaults(monkeypatch):
    for name in ("AUTH", "API", "VIDEO", "UPLOAD"):
        monkeypatch.delenv(f"RUSTIZ_FACEBOOK_{name}_URL", raising=False)
    assert (provider.auth_base(), provider.api_base(), provider.video_base(), provider.upload_base()) == (
        "https://www.facebook.com", "https://graph.facebook.com", "https://graph-video.facebook.com",
        "https://rupload.facebook.com")
    assert "{FRONTEND_URL}/integrations/social/facebook" in provider.operator_guide
    assert "Business Verification" in provider.operator_guide


def test_the_code_becomes_a_long_lived_user_token_and_connect_reads_the_user(fake, http, app):
    channel = connected_channel(fake, http, app)
    token = channel.credentials["accessToken"]
    assert fake.user_tokens[token]["long"] is True
    exchanges = fake.requests_to("GET", "/v25.0/oauth/access_token")
    assert [request.query.get("grant_type") for request in exchanges] == [None, "fb_exchange_token"]
    assert exchanges[0].query["redirect_uri"] == REDIRECT
    assert fake.user_tokens.get(exchanges[1].query["fb_exchange_token"], {}).get("long") is False
    connected = run(provider.connect(channel))
    assert (connected.account.internal_id, connected.account.name) == (ADA, "Ada Lovelace")
    graph_calls = fake.requests_to("GET", "/v25.0/me") + fake.requests_to("GET", "/v25.0/me/permissions")
    assert all(call.headers["authorization"] == f"Bearer {token}" and call.query["appsecret_proof"] == fake.proof(token)
               and "access_token" not in call.query for call in graph_calls)


def test_a_declined_permission_is_refused_with_what_to_tick(fake, http, app):
    fake.declined = {"pages_manage_posts"}
    with pytest.raises(Rejected) as refused:
        run(provider.connect(connected_channel(fake, http, app)))
    assert "pages_manage_posts" in refused.value.message and "connect again" in refused.value.message


def test_a_used_code_is_refused_in_graphs_words(fake, http, app):
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    code = follow_consent(url)["code"]
    run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    with pytest.raises(Rejected) as refused:
        run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    assert "This authorization code has been used. (code 100, subcode 36009)" in refused.value.message


def test_a_cancelled_consent_comes_back_with_access_denied(fake, http, app):
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    assert follow_consent(url, "deny")["error"] == "access_denied"


# --- the pages ------------------------------------------------------------------------------------------------

def test_the_choices_are_every_page_the_user_manages_across_graphs_paging(fake, http, app):
    channel = channel_of(fake, http, app)
    choices = run(provider.step_choices(channel))
    assert [(choice["id"], choice["name"]) for choice in choices] == [
        (PAGE_ONE, "Analytical Engines"), (PAGE_TWO, "Difference Society")]
    assert choices[0]["picture"] == f"{fake.url}/pictures/{PAGE_ONE}.jpg"
    assert len(fake.requests_to("GET", "/v25.0/me/accounts")) == 2  # one page per answer: paging.next followed


def test_pages_of_the_users_businesses_are_offered_too_once_each(fake, http, app):
    fake.users[ADA]["businesses"] = ["300000000000001"]  # owns Engine Works, and is a client of page one
    channel = channel_of(fake, http, app)
    choices = run(provider.step_choices(channel))
    assert [choice["name"] for choice in choices] == ["Analytical Engines", "Difference Society", "Engine Works"]
    assert run(provider.choose(channel, "103000000000003")).account.name == "Engine Works"


def test_a_user_without_business_access_still_gets_the_dialogs_pages(fake, http, app):
    fake.declined = {"business_management"}
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    tokens = run(provider.exchange_code(http, app, follow_consent(url)["code"], REDIRECT, None, {}))
    channel = channel_of(fake, http, app, provider.credentials_for(tokens, {}))
    assert len(run(provider.step_choices(channel))) == 2


def test_a_page_where_the_user_cannot_create_content_is_not_offered(fake, http, app):
    fake.pages[PAGE_TWO]["tasks"] = ["ANALYZE"]
    assert [choice["id"] for choice in run(provider.step_choices(channel_of(fake, http, app)))] == [PAGE_ONE]


def test_choosing_a_page_gives_the_page_account_and_caches_its_token(fake, http, app):
    channel = channel_of(fake, http, app)
    connected = run(provider.choose(channel, PAGE_ONE))
    account = connected.account
    assert (account.internal_id, account.name, account.profile) == (PAGE_ONE, "Analytical Engines", "analyticalengines")
    assert connected.session["page"] == PAGE_ONE and connected.session["pageToken"] in fake.page_tokens
    with pytest.raises(Rejected):
        run(provider.choose(channel, "999"))


def test_a_reconnect_reads_the_page_token_again(fake, http, app, tmp_path):
    channel = channel_of(fake, http, app)
    channel.session = run(provider.choose(channel, PAGE_ONE)).session
    first = channel.session["pageToken"]
    run(provider.publish(channel, post(), None))
    fake.expire_user_tokens()
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.publish(channel, post(), None))
    assert "code 190" in refused.value.message
    channel.credentials = fake.credentials()  # the reconnect: a new user token, the session kept
    release = run(provider.publish(channel, post("<p>After the reconnect</p>"), None))
    assert channel.session["pageToken"] != first and fake.objects[release.id]["page_token"] == channel.session["pageToken"]
    assert fake.objects[release.id]["user_token"] == channel.credentials["accessToken"]


def test_a_user_who_no_longer_manages_the_page_must_reconnect_with_one_who_does(fake, http, app, channel):
    channel.credentials = fake.credentials("10158000000000002")  # Charles manages only the second page
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.publish(channel, post(), None))
    assert "does not manage page" in refused.value.message


# --- publishing --------------------------------------------------------------------------------------------

def test_a_text_post_with_a_link_goes_to_the_feed_as_the_page(fake, http, channel):
    release = run(provider.publish(channel, post(url="https://example.com/engine"), None))
    made = fake.objects[release.id]
    assert (made["message"], made["link"]) == ("Hello from the engine room", "https://example.com/engine")
    assert made["page_token"] == channel.session["pageToken"]
    assert release.url == "https://www.facebook.com/" + release.id.replace("_", "/posts/")


def test_a_short_text_post_keeps_its_background_preset_and_a_long_one_does_not(fake, http, channel):
    short = run(provider.publish(channel, post(text_format_preset_id="106018623298955"), None))
    long = run(provider.publish(channel, post("<p>" + "x" * 200 + "</p>", text_format_preset_id="106018623298955"), None))
    assert (fake.objects[short.id]["preset"], fake.objects[long.id]["preset"]) == ("106018623298955", None)


def test_photos_are_uploaded_as_bytes_unpublished_then_attached(fake, http, channel, tmp_path):
    photos = (media_file(tmp_path, png_file(), "a.png", "image/png", alt="The engine"),
              media_file(tmp_path, jpeg_file(), "b.jpg", "image/jpeg"))
    release = run(provider.publish(channel, post(media=photos), None))
    assert fake.objects[release.id]["photos"] == [png_file(), jpeg_file()]
    uploads = fake.requests_to("POST", f"/v25.0/{PAGE_ONE}/photos")
    assert [upload.multipart()["published"][1] for upload in uploads] == [b"false", b"false"]
    assert uploads[0].multipart()["alt_text_custom"][1] == b"The engine"
    assert [made["alt"] for made in fake.objects.values() if made["kind"] == "photo"] == ["The engine", ""]


def test_a_small_video_goes_in_one_request_with_the_text_as_description(fake, http, channel, tmp_path):
    video = media_file(tmp_path, mp4_file(4096), "clip.mp4", "video/mp4", "video")
    release = run(provider.publish(channel, post(media=(video,)), None))
    made = fake.objects[release.id]
    assert (made["kind"], made["data"], made["description"]) == ("video", mp4_file(4096), "Hello from the engine room")
    assert release.url == f"{fake.url}/{PAGE_ONE}/videos/{release.id}/"  # Graph's path on the auth origin


def test_a_large_video_goes_in_facebooks_chunks(fake, http, channel, tmp_path, monkeypatch):
    monkeypatch.setattr(provider, "simple_video_bytes", 10_000)
    fake.chunk_size = 8192
    data = mp4_file(30_000)
    video = media_file(tmp_path, data, "long.mp4", "video/mp4", "video")
    release = run(provider.publish(channel, post(media=(video,)), None))
    assert fake.objects[release.id]["data"] == data and fake.objects[release.id]["published"] is True
    assert fake.chunks_received == [8192, 8192, 8192, 30_000 - 3 * 8192]


def test_a_video_chunk_is_never_bigger_than_the_cap_whatever_facebook_asks(fake, http, channel, tmp_path, monkeypatch):
    from rustiz_features.publishers import facebook as facebook_module
    monkeypatch.setattr(provider, "simple_video_bytes", 10_000)
    monkeypatch.setattr(facebook_module, "CHUNK_CAP", 12_000)
    fake.chunk_size = 10**9  # Facebook asks for the whole file at once
    data = mp4_file(30_000)
    release = run(provider.publish(channel, post(media=(media_file(tmp_path, data, "v.mp4", "video/mp4", "video"),)),
                                   None))
    assert fake.objects[release.id]["data"] == data and fake.chunks_received == [12_000, 12_000, 6_000]


def test_photos_and_a_video_together_are_refused_before_scheduling():
    values = [{"content": "<p>x</p>", "image": [{"path": "/uploads/a.mp4"}, {"path": "/uploads/b.png"}]}]
    assert "photos or one video" in provider.post_problem({}, values, {})
    assert provider.post_problem({}, values, {"post_type": "story"}) is None
    comment = [{"content": "<p>x</p>", "image": []}, {"content": "<p>y</p>", "image": [{"path": "/uploads/a.mp4"}]}]
    assert "comment takes at most one photo" in provider.post_problem({}, comment, {})
    assert "story takes no comments" in provider.post_problem({}, comment, {"post_type": "story"})


def test_thread_parts_are_comments_of_the_page_on_the_post(fake, http, channel, tmp_path):
    root = run(provider.publish(channel, post(), None))
    first = run(provider.publish(channel, post("<p>First comment</p>", part=1), root))
    photo = (media_file(tmp_path, png_file(), "c.png", "image/png"),)
    second = run(provider.publish(channel, post("<p>Second</p>", media=photo, part=2), first))
    assert [fake.objects[item.id]["on"] for item in (first, second)] == [root.id, root.id]
    assert fake.objects[second.id]["photo"] == png_file()
    assert fake.objects[first.id]["page_token"] == channel.session["pageToken"]


def test_a_story_publishes_each_media_and_a_retry_skips_those_already_out(fake, http, channel, tmp_path, monkeypatch):
    monkeypatch.setattr(provider, "poll_interval", 0.01)
    media = (media_file(tmp_path, png_file(), "s.png", "image/png"),
             media_file(tmp_path, mp4_file(2048), "s.mp4", "video/mp4", "video"))
    fake.fail_next("POST", rf"/v25.0/{PAGE_ONE}/video_stories", 500, graph_error(2, "Service temporarily unavailable"))
    with pytest.raises(Retryable):
        run(provider.publish(channel, post(media=media, post_type="story"), None))
    release = run(provider.publish(channel, post(media=media, post_type="story"), None))
    stories = [made for made in fake.objects.values() if made["kind"] == "story"]
    assert [story["media"] for story in stories] == [png_file(), mp4_file(2048)]
    assert release.url == f"{fake.url}/stories/{release.id}" and "facebookStories" not in channel.session


def test_a_video_story_upload_url_off_facebooks_upload_host_is_not_sent_the_token(fake, http, channel, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.setenv("RUSTIZ_FACEBOOK_UPLOAD_URL", "https://rupload.facebook.com")
    video = media_file(tmp_path, mp4_file(2048), "s.mp4", "video/mp4", "video")
    with pytest.raises(Retryable) as refused:
        run(provider.publish(channel, post(media=(video,), post_type="story"), None))
    assert "upload host" in refused.value.message
    assert fake.requests_to("POST", r"/video-upload/.*") == []


# --- errors --------------------------------------------------------------------------------------------------

def test_throttling_is_retryable_after_the_time_meta_gives(fake, http, channel):
    fake.throttle_next(rf"/v25.0/{PAGE_ONE}/feed", code=32, minutes=5)
    with pytest.raises(Retryable) as throttled:
        run(provider.publish(channel, post(), None))
    assert throttled.value.after == 300 and "(code 32)" in throttled.value.message


def test_a_passing_graph_failure_on_the_post_itself_may_have_posted_so_it_is_not_sent_again(fake, http, channel):
    fake.fail_next("POST", rf"/v25.0/{PAGE_ONE}/feed", 500, graph_error(2, "Service temporarily unavailable",
                                                                       is_transient=True))
    with pytest.raises(OutcomeUnknown) as unknown:
        run(provider.publish(channel, post(), None))
    assert "Service temporarily unavailable (code 2)" in unknown.value.message


@pytest.mark.parametrize("subcode, kind, words", [
    (1366046, Rejected, "smaller than 4 MB"), (1390008, Retryable, "posting too fast"),
    (1346003, Rejected, "abusive"), (4854002, Rejected, "confirm their identity"),
    (492, NeedsReconnect, "no longer has a role on this page")])
def test_graph_subcodes_get_clear_words(fake, http, channel, subcode, kind, words):
    code = 368 if subcode == 1390008 else 190 if subcode == 492 else 1 if subcode == 1366046 else 100
    fake.fail_next("POST", rf"/v25.0/{PAGE_ONE}/feed", 400, graph_error(code, "Graph's own words", subcode))
    with pytest.raises(kind) as raised:
        run(provider.publish(channel, post(), None))
    assert words in raised.value.message and "Graph's own words" in raised.value.message


def test_a_missing_permission_fails_with_the_advice(fake, http, channel):
    fake.fail_next("POST", rf"/v25.0/{PAGE_ONE}/feed", 403, graph_error(
        200, "(#200) The user hasn't authorized the application to perform this action"))
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(), None))
    assert "full control of the page" in refused.value.message


def test_posting_with_a_users_token_is_a_reconnect(fake, http, channel, tmp_path):
    fake.fail_next("POST", rf"/v25.0/{PAGE_ONE}/photos", 400, graph_error(
        100, "Unpublished posts must be posted to a page as the page itself."))
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.publish(channel, post(media=(media_file(tmp_path, png_file(), "x.png", "image/png"),)), None))
    assert refused.value.item == "photo 1"


def test_a_failed_permalink_read_does_not_fail_a_published_post(fake, http, channel):
    fake.fail_next("GET", r"/v25.0/\d+_\d+", 500, graph_error(1, "An unknown error has occurred."))
    release = run(provider.publish(channel, post(), None))
    assert release.url == f"{fake.url}/{release.id}" and release.id in fake.objects


# --- analytics -----------------------------------------------------------------------------------------------

def test_page_insights_are_daily_series_of_current_metrics(fake, http, channel):
    figures = run(provider.channel_analytics(channel, 7))
    series = {item["label"]: item["data"] for item in figures}
    assert set(series) == {"Page reach", "Media views", "Posts engagement", "New followers"}
    assert series["Media views"][0] == {"total": "11", "date": "2026-12-01"}
    [request] = fake.requests_to("GET", rf"/v25.0/{PAGE_ONE}/insights")
    assert request.query["period"] == "day" and int(request.query["until"]) - int(request.query["since"]) == 7 * 86400


def test_post_and_video_insights(fake, http, channel, tmp_path):
    feed = run(provider.publish(channel, post(), None))
    totals = {item["label"]: item["data"][0]["total"] for item in run(provider.post_analytics(channel, feed, 7))}
    assert totals == {"Reach": "120", "Reactions": "9", "Clicks": "15"}
    video = run(provider.publish(channel, post(media=(media_file(tmp_path, mp4_file(1024), "v.mp4", "video/mp4",
                                                                 "video"),)), None))
    totals = {item["label"]: item["data"][0]["total"] for item in run(provider.post_analytics(channel, video, 7))}
    assert totals == {"Impressions": "300", "Views": "90", "Reactions": "4"}
    assert run(provider.post_analytics(channel, Release("1999", ""), 7)) == []
