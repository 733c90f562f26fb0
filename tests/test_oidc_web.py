"""Single sign-on in the web app, in Chromium: the sign-in page's "Sign in with <name>" button through a real
OpenID Connect provider (tests/oidc_provider/, which signs its default account in without a form) and back
signed in; a refusal said in words on the sign-in page; the password form gone when passwords are off."""
from __future__ import annotations

import pytest

from oidc_provider import OidcProvider, missing_reason
from test_oidc_sign_in import MEMBER, STRANGER, add_member
from test_web import browser, expect, open_page  # noqa: F401 (fixtures shared with the web tests; skips too)
from test_web_everywhere import serious_violations

if missing_reason():
    pytest.skip(missing_reason(), allow_module_level=True)


@pytest.fixture
def provider_as():
    """provider_as(account) -> a started provider that signs `account` in; stopped after the test."""
    started = []

    def start(account: str) -> OidcProvider:
        started.append(OidcProvider(default_account=account).start())
        return started[-1]
    yield start
    for provider in started:
        provider.stop()


def test_a_member_signs_in_with_the_button(provider_as, start_server, open_page):
    server = start_server(env={**provider_as(MEMBER).env, "RUSTIZ_OIDC_NAME": "Acme ID"})
    add_member(server, MEMBER)
    page = open_page(server)
    page.goto("/")
    page.get_by_role("link", name="Sign in with Acme ID").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    assert page.evaluate("fetch('/auth/session').then((r) => r.json())")["signedIn"] is True


def test_a_person_who_is_no_member_reads_whom_to_ask(provider_as, start_server, open_page):
    server = start_server(env=provider_as(STRANGER).env)
    page = open_page(server)
    page.goto("/")
    page.get_by_role("link", name="Sign in with single sign-on").click()
    expect(page.get_by_role("alert")).to_contain_text(f"ask an admin of your organization to invite {STRANGER}")
    expect(page.get_by_label("API key")).to_be_visible()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_when_passwords_are_off_only_the_button_and_the_key_remain(provider_as, start_server, open_page, scheme):
    server = start_server(env={**provider_as(MEMBER).env, "RUSTIZ_OIDC_ONLY": "1"})
    page = open_page(server, width=360, height=800)
    page.emulate_media(color_scheme=scheme)
    page.goto("/#/login?sso=unverified&email=ana%40example.org")
    expect(page.get_by_role("link", name="Sign in with single sign-on")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("has not verified ana@example.org")
    expect(page.get_by_role("button", name="Sign in with email and password instead")).to_be_hidden()
    expect(page.get_by_label("Email")).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert serious_violations(page) == []


def test_a_crafted_link_shows_no_text_of_its_own(start_server, open_page):
    server = start_server()
    page = open_page(server)
    page.goto("/#/login?sso=not-member&email=" + "Call%20555-0100%20now%20<b>x</b>")
    expect(page.get_by_role("alert")).to_contain_text("ask an admin of your organization to invite your e-mail address")
    expect(page.get_by_role("alert")).not_to_contain_text("555")
    page.get_by_label("API key").fill(server.key)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    assert page.evaluate("location.hash").startswith("#/calendar")
