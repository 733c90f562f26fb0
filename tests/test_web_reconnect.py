"""Reconnecting a channel connected with pasted credentials, in a real browser (Chromium through Playwright,
as tests/test_web.py): the notification's link opens the channel's "Reconnect" form, built from its
provider's credential fields; errors show next to the field; the waiting post goes out after the update.

Set RUSTIZ_SCREENSHOTS=<folder> to keep the form's screenshots at desktop and phone width there."""
from __future__ import annotations

import os

import pytest

from test_web import browser, expect, open_page, sign_in  # noqa: F401  (fixtures; skips without a browser)
from fakes.wordpress import FakeWordPress  # noqa: E402
from platforms import REQUIRED_SETTINGS  # noqa: E402
from support import API, api, connected, get_post, scheduled, settled, waiting_for_reconnect  # noqa: E402


def screenshot(page, name: str) -> None:
    folder = os.environ.get("RUSTIZ_SCREENSHOTS")
    if folder:
        page.screenshot(path=os.path.join(folder, f"{name}.png"), full_page=True)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_revoked_wordpress_password_is_replaced_from_the_notification_s_link_and_the_post_goes_out(
        start_server_with_fakes, open_page, width):
    wordpress = FakeWordPress()
    try:
        server = start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.2"})
        channel = connected(server, "wordpress", wordpress.credentials(), name="Company blog")
        wordpress.password = "wxyz WXYZ 9876 abcd EFGH 5432"  # the old Application Password revoked, a new one made
        post_id = waiting_for_reconnect(server, scheduled(server, channel["id"], "<p>Release notes</p>",
                                                          provider="wordpress",
                                                          settings=REQUIRED_SETTINGS["wordpress"]))["id"]
        page = open_page(server, width=width)
        sign_in(page, server)
        page.get_by_role("link", name="Notifications").click() if width > 640 else page.goto("/#/notifications")
        page.get_by_role("link", name="Open", exact=True).first.click()  # a page of rustiz: opened here
        form = page.get_by_role("form", name="New credentials for Company blog")
        expect(form).to_be_visible()
        expect(page.get_by_role("button", name="Reconnect Company blog")).to_be_visible()
        expect(form.get_by_label("Site URL")).to_be_focused()
        screenshot(page, f"reconnect-form-{width}")

        form.get_by_label("Site URL").fill(wordpress.url)
        form.get_by_label("Username").fill(wordpress.username)
        form.get_by_role("button", name="Save and check").click()  # no password: said under its field
        expect(form.locator(".field", has_text="Application password").locator(".field-error")).to_have_text(
            "should not be empty")
        expect(form.get_by_label("Application password")).to_be_focused()
        form.get_by_label("Application password").fill("abcd EFGH 1234 ijkl MNOP 6789")  # the revoked one
        form.get_by_role("button", name="Save and check").click()
        expect(form.get_by_role("alert").filter(has_text="WordPress refused these credentials")).to_contain_text(
            "The provided password is an invalid application password")
        screenshot(page, f"reconnect-refused-{width}")
        assert get_post(server, post_id)["state"] == "QUEUE"

        form.get_by_label("Application password").fill(wordpress.password)
        form.get_by_role("button", name="Save and check").click()
        expect(page.get_by_role("status")).to_have_text(
            "Company blog has its new credentials: the posts that waited for it go out now.")
        expect(page.locator("li.channel", has_text="Company blog")).not_to_contain_text("Needs reconnect")
        page.get_by_role("button", name="Actions for Company blog").click()
        expect(page.get_by_role("menuitem", name="Update credentials")).to_be_visible()
        screenshot(page, f"reconnect-done-{width}")
        assert settled(server, post_id)["state"] == "PUBLISHED"
        assert [c["id"] for c in api(server, "GET", f"{API}/integrations")[1]] == [channel["id"]]
    finally:
        wordpress.close()


def test_every_channel_with_pasted_credentials_offers_update_credentials(start_server_with_fakes, open_page, receiver):
    server = start_server_with_fakes()
    connected(server, "webhook", receiver.credentials(), name="Team hook")
    page = open_page(server)
    sign_in(page, server)
    page.get_by_role("link", name="Channels").click()
    expect(page.get_by_role("button", name="Reconnect Team hook")).to_have_count(0)
    page.get_by_role("button", name="Actions for Team hook").click()
    page.get_by_role("menuitem", name="Update credentials").click()
    form = page.get_by_role("form", name="New credentials for Team hook")
    expect(form.get_by_label("Receiver URL")).to_be_visible()
    expect(form.get_by_label("Signing secret (optional)")).to_be_visible()
    form.get_by_label("Receiver URL").fill("ftp://nope.example.com/")
    form.get_by_role("button", name="Save and check").click()
    expect(form.locator(".field", has_text="Receiver URL").locator(".field-error")).to_contain_text(
        "must be a URL address starting with http:// or https://")
    form.get_by_role("button", name="Cancel").click()
    expect(form).to_have_count(0)
