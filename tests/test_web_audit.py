"""Settings → Audit in Chromium (Playwright, as tests/test_web.py): the log in words, in the organization's zone,
filtered by person or key and by kind, a page at a time; a table on a wide screen, labelled lines on a phone,
never wider than the window; light and dark; axe-core finds nothing serious.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import time

import pytest

import rustiz
from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations, shoot
from support import API, Database, api, channel_post, connect_database, iso, library_item, new_key, post_body


def a_logged_organization(server) -> dict:
    """An organization in Paris time with a post, tags made by an agent's key and older entries for a second page."""
    assert api(server, "PUT", f"{API}/organization", {"timezone": "Europe/Paris"})[0] == 200
    sky = Database(server).channel("Sky", "bluesky")
    status, made = api(server, "POST", f"{API}/posts", post_body(channel_post(sky, "<p>Audit</p>"), type="draft",
                                                                   date=iso(86400)))
    assert status == 201, made
    agent = new_key(server, "newsletter-agent", "full")
    tag = library_item(server, "tags", {"name": "launch"}, key=agent)
    assert api(server, "DELETE", f"{API}/tags/{tag['id']}", key=agent)[0] == 200
    organization = api(server, "GET", f"{API}/organization")[1]["id"]
    with connect_database(server.database) as db:  # 60 older entries: a second page
        for number in range(60):
            db.execute("INSERT INTO audit_entry (id, organization_id, at, actor_type, actor_id, actor_name, action, "
                       "subject_type, subject_id, address) VALUES (?, ?, ?, 'key', 'default', 'default', "
                       "'webhook.created', 'webhook', ?, '203.0.113.9')",
                       (f"old-{number:02d}", organization, rustiz.iso_at(time.time() - 86400 * 3 - number),
                        f"hook-{number}"))
    return {"post": made[0]["postId"], "tag": tag["id"]}


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (1440, "dark"), (390, "dark"), (390, "light")))
def test_the_audit_tab_lists_changes_in_words_with_filters_and_pages(start_server_with_fakes, open_page, width, scheme):
    server = start_server_with_fakes()
    made = a_logged_organization(server)
    page = open_page(server, width, scheme)
    show(page, "#/settings?tab=audit")
    panel = page.get_by_role("tabpanel", name="Audit")
    expect(panel.get_by_role("heading", name="Audit log")).to_be_visible()
    first = panel.locator("table.audit-log tbody tr").first
    expect(first).to_contain_text("Tag deleted")
    expect(first).to_contain_text("API key “newsletter-agent”")
    expect(first).to_contain_text("127.0.0.1")
    expect(panel.locator("table.audit-log tbody tr")).to_have_count(50)
    entries = api(server, "GET", f"{API}/audit")[1]["entries"]
    paris = time.strftime("%H:%M", time.gmtime(rustiz.parse_iso_instant(entries[0]["at"]).timestamp() + 3600))
    expect(first.locator("time")).to_contain_text(paris[:2])  # (December: Paris is UTC+1)
    created = panel.locator("tr", has_text="Post created")
    expect(created.get_by_role("link")).to_have_attribute("href", f"#/post/{made['post']}")
    assert "post.created" not in panel.inner_text() and "tag.deleted" not in panel.inner_text()
    assert sideways_overflow(page) <= 0
    assert panel.evaluate("e => e.scrollWidth <= e.clientWidth")
    if width < 600:  # a phone: each entry is a block of labelled lines, not a row of columns
        assert first.evaluate("e => getComputedStyle(e).display") == "block"
        assert panel.locator("table.audit-log thead").bounding_box()["height"] <= 1  # (kept for screen readers)
        page.set_viewport_size({"width": 360, "height": 860})
        assert sideways_overflow(page) <= 0 and panel.evaluate("e => e.scrollWidth <= e.clientWidth")
        page.set_viewport_size({"width": width, "height": 860})
    shoot(page, f"settings-audit-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    assert placeholder_text(page) == []

    panel.get_by_role("button", name="Older").click()
    expect(panel.get_by_text("Page 2 of 2")).to_be_visible()
    expect(panel.locator("table.audit-log tbody tr")).to_have_count(65 - 50)
    expect(panel.locator("table.audit-log tbody tr").last).to_contain_text("Webhook added")
    panel.get_by_role("button", name="Newer").click()
    expect(panel.get_by_text("Page 1 of 2")).to_be_visible()

    panel.get_by_label("Person or key").select_option(label="API key “newsletter-agent”")
    expect(panel.locator("table.audit-log tbody tr")).to_have_count(2)  # (key.created was the organization key's)
    expect(panel.locator("table.audit-log tbody tr").last).to_contain_text("Tag created")
    panel.get_by_label("Kind of change").select_option(label="Posts")
    expect(panel.get_by_text("No change matches these filters.")).to_be_visible()
    panel.get_by_label("Person or key").select_option(label="Everyone")
    expect(panel.locator("table.audit-log tbody tr")).to_have_count(1)
    expect(panel.locator("table.audit-log tbody tr")).to_contain_text("Post created")
    assert sideways_overflow(page) <= 0
    shoot(page, f"settings-audit-filtered-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    assert page.problems == []


def test_a_new_organization_s_log_says_nothing_is_recorded_yet(start_server_with_fakes, open_page):
    server = start_server_with_fakes()
    page = open_page(server, 1440, "light")
    show(page, "#/settings?tab=audit")
    expect(page.get_by_role("tabpanel", name="Audit")).to_contain_text("No change recorded yet.")
    assert page.problems == []
