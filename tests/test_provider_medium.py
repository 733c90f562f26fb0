"""The Medium publisher against a fake Medium, through the built server: the account behind an integration
token, a story as Markdown to the profile (public) or to a publication (draft, as Postiz), tags and the
canonical URL, Medium's error words, a revoked token, 429 and 5xx, and the publications tool."""
from __future__ import annotations

from conftest import provider_fixtures
from fakes.medium import FakeMedium
from support import (connect, png_file, refresh_needed, refused_post, scheduled, settled, trigger, uploaded,
                     waiting_for_reconnect)

SETTINGS = {"title": "Shipping rustiz", "subtitle": "One file, no app",
            "tags": [{"value": "python", "label": "Python"}, {"value": "self-hosting", "label": "Self-hosting"}]}

medium, server, channel = provider_fixtures("medium", FakeMedium, names=("medium", "server", "channel"))


def test_connect_reads_the_account_behind_the_token(server, medium, channel):
    assert (channel["name"], channel["profile"], channel["picture"]) == (
        "Ada Lovelace", "ada", "https://cdn-images.medium.com/ada.png")


def test_a_wrong_token_is_refused_with_mediums_words(server, medium):
    status, answer = connect(server, "medium", {"apiKey": "nope"})
    assert status == 400 and "Token was invalid. (code 6003)" in answer["message"], answer


def test_a_story_goes_to_the_profile_as_public_markdown(server, medium, channel):
    picture = uploaded(server, png_file())
    post = settled(server, scheduled(server, channel["id"], "<h2>Why</h2><p>It is <strong>small</strong>.</p>",
                                     settings={**SETTINGS, "canonical": "https://blog.example.com/shipping"},
                                     images=[picture], provider="medium"))
    assert post["state"] == "PUBLISHED", post["error"]
    assert (post["releaseId"], post["releaseURL"]) == ("e6f36a1", "https://medium.com/@ada/story-1")
    [story] = medium.published
    assert story == {"title": "Shipping rustiz", "contentFormat": "markdown", "publishStatus": "public",
                     "content": f"## Why\n\nIt is **small**.\n\n![]({picture['path']})",
                     "canonicalUrl": "https://blog.example.com/shipping", "tags": ["python", "self-hosting"],
                     "publication": None}


def test_a_story_for_a_publication_goes_there_as_a_draft(server, medium, channel):
    assert trigger(server, channel["id"], "publications") == (200, {"output": medium.publications})
    post = settled(server, scheduled(server, channel["id"], "<p>Hi</p>",
                                     settings={**SETTINGS, "publication": "b969ac62a46b"}, provider="medium"))
    assert post["state"] == "PUBLISHED", post["error"]
    assert (medium.published[0]["publication"], medium.published[0]["publishStatus"]) == ("b969ac62a46b", "draft")


def test_an_unknown_publication_fails_in_mediums_words(server, medium, channel):
    post = settled(server, scheduled(server, channel["id"], "<p>Hi</p>", settings={**SETTINGS, "publication": "x"},
                                     provider="medium"))
    assert post["state"] == "ERROR" and "Publication not found. (code 6029)" in post["error"], post["error"]


def test_a_revoked_token_waits_for_a_reconnect(server, medium, channel):
    medium.token = "revoked"
    post = waiting_for_reconnect(server, scheduled(server, channel["id"], "<p>No</p>", settings=SETTINGS,
                                                   provider="medium"))
    assert "Token was invalid" in post["error"] and refresh_needed(server, channel["id"])


def test_429_and_503_are_retried_and_published_once(server, medium, channel):
    medium.fail_next("POST", r"/v1/users/.*/posts", 429, {"errors": [{"message": "Too many requests", "code": 429}]},
                     {"Retry-After": "1"})
    medium.fail_next("POST", r"/v1/users/.*/posts", 503, "<html>down</html>")
    post = settled(server, scheduled(server, channel["id"], "<p>Soon</p>", settings=SETTINGS, provider="medium"),
                   timeout=30)
    assert post["state"] == "PUBLISHED" and len(medium.published) == 1


def test_a_500_may_have_published_the_story_so_it_is_not_sent_again(server, medium, channel):
    medium.fail_next("POST", r"/v1/users/.*/posts", 500, {"errors": [{"message": "Server error", "code": -1}]})
    post = settled(server, scheduled(server, channel["id"], "<p>Maybe</p>", settings=SETTINGS, provider="medium"))
    assert post["state"] == "ERROR" and "may have been published" in post["error"]
    assert len(medium.requests_to("POST", r"/v1/users/.*/posts")) == 1


def test_a_story_needs_its_title_and_subtitle_and_has_no_thread(server, medium, channel):
    assert "title" in refused_post(server, channel["id"], "<p>x</p>", settings={"subtitle": "ab"}, provider="medium")
    message = refused_post(server, channel["id"], "<p>one</p>", "<p>two</p>", settings=SETTINGS, provider="medium")
    assert "Medium" in message and medium.published == []
