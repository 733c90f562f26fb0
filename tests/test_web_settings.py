"""Settings in Chromium (Playwright, as tests/test_web.py): side tabs (a vertical tablist on a wide screen, a
<select> on a phone), the API keys table inside a phone's width, and the new tabs: tags (name and colour),
signatures (at most one added to every new post) and sets (a name and channels).

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, receivers, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations, shoot
from support import API, api, webhook_channel  # noqa: E402

TABS = ["General", "API keys", "Webhooks", "MCP", "Alerts", "Tags", "Signatures", "Sets", "Notifications", "Audit", "Team"]


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (1440, "dark"), (390, "dark"), (360, "light")))
def test_settings_are_side_tabs_on_a_wide_screen_and_a_select_on_a_phone(start_server_with_fakes, open_page,
                                                                          width, scheme):
    server = start_server_with_fakes()
    for name, scope in (("publishing-agent-for-the-newsletter", "drafts"), ("dashboard", "read")):
        assert api(server, "POST", f"{API}/api-keys", {"name": name, "scope": scope})[0] == 201
    page = open_page(server, width, scheme)
    show(page, "#/settings")
    tablist = page.get_by_role("tablist", name="Settings")
    if width >= 768:
        expect(tablist).to_have_attribute("aria-orientation", "vertical")
        expect(tablist.get_by_role("tab")).to_have_text(TABS)
        expect(page.get_by_role("tab", name="General")).to_have_attribute("aria-selected", "true")
        page.get_by_role("tab", name="General").focus()
        page.keyboard.press("ArrowDown")
        expect(page.get_by_role("tab", name="API keys")).to_be_focused()
        expect(page.get_by_role("tabpanel", name="API keys")).to_be_visible()
    else:
        expect(tablist).to_be_hidden()
        page.get_by_label("Section").select_option(label="API keys")
    assert page.url.endswith("#/settings?tab=keys")
    card = page.locator("section.card", has=page.get_by_role("heading", name="API keys", exact=True))
    expect(card.locator("tr.api-key-row")).to_have_count(3)
    assert sideways_overflow(page) <= 0
    assert card.evaluate("e => e.scrollWidth <= e.clientWidth")
    expect(card.get_by_role("button", name="Revoke key dashboard")).to_be_visible()
    shoot(page, f"settings-keys-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    for label, tab in (("General", "general"), ("Webhooks", "webhooks"), ("MCP", "mcp"), ("Alerts", "alerts")):
        show(page, f"#/settings?tab={tab}")
        expect(page.get_by_role("tabpanel", name=label)).to_be_visible()
        expect(page.get_by_role("tabpanel", name=label).locator("section, form").first).to_be_visible()
        assert sideways_overflow(page) <= 0, tab
        assert placeholder_text(page) == [], tab
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "dark"), (390, "light")))
def test_tags_are_made_recoloured_renamed_and_deleted(start_server_with_fakes, open_page, width, scheme):
    server = start_server_with_fakes()
    page = open_page(server, width, scheme)
    show(page, "#/settings?tab=tags")
    panel = page.get_by_role("tabpanel", name="Tags")
    expect(panel).to_contain_text("No tags yet.")
    panel.get_by_label("New tag").fill("Launch")
    panel.get_by_label("Colour", exact=True).fill("#16a34a")
    panel.get_by_role("button", name="Add tag").click()
    expect(panel.get_by_label("Name of the tag Launch")).to_have_value("Launch")
    assert [(tag["name"], tag["color"]) for tag in api(server, "GET", f"{API}/tags")[1]["tags"]] == [("Launch", "#16a34a")]
    panel.get_by_label("Name of the tag Launch").fill("Product launch")
    panel.get_by_label("Colour of the tag Launch").fill("#dc2626")
    panel.get_by_role("button", name="Save").click()
    expect(panel.get_by_label("Name of the tag Product launch")).to_be_visible()
    assert [(tag["name"], tag["color"].lower()) for tag in api(server, "GET", f"{API}/tags")[1]["tags"]] == \
        [("Product launch", "#dc2626")]
    panel.get_by_label("New tag").fill("product LAUNCH")
    panel.get_by_role("button", name="Add tag").click()
    expect(panel.get_by_role("alert").filter(has_text="name")).to_be_visible()  # unique whatever the case
    assert sideways_overflow(page) <= 0
    shoot(page, f"settings-tags-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_role("button", name="Delete the tag Product launch").click()
    expect(page.get_by_role("tabpanel", name="Tags")).to_contain_text("No tags yet.")
    assert page.problems == []


def test_one_signature_is_added_to_every_new_post(start_server_with_fakes, open_page):
    server = start_server_with_fakes()
    page = open_page(server, 390, "dark")
    show(page, "#/settings?tab=signatures")
    panel = page.get_by_role("tabpanel", name="Signatures")
    for number, text in enumerate(("— The Acme team", "Sent from rustiz"), 1):
        panel.get_by_label("New signature").fill(text)
        panel.locator(".add-item").get_by_label("Add to every new post").check()
        panel.get_by_role("button", name="Add signature").click()
        expect(panel.get_by_label(f"Signature {number}", exact=True)).to_be_visible()
    signatures = api(server, "GET", f"{API}/signatures")[1]["signatures"]
    assert sorted((s["content"], s["autoAdd"]) for s in signatures) == [("Sent from rustiz", True), ("— The Acme team", False)]
    expect(panel.get_by_label("Add to every new post").and_(panel.locator(":checked"))).to_have_count(1)
    assert sideways_overflow(page) <= 0
    shoot(page, "settings-signatures-390-dark")
    assert serious_axe_violations(page) == []
    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_role("button", name="Delete signature 1").click()
    expect(page.get_by_role("tabpanel", name="Signatures").locator("form.signature-form")).to_have_count(2)  # one and the new
    assert page.problems == []


def test_a_set_is_a_name_and_channels(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes()
    channels = [webhook_channel(server, receiver, name) for receiver, name in zip(receivers(2), ("News", "Blog"))]
    page = open_page(server, 1440, "light")
    show(page, "#/settings?tab=sets")
    panel = page.get_by_role("tabpanel", name="Sets")
    panel.get_by_label("New set").fill("Everything")
    panel.locator(".add-item").get_by_label("News").check()
    panel.locator(".add-item").get_by_label("Blog").check()
    panel.get_by_role("button", name="Add set").click()
    expect(panel.get_by_label("Name of the set Everything")).to_be_visible()
    sets = api(server, "GET", f"{API}/sets")[1]["sets"]
    assert [(s["name"], sorted(s["channels"]), s["settings"]) for s in sets] == [("Everything", sorted(channels), {})]
    shoot(page, "settings-sets-1440-light")
    assert serious_axe_violations(page) == []
    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_role("button", name="Delete the set Everything").click()
    expect(page.get_by_role("tabpanel", name="Sets")).to_contain_text("No sets yet.")
    assert page.problems == []
