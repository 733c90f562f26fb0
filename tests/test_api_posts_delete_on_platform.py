"""DELETE /public/v1/posts/:id?onPlatform=true (issue 28), end to end with the built server and the platforms' fakes:
every provider that can delete (those connected with pasted credentials, and the OAuth ones through their consent)
publishes a post (with a thread part where it has replies), then the post is deleted in rustiz and on its platform,
last part first; the refusals of those that cannot; a 404 for a part means it is gone (deleted); a 429 or 5xx is
"not deleted" with the platform's reason and what is left; another organization's post is unknown; onPlatform takes
true or false only; the audit log and the notifications tell it."""
from __future__ import annotations

import pytest

from fakes.dribbble import FakeDribbble
from fakes.facebook import FakeFacebook
from fakes.gmb import FakeGmb
from fakes.kick import FakeKick
from fakes.linkedin import CLIENT_ID as LINKEDIN_ID, CLIENT_SECRET as LINKEDIN_SECRET, FakeLinkedIn
from fakes.pinterest import FakePinterest
from fakes.reddit import FakeReddit
from fakes.threads import FakeThreads
from fakes.tumblr import FakeTumblr
from fakes.twitch import FakeTwitch
from fakes.vk import FakeVk
from fakes.x import FakeX
from fakes.youtube import FakeYouTube
from platforms import FAKES, REQUIRED_SETTINGS
from rustiz_features.catalogue import DESCRIPTORS
from rustiz_features.publishers import PROVIDER_MODULES, provider_for
from rustiz_features.publishers.oauth import OAuthProvider
from support import (
    API, Database, api, connect, connect_oauth, dict_rows, get_post, iso, mp4_file, notifications, png_file, published,
    scheduled, two_organizations, uploaded, wait_for, webhook_channel,
)
from test_oauth_x import sign_in as x_sign_in

REDDIT_SETTINGS = {"subreddit": [{"value": {"subreddit": "python", "title": "Hello", "type": "self", "url": "",
                                            "is_flair_required": False}}]}


def delete_on_platform(server, post_id: str, value: str = "true", key: str | None = None) -> tuple:
    return api(server, "DELETE", f"{API}/posts/{post_id}?onPlatform={value}", key=key)


def only_entry(status: int, answer: dict, channel_id: str) -> dict:
    assert status == 200 and set(answer) == {"deleted"}, answer
    entry, = answer["deleted"]
    assert set(entry) == {"integration", "deleted", "reason"} and entry["integration"] == channel_id, entry
    return entry


# Providers whose thread parts their platform's API cannot delete (Moltbook documents no comment deletion): a thread
# there stays whole (the first failure, the last part, stops the channel), so they are walked with one part.
REPLIES_NOT_DELETABLE = {"moltbook"}


def thread_of(provider: str) -> list:
    replies = provider_for(provider).threads and provider not in REPLIES_NOT_DELETABLE
    return ["<p>Hello from rustiz</p>"] + (["<p>and a reply</p>"] if replies else [])


# --- the providers that connect with pasted credentials ------------------------------------------------------

# Slack's pasted kind is an incoming webhook, whose messages cannot be deleted (its OAuth kind's can: chat.delete)
PASTED_KIND_CANNOT = {"slack"}
PASTED_DELETERS = sorted(provider for provider in FAKES
                         if provider_for(provider).can_delete and provider not in PASTED_KIND_CANNOT)


@pytest.fixture
def server(start_server_with_fakes, platforms):
    return start_server_with_fakes(env={**platforms.env, "RUSTIZ_RETRY_BASE": "0.2", "API_LIMIT": "0"})


