"""Tumblr: the provider object against a fake Tumblr over real sockets (the consent URL, the code exchange
and refresh and their refusals, the blogs to choose from, NPF posts as JSON and as multipart with the media
named by their blocks, the states, tags, errors in Tumblr's shape, rate limits, delete, analytics), then end
to end through the built server: connect, pick a blog, publish at its time, refresh, analytics."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.tumblr import FakeTumblr, tumblr_error
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import (
    Channel, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from support import (
    API, api, connect_oauth, expire_token_in, follow_consent, get_post, media_file, mp4_file, png_file, refresh_needed, refused_post,
    run, settled, scheduled, uploaded, waiting_for_reconnect,
)

REDIRECT = "https://rustiz.example/integrations/social/tumblr"
SESSION = {"blog": "t:AdaPrimaryUuid0001", "blogName": "ada-codes", "blogUrl": "https://ada-codes.tumblr.com"}
provider = provider_for("tumblr")

fake = fake_fixture(FakeTumblr)


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_id, fake.client_secret)


@pytest.fixture
def channel(fake, http) -> Channel:
    return Channel("channel-1", "Ada writes code", fake.credentials(), SESSION, http)


def post(html_text: str = "<p>Hello Tumblr</p>", media: tuple = (), **settings) -> OutgoingPost:
    return OutgoingPost("post-1", html_text, media, settings, 0, "key-1", "2026-12-06T13:00:00Z")


def connected_tokens(http, app):
    callback = follow_consent(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))
    return run(provider.exchange_code(http, app, callback["code"], REDIRECT, None, {}))


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_consent_url_asks_for_write_and_offline_access_without_pkce(fake, http, app):
    assert (provider.pkce, provider.between_steps, provider.threads, provider.can_delete) == (False, True, False, True)
    assert provider.app_variables == ("TUMBLR_CLIENT_ID", "TUMBLR_CLIENT_SECRET")
    parts = urlsplit(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/oauth2/authorize"
    assert {name: values[-1] for name, values in parse_qs(parts.query).items()} == {
        "response_type": "code", "client_id": fake.client_id, "redirect_uri": REDIRECT, "state": "state-1",
        "scope": "write offline_access"}


def test_tumblrs_own_origins_are_the_defaults_without_overrides(monkeypatch):
    monkeypatch.delenv("RUSTIZ_TUMBLR_AUTH_URL", raising=False)
    monkeypatch.delenv("RUSTIZ_TUMBLR_API_URL", raising=False)
    assert (provider.auth_base(), provider.api_base()) == ("https://www.tumblr.com", "https://api.tumblr.com")
    assert "{FRONTEND_URL}/integrations/social/tumblr" in provider.operator_guide


def test_the_code_exchange_sends_the_app_in_the_form_and_keeps_the_refresh_token(fake, http, app):
    tokens = connected_tokens(http, app)
    assert tokens.access_token in fake.access_tokens and tokens.refresh_token in fake.refresh_tokens
    assert tokens.expires_in == 2520
    [request] = fake.requests_to("POST", "/v2/oauth2/token")
    assert "authorization" not in request.headers
    assert request.form() == {"grant_type": "authorization_code", "code": request.form()["code"],
                              "redirect_uri": REDIRECT, "client_id": fake.client_id, "client_secret": fake.client_secret}


def test_a_consent_without_offline_access_is_refused_as_the_channel_would_die_in_42_minutes(fake, http, app,
                                                                                          monkeypatch):
    monkeypatch.setattr(type(provider), "scopes", ("write",))
    with pytest.raises(Rejected) as refused:
        connected_tokens(http, app)
    assert "offline_access" in refused.value.message


def test_a_cancelled_consent_comes_back_with_access_denied(fake, http, app):
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    assert follow_consent(url, "deny") == {"error": "access_denied", "state": "state-1"}


def test_a_used_code_is_token_refused(fake, http, app):
    code = follow_consent(run(provider.begin(http, app, REDIRECT, "state-1", None, {})))["code"]
    run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    with pytest.raises(TokenRefused) as refused:
        run(provider.exchange_code(http, app, code, REDIRECT, None, {}))
    assert refused.value.status == 400 and "invalid_grant: Invalid authorization code" in refused.value.message


def test_a_refresh_rotates_the_refresh_token_and_a_dead_one_is_token_refused(fake, http, app):
    first = connected_tokens(http, app)
    refreshed = run(provider.refresh_tokens(http, app, first.refresh_token))
    assert refreshed.access_token in fake.access_tokens and refreshed.refresh_token in fake.refresh_tokens
    assert refreshed.refresh_token != first.refresh_token
    with pytest.raises(TokenRefused) as refused:
        run(provider.refresh_tokens(http, app, first.refresh_token))  # used: Tumblr's 401
    assert refused.value.status == 401 and "Refresh token has expired" in refused.value.message


def test_a_401_on_refresh_in_no_known_shape_is_still_a_dead_refresh_token(fake, http, app):
    first = connected_tokens(http, app)
    fake.fail_next("POST", "/v2/oauth2/token", 401, "<html>Unauthorized</html>", {"Content-Type": "text/html"})
    with pytest.raises(TokenRefused) as refused:
        run(provider.refresh_tokens(http, app, first.refresh_token))
    assert "<html>" not in refused.value.message


def test_a_wrong_app_secret_needs_reconnect_but_is_not_a_dead_grant(fake, http, app):
    first = connected_tokens(http, app)
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.refresh_tokens(http, AppCredentials(fake.client_id, "wrong"), first.refresh_token))
    assert not isinstance(refused.value, TokenRefused) and "invalid_client" in refused.value.message


def test_a_503_or_429_on_refresh_is_retryable(fake, http, app):
    first = connected_tokens(http, app)
    fake.fail_next("POST", "/v2/oauth2/token", 503, tumblr_error(503), {"Retry-After": "30"})
    with pytest.raises(Retryable) as passing:
        run(provider.refresh_tokens(http, app, first.refresh_token))
    assert passing.value.after == 30.0
    fake.fail_next("POST", "/v2/oauth2/token", 429, tumblr_error(429))
    with pytest.raises(Retryable):
        run(provider.refresh_tokens(http, app, first.refresh_token))
    assert run(provider.refresh_tokens(http, app, first.refresh_token)).access_token in fake.access_tokens


# --- the account and its blogs -----------------------------------------------------------------------------

def test_connect_names_the_account_and_the_choices_are_its_blogs(fake, http):
    probe = Channel("", "", fake.credentials(), None, http)
    connected = run(provider.connect(probe))
    avatar = f"{fake.url}/v2/blog/ada-codes.tumblr.com/avatar/128"
    assert connected.account == ("user:ada-codes", "ada-codes", "ada-codes", avatar)
    assert run(provider.step_choices(probe)) == [
        {"id": "ada-codes", "name": "Ada writes code", "picture": avatar},
        {"id": "engines-club", "name": "The Engines Club", "picture": f"{fake.url}/v2/blog/engines-club.tumblr.com/avatar/128"}]
    chosen = run(provider.choose(probe, "engines-club"))
    assert chosen.account[:3] == ("t:EnginesClubUuid02", "The Engines Club", "engines-club")
    assert chosen.session == {"blog": "t:EnginesClubUuid02", "blogName": "engines-club",
                              "blogUrl": "https://engines.example"}
    with pytest.raises(Rejected):
        run(provider.choose(probe, "someone-else"))


def test_an_expired_token_needs_reconnect_with_tumblrs_words(fake, http):
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.connect(Channel("", "", {"accessToken": "tat_expired"}, None, http)))
    assert refused.value.status == 401 and refused.value.message.startswith("Unable to authorize (code 1016) (on the account")
    assert '"code":1016' in refused.value.body


def test_a_user_info_without_a_user_is_retryable_not_quoted(fake, http):
    fake.fail_next("GET", "/v2/user/info", 200, {"meta": {"status": 200, "msg": "OK"}, "response": {}})
    with pytest.raises(Retryable) as odd:
        run(provider.connect(Channel("", "", fake.credentials(), None, http)))
    assert "an account with a name" in odd.value.message


# --- posts -----------------------------------------------------------------------------------------------

def test_a_text_post_is_npf_json_with_its_title_link_tags_and_source(fake, channel):
    release = run(provider.publish(channel, post("<p>First <strong>paragraph</strong></p><p>Second</p>",
                                                 title="Engines", link="www.example.com/engines",
                                                 tags="engines, #math ,", sourceUrl="https://example.com/src"), None))
    [made] = fake.published
    assert (release.id, release.url) == (made["id"], f"https://ada-codes.tumblr.com/post/{made['id']}")
    assert made["content"] == [{"type": "text", "subtype": "heading1", "text": "Engines"},
                               {"type": "text", "text": "First paragraph",
                                "formatting": [{"start": 6, "end": 15, "type": "bold"}]},
                               {"type": "text", "text": "Second"},
                               {"type": "link", "url": "https://www.example.com/engines"}]
    assert (made["tags"], made["source_url"], made["state"], made["blog"]) == (
        "engines,math", "https://example.com/src", "published", "ada-codes")
    [request] = fake.requests_to("POST", r"/v2/blog/[^/]+/posts")
    assert request.path == "/v2/blog/t:AdaPrimaryUuid0001/posts"  # by uuid: a renamed blog keeps working
    assert request.headers["content-type"] == "application/json"


def test_a_long_paragraph_is_cut_into_text_blocks_of_4096(fake, channel):
    run(provider.publish(channel, post(f"<p>{'a' * 4000}<strong>{'b' * 1000}</strong></p>"), None))
    assert [len(block["text"]) for block in fake.published[0]["content"]] == [4096, 904]
    assert [block["formatting"] for block in fake.published[0]["content"]] == [
        [{"start": 4000, "end": 4096, "type": "bold"}], [{"start": 0, "end": 904, "type": "bold"}]]


def test_headings_list_items_bold_and_links_become_npf_subtypes_and_formatting(fake, channel):
    html = ('<h2>Notes</h2><p>See <a href="https://example.com/engine">the <strong>engine</strong></a>,'
            ' <u>today</u><br>or tomorrow</p><ul>\n<li>one</li><li>two</li></ul><p>x &amp; y</p>')
    run(provider.publish(channel, post(html), None))
    assert fake.published[0]["content"] == [
        {"type": "text", "text": "Notes", "subtype": "heading2"},
        {"type": "text", "text": "See the engine, today\nor tomorrow", "formatting": [
            {"start": 8, "end": 14, "type": "bold"},
            {"start": 4, "end": 14, "type": "link", "url": "https://example.com/engine"}]},
        {"type": "text", "text": "one", "subtype": "unordered-list-item"},
        {"type": "text", "text": "two", "subtype": "unordered-list-item"},
        {"type": "text", "text": "x & y"}]


@pytest.mark.parametrize("state, stored", [("queue", "queued"), ("draft", "draft"), ("private", "private")])
def test_the_state_setting_is_sent_in_tumblrs_words(fake, channel, state, stored):
    run(provider.publish(channel, post(state=state), None))
    assert fake.published[0]["state"] == stored


def test_pictures_and_a_video_go_as_multipart_parts_named_by_their_blocks(fake, channel, tmp_path):
    picture = media_file(tmp_path, png_file(3, 2), "engine.png", "image/png", alt="The difference engine")
    video = media_file(tmp_path, mp4_file(4096), "run.mp4", "video/mp4", kind="video")
    run(provider.publish(channel, post("<p>Look</p>", (picture, video)), None))
    [made] = fake.published
    assert made["content"][1:] == [
        {"type": "image", "media": [{"type": "image/png", "identifier": "media-0", "width": 3, "height": 2}],
         "alt_text": "The difference engine"},
        {"type": "video", "provider": "tumblr",
         "media": {"type": "video/mp4", "identifier": "media-1", "width": 540, "height": 405}}]
    assert made["files"] == {"media-0": png_file(3, 2), "media-1": mp4_file(4096)}
    [request] = fake.requests_to("POST", r"/v2/blog/[^/]+/posts")
    parts = request.multipart()
    assert list(parts) == ["json", "media-0", "media-1"] and parts["json"][0] is None
    assert json.loads(parts["json"][1])["content"] == made["content"]


def test_an_oversize_picture_is_rejected_with_tumblrs_words(fake, channel, tmp_path):
    fake.largest_media = 100
    picture = media_file(tmp_path, png_file(20, 20, padding=200), "big.png", "image/png")
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(media=(picture,)), None))
    assert refused.value.status == 400 and refused.value.message == "The uploaded media is too large (code 8005)"
    assert fake.published == []


@pytest.mark.parametrize("status, code, kind, words", [
    (403, 8023, Rejected, "daily posting limit"), (403, 8022, Rejected, "queue is full"),
    (403, 8004, Rejected, "uploaded pictures"), (403, 8010, Retryable, "transcoding"),
    (500, 8006, Retryable, "upload"), (403, None, Rejected, "Forbidden"), (503, None, Retryable, "Unavailable"),
    (500, None, OutcomeUnknown, "server error")])
def test_tumblrs_subcodes_decide_the_kind_of_failure(fake, channel, status, code, kind, words):
    titles = {8010: "A video is still transcoding", 8006: "Unknown upload error"}
    fake.fail_next("POST", r"/v2/blog/[^/]+/posts", status, tumblr_error(status, titles.get(code, ""), code))
    with pytest.raises(kind) as failed:
        run(provider.publish(channel, post(), None))
    assert type(failed.value) is kind and words.lower() in failed.value.message.lower(), failed.value.message
    if code == 8010:
        assert failed.value.after == 300.0


def test_the_daily_posting_limit_of_the_fake_is_tumblrs_403_8023(fake, channel):
    fake.posts_left_today = 0
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(), None))
    assert not isinstance(refused.value, NeedsReconnect) and "250 posts a day" in refused.value.message


def test_a_429_waits_for_the_spent_window_and_throttles_the_channel(fake, channel):
    fake.fail_next("POST", r"/v2/blog/[^/]+/posts", 429, tumblr_error(429),
                   {"X-Ratelimit-Perhour-Remaining": "0", "X-Ratelimit-Perhour-Reset": "753"})
    with pytest.raises(Retryable) as throttled:
        run(provider.publish(channel, post(), None))
    assert (throttled.value.status, throttled.value.after, throttled.value.message) == (429, 753.0, "Limit Exceeded")
    assert channel.throttled_for == 753.0
    assert run(provider.publish(channel, post(), None)).id == fake.published[0]["id"]


def test_an_unknown_error_body_is_described_not_quoted(fake, channel):
    fake.fail_next("POST", r"/v2/blog/[^/]+/posts", 400, "<html>a proxy's secret page</html>",
                   {"Content-Type": "text/html"})
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(), None))
    assert "secret" not in refused.value.message and refused.value.body == ""


def test_a_post_whose_answer_is_lost_or_malformed_is_outcome_unknown(fake, channel):
    fake.drop_next("POST", r"/v2/blog/[^/]+/posts", after_handling=True)
    with pytest.raises(OutcomeUnknown):
        run(provider.publish(channel, post(), None))
    fake.fail_next("POST", r"/v2/blog/[^/]+/posts", 201, {"meta": {"status": 201, "msg": "Created"}, "response": []})
    with pytest.raises(OutcomeUnknown):
        run(provider.publish(channel, post(), None))
    assert len(fake.published) == 1 and provider.resend_is_safe is False


def test_a_channel_without_a_chosen_blog_needs_reconnect(fake, http):
    with pytest.raises(NeedsReconnect):
        run(provider.publish(Channel("c", "n", fake.credentials(), None, http), post(), None))
    assert fake.requests == []


# --- delete and analytics ----------------------------------------------------------------------------------

def test_delete_removes_the_post_and_an_already_gone_one_is_fine(fake, channel):
    release = run(provider.publish(channel, post(), None))
    run(provider.delete(channel, release))
    assert fake.posts == {}
    [request] = fake.requests_to("POST", r"/v2/blog/[^/]+/post/delete")
    assert request.form() == {"id": release.id}
    run(provider.delete(channel, release))  # 404: already deleted
    fake.access_tokens.clear()
    with pytest.raises(NeedsReconnect):
        run(provider.delete(channel, release))


def test_analytics_are_the_blogs_followers_and_posts_and_the_posts_notes(fake, channel):
    release = run(provider.publish(channel, post(), None))
    fake.posts[release.id]["notes"] = 9
    figures = {item["label"]: item["data"][0]["total"] for item in run(provider.post_analytics(channel, release, 7))}
    assert figures == {"Notes": "9", "Likes": "6", "Reblogs": "3"}
    counts = {item["label"]: item["data"][0]["total"] for item in run(provider.channel_analytics(channel, 30))}
    assert counts == {"Followers": "1200", "Posts": "3"}


# --- end to end, through the built server ------------------------------------------------------------------

@pytest.fixture
def tumblr():
    platform = FakeTumblr()
    yield platform
    platform.close()


@pytest.fixture
def server(start_server_with_fakes, tumblr):
    return start_server_with_fakes(env={**tumblr.env, "RUSTIZ_RETRY_BASE": "0.3"})


def blog_channel(server, blog: str = "ada-codes") -> str:
    back = connect_oauth(server, "tumblr")
    assert back["notice"] == "pick", back
    status, row = api(server, "POST", f"{API}/integrations/{back['channel']}/steps", {"id": blog})
    assert status == 200 and row["inBetweenSteps"] is False, row
    return back["channel"]


def test_connect_pick_a_blog_and_publish_a_picture_post_with_tags(server, tumblr):
    back = connect_oauth(server, "tumblr")
    channel_id = back["channel"]
    assert api(server, "GET", f"{API}/integrations/{channel_id}")[1]["inBetweenSteps"] is True
    status, choices = api(server, "GET", f"{API}/integrations/{channel_id}/steps")
    assert status == 200 and [choice["id"] for choice in choices] == ["ada-codes", "engines-club"]
    status, row = api(server, "POST", f"{API}/integrations/{channel_id}/steps", {"id": "engines-club"})
    assert status == 200 and (row["name"], row["inBetweenSteps"]) == ("The Engines Club", False), row
    picture = uploaded(server, png_file(4, 3), "png")
    done = settled(server, scheduled(server, channel_id, "<p>Gears</p>", images=[picture], provider="tumblr",
                                     settings={"tags": "engines,gears", "state": "queue"}))
    assert done["state"] == "PUBLISHED", done
    [made] = tumblr.published
    assert (made["blog"], made["tags"], made["state"]) == ("engines-club", "engines,gears", "queued")
    assert made["files"] == {"media-0": png_file(4, 3)}
    assert done["releaseURL"] == f"https://engines.example/post/{made['id']}"


def test_a_refused_consent_changes_nothing(server, tumblr):
    back = connect_oauth(server, "tumblr", link="deny")
    assert back["problem"] == "denied" and api(server, "GET", f"{API}/integrations")[1] == []


def test_an_expired_access_token_is_refreshed_before_publishing(server, tumblr):
    channel_id = blog_channel(server)
    expire_token_in(server, channel_id, 10)  # inside the refresh margin
    assert settled(server, scheduled(server, channel_id, "<p>Fresh</p>", provider="tumblr"))["state"] == "PUBLISHED"
    refreshes = [request.form()["grant_type"] for request in tumblr.requests_to("POST", "/v2/oauth2/token")]
    assert refreshes == ["authorization_code", "refresh_token"]
    assert not refresh_needed(server, channel_id)


def test_a_dead_refresh_token_waits_for_a_reconnect_which_keeps_the_blog(server, tumblr):
    channel_id = blog_channel(server, "engines-club")
    tumblr.refresh_tokens.clear()
    tumblr.access_tokens.clear()
    waiting = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>Later</p>", provider="tumblr"))
    assert refresh_needed(server, channel_id), waiting
    back = connect_oauth(server, "tumblr", refresh=channel_id)
    assert (back["notice"], back["channel"]) == ("reconnected", channel_id), back
    assert settled(server, waiting["id"])["state"] == "PUBLISHED"
    assert tumblr.published[-1]["blog"] == "engines-club"
    assert api(server, "GET", f"{API}/integrations/{channel_id}")[1]["name"] == "The Engines Club"


def test_the_blogs_and_a_posts_analytics_through_the_api(server, tumblr):
    channel_id = blog_channel(server)
    done = settled(server, scheduled(server, channel_id, "<p>Counted</p>", provider="tumblr"))
    tumblr.posts[done["releaseId"]]["notes"] = 3
    status, answer = api(server, "GET", f"{API}/analytics/{channel_id}?date=7")
    assert status == 200 and {item["label"]: item["data"][0]["total"] for item in answer} == {
        "Followers": "1200", "Posts": "3"}, answer
    status, answer = api(server, "GET", f"{API}/analytics/post/{done['id']}")
    assert status == 200 and {item["label"]: item["data"][0]["total"] for item in answer} == {
        "Notes": "3", "Likes": "2", "Reblogs": "1"}, answer
    assert get_post(server, done["id"])["releaseId"] == done["releaseId"]


def test_a_wrong_state_is_refused_when_scheduled(server, tumblr):
    channel_id = blog_channel(server)
    status, answer = api(server, "POST", f"{API}/posts", {
        "type": "now", "date": "2026-12-06T10:00:00.000Z", "shortLink": False, "tags": [],
        "posts": [{"integration": {"id": channel_id}, "value": [{"content": "<p>x</p>", "image": []}],
                   "settings": {"__type": "tumblr", "state": "scheduled"}}]})
    assert status == 400 and "state" in json.dumps(answer), answer
    assert tumblr.published == []


def test_the_integration_settings_describe_the_state_beside_postizs_fields(server, tumblr):
    channel_id = blog_channel(server)
    status, answer = api(server, "GET", f"{API}/integration-settings/{channel_id}")
    assert status == 200, answer
    text = json.dumps(answer)
    assert all(name in text for name in ('"title"', '"link"', '"sourceUrl"', '"tags"', '"queue"')), answer



def test_thread_parts_are_refused_when_scheduled_as_tumblr_has_no_replies(server, tumblr):
    channel_id = blog_channel(server)
    answer = refused_post(server, channel_id, "<p>One</p>", "<p>Two</p>", provider="tumblr")
    assert "no replies or comments" in answer and tumblr.published == []


def test_a_channel_still_waiting_for_its_blog_has_no_figures_and_asks_tumblr_nothing(fake, http):
    assert run(provider.channel_analytics(Channel("c", "n", fake.credentials(), None, http), 30)) is None
    assert fake.requests == []


def test_a_429_with_no_spent_window_follows_its_retry_after(fake, channel):
    fake.fail_next("POST", r"/v2/blog/[^/]+/posts", 429, tumblr_error(429), {"Retry-After": "90"})
    with pytest.raises(Retryable) as throttled:
        run(provider.publish(channel, post(), None))
    assert throttled.value.after == 90.0 and channel.throttled_for == 0
