"""The Reddit provider driven directly against the fake (tests/fakes/reddit.py), over real sockets: the
consent URL, code exchange and refresh with Reddit's refusals, the account, posts to one or several
subreddits, comments as thread parts, Reddit's errors (HTTP 200 json.errors, RATELIMIT), the tools."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.reddit import FakeReddit
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused
from rustiz_features.publishers.reddit import PROVIDER, REDDIT_MEDIA_WAIT_SECONDS, REDDIT_USER_AGENT
from support import run, png_file, follow_consent, mp4_file

REDIRECT = "https://rustiz.example/integrations/social/reddit"


fake = fake_fixture(FakeReddit)


@pytest.fixture
def app(fake):
    return AppCredentials(fake.client_id, fake.client_secret)


@pytest.fixture
def channel(fake, http):
    saved = []
    channel = Channel("ch-1", "Ada on Reddit", fake.credentials(), None, http, save_session=saved.append)
    channel.saved = saved
    return channel


def entry(subreddit: str, title: str = "A title", type: str = "self", **more) -> dict:
    return {"value": {"subreddit": subreddit, "title": title, "type": type, "url": "", "is_flair_required": False,
                      **more}}


def outgoing(html: str, *entries: dict, part: int = 0, key: str = "key-1", media: tuple = ()) -> OutgoingPost:
    settings = {"__type": "reddit", "subreddit": list(entries)} if part == 0 else {}
    return OutgoingPost("post-1", html, media, settings, part, key, "2026-12-03T12:00:00Z")


@pytest.fixture
def image(tmp_path) -> MediaFile:
    path = tmp_path / "chart.png"
    path.write_bytes(png_file(4, 3))
    return MediaFile("https://rustiz.example/uploads/chart.png", str(path), "image/png", "image", "A chart", "chart.png")


def begin(http, app) -> str:
    return run(PROVIDER.begin(http, app, REDIRECT, "state-123", None, {}))


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_consent_url_asks_for_a_permanent_grant_with_the_scopes_and_no_pkce(fake, http, app):
    url = begin(http, app)
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{fake.url}/api/v1/authorize"
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    assert query == {"response_type": "code", "client_id": fake.client_id, "redirect_uri": REDIRECT,
                     "state": "state-123", "scope": "identity submit read flair mysubreddits", "duration": "permanent"}
    assert PROVIDER.pkce is False and PROVIDER.app_variables == ("REDDIT_CLIENT_ID", "REDDIT_CLIENT_SECRET")


def test_the_code_exchange_yields_an_hour_long_token_and_a_permanent_refresh_token(fake, http, app):
    callback = follow_consent(begin(http, app))
    assert callback["state"] == "state-123"
    tokens = run(PROVIDER.exchange_code(http, app, callback["code"], REDIRECT, None, {}))
    assert tokens.access_token in fake.access_tokens and tokens.refresh_token in fake.refresh_tokens
    assert tokens.expires_in == 3600
    [request] = fake.requests_to("POST", "/api/v1/access_token")
    assert request.form() == {"grant_type": "authorization_code", "code": callback["code"], "redirect_uri": REDIRECT}
    assert request.headers["authorization"].startswith("Basic ")
    assert request.headers["user-agent"] == REDDIT_USER_AGENT


def test_a_declined_consent_comes_back_as_access_denied(fake, http, app):
    assert follow_consent(begin(http, app), "decline") == {"state": "state-123", "error": "access_denied"}


def test_a_used_code_answered_with_http_200_and_invalid_grant_is_a_refusal_not_a_success(fake, http, app):
    code = follow_consent(begin(http, app))["code"]
    run(PROVIDER.exchange_code(http, app, code, REDIRECT, None, {}))
    with pytest.raises(TokenRefused) as refused:
        run(PROVIDER.exchange_code(http, app, code, REDIRECT, None, {}))
    assert refused.value.status == 200 and refused.value.message.startswith("invalid_grant")


def test_a_refresh_keeps_the_refresh_token_reddit_repeats_or_none_when_it_sends_none(fake, http, app):
    tokens = run(PROVIDER.exchange_code(http, app, follow_consent(begin(http, app))["code"], REDIRECT, None, {}))
    refreshed = run(PROVIDER.refresh_tokens(http, app, tokens.refresh_token))
    assert refreshed.access_token in fake.access_tokens and refreshed.access_token != tokens.access_token
    assert refreshed.refresh_token == tokens.refresh_token and refreshed.expires_in == 3600
    fake.refresh_answer_has_refresh_token = False
    refreshed = run(PROVIDER.refresh_tokens(http, app, tokens.refresh_token))
    assert refreshed.refresh_token is None  # the stored one stays
    assert fake.requests_to("POST", "/api/v1/access_token")[-1].form() == {
        "grant_type": "refresh_token", "refresh_token": tokens.refresh_token}


@pytest.mark.parametrize("status", [400, 200])
def test_a_revoked_refresh_token_is_refused_whether_reddit_answers_400_or_200(fake, http, app, status):
    fake.dead_refresh_status = status
    with pytest.raises(TokenRefused) as refused:
        run(PROVIDER.refresh_tokens(http, app, "revoked-refresh-token"))
    assert refused.value.message.startswith("invalid_grant")


def test_reddit_unavailable_during_a_refresh_is_retryable_not_a_refusal(fake, http, app):
    fake.fail_next("POST", "/api/v1/access_token", 503, "<html>Our servers are busy</html>")
    with pytest.raises(Retryable) as error:
        run(PROVIDER.refresh_tokens(http, app, "any-refresh-token"))
    assert not isinstance(error.value, TokenRefused) and error.value.status == 503


def test_a_wrong_app_secret_is_not_a_dead_grant(fake, http):
    with pytest.raises(NeedsReconnect) as refused:
        run(PROVIDER.refresh_tokens(http, AppCredentials(fake.client_id, "wrong"), "any-refresh-token"))
    assert not isinstance(refused.value, TokenRefused) and refused.value.status == 401
    assert refused.value.message.startswith("Unauthorized")


# --- the account ---------------------------------------------------------------------------------------

def test_connect_reads_the_account_with_the_bearer_token_and_reddits_user_agent(fake, channel):
    connected = run(PROVIDER.connect(channel))
    assert connected.account.internal_id == "1w72"
    assert (connected.account.name, connected.account.profile) == ("ada_lovelace", "ada_lovelace")
    assert connected.account.picture == "https://styles.redditmedia.com/t5_1/styles/profileIcon_ada.png?width=256&s=abc"
    [request] = fake.requests_to("GET", "/api/v1/me")
    assert request.headers["authorization"] == f"Bearer {channel.credentials['accessToken']}"
    assert request.headers["user-agent"] == REDDIT_USER_AGENT


def test_an_expired_access_token_needs_a_refresh_or_reconnect(fake, http):
    channel = Channel("ch-1", "Ada", {"accessToken": "expired"}, None, http)
    with pytest.raises(NeedsReconnect) as refused:
        run(PROVIDER.connect(channel))
    assert refused.value.status == 401 and refused.value.message.startswith("Unauthorized")


# --- publishing ------------------------------------------------------------------------------------------

def test_a_text_post_is_a_self_submission_to_the_subreddit(fake, channel):
    release = run(PROVIDER.publish(channel, outgoing("<p>Hello <strong>Reddit</strong> &amp; friends</p>",
                                                     entry("/r/python/", "Launching rustiz")), None))
    [post] = fake.published
    assert (post["sr"], post["kind"], post["title"], post["text"]) == (
        "python", "self", "Launching rustiz", "Hello Reddit & friends")
    assert release == Release(post["id"], fake.url + post["permalink"], {"things": [post["name"]]})
    form = fake.requests_to("POST", "/api/submit")[0].form()
    assert (form["api_type"], form["resubmit"]) == ("json", "true") and "flair_id" not in form
    assert channel.session == {}  # nothing is left behind once the part is out


def test_one_post_goes_to_every_listed_subreddit_and_the_release_joins_them(fake, channel):
    release = run(PROVIDER.publish(channel, outgoing(
        "<p>See the link</p>",
        entry("python", "A link", "link", url="https://rustiz.example/"),
        entry("r/selfonly", "A question", is_flair_required=True, flair={"id": "f-1", "name": "Question"})), None))
    link, question = fake.published
    assert (link["sr"], link["kind"], link["url"]) == ("python", "link", "https://rustiz.example/")
    assert (question["sr"], question["kind"], question["flair_id"]) == ("selfonly", "self", "f-1")
    assert release.id == f"{link['id']},{question['id']}"
    assert release.url == f"{fake.url}{link['permalink']},{fake.url}{question['permalink']}"
    assert release.reply_ref == {"things": [link["name"], question["name"]]}


def test_thread_parts_are_comments_on_every_submission_of_the_post(fake, channel):
    first = run(PROVIDER.publish(channel, outgoing("<p>Post</p>", entry("python"), entry("selfonly",
                                 flair={"id": "f-2", "name": "News"}, is_flair_required=True)), None))
    second = run(PROVIDER.publish(channel, outgoing("<p>A comment</p>", part=1, key="key-2"), first))
    third = run(PROVIDER.publish(channel, outgoing("<p>Another</p>", part=2, key="key-3"), second))
    comments = list(fake.comments.values())
    assert [(comment["parent_id"], comment["body"]) for comment in comments] == [
        (first.reply_ref["things"][0], "A comment"), (first.reply_ref["things"][1], "A comment"),
        (first.reply_ref["things"][0], "Another"), (first.reply_ref["things"][1], "Another")]
    assert second.id == f"{comments[0]['id']},{comments[1]['id']}"
    assert second.url.split(",")[0] == fake.url + comments[0]["permalink"]
    assert third.reply_ref == first.reply_ref


@pytest.mark.parametrize("sr, settings, words", [
    ("nosuchplace", {}, "SUBREDDIT_NOEXIST: Hmm, that community doesn't exist. Try checking the spelling."),
    ("python", {"type": "link", "url": ""}, "NO_URL: a url is required"),
    ("selfonly", {"type": "link", "url": "https://rustiz.example/"}, "NO_LINKS: This community only allows text posts."),
    ("selfonly", {}, "SUBMIT_VALIDATION_FLAIR_REQUIRED: Your post must contain post flair."),
])
def test_reddits_refusals_sent_with_http_200_are_rejections_in_reddits_words(fake, channel, sr, settings, words):
    with pytest.raises(Rejected) as rejected:
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", {"value": {**entry(sr)["value"], **settings}}), None))
    assert rejected.value.message == words and rejected.value.status == 200
    assert '"errors"' in rejected.value.body and fake.published == []


def test_a_self_post_where_only_links_are_allowed_is_refused_with_no_selfs(fake, channel):
    fake.subreddits["linksonly"] = {**fake.subreddits["python"], "submission_type": "link"}
    with pytest.raises(Rejected, match="^NO_SELFS: This community doesn't allow text posts.$"):
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("linksonly")), None))


def test_reddits_ratelimit_refusal_is_retryable_after_the_wait_it_names(fake, channel):
    fake.ratelimit = {"*": 540}
    with pytest.raises(Retryable) as throttled:
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("python")), None))
    assert throttled.value.after == 540.0
    assert throttled.value.message == "RATELIMIT: you are doing that too much. try again in 9 minutes."


def test_the_ratelimit_wait_is_read_from_reddits_words_when_no_number_comes_with_them(fake, channel):
    fake.fail_next("POST", "/api/submit", 200, {"json": {"errors": [
        ["RATELIMIT", "Looks like you've been doing that a lot. Take a break for 3 minutes before trying again.",
         "ratelimit"]]}})
    with pytest.raises(Retryable) as throttled:
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("python")), None))
    assert throttled.value.after == 180.0


def test_after_a_failure_on_the_second_subreddit_a_new_attempt_sends_only_the_rest(fake, channel):
    post = outgoing("<p>Twice</p>", entry("python"), entry("selfonly", is_flair_required=True,
                                                           flair={"id": "f-2", "name": "News"}))
    fake.ratelimit = {"selfonly": 120}
    with pytest.raises(Retryable) as throttled:
        run(PROVIDER.publish(channel, post, None))
    [first] = fake.published
    assert throttled.value.after == 120.0
    assert throttled.value.message == ("RATELIMIT: you are doing that too much. try again in 2 minutes. "
                                       f"(already published: {fake.url}{first['permalink']})")
    assert channel.session["redditProgress"]["key"] == "key-1" and channel.saved[-1] == channel.session
    fake.ratelimit = {}
    release = run(PROVIDER.publish(channel, post, None))
    assert [published["sr"] for published in fake.published] == ["python", "selfonly"]  # python was not sent again
    assert release.id == ",".join(published["id"] for published in fake.published)
    assert channel.session == {} and channel.saved[-1] == {}
    # Another post (another idempotency key) starts afresh, whatever an earlier one left.
    run(PROVIDER.publish(channel, outgoing("<p>Again</p>", entry("python"), key="key-9"), None))
    assert len(fake.published) == 3


def test_http_429_is_retryable_after_the_rate_limit_windows_reset(fake, channel):
    fake.fail_next("POST", "/api/submit", 429, {"message": "Too Many Requests", "error": 429},
                   {"X-Ratelimit-Remaining": "0.0", "X-Ratelimit-Reset": "37"})
    with pytest.raises(Retryable) as throttled:
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("python")), None))
    assert throttled.value.after == 37.0 and throttled.value.message == "Too Many Requests"
    assert channel.throttled_for == 37.0  # "0.0" left: the channel waits for the window


def test_a_server_error_after_the_submission_was_sent_may_have_published_it(fake, channel):
    fake.fail_next("POST", "/api/submit", 500, {"message": "Internal Server Error", "error": 500})
    with pytest.raises(OutcomeUnknown):
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("python")), None))
    fake.fail_next("POST", "/api/submit", 503, "<html>all our servers are busy</html>")
    with pytest.raises(Retryable):
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("python")), None))


def test_a_revoked_token_at_publish_needs_a_reconnect(fake, channel):
    fake.access_tokens.clear()
    with pytest.raises(NeedsReconnect) as refused:
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("python")), None))
    assert refused.value.status == 401


def test_a_403_is_the_tokens_fault_only_when_reddit_says_insufficient_scope(fake, channel):
    fake.fail_next("POST", "/api/submit", 403, {"message": "Forbidden", "error": 403},
                   {"WWW-Authenticate": 'Bearer realm="reddit", error="insufficient_scope"'})
    with pytest.raises(NeedsReconnect):
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("python")), None))
    fake.fail_next("POST", "/api/submit", 403, {"reason": "banned", "message": "Forbidden", "error": 403})
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing("<p>Hi</p>", entry("python")), None))
    assert not isinstance(refused.value, NeedsReconnect) and refused.value.message == "Forbidden: banned"


# --- image posts -------------------------------------------------------------------------------------

def test_an_image_post_leases_an_upload_sends_the_file_to_s3_and_learns_its_post_from_the_websocket(
        fake, channel, image):
    release = run(PROVIDER.publish(channel, outgoing("<p>Look</p>", entry("python", "A chart", "media"),
                                                     media=(image,)), None))
    [lease] = fake.requests_to("POST", "/api/media/asset.json")
    assert lease.form() == {"filepath": "chart.png", "mimetype": "image/png"}
    [upload] = fake.requests_to("POST", "/s3-upload")
    assert "authorization" not in upload.headers  # no Reddit token goes to S3
    [(key, (fields, data, content_type))] = fake.uploads.items()
    assert (data, content_type, fields["key"], fields["acl"]) == (png_file(4, 3), "image/png", key, "private")
    [post] = fake.published
    assert (post["kind"], post["url"]) == ("image", f"{fake.url}/s3-upload/{key}")
    assert release == Release(post["id"], fake.url + post["permalink"], {"things": [post["name"]]})


def test_an_image_reddit_could_not_process_is_rejected(fake, channel, image):
    fake.media_verdict = "failed"
    with pytest.raises(Rejected, match="could not process the image"):
        run(PROVIDER.publish(channel, outgoing("<p>Look</p>", entry("python", type="media"), media=(image,)), None))


def test_an_image_post_whose_websocket_says_nothing_may_be_published(fake, channel, image):
    fake.media_verdict = None
    with pytest.raises(OutcomeUnknown, match="accepted the image post to r/python"):
        run(PROVIDER.publish(channel, outgoing("<p>Look</p>", entry("python", type="media"), media=(image,)), None))


def test_s3_refusing_the_file_is_a_rejection_in_s3s_words_before_anything_is_posted(fake, channel, image):
    fake.max_upload_bytes = 10
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.publish(channel, outgoing("<p>Look</p>", entry("python", type="media"), media=(image,)), None))
    assert refused.value.message.startswith("EntityTooLarge: Your proposed upload exceeds the maximum allowed size")
    assert refused.value.item == "the image" and fake.published == []


# --- what is refused before scheduling -------------------------------------------------------------------

def problem(*entries: dict, images: tuple = ((),)) -> str:
    values = [{"content": "<p>x</p>", "image": list(image)} for image in images]
    return PROVIDER.post_problem({}, values, {"subreddit": list(entries)})


def test_text_link_and_image_posts_pass_and_videos_without_a_poster_and_stray_images_are_refused():
    picture, clip = {"path": "https://x/1.png"}, {"path": "https://x/1.mp4"}
    assert problem(entry("/r/python/"), entry("selfonly", "Link", "link", url="https://rustiz.example/")) is None
    assert problem(entry("python", type="media"), images=((picture,),)) is None
    assert "needs a poster image" in problem(entry("python", type="media"), images=((clip,),))
    assert "needs a poster image" in problem(entry("python", type="video"), images=((clip,),))
    assert problem(entry("python", type="media"), images=((clip, picture),)) is None
    assert "must be self, link, media or video" in problem(entry("python", type="poll"))
    assert "must be self, link, media or video" in problem(entry("python", type=["self"]))
    assert "not a subreddit name" in problem(entry("r/no spaces"))
    assert "allows 300" in problem(entry("python", "t" * 301))
    assert "is a self post, which carries no images" in problem(entry("python"), images=((picture,), ()))
    assert problem(entry("python"), images=((), (picture,))).startswith("comment 1 has images")


# --- tools -----------------------------------------------------------------------------------------------

def test_the_subreddit_search_lists_public_subreddits_that_take_more_than_images(fake, channel):
    found = run(PROVIDER.run_tool(channel, "subreddits", {"word": "python"}))
    assert found == [{"title": "Python", "name": "/r/python/", "id": "2qh0y"}]
    query = fake.requests_to("GET", "/subreddits/search")[0].query
    assert (query["q"], query["show"], query["sort"], query["limit"]) == ("python", "public", "activity", "10")


def test_restrictions_give_the_allowed_kinds_the_flair_requirement_and_the_flairs(fake, channel):
    assert run(PROVIDER.run_tool(channel, "restrictions", {"subreddit": "/r/selfonly/"})) == {
        "subreddit": "/r/selfonly/", "allow": ["self"], "is_flair_required": True,
        "flairs": [{"id": "f-1", "name": "Question & answer"}, {"id": "f-2", "name": "News"}]}
    # Post flair switched off (Reddit answers link_flair_v2 with 403): no flairs, not a reconnect.
    assert run(PROVIDER.run_tool(channel, "restrictions", {"subreddit": "python"})) == {
        "subreddit": "python", "allow": ["self", "link"], "is_flair_required": False, "flairs": []}


def test_restrictions_of_a_private_subreddit_are_refused_in_reddits_words(fake, channel):
    with pytest.raises(Rejected) as refused:
        run(PROVIDER.run_tool(channel, "restrictions", {"subreddit": "r/pythonsecret"}))
    assert refused.value.message.startswith("Forbidden: private") and refused.value.status == 403


def test_analytics_are_the_account_s_karma_and_the_post_s_score_and_comments_over_its_subreddits(fake, channel):
    release = run(PROVIDER.publish(channel, outgoing("<p>Body</p>", entry("python"), entry(
        "selfonly", is_flair_required=True, flair={"id": "f-1", "name": "Question"})), None))
    figures = {item["label"]: item["data"][0]["total"] for item in run(PROVIDER.post_analytics(channel, release, 30))}
    assert figures == {"Score": "84", "Comments": "10"}
    figures = {item["label"]: item["data"][0]["total"] for item in run(PROVIDER.channel_analytics(channel, 30))}
    assert figures == {"Karma": "5120", "Post karma": "4000", "Comment karma": "1120"}


# --- video posts: the video and its poster image through the same lease and S3 upload ----------------------

@pytest.fixture
def clip(tmp_path) -> MediaFile:
    path = tmp_path / "demo.mp4"
    path.write_bytes(mp4_file(1024))
    return MediaFile("https://rustiz.example/uploads/demo.mp4", str(path), "video/mp4", "video", "", "demo.mp4")


def test_a_video_post_uploads_the_video_and_its_poster_and_submits_kind_video(fake, channel, clip, image):
    release = run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", entry("python", "A demo", "media"),
                                                     media=(clip, image)), None))
    leases = fake.requests_to("POST", "/api/media/asset.json")
    assert [lease.form() for lease in leases] == [{"filepath": "demo.mp4", "mimetype": "video/mp4"},
                                                  {"filepath": "chart.png", "mimetype": "image/png"}]
    assert all("authorization" not in upload.headers for upload in fake.requests_to("POST", "/s3-upload"))
    (video_key, video), (poster_key, poster) = fake.uploads.items()
    assert (video[1], video[2], poster[1], poster[2]) == (mp4_file(1024), "video/mp4", png_file(4, 3), "image/png")
    [post] = fake.published
    assert (post["kind"], post["url"], post["video_poster_url"]) == (
        "video", f"{fake.url}/s3-upload/{video_key}", f"{fake.url}/s3-upload/{poster_key}")
    assert release == Release(post["id"], fake.url + post["permalink"], {"things": [post["name"]]})
    run(PROVIDER.publish(channel, outgoing("<p>Loop</p>", entry("python", "A loop", "videogif"), media=(image, clip),
                                           key="key-2"), None))
    assert fake.published[-1]["kind"] == "videogif"


def test_a_video_without_a_poster_is_refused_before_anything_is_sent(fake, channel, clip, image):
    for media in ((clip,), (clip, clip, image)):
        with pytest.raises(Rejected, match="video post to r/python"):
            run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", entry("python", type="video"), media=media), None))
    assert fake.requests_to("POST", r".*") == []


def test_a_video_reddit_refuses_or_cannot_process_is_rejected_in_its_words(fake, channel, clip, image):
    with pytest.raises(Rejected, match="This community doesn't allow videos"):
        run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", entry("selfonly", type="media"), media=(clip, image)),
                             None))
    fake.media_verdict = "failed"
    with pytest.raises(Rejected, match="could not process the video") as refused:
        run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", entry("python", type="media"), media=(clip, image),
                                               key="key-2"), None))
    assert refused.value.item == "the video"
    fake.media_verdict, fake.max_upload_bytes = "success", 100  # the video is over S3's limit, the poster is not
    with pytest.raises(Rejected, match="EntityTooLarge") as too_large:
        run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", entry("python", type="media"), media=(clip, image),
                                               key="key-3"), None))
    assert too_large.value.item == "the video" and len(fake.published) == 1  # (only the unprocessed one)



def test_a_video_post_whose_websocket_says_nothing_may_be_published(fake, channel, clip, image):
    fake.media_verdict = None
    with pytest.raises(OutcomeUnknown, match="accepted the video post to r/python"):
        run(PROVIDER.publish(channel, outgoing("<p>Watch</p>", entry("python", type="media"), media=(clip, image)),
                             None))
    assert REDDIT_MEDIA_WAIT_SECONDS["video"] > REDDIT_MEDIA_WAIT_SECONDS["image"]  # videos take longer to process


def test_the_media_rule_takes_a_video_with_its_poster_image():
    from test_provider_catalogue import CHANNELS, MEDIA_ORIGIN, body, error_of, no_uploads, post, validate_create_post
    settings = {"subreddit": [{"value": {"subreddit": "r/python", "title": "Watch", "type": "media",
                                         "is_flair_required": False}}]}

    def media(*names: str) -> dict:
        return {"content": "x", "image": [{"id": str(n), "path": f"https://h/{name}"} for n, name in enumerate(names)]}
    assert validate_create_post(body(post("RED", media("v.mp4", "poster.png"), settings=settings)), CHANNELS.get,
                                MEDIA_ORIGIN, no_uploads)
    status, error = error_of(body(post("RED", media("a.png", "b.png"), settings=settings)))
    assert status == 400 and error["message"] == "When posting a media post, you must attached exactly one media file."
