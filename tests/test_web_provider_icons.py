"""Every platform's icon (Chromium, Playwright as tests/test_web.py): web/provider-icons.svg holds one
<symbol id="p-<identifier>"> for each provider of GET /public/v1/providers (and for the Mastodon-API servers the
picker may name), drawn in currentColor, under 25 KB, with its source and licence said in its header; the "Add
channel" picker shows each tile's icon (the symbol really drawn: a non-empty box), as does a channel's badge, at
desktop and phone widths, light and dark, with the tiles named by their platform's name and nothing refused by
the page's Content-Security-Policy.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import os
import re
import urllib.request
from pathlib import Path
from xml.etree import ElementTree

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import (  # noqa: F401
    open_page, placeholder_text, receivers, screenshots, show, sideways_overflow,
)
from support import API, api, webhook_channel  # noqa: E402

ICONS = Path(__file__).resolve().parent.parent / "web" / "provider-icons.svg"
SVG = "{http://www.w3.org/2000/svg}"
FEDIVERSE = ("pixelfed", "friendica")  # Mastodon-API servers the picker may name (issue 28)


def symbols() -> dict:
    """id -> the <symbol> element of provider-icons.svg."""
    root = ElementTree.parse(ICONS).getroot()
    return {symbol.get("id"): symbol for symbol in root.iter(SVG + "symbol")}


def test_the_icons_file_has_a_symbol_for_every_provider_small_and_credited(start_server_with_fakes):
    server = start_server_with_fakes()
    status, providers = api(server, "GET", f"{API}/providers")
    assert status == 200
    found = symbols()
    wanted = {provider["identifier"] for provider in providers} | set(FEDIVERSE)
    assert sorted(wanted - {name.removeprefix("p-") for name in found}) == []
    assert all(symbol.get("viewBox") == "0 0 24 24" for symbol in found.values())
    raw = ICONS.read_bytes()
    assert len(raw) < 25 * 1024
    text = raw.decode()
    assert re.search(r"simple-icons \d+\.\d+\.\d+ \(CC0-1\.0", text)
    # drawn in the text colour (light and dark alike), no colour of its own, nothing fetched from elsewhere
    assert not re.search(r"fill=\"#|stroke=\"#|style=", text)
    assert not re.search(r"href=\"(?!#p-)", text)
    with urllib.request.urlopen(server.url + "/web/provider-icons.svg", timeout=10) as served:
        assert served.headers["Content-Type"] == "image/svg+xml"
        assert served.read() == raw


def drawn_icons(scope) -> list:
    """[provider, the drawn icon's width and height] of each platform mark in `scope` (a locator)."""
    return scope.locator(".platform-mark").evaluate_all(
        "marks => marks.map((mark) => { const use = mark.querySelector('svg use'); const box = use ? use.getBBox() : null;"
        " return [mark.dataset.platform, box ? [Math.round(box.width), Math.round(box.height)] : null]; })")


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (1440, "dark"), (390, "light"), (390, "dark")))
def test_the_picker_and_the_channel_badge_show_every_platforms_icon(start_server_with_fakes, open_page, receivers,
                                                                     width, scheme):
    server = start_server_with_fakes()
    receiver, = receivers(1)
    webhook_channel(server, receiver, "Company news")
    platforms = [p for p in api(server, "GET", f"{API}/providers")[1] if p["connectable"] or p["oauth"]]
    page = open_page(server, width, scheme)
    show(page, "#/channels")
    badge = page.locator(".channel-picture")
    expect(badge.locator(".platform-mark svg use")).to_have_attribute("href", "/web/provider-icons.svg#p-webhook")
    page.wait_for_function("() => document.querySelector('.channel-picture .platform-mark use').getBBox().width > 0")
    shots = Path(os.environ["RUSTIZ_PAGE_SHOTS"]) if os.environ.get("RUSTIZ_PAGE_SHOTS") else None
    if shots:
        screenshots(page, shots / f"channel-badge-{width}-{scheme}")
    page.get_by_role("button", name="Add channel").first.click()
    dialog = page.get_by_role("dialog", name="Add channel")
    expect(dialog.locator("button.provider")).to_have_count(len(platforms))
    page.wait_for_function("() => [...document.querySelectorAll('.provider .platform-mark use')]"
                           ".every((use) => use.getBBox().width > 0)")
    drawn = drawn_icons(dialog)
    assert sorted(name for name, _ in drawn) == sorted(p["identifier"] for p in platforms)
    assert [name for name, box in drawn if not box or min(box) < 8] == []
    for platform in platforms:  # each tile is named by its platform (the icon itself is hidden from readers)
        expect(dialog.get_by_role("button", name=platform["name"], exact=True)).to_have_count(1)
    # the icon is drawn in the tile's own text colour, which contrasts with the tile in either scheme
    colours = page.evaluate("() => { const mark = document.querySelector('.provider .platform-mark');"
                            " const style = getComputedStyle(mark); return [style.color, style.backgroundColor,"
                            " getComputedStyle(mark.querySelector('svg')).fill]; }")
    assert colours[0] != colours[1] and colours[2] == colours[0]
    if shots:
        screenshots(page, shots / f"provider-icons-{width}-{scheme}")
    assert sideways_overflow(page) <= 0
    assert placeholder_text(page) == []
    assert page.problems == []
