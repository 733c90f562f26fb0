"""The channels page in Chromium (Playwright, as tests/test_web.py): a grid of cards with the picture (or the
initial when it fails) and the platform, the state, the id; a "⋯" menu (a real menu: Escape closes it) with
rename, posting times as time pickers, group, copy id, figures, disable, delete with the count of posts it
removes; "Add channel" as one dialog with every platform, searchable, then its form or its sign-in.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import (  # noqa: F401
    PICTURE, open_page, placeholder_text, receivers, screenshots, set_picture, show, sideways_overflow,
)
from fakes import answer  # noqa: E402
from support import API, api, iso, scheduled, webhook_channel  # noqa: E402

SIZES = ((1440, "light"), (390, "dark"), (360, "light"))


AXE = Path(__file__).resolve().parent.parent / ".venv/lib/python3.11/site-packages/axe_playwright_python/axe.min.js"


def serious_axe_violations(page) -> list:
    """axe-core's serious and critical violations on the page as it is ([] where axe-core is not installed)."""
    if not AXE.exists():
        return []
    page.evaluate(AXE.read_text())  # (evaluated, not a <script>: the page's policy allows no inline script)
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
                          ".filter((v) => ['serious', 'critical'].includes(v.impact))"
                          ".map((v) => [v.id, v.nodes.map((n) => n.target.join(' ')).slice(0, 3)])")
    return found


def shoot(page, name: str) -> None:
    if os.environ.get("RUSTIZ_PAGE_SHOTS"):
        screenshots(page, Path(os.environ["RUSTIZ_PAGE_SHOTS"]) / name)


def two_channels(server, receivers) -> tuple:
    made = receivers(2)
    news, blog = (webhook_channel(server, receiver, name) for receiver, name in zip(made, ("Company news", "Product blog")))
    made[0].route("GET", "/avatar.png", lambda request: answer(200, PICTURE, {"Content-Type": "image/png"}))
    set_picture(server, news, made[0].url + "/avatar.png")
    set_picture(server, blog, made[1].url + "/gone.png")
    for day in (1, 2):
        scheduled(server, blog, f"<p>Post {day}</p>", type="schedule", date=iso(day * 86400))
    return news, blog


@pytest.mark.parametrize("width,scheme", SIZES)
def test_channel_cards_show_picture_platform_state_and_id_at_every_width(start_server_with_fakes, open_page, receivers,
                                                                          width, scheme):
    server = start_server_with_fakes()
    news, blog = two_channels(server, receivers)
    page = open_page(server, width, scheme)
    show(page, "#/channels")
    card = page.locator("li.channel", has_text="Company news")
    expect(card.locator("img.avatar-img")).to_be_visible()
    expect(card.locator(".platform")).to_contain_text("Webhook")
    expect(card.locator(".badge")).to_have_text("Connected")
    expect(card.locator("code.channel-id")).to_have_text(news)
    broken = page.locator("li.channel", has_text="Product blog")
    expect(broken.locator(".avatar")).to_have_text("P")  # the initial, never a broken-image icon
    assert page.locator("img").evaluate_all("imgs => imgs.filter((i) => i.complete && !i.naturalWidth).length") == 0
    expect(page.locator("form.rename")).to_have_count(0)  # the rename box opens on demand only
    assert placeholder_text(page) == []
    assert sideways_overflow(page) <= 0
    shoot(page, f"channels-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    page.get_by_role("button", name="Actions for Product blog").click()
    expect(page.get_by_role("menu", name="Actions for Product blog")).to_be_visible()
    assert sideways_overflow(page) <= 0
    assert serious_axe_violations(page) == []
    shoot(page, f"channels-menu-{width}-{scheme}")
    assert page.problems == []


def test_the_menu_is_a_real_menu_and_renames_regroups_and_disables(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes()
    news, blog = two_channels(server, receivers)
    page = open_page(server, 1440)
    show(page, "#/channels")
    menu_button = page.get_by_role("button", name="Actions for Company news")
    expect(menu_button).to_have_attribute("aria-haspopup", "menu")
    menu_button.click()
    expect(menu_button).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("menuitem", name="Rename")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("menuitem", name="Posting times")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("menu")).to_be_hidden()
    expect(menu_button).to_be_focused()

    menu_button.click()
    page.get_by_role("menuitem", name="Rename").click()
    page.get_by_label("New name for Company news").fill("Newsroom")
    page.get_by_role("button", name="Save name").click()
    expect(page.locator("li.channel strong")).to_have_text(["Newsroom", "Product blog"])

    page.get_by_role("button", name="Actions for Newsroom").click()
    page.get_by_role("menuitem", name="Group").click()
    page.get_by_role("dialog").get_by_label("Group").fill("Acme")
    page.get_by_role("button", name="Save group").click()
    expect(page.locator("li.channel", has_text="Newsroom").locator(".channel-facts")).to_contain_text("Acme")

    page.get_by_role("button", name="Actions for Newsroom").click()
    page.get_by_role("menuitem", name="Disable").click()
    expect(page.locator("li.channel", has_text="Newsroom").locator(".badge")).to_have_text("Disabled")
    assert api(server, "GET", f"{API}/integrations/{news}")[1]["disabled"] is True
    page.get_by_role("button", name="Actions for Newsroom").click()
    page.get_by_role("menuitem", name="Enable").click()
    expect(page.locator("li.channel", has_text="Newsroom").locator(".badge")).to_have_text("Connected")

    page.get_by_role("button", name="Actions for Newsroom").click()
    page.get_by_role("menuitem", name="Copy ID").click()
    expect(page.locator("li.channel", has_text="Newsroom").locator(".channel-said")).not_to_be_empty()
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "dark"), (390, "light")))
def test_posting_times_are_a_list_of_time_pickers(start_server_with_fakes, open_page, receivers, width, scheme):
    server = start_server_with_fakes()
    news, _ = two_channels(server, receivers)
    page = open_page(server, width, scheme)
    show(page, "#/channels")
    card = page.locator("li.channel", has_text="Company news")
    expect(card.locator(".posting-times")).to_have_text("02:00, 06:40, 11:40")  # rustiz's default slots
    page.get_by_role("button", name="Actions for Company news").click()
    page.get_by_role("menuitem", name="Posting times").click()
    dialog = page.get_by_role("dialog", name="Posting times of Company news")
    times = dialog.get_by_label("Posting time")
    expect(times).to_have_count(3)
    shoot(page, f"posting-times-{width}-{scheme}")
    assert sideways_overflow(page) <= 0
    assert serious_axe_violations(page) == []
    dialog.get_by_role("button", name="Remove this time").first.click()
    dialog.get_by_role("button", name="Add a time").click()
    times.last.fill("18:30")
    save = dialog.get_by_role("button", name="Save times")
    assert save.evaluate("b => b.textContent") == "Save times" and save.get_attribute("aria-label") is None
    save.click()
    expect(card.locator(".posting-times")).to_have_text("06:40, 11:40, 18:30")
    assert api(server, "GET", f"{API}/integrations/{news}")[1]["postingTimes"] == \
        '[{"time":400},{"time":700},{"time":1110}]'
    assert page.problems == []


