"""Postiz's clients see OAuth channels unchanged: an agent on MCP (the official MCP Python SDK) lists a
Reddit channel connected through the platform's consent, asks for its tools, schedules a post to it, and
reads back that it went out."""
from __future__ import annotations

import asyncio
import time

import pytest

from fakes.reddit import FakeReddit
from support import api, iso
from test_mcp import output, sdk_client
from test_oauth_refresh import connect_reddit, reddit_env


@pytest.fixture
def reddit():
    fake = FakeReddit()
    yield fake
    fake.close()


def test_an_agent_lists_an_oauth_channel_uses_its_tools_and_schedules_to_it(start_server_with_fakes, reddit):
    server = start_server_with_fakes(env=reddit_env(reddit))
    channel_id = connect_reddit(server)
    subreddit = {"subreddit": "python", "title": "From an agent", "type": "self", "url": "",
                 "is_flair_required": False}

    async def scenario() -> dict:
        async with sdk_client(server) as client:
            channels = (await output(client, "integrationList", {}))["output"]
            assert [(c["id"], c["platform"], c["name"]) for c in channels] == [(channel_id, "reddit", "ada_lovelace")]
            found = await output(client, "triggerTool", {"integrationId": channel_id, "methodName": "subreddits",
                                                         "dataSchema": [{"key": "word", "value": "python"}]})
            assert any(item["name"] == "/r/python/" for item in found["output"])
            created = await output(client, "integrationSchedulePostTool", {"socialPost": [{
                "integrationId": channel_id, "isPremium": False, "date": iso(1), "shortLink": False,
                "type": "schedule", "settings": [{"key": "subreddit", "value": [{"value": subreddit}]}],
                "postsAndComments": [{"content": "<p>Hello from MCP</p>", "attachments": []}]}]})
            post_id = created["output"][0]["postId"]
            deadline = time.monotonic() + 20
            while True:
                post = (await output(client, "postGetTool", {"id": post_id}))["output"]
                if post["state"] in ("PUBLISHED", "ERROR"):
                    return post
                assert time.monotonic() < deadline, post
                await asyncio.sleep(0.2)

    post = asyncio.run(scenario())
    assert post["state"] == "PUBLISHED", post
    assert post["releaseURL"].startswith(reddit.url + "/r/python/comments/")
    status, listed = api(server, "GET", "/public/v1/integrations")
    assert [(c["id"], c["identifier"]) for c in listed] == [(channel_id, "reddit")]
