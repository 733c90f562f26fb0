"""`rustiz member invite/list/role/remove`: the operator manages an organization's members from the command
line, with the API's rules (single-use invite links, the last admin stays), taking effect in a running server."""
from __future__ import annotations

import json

from conftest import run_cli
from support import Database

PASSWORD = "correct horse battery"


def member_cli(server, *arguments: str):
    return run_cli(server.pyz, "member", *arguments, env={"RUSTIZ_CONFIG": str(server.config_path)})


def accept(server, url: str, **body) -> tuple:
    """(status, headers, answer) of POST /auth/invite with the link's token."""
    status, headers, raw = server.request("POST", "/auth/invite", {"Content-Type": "application/json"},
                                          json.dumps({"token": url.rpartition("token=")[2], **body}).encode())
    return status, headers, json.loads(raw)


def listed(server, *arguments: str) -> list:
    result = member_cli(server, "list", *arguments)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split("\t") == ["EMAIL", "NAME", "ROLE", "STATE", "ID"]
    return [row.split("\t") for row in rows]


def test_member_invite_prints_a_link_that_makes_a_member_of_a_running_server(server):
    result = member_cli(server, "invite", "Alice@Example.com", "--role", "editor")
    assert result.returncode == 0, result.stderr
    url = result.stdout.strip()
    assert url.startswith("http://") and "/#/invite?token=" in url and len(url.rpartition("=")[2]) == 64
    assert "alice@example.com is invited to organization My organization as editor" in result.stderr
    assert "FRONTEND_URL is not set" in result.stderr
    with open(server.config_path, "a") as config:
        config.write("FRONTEND_URL=https://social.example.com/\n")
    other = member_cli(server, "invite", "zed@example.com", "--role", "viewer")
    assert other.stdout.startswith("https://social.example.com/#/invite?token=") and "FRONTEND_URL" not in other.stderr
    rows = listed(server)
    assert [row[:3] for row in rows] == [["zed@example.com", "-", "viewer"], ["alice@example.com", "-", "editor"]]
    assert rows[1][3].startswith("invited")
    status, headers, answer = accept(server, url, name="Alice", password=PASSWORD)
    assert status == 200 and "rustiz_session=" in headers["set-cookie"], answer
    rows = listed(server)
    assert [row[:3] for row in rows] == [["alice@example.com", "Alice", "editor"], ["zed@example.com", "-", "viewer"]]
    assert rows[0][3].startswith("member")
    again = member_cli(server, "invite", "alice@example.com", "--role", "viewer")
    assert again.returncode == 2 and again.stderr.strip() == (
        "rustiz: cannot invite: alice@example.com is already a member of this organization (role editor): change "
        "their role instead")


def test_member_role_and_remove_keep_the_last_admin_and_end_sessions(server):
    for email, role in (("bo@example.com", "admin"), ("cy@example.com", "viewer")):
        url = member_cli(server, "invite", email, "--role", role).stdout.strip()
        status, headers, _ = accept(server, url, name=email[:2], password=PASSWORD)
        assert status == 200
        cookie = headers["set-cookie"].partition(";")[0]
    refused = member_cli(server, "role", "bo@example.com", "editor")
    assert refused.returncode == 2 and "bo@example.com is the last admin of this organization" in refused.stderr
    assert member_cli(server, "remove", "bo@example.com").returncode == 2
    result = member_cli(server, "role", "CY@example.com", "admin")
    assert result.returncode == 0 and "cy@example.com is now admin" in result.stderr
    assert server.request("GET", "/public/v1/integrations", {"Cookie": cookie})[0] == 200  # cy's session
    result = member_cli(server, "remove", "cy@example.com")
    assert result.returncode == 0 and "no longer a member" in result.stderr, result.stderr
    assert server.request("GET", "/public/v1/integrations", {"Cookie": cookie})[0] == 401
    assert [row[:3] for row in listed(server)] == [["bo@example.com", "bo", "admin"]]


def test_member_commands_name_what_is_wrong_in_one_line(server):
    other_org, _ = Database(server).organization()
    for arguments, fragment in ((("invite", "not-an-email", "--role", "admin"), "email must be an email address"),
                                (("role", "nobody@example.com", "viewer"), "nobody@example.com is not a member"),
                                (("remove", "nobody@example.com"), "`rustiz member list` shows who is"),
                                (("remove", "not-an-email"), "is not an email address: rustiz member remove"),
                                (("list", "--org", "no-such-org"), "no organization has the id no-such-org")):
        result = member_cli(server, *arguments)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert fragment in result.stderr, (arguments, result.stderr)
    assert member_cli(server, "invite", "dee@example.com", "--role", "owner").returncode == 2  # argparse's choices
    assert member_cli(server, "invite", "dee@example.com", "--role", "author", "--org", other_org).returncode == 0
    assert listed(server) == [] and [row[0] for row in listed(server, "--org", other_org)] == ["dee@example.com"]
