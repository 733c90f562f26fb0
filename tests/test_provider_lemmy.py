"""Lemmy with username and password, against a fake Lemmy instance (API v3) and the real server."""
from __future__ import annotations

from conftest import provider_fixtures
from fakes.lemmy import FakeLemmy, lemmy_error
from support import waiting_for_reconnect, api, connect, notifications, png_file, refresh_needed, schedule, scheduled, settled_rows, uploaded


def settings(*communities: tuple, url: str | None = None) -> dict:
    """Postiz's lemmy settings: one {value: {subreddit, id, title, url?}} per community."""
    return {"__type": "lemmy", "subreddit": [
        {"value": {"subreddit": name, "id": str(id_), "title": title, **({"url": url} if url else {})}}
        for id_, name, title in communities]}


RUST = (2, "rust", "Hello from rustiz")


lemmy, rustiz, channel = provider_fixtures("lemmy", FakeLemmy, names=("lemmy", "rustiz", "channel"))


def posts(lemmy: FakeLemmy) -> list:
    return [item for item in lemmy.published if item["kind"] == "post"]


def test_connect_logs_in_and_reads_the_person(rustiz, lemmy, channel):
    host = lemmy.url.removeprefix("http://")
    assert (channel["name"], channel["profile"]) == ("Alice A.", f"alice@{host}")
    assert channel["picture"] == f"{lemmy.url}/pictrs/image/alice.png"
    status, answer = connect(rustiz, "lemmy", {**lemmy.credentials(), "identifier": "alice@example.com"})
    assert (status, answer["reconnected"]) == (200, True), answer  # the same person, logged in by email


def test_a_wrong_password_is_refused_at_connect_with_lemmys_reason(rustiz, lemmy):
    status, answer = connect(rustiz, "lemmy", lemmy.credentials(password="wrong password"))
    assert status == 400 and answer["message"] == ("Lemmy refused these credentials (HTTP 401): Lemmy refused the login "
                                                   "(incorrect_login): the username or password is wrong")


def test_an_account_with_two_factor_authentication_is_refused_with_a_clear_reason(start_server_with_fakes):
    guarded = FakeLemmy(two_factor=True)
    try:
        rustiz = start_server_with_fakes()
        status, answer = connect(rustiz, "lemmy", guarded.credentials())
        assert status == 400 and "missing_totp_token" in answer["message"], answer
        assert "two-factor authentication" in answer["message"] and "turn 2FA off" in answer["message"]
    finally:
        guarded.close()


def test_post_goes_to_its_community_as_markdown_with_the_cached_login(rustiz, lemmy, channel):
    [row] = settled_rows(rustiz, scheduled(
        rustiz, channel["id"], '<p>Release <strong>1.0</strong> is out: <a href="https://example.com/notes">notes</a></p>'
        '<p>Enjoy</p>', settings=settings(RUST)))
    assert row["state"] == "PUBLISHED", row
    [post] = posts(lemmy)
    assert (post["community_id"], post["name"], post["nsfw"]) == (2, "Hello from rustiz", False)
    assert post["body"] == "Release **1.0** is out: [notes](https://example.com/notes)\n\nEnjoy"
    assert (row["release_id"], row["release_url"]) == (str(post["id"]), f"{lemmy.url}/post/{post['id']}")
    assert lemmy.requests_to("POST", "/api/v3/post")[0].headers["authorization"] == "Bearer jwt-1"
    settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Again</p>", settings=settings(RUST)))
    assert lemmy.logins == 1 and len(posts(lemmy)) == 2  # the login of connecting serves every post


def test_several_communities_get_one_post_each_and_comments_under_every_one(rustiz, lemmy, channel):
    rows = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Cross-posted</p>", "<p>A comment</p>",
                                          settings=settings(RUST, (5, "python", "Hello pythonistas"))))
    assert [row["state"] for row in rows] == ["PUBLISHED", "PUBLISHED"], rows
    rust, python = posts(lemmy)
    assert (rust["community_id"], python["community_id"], python["name"]) == (2, 5, "Hello pythonistas")
    assert rows[0]["release_id"] == f"{rust['id']},{python['id']}"
    assert rows[0]["release_url"] == f"{lemmy.url}/post/{rust['id']},{lemmy.url}/post/{python['id']}"
    comments = [item for item in lemmy.published if item["kind"] == "comment"]
    assert [(comment["post_id"], comment["content"]) for comment in comments] == [
        (rust["id"], "A comment"), (python["id"], "A comment")]
    assert rows[1]["release_url"] == ",".join(f"{lemmy.url}/comment/{comment['id']}" for comment in comments)


