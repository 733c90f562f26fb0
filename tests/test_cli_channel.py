"""`rustiz channel add` and `rustiz channel list`: the same validation and storage as POST /integrations."""
from __future__ import annotations

import json
import sqlite3

from conftest import read_config, run_cli
from test_api_channels import call
from test_api_integrations import Database

NSEC = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"
BLUESKY = ("--credential", "service=https://bsky.social", "--credential", "identifier=alice.bsky.social",
           "--credential", "password=app-pass-1")


def channel_cli(server, *arguments: str):
    return run_cli(server.pyz, "channel", *arguments, env={"RUSTIZ_CONFIG": str(server.config_path)})


def listed(server, *arguments: str) -> list:
    result = channel_cli(server, "list", *arguments)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split("\t") == ["ID", "PROVIDER", "NAME", "PROFILE", "GROUP", "DISABLED"]
    return [row.split("\t") for row in rows]


def stored_tokens(server) -> dict:
    with sqlite3.connect(read_config(server.config_path)["RUSTIZ_DATABASE"]) as db:
        return {row[0]: json.loads(row[1]) for row in db.execute("SELECT id, token FROM integration")}


def test_add_prints_the_id_and_the_running_server_lists_the_channel(server):
    result = channel_cli(server, "add", "bluesky", *BLUESKY)
    assert result.returncode == 0, result.stderr
    channel_id = result.stdout.strip()
    assert "channel alice.bsky.social (bluesky) added to organization My organization" in result.stderr
    assert "app-pass-1" not in result.stdout + result.stderr
    assert call(server, "GET", "/public/v1/integrations", server.key) == (200, [{
        "id": channel_id, "name": "alice.bsky.social", "identifier": "bluesky", "picture": None,
        "disabled": False, "profile": "alice.bsky.social"}])
    assert stored_tokens(server) == {channel_id: {"service": "https://bsky.social", "identifier": "alice.bsky.social",
                                                  "password": "app-pass-1"}}


def test_list_shows_provider_name_profile_and_group(server):
    assert channel_cli(server, "add", "bluesky", *BLUESKY, "--name", "Alice", "--customer", "Acme").returncode == 0
    result = channel_cli(server, "add", "discord", "--credential", "webhookUrl=https://discord.com/api/webhooks/1/s")
    assert result.returncode == 0, result.stderr
    rows = listed(server)
    assert [row[1:] for row in rows] == [["bluesky", "Alice", "alice.bsky.social", "Acme", "no"],
                                         ["discord", "Discord webhook", "-", "-", "no"]]
    assert rows[1][0] == result.stdout.strip()


def test_nostr_relays_comma_separated_or_repeated(server):
    result = channel_cli(server, "add", "nostr", "--credential", f"password={NSEC}", "--credential",
                         "relays=wss://one.example.com, wss://two.example.com", "--credential",
                         "relays=ws://127.0.0.1:7447")
    assert result.returncode == 0, result.stderr
    assert stored_tokens(server)[result.stdout.strip()]["relays"] == [
        "wss://one.example.com", "wss://two.example.com", "ws://127.0.0.1:7447"]


def test_refusals_are_one_line_without_a_traceback_or_the_secret(server):
    cases = [
        (("add", "bluesky", "--credential", "service=bsky.social", "--credential", "identifier=a",
          "--credential", "pasword=hunter2"),
         "rustiz: cannot add the bluesky channel: credentials.service must be a URL address starting with http:// "
         "or https://; credentials.password should not be empty; credentials.pasword should not exist (bluesky "
         "takes service, identifier, password)"),
        (("add", "x", "--credential", "apiKey=k"),
         "rustiz: cannot add the x channel: x connects through OAuth with a developer app, which rustiz does not "
         "support yet; providers that connect with credentials: bluesky, devto, discord, hashnode, lemmy, "
         "listmonk, mastodon, nostr, slack, telegram, webhook, wordpress"),
        (("add", "devto", "--credential", "hunter2"),
         "rustiz: each --credential needs the form KEY=VALUE, e.g. --credential webhookUrl=https://..."),
        (("add", "devto", "--credential", "apiKey=k", "--org", "nope"),
         "rustiz: no organization has the id nope; `rustiz org list` shows the ids"),
    ]
    for arguments, message in cases:
        result = channel_cli(server, *arguments)
        assert (result.returncode, result.stderr.strip()) == (2, message), arguments
        assert "hunter2" not in result.stderr and not result.stdout
    assert listed(server) == []


def test_the_same_account_twice_is_refused(server):
    first = channel_cli(server, "add", "bluesky", *BLUESKY).stdout.strip()
    result = channel_cli(server, "add", "bluesky", *BLUESKY)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f'rustiz: cannot add the bluesky channel: this bluesky account is already the channel "alice.bsky.social" '
        f"({first}) of this organization; delete that channel first (DELETE /public/v1/integrations/{first}) "
        "to add it again")
    assert len(listed(server)) == 1


def test_org_chooses_the_organization_and_the_default_is_the_config_key_s(server):
    db = Database(server)
    other_id, other_key = db.organization()
    result = channel_cli(server, "add", "devto", "--credential", "apiKey=theirs", "--org", other_id)
    assert result.returncode == 0, result.stderr
    assert [row[0] for row in listed(server, "--org", other_id)] == [result.stdout.strip()]
    assert listed(server) == []  # two organizations: the default is the one whose key is in the config
    assert call(server, "GET", "/public/v1/integrations", other_key)[1][0]["id"] == result.stdout.strip()
    assert call(server, "GET", "/public/v1/integrations", server.key)[1] == []


def test_without_a_matching_key_and_several_organizations_it_asks_for_org(server, tmp_path):
    Database(server).organization()
    config = tmp_path / "other-config.env"
    config.write_text(server.config_path.read_text().replace("RUSTIZ_API_KEY=", "RUSTIZ_API_KEY=0"))
    result = run_cli(server.pyz, "channel", "list", env={"RUSTIZ_CONFIG": str(config)})
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"rustiz: the database has 2 organizations and RUSTIZ_API_KEY in {config} matches none of them: "
        "choose one with --org ORG_ID (`rustiz org list` shows the ids)")


def test_channel_without_an_action_explains_itself(server):
    result = channel_cli(server)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "{add,list}" in result.stderr
