"""integration-settings, integration-trigger and groups over HTTP, org-scoped, under both API prefixes."""
from __future__ import annotations

import json

import pytest

from support import PREFIXES, Database, api, auth


NOT_FOUND = {"msg": "Integration not found"}


@pytest.fixture
def world(server):
    """Channels and groups of this server's organization, and of a second organization with its own key."""
    db = Database(server)
    other_org, other_key = db.organization()
    ids = {
        "x": db.channel("Acme on X", "x"),
        "x_verified": db.channel("Premium X", "x"),
        "discord": db.channel("Discord", "discord"),
        "mastodon": db.channel("Toots", "mastodon"),
        "unknown": db.channel("From the future", "friendster"),
        "deleted": db.channel("Deleted", "x", deleted=True),
        "other": db.channel("Not yours", "discord", organization_id=other_org),
    }
    with db.connect() as connection:
        connection.execute("UPDATE integration SET additional_settings = ? WHERE id = ?",
                           (json.dumps([{"title": "Verified", "description": "X premium", "type": "checkbox",
                                         "value": True}]), ids["x_verified"]))
    groups = {"acme": db.customer("Acme"), "globex": db.customer("Globex"),
              "other": db.customer("Other org's customer", other_org)}
    return {"ids": ids, "groups": groups, "other_key": other_key}


def test_integration_settings_for_x(server, world):
    for prefix in PREFIXES:
        status, answer = api(server, "GET", f"{prefix}/integration-settings/{world['ids']['x']}")
        assert status == 200
        output = answer["output"]
        assert list(output) == ["rules", "maxLength", "settings", "tools"]
        assert output["maxLength"] == 280
        assert output["rules"].startswith("X can have maximum 4 pictures, or maximum one video")
        assert output["settings"]["type"] == "object"
        assert output["settings"]["properties"]["who_can_reply_post"]["enum"] == [
            "everyone", "following", "mentionedUsers", "subscribers", "verified"]
        assert output["tools"] == []


def test_a_verified_x_channel_gets_4000(server, world):
    status, answer = api(server, "GET", f"/public/v1/integration-settings/{world['ids']['x_verified']}")
    assert (status, answer["output"]["maxLength"]) == (200, 4000)


def test_integration_settings_tools_and_no_settings_text(server, world):
    status, answer = api(server, "GET", f"/api/public/v1/integration-settings/{world['ids']['discord']}")
    assert status == 200
    assert answer["output"]["tools"] == [{"methodName": "channels", "description": "Channels", "dataSchema": []}]
    assert answer["output"]["settings"]["required"] == ["channel"]
    status, answer = api(server, "GET", f"/public/v1/integration-settings/{world['ids']['mastodon']}")
    assert answer == {"output": {"rules": "", "maxLength": 500, "settings": "No additional settings required",
                                 "tools": []}}


def test_a_provider_rustiz_does_not_know_gets_postiz_s_empty_output(server, world):
    status, answer = api(server, "GET", f"/public/v1/integration-settings/{world['ids']['unknown']}")
    assert (status, answer) == (200, {"output": {"rules": "", "maxLength": 0, "settings": {}, "tools": []}})


def test_integration_settings_404_for_unknown_deleted_and_other_org_ids(server, world):
    for channel_id in ("no-such-id", world["ids"]["deleted"], world["ids"]["other"]):
        for prefix in PREFIXES:
            assert api(server, "GET", f"{prefix}/integration-settings/{channel_id}") == (404, NOT_FOUND)
    # The other organization sees its own channel, and not ours.
    assert api(server, "GET", f"/public/v1/integration-settings/{world['ids']['other']}",
               key=world["other_key"])[0] == 200
    assert api(server, "GET", f"/public/v1/integration-settings/{world['ids']['x']}", key=world["other_key"]) == (
        404, NOT_FOUND)