def test_the_image_is_the_posts_link_or_the_thumbnail_of_its_own_link(rustiz, lemmy, channel):
    picture = uploaded(rustiz, png_file())
    settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>A picture</p>", settings=settings(RUST),
                                   images=[picture]))
    settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>A link</p>",
                                   settings=settings(RUST, url="https://example.com/a"), images=[picture]))
    image_post, link_post = posts(lemmy)
    assert (image_post["url"], image_post["thumbnail_url"]) == (picture["path"], None)
    assert (link_post["url"], link_post["thumbnail_url"]) == ("https://example.com/a", picture["path"])


def test_a_revoked_login_is_renewed_once_and_the_post_published(rustiz, lemmy, channel):
    lemmy.revoke_logins()
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>After logout</p>", settings=settings(RUST)))
    assert row["state"] == "PUBLISHED" and lemmy.logins == 2 and len(posts(lemmy)) == 1


def test_a_changed_password_flags_the_channel_for_reconnecting_and_the_post_waits(rustiz, lemmy, channel):
    lemmy.revoke_logins()
    lemmy.password = "changed"
    row = waiting_for_reconnect(rustiz, scheduled(rustiz, channel["id"], "<p>Locked out</p>", settings=settings(RUST)))
    assert "incorrect_login" in row["error"], row
    assert refresh_needed(rustiz, channel["id"]) and posts(lemmy) == []
    assert any("reconnect this Lemmy channel" in text for text in notifications(rustiz))


def test_a_refused_post_fails_with_lemmys_code_and_what_it_means(rustiz, lemmy, channel):
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Nowhere</p>",
                                           settings=settings((404, "gone", "Title"))))
    assert row["state"] == "ERROR" and "Failed on Lemmy (HTTP 404)" in row["error"], row
    assert "couldnt_find_community" in row["error"] and "pick it again" in row["error"]
    assert not refresh_needed(rustiz, channel["id"])


def test_429_is_retried_and_a_retry_never_posts_twice_to_a_community_already_done(rustiz, lemmy, channel):
    original = lemmy.create_post
    calls = []

    def second_is_throttled(request):  # the instance's limit hits between the two communities
        calls.append(request)
        if len(calls) == 2:
            return 429, {"error": "rate_limit_error"}, {"Retry-After": "1"}
        return original(request)
    lemmy.routes = [(method, pattern, second_is_throttled if route == original else route)
                    for method, pattern, route in lemmy.routes]
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Twice?</p>",
                                           settings=settings(RUST, (5, "python", "Hello pythonistas"))))
    assert row["state"] == "PUBLISHED", row
    assert [post["community_id"] for post in posts(lemmy)] == [2, 5]  # rust once, python after the wait
    assert len(calls) == 3


def test_a_server_error_on_the_post_is_not_sent_again(rustiz, lemmy, channel):
    lemmy.fail_next("POST", "/api/v3/post", 502, "Bad Gateway")
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>After a 502</p>", settings=settings(RUST)))
    assert row["state"] == "PUBLISHED" and len(posts(lemmy)) == 1
    lemmy.fail_next("POST", "/api/v3/post", *lemmy_error(500, "unknown")[:2])
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>After a 500</p>", settings=settings(RUST)))
    assert row["state"] == "ERROR" and "It may have been published" in row["error"], row
    assert len(lemmy.requests_to("POST", "/api/v3/post")) == 3


def test_the_subreddits_tool_searches_communities_as_postiz_lists_them(rustiz, lemmy, channel):
    status, answer = api(rustiz, "POST", f"/public/v1/integration-trigger/{channel['id']}",
                         {"methodName": "subreddits", "data": {"word": "rust"}})
    assert status == 200 and answer == {"output": [{"title": "Rust programming", "name": "Rust programming", "id": 2},
                                                   {"title": "Rustaceans meetup", "name": "Rustaceans meetup", "id": 9}]}
    [search] = lemmy.requests_to("GET", "/api/v3/search")
    assert search.query == {"type_": "Communities", "sort": "Active", "q": "rust"}
    assert search.headers["authorization"] == "Bearer jwt-1"


def test_lemmys_limits_are_refused_when_the_post_is_created(rustiz, lemmy, channel):
    status, answer = schedule(rustiz, channel["id"], "<p>Long title</p>", settings=settings((2, "rust", "t" * 201)))
    assert status == 400 and "Lemmy allows titles of up to 200 characters" in str(answer) and "has 201" in str(answer)
    status, answer = schedule(rustiz, channel["id"], "<p>Bad id</p>", settings=settings(("rust", "rust", "Title")))
    assert status == 400 and "Lemmy community ids are numbers" in str(answer), answer
    picture = uploaded(rustiz, png_file())
    status, answer = schedule(rustiz, channel["id"], "<p>Two</p>", settings=settings(RUST), images=[picture, picture])
    assert status == 400 and "only one picture" in str(answer), answer
    assert posts(lemmy) == []
