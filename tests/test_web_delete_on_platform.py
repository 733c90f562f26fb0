"""Deleting a published post in the web app (issue 28), in Chromium against the built .pyz and the Bluesky fake: the
confirmation offers "Also delete it on …" (unticked) for a channel whose platform can delete, names the channels that
cannot, and after the delete shows what each platform did; from the post page and from a calendar card; at 1440 and
390 px, light and dark, with no console error, no null text, no sideways scrolling, no serious axe-core violation.

Set RUSTIZ_DELETE_SHOTS=<folder> to keep screenshots of the dialogs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_web import CHROMIUM, browser, expect  # noqa: F401 (fixtures shared with the web tests; skips too)
from test_web_pages import open_page, placeholder_text, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations
from support import connect, published, webhook_channel

assert CHROMIUM
SHOTS = Path(os.environ["RUSTIZ_DELETE_SHOTS"]) if os.environ.get("RUSTIZ_DELETE_SHOTS") else None


@pytest.fixture
def server(start_server_with_fakes, platforms):
    return start_server_with_fakes(env={**platforms.env, "API_LIMIT": "0"})


def looks_right(page, name: str) -> None:
    assert placeholder_text(page) == [] and sideways_overflow(page) <= 0
    assert serious_axe_violations(page) == []
    if SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.mark.parametrize("width,scheme", [(1440, "light"), (390, "dark")])
def test_the_post_page_deletes_a_published_post_on_its_platform_too_and_shows_the_result(server, platforms, open_page,
                                                                                         width, scheme):
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>Out there</p>", "<p>and its reply</p>", provider="bluesky")
    page = open_page(server, width, scheme)
    page.goto(f"/#/post/{post['id']}")
    page.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete post")
    also = dialog.get_by_label("Also delete it on Alice Example (Bluesky)")
    expect(also).not_to_be_checked()
    looks_right(page, f"confirm-{width}-{scheme}")
    also.check()
    dialog.get_by_role("button", name="Delete").click()
    results = page.get_by_role("dialog", name="Deleted in rustiz")
    expect(results.locator("li.deleted")).to_contain_text("Deleted on Alice Example (Bluesky)")
    looks_right(page, f"result-{width}-{scheme}")
    results.get_by_role("button", name="Close").click()
    expect(page.locator(".cal-title")).to_be_visible()
    assert not {part["releaseId"].rsplit("/", 1)[1] for part in [post, *post["thread"]]} & set(bluesky.records)
    assert page.problems == []


def test_a_channel_that_cannot_delete_is_named_and_unticked_deletes_stay_in_rustiz_only(server, platforms, open_page,
                                                                                         receiver):
    bluesky = platforms.fakes["bluesky"]
    hook = webhook_channel(server, receiver, "Hook")
    post = published(server, hook, "<p>To the receiver</p>")
    page = open_page(server, 390, "light")
    page.goto(f"/#/post/{post['id']}")
    page.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete post")
    expect(dialog.locator(".cannot-delete")).to_contain_text("Hook (Webhook)")
    expect(dialog.locator("input.on-platform")).to_have_count(0)
    looks_right(page, "cannot")
    dialog.get_by_role("button", name="Delete").click()
    expect(page.locator(".cal-title")).to_be_visible()

    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>Kept out there</p>", provider="bluesky")
    page.goto(f"/#/post/{post['id']}")
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog", name="Delete post").get_by_role("button", name="Delete").click()  # (left unticked)
    expect(page.locator(".cal-title")).to_be_visible()
    assert post["releaseId"].rsplit("/", 1)[1] in bluesky.records and page.problems == []


def test_a_calendar_card_of_a_published_post_offers_the_platform_too(server, platforms, open_page):
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>On the calendar</p>", provider="bluesky")
    page = open_page(server, 1440, "dark")
    page.goto(f"/#/calendar?view=day&date={post['publishDate'][:10]}")
    card = page.locator(".cal-card", has=page.locator(f"a.post[data-id='{post['id']}']"))
    card.hover()
    card.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete post")
    dialog.get_by_label("Also delete it on Alice Example (Bluesky)").check()
    dialog.get_by_role("button", name="Delete").click()
    results = page.get_by_role("dialog", name="Deleted in rustiz")
    expect(results.locator("li.deleted")).to_have_count(1)
    results.get_by_role("button", name="Close").click()
    expect(page.locator(f"a.post[data-id='{post['id']}']")).to_have_count(0)
    assert post["releaseId"].rsplit("/", 1)[1] not in bluesky.records and page.problems == []


def test_a_platform_that_fails_is_shown_as_not_deleted_with_its_reason_and_a_link_to_what_is_left(server, platforms, open_page):
    bluesky = platforms.fakes["bluesky"]
    channel_id = connect(server, "bluesky", platforms.credentials("bluesky"))[1]["id"]
    post = published(server, channel_id, "<p>Stubborn</p>", provider="bluesky")
    bluesky.fail_next("POST", r".*deleteRecord", 503, {"error": "InternalServerError", "message": "Try later"})
    page = open_page(server, 390, "dark")
    page.goto(f"/#/post/{post['id']}")
    page.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete post")
    dialog.get_by_label("Also delete it on Alice Example (Bluesky)").check()
    dialog.get_by_role("button", name="Delete").click()
    failed = page.get_by_role("dialog", name="Deleted in rustiz").locator("li.not-deleted")
    expect(failed).to_contain_text("Not deleted on Alice Example (Bluesky)")
    expect(failed).to_contain_text("Try later")
    left = failed.get_by_role("link", name=post["releaseURL"])  # (to delete it there by hand)
    expect(left).to_have_attribute("href", post["releaseURL"])
    looks_right(page, "failed-390-dark")
    assert post["releaseId"].rsplit("/", 1)[1] in bluesky.records and page.problems == []
