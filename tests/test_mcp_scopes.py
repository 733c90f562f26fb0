"""MCP with scoped keys: every tool needs a declared scope, a read or drafts key is refused (a tool error naming
the scope) what its scope does not allow, a drafts key's posts are drafts awaiting review whose rejection the
agent reads back with postGetTool, and tool calls are rate-limited per key."""
from __future__ import annotations

import json

import pytest

from conftest import LOCAL_FAKES
from support import API, api, iso, webhook_channel
from support import mcp_tool_call as call


@pytest.fixture(scope="module")
def shared(start_module_server):
    """Tool calls: at most 40 a minute per key, of which 3 that create posts."""
    return start_module_server(env={**LOCAL_FAKES, "RUSTIZ_MCP_TOOL_LIMIT": "40", "RUSTIZ_MCP_POST_LIMIT": "3"})


@pytest.fixture(scope="module")
def channel(shared, module_receiver) -> str:
    return webhook_channel(shared, module_receiver)


def new_key(server, name: str, scope: str) -> str:
    status, made = api(server, "POST", f"{API}/api-keys", {"name": name, "scope": scope})
    assert status == 201, made
    return made["apiKey"]


def schedule_arguments(channel: str, kind: str = "draft") -> dict:
    return {"socialPost": [{"integrationId": channel, "isPremium": False, "date": iso(86400), "shortLink": False,
                            "type": kind, "postsAndComments": [{"content": "<p>agent post</p>", "attachments": []}],
                            "settings": []}]}


def tool_names(server) -> list:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    status, _, body = server.request("POST", "/mcp", {"Authorization": server.key, "Content-Type": "application/json",
                                                      "Accept": "application/json, text/event-stream"},
                                     json.dumps(message).encode())
    assert status == 200
    return [tool["name"] for tool in json.loads(body)["result"]["tools"]]


def test_every_tool_has_a_declared_scope(shared):
    from rustiz_features.mcp_tools import TOOL_SCOPES
    assert sorted(tool_names(shared)) == sorted(TOOL_SCOPES)


@pytest.mark.parametrize("scope", ["read", "drafts"])
def test_every_tool_refuses_or_serves_a_narrow_key_as_its_declared_scope_says(shared, scope):
    from rustiz import SCOPES
    from rustiz_features.mcp_tools import TOOL_SCOPES
    key = new_key(shared, f"mcp-walk-{scope}", scope)
    wrong = []
    for name in tool_names(shared):
        result = call(shared, key, name, {})  # (arguments are checked after the scope)
        text = result["content"][0]["text"]
        refused = result["isError"] and f"needs the scope '{TOOL_SCOPES[name]}'" in text
        if refused != (SCOPES.index(scope) < SCOPES.index(TOOL_SCOPES[name])):
            wrong.append((name, text[:200]))
    assert wrong == []


def test_a_drafts_key_scheduling_gets_a_tool_error_and_its_draft_waits_for_review(shared, channel):
    key = new_key(shared, "mcp-agent", "drafts")
    refused = call(shared, key, "integrationSchedulePostTool", schedule_arguments(channel, "schedule"))
    assert refused["isError"] and "needs the scope 'full'" in refused["content"][0]["text"]
    created = call(shared, key, "integrationSchedulePostTool", schedule_arguments(channel))
    assert not created["isError"], created
    post_id = created["structuredContent"]["output"][0]["postId"]
    post = call(shared, key, "postGetTool", {"id": post_id})["structuredContent"]["output"]
    assert (post["state"], post["review"], post["reviewReason"]) == ("DRAFT", "review", None)
    assert api(shared, "POST", f"{API}/posts/{post_id}/reject", {"reason": "Add a picture"})[0] == 200
    post = call(shared, key, "postGetTool", {"id": post_id})["structuredContent"]["output"]
    assert (post["review"], post["reviewReason"]) == ("rejected", "Add a picture")


def test_a_key_over_the_post_tool_limit_is_told_when_to_retry(shared, channel):
    key = new_key(shared, "mcp-flood", "drafts")
    for _ in range(3):
        assert not call(shared, key, "integrationSchedulePostTool", schedule_arguments(channel))["isError"]
    refused = call(shared, key, "integrationSchedulePostTool", schedule_arguments(channel))
    text = refused["content"][0]["text"]
    assert refused["isError"] and text.startswith(
        "Too Many Requests: this API key made more than 3 MCP integrationSchedulePostTool calls in a minute "
        "(RUSTIZ_MCP_POST_LIMIT); try again in ") and text.endswith(" seconds. Nothing was done.")
    assert not call(shared, key, "integrationList", {})["isError"]  # other tools count against the wider limit
    other = new_key(shared, "mcp-other", "drafts")  # counted per key
    assert not call(shared, other, "integrationSchedulePostTool", schedule_arguments(channel))["isError"]


def test_a_key_over_the_tool_limit_is_refused_every_tool(shared):
    key = new_key(shared, "mcp-busy", "read")
    for _ in range(40):
        assert not call(shared, key, "groupList", {})["isError"]
    refused = call(shared, key, "groupList", {})
    assert refused["isError"] and "more than 40 MCP tool calls in a minute (RUSTIZ_MCP_TOOL_LIMIT)" in \
        refused["content"][0]["text"]
