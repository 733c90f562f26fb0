"""Members and invites (rustiz_features/team.py): an admin invites by email and role, the person accepts (a new
account, or an existing one with its password) and is signed in as a member; invites are single use, expire,
die when sent again or revoked; the last admin stays; ids of another organization are not found; removing a
member ends their sessions at once. A forgotten password: the same answer for any email, a single-use link
for an hour that ends every session. The sign-in lockout counts failures. Both backends; each test works in
an organization of its own on a shared server, from a client address of its own."""
from __future__ import annotations

import hashlib
import itertools
import json
import re
import secrets
import statistics
import time

import pytest

from oidc_provider import Browser as SsoBrowser
from smtp_server import SmtpServer, bodies
from support import API, Database, api, iso, wait_for
from test_oidc_sign_in import provider  # noqa: F401 (a real OpenID Connect provider, skipped where npm is missing)

ADDRESSES = itertools.count(1)
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server(env={"RUSTIZ_TRUSTED_PROXIES": "127.0.0.1"})


class Team:
    """An organization of its own on the shared server, its full key, and a client address of its own."""

    def __init__(self, server):
        self.server, self.db = server, Database(server)
        self.org, self.key = self.db.organization()
        number = next(ADDRESSES)
        self.address = {"X-Forwarded-For": f"198.18.{number // 250}.{number % 250}"}

    def call(self, method: str, path: str, body=None, key: str | None = None) -> tuple:
        return api(self.server, method, API + path, body, key=key or self.key)

    def invite(self, email: str, role: str = "editor") -> dict:
        status, answer = self.call("POST", "/members", {"email": email, "role": role})
        assert status == 201, answer
        assert set(answer) == {"id", "inviteUrl", "expiresAt"}
        return answer

    def members(self) -> dict:
        status, answer = self.call("GET", "/members")
        assert status == 200, answer
        return answer

    def open_route(self, method: str, path: str, body=None, headers: dict | None = None) -> tuple:
        """(status, headers, JSON answer) of a route open to anyone, from this team's client address."""
        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = {**self.address, **({"Content-Type": "application/json"} if data is not None else {}), **(headers or {})}
        status, answer_headers, raw = self.server.request(method, path, sent, data)
        return status, answer_headers, json.loads(raw) if raw else None

    def accept(self, invite: dict, **body) -> tuple:
        return self.open_route("POST", "/auth/invite", {"token": token_of(invite), **body})

    def joined(self, invite: dict, **body) -> "Browser":
        status, headers, answer = self.accept(invite, **body)
        assert status == 200, answer
        return Browser(self.server, headers["set-cookie"].partition(";")[0], answer["csrfToken"])

    def sign_in(self, email: str, password: str = PASSWORD) -> tuple:
        return self.open_route("POST", "/auth/login", {"email": email, "password": password})


class Browser:
    """A signed-in browser: its cookie and CSRF token."""

    def __init__(self, server, cookie: str, csrf: str):
        self.server, self.cookie, self.csrf = server, cookie, csrf

    def get(self, path: str) -> int:
        return self.server.request("GET", path, {"Cookie": self.cookie})[0]

    def session(self) -> dict:
        status, _, raw = self.server.request("GET", "/auth/session", {"Cookie": self.cookie})
        assert status == 200, raw
        return json.loads(raw)


def token_of(invite: dict) -> str:
    url = invite["inviteUrl"]
    assert "/#/invite?token=" in url, url
    return url.rpartition("token=")[2]


