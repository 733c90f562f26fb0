"""The RSS feeds page (#/autopost) in Chromium (Playwright, as tests/test_web.py), against a real server and a local
feed server: a feed added with the live preview of its newest article's post, listed with its state and last check,
checked now, paused and resumed, deleted after a confirmation; at 1440 and 390 px, light and dark (and 360 px
without sideways scrolling), with no console error, no null text, and no serious axe-core violation.
Screenshots go to /tmp/shots-autopost/."""
from __future__ import annotations

from pathlib import Path

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, screenshots, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations
from feed_server import FeedServer
from support import Database

SHOTS = Path("/tmp/shots-autopost")
CALM = {"RUSTIZ_AUTOPOST_POLL_SECONDS": "3600"}  # (the loop leaves the feeds to the page's "Check now")


@pytest.fixture
def feeds():
    server = FeedServer()
    yield server
    server.close()


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark"), (1440, "dark"), (390, "light"), (360, "light"),
                                          (1024, "light"), (800, "dark")))
def test_add_a_feed_with_its_preview_then_check_pause_and_delete_it(start_server_with_fakes, open_page, feeds,
                                                                    width, scheme):
    server = start_server_with_fakes(env=CALM)
    db = Database(server)
    db.channel("Shop news", "bluesky")
    db.channel("Company page", "bluesky")
    page = open_page(server, width, scheme)
    show(page, "#/autopost")
    expect(page.get_by_role("heading", name="RSS feeds")).to_be_visible()
    expect(page.locator("ul.feed-list")).to_contain_text("No feeds yet")
    page.get_by_label("Feed address").fill(feeds.url("/rss2"))
    page.get_by_label("Text of each post").fill("{{title}}\n{{description}} {{url}}")
    preview = page.locator(".feed-preview")
    expect(preview).to_contain_text("2 articles in the feed; the newest would become:")
    expect(preview.locator(".feed-post")).to_contain_text("Spring sale & more")
    expect(preview.locator(".feed-post")).to_contain_text("Everything half price. https://shop.example.com/spring")
    expect(preview).to_contain_text("With the picture https://shop.example.com/spring.jpg")
    page.get_by_label("Shop news").check()
    page.get_by_label("When a new article appears").select_option("review")
    page.get_by_label("Check every (minutes)").fill("30")
    name = f"{width}-{scheme}"
    screenshots(page, SHOTS / f"{name}-form")
    assert serious_axe_violations(page) == []
    page.get_by_role("button", name="Add feed").click()
    feed = page.locator("li.feed")
    expect(feed).to_have_count(1)
    expect(feed).to_contain_text(feeds.url("/rss2"))
    expect(feed).to_contain_text("Every 30 minutes · Save as drafts to review · Shop news")
    feed.get_by_role("button", name="Check now").click()
    expect(feed).to_contain_text("first fetch: 2 items marked as seen")
    feed.get_by_role("button", name="Pause").click()
    expect(feed.locator(".badge")).to_have_text("Paused")
    screenshots(page, SHOTS / f"{name}-list")
    assert serious_axe_violations(page) == []
    feed.get_by_role("button", name="Resume").click()
    expect(feed.locator(".badge")).to_have_text("Active")
    assert sideways_overflow(page) <= 0 and placeholder_text(page) == []
    feed.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator("li.feed")).to_have_count(0)
    expect(page.locator("ul.feed-list")).to_contain_text("No feeds yet")
    assert page.problems == []


def test_a_refused_feed_says_why_in_the_preview_and_the_list(start_server_with_fakes, open_page, feeds):
    server = start_server_with_fakes(env=CALM)
    db = Database(server)
    channel = db.channel("Shop news", "bluesky")
    page = open_page(server, 1440, "light")
    show(page, "#/autopost")
    page.get_by_label("Feed address").fill(feeds.url("/laughs"))
    expect(page.locator(".feed-preview .feed-error")).to_contain_text("it has a DTD")
    page.get_by_label("Shop news").check()
    page.get_by_role("button", name="Add feed").click()
    feed = page.locator("li.feed")
    feed.get_by_role("button", name="Check now").click()
    expect(feed.locator(".badge")).to_have_text("Failing")
    expect(feed.locator(".feed-error")).to_contain_text("refused: it has a DTD")
    screenshots(page, SHOTS / "refused")
    assert page.problems == [] and channel