def test_each_pasted_credentials_provider_that_can_delete_deletes_every_part_last_first(server, platforms):
    assert {"bluesky", "hashnode", "lemmy", "nostr", "wordpress"} <= set(PASTED_DELETERS)
    for provider in PASTED_DELETERS:
        status, channel = connect(server, provider, platforms.credentials(provider))
        assert status == 201, (provider, channel)
        post = published(server, channel["id"], *thread_of(provider), provider=provider,
                         settings=REQUIRED_SETTINGS.get(provider))
        releases = [part["releaseId"] for part in [post, *post["thread"]]]
        entry = only_entry(*delete_on_platform(server, post["id"]), channel["id"])
        assert entry["deleted"] is True and entry["reason"].startswith("deleted on"), (provider, entry)
        assert api(server, "GET", f"{API}/posts/{post['id']}")[0] == 404, provider
        fake = platforms.fakes[provider]
        if hasattr(fake, "deleted"):  # (what each fake records: ids, keys or (kind, id) pairs)
            assert len(fake.deleted) >= len(releases), (provider, fake.deleted)
    bluesky = platforms.fakes["bluesky"]
    post_keys = [record["rkey"] for record in bluesky.published[-2:]]
    assert bluesky.deleted[-2:] == post_keys[::-1]  # the reply first, then the post
    assert not bluesky.records


def test_providers_that_cannot_delete_are_never_asked_and_say_why(server, platforms, receiver):
    for provider in sorted({provider for provider in FAKES if not provider_for(provider).can_delete} | PASTED_KIND_CANNOT):
        status, channel = connect(server, provider, platforms.credentials(provider))
        assert status == 201, (provider, channel)
        post = published(server, channel["id"], "<p>Out for good</p>", provider=provider,
                         settings=REQUIRED_SETTINGS.get(provider))
        entry = only_entry(*delete_on_platform(server, post["id"]), channel["id"])
        assert entry["deleted"] is False and "by hand" in entry["reason"], (provider, entry)
        assert (post["releaseURL"] or post["releaseId"]) in entry["reason"], (provider, entry)
    channel_id = webhook_channel(server, receiver)
    post = published(server, channel_id, "<p>To the receiver</p>")
    entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
    assert entry["deleted"] is False and "webhook" in entry["reason"] and "receiver" in entry["reason"], entry
    told = notifications(server)
    assert any(text.startswith("A post deleted in rustiz is still on its platform") for text in told), told


def test_a_post_never_published_is_deleted_with_nothing_to_delete_on_the_platform(server, platforms):
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post_id = scheduled(server, channel_id, "<p>Later</p>", type="schedule", date=iso(3600))
    entry = only_entry(*delete_on_platform(server, post_id), channel_id)
    assert entry["deleted"] is True and "nothing of this post was published on Bluesky" in entry["reason"], entry
    assert api(server, "GET", f"{API}/posts/{post_id}")[0] == 404


def test_a_part_gone_already_counts_as_deleted(server, platforms):
    lemmy = platforms.fakes["lemmy"]
    channel_id = connect(server, "lemmy", platforms.credentials("lemmy"))[1]["id"]
    post = published(server, channel_id, "<p>Gone</p>", "<p>reply</p>", provider="lemmy",
                     settings=REQUIRED_SETTINGS.get("lemmy"))
    for item in lemmy.published[-2:]:
        item["deleted"] = True  # (deleted on the instance meanwhile: it answers 404 couldnt_find_...)
    entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
    assert entry == {"integration": channel_id, "deleted": True, "reason": "deleted on Lemmy (2 parts of the thread)"}


@pytest.mark.parametrize("trouble", [(429, {"ratelimit-reset": "60"}), (503, {}), (500, {})])
def test_a_throttled_or_failing_platform_is_not_deleted_and_says_what_is_left(server, platforms, trouble):
    status, headers = trouble
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>Stays</p>", "<p>for now</p>", provider="bluesky")
    before = len(bluesky.deleted)
    bluesky.fail_next("POST", r".*deleteRecord", status, {"error": "RateLimitExceeded" if status == 429 else
                                                           "InternalServerError", "message": "Try later"}, headers)
    entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
    assert entry["deleted"] is False and f"(HTTP {status})" in entry["reason"] and "Try later" in entry["reason"], entry
    assert post["releaseURL"] in entry["reason"] and post["thread"][0]["releaseURL"] in entry["reason"], entry
    assert len(bluesky.deleted) == before  # the first failure (the last part) stops the channel: the thread is whole
    assert api(server, "GET", f"{API}/posts/{post['id']}")[0] == 404  # (deleted in rustiz all the same)


def test_a_refusal_is_not_tried_again(server, platforms):
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>Refused</p>", provider="bluesky")
    bluesky.fail_next("POST", r".*deleteRecord", 400, {"error": "InvalidRequest", "message": "Could not locate record"})
    entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
    assert entry["deleted"] is False and "by hand" in entry["reason"] and "tries again" not in entry["reason"], entry
    assert dict_rows(server.database, "SELECT id FROM platform_delete_retry") == []


