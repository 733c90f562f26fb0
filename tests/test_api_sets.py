"""Sets (GET/POST /sets, PUT/DELETE /sets/:id): a name, some of the organization's own channels and their settings
by channel id; another organization's channels are refused without a word on whether they exist, settings are
bounded, channels deleted since drop out of the listing, and narrow keys may only read."""
from __future__ import annotations

import pytest

from support import API, api, library_create, library_item, library_items, new_key, two_organizations


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server()


@pytest.fixture(scope="module")
def world(shared) -> dict:
    world = two_organizations(shared)
    return {**world, "x": world["db"].channel("Bird", "x"), "gone": world["db"].channel("Gone", "x", deleted=True)}


def create(server, body, key: str | None = None) -> tuple:
    return library_create(server, "sets", body, key)


def made(server, body: dict, key: str | None = None) -> dict:
    return library_item(server, "sets", body, key)


def listed(server, key: str | None = None) -> list:
    return library_items(server, "sets", key)


def test_a_set_is_created_listed_changed_and_deleted(shared, world):
    sky, x = world["sky"], world["x"]
    body = {"name": "Launch", "channels": [sky, x, sky],
            "settings": {x: {"__type": "x", "who_can_reply_post": "everyone"}}}
    made_set = made(shared, body)
    assert set(made_set) == {"id", "name", "channels", "settings"}
    assert (made_set["name"], made_set["channels"], made_set["settings"]) == ("Launch", [sky, x], body["settings"])
    assert made_set in listed(shared)
    status, changed = api(shared, "PUT", f"{API}/sets/{made_set['id']}", {"name": "Launch 2", "channels": [x]})
    assert status == 200 and changed == {**made_set, "name": "Launch 2", "channels": [x]}
    assert api(shared, "PUT", f"{API}/sets/{made_set['id']}", {"settings": {}})[1]["settings"] == {}
    assert api(shared, "DELETE", f"{API}/sets/{made_set['id']}") == (200, {**changed, "settings": {}})
    assert made_set["id"] not in [item["id"] for item in listed(shared)]
    assert api(shared, "DELETE", f"{API}/sets/{made_set['id']}")[0] == 404
    assert made(shared, {"name": "Plain", "channels": [sky]})["settings"] == {}


def test_channels_must_be_the_organization_s_live_channels_and_say_nothing_of_others(shared, world):
    before = listed(shared)
    for strangers in ([world["theirs"]], ["no-such-channel"], [world["gone"]]):
        status, answer = create(shared, {"name": "Mixed", "channels": [world["sky"], *strangers]})
        assert status == 400 and answer["message"] == [
            f"channels: {strangers[0]!r} is not a channel of this organization (GET /public/v1/integrations lists "
            "them)"], answer
    status, answer = create(shared, {"name": "Theirs too", "channels": [world["theirs"], "nope"]})
    assert answer["message"] == [f"channels: {world['theirs']!r}, 'nope' are not channels of this organization "
                                 "(GET /public/v1/integrations lists them)"]
    channels_rule = "channels must be an array of 1 to 500 channel ids"
    for channels in ([], "a string", [1, 2], [None], ["x"] * 501):
        assert create(shared, {"name": "Bad", "channels": channels})[1]["message"] == [channels_rule]
    assert listed(shared) == before
    made_set = made(shared, {"name": "Mine", "channels": [world["sky"]]})
    status, answer = api(shared, "PUT", f"{API}/sets/{made_set['id']}", {"channels": [world["theirs"]]})
    assert status == 400 and "is not a channel of this organization" in answer["message"][0]
    assert made_set in listed(shared)


