"""The Hashnode publisher against a fake GraphQL API: the account and its publications, publishPost with
title, Markdown, tags, cover and canonical URL, GraphQL errors that come with HTTP 200, and the tools."""
from __future__ import annotations

from conftest import provider_fixtures
from fakes.hashnode import PUBLICATION_ID, TAG_ID, FakeHashnode, graphql_error
from support import (Database, waiting_for_reconnect, connect, png_file, refresh_needed, refused_post, scheduled, settled,
                     trigger, upload, uploaded)

SETTINGS = {"title": "Notes on rustiz", "publication": PUBLICATION_ID,
            "tags": [{"value": TAG_ID, "label": "JavaScript"}, {"value": "web dev", "label": "Web Dev"}]}


hashnode, server, channel = provider_fixtures("hashnode", FakeHashnode, names=("hashnode", "server", "channel"))


def test_connect_reads_the_account_with_the_token_in_authorization(server, hashnode, channel):
    assert (channel["name"], channel["profile"], channel["picture"]) == (
        "Grace Hopper", "grace", "https://cdn.hashnode.com/g.png")
    assert hashnode.requests[0].headers["authorization"] == "hashnode-token-1"


def test_an_unauthenticated_graphql_answer_refuses_the_token(server, hashnode):
    status, answer = connect(server, "hashnode", {"apiKey": "wrong"})
    assert status == 400
    assert "Hashnode refused these credentials" in answer["message"]
    assert "UNAUTHENTICATED" in answer["message"] and "You must be authenticated." in answer["message"]


def test_a_post_is_published_with_markdown_tags_cover_subtitle_and_canonical_url(server, hashnode, channel):
    image = uploaded(server, png_file())
    post_id = scheduled(server, channel["id"], "<p>Hello <strong>Hashnode</strong></p><h3>Next</h3>",
                        settings={**SETTINGS, "subtitle": "A small scheduler",
                                  "canonical": "https://blog.example.com/notes"},
                        images=[image], provider="hashnode")
    post = settled(server, post_id)
    assert post["state"] == "PUBLISHED", post["error"]
    assert (post["releaseId"], post["releaseURL"]) == ("post-1", "https://grace.hashnode.dev/post-1")
    [article] = hashnode.published
    assert article == {
        "title": "Notes on rustiz", "publicationId": PUBLICATION_ID, "subtitle": "A small scheduler",
        "contentMarkdown": "Hello **Hashnode**\n\n### Next",
        "tags": [{"id": TAG_ID}, {"slug": "web-dev", "name": "Web Dev"}],
        "coverImageOptions": {"coverImageURL": image["path"]},
        "originalArticleURL": "https://blog.example.com/notes"}


def test_a_main_image_is_the_cover_whether_or_not_it_is_among_the_post_images(server, hashnode, channel):
    first, cover = uploaded(server, png_file()), uploaded(server, png_file())
    for number, images in enumerate(([first], [first, cover])):
        assert settled(server, scheduled(server, channel["id"], f"<p>Body {number}</p>", provider="hashnode",
                                         images=images, settings={**SETTINGS, "main_image": cover}))["state"] == "PUBLISHED"
    for number, article in enumerate(hashnode.published):
        assert article["coverImageOptions"] == {"coverImageURL": cover["path"]}
        assert article["contentMarkdown"] == f"Body {number}\n\n![]({first['path']})"
    _, other_key = Database(server).organization()
    status, theirs = upload(server, png_file(), key=other_key)
    message = refused_post(server, channel["id"], "<p>x</p>", provider="hashnode",
                           settings={**SETTINGS, "main_image": {"id": theirs["id"], "path": theirs["path"]}})
    assert status == 201 and "posts.0.settings.main_image" in message and "not an upload of this organization" in message


def test_a_graphql_error_with_http_200_fails_the_post_with_hashnode_s_words(server, hashnode, channel):
    hashnode.fail_next("POST", "/", *graphql_error("Slug is already taken", "BAD_USER_INPUT"))
    post_id = scheduled(server, channel["id"], "<p>Taken</p>", settings=SETTINGS, provider="hashnode")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and hashnode.published == []
    assert "Hashnode refused the post (BAD_USER_INPUT): Slug is already taken" in post["error"]


def test_an_unauthenticated_answer_while_publishing_flags_the_channel_and_the_post_waits(server, hashnode, channel):
    hashnode.token = "rotated"
    post_id = scheduled(server, channel["id"], "<p>Nope</p>", settings=SETTINGS, provider="hashnode")
    post = waiting_for_reconnect(server, post_id)
    assert "UNAUTHENTICATED" in post["error"]
    assert refresh_needed(server, channel["id"])


def test_a_429_is_retried_and_published_once(server, hashnode, channel):
    hashnode.fail_next("POST", "/", 429, {"errors": [{"message": "Too many requests"}]}, {"Retry-After": "1"})
    post_id = scheduled(server, channel["id"], "<p>Soon</p>", settings=SETTINGS, provider="hashnode")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert len(hashnode.published) == 1


def test_an_internal_error_on_publish_may_have_published_so_it_is_not_sent_again(server, hashnode, channel):
    hashnode.fail_next("POST", "/", *graphql_error("Something went wrong", "INTERNAL_SERVER_ERROR"))
    post_id = scheduled(server, channel["id"], "<p>Maybe</p>", settings=SETTINGS, provider="hashnode")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and "may have been published" in post["error"]
    assert len(hashnode.requests_to("POST", "/")) == 2  # the connect, then the one publish


def test_a_lost_answer_on_publish_is_not_sent_again(server, hashnode, channel):
    hashnode.drop_next("POST", "/", after_handling=True)
    post_id = scheduled(server, channel["id"], "<p>Lost</p>", settings=SETTINGS, provider="hashnode")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and "may have been published" in post["error"]
    assert len(hashnode.published) == 1


def test_missing_publication_tags_or_a_short_title_and_threads_are_refused_at_post_time(server, hashnode, channel):
    assert "publication" in refused_post(server, channel["id"], "<p>x</p>",
                                         settings={"title": "Long enough", "tags": SETTINGS["tags"]},
                                         provider="hashnode")
    assert "tags" in refused_post(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "tags": []},
                                  provider="hashnode")
    assert "title" in refused_post(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "title": "Short"},
                                   provider="hashnode")
    assert "not 2" in refused_post(server, channel["id"], "<p>a</p>", "<p>b</p>", settings=SETTINGS,
                                   provider="hashnode")


def test_the_publications_and_tags_tools(server, hashnode, channel):
    assert trigger(server, channel["id"], "publications") == (200, {"output": [
        {"id": PUBLICATION_ID, "name": "Grace's blog", "url": "https://grace.hashnode.dev"}]})
    assert trigger(server, channel["id"], "tagsList") == (200, {"output": [
        {"value": "5674470e958ef13879b94ca5", "label": "CSS"}, {"value": TAG_ID, "label": "JavaScript"}]})