# --- passing failures, tried again --------------------------------------------------------------------------------

QUICK_RETRIES = {"RUSTIZ_PLATFORM_DELETE_RETRY_WAITS": "1,1", "RUSTIZ_RETRY_BASE": "0.2", "API_LIMIT": "0"}


def failing_deletes(start_server_with_fakes, platforms, times: int, status: int = 503) -> tuple:
    """A server with quick retries, a Bluesky post with a reply, and its platform failing the next `times` deletes."""
    server = start_server_with_fakes(env={**platforms.env, **QUICK_RETRIES})
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>Stubborn</p>", "<p>and its reply</p>", provider="bluesky")
    bluesky.fail_next("POST", r".*deleteRecord", status, {"error": "InternalServerError", "message": "Try later"},
                      times=times)
    return server, bluesky, channel_id, post


def test_a_passing_failure_is_tried_again_and_a_notification_tells_it_was_deleted(start_server_with_fakes, platforms):
    server, bluesky, channel_id, post = failing_deletes(start_server_with_fakes, platforms, times=1)
    before = len(bluesky.deleted)
    entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
    assert entry["deleted"] is False and "(HTTP 503)" in entry["reason"], entry
    assert "rustiz tries again in 1 s and tells you in a notification" in entry["reason"], entry
    assert post["releaseURL"] in entry["reason"] and "by hand" not in entry["reason"], entry
    told = wait_for(lambda: notifications(server), lambda texts: any("now deleted on its platform too" in text
                                                                     for text in texts))
    assert any("Alice Example: deleted on Bluesky (2 parts of the thread) (after 2 attempts)" in text
               for text in told), told
    assert len(bluesky.deleted) == before + 2  # the reply, then the post: each once
    assert dict_rows(server.database, "SELECT id FROM platform_delete_retry") == []


def test_a_delete_failing_on_every_try_is_given_up_with_what_is_left(start_server_with_fakes, platforms):
    server, bluesky, channel_id, post = failing_deletes(start_server_with_fakes, platforms, times=3)
    tries_before = len(bluesky.requests_to("POST", r".*deleteRecord"))  # (the platforms' fakes serve the whole file)
    entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
    assert entry["deleted"] is False and "tries again" in entry["reason"], entry
    told = wait_for(lambda: notifications(server), lambda texts: any("gave up" in text for text in texts))
    gave_up = next(text for text in told if "gave up" in text)
    assert "rustiz gave up after 3 attempts" in gave_up and "delete it there by hand" in gave_up, gave_up
    assert post["releaseURL"] in gave_up and post["thread"][0]["releaseURL"] in gave_up, gave_up
    assert len(bluesky.requests_to("POST", r".*deleteRecord")) == tries_before + 3  # the first try, two retries
    assert dict_rows(server.database, "SELECT id FROM platform_delete_retry") == []


def test_a_refusal_on_a_retry_ends_it_in_the_platform_s_words(start_server_with_fakes, platforms):
    server, bluesky, channel_id, post = failing_deletes(start_server_with_fakes, platforms, times=1)
    bluesky.fail_next("POST", r".*deleteRecord", 400, {"error": "InvalidRequest", "message": "Record is pinned"})
    delete_on_platform(server, post["id"])
    told = wait_for(lambda: notifications(server), lambda texts: any("Record is pinned" in text for text in texts))
    refused = next(text for text in told if "Record is pinned" in text)
    assert "still on its platform" in refused and "(after 2 attempts)" in refused and "by hand" in refused, refused


def test_a_rate_limit_that_runs_out_stops_the_channel_before_its_next_part(server, platforms):
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>One</p>", "<p>Two</p>", provider="bluesky")
    before = len(bluesky.deleted)
    bluesky.fail_next("POST", r".*deleteRecord", 200, {"commit": {"cid": "bafy", "rev": "x"}},
                      {"ratelimit-remaining": "0", "ratelimit-reset": "120"})
    entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
    assert entry["deleted"] is False and "asked rustiz to wait" in entry["reason"], entry
    assert post["releaseURL"] in entry["reason"] and post["thread"][0]["releaseURL"] not in entry["reason"], entry
    assert len(bluesky.deleted) == before  # (the fake's scripted answer stood in for the reply's deletion)


