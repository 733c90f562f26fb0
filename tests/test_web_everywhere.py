"""Every page of the web app, with a week of demo data (tests/demo_data.py), at a desktop and a phone width, in
light and dark, in English and Spanish: axe-core (4.12, bundled in PyPI's axe-playwright-python) finds no serious
or critical violation, the console has no error, no page shows `null`/`undefined`/`NaN`, and none scrolls
sideways at 360 px.

Set RUSTIZ_SCREENSHOTS=1 to (re)write docs/screenshots/ from the same pages (the README and docs/web-app.md
show them); otherwise they go to the test's temporary folder."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from test_web import browser, expect, sign_in  # noqa: E402,F401 (and skips here too where it cannot run)
from conftest import Servers
from demo_data import make_demo_week

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDERS = re.compile(r"\b(null|undefined|NaN)\b|\[object Object\]")
AXE_SCRIPT = Path(__import__("axe_playwright_python").__file__).with_name("axe.min.js")
AXE_SOURCE = AXE_SCRIPT.read_text() + "\n;window.axe = axe; true"
WIDTHS = {"desktop": (1440, 900), "phone": (390, 844)}
# What docs/screenshots keeps (RUSTIZ_SCREENSHOTS=1): every page on a desktop in the light scheme, and a few on
# a phone and in the dark one; the test's own folder gets them all.
DOCUMENTED = {("calendar-week", "phone", "light"), ("composer", "phone", "dark"), ("calendar-month", "desktop", "dark"),
              ("channels", "phone", "dark"), ("composer", "desktop", "dark"), ("composer-filled", "phone", "dark")}


def pages(demo: dict) -> dict:
    """name -> the address of every page (the screenshots are named after them)."""
    return {
        "calendar-week": "#/calendar?view=week", "calendar-day": "#/calendar?view=day",
        "calendar-month": "#/calendar?view=month", "calendar-list": "#/calendar?view=list",
        "composer": "#/compose", "channels": "#/channels", "settings": "#/settings",
        "settings-tags": "#/settings?tab=tags", "settings-signatures": "#/settings?tab=signatures",
        "notifications": "#/notifications", "review": "#/review", "import": "#/import", "media": "#/library",
        "post-published": f"#/post/{demo['published']}", "post-failed": f"#/post/{demo['failed']}",
    }


@pytest.fixture(scope="module")
def demo_server(pyz, tmp_path_factory):
    """One server with the demo week for the module, on SQLite (the pages are the same on PostgreSQL)."""
    servers = Servers(pyz, tmp_path_factory.mktemp("demo"), None)
    server = servers.start(env={"RUSTIZ_SCHEDULER": "0"})
    yield server, make_demo_week(server)
    servers.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """shots(name, width, scheme) -> where that page's screenshot goes, or None (not kept)."""
    documenting = os.environ.get("RUSTIZ_SCREENSHOTS") == "1"
    folder = ROOT / "docs" / "screenshots" if documenting else tmp_path_factory.mktemp("screenshots")

    def where(name: str, width: str, scheme: str):
        if documenting and (width, scheme) != ("desktop", "light") and (name, width, scheme) not in DOCUMENTED:
            return None
        return folder / f"{name}-{width}-{scheme}.png"
    return where


def open_signed_in(browser, server, size: tuple, scheme: str, locale: str = "en-US"):
    context = browser.new_context(timezone_id="UTC", viewport={"width": size[0], "height": size[1]},
                                  color_scheme=scheme, locale=locale, base_url=server.url)
    context.set_default_timeout(15000)
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    page.on("console", lambda message: page.problems.append(message.text)
            if message.type == "error" and "Failed to load resource" not in message.text else None)
    if locale.startswith("en"):
        sign_in(page, server)
    else:
        page.goto("/")
        page.locator("input[name=apiKey]").fill(server.key)
        page.locator("button[type=submit]").click()
        expect(page.locator("header.top")).to_be_visible()
    return context, page


def settle(page, address: str) -> None:
    page.goto("/" + address)
    page.wait_for_load_state("networkidle")
    expect(page.locator("p.loading")).to_have_count(0)
    page.wait_for_timeout(150)  # the page's own last renders after its requests


def serious_violations(page) -> list:
    if not page.evaluate("typeof axe !== 'undefined'"):  # (evaluated by the debugger: the page's CSP allows no inline script)
        page.evaluate(AXE_SOURCE)
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
                          ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
                          ".map(v => `${v.id}: ${v.help} at ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')}`)")
    return found


def placeholder_text(page) -> list:
    return PLACEHOLDERS.findall(page.locator("body").inner_text())


