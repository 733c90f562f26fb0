"""The feed parser of autopost (rustiz_features/feeds.py), in-process: RSS 2.0, RSS 1.0 and Atom items with their
keys, plain texts, dates and pictures; DTDs, entities and other documents refused with the reason; at most 200 items
looked at; a page's og:image; and the template's rendering (rustiz_features/autopost.py)."""
from __future__ import annotations

import pytest

from feed_server import ATOM, BILLION_LAUGHS, EXTERNAL_ENTITY, RSS1, RSS2, UNDECLARED_ENTITY, rss_document
from rustiz_features.autopost import post_content, rendered_text
from rustiz_features.feeds import MAX_FEED_BYTES, FeedRefused, newest_item, page_image, parse_feed


def test_the_three_formats_give_their_items_as_plain_text_with_dates_and_pictures():
    spring, winter = parse_feed(RSS2.encode())
    assert (spring.title, spring.summary, spring.author, spring.link) == (
        "Spring sale & more", "Everything half price.", "Ana", "https://shop.example.com/spring")
    assert spring.published == "2026-03-03T09:00:00.000Z" and spring.image == "https://shop.example.com/spring.jpg"
    assert winter.image == "https://shop.example.com/winter.png" and winter.published == "2026-02-02T09:00:00.000Z"
    (first,) = parse_feed(RSS1.encode())
    assert (first.title, first.summary, first.author, first.published) == (
        "First post", "Hello from RDF", "Bo", "2026-01-05T08:30:00.000Z")
    release_2, release_1 = parse_feed(ATOM.encode())
    assert release_2.title == "Release 2.0" and release_2.image == "https://atom.example.net/r2.webp"
    assert release_1.summary == "First!" and release_1.published == "2025-12-01T10:00:00.000Z"
    assert newest_item([release_1, release_2]) == release_2


def test_an_item_is_known_by_its_guid_else_its_link_else_its_text():
    by_guid = parse_feed(rss_document([{"guid": "g", "title": "A", "link": "https://x.example/1"}]).encode())[0]
    same_guid = parse_feed(rss_document([{"guid": "g", "title": "B", "link": "https://x.example/2"}]).encode())[0]
    assert by_guid.key == same_guid.key and len(by_guid.key) == 64
    no_guid = b'<rss version="2.0"><channel><item><title>A</title><link>https://x.example/1</link></item></channel></rss>'
    other = b'<rss version="2.0"><channel><item><title>B</title><link>https://x.example/1</link></item></channel></rss>'
    assert parse_feed(no_guid)[0].key == parse_feed(other)[0].key != by_guid.key


@pytest.mark.parametrize("document, why", [
    (BILLION_LAUGHS, "it has a DTD"), (EXTERNAL_ENTITY, "it has a DTD"), (UNDECLARED_ENTITY, "undefined entity"),
    ("<!DOCTYPE html><html></html>", "it is a web page"), ("<feed/>", "not an RSS or Atom feed"),
    ("<rss><channel>", "not well-formed"), ("", "not well-formed")])
def test_documents_that_are_no_safe_feed_are_refused_with_the_reason(document, why):
    with pytest.raises(FeedRefused, match=why):
        parse_feed(document.encode())


def test_at_most_200_items_are_looked_at_and_5_mb_read():
    many = rss_document([{"guid": str(number), "title": f"Item {number}"} for number in range(500)]).encode()
    items = parse_feed(many)
    assert len(items) == 200 and items[-1].title == "Item 199"
    with pytest.raises(FeedRefused, match="larger than 5 MB"):
        parse_feed(b" " * (MAX_FEED_BYTES + 1))


def test_a_page_s_og_image_and_the_template_s_text():
    assert page_image(b'<html><meta content="https://x.example/a.png" property="og:image"></html>') == \
        "https://x.example/a.png"
    assert page_image(b"<meta property='og:image' content='javascript:alert(1)'>") is None
    item = parse_feed(RSS2.encode())[0]
    assert rendered_text("{{ title }} by {{author}}\n{{description}} {{url}}", item) == \
        "Spring sale & more by Ana\nEverything half price. https://shop.example.com/spring"
    assert post_content("A <b>\n\nB") == "<p>A &lt;b&gt;</p><p>B</p>"
    long = item._replace(summary="x" * 1000)
    assert len(rendered_text("{{description}}", long)) == 300