def test_a_new_person_accepts_an_invite_and_is_a_signed_in_member_with_its_role(shared):
    team = Team(shared)
    invite = team.invite("Carol@Example.com", "author")
    assert invite["inviteUrl"].startswith(shared.url + "/#/invite?token=")
    assert len(token_of(invite)) == 64
    expires = time.mktime(time.strptime(invite["expiresAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert abs(expires - (time.time() + 7 * 86400)) < 120
    stored = team.db.row("SELECT token_hash, email FROM invite WHERE id = ?", invite["id"])
    assert stored == (hashlib.sha256(token_of(invite).encode()).hexdigest(), "carol@example.com")
    assert team.members()["invites"] == [{"id": invite["id"], "email": "carol@example.com", "role": "author",
                                          "expiresAt": invite["expiresAt"], "createdAt": team.members()["invites"][0]["createdAt"]}]

    status, _, shown = team.open_route("GET", f"/auth/invite?token={token_of(invite)}")
    assert status == 200 and shown == {"organization": {"name": "Other org"}, "role": "author",
                                       "email": "carol@example.com", "hasAccount": False,
                                       "expiresAt": invite["expiresAt"]}
    status, _, refused = team.accept(invite, password=PASSWORD)
    assert status == 400 and refused["message"] == ["name must be 1 to 100 characters, on one line"]
    status, _, refused = team.accept(invite, name="Carol", password="short")
    assert status == 400 and refused["message"] == ["password must be 10 to 1024 characters"]

    status, headers, answer = team.accept(invite, name="  Carol Doe ", password=PASSWORD)
    assert status == 200 and "HttpOnly" in headers["set-cookie"] and answer["role"] == "author"
    assert answer["user"]["name"] == "Carol Doe" and answer["organizations"] == [
        {"id": team.org, "name": "Other org", "role": "author"}]
    carol = Browser(shared, headers["set-cookie"].partition(";")[0], answer["csrfToken"])
    assert carol.session()["organization"]["id"] == team.org and carol.session()["role"] == "author"
    assert carol.get("/public/v1/integrations") == 200
    listing = team.members()
    assert listing["invites"] == []
    assert [(m["email"], m["name"], m["role"]) for m in listing["members"]] == [("carol@example.com", "Carol Doe", "author")]
    # Single use: the link is dead, the person signs in with the password chosen.
    assert team.accept(invite, name="Mallory", password=PASSWORD)[0] == 404
    status, _, gone = team.open_route("GET", f"/auth/invite?token={token_of(invite)}")
    assert status == 404 and "used already" in gone["message"] and "Ask the organization's admin" in gone["message"]
    assert team.sign_in("carol@example.com")[0] == 200


def test_an_existing_account_accepts_with_its_password_and_joins_a_second_organization(shared):
    first, second = Team(shared), Team(shared)
    dana = first.joined(first.invite("dana@example.com", "admin"), name="Dana", password=PASSWORD)
    invite = second.invite("dana@example.com", "viewer")
    status, _, shown = second.open_route("GET", f"/auth/invite?token={token_of(invite)}")
    assert status == 200 and shown["hasAccount"] is True and shown["role"] == "viewer"
    status, _, refused = second.accept(invite, password="not the password")
    assert status == 401 and refused["message"] == "Wrong password for dana@example.com"
    in_second = second.joined(invite, password=PASSWORD, name="Ignored: the account has its name")
    assert in_second.session()["organization"]["id"] == second.org
    assert [(m["email"], m["name"], m["role"]) for m in second.members()["members"]] == [("dana@example.com", "Dana", "viewer")]
    assert [(m["email"], m["role"]) for m in first.members()["members"]] == [("dana@example.com", "admin")]
    assert dana.get("/public/v1/integrations") == 200  # the first session lives on


def test_an_expired_a_forged_or_a_missing_token_is_refused_in_plain_words(shared):
    team = Team(shared)
    invite = team.invite("erin@example.com")
    team.db.execute("UPDATE invite SET expires_at = ? WHERE id = ?", iso(-1), invite["id"])
    for status, _, answer in (team.open_route("GET", f"/auth/invite?token={token_of(invite)}"),
                              team.accept(invite, name="Erin", password=PASSWORD)):
        assert status == 404 and "more than 7 days old" in answer["message"]
    for forged in (secrets.token_hex(32), "0" * 64, "zz" * 32, "../../etc", "A" * 5000, token_of(invite)[:-1]):
        assert team.open_route("GET", f"/auth/invite?token={forged}")[0] == 404, forged
        assert team.open_route("POST", "/auth/invite", {"token": forged, "name": "E", "password": PASSWORD})[0] == 404
    for missing in ("/auth/invite", "/auth/invite?token=", "/auth/invite?other=1"):
        status, _, answer = team.open_route("GET", missing)
        assert status == 400 and answer["message"] == ["token must be the token of the link (the part after token=)"]
    # Still listed, so that it can be sent again.
    assert [i["id"] for i in team.members()["invites"]] == [invite["id"]]


def test_sending_an_invite_again_kills_the_old_link_and_revoking_kills_it(shared):
    team = Team(shared)
    invite = team.invite("frank@example.com", "viewer")
    status, again = team.call("POST", f"/members/invites/{invite['id']}/resend")
    assert status == 200 and again["id"] == invite["id"] and token_of(again) != token_of(invite)
    assert team.accept(invite, name="Frank", password=PASSWORD)[0] == 404
    status, revoked = team.call("DELETE", f"/members/invites/{invite['id']}")
    assert status == 200 and revoked["email"] == "frank@example.com"
    assert team.accept(again, name="Frank", password=PASSWORD)[0] == 404
    assert team.members()["invites"] == []
    for method, path in (("DELETE", f"/members/invites/{invite['id']}"), ("POST", f"/members/invites/{invite['id']}/resend")):
        status, answer = team.call(method, path)
        assert status == 404 and "No pending invite" in answer["message"]


def test_every_field_is_checked_and_members_or_invited_emails_conflict(shared):
    team = Team(shared)
    status, answer = team.call("POST", "/members", {})
    assert status == 400 and answer["message"] == ["email must be an email address, such as alice@example.com",
                                                   "role must be one of the following values: admin, editor, author, viewer"]
    for body in ({"email": "nobody", "role": "editor"}, {"email": ["a@b.c"], "role": "editor"},
                 {"email": "a@b.c", "role": "owner"}, {"email": "a@b.c", "role": "Admin"},
                 {"email": "x" * 250 + "@b.co", "role": "viewer"}):
        status, answer = team.call("POST", "/members", body)
        assert status == 400 and len(answer["message"]) == 1, body
    team.invite("gina@example.com")
    status, answer = team.call("POST", "/members", {"email": "GINA@example.com", "role": "admin"})
    assert status == 409 and "already invited" in answer["message"]
    team.joined(team.invite("hal@example.com", "admin"), name="Hal", password=PASSWORD)
    status, answer = team.call("POST", "/members", {"email": "hal@example.com", "role": "viewer"})
    assert status == 409 and answer["message"].startswith("hal@example.com is already a member of this organization")
    hal = team.members()["members"][0]
    status, answer = team.call("PUT", f"/members/{hal['id']}", {"role": "boss"})
    assert status == 400 and answer["message"] == ["role must be one of the following values: admin, editor, author, viewer"]


def test_the_last_admin_can_be_neither_demoted_nor_removed(shared):
    team = Team(shared)
    team.joined(team.invite("ida@example.com", "admin"), name="Ida", password=PASSWORD)
    ida = team.members()["members"][0]
    for method, body in (("PUT", {"role": "editor"}), ("DELETE", None)):
        status, answer = team.call(method, f"/members/{ida['id']}", body)
        assert status == 409 and answer["message"] == ("ida@example.com is the last admin of this organization: make "
                                                       "another member an admin first")
    assert team.call("PUT", f"/members/{ida['id']}", {"role": "admin"})[0] == 200
    team.joined(team.invite("jo@example.com", "viewer"), name="Jo", password=PASSWORD)
    jo = next(m for m in team.members()["members"] if m["email"] == "jo@example.com")
    status, answer = team.call("PUT", f"/members/{jo['id']}", {"role": "admin"})
    assert status == 200 and answer["role"] == "admin"
    status, answer = team.call("PUT", f"/members/{ida['id']}", {"role": "editor"})
    assert status == 200 and answer == {**ida, "role": "editor"}
    assert team.call("DELETE", f"/members/{jo['id']}")[0] == 409  # now jo is the last one
    assert [(m["email"], m["role"]) for m in team.members()["members"]] == [("jo@example.com", "admin"),
                                                                           ("ida@example.com", "editor")]


def test_ids_of_another_organization_are_not_found(shared):
    ours, theirs = Team(shared), Team(shared)
    theirs.joined(theirs.invite("kim@example.com", "admin"), name="Kim", password=PASSWORD)
    kim = theirs.members()["members"][0]
    invite = theirs.invite("lee@example.com")
    for method, path, body in (("PUT", f"/members/{kim['id']}", {"role": "viewer"}),
                               ("DELETE", f"/members/{kim['id']}", None),
                               ("POST", f"/members/invites/{invite['id']}/resend", None),
                               ("DELETE", f"/members/invites/{invite['id']}", None)):
        status, answer = ours.call(method, path, body)
        assert status == 404, (method, path, answer)
    assert theirs.members()["members"][0]["role"] == "admin" and theirs.accept(invite, name="Lee", password=PASSWORD)[0] == 200
    assert ours.members() == {"members": [], "invites": []}


def test_only_a_full_key_manages_members(shared):
    team = Team(shared)
    status, made = team.call("POST", "/api-keys", {"name": "agent", "scope": "drafts"})
    assert status == 201
    for method, path, body in (("GET", "/members", None), ("POST", "/members", {"email": "a@b.co", "role": "admin"})):
        status, answer = team.call(method, path, body, key=made["apiKey"])
        assert status == 403, answer


def test_removing_a_member_ends_their_sessions_in_that_organization_at_once(shared):
    team, elsewhere = Team(shared), Team(shared)
    team.joined(team.invite("max@example.com", "admin"), name="Max", password=PASSWORD)
    nora = team.joined(team.invite("nora@example.com", "editor"), name="Nora", password=PASSWORD)
    nora_elsewhere = elsewhere.joined(elsewhere.invite("nora@example.com", "viewer"), password=PASSWORD)
    nora_again = Browser(shared, *signed_in(team.sign_in("nora@example.com")))
    assert nora.get("/public/v1/integrations") == 200
    nora_id = next(m["id"] for m in team.members()["members"] if m["email"] == "nora@example.com")
    status, removed = team.call("DELETE", f"/members/{nora_id}")
    assert status == 200 and removed["email"] == "nora@example.com"
    organization_sessions = [row[0] for row in [team.db.row("SELECT COUNT(*) FROM web_session WHERE web_user_id = ? "
                                                            "AND organization_id = ?", nora_id, team.org)]]
    assert organization_sessions == [0]
    assert nora.get("/public/v1/integrations") == 401 and nora_again.get("/public/v1/integrations") == 401
    assert nora_elsewhere.get("/public/v1/integrations") == 200
    assert [m["email"] for m in team.members()["members"]] == ["max@example.com"]
    assert team.call("DELETE", f"/members/{nora_id}")[0] == 404


def signed_in(answer: tuple) -> tuple:
    status, headers, body = answer
    assert status == 200, body
    return headers["set-cookie"].partition(";")[0], body["csrfToken"]


# --- hostile bodies -----------------------------------------------------------------------------------------------

ODD_VALUES = (None, 0, -1, 1e308, True, "", " ", "a@b", "a@b.co", "ADMIN", "admin\u0000", "\u202e@x.co", [], {},
              ["admin"], {"$ne": None}, "x" * 3000, "0" * 64)


def test_fuzzed_bodies_never_get_a_5xx(shared):
    team = Team(shared)
    team.joined(team.invite("olga@example.com", "admin"), name="Olga", password=PASSWORD)
    olga = team.members()["members"][0]
    invite = team.invite("pat@example.com")
    fields = ("email", "role", "token", "name", "password")
    bodies = [{field: value} for field in fields for value in ODD_VALUES]
    bodies += [dict(zip(fields, values)) for values in itertools.islice(itertools.product(ODD_VALUES[:8], repeat=5), 0, None, 997)]
    raw = [b"", b"null", b"[]", b"\"text\"", b"{", b"\xff\xfe", b"{\"email\": 1e999}", b"[" * 5000]
    statuses = set()
    for body in bodies + raw:
        for method, path in (("POST", "/members"), ("PUT", f"/members/{olga['id']}"),
                             ("POST", f"/members/invites/{invite['id']}/resend")):
            status = api(shared, method, API + path, body, key=team.key)[0] if not isinstance(body, bytes) else \
                shared.request(method, API + path, {"Authorization": team.key, "Content-Type": "application/json"}, body)[0]
            statuses.add(status)
            assert status < 500, (method, path, body)
        for path in ("/auth/invite", "/auth/forgot", "/auth/reset"):
            team.address = {"X-Forwarded-For": f"198.19.{secrets.randbelow(250)}.{secrets.randbelow(250)}"}
            status = team.open_route("POST", path, body)[0]
            statuses.add(status)
            assert status < 500, (path, body)
    assert olga["role"] == "admin" and team.members()["members"][0]["email"] == "olga@example.com"
    assert statuses <= {200, 201, 202, 400, 404, 409, 413, 429}, statuses


def test_an_oversized_body_on_an_open_route_is_refused_unread(shared):
    team = Team(shared)
    for path in ("/auth/invite", "/auth/forgot", "/auth/reset"):
        status = team.open_route("POST", path, {"token": "0" * 64, "password": "p" * 20000})[0]
        assert status == 413, path


def test_a_cross_site_page_cannot_accept_an_invite_or_set_a_password(shared):
    team = Team(shared)
    invite = team.invite("quinn@example.com")
    for path, body in (("/auth/invite", {"token": token_of(invite), "name": "Q", "password": PASSWORD}),
                       ("/auth/reset", {"token": "0" * 64, "password": PASSWORD}),
                       ("/auth/forgot", {"email": "quinn@example.com"})):
        status, _, answer = team.open_route("POST", path, body, {"Origin": "https://evil.example"})
        assert status == 403 and "another site" in answer["message"], path
        status, _, _ = team.open_route("POST", path, json.dumps(body).encode(), {"Content-Type": "text/plain"})
        assert status == 415, path
    assert team.accept(invite, name="Quinn", password=PASSWORD)[0] == 200


def test_opening_invite_links_is_limited_per_address(shared):
    team = Team(shared)
    statuses = [team.open_route("GET", f"/auth/invite?token={secrets.token_hex(32)}")[0] for _ in range(32)]
    assert statuses[:30] == [404] * 30 and statuses[30:] == [429, 429]
    status, headers, answer = team.open_route("GET", f"/auth/invite?token={secrets.token_hex(32)}")
    assert status == 429 and 1 <= int(headers["retry-after"]) <= 900 and "try again in" in answer["message"]


# --- forgotten password -----------------------------------------------------------------------------------------

def reset_link(team: Team, email: str, seconds: float = 3600) -> str:
    """A reset link's token for the account, as POST /auth/forgot stores it (the e-mail carries the token)."""
    token = secrets.token_hex(32)
    user = team.db.row("SELECT id FROM web_user WHERE email = ?", email)[0]
    team.db.execute("DELETE FROM password_reset WHERE user_id = ?", user)
    team.db.execute("INSERT INTO password_reset (token_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
                    hashlib.sha256(token.encode()).hexdigest(), user, iso(seconds), iso())
    return token


def test_forgot_answers_the_same_for_any_email_and_stores_a_link_for_an_hour_only_for_an_account(shared):
    team = Team(shared)
    team.joined(team.invite("rita@example.com", "admin"), name="Rita", password=PASSWORD)
    known = team.open_route("POST", "/auth/forgot", {"email": "Rita@example.com"})
    unknown = team.open_route("POST", "/auth/forgot", {"email": "nobody-at-all@example.com"})
    assert (known[0], known[2]) == (unknown[0], unknown[2]) == (202, {"message": (
        "If this email has an account, a link to set a new password is on its way. It works once, for an hour.")})
    rows = wait_for(lambda: team.db.row("SELECT COUNT(*), MIN(expires_at) FROM password_reset r JOIN web_user u "
                                        "ON u.id = r.user_id WHERE u.email = 'rita@example.com'"),
                    lambda found: found[0] == 1)  # (stored just after the answer: see the next test)
    assert iso(3500) < rows[1] < iso(3700)
    status, _, answer = team.open_route("POST", "/auth/forgot", {"email": "not an email"})
    assert status == 400 and answer["message"] == ["email must be an email address, such as alice@example.com"]
    # At most 3 an hour per email (then 429, for an unknown email too).
    for email in ("rita@example.com", "nobody-at-all@example.com"):
        team.address = {"X-Forwarded-For": f"198.20.0.{next(ADDRESSES) % 250}"}
        statuses = [team.open_route("POST", "/auth/forgot", {"email": email})[0] for _ in range(3)]
        assert statuses == [202, 202, 429], email


def test_forgot_takes_as_long_for_an_unknown_email_as_for_an_account(shared):
    team = Team(shared)
    emails = [f"timing{n}@example.com" for n in range(7)]
    for email in emails:
        team.joined(team.invite(email), name="T", password=PASSWORD)
    timings: dict = {"known": [], "unknown": []}
    for n, email in enumerate(emails):
        for kind, asked in (("known", email), ("unknown", f"ghost{n}-{secrets.token_hex(4)}@example.com")):
            team.address = {"X-Forwarded-For": f"198.21.{n}.{len(timings[kind])}"}
            started = time.monotonic()
            assert team.open_route("POST", "/auth/forgot", {"email": asked})[0] == 202
            timings[kind].append(time.monotonic() - started)
    known, unknown = statistics.median(timings["known"]), statistics.median(timings["unknown"])
    # Alike within a factor of 2, or within 5 ms (a loaded machine's noise, within a network's jitter; a mail
    # sent in the request, or a password hash, would take tens of milliseconds more).
    assert abs(known - unknown) < 0.005 or (unknown > known / 2 and known > unknown / 2), (known, unknown)


def test_a_reset_link_sets_the_password_once_and_ends_every_session(shared):
    team = Team(shared)
    sam = team.joined(team.invite("sam@example.com", "admin"), name="Sam", password=PASSWORD)
    sam_too = Browser(shared, *signed_in(team.sign_in("sam@example.com")))
    token = reset_link(team, "sam@example.com")
    status, _, answer = team.open_route("POST", "/auth/reset", {"token": token, "password": "short"})
    assert status == 400 and answer["message"] == ["password must be 10 to 1024 characters"]
    status, _, answer = team.open_route("POST", "/auth/reset", {"token": token, "password": "a brand new password"})
    assert status == 200 and "sign in with it" in answer["message"]
    assert sam.get("/public/v1/integrations") == 401 and sam_too.get("/public/v1/integrations") == 401
    assert team.sign_in("sam@example.com")[0] == 401
    assert team.sign_in("sam@example.com", "a brand new password")[0] == 200
    status, _, answer = team.open_route("POST", "/auth/reset", {"token": token, "password": "yet another password"})
    assert status == 404 and "used already" in answer["message"]
    assert team.sign_in("sam@example.com", "a brand new password")[0] == 200


def test_a_reset_link_expires_after_an_hour_and_a_forged_one_does_nothing(shared):
    team = Team(shared)
    team.joined(team.invite("tess@example.com", "admin"), name="Tess", password=PASSWORD)
    old = reset_link(team, "tess@example.com", seconds=-1)
    for token in (old, secrets.token_hex(32), "nothex", ""):
        status, _, answer = team.open_route("POST", "/auth/reset", {"token": token, "password": "a brand new password"})
        assert status in (400, 404) and (status == 400) == (token == ""), token
    assert team.sign_in("tess@example.com")[0] == 200
    newer = reset_link(team, "tess@example.com")
    assert team.open_route("POST", "/auth/forgot", {"email": "tess@example.com"})[0] == 202  # a newer link replaces it
    wait_for(lambda: team.db.row("SELECT COUNT(*) FROM password_reset WHERE token_hash = ?",
                                 hashlib.sha256(newer.encode()).hexdigest())[0], lambda count: count == 0)
    assert team.open_route("POST", "/auth/reset", {"token": newer, "password": "a brand new password"})[0] == 404


# --- the sign-in lockout ----------------------------------------------------------------------------------------

def test_the_lockout_counts_failed_sign_ins_of_an_account_and_says_when_to_retry(shared):
    team = Team(shared)
    team.joined(team.invite("uma@example.com", "admin"), name="Uma", password=PASSWORD)
    assert [team.sign_in("uma@example.com")[0] for _ in range(12)] == [200] * 12  # successes are not failures
    failures = []
    for n in range(11):  # from many addresses: the account is what is locked
        team.address = {"X-Forwarded-For": f"198.22.1.{n}"}
        failures.append(team.sign_in("uma@example.com", "a wrong password"))
    assert [status for status, _, _ in failures] == [401] * 10 + [429]
    status, headers, answer = failures[-1]
    assert 800 <= int(headers["retry-after"]) <= 900
    assert answer["message"] == ("Too many sign-in attempts for uma@example.com (at most 10 in 15 minutes): try "
                                 "again in 15 min")
    team.address = {"X-Forwarded-For": "198.22.2.1"}
    assert team.sign_in("uma@example.com")[0] == 429  # the right password too, until then
    # A wrong password on an invite counts towards the same lockout.
    invite = Team(shared).invite("uma@example.com")
    assert team.accept(invite, password=PASSWORD)[0] == 429


# --- the e-mails (a real SMTP server) ---------------------------------------------------------------------------

MAILED = {"FRONTEND_URL": "https://social.example.com", "RUSTIZ_MAIL_FROM": "Rustiz <rustiz@social.example.com>",
          "RUSTIZ_MAIL_POLL_SECONDS": "0.2", "RUSTIZ_MAIL_RETRY_BASE": "0.3"}


@pytest.fixture
def smtp():
    server = SmtpServer()
    yield server
    server.stop()


def mails_to(smtp, address: str, count: int) -> list:
    """The plain texts of the first `count` mails to `address`, once they arrived."""
    return [bodies(item["message"])[0] for item in smtp.wait_for(count, matching=lambda item: address in item["to"])]


def test_the_invite_and_the_reset_link_are_e_mailed_with_their_links_exactly(start_server, smtp):
    server = start_server(env={**MAILED, "RUSTIZ_SMTP_URL": smtp.url})
    team = Team(server)
    invite = team.invite("ines@example.com", "admin")
    assert invite["inviteUrl"].startswith("https://social.example.com/#/invite?token=")
    (text,) = mails_to(smtp, "ines@example.com", 1)
    assert invite["inviteUrl"] in text and "An admin of Other org invites you to join Other org" in text
    status, again = team.call("POST", f"/members/invites/{invite['id']}/resend")
    assert status == 200
    texts = mails_to(smtp, "ines@example.com", 2)
    assert again["inviteUrl"] in texts[1] and invite["inviteUrl"] not in texts[1]
    ines = team.joined(again, name="Ines", password=PASSWORD)
    # Invited by a person: the mail names them.
    status, _, raw = server.request("POST", API + "/members", {"Cookie": ines.cookie, "X-CSRF-Token": ines.csrf,
                                                               "Content-Type": "application/json"},
                                    json.dumps({"email": "jack@example.com", "role": "viewer"}).encode())
    assert status == 201, raw
    (text,) = mails_to(smtp, "jack@example.com", 1)
    assert "Ines invites you to join Other org" in text and json.loads(raw)["inviteUrl"] in text

    assert team.open_route("POST", "/auth/forgot", {"email": "ines@example.com"})[0] == 202
    assert team.open_route("POST", "/auth/forgot", {"email": "nobody@example.com"})[0] == 202
    texts = mails_to(smtp, "ines@example.com", 3)
    link = re.search(r"https://social\.example\.com/#/reset\?token=([0-9a-f]{64})", texts[2])
    assert link, texts[2]
    status, _, answer = team.open_route("POST", "/auth/reset", {"token": link[1], "password": "a brand new password"})
    assert status == 200, answer
    assert ines.get("/public/v1/integrations") == 401
    assert team.sign_in("ines@example.com", "a brand new password")[0] == 200
    time.sleep(0.5)  # (the sender polls every 0.2 s: a mail to nobody would have arrived by now)
    assert not [item for item in smtp.messages if "nobody@example.com" in item["to"]]


def test_member_changes_and_an_accepted_invite_are_in_the_audit_log(shared):
    team = Team(shared)
    invite = team.invite("vera@example.com", "viewer")
    team.joined(invite, name="Vera", password=PASSWORD)
    vera = team.members()["members"][0]
    assert team.call("PUT", f"/members/{vera['id']}", {"role": "editor"})[0] == 200
    other = team.invite("walt@example.com")
    assert team.call("POST", f"/members/invites/{other['id']}/resend")[0] == 200
    assert team.call("DELETE", f"/members/invites/{other['id']}")[0] == 200
    assert team.call("DELETE", f"/members/{vera['id']}")[0] == 200
    assert team.call("PUT", f"/members/{vera['id']}", {"role": "admin"})[0] == 404  # (a refusal records nothing)
    status, log = team.call("GET", "/audit")
    assert status == 200, log
    entries = sorted((e["action"], e["actor"]["type"], e["actor"]["email"], e["subject"]["id"]) for e in log["entries"])
    assert entries == sorted([
        ("member.invited", "key", None, invite["id"]), ("invite.accepted", "user", "vera@example.com", invite["id"]),
        ("member.updated", "key", None, vera["id"]), ("member.invited", "key", None, other["id"]),
        ("member.invited", "key", None, other["id"]), ("invite.revoked", "key", None, other["id"]),
        ("member.removed", "key", None, vera["id"])])
    accepted = next(e for e in log["entries"] if e["action"] == "invite.accepted")
    assert accepted["actor"]["name"] == "Vera" and accepted["address"] == team.address["X-Forwarded-For"]


# --- single sign-on (a real OpenID Connect provider, tests/oidc_provider/) ----------------------------------------

def test_single_sign_on_accepts_the_live_invites_of_the_e_mail_it_vouches_for(provider, start_server):
    server = start_server(env=provider.env)
    team, elsewhere = Team(server), Team(server)
    first, second = team.invite("cleo@example.org", "author"), elsewhere.invite("cleo@example.org", "viewer")
    browser = SsoBrowser()
    answer = browser.sign_in(server.url, "cleo@example.org")
    assert answer.status == 302 and answer.location == server.url + "/", (answer.status, answer.location)
    session = browser.get(server.url + "/auth/session").json()
    assert session["user"]["email"] == "cleo@example.org" and session["organization"]["id"] == elsewhere.org
    assert sorted(o["role"] for o in session["organizations"]) == ["author", "viewer"]
    assert team.members() == {"members": [{**team.members()["members"][0], "email": "cleo@example.org",
                                           "name": None, "role": "author"}], "invites": []}
    for used in (first, second):
        assert team.accept(used, name="Cleo", password=PASSWORD)[0] == 404
    for organization, invite in ((team, first), (elsewhere, second)):  # (each in its organization's audit log)
        entries = organization.call("GET", "/audit?action=invite.accepted")[1]["entries"]
        assert [(e["actor"]["type"], e["actor"]["email"], e["subject"]) for e in entries] == [
            ("user", "cleo@example.org", {"type": "invite", "id": invite["id"]})]
    assert team.sign_in("cleo@example.org", "any password at all")[0] == 401  # (no password: single sign-on's)
    # Not for an e-mail the provider has not verified, nor an expired invite.
    unverified, expired = team.invite("dan@example.org", "editor"), team.invite("eva@example.org", "editor")
    team.db.execute("UPDATE invite SET expires_at = ? WHERE id = ?", iso(-1), expired["id"])
    answer = SsoBrowser().sign_in(server.url, "unverified:dan@example.org")
    assert answer.status == 302 and "sso=unverified" in answer.location
    answer = SsoBrowser().sign_in(server.url, "eva@example.org")
    assert answer.status == 302 and "sso=not-member" in answer.location
    assert sorted(i["email"] for i in team.members()["invites"]) == ["dan@example.org", "eva@example.org"]


def test_with_passwords_off_no_route_takes_or_sets_a_password(provider, start_server):
    server = start_server(env={**provider.env, "RUSTIZ_OIDC_ONLY": "1"})
    team = Team(server)
    invite = team.invite("fred@example.org", "editor")
    status, _, shown = team.open_route("GET", f"/auth/invite?token={token_of(invite)}")
    assert status == 200 and shown["email"] == "fred@example.org"  # (the page offers single sign-on)
    for path, body in (("/auth/invite", {"token": token_of(invite), "name": "Fred", "password": PASSWORD}),
                       ("/auth/forgot", {"email": "fred@example.org"}),
                       ("/auth/reset", {"token": "0" * 64, "password": PASSWORD})):
        status, _, answer = team.open_route("POST", path, body)
        assert status == 403 and "Passwords are turned off" in answer["message"], (path, answer)
    assert SsoBrowser().sign_in(server.url, "fred@example.org").location == server.url + "/"
    assert [(m["email"], m["role"]) for m in team.members()["members"]] == [("fred@example.org", "editor")]