def sideways_overflow(page) -> int:
    return page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_every_page_passes_axe_shows_no_placeholder_and_logs_no_error(browser, demo_server, shots, width, scheme):
    server, demo = demo_server
    context, page = open_signed_in(browser, server, WIDTHS[width], scheme)
    problems = {}
    for name, address in pages(demo).items():
        settle(page, address)
        found = serious_violations(page) + [f"shows {text!r}" for text in placeholder_text(page)]
        if page.problems:
            found += [f"console: {problem}" for problem in page.problems]
            page.problems.clear()
        if found:
            problems[name] = found
        target = shots(name, width, scheme)
        if target is not None:
            page.screenshot(path=str(target), full_page=width == "phone")
    context.close()
    assert problems == {}


def test_no_page_scrolls_sideways_at_360_px(browser, demo_server):
    server, demo = demo_server
    context, page = open_signed_in(browser, server, (360, 740), "light")
    wide = {}
    for name, address in pages(demo).items():
        settle(page, address)
        if sideways_overflow(page) > 0:
            wide[name] = page.evaluate("""() => [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                .slice(0, 3).map(e => e.tagName + '.' + e.className)""")
    context.close()
    assert wide == {}


def test_every_page_in_spanish_is_in_spanish_with_dates_in_spanish(browser, demo_server):
    server, demo = demo_server
    context, page = open_signed_in(browser, server, WIDTHS["desktop"], "light", locale="es-ES")
    assert page.evaluate("document.documentElement.lang") == "es"
    english = {"Calendar", "New post", "Channels", "Settings", "Sign out", "Schedule", "Save draft", "Retry"}
    untranslated = {}
    for name, address in pages(demo).items():
        settle(page, address)
        shown = set(page.locator("a, button, h1, h2, label, th").all_inner_texts())
        if shown & english:
            untranslated[name] = sorted(shown & english)
        assert not page.problems, page.problems
        assert placeholder_text(page) == []
    settle(page, "#/calendar?view=month&date=2026-12-01")
    expect(page.get_by_role("heading", level=1)).to_contain_text("diciembre")
    context.close()
    assert untranslated == {}


def test_the_language_and_theme_switches_are_kept_in_this_browser(browser, demo_server):
    server, _ = demo_server
    context, page = open_signed_in(browser, server, WIDTHS["desktop"], "light")
    page.get_by_label("Theme").select_option("dark")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(15, 18, 23)"
    page.get_by_label("Language").select_option("fr")
    expect(page.get_by_role("button", name="Se déconnecter")).to_be_visible()
    page.reload()
    expect(page.get_by_role("button", name="Se déconnecter")).to_be_visible()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.get_by_label("Langue").select_option("en")
    page.get_by_label("Theme").select_option("system")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"
    context.close()


def test_the_navigation_counts_unread_notifications_and_posts_to_review(browser, demo_server):
    server, _ = demo_server
    context, page = open_signed_in(browser, server, WIDTHS["desktop"], "light")
    notifications = page.locator('nav.top .count-badge[data-count="notifications"]')
    expect(notifications).to_have_text("2")
    expect(page.locator('nav.top .count-badge[data-count="review"]')).to_have_text("1")
    settle(page, "#/notifications")
    expect(notifications).to_be_hidden()
    context.close()


def test_keyboard_shortcuts_open_the_composer_go_to_today_and_list_themselves(browser, demo_server):
    server, _ = demo_server
    context, page = open_signed_in(browser, server, WIDTHS["desktop"], "light")
    settle(page, "#/channels")
    page.keyboard.press("n")
    expect(page).to_have_url(re.compile(r"#/compose"))
    page.locator("body").click(position={"x": 5, "y": 5})
    settle(page, "#/channels")
    page.keyboard.press("t")
    expect(page).to_have_url(re.compile(r"#/calendar"))
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_have_count(0)
    context.close()


@pytest.mark.parametrize("width, scheme", [("desktop", "light"), ("phone", "dark")])
def test_the_composer_with_a_post_on_three_channels_passes_axe(browser, demo_server, shots, width, scheme):
    server, _ = demo_server
    context, page = open_signed_in(browser, server, WIDTHS[width], scheme)
    settle(page, "#/compose")
    for name in ("Acme Coffee", "@acme@mastodon.social", "Acme Coffee Co."):
        page.get_by_role("checkbox", name=name, exact=True).check()
    page.get_by_label("Post", exact=True).fill(
        "Our autumn blend is back: notes of fig, cocoa and a little orange peel. #coffee\nhttps://example.com/autumn")
    page.wait_for_timeout(300)  # (the previews follow the text as it is typed)
    found = serious_violations(page) + [f"shows {text!r}" for text in placeholder_text(page)] + page.problems
    target = shots("composer-filled", width, scheme)
    if target is not None:
        page.screenshot(path=str(target), full_page=width == "phone")
    context.close()
    assert found == []
