"""The web app by role (Chromium, as tests/test_web_pages.py): a person sees who they are signed in as and in
which role, only the pages and settings their role may use, and switches organization when they belong to
several; at 1440 and 390 px, light and dark, with axe."""
from __future__ import annotations

import subprocess
import sys

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_channels import serious_axe_violations, shoot
from test_web_pages import open_page, sideways_overflow  # noqa: F401
from test_web_team import sign_in_with_password
from test_api_roles import PASSWORD, add_person
from support import api, connect_database


def signed_in_as(open_page, server, email: str, width: int, scheme: str):
    """A page of a fresh browser (open_page's: its problems listed, closed after the test) signed in with the
    person's password."""
    page = open_page(server, width, scheme, signed_in=False)
    page.goto("/")
    sign_in_with_password(page, email, PASSWORD)
    return page


def open_menu(page, width: int) -> None:
    if width <= 768:
        page.get_by_role("button", name="Menu").click()


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_a_viewer_sees_who_they_are_and_no_page_to_write(open_page, start_server, width, scheme):
    server = start_server()
    add_person(server, "val@example.com", "viewer")
    page = signed_in_as(open_page, server, "val@example.com", width, scheme)
    open_menu(page, width)
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_text("val@example.com · Viewer")).to_be_visible()
    for hidden in ("New post", "Import", "To review"):
        expect(nav.get_by_role("link", name=hidden)).to_have_count(0)
    expect(nav.get_by_role("link", name="Calendar")).to_be_visible()
    page.goto("/#/settings")
    expect(page.locator(".side-tabs [role=tab]")).to_have_text(["Notifications"])  # (a select on a phone)
    assert sideways_overflow(page) <= 0
    shoot(page, f"roles-viewer-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    assert page.problems == []


def test_an_editor_sees_the_library_settings_but_not_the_admin_ones(open_page, start_server):
    server = start_server()
    add_person(server, "ed@example.com", "editor")
    page = signed_in_as(open_page, server, "ed@example.com", 1440, "light")
    page.goto("/#/settings")
    tabs = page.get_by_role("tablist", name="Settings")
    expect(tabs.get_by_role("tab")).to_have_text(["Tags", "Signatures", "Sets", "Notifications"])
    expect(page.get_by_role("tab", name="Tags")).to_have_attribute("aria-selected", "true")
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "dark"), (390, "light")))
def test_a_person_in_two_organizations_switches_from_the_header(open_page, start_server, width, scheme):
    server = start_server()
    add_person(server, "agency@example.com", "admin")
    key = subprocess.run([sys.executable, str(server.pyz), "org", "add", "Client B"], capture_output=True, text=True,
                         env=server.env(), timeout=30).stdout.strip()
    client = api(server, "GET", "/public/v1/organization", key=key)[1]["id"]
    with connect_database(server.database) as db:
        db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) SELECT id, ?, 'author', "
                   "'2026-01-01T00:00:00.000Z' FROM web_user WHERE email = ?", (client, "agency@example.com"))
    page = signed_in_as(open_page, server, "agency@example.com", width, scheme)
    open_menu(page, width)
    switcher = page.get_by_label("Organization")
    expect(switcher).to_have_value(api(server, "GET", "/public/v1/organization")[1]["id"])
    switcher.select_option(label="Client B")
    nav = page.get_by_role("navigation", name="Main")
    # The switch redraws the header once the server answers: open the new menu, not the one about to go.
    expect(nav.get_by_text("agency@example.com · Author")).to_be_attached()
    open_menu(page, width)
    expect(nav.get_by_text("agency@example.com · Author")).to_be_visible()
    expect(page.get_by_label("Organization")).to_have_value(client)
    expect(nav.get_by_role("link", name="New post")).to_be_visible()
    expect(nav.get_by_role("link", name="Import")).to_have_count(0)
    assert sideways_overflow(page) <= 0
    shoot(page, f"roles-switch-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    assert page.problems == []
