"""rustiz's OAuth consent for MCP clients (issue 27) in a real browser (Chromium at /usr/bin/chromium, through
Playwright): a browser sent to /oauth/authorize while signed out signs in to the web app and comes back to the
consent page, whose Allow reaches the client's redirect URI (the page's CSP form-action allows it); the page fits
1440 and 390 px wide, light and dark, with nothing serious for axe-core; Settings -> MCP lists the connected app and revokes it."""
from __future__ import annotations

import os
import secrets
from urllib.parse import parse_qs, urlsplit

import pytest

CHROMIUM = os.environ.get("RUSTIZ_CHROMIUM", "/usr/bin/chromium")
try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - machines without the browser tests' tools
    sync_playwright = None
if sync_playwright is None or not os.path.exists(CHROMIUM):
    pytest.skip(f"browser tests need Playwright for Python and Chromium at {CHROMIUM}", allow_module_level=True)

from test_api_oauth_server import REDIRECT, authorize_query, mcp, new_client, token_call  # noqa: E402
from test_web_channels import serious_axe_violations  # noqa: E402


def test_consent_in_a_browser_from_signed_out_to_the_client_and_revoked_in_settings(start_server):
    server = start_server()
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        context = browser.new_context(timezone_id="UTC", base_url=server.url, viewport={"width": 1440, "height": 900})
        context.set_default_timeout(15000)
        tab = context.new_page()
        errors, arrived = [], []
        tab.on("pageerror", lambda error: errors.append(str(error)))
        tab.route(REDIRECT + "*", lambda route: (arrived.append(route.request.url),
                                                 route.fulfill(status=200, body="done", content_type="text/plain")))
        tab.goto(authorize_query(client_id, verifier))
        tab.get_by_label("API key").fill(server.key)
        tab.get_by_role("button", name="Sign in", exact=True).click()
        expect(tab.get_by_role("heading", name="Connect Test agent to rustiz?")).to_be_visible()
        expect(tab.locator(".unverified")).to_have_text("(unverified)")
        for width, scheme in ((1440, "light"), (390, "dark"), (390, "light"), (1440, "dark")):
            tab.set_viewport_size({"width": width, "height": 900})
            tab.emulate_media(color_scheme=scheme)
            assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
            assert serious_axe_violations(tab) == [], (width, scheme)
            tab.screenshot(path=str(server.data_dir / f"consent-{width}-{scheme}.png"))
        tab.get_by_label("Drafts that wait for review").check()
        tab.get_by_role("button", name="Allow").click()
        tab.wait_for_url(REDIRECT + "*")
        back = parse_qs(urlsplit(arrived[-1]).query)
        assert back["state"] == ["st-1"] and back["iss"] == [server.url]
        status, answer = token_call(server, grant_type="authorization_code", code=back["code"][0], client_id=client_id,
                                    redirect_uri=REDIRECT, code_verifier=verifier)
        assert status == 200 and answer["scope"] == "mcp:drafts", answer

        tab.goto("/#/settings?tab=mcp")
        row = tab.locator("tr.connected-app")
        expect(row).to_have_count(1)
        expect(row.locator(".scope")).to_have_text("mcp:drafts")
        tab.once("dialog", lambda dialog: dialog.accept())
        tab.get_by_role("button", name="Revoke Test agent").click()
        expect(row).to_have_count(0)
        assert mcp(server, answer["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[0] == 401
        browser.close()
    assert errors == []
