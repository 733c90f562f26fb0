"""The duplicate rule: the same text on the same channel within 24 hours is refused (409 on POST /posts, a
tool error in MCP, a row error in imports) unless "allowDuplicate": true; over real sockets, both backends."""
from __future__ import annotations

import json

import pytest

from support import API, Database, api, channel_post, iso, png_file, post_body, uploaded


LATER = "2031-06-01T10:00:00.000Z"


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


def schedule(server, channel_id: str, content: str, date: str = LATER, **fields) -> tuple:
    return api(server, "POST", f"{API}/posts",
               post_body(channel_post(channel_id, content), type="schedule", date=date, **fields))


def live_roots(db: Database, channel_id: str) -> int:
    return db.row("SELECT COUNT(*) FROM post WHERE integration_id = ? AND deleted_at IS NULL "
                  "AND parent_post_id IS NULL", channel_id)[0]


def mcp_schedule(server, channel_id: str, content: str, **item) -> dict:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "integrationSchedulePostTool", "arguments": {"socialPost": [{
            "integrationId": channel_id, "isPremium": False, "date": LATER, "shortLink": False, "type": "schedule",
            "settings": [], "postsAndComments": [{"content": content, "attachments": []}], **item}]}}}
    status, _, answer = server.request("POST", f"/mcp/{server.key}", {"Content-Type": "application/json"},
                                       json.dumps(call).encode())
    assert status == 200, answer
    return json.loads(answer)["result"]


def test_the_same_text_queued_on_the_channel_is_refused_with_409_and_the_duplicates(server):
    db = Database(server)
    channel = db.channel("Dup", "bluesky")
    status, created = schedule(server, channel, "<p>Launch day</p>")
    assert status == 201
    status, answer = schedule(server, channel, "  Launch   day ", date="2031-06-01T20:00:00Z")
    assert status == 409
    assert answer["duplicates"] == [{"postId": created[0]["postId"], "integration": channel, "channel": "Dup",
                                     "publishDate": LATER, "state": "QUEUE"}]
    assert answer["message"] == (f"Duplicate post: the same text is already queued on channel Dup ({channel}) at "
                                 f"{LATER} (post {created[0]['postId']}); send \"allowDuplicate\": true to post anyway")
    assert live_roots(db, channel) == 1


def test_allow_duplicate_true_posts_anyway(server):
    db = Database(server)
    channel = db.channel("Dup allowed", "bluesky")
    assert schedule(server, channel, "<p>Again</p>")[0] == 201
    assert schedule(server, channel, "<p>Again</p>", allowDuplicate=True)[0] == 201
    assert live_roots(db, channel) == 2


def test_a_text_published_in_the_last_24_hours_is_a_duplicate_and_an_older_one_is_not(server):
    db = Database(server)
    channel = db.channel("Dup published", "bluesky")
    db.post(channel, iso(-23 * 3600), state="PUBLISHED", content="<p>Yesterday's news</p>", settings="{}")
    db.post(channel, iso(-26 * 3600), state="PUBLISHED", content="<p>Old news</p>", settings="{}")
    status, answer = schedule(server, channel, "<p>Yesterday's news</p>", date=iso(600))
    assert status == 409 and answer["duplicates"][0]["state"] == "PUBLISHED"
    assert "was published on channel Dup published" in answer["message"]
    assert schedule(server, channel, "<p>Old news</p>", date=iso(600))[0] == 201


def test_other_channels_drafts_failed_posts_and_media_alone_are_not_duplicates(server):
    db = Database(server)
    first, second = db.channel("Dup one", "bluesky"), db.channel("Dup two", "bluesky")
    image = uploaded(server, png_file())
    for _ in range(2):
        assert api(server, "POST", f"{API}/posts", post_body(channel_post(second, "", images=[image]), type="schedule",
                                                              date=LATER))[0] == 201
    assert schedule(server, first, "<p>Everywhere</p>")[0] == 201
    assert schedule(server, second, "<p>Everywhere</p>")[0] == 201
    db.post(first, LATER, state="ERROR", content="<p>Failed once</p>", settings="{}")
    assert schedule(server, first, "<p>Failed once</p>")[0] == 201
    assert api(server, "POST", f"{API}/posts", post_body(channel_post(first, "<p>Everywhere</p>"), type="draft",
                                                          date=LATER))[0] == 201


def test_the_mcp_schedule_tool_reports_a_duplicate_as_a_tool_error_unless_allowed(server):
    db = Database(server)
    channel = db.channel("Dup MCP", "bluesky")
    assert schedule(server, channel, "<p>From the agent</p>")[0] == 201
    result = mcp_schedule(server, channel, "<p>From the agent</p>")
    errors = result["structuredContent"]["output"]["errors"]
    assert errors.startswith("Dup MCP: Duplicate post: the same text is already queued on channel Dup MCP")
    assert 'send "allowDuplicate": true to post anyway' in errors
    assert live_roots(db, channel) == 1
    result = mcp_schedule(server, channel, "<p>From the agent</p>", allowDuplicate=True)
    assert result["isError"] is False and result["structuredContent"]["output"][0]["integration"] == channel
    assert live_roots(db, channel) == 2


def test_import_rows_that_repeat_a_post_or_an_earlier_row_fail_unless_allowed(server):
    db = Database(server)
    channel = db.channel("Dup import", "bluesky")
    assert schedule(server, channel, "<p>Stored</p>")[0] == 201
    rows = [post_body(channel_post(channel, content), type="schedule", date=LATER)
            for content in ("<p>Stored</p>", "<p>Twice</p>", "<p>Twice</p>")]
    status, answer = api(server, "POST", f"{API}/posts/import?dryRun=1", rows)
    assert status == 400 and [row["ok"] for row in answer["rows"]] == [False, True, False]
    assert "post " in answer["rows"][0]["errors"][0]
    assert "(row 2 of this import)" in answer["rows"][2]["errors"][0]
    rows[0]["allowDuplicate"] = True
    status, answer = api(server, "POST", f"{API}/posts/import?dryRun=1", rows)
    assert [row["ok"] for row in answer["rows"]] == [True, True, False]
    assert api(server, "POST", f"{API}/posts/import?allowDuplicate=1", rows)[0] == 201
    assert live_roots(db, channel) == 4
