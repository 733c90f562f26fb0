"""Notifications, To review and the post page in Chromium (Playwright, as tests/test_web.py): a notification links
to its post, a failed post's one offers Retry in place, opening the page clears the unread count in the
navigation, pages of 100; To review counts its posts in the heading and approves or rejects the selected ones
at once (the navigation's count follows); a post's page prints no null and offers Duplicate and Delete.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import datetime
import uuid

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, receivers, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations, shoot
from support import (  # noqa: E402
    API, FAST_RETRIES, api, channel_post, connect_database, iso, post_body, scheduled, settled, webhook_channel,
)


def add_notifications(server, texts_and_links: list) -> None:
    """Notifications written as the scheduler writes them, one second apart (the last one the newest)."""
    start = datetime.datetime.now(datetime.timezone.utc)
    with connect_database(server.database) as db:
        organization = db.execute("SELECT id FROM organization").fetchone()[0]
        for index, (text, link) in enumerate(texts_and_links):
            when = (start + datetime.timedelta(seconds=index)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            db.execute("INSERT INTO notification (id, organization_id, content, link, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (str(uuid.uuid4()), organization, text, link, when, when))


def nav_count(page, route: str):
    return page.locator(f".count-badge[data-count={route}]")


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark"), (360, "light")))
def test_a_notification_links_to_its_post_and_a_failed_one_is_retried_in_place(start_server_with_fakes, open_page,
                                                                               receivers, width, scheme):
    server = start_server_with_fakes(env=FAST_RETRIES)
    receiver, = receivers(1)
    channel = webhook_channel(server, receiver, "Product blog")
    receiver.fail_next("POST", "/hook", 422, {"message": "title is required"})
    failed = settled(server, scheduled(server, channel, "<p>Refused</p>", type="now"))["id"]
    add_notifications(server, [("Product blog: the platform refused the post: title is required", f"{server.url}/#/post/{failed}"),
                               ("Elsewhere: see the status page", "https://status.example.com/")])
    page = open_page(server, width, scheme)
    if width > 768:
        expect(nav_count(page, "notifications")).to_be_visible()
    show(page, "#/notifications")
    expect(nav_count(page, "notifications")).to_be_hidden()  # seen
    item = page.locator("ol.notifications li", has_text="title is required").first
    expect(item.get_by_role("link", name="Open the post")).to_have_attribute("href", f"#/post/{failed}")
    expect(page.get_by_role("link", name="open ↗")).to_have_attribute("target", "_blank")
    assert placeholder_text(page) == []
    assert sideways_overflow(page) <= 0
    shoot(page, f"notifications-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    item.get_by_role("button", name="Retry").click()
    expect(item.get_by_role("status")).to_have_text("Sent again: it goes out now.")
    assert settled(server, failed)["state"] == "PUBLISHED"
    show(page, "#/notifications")
    page.locator("ol.notifications li", has_text="title is required").first.get_by_role("link", name="Open the post").click()
    expect(page.get_by_role("heading", name="Post")).to_contain_text("Published")
    assert page.problems == []


def test_notifications_come_a_hundred_a_page(start_server_with_fakes, open_page):
    server = start_server_with_fakes()
    add_notifications(server, [(f"Notice {n}", None) for n in range(105)])
    page = open_page(server, 1440, "dark")
    show(page, "#/notifications")
    expect(page.locator("ol.notifications li")).to_have_count(100)
    expect(page.locator("ol.notifications li").first).to_contain_text("Notice 104")
    expect(page.get_by_text("Page 1 of 2")).to_be_visible()
    page.get_by_role("link", name="Older").click()
    expect(page.locator("ol.notifications li")).to_have_count(5)
    expect(page.get_by_role("link", name="Newer")).to_be_visible()
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "dark"), (390, "light")))
def test_to_review_counts_its_posts_and_decides_the_selected_ones_at_once(start_server_with_fakes, open_page, receivers,
                                                                          width, scheme):
    server = start_server_with_fakes()
    receiver, = receivers(1)
    channel = webhook_channel(server, receiver, "Hook")
    agent = api(server, "POST", f"{API}/api-keys", {"name": "agent", "scope": "drafts"})[1]["apiKey"]
    ids = [api(server, "POST", f"{API}/posts", post_body(channel_post(channel, f"<p>Idea {n}</p>"), type="draft",
                                                           date=iso(86400 + n)), key=agent)[1][0]["postId"]
           for n in range(3)]
    page = open_page(server, width, scheme)
    show(page, "#/review")
    expect(page.locator("h1 .count-pill")).to_have_text("3")
    if width > 768:
        expect(nav_count(page, "review")).to_have_text("3")
    assert placeholder_text(page) == []
    assert sideways_overflow(page) <= 0
    shoot(page, f"review-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    for post_id in ids[:2]:
        page.locator(f"li.review-item[data-id='{post_id}'] input.pick").check()
    page.get_by_role("button", name="Approve selected").click()
    expect(page.locator("ul.review-list li.review-item")).to_have_count(1)
    expect(page.locator("h1 .count-pill")).to_have_text("1")
    if width > 768:
        expect(nav_count(page, "review")).to_have_text("1")
    assert [api(server, "GET", f"{API}/posts/{post_id}")[1]["state"] for post_id in ids[:2]] == ["QUEUE", "QUEUE"]
    page.get_by_label("Select all").check()
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_role("alert")).to_contain_text("Say why first")
    page.get_by_label("Reason for rejecting the selected posts").fill("Off topic")
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_text("Nothing to review.")).to_be_visible()
    expect(nav_count(page, "review")).to_be_hidden()
    assert api(server, "GET", f"{API}/posts/{ids[2]}", key=agent)[1]["reviewReason"] == "Off topic"
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_the_post_page_is_tidy_and_duplicates_a_post(start_server_with_fakes, open_page, receivers, width, scheme):
    server = start_server_with_fakes()
    receiver, = receivers(1)
    channel = webhook_channel(server, receiver, "Hook")
    post_id = scheduled(server, channel, "<p>The post</p>", "<p>Its reply</p>", type="schedule", date=iso(86400))
    page = open_page(server, width, scheme)
    show(page, f"#/post/{post_id}")
    expect(page.locator("dl.facts")).to_contain_text("Hook · Webhook")
    assert "null" not in page.locator("main").inner_text()
    assert placeholder_text(page) == []
    assert sideways_overflow(page) <= 0
    shoot(page, f"post-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    page.get_by_role("button", name="Duplicate").click()
    page.wait_for_url("**/#/compose?edit=*")  # (the composer opens the copy on every channel)
    copy_id = page.url.rsplit("=", 1)[1]
    assert copy_id != post_id
    copy = api(server, "GET", f"{API}/posts/{copy_id}")[1]
    assert copy["state"] == "DRAFT" and len(copy["thread"]) == 1
    assert api(server, "GET", f"{API}/posts/{post_id}")[1]["state"] == "QUEUE"
    assert page.problems == []
