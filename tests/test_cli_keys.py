"""`rustiz key add/list/revoke` and `rustiz key rotate --org`: named keys with a scope, from the command line,
taking effect in a running server at once."""
from __future__ import annotations

import hashlib
import json
import re

from conftest import read_config, run_cli
from support import Database, auth

KEY_SHAPE = re.compile(r"[0-9a-f]{64}\Z")


def key_cli(server, *arguments: str):
    return run_cli(server.pyz, "key", *arguments, env={"RUSTIZ_CONFIG": str(server.config_path)})


def listed(server, *arguments: str) -> list:
    result = key_cli(server, "list", *arguments)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split("\t") == ["NAME", "SCOPE", "CREATED", "LAST USE", "ID"]
    return [row.split("\t") for row in rows]


def status_of(server, method: str, path: str, key: str) -> int:
    return server.request(method, path, {**auth(key), "Content-Type": "application/json"},
                          None if method == "GET" else b"{}")[0]


def web_session(server, key: str) -> str:
    status, headers, _ = server.request("POST", "/auth/login", {"Content-Type": "application/json"},
                                        json.dumps({"apiKey": key}).encode())
    assert status == 200
    return headers["set-cookie"].partition(";")[0]


def test_key_add_prints_the_key_once_and_a_running_server_honours_its_scope_at_once(server):
    result = key_cli(server, "add", "--name", "agent", "--scope", "drafts")
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip()
    assert KEY_SHAPE.match(key) and "shown once" in result.stderr
    assert status_of(server, "GET", "/public/v1/integrations", key) == 200
    assert status_of(server, "DELETE", "/public/v1/posts/x", key) == 403
    rows = listed(server)
    assert [row[:2] for row in rows] == [["default", "full"], ["agent", "drafts"]]
    assert rows[1][3] != "never"  # the call above was its last use
    assert key not in key_cli(server, "list").stdout
    with Database(server).connect() as db:
        stored = db.execute("SELECT key_hash FROM api_key WHERE name = 'agent'").fetchone()[0]
    assert stored == hashlib.sha256(key.encode()).hexdigest()


def test_key_revoke_stops_the_key_and_its_web_sessions_in_a_running_server(server):
    key = key_cli(server, "add", "--name", "ops", "--scope", "full").stdout.strip()
    cookie = web_session(server, key)
    assert status_of(server, "GET", "/public/v1/integrations", key) == 200
    result = key_cli(server, "revoke", "ops")
    assert result.returncode == 0 and "revoked" in result.stderr, result.stderr
    assert status_of(server, "GET", "/public/v1/integrations", key) == 401
    assert server.request("GET", "/auth/session", {"Cookie": cookie})[0] == 401
    assert [row[0] for row in listed(server)] == ["default"]


def test_key_rotate_with_org_rotates_that_organization_s_key_and_leaves_the_config_alone(server):
    other_id, other_key = Database(server).organization()
    config_key = server.key
    cookie = web_session(server, other_key)
    result = key_cli(server, "rotate", "--org", other_id)
    assert result.returncode == 0, result.stderr
    new_key = result.stdout.strip()
    assert KEY_SHAPE.match(new_key) and "not saved" in result.stderr
    assert read_config(server.config_path)["RUSTIZ_API_KEY"] == config_key
    assert status_of(server, "GET", "/public/v1/integrations", other_key) == 401
    assert status_of(server, "GET", "/public/v1/integrations", new_key) == 200
    assert server.request("GET", "/auth/session", {"Cookie": cookie})[0] == 401
    assert status_of(server, "GET", "/public/v1/integrations", config_key) == 200


def test_keys_belong_to_the_organization_org_names(server):
    other_id, other_key = Database(server).organization()
    key = key_cli(server, "add", "--name", "reader", "--scope", "read", "--org", other_id).stdout.strip()
    assert [row[0] for row in listed(server, "--org", other_id)] == ["default", "reader"]
    assert [row[0] for row in listed(server)] == ["default"]
    assert server.request("GET", "/public/v1/organization", auth(key))[0] == 200
    assert json.loads(server.request("GET", "/public/v1/organization", auth(key))[2])["id"] == other_id


def test_mistakes_are_one_clear_line_and_change_nothing(server):
    assert key_cli(server, "add", "--name", "agent", "--scope", "drafts").returncode == 0
    for arguments, words in ((("add", "--name", "agent", "--scope", "read"), "already has a key named 'agent'"),
                             (("add", "--name", "default", "--scope", "read"), "is the organization's own key"),
                             (("revoke", "nobody"), "No API key named or with the id 'nobody'"),
                             (("revoke", "default"), "rotate it"),
                             (("list", "--org", "nope"), "no organization has the id nope")):
        result = key_cli(server, *arguments)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and len(lines) == 1 and words in lines[0], (arguments, result.stderr)
    result = key_cli(server, "add", "--name", "x", "--scope", "admin")
    assert result.returncode == 2 and "invalid choice: 'admin'" in result.stderr
    assert [row[0] for row in listed(server)] == ["default", "agent"]
