"""Settings → Notifications in the web app (Chromium, as tests/test_web_roles.py): four switches with each role's
defaults, each saved when flipped, an error shown beside its switch (and the switch flipped back), the first three
locked for a viewer, and a session signed in with an API key told preferences belong to a person; at 1440 and
390 px, light and dark, with axe."""
from __future__ import annotations

import json

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_channels import serious_axe_violations, shoot
from test_web_pages import open_page, sideways_overflow  # noqa: F401
from test_web_roles import signed_in_as
from test_api_roles import Session, add_person

SWITCHES = ("A post failed", "A channel needs reconnecting", "A draft waits for review", "Daily digest")


def preferences(server, email: str) -> dict:
    status, answer = Session(server, email).call("GET", "/public/v1/me/notifications")
    assert status == 200, answer
    return answer


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_an_editor_turns_the_digest_on_and_failure_mails_off(open_page, start_server, width, scheme):
    server = start_server()
    add_person(server, "ed@example.com", "editor")
    page = signed_in_as(open_page, server, "ed@example.com", width, scheme)
    page.goto("/#/settings?tab=notifications")
    switches = [page.get_by_role("switch", name=name) for name in SWITCHES]
    for switch, on in zip(switches, (True, True, True, False)):
        expect(switch).to_be_enabled()
        (expect(switch).to_be_checked if on else expect(switch).not_to_be_checked)()
    switches[3].check()
    expect(page.locator("#mail-digest-status")).to_have_text("Saved")
    switches[0].uncheck()
    expect(page.locator("#mail-failed-status")).to_have_text("Saved")
    assert preferences(server, "ed@example.com") == {"failed": False, "reconnect": True, "review": True, "digest": True}
    assert sideways_overflow(page) <= 0
    assert "null" not in page.inner_text("main") and "undefined" not in page.inner_text("main")
    shoot(page, f"mail-settings-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    assert page.problems == []


def test_a_refused_change_is_said_beside_its_switch_and_undone(open_page, start_server):
    server = start_server()
    add_person(server, "ed@example.com", "editor")
    page = signed_in_as(open_page, server, "ed@example.com", 1440, "light")
    page.route("**/public/v1/me/notifications", lambda route: route.fulfill(
        status=400, content_type="application/json",
        body=json.dumps({"statusCode": 400, "message": ["review must be true or false"], "error": "Bad Request"}))
        if route.request.method == "PUT" else route.continue_())
    page.goto("/#/settings?tab=notifications")
    switch = page.get_by_role("switch", name="A draft waits for review")
    switch.click()
    expect(page.locator("#mail-review-error")).to_contain_text("review must be true or false")
    expect(switch).to_be_checked()
    page.problems = [problem for problem in page.problems if "400" not in problem]
    assert page.problems == []


def test_a_viewer_may_choose_only_the_digest(open_page, start_server):
    server = start_server()
    add_person(server, "val@example.com", "viewer")
    page = signed_in_as(open_page, server, "val@example.com", 390, "light")
    page.goto("/#/settings")
    expect(page.get_by_role("heading", name="E-mail notifications")).to_be_visible()
    for name in SWITCHES[:3]:
        expect(page.get_by_role("switch", name=name)).to_be_disabled()
        expect(page.get_by_role("switch", name=name)).not_to_be_checked()
    page.get_by_role("switch", name="Daily digest").check()
    expect(page.locator("#mail-digest-status")).to_have_text("Saved")
    assert preferences(server, "val@example.com")["digest"] is True
    assert serious_axe_violations(page) == []
    assert page.problems == []


def test_a_session_of_an_api_key_is_told_preferences_belong_to_a_person(open_page, start_server):
    server = start_server()
    page = open_page(server, 1440, "light")  # (signed in with the organization's API key)
    page.goto("/#/settings?tab=notifications")
    expect(page.get_by_text("E-mail notifications belong to a person")).to_be_visible()
    expect(page.get_by_role("switch")).to_have_count(0)
