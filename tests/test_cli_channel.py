"""`rustiz channel add` and `rustiz channel list`: the same validation and storage as POST /integrations."""
from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import LOCAL_FAKES, read_config, run_cli
from support import Database, api


NSEC = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"


def as_arguments(credentials: dict) -> tuple:
    return tuple(part for key, value in credentials.items() for part in ("--credential", f"{key}={value}"))


@pytest.fixture
def bluesky(platforms) -> tuple:
    """--credential arguments of the fake Bluesky account (alice.test, "Alice Example")."""
    return as_arguments(platforms.credentials("bluesky"))


@pytest.fixture
def channel_cli(platforms):
    def run(server, *arguments: str):
        return run_cli(server.pyz, "channel", *arguments,
                       env={**platforms.env, **LOCAL_FAKES, "RUSTIZ_CONFIG": str(server.config_path)})
    return run


def listed(channel_cli, server, *arguments: str) -> list:
    result = channel_cli(server, "list", *arguments)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split("\t") == ["ID", "PROVIDER", "NAME", "PROFILE", "GROUP", "DISABLED"]
    return [row.split("\t") for row in rows]


def stored_tokens(server) -> dict:
    with sqlite3.connect(read_config(server.config_path)["RUSTIZ_DATABASE"]) as db:
        return {row[0]: json.loads(row[1]) for row in db.execute("SELECT id, token FROM integration")}


def test_add_checks_the_account_prints_the_id_and_the_running_server_lists_the_channel(server, channel_cli,
                                                                                        platforms, bluesky):
    result = channel_cli(server, "add", "bluesky", *bluesky)
    assert result.returncode == 0, result.stderr
    channel_id = result.stdout.strip()
    assert "channel Alice Example (bluesky) added to organization My organization" in result.stderr
    password = platforms.credentials("bluesky")["password"]
    assert password not in result.stdout + result.stderr
    assert api(server, "GET", "/public/v1/integrations") == (200, [{
        "id": channel_id, "name": "Alice Example", "identifier": "bluesky",
        "picture": "https://cdn.example/avatar/alice.jpg", "disabled": False, "profile": "alice.test"}])
    assert stored_tokens(server) == {channel_id: platforms.credentials("bluesky")}


def test_credentials_the_platform_refuses_are_one_line(server, channel_cli, platforms):
    result = channel_cli(server, "add", "devto", "--credential", "apiKey=revoked")
    assert result.returncode == 2
    assert result.stderr.startswith("rustiz: cannot add the devto channel: Dev.to refused these credentials (HTTP 401)")
    assert len(result.stderr.strip().splitlines()) == 1


def test_list_shows_provider_name_profile_and_group(server, channel_cli, platforms, bluesky):
    assert channel_cli(server, "add", "bluesky", *bluesky, "--name", "Alice", "--customer", "Acme").returncode == 0
    result = channel_cli(server, "add", "discord", *as_arguments(platforms.credentials("discord")))
    assert result.returncode == 0, result.stderr
    rows = listed(channel_cli, server)
    assert [row[1:] for row in rows] == [["bluesky", "Alice", "alice.test", "Acme", "no"],
                                         ["discord", "Announcements bot", "-", "-", "no"]]
    assert rows[1][0] == result.stdout.strip()


def test_nostr_relays_comma_separated_or_repeated(server, channel_cli, platforms):
    relay = platforms.credentials("nostr")["relays"][0]  # one relay that answers is enough to connect
    result = channel_cli(server, "add", "nostr", "--credential", f"password={NSEC}", "--credential",
                         f"relays={relay}, ws://127.0.0.1:9", "--credential", "relays=ws://127.0.0.1:7")
    assert result.returncode == 0, result.stderr
    assert stored_tokens(server)[result.stdout.strip()]["relays"] == [relay, "ws://127.0.0.1:9", "ws://127.0.0.1:7"]


def test_refusals_are_one_line_without_a_traceback_or_the_secret(server, channel_cli):
    cases = [
        (("add", "bluesky", "--credential", "service=bsky.social", "--credential", "identifier=a",
          "--credential", "pasword=hunter2"),
         "rustiz: cannot add the bluesky channel: credentials.service must be a URL address starting with http:// "
         "or https://; credentials.password should not be empty; credentials.pasword should not exist (bluesky "
         "takes service, identifier, password)"),
        (("add", "skool", "--credential", "apiKey=k"),
         "rustiz: cannot add the skool channel: rustiz does not publish to skool: Skool has no public API; posting "
         "there needs a signed-in member's browser cookies, which rustiz will not hold; providers that connect with "
         "credentials: bluesky, devto, discord, hashnode, lemmy, listmonk, mastodon, medium, moltbook, nostr, slack, "
         "telegram, webhook, wordpress"),
        (("add", "devto", "--credential", "hunter2"),
         "rustiz: each --credential needs the form KEY=VALUE, e.g. --credential webhookUrl=https://..."),
        (("add", "devto", "--credential", "apiKey=k", "--org", "nope"),
         "rustiz: no organization has the id nope; `rustiz org list` shows the ids"),
    ]
    for arguments, message in cases:
        result = channel_cli(server, *arguments)
        assert (result.returncode, result.stderr.strip()) == (2, message), arguments
        assert "hunter2" not in result.stderr and not result.stdout
    assert listed(channel_cli, server) == []


def test_the_same_account_again_reconnects_its_channel(server, channel_cli, bluesky):
    first = channel_cli(server, "add", "bluesky", *bluesky).stdout.strip()
    result = channel_cli(server, "add", "bluesky", *bluesky)
    assert (result.returncode, result.stdout.strip()) == (0, first), result.stderr
    assert ("channel Alice Example (bluesky) reconnected: it has the new credentials, and the posts that waited "
            "for it go out now") in result.stderr
    assert len(listed(channel_cli, server)) == 1


def test_org_chooses_the_organization_and_the_default_is_the_config_key_s(server, channel_cli, platforms):
    db = Database(server)
    other_id, other_key = db.organization()
    result = channel_cli(server, "add", "devto", *as_arguments(platforms.credentials("devto")), "--org", other_id)
    assert result.returncode == 0, result.stderr
    assert [row[0] for row in listed(channel_cli, server, "--org", other_id)] == [result.stdout.strip()]
    assert listed(channel_cli, server) == []  # two organizations: the default is the one whose key is in the config
    assert api(server, "GET", "/public/v1/integrations", key=other_key)[1][0]["id"] == result.stdout.strip()
    assert api(server, "GET", "/public/v1/integrations")[1] == []


def test_without_a_matching_key_and_several_organizations_it_asks_for_org(server, tmp_path):
    Database(server).organization()
    config = server.config_path.parent / "other-config.env"  # (beside it: its paths are relative to its folder)
    config.write_text(server.config_path.read_text().replace("RUSTIZ_API_KEY=", "RUSTIZ_API_KEY=0"))
    result = run_cli(server.pyz, "channel", "list", env={"RUSTIZ_CONFIG": str(config)})
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"rustiz: the database has 2 organizations and RUSTIZ_API_KEY in {config} matches none of them: "
        "choose one with --org ORG_ID (`rustiz org list` shows the ids)")


def test_channel_without_an_action_explains_itself(server, channel_cli):
    result = channel_cli(server)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "{add,list}" in result.stderr