def test_a_platform_slower_than_the_bound_is_reported_as_maybe_still_there(start_server_with_fakes, platforms):
    server = start_server_with_fakes(env={**platforms.env, "RUSTIZ_PLATFORM_DELETE_SECONDS": "1", "API_LIMIT": "0"})
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>Slow</p>", provider="bluesky")
    bluesky.delay_next("POST", r".*deleteRecord", 3)
    entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
    assert entry["deleted"] is False and "did not finish deleting within 1 s" in entry["reason"], entry
    assert post["releaseURL"] in entry["reason"], entry


def test_a_post_being_published_is_refused_and_nothing_is_deleted(server, platforms):
    db = Database(server)
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post_id = scheduled(server, channel_id, "<p>Going</p>", type="schedule", date=iso(3600))
    db.execute("UPDATE post SET state = 'PUBLISHING' WHERE id = ?", post_id)
    status, answer = delete_on_platform(server, post_id)
    assert status == 409 and "being published right now" in answer["message"], answer
    assert get_post(server, post_id)["state"] == "PUBLISHING"


def test_the_group_route_takes_onplatform_too(server, platforms):
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>By its group</p>", provider="bluesky")
    status, answer = api(server, "DELETE", f"{API}/posts/group/{post['group']}?onPlatform=true")
    assert only_entry(status, answer, channel_id)["deleted"] is True
    assert post["releaseId"].rsplit("/", 1)[1] not in bluesky.records
    assert api(server, "DELETE", f"{API}/posts/group/unknown-group?onPlatform=true") == (200, {"deleted": []})
    assert api(server, "DELETE", f"{API}/posts/group/unknown-group?onPlatform=yes")[0] == 400


def test_another_organizations_post_is_unknown_and_nothing_is_deleted(server, platforms):
    world = two_organizations(server)
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>Mine</p>", provider="bluesky")
    before = len(platforms.fakes["bluesky"].deleted)
    status, answer = delete_on_platform(server, post["id"], key=world["other_key"])
    assert status == 404 and answer["message"] == "Post not found", answer
    assert len(platforms.fakes["bluesky"].deleted) == before and get_post(server, post["id"])["state"] == "PUBLISHED"


def test_onplatform_takes_true_or_false_only(server, platforms):
    status, channel = connect(server, "bluesky", platforms.credentials("bluesky"))
    assert status == 201, channel
    post_id = scheduled(server, channel["id"], "<p>Kept</p>", type="schedule", date=iso(3600))
    for value in ("", "TRUE", "True", "1", "0", "yes", "true%20", "null", "%00", "true%26x", "%E2%9C%93", "x" * 300):
        status, answer = delete_on_platform(server, post_id, value)
        assert status == 400 and "onPlatform must be true or false" in str(answer["message"]), (value, answer)
        assert get_post(server, post_id)["state"] == "QUEUE"
    status, answer = api(server, "DELETE", f"{API}/posts/{post_id}?onPlatform=true&onPlatform=maybe")
    assert status == 400 and "maybe" in str(answer["message"]), answer


def test_onplatform_false_or_absent_answers_as_postiz_and_the_audit_log_names_a_delete_on_platform(server, platforms):
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    for query in ("?onPlatform=false", ""):
        post_id = scheduled(server, channel_id, "<p>Here only</p>", type="schedule", date=iso(3600))
        assert api(server, "DELETE", f"{API}/posts/{post_id}{query}") == (200, {"error": True})
    post = published(server, channel_id, "<p>Everywhere</p>", provider="bluesky")
    assert delete_on_platform(server, post["id"])[0] == 200
    entries = api(server, "GET", f"{API}/audit")[1]["entries"]
    assert (entries[0]["action"], entries[0]["subject"]) == ("post.deleted_on_platform", {"type": "post", "id": post["id"]})
    assert [entry["action"] for entry in entries].count("post.deleted") == 2, entries


# --- the OAuth providers, each through its consent --------------------------------------------------------------

