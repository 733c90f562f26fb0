"""Settings → Team in Chromium (Playwright, as tests/test_web_settings.py): an admin invites, the invitee accepts in
another browser and is signed in; roles changed with a select, invites sent again and revoked, members removed;
the pages open to a signed-out visitor: the invite, "Forgot password?" and the new password. At 1440 and 390 px,
light and dark, with axe-core, no sideways scrolling and no placeholder text.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import hashlib
import json
import secrets

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations, shoot
from support import API, Database, api, iso
from test_oidc_sign_in import provider  # noqa: F401 (a real OpenID Connect provider, skipped where npm is missing)

PASSWORD = "correct horse battery"


def invited(server, email: str, role: str) -> str:
    status, answer = api(server, "POST", f"{API}/members", {"email": email, "role": role})
    assert status == 201, answer
    return answer["inviteUrl"]


def member(server, email: str, role: str, name: str) -> None:
    """A member who accepted an invite."""
    token = invited(server, email, role).rpartition("token=")[2]
    status, _, answer = server.request("POST", "/auth/invite", {"Content-Type": "application/json"},
                                       json.dumps({"token": token, "name": name, "password": PASSWORD}).encode())
    assert status == 200, answer


def members(server) -> dict:
    return {m["email"]: m["role"] for m in api(server, "GET", f"{API}/members")[1]["members"]}


def sign_in_with_password(page, email: str, password: str = PASSWORD) -> None:
    """The sign-in page's email and password, from wherever the page is."""
    page.get_by_role("button", name="Sign in with email and password instead").click()
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


def test_an_admin_invites_and_the_invitee_accepts_in_another_browser_signed_in_with_the_role(start_server, open_page):
    server = start_server()
    admin = open_page(server, 1440, "light")
    show(admin, "#/settings?tab=team")
    panel = admin.get_by_role("tabpanel", name="Team")
    expect(panel).to_contain_text("No members yet")
    panel.get_by_label("Email").fill("Alice@Example.com")
    panel.get_by_label("Role", exact=True).select_option(label="Author")
    panel.get_by_role("button", name="Invite", exact=True).click()
    link = panel.locator("code.invite-link")
    expect(link).to_contain_text("/#/invite?token=")
    expect(panel).to_contain_text("The invite link for alice@example.com:")
    expect(panel.locator("li.team-invite[data-email='alice@example.com']")).to_contain_text("Author")
    url = link.inner_text()

    alice = open_page(server, 1440, "light", signed_in=False)
    alice.goto(url)
    expect(alice.get_by_role("heading", name="Join My organization")).to_be_visible()
    expect(alice.get_by_text("You are invited as Author, with the email alice@example.com.")).to_be_visible()
    alice.get_by_label("Your name").fill("Alice Martin")
    alice.get_by_label("Choose a password").fill(PASSWORD)
    alice.get_by_role("button", name="Join").click()
    expect(alice.get_by_role("navigation", name="Main")).to_be_visible()
    assert "#/calendar" in alice.url
    assert members(server) == {"alice@example.com": "author"}

    show(admin, "#/settings?tab=team")
    panel = admin.get_by_role("tabpanel", name="Team")
    expect(panel.locator("li.team-member[data-email='alice@example.com']")).to_contain_text("Alice Martin")
    expect(panel.locator("li.team-invite")).to_have_count(0)
    panel.get_by_label("Role of Alice Martin").select_option(label="Editor")
    expect(panel.get_by_label("Role of Alice Martin")).to_have_value("editor")
    assert members(server) == {"alice@example.com": "editor"}

    # The last admin stays: Alice made admin, then the select says why she cannot be made a viewer.
    panel.get_by_label("Role of Alice Martin").select_option(label="Admin")
    expect(panel.get_by_label("Role of Alice Martin")).to_have_value("admin")
    panel.get_by_label("Role of Alice Martin").select_option(label="Viewer")
    expect(panel.get_by_role("alert")).to_contain_text("the last admin of this organization")
    expect(panel.get_by_label("Role of Alice Martin")).to_have_value("admin")

    # Pending invites: sent again (a new link to copy, the old one dead) and revoked.
    old = invited(server, "bob@example.com", "viewer")
    show(admin, "#/settings?tab=team")
    panel = admin.get_by_role("tabpanel", name="Team")
    panel.get_by_role("button", name="Send the invite to bob@example.com again").click()
    expect(panel).to_contain_text("A new link for bob@example.com (the old one no longer works):")
    assert panel.locator("code.invite-link").inner_text() != old
    admin.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_role("button", name="Revoke the invite to bob@example.com").click()
    expect(panel.locator("li.team-invite")).to_have_count(0)
    assert api(server, "GET", f"{API}/members")[1]["invites"] == []
    assert admin.problems == [] and alice.problems == []


