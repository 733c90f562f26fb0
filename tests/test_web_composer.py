"""The composer's text per channel ("Customize", as Postiz's "customize per channel"), in a real browser:
Debian's Chromium driven by Playwright, against the built .pyz. The main text is shared; a customized
channel gets its own editor, counter (against its provider's limit, counted its provider's way) and
preview, and POST /posts carries its own value[] for that channel."""
from __future__ import annotations

import datetime

import pytest

from support import API, Database, api
from test_web import CHROMIUM, browser, open_page, sign_in  # noqa: F401  (fixtures shared with the web tests)
from playwright.sync_api import expect

assert CHROMIUM


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


def posts_of(server, channel_id: str) -> list:
    """The contents of the channel's posts, each thread as a list of its parts' HTML."""
    now = datetime.datetime.now(datetime.timezone.utc)
    window = f"startDate={(now - datetime.timedelta(days=40)).isoformat()}&endDate={(now + datetime.timedelta(days=40)).isoformat()}"
    status, answer = api(server, "GET", f"{API}/posts?{window}".replace("+00:00", "Z"))
    assert status == 200, answer
    threads = []
    for listed in answer["posts"]:
        if listed["integration"]["id"] == channel_id:
            status, post = api(server, "GET", f"{API}/posts/{listed['id']}")
            threads.append([post["content"]] + [reply["content"] for reply in post["thread"]])
    return threads


def test_one_of_two_channels_gets_its_own_text_counter_and_preview(server, open_page):
    db = Database(server)
    sky = db.channel("Sky", "bluesky", profile="sky")
    toot = db.channel("Toots", "mastodon", profile="toots")
    page = open_page(server)
    sign_in(page, server)
    page.get_by_role("link", name="New post").first.click()
    page.get_by_role("checkbox", name="Sky").check()
    expect(page.locator(".custom")).to_have_count(0)  # one channel: nothing to customize
    page.get_by_role("checkbox", name="Toots").check()
    page.get_by_label("Post", exact=True).fill("Shared words")
    page.get_by_role("button", name="+ Add thread part").click()
    page.get_by_label("Thread part 2", exact=True).fill("Shared reply")

    page.get_by_role("button", name="Customize for Sky").click()
    custom = page.locator('.custom[data-channel="%s"]' % sky)
    own = custom.get_by_label("Post on Sky")
    expect(own).to_have_value("Shared words")  # pre-filled with the main text
    expect(custom.get_by_label("Thread part 2 on Sky")).to_have_value("Shared reply")
    own.fill("Only on Bluesky 🦋🦋")
    expect(custom.locator(".count").first).to_have_text("Sky: 18 / 300 characters")
    expect(custom.locator(".custom-preview .preview-part").first).to_have_text("Only on Bluesky 🦋🦋")
    # The main counters name the customized channel instead of counting text it will not post.
    main_counters = page.locator(".part .counters").first
    expect(main_counters.locator(f'[data-channel="{sky}"]')).to_have_text("Sky: its own text, below")
    expect(main_counters.locator(f'[data-channel="{toot}"]')).to_contain_text("Toots: 12 / 500")
    previews = page.locator(".previews")
    expect(previews.locator(f'article[data-channel="{sky}"] .preview-part').first).to_have_text("Only on Bluesky 🦋🦋")
    expect(previews.locator(f'article[data-channel="{toot}"] .preview-part').first).to_have_text("Shared words")
    # Side by side on a wide screen: the editor at the left of its preview.
    editors, preview = custom.locator(".custom-editors"), custom.locator(".custom-preview")
    assert editors.bounding_box()["x"] + editors.bounding_box()["width"] <= preview.bounding_box()["x"]

    # Too long for Bluesky alone: its own counter says so; Mastodon's counts the shared text.
    own.fill("a" * 301)
    expect(custom.locator(".count.over")).to_contain_text("Sky: 301 / 300 characters — too long")
    own.fill("Only on Bluesky")

    # Turned off and on again: back to the main text, then a fresh copy of it.
    page.get_by_role("button", name="Use the main text on Sky").click()
    expect(custom.locator("textarea")).to_have_count(0)
    expect(previews.locator(f'article[data-channel="{sky}"] .preview-part').first).to_have_text("Shared words")
    page.get_by_role("button", name="Customize for Sky").click()
    custom.get_by_label("Post on Sky").fill("Only on Bluesky")

    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_role("heading", name="New post")).to_have_count(0)
    assert posts_of(server, sky) == [["<p>Only on Bluesky</p>", "<p>Shared reply</p>"]]
    assert posts_of(server, toot) == [["<p>Shared words</p>", "<p>Shared reply</p>"]]


def test_a_narrow_screen_puts_a_customized_channel_s_preview_under_its_editor(server, open_page):
    page = open_page(server, width=420, height=860)
    sign_in(page, server)
    page.goto("/#/compose")  # (the navigation is behind the Menu button at this width)
    page.get_by_role("checkbox", name="Sky").check()
    page.get_by_role("checkbox", name="Toots").check()
    page.get_by_label("Post", exact=True).fill("Narrow")
    page.get_by_role("button", name="Customize for Toots").click()
    custom = page.locator(".custom", has_text="Toots")
    editors, preview = custom.locator(".custom-editors"), custom.locator(".custom-preview")
    expect(preview.locator(".preview-part")).to_have_text("Narrow")
    assert preview.bounding_box()["y"] >= editors.bounding_box()["y"] + editors.bounding_box()["height"]
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