def _first_choice(server, channel_id: str) -> None:
    choices = api(server, "GET", f"{API}/integrations/{channel_id}/steps")[1]
    assert api(server, "POST", f"{API}/integrations/{channel_id}/steps", {"id": choices[0]["id"]})[0] == 200


# provider -> (its fake, the server's variables for it, a step after consent or None, the post's settings, media)
OAUTH = {
    "x": (FakeX, lambda fake: {"RUSTIZ_X_AUTH_URL": fake.url, "RUSTIZ_X_API_URL": fake.url,
                               "X_API_KEY": fake.consumer_key, "X_API_SECRET": fake.consumer_secret}, None,
          {"who_can_reply_post": "everyone"}, None),
    "reddit": (FakeReddit, lambda fake: {**fake.env, "REDDIT_CLIENT_ID": fake.client_id,
                                         "REDDIT_CLIENT_SECRET": fake.client_secret}, None, REDDIT_SETTINGS, None),
    "linkedin": (FakeLinkedIn, lambda fake: {"RUSTIZ_LINKEDIN_AUTH_URL": fake.url, "RUSTIZ_LINKEDIN_API_URL": fake.url,
                                             "LINKEDIN_CLIENT_ID": LINKEDIN_ID, "LINKEDIN_CLIENT_SECRET": LINKEDIN_SECRET},
                 None, {}, None),
    "linkedin-page": (FakeLinkedIn, lambda fake: {
        "RUSTIZ_LINKEDIN_PAGE_AUTH_URL": fake.url, "RUSTIZ_LINKEDIN_PAGE_API_URL": fake.url,
        "LINKEDIN_CLIENT_ID": LINKEDIN_ID, "LINKEDIN_CLIENT_SECRET": LINKEDIN_SECRET}, _first_choice, {}, None),
    "facebook": (FakeFacebook, lambda fake: fake.env, _first_choice, {}, None),
    "threads": (FakeThreads, lambda fake: {**fake.env, "THREADS_APP_ID": fake.client_id,
                                           "THREADS_APP_SECRET": fake.client_secret}, None, {}, None),
    "youtube": (FakeYouTube, lambda fake: {**fake.env, "YOUTUBE_CLIENT_ID": fake.client_id,
                                           "YOUTUBE_CLIENT_SECRET": fake.client_secret},
                None, {"title": "Engines", "type": "unlisted"}, "mp4"),
    "pinterest": (FakePinterest, lambda fake: {**fake.env, "PINTEREST_CLIENT_ID": fake.client_id,
                                               "PINTEREST_CLIENT_SECRET": fake.client_secret},
                  None, {"board": "549755885175", "title": "Sourdough"}, "png"),
    # (merged from the other helpers of issue 28: their fakes record no `deleted` list; the answer and the post
    # gone in rustiz are checked, and their own provider tests check the platform's side)
    "vk": (FakeVk, lambda fake: {**fake.env, "VK_ID": fake.client_id}, None, {}, None),
    "dribbble": (FakeDribbble, lambda fake: {**fake.env, "DRIBBBLE_CLIENT_ID": fake.client_id,
                                             "DRIBBBLE_CLIENT_SECRET": fake.client_secret}, None, {"title": "Logo"},
                 "png400"),
    "tumblr": (FakeTumblr, lambda fake: fake.env, _first_choice, {}, None),
    "gmb": (FakeGmb, lambda fake: {**fake.env, "GOOGLE_GMB_CLIENT_ID": fake.client_id,
                                   "GOOGLE_GMB_CLIENT_SECRET": fake.client_secret}, _first_choice, {}, None),
    "twitch": (FakeTwitch, lambda fake: fake.app_env(), None, {}, None),
    "kick": (FakeKick, lambda fake: fake.app_env(), None, {}, None),
}


# provider -> how its fake forgets what it published (deleted on the platform by hand)
FORGET = {"x": lambda fake: fake.posts.clear(), "facebook": lambda fake: fake.objects.clear(),
          "threads": lambda fake: fake.objects.clear(), "pinterest": lambda fake: fake.pins.clear(),
          "reddit": lambda fake: (fake.posts.clear(), fake.comments.clear()),
          "linkedin": lambda fake: (fake.posts.clear(), fake.comments.clear()),
          "linkedin-page": lambda fake: (fake.posts.clear(), fake.comments.clear()),
          "youtube": lambda fake: (fake.videos.clear(), fake.comments.clear())}


