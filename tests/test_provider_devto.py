"""The Dev.to publisher against a fake Dev.to: the account read with the API key, articles with their
title, Markdown body, tags, canonical URL and cover image, the error rules, and the tools."""
from __future__ import annotations

from rustiz_features.publishers.articles import html_to_markdown
from conftest import provider_fixtures
from fakes.devto import FakeDevto
from support import (Database, FakeOrigin, waiting_for_reconnect, connect, connected, notifications, png_file,
                     refresh_needed, refused_post, scheduled, settled, trigger, upload, uploaded)

SETTINGS = {"title": "Shipping rustiz", "tags": [{"value": 6, "label": "JavaScript"}, {"value": 8, "label": "python"}]}


devto, server, channel = provider_fixtures("devto", FakeDevto, names=("devto", "server", "channel"))


def test_connect_reads_the_account_behind_the_api_key(server, devto, channel):
    assert (channel["name"], channel["profile"], channel["picture"]) == (
        "Ada Lovelace", "ada", "https://media.dev.to/ada.png")
    assert devto.requests_to("GET", "/api/users/me")[0].headers["accept"] == "application/vnd.forem.api-v1+json"


def test_a_wrong_api_key_is_refused_with_dev_to_s_words(server, devto):
    status, answer = connect(server, "devto", {"apiKey": "not-the-key"})
    assert status == 400
    assert "Dev.to refused these credentials" in answer["message"] and "unauthorized" in answer["message"]


def test_the_same_account_twice_is_one_channel(server, devto):
    connected(server, "devto", devto.credentials())
    status, answer = connect(server, "devto", devto.credentials(), name="again")
    assert (status, answer["reconnected"]) == (200, True), answer


def test_an_article_is_published_as_markdown_with_title_tags_and_canonical_url(server, devto, channel):
    post_id = scheduled(server, channel["id"],
                        "<h2>Why</h2><p>It is <strong>fast</strong> and <a href=\"https://rustiz.dev\">small</a>.</p>"
                        "<ul><li><p>one file</p></li><li><p>no app</p></li></ul>",
                        settings={**SETTINGS, "canonical": "https://blog.example.com/shipping", "organization": "4242"},
                        provider="devto")
    post = settled(server, post_id)
    assert post["state"] == "PUBLISHED", post["error"]
    assert (post["releaseId"], post["releaseURL"]) == ("9001", "https://dev.to/ada/article-1")
    [article] = devto.published
    assert article == {
        "title": "Shipping rustiz", "published": True, "tags": ["javascript", "python"],
        "body_markdown": "## Why\n\nIt is **fast** and [small](https://rustiz.dev).\n\n- one file\n- no app",
        "canonical_url": "https://blog.example.com/shipping", "organization_id": 4242}
    assert any("Published a post on Dev.to" in text for text in notifications(server))


def test_the_first_image_is_the_cover_and_the_others_go_into_the_body(server, devto, channel):
    first, second = uploaded(server, png_file()), uploaded(server, png_file())
    post_id = scheduled(server, channel["id"], "<p>Pictures</p>", settings=SETTINGS, images=[first, second],
                        provider="devto")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    [article] = devto.published
    assert article["main_image"] == first["path"]
    assert article["body_markdown"] == f"Pictures\n\n![]({second['path']})"


def test_the_settings_main_image_is_the_cover(server, devto, channel):
    image = uploaded(server, png_file())
    post_id = scheduled(server, channel["id"], "<p>Cover</p>", settings={**SETTINGS, "main_image": image},
                        provider="devto")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert devto.published[0]["main_image"] == image["path"]


def test_a_main_image_also_among_the_post_images_is_the_cover_and_not_repeated_in_the_body(server, devto, channel):
    first, cover = uploaded(server, png_file()), uploaded(server, png_file())
    post_id = scheduled(server, channel["id"], "<p>Two</p>", settings={**SETTINGS, "main_image": cover},
                        images=[first, cover], provider="devto")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    [article] = devto.published
    assert article["main_image"] == cover["path"] and article["body_markdown"] == f"Two\n\n![]({first['path']})"


def test_a_main_image_from_the_web_is_checked_then_given_to_dev_to_as_its_address(server, devto, channel):
    origin = FakeOrigin()
    try:
        origin.serve("/cover.png", png_file())
        cover = {"id": "web", "path": f"{origin.url}/cover.png"}
        post_id = scheduled(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "main_image": cover},
                            provider="devto")
        assert settled(server, post_id)["state"] == "PUBLISHED"
        assert devto.published[0]["main_image"] == cover["path"] and len(origin.requests_to("GET", "/cover.png")) == 1
        gone = {"id": "gone", "path": f"{origin.url}/gone.png"}
        post = settled(server, scheduled(server, channel["id"], "<p>y</p>", settings={**SETTINGS, "main_image": gone},
                                         provider="devto"))
        assert post["state"] == "ERROR" and "at the main_image setting" in post["error"] and len(devto.published) == 1
    finally:
        origin.close()