def test_removing_a_member_signs_them_out(start_server, open_page):
    server = start_server()
    member(server, "ann@example.com", "admin", "Ann")
    carl_url = invited(server, "carl@example.com", "viewer")
    carl = open_page(server, 1440, "light", signed_in=False)
    carl.goto(carl_url)
    carl.get_by_label("Your name").fill("Carl")
    carl.get_by_label("Choose a password").fill(PASSWORD)
    carl.get_by_role("button", name="Join").click()
    expect(carl.get_by_role("navigation", name="Main")).to_be_visible()
    admin = open_page(server, 1440, "dark")
    show(admin, "#/settings?tab=team")
    admin.once("dialog", lambda dialog: dialog.accept())
    admin.get_by_role("button", name="Remove Carl").click()
    expect(admin.locator("li.team-member[data-email='carl@example.com']")).to_have_count(0)
    carl.get_by_role("link", name="Channels").click()
    expect(carl.get_by_text("Your session ended: sign in again.")).to_be_visible()


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (1440, "dark"), (390, "light"), (390, "dark")))
def test_the_team_tab_fits_and_passes_axe(start_server, open_page, width, scheme):
    server = start_server()
    member(server, "margaret.hamilton-longname@agency-with-a-long-domain.example.com", "admin", "Margaret Hamilton")
    member(server, "li@example.com", "author", "Li Wei")
    invited(server, "client.reviewer@example.org", "viewer")
    invited(server, "expired@example.org", "editor")
    Database(server).execute("UPDATE invite SET expires_at = ? WHERE email = ?", iso(-60), "expired@example.org")
    page = open_page(server, width, scheme)
    show(page, "#/settings?tab=team")
    panel = page.get_by_role("tabpanel", name="Team")
    expect(panel.locator("li.team-member")).to_have_count(2)
    expect(panel.locator("li.team-invite")).to_have_count(2)
    expect(panel.locator("li.team-invite[data-email='expired@example.org']")).to_contain_text("link expired")
    panel.get_by_label("Email").fill("new.person@example.com")
    panel.get_by_role("button", name="Invite", exact=True).click()
    expect(panel.locator("code.invite-link")).to_be_visible()
    assert sideways_overflow(page) <= 0
    assert placeholder_text(page) == []
    shoot(page, f"settings-team-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_a_forgotten_password_is_set_again_from_the_sign_in_page(start_server, open_page, width, scheme):
    server = start_server()
    member(server, "dora@example.com", "editor", "Dora")
    page = open_page(server, width, scheme, signed_in=False)
    page.goto("/")
    page.get_by_role("button", name="Sign in with email and password instead").click()
    page.get_by_role("link", name="Forgot password?").click()
    expect(page.get_by_role("heading", name="Forgot password?")).to_be_visible()
    page.get_by_label("Email").fill("dora@example.com")
    page.get_by_role("button", name="Send the link").click()
    expect(page.get_by_role("status")).to_contain_text("If this email has an account, the link is on its way.")
    assert sideways_overflow(page) <= 0 and placeholder_text(page) == []
    shoot(page, f"forgot-{width}-{scheme}")
    assert serious_axe_violations(page) == []

    token = secrets.token_hex(32)  # (the e-mailed link's token, as /auth/forgot stored it)
    db = Database(server)
    user = db.row("SELECT id FROM web_user WHERE email = 'dora@example.com'")[0]
    db.execute("INSERT INTO password_reset (token_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
               hashlib.sha256(token.encode()).hexdigest(), user, iso(3600), iso())
    page.goto(f"/#/reset?token={token}")
    expect(page.get_by_role("heading", name="New password")).to_be_visible()
    page.get_by_label("New password").fill("a brand new password")
    page.get_by_role("button", name="Set the password").click()
    expect(page.get_by_role("status")).to_contain_text("Your new password is set")
    shoot(page, f"reset-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    page.get_by_role("link", name="Back to sign in").click()
    sign_in_with_password(page, "dora@example.com", "a brand new password")
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "dark"), (390, "light")))
def test_an_invite_for_an_existing_account_asks_only_its_password_and_a_dead_link_says_so(start_server, open_page,
                                                                                           width, scheme):
    server = start_server()
    member(server, "eve@example.com", "admin", "Eve")
    other_org, other_key = Database(server).organization()
    status, invite = api(server, "POST", f"{API}/members", {"email": "eve@example.com", "role": "viewer"}, key=other_key)
    assert status == 201
    page = open_page(server, width, scheme, signed_in=False)
    page.goto(invite["inviteUrl"])
    expect(page.get_by_role("heading", name="Join Other org")).to_be_visible()
    expect(page.get_by_text("You already have an account: give its password to join.")).to_be_visible()
    expect(page.get_by_label("Your name")).to_have_count(0)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Join").click()
    expect(page.get_by_role("alert")).to_contain_text("Wrong password for eve@example.com")
    assert sideways_overflow(page) <= 0 and placeholder_text(page) == []
    shoot(page, f"invite-existing-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Join").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    assert {m["email"]: m["role"] for m in api(server, "GET", f"{API}/members", key=other_key)[1]["members"]} == \
        {"eve@example.com": "viewer"}

    dead = open_page(server, width, scheme, signed_in=False)
    dead.goto(invite["inviteUrl"])
    expect(dead.get_by_role("alert")).to_contain_text("This invitation link does not work")
    expect(dead.get_by_role("link", name="Back to sign in")).to_be_visible()
    shoot(dead, f"invite-dead-{width}-{scheme}")
    assert serious_axe_violations(dead) == []
    assert [problem for problem in page.problems + dead.problems if "404" not in problem] == []


