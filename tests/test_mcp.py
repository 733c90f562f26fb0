"""The MCP server through the official MCP Python SDK (the `mcp` package on PyPI) as the client: its
Client in the default auto mode (server/discover, 2026-07-28) and in legacy mode (initialize), and its
SSE client on the legacy HTTP+SSE transport. Every tool is called; a thread with an image uploaded
through uploadFromUrlTool is scheduled, goes out to a local webhook receiver, and is read back."""
from __future__ import annotations

import asyncio
import json
import time
from contextlib import asynccontextmanager

import anyio
import httpx2
import jsonschema
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from fakes.wordpress import FakeWordPress
from support import FakeOrigin, api, connected, iso, png_file, webhook_channel

TOOL_NAMES = ["integrationList", "groupList", "integrationSchema", "triggerTool", "integrationSchedulePostTool",
              "postsListTool", "postSettingsTool", "uploadFromUrlTool", "postGetTool", "postRetryTool",
              "notificationsListTool"] + [f"{noun}{action}" for noun in ("tag", "signature", "set")
                                          for action in ("List", "Create", "Update", "Delete")] + [
              "duplicatePost", "listMedia", "updateMedia", "deleteMedia", "listPostComments", "addPostComment"]


@asynccontextmanager
async def sdk_client(server, mode: str = "auto", path: str | None = None, headers: dict | None = None):
    url = server.url + (path if path is not None else f"/mcp/{server.key}")
    async with httpx2.AsyncClient(headers=headers or {}, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


async def output(client, name: str, arguments: dict) -> dict:
    """A successful tool result: its structuredContent, which its text repeats and its outputSchema admits."""
    result = await client.call_tool(name, arguments)
    assert result.is_error is False, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def failure(client, name: str, arguments: dict) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error is True and result.structured_content is None
    return result.content[0].text


@pytest.fixture
def picture_host():
    """A local web server with one PNG at /picture.png, for uploadFromUrlTool."""
    host = FakeOrigin()
    host.serve("/picture.png", png_file(), "image/png")
    yield host
    host.close()


@pytest.fixture
def agent_server(start_server_with_fakes):
    """Fast retries, and the fakes on this machine allowed (the receiver, the picture host)."""
    return start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.2"})


@pytest.fixture
def server(start_server_with_fakes):
    """A server that may reach the fakes on this machine (the receiver)."""
    return start_server_with_fakes()


# --- connecting -------------------------------------------------------------------------------------

def test_the_default_auto_mode_discovers_the_2026_revision_without_a_failed_probe(server):
    async def scenario():
        async with sdk_client(server) as client:
            assert client.protocol_version == "2026-07-28"
            assert (client.server_info.name, client.server_info.version) == ("rustiz", "0.1.0")
            assert client.server_capabilities.tools is not None
            tools = (await client.list_tools()).tools
            assert [tool.name for tool in tools] == TOOL_NAMES
            assert await output(client, "integrationList", {}) == {"output": []}
    asyncio.run(scenario())


def test_legacy_mode_initializes_with_the_handshake(server):
    async def scenario():
        async with sdk_client(server, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info.name == "rustiz"
            assert client.server_capabilities.tools is not None and client.server_capabilities.logging is not None
            assert [tool.name for tool in (await client.list_tools()).tools] == TOOL_NAMES
            await client.send_ping()
            await client.set_logging_level("info")
            assert await output(client, "groupList", {}) == {"output": []}
    asyncio.run(scenario())


@pytest.mark.parametrize("prefix", ["", "/api"])
def test_the_key_can_come_in_an_authorization_header_instead_of_the_url(server, prefix):
    async def scenario(mode: str):
        async with sdk_client(server, mode, f"{prefix}/mcp", {"Authorization": f"Bearer {server.key}"}) as client:
            assert await output(client, "integrationList", {}) == {"output": []}
    asyncio.run(scenario("auto"))
    asyncio.run(scenario("legacy"))


def test_the_legacy_sse_transport_works(server):
    async def scenario():
        async with sse_client(f"{server.url}/sse/{server.key}") as (read, write):
            async with ClientSession(read, write) as session:
                initialized = await session.initialize()
                assert initialized.server_info.name == "rustiz"
                assert [tool.name for tool in (await session.list_tools()).tools] == TOOL_NAMES
                result = await session.call_tool("integrationSchema", {"isPremium": False, "platform": "x"})
                assert result.structured_content["output"]["maxLength"] == 280
    asyncio.run(scenario())


@pytest.mark.parametrize("change", ["revoke", "rotate"])
def test_a_legacy_sse_stream_ends_when_its_key_is_revoked_or_rotated(server, change):
    if change == "revoke":
        status, made = api(server, "POST", "/public/v1/api-keys", {"name": "agent", "scope": "full"})
        assert status == 201, made
        key = made["apiKey"]
    else:
        key = server.key

    async def scenario() -> list:
        async with sse_client(f"{server.url}/sse/{key}") as (read, _):  # (open once its endpoint event came)
            status, answer = (api(server, "DELETE", "/public/v1/api-keys/agent") if change == "revoke"
                              else api(server, "POST", "/public/v1/organization/api-key", {}))
            assert status in (200, 201), answer
            with anyio.fail_after(10):  # the stream ends: the client reads its end (or the error it ended with)
                return [message async for message in read]
    assert all(isinstance(item, Exception) for item in asyncio.run(scenario()))


def test_every_tool_schema_is_draft_07_json_schema(server):
    async def scenario():
        async with sdk_client(server, mode="legacy") as client:
            return (await client.list_tools()).tools
    for tool in asyncio.run(scenario()):
        for schema in (tool.input_schema, tool.output_schema):
            assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
            jsonschema.Draft7Validator.check_schema(schema)
            assert schema["type"] == "object"
        assert set(tool.annotations.model_dump(exclude_none=True)) == {
            "title", "read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"}


# --- what an agent does: upload, schedule a thread, read it back, see it published --------------------

def test_an_agent_schedules_a_thread_with_an_uploaded_image_and_reads_back_what_happened(agent_server, receiver,
                                                                                            picture_host):
    channel_id = webhook_channel(agent_server, receiver, "Hook")

    async def scenario():
        async with sdk_client(agent_server) as client:
            channels = await output(client, "integrationList", {})
            assert channels == {"output": [{"id": channel_id, "name": "Hook", "picture": "/no-picture.jpg",
                                            "platform": "webhook"}]}
            schema = await output(client, "integrationSchema", {"isPremium": False, "platform": "webhook"})
            assert set(schema["output"]) == {"rules", "maxLength", "settings", "tools"}
            media = await output(client, "uploadFromUrlTool", {"url": picture_host.url + "/picture.png"})
            assert set(media) == {"id", "path"} and media["path"].endswith(".png")
            scheduled = await output(client, "integrationSchedulePostTool", {"socialPost": [{
                "integrationId": channel_id, "isPremium": False, "date": iso(1), "shortLink": False,
                "type": "schedule", "settings": [],
                "postsAndComments": [{"content": "<p>the post</p>", "attachments": [media["path"]]},
                                     {"content": "<p>the reply</p>", "attachments": []}]}]})
            [created] = scheduled["output"]
            assert created["integration"] == channel_id
            listed = await output(client, "postsListTool", {"startDate": iso(-60)[:19], "endDate": iso(3600)[:19]})
            [item] = listed["output"]["posts"]
            assert item["id"] == created["postId"] and item["state"] == "QUEUE" and item["platform"] == "webhook"
            assert item["integrationName"] == "Hook" and len(item["publishDate"]) == 19
            assert item["settings"] == {"__type": "webhook"}
            deadline = time.monotonic() + 15
            while True:
                post = (await output(client, "postGetTool", {"id": created["postId"]}))["output"]
                if post["state"] == "PUBLISHED" and post["thread"][0]["state"] == "PUBLISHED":
                    break
                assert time.monotonic() < deadline, post
                await asyncio.sleep(0.1)
            assert post["creationMethod"] == "MCP" and post["releaseURL"] == f"{receiver.url}/m/1"
            assert post["image"][0]["path"] == media["path"]
            notes = (await output(client, "notificationsListTool", {}))["output"]
            assert notes["total"] >= 1 and notes["page"] == 0
            assert any("Published a post on Webhook" in note["content"] for note in notes["notifications"])
            return media

    media = asyncio.run(scenario())
    first, second = receiver.published
    assert (first["text"], second["text"]) == ("the post", "the reply")
    assert [item["url"] for item in first["media"]] == [media["path"]]


def test_a_failed_post_is_seen_and_retried_by_the_agent(agent_server, receiver):
    channel_id = webhook_channel(agent_server, receiver, "Hook")
    receiver.fail_next("POST", "/hook", 400, {"message": "not today"})

    async def scenario():
        async with sdk_client(agent_server, mode="legacy") as client:
            [created] = (await output(client, "integrationSchedulePostTool", {"socialPost": [{
                "integrationId": channel_id, "isPremium": False, "date": iso(0), "shortLink": False, "type": "now",
                "settings": [], "postsAndComments": [{"content": "<p>again</p>", "attachments": []}]}]}))["output"]
            deadline = time.monotonic() + 15
            while (post := (await output(client, "postGetTool", {"id": created["postId"]}))["output"])["state"] != "ERROR":
                assert time.monotonic() < deadline, post
                await asyncio.sleep(0.1)
            assert "not today" in post["error"]
            retried = (await output(client, "postRetryTool", {"id": created["postId"]}))["output"]
            assert retried["state"] == "QUEUE"
            deadline = time.monotonic() + 15
            while (await output(client, "postGetTool", {"id": created["postId"]}))["output"]["state"] != "PUBLISHED":
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            again = (await output(client, "postRetryTool", {"id": created["postId"]}))["output"]
            assert "only a post in ERROR can be retried" in again["errors"]
    asyncio.run(scenario())
    assert [item["text"] for item in receiver.published] == ["again"]


# --- each tool's answers and refusals ------------------------------------------------------------------

def test_integration_schema_follows_premium_and_answers_empty_for_an_unknown_platform(server):
    async def scenario():
        async with sdk_client(server) as client:
            x_free = await output(client, "integrationSchema", {"isPremium": False, "platform": "x"})
            x_premium = await output(client, "integrationSchema", {"isPremium": True, "platform": "x"})
            assert (x_free["output"]["maxLength"], x_premium["output"]["maxLength"]) == (280, 4000)
            assert x_free["output"]["settings"]["properties"]
            assert await output(client, "integrationSchema", {"isPremium": False, "platform": "myspace"}) == {
                "output": {"rules": "", "maxLength": 0, "settings": {}, "tools": []}}
    asyncio.run(scenario())


def test_groups_filter_the_integrations(server, receiver):
    status, channel = api(server, "POST", "/public/v1/integrations",
                          {"provider": "webhook", "credentials": receiver.credentials(), "customer": "Acme"})
    assert status == 201, channel

    async def scenario():
        async with sdk_client(server) as client:
            [group] = (await output(client, "groupList", {}))["output"]
            assert group["name"] == "Acme"
            listed = await output(client, "integrationList", {"group": group["id"]})
            assert [item["id"] for item in listed["output"]] == [channel["id"]]
            assert await output(client, "integrationList", {"group": "another"}) == {"output": []}
    asyncio.run(scenario())


def test_trigger_tool_runs_a_provider_helper_and_names_what_is_wrong(server, receiver):
    wordpress = FakeWordPress()
    try:
        wordpress_channel = connected(server, "wordpress", wordpress.credentials())["id"]
        webhook_id = webhook_channel(server, receiver, "Hook")

        async def scenario():
            async with sdk_client(server) as client:
                assert await output(client, "triggerTool", {"integrationId": wordpress_channel,
                                                            "methodName": "postTypes", "dataSchema": []}) == {
                    "output": [{"id": "posts", "name": "Posts"}, {"id": "pages", "name": "Pages"}]}
                assert await failure(client, "triggerTool", {"integrationId": wordpress_channel, "methodName": "nope",
                                                             "dataSchema": [{"key": "q", "value": "a"}]}) == (
                    'Method "nope" not found for this integration, use integrationSchema to get the callable tools')
                assert await failure(client, "triggerTool", {"integrationId": "nope", "methodName": "x",
                                                             "dataSchema": []}) == (
                    "Integration not found, use integrationList to get a valid integration id")
                # rustiz's own webhook provider is not one of Postiz's, so it has no helper tools (as over REST).
                assert (await failure(client, "triggerTool", {"integrationId": webhook_id, "methodName": "x",
                                                              "dataSchema": []})).startswith(
                    "Integration provider not found")
        asyncio.run(scenario())
    finally:
        wordpress.close()


def test_schedule_refusals_come_back_as_output_errors_and_nothing_is_stored(server, receiver):
    channel_id = webhook_channel(server, receiver, "Hook")

    def item(content: str, **changes) -> dict:
        return {"integrationId": channel_id, "isPremium": False, "date": iso(3600), "shortLink": False,
                "type": "schedule", "settings": [], "postsAndComments": [{"content": content, "attachments": []}],
                **changes}

    async def scenario():
        async with sdk_client(server) as client:
            refused = await output(client, "integrationSchedulePostTool",
                                   {"socialPost": [item("<p>fine</p>"), item("<p></p>")]})
            assert refused == {"output": {"errors": "Hook: Your post should have at least one character or one image."}}
            unknown = await output(client, "integrationSchedulePostTool", {"socialPost": [item("<p>x</p>",
                                                                                               integrationId="nope")]})
            assert unknown["output"]["errors"].startswith("Integration with id nope not found")
            bad_media = await output(client, "integrationSchedulePostTool", {"socialPost": [{
                **item("<p>x</p>"), "postsAndComments": [{"content": "<p>x</p>", "attachments": ["https://a.b/c.pdf"]}]}]})
            assert bad_media["output"]["errors"] == (
                "Hook: postsAndComments.0.attachments.0: File must have a valid extension: .png, .jpg, .jpeg, .gif, "
                ".webp, or .mp4, please fix it, and try integrationSchedulePostTool again.")
            too_many = await output(client, "integrationSchedulePostTool", {"socialPost": [item("<p>x</p>")] * 51})
            assert too_many["output"]["errors"].startswith("At most 50 posts per call")
            listed = await output(client, "postsListTool", {"startDate": iso(-60)[:19], "endDate": iso(7200)[:19]})
            assert listed == {"output": {"posts": []}}
            text = await failure(client, "integrationSchedulePostTool", {"socialPost": [item("<p>x</p>", type="later",
                                                                                             date=None)]})
            assert text.startswith("Tool validation failed. Please fix the following errors and try again:\n")
            assert "- socialPost.0.date: Expected string, received null" in text
            assert "- socialPost.0.type: Invalid enum value. Expected 'draft' | 'schedule' | 'now' | 'queue', received 'later'" \
                in text
            assert "\n\nProvided arguments: {\n" in text
            assert await failure(client, "postsListTool", {"startDate": "soon", "endDate": "later"}) == (
                "startDate must be a valid ISO 8601 date string; endDate must be a valid ISO 8601 date string, "
                "for example 2026-07-20T00:00:00")
    asyncio.run(scenario())


def test_the_schedule_tool_is_also_callable_by_the_name_postiz_documents(server, receiver):
    channel_id = webhook_channel(server, receiver, "Hook")

    async def scenario():
        async with sdk_client(server, mode="legacy") as client:
            created = await output(client, "schedulePostTool", {"socialPost": [{
                "integrationId": channel_id, "isPremium": False, "date": iso(3600), "shortLink": False, "type": "draft",
                "settings": [], "postsAndComments": [{"content": "<p>a draft</p>", "attachments": []}]}]})
            return created["output"][0]["postId"]
    post_id = asyncio.run(scenario())
    assert api(server, "GET", f"/public/v1/posts/{post_id}")[1]["state"] == "DRAFT"


def test_post_settings_tool_merges_settings_and_reports_errors(server, receiver):
    channel_id = webhook_channel(server, receiver, "Hook")

    async def scenario():
        async with sdk_client(server) as client:
            [created] = (await output(client, "integrationSchedulePostTool", {"socialPost": [{
                "integrationId": channel_id, "isPremium": False, "date": iso(3600), "shortLink": False,
                "type": "schedule", "settings": [], "postsAndComments": [{"content": "<p>x</p>", "attachments": []}]}]}))[
                "output"]
            changed = await output(client, "postSettingsTool", {"id": created["postId"],
                                                                "settings": [{"key": "note", "value": "kept"}]})
            assert changed["output"]["postId"] == created["postId"] and len(changed["output"]["publishDate"]) == 19
            unknown = await output(client, "postSettingsTool", {"id": "nope", "settings": []})
            assert unknown == {"output": {"errors": "Post not found"}}
            return created["postId"]
    post_id = asyncio.run(scenario())
    assert api(server, "GET", f"/public/v1/posts/{post_id}")[1]["settings"]["note"] == "kept"


def test_upload_from_url_refusals_are_an_error_field(start_server):
    server = start_server()  # the address guard as shipped: loopback refused

    async def scenario():
        async with sdk_client(server) as client:
            refused = await output(client, "uploadFromUrlTool", {"url": "http://127.0.0.1:9/x.png"})
            assert "loopback" in refused["error"] and set(refused) == {"error"}
            assert "Invalid url" in await failure(client, "uploadFromUrlTool", {"url": "not a url"})
    asyncio.run(scenario())


def test_unknown_tools_and_other_organizations_data(server, receiver):
    channel_id = webhook_channel(server, receiver, "Hook")

    async def scenario():
        async with sdk_client(server) as client:
            assert await failure(client, "generateImageTool", {"prompt": "a cat"}) == "Unknown tool: generateImageTool"
            [created] = (await output(client, "integrationSchedulePostTool", {"socialPost": [{
                "integrationId": channel_id, "isPremium": False, "date": iso(3600), "shortLink": False,
                "type": "draft", "settings": [], "postsAndComments": [{"content": "<p>mine</p>", "attachments": []}]}]}))[
                "output"]
            return created["postId"]
    post_id = asyncio.run(scenario())
    # A second organization's key sees none of it.
    from conftest import run_cli
    result = run_cli(server.pyz, "org", "add", "Second", env={"RUSTIZ_CONFIG": str(server.config_path)})
    assert result.returncode == 0, result.stderr
    other_key = [line.split()[-1] for line in result.stdout.splitlines() if len(line.split()[-1]) == 64][0]

    async def other():
        async with sdk_client(server, path=f"/mcp/{other_key}") as client:
            assert await output(client, "integrationList", {}) == {"output": []}
            assert "not found" in await failure(client, "postGetTool", {"id": post_id})
            assert await output(client, "postSettingsTool", {"id": post_id, "settings": []}) == {
                "output": {"errors": "Post not found"}}
            assert (await output(client, "integrationSchedulePostTool", {"socialPost": [{
                "integrationId": channel_id, "isPremium": False, "date": iso(3600), "shortLink": False, "type": "draft",
                "settings": [], "postsAndComments": [{"content": "<p>x</p>", "attachments": []}]}]}))["output"][
                "errors"].startswith(f"Integration with id {channel_id} not found")
    asyncio.run(other())
