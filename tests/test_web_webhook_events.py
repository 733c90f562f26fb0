"""Settings → Webhooks in Chromium (Playwright, as tests/test_web.py): the events of each webhook chosen with
checkboxes in the users' words (issue 26), when adding one and on each listed one; at 1440 and 390 px, light and
dark, no sideways scrolling and no placeholder text; axe-core finds nothing serious.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations, shoot
from support import API, api, wait_for

WORDS = ["Published", "Failed", "Created", "Changed", "Deleted", "Added to the queue"]


@pytest.mark.parametrize("width, scheme", [(1440, "light"), (390, "dark")])
def test_the_events_of_a_webhook_are_chosen_with_checkboxes(server, open_page, width, scheme):
    page = open_page(server, width, scheme)
    show(page, "#/settings?tab=webhooks")
    new = page.get_by_role("group", name="Events to send")
    for word in WORDS:
        expect(new.get_by_label(word, exact=True)).to_be_checked()
    page.get_by_label("Name", exact=True).fill("n8n")
    page.get_by_label("URL", exact=True).fill("https://n8n.example.com/webhook/posts")
    new.get_by_label("Created", exact=True).uncheck()
    new.get_by_label("Added to the queue", exact=True).uncheck()
    page.get_by_role("button", name="Add webhook").click()
    listed = page.get_by_role("group", name="Events sent to n8n")
    expect(listed.get_by_label("Changed", exact=True)).to_be_checked()
    (hook,) = api(server, "GET", f"{API}/webhooks")[1]
    assert hook["events"] == ["post.published", "post.failed", "post.updated", "post.deleted"]
    listed.get_by_label("Failed", exact=True).uncheck()
    expect(page.locator(".hooks [role=status]")).to_have_text("Saved")
    assert wait_for(lambda: api(server, "GET", f"{API}/webhooks")[1][0]["events"],
                    lambda events: "post.failed" not in events) == ["post.published", "post.updated", "post.deleted"]
    assert sideways_overflow(page) <= 0 and placeholder_text(page) == []
    assert serious_axe_violations(page) == []
    assert page.problems == []
    shoot(page, f"webhook-events-{width}-{scheme}")