def test_integration_trigger_has_no_tools_yet(server, world):
    for prefix in PREFIXES:
        path = f"{prefix}/integration-trigger/{world['ids']['discord']}"
        assert api(server, "POST", path, {"methodName": "channels", "data": {}}) == (
            404, {"msg": "Tool not found"})
        assert api(server, "POST", path, {"methodName": "listChannels"}) == (404, {"msg": "Tool not found"})
        assert api(server, "POST", path) == (404, {"msg": "Tool not found"})


def test_integration_trigger_errors_for_channels(server, world):
    payload = {"methodName": "channels", "data": {}}
    for channel_id in ("no-such-id", world["ids"]["deleted"], world["ids"]["other"]):
        assert api(server, "POST", f"/public/v1/integration-trigger/{channel_id}", payload) == (
            404, NOT_FOUND)
    assert api(server, "POST", f"/public/v1/integration-trigger/{world['ids']['unknown']}", payload) == (
        404, {"msg": "Integration provider not found"})


def test_integration_trigger_with_a_broken_body_is_400_not_500(server, world):
    status, headers, body = server.request("POST", f"/public/v1/integration-trigger/{world['ids']['discord']}",
                                           {**auth(server.key), "Content-Type": "application/json"}, b"{nope")
    assert status == 400
    assert json.loads(body)["statusCode"] == 400


def test_groups_are_the_organization_s_customers(server, world):
    groups = world["groups"]
    for prefix in PREFIXES:
        status, listed = api(server, "GET", f"{prefix}/groups")
        assert status == 200
        assert sorted(listed, key=lambda group: group["name"]) == [
            {"id": groups["acme"], "name": "Acme"}, {"id": groups["globex"], "name": "Globex"}]
    assert api(server, "GET", "/public/v1/groups", key=world["other_key"]) == (
        200, [{"id": groups["other"], "name": "Other org's customer"}])


def test_groups_empty_and_auth(server):
    assert api(server, "GET", "/public/v1/groups") == (200, [])
    assert server.request("GET", "/public/v1/groups")[::2] == (401, b'{"msg":"No API Key found"}')
    assert server.request("GET", "/public/v1/integration-settings/x")[::2] == (401, b'{"msg":"No API Key found"}')


def test_a_channel_can_be_renamed_disabled_regrouped_and_given_posting_times(server):
    db = Database(server)
    channel_id = db.channel("Old name", "bluesky")
    status, row = api(server, "PUT", f"/public/v1/integrations/{channel_id}", {
       "name": "  New name ", "disabled": True, "customer": "Acme", "postingTimes": [{"time": 600}, {"time": 90}]})
    assert status == 200, row
    assert (row["name"], row["disabled"], row["postingTimes"]) == ("New name", True, '[{"time":90},{"time":600}]')
    assert row["refreshNeeded"] is False and "token" not in row
    assert api(server, "GET", f"/public/v1/integrations/{channel_id}") == (200, row)
    [listed] = api(server, "GET", "/public/v1/integrations")[1]
    assert listed["customer"]["name"] == "Acme" and listed["disabled"] is True
    status, row = api(server, "PUT", f"/public/v1/integrations/{channel_id}",
                      {"disabled": False, "customer": None})
    assert status == 200 and row["disabled"] is False and row["customerId"] is None


def test_channel_changes_are_checked_and_scoped_to_the_organization(server):
    db = Database(server)
    channel_id = db.channel("Mine", "bluesky")
    other_org, other_key = db.organization()
    status, answer = api(server, "PUT", f"/public/v1/integrations/{channel_id}",
                         {"disabled": "yes", "postingTimes": [{"time": 1440}], "token": "x"})
    assert status == 400 and answer["message"] == [
        "property token should not exist (a channel takes name, disabled, postingTimes, customer, credentials)",
        "disabled must be a boolean value",
        'postingTimes must be a list of {"time": minutes after midnight, 0 to 1439}']
    not_found = (404, {"statusCode": 404, "message": "Integration not found", "error": "Not Found"})
    assert api(server, "PUT", f"/public/v1/integrations/{channel_id}", {"name": "x"}, key=other_key) == not_found
    assert api(server, "GET", f"/public/v1/integrations/{channel_id}", key=other_key) == not_found