# OAuth providers whose consent needs more than a fake's consent page (an instance to name, Sign In With Neynar):
# their deletion is walked through their fakes in their own tests, and the pasted-credentials walk above takes
# Mastodon-API servers connected with a token.
WALKED_ELSEWHERE = {
    "mastodon": "tests/test_provider_pixelfed.py::test_deleting_a_status_removes_it_and_a_status_already_gone_counts_as_deleted",
    "pixelfed": "tests/test_provider_pixelfed.py::test_deleting_a_status_removes_it_and_a_status_already_gone_counts_as_deleted",
    "friendica": "tests/test_provider_pixelfed.py::test_deleting_a_status_removes_it_and_a_status_already_gone_counts_as_deleted",
    "wrapcast": "tests/test_provider_farcaster.py::test_deleting_removes_every_cast_of_a_part_and_a_cast_gone_counts_as_deleted",
    # (their OAuth kinds: a bot's server or a workspace chosen after consent; their pasted kinds are walked above)
    "discord": "tests/test_provider_discord_oauth.py::test_delete_removes_a_bot_message_and_a_message_already_gone_counts_as_deleted",
    "slack": "tests/test_provider_slack_oauth.py::test_chat_delete_removes_the_message_and_a_gone_one_counts_as_deleted",
}


def test_every_oauth_provider_that_can_delete_is_walked():
    deleters = {provider for provider in PROVIDER_MODULES if provider_for(provider).can_delete
                and isinstance(provider_for(provider), OAuthProvider)}
    assert deleters - set(OAUTH) - set(WALKED_ELSEWHERE) == set(), "add them to OAUTH"
    assert all(DESCRIPTORS[provider].publisher for provider in OAUTH)


@pytest.mark.parametrize("provider", sorted(OAUTH))
def test_each_oauth_provider_that_can_delete_deletes_every_part_with_its_token(start_server_with_fakes, provider):
    make_fake, env, step, settings, media = OAUTH[provider]
    fake = make_fake()
    try:
        server = start_server_with_fakes(env={**env(fake), "RUSTIZ_RETRY_BASE": "0.2", "API_LIMIT": "0"})
        back = x_sign_in(server, fake) if provider == "x" else connect_oauth(server, provider)
        channel_id = back["channel"]
        if step is not None:
            step(server, channel_id)
        data = {"mp4": mp4_file, "png": png_file, "png400": lambda: png_file(400, 300)}[media]() if media else None
        images = [uploaded(server, data, media[:3])] if media else None
        post = published(server, channel_id, *thread_of(provider), provider=provider, settings=settings, images=images)
        releases = [part["releaseId"] for part in [post, *post["thread"]]]
        entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
        assert entry["deleted"] is True and entry["reason"].startswith("deleted on"), entry
        assert api(server, "GET", f"{API}/posts/{post['id']}")[0] == 404
        if provider not in FORGET:
            return
        assert len(fake.deleted) == len(releases) == len(set(map(str, fake.deleted))), (releases, fake.deleted)
        # deleted on the platform meanwhile: its "not found" answer counts as deleted
        post = published(server, channel_id, "<p>Once more</p>", provider=provider, settings=settings, images=images)
        FORGET[provider](fake)
        entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
        assert entry["deleted"] is True and len(fake.deleted) == len(releases), (entry, fake.deleted)
    finally:
        fake.close()


def test_a_threads_channel_without_threads_delete_is_told_to_reconnect(start_server_with_fakes):
    fake = FakeThreads()
    try:
        server = start_server_with_fakes(env={**fake.env, "THREADS_APP_ID": fake.client_id,
                                              "THREADS_APP_SECRET": fake.client_secret, "API_LIMIT": "0"})
        channel_id = connect_oauth(server, "threads")["channel"]
        post = published(server, channel_id, "<p>Kept</p>", provider="threads")
        fake.delete_granted = False
        entry = only_entry(*delete_on_platform(server, post["id"]), channel_id)
        assert entry["deleted"] is False and "(#10)" in entry["reason"] and "reconnect the channel" in entry["reason"]
        assert post["releaseURL"] in entry["reason"] and not fake.deleted
    finally:
        fake.close()
