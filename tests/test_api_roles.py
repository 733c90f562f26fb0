"""People's roles (viewer, author, editor, admin) where key scopes are checked: every route of the route table
walked with a session of each role, refusals that name the role, an author's drafts, a role changed or a member
removed holding at the next request, and a person in two organizations switching between them."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import rustiz
from support import api, channel_post, connect_database, iso, post_body, webhook_channel
from test_api_keys import every_route

PASSWORD = "correct horse battery"
ROLE_ORDER = ("viewer", "author", "editor", "admin")


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server(env={"RUSTIZ_FETCH_ALLOW": "127.0.0.1"})


def add_person(server, email: str, role: str) -> None:
    """A person of the server's organization with `role` (`rustiz user add` makes an admin; the role is then set
    as the members API would)."""
    result = subprocess.run([sys.executable, str(server.pyz), "user", "add", email], input=PASSWORD + "\n",
                            capture_output=True, text=True, env=server.env(), timeout=30)
    assert result.returncode == 0, result.stderr
    set_role(server, email, role)


def set_role(server, email: str, role: str) -> None:
    with connect_database(server.database) as db:
        db.execute("UPDATE membership SET role = ? WHERE user_id = (SELECT id FROM web_user WHERE email = ?)",
                   (role, email))


class Session:
    """A person signed in with their password: calls with the session cookie and its CSRF token."""

    def __init__(self, server, email: str):
        self.server = server
        status, headers, answer = server.request("POST", "/auth/login", {"Content-Type": "application/json"},
                                                 json.dumps({"email": email, "password": PASSWORD}).encode())
        assert status == 200, answer
        self.signed_in = json.loads(answer)
        self.headers = {"Cookie": headers["set-cookie"].partition(";")[0], "X-CSRF-Token": self.signed_in["csrfToken"]}

    def call(self, method: str, path: str, body=None) -> tuple:
        return api(self.server, method, path, body, key="", headers=self.headers)


@pytest.fixture(scope="module")
def people(shared) -> dict:
    for role in ROLE_ORDER:
        add_person(shared, f"{role}@example.com", role)
    return {role: Session(shared, f"{role}@example.com") for role in ROLE_ORDER}


def needed_level(method: str, options: dict) -> str:
    return options.get("scope") or ("read" if method in ("GET", "HEAD") else "full")


@pytest.mark.parametrize("role", ROLE_ORDER)
def test_every_route_refuses_or_serves_each_role_as_its_level_says(shared, people, role):
    session, level = people[role], rustiz.ROLE_SCOPES[role]
    wrong = []
    for method, path, options in every_route():
        if options.get("authenticate") or options.get("authenticated") is False or path == "/auth/switch":
            continue
        concrete = "/".join("no-such-id" if part.startswith(":") else part for part in path.split("/"))
        prefix = "/public/v1" if any(path == route[1] for route in rustiz.API_ROUTES) else ""
        status, _, body = shared.request(method, prefix + concrete, {**session.headers, "Content-Type": "application/json"},
                                         None if method in ("GET", "HEAD", "DELETE") else b"{}")
        needed = needed_level(method, options)
        refused = status == 403 and f"Your role in this organization is '{role}'" in body.decode()
        if refused != (not rustiz.scope_allows(level, needed)) or status >= 500:
            wrong.append((method, path, needed, status, body[:200]))
    assert wrong == []


def test_every_role_has_a_level_and_the_levels_are_ordered():
    assert set(rustiz.ROLE_SCOPES) == set(ROLE_ORDER)
    assert [rustiz.LEVELS.index(rustiz.ROLE_SCOPES[role]) for role in ROLE_ORDER] == [0, 1, 2, 3]


def test_a_refusal_names_the_role_and_the_roles_that_may(shared, people):
    status, answer = people["viewer"].call("DELETE", "/public/v1/posts/abc")
    assert status == 403 and answer["message"] == (
        "Your role in this organization is 'viewer'; DELETE /public/v1/posts/abc needs the role 'editor' or "
        "'admin'. Ask an admin of the organization to change your role")
    status, answer = people["editor"].call("POST", "/public/v1/webhooks", {"url": "https://example.com/hook"})
    assert status == 403 and "needs the role 'admin'." in answer["message"]


def test_the_session_says_who_is_signed_in_with_which_role(shared, people):
    answer = people["author"].signed_in
    assert answer["role"] == "author" and answer["user"]["email"] == "author@example.com"
    assert answer["organizations"] == [{"id": answer["organization"]["id"], "name": answer["organization"]["name"],
                                        "role": "author"}]
    status, _, raw = shared.request("GET", "/auth/session", people["editor"].headers)
    assert status == 200 and json.loads(raw)["role"] == "editor"


def test_an_author_s_posts_wait_for_review_and_an_author_changes_only_their_own_drafts(shared, people, module_receiver):
    channel = webhook_channel(shared, module_receiver, "Blog")
    status, answer = people["author"].call("POST", "/public/v1/posts", post_body(channel_post(channel, "<p>Soon</p>"),
                                                                              type="schedule", date=iso(3600)))
    assert status == 403 and "needs the role 'editor' or 'admin'" in answer["message"]
    status, made = people["author"].call("POST", "/public/v1/posts", post_body(channel_post(channel, "<p>Mine</p>"),
                                                                            type="draft", date=iso(3600)))
    assert status == 201, made
    mine = made[0]["postId"]
    status, post = people["author"].call("PUT", f"/public/v1/posts/{mine}", {"content": "<p>Mine, better</p>"})
    assert status == 200 and post["content"] == "<p>Mine, better</p>"
    status, review = shared.request("GET", "/public/v1/posts?state=review", {"Authorization": shared.key})[0:3:2]
    assert mine in [post["id"] for post in json.loads(review)["posts"]]
    status, made = people["editor"].call("POST", "/public/v1/posts", post_body(channel_post(channel, "<p>Theirs</p>"),
                                                                            type="draft", date=iso(3600)))
    theirs = made[0]["postId"]
    status, answer = people["author"].call("PUT", f"/public/v1/posts/{theirs}", {"content": "<p>Changed</p>"})
    assert status == 403 and "not one of your drafts" in answer["message"]
    rewrite = channel_post(channel, "<p>Changed</p>")
    rewrite["value"][0]["id"] = theirs
    status, answer = people["author"].call("POST", "/public/v1/posts", post_body(rewrite, type="draft", date=iso(3600)))
    assert status == 403 and "not one of your drafts" in answer["message"]
    status, _ = people["editor"].call("POST", f"/public/v1/posts/{mine}/approve", {})
    assert status == 200


def test_a_changed_role_and_a_removed_member_hold_at_the_next_request(shared):
    add_person(shared, "changing@example.com", "editor")
    person = Session(shared, "changing@example.com")
    assert person.call("DELETE", "/public/v1/tags/no-such-tag")[0] == 404
    set_role(shared, "changing@example.com", "viewer")
    status, answer = person.call("DELETE", "/public/v1/tags/no-such-tag")
    assert status == 403 and "'viewer'" in answer["message"]
    with connect_database(shared.database) as db:
        db.execute("DELETE FROM membership WHERE user_id = (SELECT id FROM web_user WHERE email = ?)",
                   ("changing@example.com",))
    assert person.call("GET", "/public/v1/integrations")[0] == 401


def test_a_person_in_two_organizations_switches_between_them_and_nowhere_else(shared):
    add_person(shared, "agency@example.com", "editor")
    other_key = subprocess.run([sys.executable, str(shared.pyz), "org", "add", "Client B"], capture_output=True,
                               text=True, env=shared.env(), timeout=30).stdout.strip()
    third_key = subprocess.run([sys.executable, str(shared.pyz), "org", "add", "Client C"], capture_output=True,
                               text=True, env=shared.env(), timeout=30).stdout.strip()
    other = api(shared, "GET", "/public/v1/organization", key=other_key)[1]["id"]
    third = api(shared, "GET", "/public/v1/organization", key=third_key)[1]["id"]
    with connect_database(shared.database) as db:
        db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) SELECT id, ?, 'viewer', "
                   "'2026-01-01T00:00:00.000Z' FROM web_user WHERE email = ?", (other, "agency@example.com"))
    person = Session(shared, "agency@example.com")
    assert {org["name"]: org["role"] for org in person.signed_in["organizations"]} == {
        "Client B": "viewer", person.signed_in["organization"]["name"]: "editor"}
    status, switched = person.call("POST", "/auth/switch", {"organization": other})
    assert status == 200 and switched["organization"]["name"] == "Client B" and switched["role"] == "viewer"
    status, answer = person.call("POST", "/public/v1/tags", {"name": "x"})
    assert status == 403 and "'viewer'" in answer["message"]
    for wrong in (third, "no-such-org", "", 7, None):
        status, answer = person.call("POST", "/auth/switch", {"organization": wrong})
        assert status in (400, 404), (wrong, status, answer)
    assert api(shared, "POST", "/auth/switch", {"organization": other})[0] == 400  # (an API key has no person)
    status, _, raw = shared.request("POST", "/auth/switch", {"Cookie": person.headers["Cookie"],
                                                            "Content-Type": "application/json"},
                                    json.dumps({"organization": other}).encode())
    assert status == 403  # (no CSRF token: a forged cross-site form)
