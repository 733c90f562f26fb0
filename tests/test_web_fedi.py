"""Issue 28 (fedi) in a real browser: Pixelfed's one-click sign-in from the provider picker, and Farcaster's
connect page, where Sign In With Neynar's window (the fake's) answers by postMessage and the page comes back to
rustiz's callback."""
from __future__ import annotations

from test_web import add_channel, browser, expect, open_page, sign_in  # noqa: F401 (fixtures)


def test_pixelfed_is_named_in_the_picker_and_connects_on_its_server(start_server_with_fakes, open_page):
    from fakes.mastodon import FakeMastodon
    server = start_server_with_fakes()
    pixelfed = FakeMastodon(software="pixelfed")
    try:
        page = open_page(server)
        sign_in(page, server)
        page.get_by_role("link", name="Channels").click()
        add_channel(page, "pixelfed")
        page.get_by_label("Pixelfed server").fill(pixelfed.url)
        page.get_by_role("button", name="Continue to sign in").click()
        page.get_by_role("link", name="Authorize").click()  # the server's consent page
        expect(page.get_by_role("status")).to_have_text("Pixelfed connected")
        expect(page.locator("li.channel strong")).to_have_text(["Ada Lovelace"])
    finally:
        pixelfed.close()


def test_farcaster_connects_through_sign_in_with_neynar_s_window(start_server_with_fakes, open_page):
    from fakes.farcaster import FakeNeynar
    neynar = FakeNeynar()
    try:
        server = start_server_with_fakes(env=neynar.env)
        page = open_page(server)
        sign_in(page, server)
        page.get_by_role("link", name="Channels").click()
        add_channel(page, "wrapcast")
        page.get_by_role("button", name="Continue to sign in").click()
        expect(page.get_by_role("heading", name="Connect Farcaster")).to_be_visible()
        page.get_by_role("button", name="Sign in with Neynar").click()  # the window answers by postMessage
        expect(page.get_by_role("status")).to_have_text("Farcaster connected")
        expect(page.locator("li.channel strong")).to_have_text(["Ada Lovelace"])
    finally:
        neynar.close()