def test_delete_says_how_many_posts_it_removes(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes()
    news, blog = two_channels(server, receivers)
    page = open_page(server, 390, "dark")
    show(page, "#/channels")
    page.get_by_role("button", name="Actions for Product blog").click()
    page.get_by_role("menuitem", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete channel")
    expect(dialog).to_contain_text("It removes its 2 posts.")
    shoot(page, "delete-channel-390-dark")
    dialog.get_by_role("button", name="Cancel").click()
    expect(page.locator("li.channel")).to_have_count(2)
    page.get_by_role("button", name="Actions for Product blog").click()
    page.get_by_role("menuitem", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete channel").click()
    expect(page.locator("li.channel strong")).to_have_text(["Company news"])
    assert [c["id"] for c in api(server, "GET", f"{API}/integrations")[1]] == [news]
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_add_channel_is_one_searchable_dialog_of_every_platform(start_server_with_fakes, open_page, receivers,
                                                                 width, scheme):
    server = start_server_with_fakes()
    receiver, = receivers(1)
    platforms = [p for p in api(server, "GET", f"{API}/providers")[1] if p["connectable"] or p["oauth"]]
    page = open_page(server, width, scheme)
    show(page, "#/channels")
    expect(page.locator("main select")).to_have_count(0)  # no <select> of providers any more
    page.get_by_role("button", name="Add channel").first.click()
    dialog = page.get_by_role("dialog", name="Add channel")
    expect(dialog.locator("button.provider")).to_have_count(len(platforms))
    shoot(page, f"add-channel-{width}-{scheme}")
    assert sideways_overflow(page) <= 0
    assert serious_axe_violations(page) == []
    dialog.get_by_label("Search platforms").fill("web")
    expect(dialog.locator("button.provider:visible")).to_have_text(["Webhook"])
    dialog.locator("button.provider[data-provider=webhook]").click()
    expect(dialog.locator(".guide")).to_contain_text("POSTed as signed JSON")
    dialog.get_by_label("Receiver URL").fill(receiver.url + "/hook")
    dialog.get_by_label("Signing secret (optional)").fill(receiver.secret)
    dialog.get_by_label("Name (optional)").fill("My hook")
    shoot(page, f"add-channel-form-{width}-{scheme}")
    dialog.get_by_role("button", name="Connect").click()
    expect(page.locator(".channel-list")).to_contain_text("My hook")
    expect(page.get_by_role("dialog")).to_have_count(0)

    page.get_by_role("button", name="Add channel").first.click()
    page.get_by_role("dialog").get_by_label("Search platforms").fill("linked")
    page.get_by_role("dialog").locator("button.provider[data-provider=linkedin]").click()
    page.get_by_role("button", name="Continue to sign in").click()
    expect(page.locator(".operator-guide code")).to_have_text(f"{server.url}/integrations/social/linkedin")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    assert page.problems == []
