"""`rustiz org add` and `rustiz org list`, and what a new organization's key may see over HTTP."""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3

from conftest import read_config, run_cli
from support import Database, auth


KEY_SHAPE = re.compile(r"[0-9a-f]{64}\Z")


def org(server, *arguments: str):
    return run_cli(server.pyz, "org", *arguments, env={"RUSTIZ_CONFIG": str(server.config_path)})


def listed(server) -> list:
    result = org(server, "list")
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split("\t") == ["ID", "NAME", "CHANNELS"]
    return [row.split("\t") for row in rows]


def test_org_add_prints_a_new_key_and_stores_only_its_hash(server):
    result = org(server, "add", "Acme Inc")
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip()
    assert KEY_SHAPE.match(key), result.stdout
    database = read_config(server.config_path)["RUSTIZ_DATABASE"]
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT name, api_key_hash FROM organization WHERE name = 'Acme Inc'").fetchall()
        dump = "\n".join(db.iterdump())
    assert rows == [("Acme Inc", hashlib.sha256(key.encode()).hexdigest())]
    assert key not in dump
    # The running server accepts the new key at once.
    status, _, body = server.request("GET", "/public/v1/is-connected", auth(key))
    assert (status, json.loads(body)) == (200, {"connected": True})


def test_org_list_shows_ids_names_and_channel_counts(server):
    db = Database(server)
    db.channel("One", "x")
    db.channel("Two", "bluesky")
    db.channel("Deleted", "x", deleted=True)
    assert org(server, "add", "Second").returncode == 0
    rows = listed(server)
    assert [(name, channels) for _, name, channels in rows] == [("My organization", "2"), ("Second", "0")]
    assert rows[0][0] == db.organization_id


def test_a_new_organization_sees_none_of_the_first_one_s_data(server):
    db = Database(server)
    channel = db.channel("First org's channel", "discord")
    db.customer("First org's customer")
    key = org(server, "add", "Tenant B").stdout.strip()
    for path in ("/public/v1/integrations", "/public/v1/groups"):
        status, _, body = server.request("GET", path, auth(key))
        assert (status, json.loads(body)) == (200, []), path
    for method, path in (("GET", f"/public/v1/integration-settings/{channel}"),
                         ("POST", f"/public/v1/integration-trigger/{channel}")):
        status, _, body = server.request(method, path, auth(key))
        assert (status, json.loads(body)) == (404, {"msg": "Integration not found"}), path
    # ... while the first organization's key still sees its own.
    status, _, body = server.request("GET", "/public/v1/integrations", auth(server.key))
    assert [item["id"] for item in json.loads(body)] == [channel]


def test_org_add_refuses_an_empty_name(server):
    result = org(server, "add", "   ")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == 'rustiz: the organization needs a name: rustiz org add "Acme Inc"'
    assert [name for _, name, _ in listed(server)] == ["My organization"]


def test_org_without_an_action_explains_itself(server):
    result = org(server)
    assert result.returncode == 2
    assert "add" in result.stderr and "list" in result.stderr


def test_org_add_refuses_a_name_over_100_characters(server):
    result = org(server, "add", "A" * 101)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "rustiz: the organization's name has 101 characters; give one of at most 100"
    assert org(server, "add", "B" * 100).returncode == 0
    assert [name for _, name, _ in listed(server)] == ["My organization", "B" * 100]