def test_settings_are_objects_by_the_set_s_channels_and_at_most_64_kib(shared, world):
    sky, x = world["sky"], world["x"]
    settings_rule = ("settings must be an object of each channel's settings object, by channel id, of at most "
                     "64 KiB as JSON")
    for settings in ([], "x", {sky: "text"}, {sky: [1]}, {sky: {"text": "x" * 65536}}):
        status, answer = create(shared, {"name": "Bad", "channels": [sky], "settings": settings})
        assert (status, answer["message"]) == (400, [settings_rule]), settings
    status, answer = create(shared, {"name": "Stray", "channels": [sky], "settings": {x: {}, world["theirs"]: {}}})
    assert (status, answer["message"]) == (400, [f"settings: {x!r}, {world['theirs']!r} are not of the set's "
                                                 "channels"])
    made_set = made(shared, {"name": "Both", "channels": [sky, x], "settings": {x: {"a": 1}}})
    status, answer = api(shared, "PUT", f"{API}/sets/{made_set['id']}", {"channels": [sky]})
    assert (status, answer["message"]) == (400, [f"settings: {x!r} is not one of the set's channels"])
    assert api(shared, "PUT", f"{API}/sets/{made_set['id']}", {"settings": {sky: {"b": 2}}})[1]["settings"] == {
        sky: {"b": 2}}
    assert made(shared, {"name": "Big", "channels": [sky], "settings": {sky: {"text": "x" * 60000}}})


def test_names_unknown_fields_and_bodies_that_are_not_objects_are_refused(shared, world):
    name_rule = "name must be a string of 1 to 100 characters (without line breaks or control characters)"
    cases = [({"name": "", "channels": [world["sky"]]}, [name_rule]),
             ({"name": "x" * 101, "channels": [world["sky"]]}, [name_rule]),
             ({"name": "A\tB", "channels": [world["sky"]]}, [name_rule]),
             ({"channels": [world["sky"]]}, ["name should not be null or undefined"]),
             ({"name": "No channels"}, ["channels should not be null or undefined"]),
             ({"name": "Ok", "channels": [world["sky"]], "integrations": []},
              ["property integrations should not exist"])]
    for body, problems in cases:
        assert create(shared, body) == (400, {"statusCode": 400, "message": problems, "error": "Bad Request"}), body
    assert create(shared, [world["sky"]])[1]["message"] == "The request body must be a JSON object"


def test_channels_deleted_since_drop_out_with_their_settings(shared, world):
    db = world["db"]
    doomed = db.channel("Doomed", "x")
    made_set = made(shared, {"name": "Soon smaller", "channels": [world["sky"], doomed],
                             "settings": {doomed: {"__type": "x"}}})
    assert api(shared, "DELETE", f"{API}/integrations/{doomed}")[0] == 200
    shown = next(item for item in listed(shared) if item["id"] == made_set["id"])
    assert (shown["channels"], shown["settings"]) == ([world["sky"]], {})
    assert api(shared, "PUT", f"{API}/sets/{made_set['id']}", {"name": "Smaller"})[1]["channels"] == [world["sky"]]


def test_another_organization_neither_sees_nor_reaches_our_sets(shared, world):
    ours = made(shared, {"name": "Ours", "channels": [world["sky"]]})
    other = world["other_key"]
    assert ours["id"] not in [item["id"] for item in listed(shared, other)]
    for method, body in (("PUT", {"name": "Taken"}), ("DELETE", None)):
        assert api(shared, method, f"{API}/sets/{ours['id']}", body, key=other) == (
            404, {"statusCode": 404, "message": "Set not found (GET /public/v1/sets lists this organization's)",
                  "error": "Not Found"})
    assert create(shared, {"name": "Stolen", "channels": [world["sky"]]}, other)[0] == 400
    assert made(shared, {"name": "Theirs", "channels": [world["theirs"]]}, other)["channels"] == [world["theirs"]]
    assert ours in listed(shared)


@pytest.mark.parametrize("scope", ["read", "drafts"])
def test_read_and_drafts_keys_list_sets_but_every_change_needs_the_scope_full(shared, world, scope):
    key = new_key(shared, f"sets-{scope}", scope)
    made_set = made(shared, {"name": f"For {scope}", "channels": [world["sky"]]})
    assert made_set in listed(shared, key)
    for method, path, body in (("POST", "/sets", {"name": "Agent", "channels": [world["sky"]]}),
                               ("PUT", f"/sets/{made_set['id']}", {"name": "Agent's"}),
                               ("DELETE", f"/sets/{made_set['id']}", None)):
        status, answer = api(shared, method, API + path, body, key=key)
        assert status == 403 and "needs the scope 'full'" in answer["message"], answer
    assert made_set in listed(shared)
