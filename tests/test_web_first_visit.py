"""What a new user meets first in the web app, in a real browser (Debian's Chromium driven by Playwright)
against the built .pyz: a first load with no failed request and no console error, generated channel
names that stay readable in the calendar, and a reply waiting for its delay showing when it goes out."""
from __future__ import annotations

import pytest

from support import API, Database, api, channel_post, post_body
from test_web import CHROMIUM, browser, open_page, sign_in  # noqa: F401  (fixtures shared with the web tests)
from playwright.sync_api import expect

assert CHROMIUM
LONG_NAMES = ("Webhook to 127.0.0.1:8899", "Webhook to 127.0.0.1:8900")


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


def test_the_first_load_makes_no_failing_request_and_logs_no_error(server, browser):
    context = browser.new_context(base_url=server.url)
    try:
        page = context.new_page()
        problems = []
        page.on("console", lambda message: problems.append(message.text) if message.type in ("error", "warning") else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("requestfailed", lambda request: problems.append(f"{request.url} failed: {request.failure}"))
        page.on("response", lambda response: problems.append(f"{response.url}: {response.status}")
                if response.status >= 400 else None)
        page.goto("/")
        expect(page.get_by_label("API key")).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert problems == []
    finally:
        context.close()


@pytest.fixture(scope="module")
def long_named(server) -> list:
    """Two channels with the names rustiz generates for webhooks, each with a post on 4 September 2030."""
    db = Database(server)
    channels = [db.channel(name, "webhook") for name in LONG_NAMES]
    for channel in channels:
        db.post(channel, "2030-09-04T10:00:00.000Z", settings='{"__type":"webhook"}')
    return channels


@pytest.mark.parametrize("width, view", [(1280, "week"), (1280, "month"), (420, "month")])
def test_long_channel_names_stay_whole_in_the_calendar(server, long_named, open_page, width, view):
    """The same post on both channels is one card; a narrow card cannot hold both names, so they are whole in
    its title (each channel's avatar says it too) and in its preview."""
    page = open_page(server, width=width)
    sign_in(page, server)
    page.goto(f"/#/calendar?view={view}&date=2030-09-04")
    chips = page.locator("a.post")
    expect(chips).to_have_count(1)
    expect(chips.locator(".av")).to_have_count(2)
    for name in LONG_NAMES:
        assert name in chips.get_attribute("title")
        expect(chips.locator(f".av[title^='{name} ']")).to_have_count(1)
    chips.focus()
    page.locator(".cal-card").get_by_role("button", name="Preview").click()
    names = page.get_by_role("dialog").locator(".preview-channels li")
    expect(names).to_have_count(2)
    for index, name in enumerate(LONG_NAMES):
        expect(names.nth(index)).to_contain_text(name)
        assert names.nth(index).evaluate("e => e.scrollWidth <= e.clientWidth + 1"), name  # not cut


def test_a_reply_waiting_for_its_delay_shows_its_own_time(server, long_named, open_page):
    thread = channel_post(long_named[0], "<p>the post</p>", "<p>the reply</p>", settings={"__type": "webhook"},
                          delay=90)
    status, created = api(server, "POST", f"{API}/posts",
                          post_body(thread, type="schedule", date="2031-03-01T10:00:00.000Z"))
    assert status == 201, created
    page = open_page(server, timezone_id="UTC")
    sign_in(page, server)
    page.goto(f"/#/post/{created[0]['postId']}")
    reply = page.locator(".part-view").nth(1)
    expect(reply).to_contain_text("90 minutes after the part before")
    expect(reply.locator(".goes-out time")).to_have_attribute("datetime", "2031-03-01T11:30:00.000Z")
    expect(reply.locator(".goes-out")).to_contain_text("11:30")
