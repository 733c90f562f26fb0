"""The web app's API keys card (add, shown once, list with scope and last use, revoke) and its To review page
(approve, reject with a reason), in a real browser (Chromium at /usr/bin/chromium, through Playwright)."""
from __future__ import annotations

import os

import pytest

CHROMIUM = os.environ.get("RUSTIZ_CHROMIUM", "/usr/bin/chromium")
try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - machines without the browser tests' tools
    sync_playwright = None
if sync_playwright is None or not os.path.exists(CHROMIUM):
    pytest.skip(f"browser tests need Playwright for Python and Chromium at {CHROMIUM}", allow_module_level=True)

from fakes.webhook import FakeWebhookReceiver  # noqa: E402
from support import API, api, channel_post, iso, png_file, post_body, uploaded, webhook_channel  # noqa: E402


@pytest.fixture
def page(start_server_with_fakes):
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        server = start_server_with_fakes()
        context = browser.new_context(timezone_id="UTC", base_url=server.url)
        context.set_default_timeout(15000)
        tab = context.new_page()
        errors = []
        tab.on("pageerror", lambda error: errors.append(str(error)))
        tab.goto("/")
        tab.get_by_label("API key").fill(server.key)
        tab.get_by_role("button", name="Sign in", exact=True).click()
        expect(tab.get_by_role("navigation", name="Main")).to_be_visible()  # (Sign out is behind Menu on a phone)
        yield tab, server
        browser.close()
        assert errors == []


def test_settings_adds_a_key_shows_it_once_lists_it_and_revokes_it(page):
    tab, server = page
    tab.once("dialog", lambda dialog: dialog.accept())
    tab.get_by_role("link", name="Settings").click()
    tab.get_by_role("tab", name="API keys").click()
    card = tab.locator("section.card", has=tab.get_by_role("heading", name="API keys", exact=True))
    expect(card.locator("tr.api-key-row[data-name=default] .scope")).to_have_text("full")
    card.get_by_label("Key name").fill("agent")
    card.get_by_label("Key scope").select_option("drafts")
    card.get_by_role("button", name="Add key").click()
    key = card.locator("code.new-api-key").inner_text()
    assert len(key) == 64
    expect(card.locator("tr.api-key-row[data-name=agent] .scope")).to_have_text("drafts")
    expect(card.locator("tr.api-key-row[data-name=agent] .last-use")).to_have_text("never")
    assert api(server, "GET", f"{API}/integrations", key=key)[0] == 200
    card.get_by_role("button", name="Revoke key agent").click()
    expect(card.locator("tr.api-key-row[data-name=agent]")).to_have_count(0)
    assert api(server, "GET", f"{API}/integrations", key=key)[0] == 401


def test_to_review_approves_one_agent_draft_and_rejects_another_with_a_reason(page):
    tab, server = page
    receiver = FakeWebhookReceiver()
    try:
        channel = webhook_channel(server, receiver, "Hook")
        agent = api(server, "POST", f"{API}/api-keys", {"name": "agent", "scope": "drafts"})[1]["apiKey"]
        ids = [api(server, "POST", f"{API}/posts", post_body(channel_post(channel, f"<p>{text}</p>"), type="draft",
                                                               date=iso(86400)), key=agent)[1][0]["postId"]
               for text in ("approve me", "reject me")]
        tab.get_by_role("link", name="To review").click()
        expect(tab.locator("ul.review-list li.review-item")).to_have_count(2)
        first = tab.locator(f"li.review-item[data-id='{ids[0]}']")
        first.get_by_role("button", name="Approve").click()
        expect(tab.locator("ul.review-list li.review-item")).to_have_count(1)
        second = tab.locator(f"li.review-item[data-id='{ids[1]}']")
        second.get_by_label("Reason").fill("Needs a source")
        second.get_by_role("button", name="Reject").click()
        expect(tab.get_by_text("Nothing to review.")).to_be_visible()
        expect(tab.locator("ul.rejected-list .review-reason")).to_contain_text("Needs a source")
        approved = api(server, "GET", f"{API}/posts/{ids[0]}")[1]
        rejected = api(server, "GET", f"{API}/posts/{ids[1]}", key=agent)[1]
        assert (approved["state"], approved["review"]) == ("QUEUE", None)
        assert (rejected["review"], rejected["reviewReason"]) == ("rejected", "Needs a source")
    finally:
        receiver.close()


def test_to_review_shows_the_whole_post_and_does_not_approve_an_edit_made_after_it_loaded(page):
    tab, server = page
    receiver = FakeWebhookReceiver()
    try:
        channel = webhook_channel(server, receiver, "Hook")
        agent = api(server, "POST", f"{API}/api-keys", {"name": "agent", "scope": "drafts"})[1]["apiKey"]
        image = uploaded(server, png_file(4, 4))
        body = post_body(channel_post(channel, ("<p>The post</p>", [{"id": image["id"], "path": image["path"]}]),
                                      "<p>Its reply</p>", settings={"link_title": "Read more"}),
                         type="draft", date=iso(86400))
        post_id = api(server, "POST", f"{API}/posts", body, key=agent)[1][0]["postId"]
        tab.get_by_role("link", name="To review").click()
        item = tab.locator(f"li.review-item[data-id='{post_id}']")
        expect(item.locator("li.review-part p.content")).to_have_text(["The post", "Its reply"])
        expect(item.locator("ul.media img")).to_have_count(1)
        expect(item.locator("dl.review-settings")).to_contain_text("Link title")
        expect(item.locator("dl.review-settings")).to_contain_text("Read more")
        if os.environ.get("RUSTIZ_SCREENSHOTS"):
            for width in (1280, 390):
                tab.set_viewport_size({"width": width, "height": 860})
                tab.screenshot(path=f"/tmp/review-{width}.png", full_page=True)
        status, answer = api(server, "PUT", f"{API}/posts/{post_id}", {"content": "<p>Swapped after you looked</p>"},
                             key=agent)
        assert status == 200, answer
        item.get_by_role("button", name="Approve").click()
        expect(item.get_by_role("alert")).to_contain_text("changed after you looked at it")
        assert api(server, "GET", f"{API}/posts/{post_id}")[1]["state"] == "DRAFT"
        item.get_by_role("button", name="Show the post as it is now").click()
        item = tab.locator(f"li.review-item[data-id='{post_id}']")
        expect(item.locator("li.review-part p.content").first).to_have_text("Swapped after you looked")
        item.get_by_role("button", name="Approve").click()
        expect(tab.get_by_text("Nothing to review.")).to_be_visible()
        assert api(server, "GET", f"{API}/posts/{post_id}")[1]["state"] == "QUEUE"
    finally:
        receiver.close()
