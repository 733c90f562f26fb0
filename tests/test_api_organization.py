"""GET/PUT /public/v1/organization and `rustiz org timezone` (rustiz): the organization's IANA timezone."""
from __future__ import annotations

import datetime
import json

from conftest import run_cli
from support import PREFIXES, Database, api


def org_cli(server, *arguments: str):
    return run_cli(server.pyz, "org", *arguments, env={"RUSTIZ_CONFIG": str(server.config_path)})


def test_get_shows_id_name_and_utc_by_default(server):
    db = Database(server)
    for prefix in PREFIXES:
        assert api(server, "GET", f"{prefix}/organization") == (200, {
            "id": db.organization_id, "name": "My organization", "timezone": "UTC", "postingSchedule": None})


def test_put_changes_the_timezone_and_the_name(server):
    db = Database(server)
    status, answer = api(server, "PUT", "/api/public/v1/organization", {"timezone": " Europe/Paris "})
    assert (status, answer) == (200, {"id": db.organization_id, "name": "My organization", "timezone": "Europe/Paris",
                                      "postingSchedule": None})
    status, answer = api(server, "PUT", "/public/v1/organization", {"name": "Acme"})
    assert (status, answer["name"], answer["timezone"]) == (200, "Acme", "Europe/Paris")
    assert api(server, "PUT", "/public/v1/organization", {}) == (200, answer)
    assert api(server, "GET", "/public/v1/organization") == (200, answer)


def test_find_slot_uses_the_timezone_set_through_the_api(server):
    db = Database(server)
    channel = db.channel("X", "x")
    assert api(server, "PUT", "/public/v1/organization", {"timezone": "Asia/Tokyo"})[0] == 200
    status, slot = api(server, "GET", f"/public/v1/find-slot/{channel}")
    assert (status, slot["timezone"]) == (200, "Asia/Tokyo")
    local = datetime.datetime.fromisoformat(slot["localDate"])
    utc = datetime.datetime.fromisoformat(slot["date"])
    assert local - utc == datetime.timedelta(hours=9)


def test_unknown_zones_and_bad_bodies_are_400_naming_the_problem(server):
    def problems(body) -> list:
        status, answer = api(server, "PUT", "/public/v1/organization", body)
        assert status == 400 and answer["error"] == "Bad Request", answer
        return answer["message"]

    for zone in ("Mars/Olympus_Mons", "../../../etc/passwd", "Europe", "utc+2"):
        assert problems({"timezone": zone}) == [
            f"timezone {zone!r} is not an IANA timezone name this machine knows; use one like Europe/Paris, "
            "America/New_York or UTC (install the tzdata package if none work)"], zone
    for zone in ("localtime", "posixrules", "posix/Europe/Paris", "right/UTC"):
        assert problems({"timezone": zone}) == [
            f"timezone {zone!r} is not an IANA timezone name; use one like Europe/Paris, America/New_York or UTC"]
    assert problems({"timezone": 3, "name": ""}) == ["name should not be empty", "timezone must be a string"]
    status, _, answer = server.request("PUT", "/public/v1/organization", {"Authorization": server.key},
                                       b'{"name": "x\\ud800"}')
    assert status == 400 and "lone UTF-16 surrogate" in json.loads(answer)["message"]
    assert problems({"tz": "UTC"}) == ["property tz should not exist (send name and/or timezone)"]
    assert api(server, "GET", "/public/v1/organization")[1]["timezone"] == "UTC"


def test_each_organization_sees_and_changes_only_its_own(server):
    db = Database(server)
    other_id, other_key = db.organization()
    assert api(server, "GET", "/public/v1/organization", key=other_key) == (200, {
        "id": other_id, "name": "Other org", "timezone": "UTC", "postingSchedule": None})
    assert api(server, "PUT", "/public/v1/organization", {"timezone": "America/New_York"}, key=other_key)[0] == 200
    assert api(server, "GET", "/public/v1/organization")[1]["timezone"] == "UTC"
    status, _, body = server.request("GET", "/public/v1/organization", {"Authorization": "wrong"})
    assert status == 401, body


def test_cli_sets_the_timezone_of_the_config_s_organization_or_the_named_one(server):
    db = Database(server)
    other_id, other_key = db.organization()
    result = org_cli(server, "timezone", "Pacific/Auckland")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"organization My organization ({db.organization_id}) now uses the timezone Pacific/Auckland")
    assert api(server, "GET", "/public/v1/organization")[1]["timezone"] == "Pacific/Auckland"
    assert org_cli(server, "timezone", "UTC", "--org", other_id).returncode == 0
    assert api(server, "GET", "/public/v1/organization", key=other_key)[1]["timezone"] == "UTC"
    assert api(server, "GET", "/public/v1/organization")[1]["timezone"] == "Pacific/Auckland"


def test_cli_refuses_unknown_zones_and_organizations(server):
    result = org_cli(server, "timezone", "Nowhere/Town")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "rustiz: timezone 'Nowhere/Town' is not an IANA timezone name this machine knows; use one like "
        "Europe/Paris, America/New_York or UTC (install the tzdata package if none work)")
    result = org_cli(server, "timezone", "UTC", "--org", "no-such-org")
    assert (result.returncode, result.stderr.strip()) == (
        2, "rustiz: no organization has the id no-such-org; `rustiz org list` shows the ids")
    assert json.loads(json.dumps(api(server, "GET", "/public/v1/organization")[1]))["timezone"] == "UTC"


def test_rotating_the_key_through_the_api_answers_it_once_and_the_old_one_stops_at_once(server):
    old_key = server.key
    status, _, answer = server.request("POST", "/public/v1/organization/api-key", {"Authorization": old_key})
    assert status == 201
    new_key = json.loads(answer)["apiKey"]
    assert len(new_key) == 64 and new_key != old_key
    assert api(server, "GET", "/public/v1/is-connected", key=old_key) == (401, {"msg": "Invalid API key"})
    assert api(server, "GET", "/public/v1/is-connected", key=new_key) == (200, {"connected": True})
    assert server.key == new_key  # the config file held the old key, so it now holds the new one


def test_organization_and_group_names_over_100_characters_are_400s_naming_the_field(server):
    status, answer = api(server, "PUT", "/public/v1/organization", {"name": "N" * 101})
    assert status == 400 and answer["message"] == ["name must be shorter than or equal to 100 characters"]
    assert api(server, "GET", "/public/v1/organization")[1]["name"] != "N" * 101
    status, answer = api(server, "PUT", "/public/v1/organization", {"name": "N" * 100})
    assert status == 200 and answer["name"] == "N" * 100
    channel = Database(server).channel("Grouped", "bluesky")
    status, answer = api(server, "PUT", f"/public/v1/integrations/{channel}", {"customer": "G" * 101})
    assert status == 400 and answer["message"] == [
        "customer (the group's name) must be shorter than or equal to 100 characters"]
    status, answer = api(server, "POST", "/public/v1/integrations", {
        "provider": "webhook", "credentials": {"url": "https://hooks.example.com/x"}, "customer": "G" * 101})
    assert status == 400 and "customer must be shorter than or equal to 100 characters" in answer["message"]
    assert [group["name"] for group in api(server, "GET", "/public/v1/groups")[1]] == []
    status, answer = api(server, "PUT", f"/public/v1/integrations/{channel}", {"customer": "G" * 100})
    assert status == 200, answer