def test_another_organization_s_upload_as_main_image_is_refused_naming_the_setting(server, devto, channel):
    _, other_key = Database(server).organization()
    status, theirs = upload(server, png_file(), key=other_key)
    assert status == 201
    message = refused_post(server, channel["id"], "<p>x</p>", provider="devto",
                           settings={**SETTINGS, "main_image": {"id": theirs["id"], "path": theirs["path"]}})
    assert "posts.0.settings.main_image" in message and "is not an upload of this organization" in message


def test_a_429_is_retried_after_retry_after_and_published_once(server, devto, channel):
    devto.fail_next("POST", "/api/articles", 429, {"error": "Rate limit reached, try again in 1 seconds",
                                                   "status": 429}, {"Retry-After": "1"})
    post_id = scheduled(server, channel["id"], "<p>Soon</p>", settings=SETTINGS, provider="devto")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    attempts = devto.requests_to("POST", "/api/articles")
    assert len(attempts) == 2 and len(devto.published) == 1


def test_a_503_is_retried(server, devto, channel):
    devto.fail_next("POST", "/api/articles", 503, "<html>Service Unavailable</html>")
    post_id = scheduled(server, channel["id"], "<p>Later</p>", settings=SETTINGS, provider="devto")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert len(devto.published) == 1


def test_a_500_on_the_article_may_have_published_it_so_it_is_not_sent_again(server, devto, channel):
    devto.fail_next("POST", "/api/articles", 500, {"error": "Internal Server Error", "status": 500})
    post_id = scheduled(server, channel["id"], "<p>Maybe</p>", settings=SETTINGS, provider="devto")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and "may have been published" in post["error"]
    assert "dashboard" in post["error"] and len(devto.requests_to("POST", "/api/articles")) == 1


def test_a_revoked_key_flags_the_channel_and_its_post_waits_for_a_reconnect(server, devto, channel):
    devto.api_key = "revoked"
    post_id = scheduled(server, channel["id"], "<p>Nope</p>", settings=SETTINGS, provider="devto")
    post = waiting_for_reconnect(server, post_id)
    assert "HTTP 401" in post["error"] and "unauthorized" in post["error"]
    assert refresh_needed(server, channel["id"])


def test_a_422_fails_with_dev_to_s_words(server, devto, channel):
    devto.fail_next("POST", "/api/articles", 422, {"error": "Body markdown has already been taken", "status": 422})
    post_id = scheduled(server, channel["id"], "<p>Twice</p>", settings=SETTINGS, provider="devto")
    post = settled(server, post_id)
    assert post["state"] == "ERROR"
    assert post["error"].startswith("Failed on Dev.to (HTTP 422)") and "already been taken" in post["error"]


def test_tags_that_dev_to_would_refuse_and_threads_are_refused_at_post_time(server, devto, channel):
    message = refused_post(server, channel["id"], "<p>x</p>",
                           settings={**SETTINGS, "tags": [{"value": 1, "label": "rust"},
                                                          {"value": 2, "label": "web-dev"}]},
                           provider="devto")
    assert "tag 2" in message and "web-dev" in message and "letters and digits" in message
    assert "title" in refused_post(server, channel["id"], "<p>x</p>", settings={"tags": []}, provider="devto")
    message = refused_post(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "organization": "the org"},
                           provider="devto")
    assert "organization" in message and "numeric id" in message
    message = refused_post(server, channel["id"], "<p>one</p>", "<p>two</p>", settings=SETTINGS, provider="devto")
    assert "Dev.to" in message and "not 2" in message
    assert devto.published == []


def test_the_tags_and_organizations_tools(server, devto, channel):
    assert trigger(server, channel["id"], "tags") == (200, {"output": [
        {"value": 6, "label": "javascript"}, {"value": 8, "label": "python"}]})
    assert trigger(server, channel["id"], "organizations") == (200, {"output": [
        {"id": "4242", "name": "The Org", "username": "theorg"}]})
    assert len(devto.requests_to("GET", "/api/organizations/theorg")) == 1


def test_html_to_markdown_keeps_the_structure_and_escapes_markdown_signs_in_text():
    html = ("<h1>T &amp; more</h1><p>a_b *c* <strong>bold </strong><em>it</em> <s>old</s> <u>under</u><br>next</p>"
            "<ol start=\"3\"><li><p>three</p><ul><li>nested</li></ul></li><li>four</li></ol>"
            "<blockquote><p>q1</p><p>q2</p></blockquote><pre><code>x = *1*\n</code></pre>"
            "<p><code>a`b</code> <a href=\"https://e.com/a(b)\">link</a> <img src=\"https://i/x.png\" alt=\"pic\"></p><hr>")
    assert html_to_markdown(html) == (
        "# T & more\n\na\\_b \\*c\\* **bold** *it* ~~old~~ under  \nnext\n\n"
        "3. three\n   - nested\n4. four\n\n> q1\n>\n> q2\n\n```\nx = *1*\n```\n\n"
        "``a`b`` [link](<https://e.com/a(b)>) ![pic](https://i/x.png)\n\n***")
    assert html_to_markdown("<p></p><p>plain</p><p><br></p>") == "plain"