def test_a_signed_in_person_opens_an_invite_to_another_organization_and_joins_it(start_server, open_page):
    server = start_server()
    member(server, "fay@example.com", "editor", "Fay")
    other_org, other_key = Database(server).organization()
    status, invite = api(server, "POST", f"{API}/members", {"email": "fay@example.com", "role": "author"}, key=other_key)
    assert status == 201
    page = open_page(server, 390, "dark", signed_in=False)
    page.goto("/")
    sign_in_with_password(page, "fay@example.com")
    page.goto(invite["inviteUrl"])
    expect(page.get_by_role("heading", name="Join Other org")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_be_attached()  # (inside the app, signed in)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Join").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    expect(page.get_by_role("heading", name="Join Other org")).to_have_count(0)
    session = page.evaluate("() => fetch('/auth/session').then((r) => r.json())")
    assert session["organization"]["id"] == other_org and session["role"] == "author"
    assert {o["role"] for o in session["organizations"]} == {"editor", "author"}
    assert page.problems == []


def test_an_admin_who_gives_up_the_role_sees_the_app_as_their_new_role_at_once(start_server, open_page):
    server = start_server()
    member(server, "gus@example.com", "admin", "Gus")
    member(server, "hana@example.com", "admin", "Hana")
    page = open_page(server, 1440, "light", signed_in=False)
    page.goto("/")
    sign_in_with_password(page, "gus@example.com")
    page.goto("/#/settings?tab=team")
    page.get_by_label("Role of Gus").select_option(label="Editor")
    expect(page.get_by_role("tablist", name="Settings").get_by_role("tab")).to_have_text(["Tags", "Signatures", "Sets", "Notifications"])
    assert members(server) == {"gus@example.com": "editor", "hana@example.com": "admin"}
    assert page.problems == []


@pytest.mark.parametrize("only", (False, True))
def test_the_invite_page_offers_single_sign_on_and_with_passwords_off_only_it(provider, start_server, open_page, only):
    server = start_server(env={**provider.env, "RUSTIZ_OIDC_NAME": "Acme ID", **({"RUSTIZ_OIDC_ONLY": "1"} if only else {})})
    page = open_page(server, 390, "dark", signed_in=False)
    page.goto(invited(server, "gil@example.org", "editor"))
    expect(page.get_by_role("heading", name="Join My organization")).to_be_visible()
    expect(page.get_by_role("link", name="Sign in with Acme ID")).to_have_attribute("href", "/auth/oidc/start")
    expect(page.get_by_text("Sign in there with gil@example.org: the invite is accepted as you sign in.")).to_be_visible()
    expect(page.get_by_label("Your name")).to_be_visible() if not only else expect(page.get_by_label("Your name")).to_be_hidden()
    assert sideways_overflow(page) <= 0 and placeholder_text(page) == []
    shoot(page, f"invite-sso-{'only' if only else 'both'}-390-dark")
    assert serious_axe_violations(page) == []
    assert page.problems == []
