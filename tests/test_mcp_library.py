"""MCP's library tools (tags, signatures, sets: list, create, update, delete; duplicatePost) through the MCP SDK,
whose client checks each answer against the tool's outputSchema: they do what the API's routes do, with the same
checks and refusals as tool errors, scoped to the key's organization and scope."""
from __future__ import annotations

import asyncio

import pytest

from support import API, api, new_key, two_organizations
from test_mcp import failure, output, sdk_client

FUTURE = "2031-03-01T09:30:00.000Z"


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server(env={"RUSTIZ_SCHEDULER": "0"})


@pytest.fixture(scope="module")
def world(shared) -> dict:
    return two_organizations(shared)


def with_client(server, scenario, key: str | None = None) -> None:
    async def run():
        async with sdk_client(server, path="/mcp", headers={"Authorization": f"Bearer {key or server.key}"}) as client:
            await scenario(client)
    asyncio.run(run())


def test_tags_are_listed_created_updated_and_deleted_as_the_api_does(shared, world):
    async def scenario(client):
        tag = (await output(client, "tagCreate", {"name": "Agentic", "color": "#123abc"}))["output"]
        assert (tag["name"], tag["color"]) == ("Agentic", "#123abc")
        assert tag in (await output(client, "tagList", {}))["output"]
        assert tag in api(shared, "GET", f"{API}/tags")[1]["tags"]
        changed = (await output(client, "tagUpdate", {"id": tag["id"], "color": "#000001"}))["output"]
        assert changed == {**tag, "color": "#000001"}
        assert (await failure(client, "tagCreate", {"name": "AGENTIC"})).startswith(
            "name: this organization already has a tag named 'Agentic'")
        assert await failure(client, "tagCreate", {"name": "x" * 51, "color": "blue"}) == (
            "name must be a string of 1 to 50 characters (without line breaks or control characters); "
            "color must be a colour written #RRGGBB, for example #3b82f6")
        assert (await output(client, "tagDelete", {"id": tag["id"]}))["output"] == changed
        assert (await failure(client, "tagDelete", {"id": tag["id"]})).startswith("Tag not found")
        assert "Required" in await failure(client, "tagCreate", {"color": "#000000"})
    with_client(shared, scenario)


def test_signatures_keep_one_auto_added_through_mcp_too(shared, world):
    async def scenario(client):
        first = (await output(client, "signatureCreate", {"content": "-- one", "autoAdd": True}))["output"]
        second = (await output(client, "signatureCreate", {"content": "-- two"}))["output"]
        assert second["autoAdd"] is False
        await output(client, "signatureUpdate", {"id": second["id"], "autoAdd": True})
        listed = (await output(client, "signatureList", {}))["output"]
        assert [item["id"] for item in listed if item["autoAdd"]] == [second["id"]]
        assert first["id"] in [item["id"] for item in listed]
        assert (await failure(client, "signatureUpdate", {"id": first["id"]})).startswith("give at least one of")
        await output(client, "signatureDelete", {"id": first["id"]})
    with_client(shared, scenario)


def test_sets_take_only_the_organization_s_channels(shared, world):
    sky, theirs = world["sky"], world["theirs"]

    async def scenario(client):
        made = (await output(client, "setCreate", {"name": "Mine", "channels": [sky],
                                                   "settings": {sky: {"__type": "bluesky"}}}))["output"]
        assert (made["channels"], made["settings"]) == ([sky], {sky: {"__type": "bluesky"}})
        assert (await failure(client, "setCreate", {"name": "Theirs", "channels": [theirs]})) == (
            f"channels: {theirs!r} is not a channel of this organization (GET /public/v1/integrations lists them)")
        assert (await failure(client, "setUpdate", {"id": made["id"], "channels": [sky, theirs]})).startswith(
            "channels:")
        assert (await output(client, "setUpdate", {"id": made["id"], "name": "Renamed"}))["output"]["name"] == "Renamed"
        assert [item["name"] for item in (await output(client, "setList", {}))["output"]] == ["Renamed"]
        await output(client, "setDelete", {"id": made["id"]})
        assert (await output(client, "setList", {}))["output"] == []
    with_client(shared, scenario)


def test_another_organization_s_key_reaches_none_of_ours(shared, world):
    tag = api(shared, "POST", f"{API}/tags", {"name": "Private"})[1]
    post_id = world["db"].post(world["sky"], FUTURE)

    async def scenario(client):
        assert "Private" not in [item["name"] for item in (await output(client, "tagList", {}))["output"]]
        assert (await failure(client, "tagUpdate", {"id": tag["id"], "name": "Mine"})).startswith("Tag not found")
        assert (await failure(client, "tagDelete", {"id": tag["id"]})).startswith("Tag not found")
        assert await failure(client, "duplicatePost", {"id": post_id}) == "Post not found"
    with_client(shared, scenario, world["other_key"])
    assert tag in api(shared, "GET", f"{API}/tags")[1]["tags"]


def test_duplicate_post_copies_a_thread_as_drafts_and_a_drafts_key_s_copy_awaits_review(shared, world):
    ids = world["db"].thread(world["sky"], FUTURE, ["<p>first</p>", "<p>reply</p>"], settings='{"__type":"bluesky"}')
    agent = new_key(shared, "library-agent", "drafts")

    async def scenario(client):
        copy = (await output(client, "duplicatePost", {"id": ids[0]}))["output"]
        assert len(copy["posts"]) == 2 and copy["posts"][1]["parentPostId"] == copy["posts"][0]["id"]
        post = (await output(client, "postGetTool", {"id": copy["posts"][0]["id"]}))["output"]
        assert (post["state"], post["review"], post["content"]) == ("DRAFT", "review", "<p>first</p>")
        assert [part["content"] for part in post["thread"]] == ["<p>reply</p>"]
        refused = await failure(client, "tagCreate", {"name": "Agent's"})
        assert "has the scope 'drafts'" in refused and "needs the scope 'full'" in refused
        assert (await output(client, "tagList", {}))["output"] is not None
    with_client(shared, scenario, agent)
    assert api(shared, "GET", f"{API}/posts/{ids[0]}")[1]["state"] == "QUEUE"


@pytest.mark.parametrize("tool, arguments", [("tagCreate", {"name": "Read"}), ("setDelete", {"id": "x"}),
                                             ("signatureUpdate", {"id": "x", "content": "y"}),
                                             ("duplicatePost", {"id": "x"})])
def test_a_read_key_lists_but_is_refused_every_change(shared, world, tool, arguments):
    reader = new_key(shared, f"library-reader-{tool}", "read")

    async def scenario(client):
        assert isinstance((await output(client, "signatureList", {}))["output"], list)
        refused = await failure(client, tool, arguments)
        assert "has the scope 'read'" in refused and f"the MCP tool {tool} needs the scope" in refused
    with_client(shared, scenario, reader)
