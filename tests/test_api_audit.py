"""The audit log (rustiz_features/audit.py): every change made through the API, a web session or MCP is an
entry with who, what, on what and from where; GET /public/v1/audit lists them for admins (filters, pages,
never another organization's); old entries are forgotten after RUSTIZ_AUDIT_DAYS; and every route of the
route table and every MCP tool that changes something declares its action, or is named below with why not."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
import urllib.parse

import pytest

import rustiz
from conftest import LOCAL_FAKES
from support import (API, api, channel_post, connect_database, consent_link, iso, library_item, mcp_tool_call, new_key,
                     png_file, post_body, redirect_query, two_organizations, uploaded, visit, wait_for, webhook_channel)

DEFAULT_KEY = {"type": "key", "id": "default", "name": "default", "email": None}
# Routes that change nothing an admin audits, each with the reason (every other non-GET route declares its action)
NOT_AUDITED = {
    ("POST", "/integrations/telegram/updates"): "Telegram's own updates for the operator's bot, checked by their "
                                                 "secret; a channel a /connect code makes is told to the "
                                                 "organization as a notification",
    ("POST", "/integration-trigger/:id"): "a platform's helper lookup (boards, subreddits): it reads, changes nothing",
    ("POST", "/upload"): "an upload adds a file; the post that uses it is what is audited",
    ("POST", "/upload-from-url"): "an upload adds a file; the post that uses it is what is audited",
    ("POST", "/mcp"): "MCP: each tool call that changes something is recorded by the tools' dispatch",
    ("POST", "/mcp/:apiKey"): "MCP: each tool call that changes something is recorded by the tools' dispatch",
    ("POST", "/message/:apiKey"): "MCP (legacy SSE): tool calls are recorded by the tools' dispatch",
    ("DELETE", "/mcp"): "ends an MCP session: a connection, not a change",
    ("DELETE", "/mcp/:apiKey"): "ends an MCP session: a connection, not a change",
    ("PUT", "/mcp"): "405: MCP takes POST", ("PATCH", "/mcp"): "405: MCP takes POST",
    ("PUT", "/mcp/:apiKey"): "405: MCP takes POST", ("PATCH", "/mcp/:apiKey"): "405: MCP takes POST",
    ("POST", "/auth/login"): "signing in starts a session: no change of the organization's data",
    ("POST", "/auth/logout"): "signing out ends a session: no change of the organization's data",
    ("POST", "/auth/switch"): "a session moves to another of the person's organizations: no change of their data",
    ("PUT", "/me/notifications"): "a person's own e-mail preferences, not the organization's data",
    ("POST", "/auth/invite"): "open to anyone: accepting an invite records itself (invite.accepted, the person)",
    ("POST", "/auth/forgot"): "asks for a reset link: no change of the organization's data",
    ("POST", "/auth/reset"): "a person's own password (every session ends), not the organization's data",
    ("POST", "/autopost/preview"): "shows what a feed would post: it saves nothing",
    # a client's review page (no key, no session): each action records itself (audit.record, actor "client")
    **{("POST", f"/p/:token/{action}"): "a client's review page: it records itself as the client"
       for action in ("comment", "approve", "request-changes")},
    # rustiz's OAuth server for MCP clients (issue 27): no key, no session but the consent form's
    ("POST", "/oauth/register"): "a client registers itself (no organization): a grant is what is audited",
    ("POST", "/oauth/authorize"): "the consent form records the grant itself (oauth_client.granted, the person)",
    ("POST", "/oauth/token"): "tokens issued for a grant already recorded",
    ("POST", "/oauth/revoke"): "a client gives up its own token (the organization's revocation is audited)",
}
TOOLS_NOT_AUDITED = {
    "triggerTool": "a platform's helper lookup: it reads, changes nothing",
    "uploadFromUrlTool": "an upload adds a file; the post that uses it is what is audited",
}


def handler_options(module: str, handler: str) -> dict:
    owner, _, method = handler.partition(".")
    return getattr(getattr(importlib.import_module("rustiz_features." + module), owner), method).__dict__.get(
        "route_options", {})


def test_every_route_that_changes_something_declares_its_audit_action():
    tables = [(method, path, module, handler) for method, path, module, handler in rustiz.API_ROUTES]
    tables += [(method, path, module, handler) for methods, path, module, handler in rustiz.OTHER_ROUTES
               for method in methods.split()]
    tables += list(rustiz.ROOT_ROUTES)
    undeclared, needless = [], []
    for method, path, module, handler in tables:
        if method in ("GET", "HEAD", "OPTIONS"):
            continue
        options = handler_options(module, handler)
        action = options.get("audit")
        # (the router records with the organization the key or session gave: a route without one records itself)
        assert not (action and options.get("authenticated") is False), f"{method} {path}: use audit.record"
        if not action and (method, path) not in NOT_AUDITED:
            undeclared.append(f"{method} {path}")
        if action and (method, path) in NOT_AUDITED:
            needless.append(f"{method} {path}")
        assert not action or action.count(".") == 1 and action.replace(".", "").replace("_", "").isalpha(), action
    assert not undeclared, f"declare @route_options(audit=...) or name the route in NOT_AUDITED: {undeclared}"
    assert not needless, needless


def test_every_mcp_tool_that_changes_something_has_an_audit_action():
    from rustiz_features.mcp_tools import TOOL_ACTIONS, TOOL_SCOPES
    changing = {name for name, scope in TOOL_SCOPES.items() if scope != "read"}
    assert changing - set(TOOL_ACTIONS) - set(TOOLS_NOT_AUDITED) == set()
    assert set(TOOL_ACTIONS) <= set(TOOL_SCOPES)


def test_retention_is_a_setting_checked_at_start():
    assert rustiz.config_from_values("/tmp/config.env", {}, {}).audit_days == 365
    assert rustiz.config_from_values("/tmp/config.env", {"RUSTIZ_AUDIT_DAYS": "30"}, {}).audit_days == 30
    for wrong in ("0", "-1", "abc", "100000"):
        with pytest.raises(rustiz.UserError, match="RUSTIZ_AUDIT_DAYS"):
            rustiz.config_from_values("/tmp/config.env", {"RUSTIZ_AUDIT_DAYS": wrong}, {})


# --- through a running server ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared(start_module_server, module_receiver):
    server = start_module_server(env=LOCAL_FAKES)
    return {"server": server, **two_organizations(server)}


def audit(server, key: str | None = None, **query) -> tuple:
    return api(server, "GET", f"{API}/audit" + ("?" + urllib.parse.urlencode(query) if query else ""), key=key)


def newest(server, count: int = 1, key: str | None = None) -> list:
    """The `count` newest entries, newest first."""
    status, answer = audit(server, key)
    assert status == 200 and set(answer) == {"entries", "pages"}, answer
    return answer["entries"][:count]


def made(server, action: str, subject_type: str, subject_id: str, actor: dict = DEFAULT_KEY) -> dict:
    """The newest entry, which must be this one."""
    entry, = newest(server)
    assert set(entry) == {"id", "at", "actor", "action", "subject", "address"}, entry
    assert (entry["action"], entry["subject"], entry["actor"], entry["address"]) == (
        action, {"type": subject_type, "id": subject_id}, actor, "127.0.0.1"), entry
    assert abs(rustiz.parse_iso_instant(entry["at"]).timestamp() - time.time()) < 60, entry
    return entry


def ok(status_and_answer: tuple, *statuses: int) -> dict:
    status, answer = status_and_answer
    assert status in (statuses or (200, 201)), answer
    return answer


def draft(server, channel_id: str, key: str | None = None) -> str:
    answer = ok(api(server, "POST", f"{API}/posts", post_body(channel_post(channel_id, "<p>Audit me</p>"),
                                                               type="draft", date=iso(86400)), key=key), 201)
    return answer[0]["postId"]


def test_every_change_through_the_api_is_an_entry_with_its_actor_action_subject_and_address(shared, module_receiver):
    server, sky, db = shared["server"], shared["sky"], shared["db"]
    post_id = draft(server, sky)
    made(server, "post.created", "post", post_id)
    ok(api(server, "PUT", f"{API}/posts/{post_id}", {"content": "<p>Edited</p>"}))
    made(server, "post.edited", "post", post_id)
    ok(api(server, "PUT", f"{API}/posts/{post_id}/settings", {"settings": {}}))
    made(server, "post.edited", "post", post_id)
    ok(api(server, "PUT", f"{API}/posts/{post_id}/status", {"status": "draft"}))
    made(server, "post.status_changed", "post", post_id)
    ok(api(server, "POST", f"{API}/posts/{post_id}/duplicate"))
    made(server, "post.duplicated", "post", post_id)
    with connect_database(server.database) as connection:
        connection.execute("UPDATE post SET state = 'ERROR' WHERE id = ?", (post_id,))
    ok(api(server, "POST", f"{API}/posts/{post_id}/retry"))
    made(server, "post.retried", "post", post_id)
    ok(api(server, "DELETE", f"{API}/posts/{post_id}"))
    made(server, "post.deleted", "post", post_id)
    group = ok(api(server, "GET", f"{API}/posts/{draft(server, sky)}"))["group"]
    ok(api(server, "DELETE", f"{API}/posts/group/{group}"))
    made(server, "post.deleted", "group", group)

    imported = [post_body(channel_post(sky, f"<p>Imported {number}</p>"), type="draft", date=iso(86400))
                for number in range(2)]
    ok(api(server, "POST", f"{API}/posts/import?dryRun=1", imported), 200)
    assert newest(server)[0]["action"] == "post.deleted"  # a dry run changes nothing
    report = ok(api(server, "POST", f"{API}/posts/import", imported), 201)
    ids = [post["postId"] for row in report["rows"] for post in row["posts"]]
    assert sorted(entry["subject"]["id"] for entry in newest(server, 2)) == sorted(ids)
    assert {entry["action"] for entry in newest(server, 2)} == {"post.imported"}

    agent = new_key(server, "reviewer-agent", "drafts")
    keys = ok(api(server, "GET", f"{API}/api-keys"))["keys"]
    agent_id = next(key["id"] for key in keys if key["name"] == "reviewer-agent")
    made(server, "key.created", "key", agent_id)
    waiting = draft(server, sky, key=agent)
    made(server, "post.created", "post", waiting, {"type": "key", "id": agent_id, "name": "reviewer-agent",
                                                   "email": None})
    ok(api(server, "POST", f"{API}/posts/{waiting}/reject", {"reason": "Too long"}))
    made(server, "post.rejected", "post", waiting)
    ok(api(server, "POST", f"{API}/posts/{waiting}/approve", {"date": iso(7200)}))
    made(server, "post.approved", "post", waiting)
    ok(api(server, "DELETE", f"{API}/api-keys/{agent_id}"))
    made(server, "key.revoked", "key", agent_id)

    channel = webhook_channel(server, module_receiver, "Audit hook")
    made(server, "channel.connected", "channel", channel)
    same_account = {**module_receiver.credentials(), "url": module_receiver.url + "/hook"}
    assert ok(api(server, "POST", f"{API}/integrations", {"provider": "webhook", "credentials": same_account}), 200)[
        "reconnected"] is True
    made(server, "channel.reconnected", "channel", channel)
    ok(api(server, "PUT", f"{API}/integrations/{channel}", {"name": "Renamed hook"}))
    made(server, "channel.updated", "channel", channel)
    ok(api(server, "DELETE", f"{API}/integrations/{channel}"))
    made(server, "channel.deleted", "channel", channel)

    hook = ok(api(server, "POST", f"{API}/webhooks", {"url": "https://n8n.example.com/hook"}), 201)
    made(server, "webhook.created", "webhook", hook["id"])
    ok(api(server, "DELETE", f"{API}/webhooks/{hook['id']}"))
    made(server, "webhook.deleted", "webhook", hook["id"])

    organization = ok(api(server, "GET", f"{API}/organization"))["id"]
    ok(api(server, "PUT", f"{API}/organization", {"name": "Audited org"}))
    made(server, "organization.updated", "organization", organization)
    ok(api(server, "PUT", f"{API}/alerts", {"lateMinutes": 30}))
    made(server, "alerts.updated", "organization", organization)

    for area, noun, body, change in (("tags", "tag", {"name": "audited"}, {"name": "audited-2"}),
                                     ("signatures", "signature", {"content": "<p>Bye</p>"}, {"content": "<p>Ciao</p>"}),
                                     ("sets", "set", {"name": "Audited set", "channels": [sky]}, {"name": "Set 2"})):
        item = library_item(server, area, body)
        made(server, f"{noun}.created", noun, item["id"])
        ok(api(server, "PUT", f"{API}/{area}/{item['id']}", change))
        made(server, f"{noun}.updated", noun, item["id"])
        ok(api(server, "DELETE", f"{API}/{area}/{item['id']}"))
        made(server, f"{noun}.deleted", noun, item["id"])

    first, second = uploaded(server, png_file()), uploaded(server, png_file(2, 2))
    ok(api(server, "PUT", f"{API}/media/{first['id']}", {"alt": "A pixel"}))
    made(server, "media.updated", "media", first["id"])
    ok(api(server, "DELETE", f"{API}/media/{first['id']}"))
    made(server, "media.deleted", "media", first["id"])
    ok(api(server, "POST", f"{API}/media/delete", {"ids": [second["id"], "no-such-media"]}))
    made(server, "media.deleted", "media", second["id"])  # (the unknown id deleted nothing: no entry)


def test_an_oauth_channel_connected_then_reconnected_in_the_browser_is_recorded(shared):
    from fakes.mastodon import FakeMastodon
    server, mastodon = shared["server"], FakeMastodon()
    try:
        def through_consent(refresh: str = "") -> dict:
            query = f"?instance={mastodon.url}" + (f"&refresh={refresh}" if refresh else "")
            started = ok(api(server, "GET", f"{API}/social/mastodon{query}"))
            link = urllib.parse.urlsplit(consent_link(started["url"]))
            return redirect_query(visit(server, link.path + "?" + link.query)[1]["location"])
        back = through_consent()
        assert back["notice"] == "connected", back
        made(server, "channel.connected", "channel", back["channel"])  # (the browser signed in with the key)
        again = through_consent(back["channel"])
        assert again["notice"] == "reconnected", again
        made(server, "channel.reconnected", "channel", back["channel"])
        denied = urllib.parse.urlsplit(consent_link(ok(api(server, "GET", f"{API}/social/mastodon?instance="
                                                                         f"{mastodon.url}"))["url"], "deny"))
        visit(server, denied.path + "?" + denied.query)
        assert newest(server)[0]["action"] == "channel.reconnected"  # a refused consent connects nothing
    finally:
        mastodon.close()


def test_a_refused_change_makes_no_entry(shared):
    server = shared["server"]
    before = newest(server)
    assert api(server, "DELETE", f"{API}/posts/no-such-post")[0] == 404
    assert api(server, "POST", f"{API}/tags", {"name": ""})[0] == 400
    read_key = new_key(server, "audit-reader", "read")
    assert api(server, "POST", f"{API}/tags", {"name": "nope"}, key=read_key)[0] == 403
    assert newest(server)[0]["action"] == "key.created" and newest(server, 2)[1] == before[0]


def test_a_post_made_on_two_channels_is_one_entry_per_post_group(shared):
    server, sky, db = shared["server"], shared["sky"], shared["db"]
    other = db.channel("Second sky", "bluesky")
    answer = ok(api(server, "POST", f"{API}/posts", post_body(channel_post(sky, "<p>One</p>"),
                                                               channel_post(other, "<p>Two</p>"), type="draft",
                                                               date=iso(86400))), 201)
    entries = newest(server, 2)
    assert {entry["subject"]["id"] for entry in entries} == {item["postId"] for item in answer}
    assert {entry["action"] for entry in entries} == {"post.created"}


def test_a_replayed_idempotent_request_makes_no_second_entry(shared):
    server, sky = shared["server"], shared["sky"]
    body = post_body(channel_post(sky, "<p>Once</p>"), type="draft", date=iso(86400))
    first = ok(api(server, "POST", f"{API}/posts", body, headers={"Idempotency-Key": "audit-once"}), 201)
    again = ok(api(server, "POST", f"{API}/posts", body, headers={"Idempotency-Key": "audit-once"}), 201)
    assert first == again
    entries = newest(server, 2)
    assert entries[0]["subject"]["id"] == first[0]["postId"] and entries[1]["subject"]["id"] != first[0]["postId"]


def sign_in(server, body: dict) -> tuple:
    status, headers, answer = server.request("POST", "/auth/login", {"Content-Type": "application/json"},
                                             json.dumps(body).encode())
    assert status == 200, answer
    return {"Cookie": headers["set-cookie"].partition(";")[0], "X-CSRF-Token": json.loads(answer)["csrfToken"]}


def session_call(server, session: dict, method: str, path: str, body=None) -> tuple:
    status, _, answer = server.request(method, path, {"Content-Type": "application/json", **session},
                                       None if body is None else json.dumps(body).encode())
    return status, json.loads(answer) if answer else None


def test_a_person_signed_in_with_a_password_is_the_actor_of_their_changes(shared):
    server = shared["server"]
    added = subprocess.run([sys.executable, str(server.pyz), "user", "add", "ada@example.com"],
                           input="correct horse battery\n", capture_output=True, text=True, env=server.env(), timeout=30)
    assert added.returncode == 0, added.stderr
    session = sign_in(server, {"email": "ada@example.com", "password": "correct horse battery"})
    tag = ok(session_call(server, session, "POST", f"{API}/tags", {"name": "by-ada"}), 201)
    entry, = newest(server)
    assert entry["action"] == "tag.created" and entry["subject"] == {"type": "tag", "id": tag["id"]}
    assert entry["actor"]["type"] == "user" and entry["actor"]["email"] == "ada@example.com" and entry["actor"]["id"]
    by_key = sign_in(server, {"apiKey": server.key})  # a session signed in with the organization's key
    ok(session_call(server, by_key, "DELETE", f"{API}/tags/{tag['id']}"))
    made(server, "tag.deleted", "tag", tag["id"])
    # The person's entries keep saying who, after the person is removed
    removed = subprocess.run([sys.executable, str(server.pyz), "user", "remove", "ada@example.com"],
                             capture_output=True, text=True, env=server.env(), timeout=30)
    assert removed.returncode == 0, removed.stderr
    status, answer = audit(server, actor=entry["actor"]["id"])
    assert status == 200 and [found["actor"]["email"] for found in answer["entries"]] == ["ada@example.com"]


def test_an_agent_s_mcp_tool_call_is_an_entry_of_its_key(shared):
    server = shared["server"]
    agent = new_key(server, "claude", "full")
    agent_id = next(key["id"] for key in ok(api(server, "GET", f"{API}/api-keys"))["keys"] if key["name"] == "claude")
    result = mcp_tool_call(server, agent, "tagCreate", {"name": "from-mcp"})
    assert result["isError"] is False, result
    tag_id = result["structuredContent"]["output"]["id"]
    made(server, "tag.created", "tag", tag_id, {"type": "mcp", "id": agent_id, "name": "claude", "email": None})
    failed = mcp_tool_call(server, agent, "tagDelete", {"id": "no-such-tag"})
    assert failed["isError"] is True or "errors" in failed["structuredContent"]["output"]
    assert newest(server)[0]["subject"]["id"] == tag_id  # a failed call records nothing
    assert mcp_tool_call(server, agent, "tagList", {})["isError"] is False
    assert newest(server)[0]["subject"]["id"] == tag_id  # nor does a read


def test_filters_by_actor_and_by_action_or_kind(shared):
    server = shared["server"]
    tagger = new_key(server, "tagger", "full")
    tagger_id = next(key["id"] for key in ok(api(server, "GET", f"{API}/api-keys"))["keys"] if key["name"] == "tagger")
    for number in range(3):
        library_item(server, "tags", {"name": f"filter-{number}"}, key=tagger)
    by_tagger = ok(audit(server, actor=tagger_id))
    assert [entry["action"] for entry in by_tagger["entries"]] == ["tag.created"] * 3 and by_tagger["pages"] == 1
    assert all(entry["actor"]["name"] == "tagger" for entry in by_tagger["entries"])
    assert {entry["action"] for entry in ok(audit(server, action="tag"))["entries"]} <= {
        "tag.created", "tag.updated", "tag.deleted"}
    assert {entry["action"] for entry in ok(audit(server, action="tag.created"))["entries"]} == {"tag.created"}
    assert ok(audit(server, action="nothing.done")) == {"entries": [], "pages": 0}
    actors = ok(api(server, "GET", f"{API}/audit/actors"))["actors"]
    assert {"type": "key", "id": tagger_id, "name": "tagger", "email": None} in actors
    assert {"type": "key", "id": "default", "name": "default", "email": None} in actors


@pytest.mark.parametrize("query, field", [
    ("page=0", "page"), ("page=-1", "page"), ("page=abc", "page"), ("page=1.5", "page"), ("page=" + "9" * 5000, "page"),
    ("action=POST.DELETED", "action"), ("action=post.", "action"), ("action=a.b.c", "action"),
    ("action=" + "a" * 100, "action"), ("actor=" + "x" * 300, "actor"), ("actor=%01", "actor"),
])
def test_wrong_query_parameters_are_400s_naming_the_field(shared, query, field):
    status, answer = api(shared["server"], "GET", f"{API}/audit?{query}")
    assert status == 400 and " ".join(answer["message"]).startswith(field), answer


def test_fuzzed_query_parameters_never_fail_the_server(shared):
    server = shared["server"]
    values = ["", "%00", "%ff%fe", "' OR 1=1 --", "🙂" * 50, "post.%", "_", "%25", "1e9", "null", "[]", "a" * 4000]
    for name in ("page", "actor", "action", "unknown"):
        for value in values:
            status, _ = api(server, "GET", f"{API}/audit?{name}={urllib.parse.quote(value, safe='%')}")
            assert status in (200, 400), (name, value, status)


def test_only_a_full_key_reads_the_log(shared):
    server = shared["server"]
    for scope in ("read", "drafts"):
        key = new_key(server, f"audit-{scope}", scope)
        for path in ("/audit", "/audit/actors"):
            status, answer = api(server, "GET", f"{API}{path}", key=key)
            assert status == 403, answer
    assert api(server, "GET", f"{API}/audit", key="not-a-key")[0] == 401


def test_another_organization_s_entries_are_never_listed(shared):
    server, other_key = shared["server"], shared["other_key"]
    theirs = shared["db"].channel("Their sky", "bluesky", organization_id=shared["other_org"])
    their_tag = library_item(server, "tags", {"name": "theirs"}, key=other_key)
    their_entries = ok(audit(server, other_key))["entries"]
    assert [entry["subject"]["id"] for entry in their_entries] == [their_tag["id"]]
    ours = ok(audit(server))
    assert their_tag["id"] not in {entry["subject"]["id"] for entry in ours["entries"] if entry["subject"]}
    assert ok(audit(server, actor="default"))["entries"][0]["subject"]["id"] != their_tag["id"]
    assert all(entry["subject"]["id"] != their_tag["id"] for page in range(1, ours["pages"] + 1)
               for entry in ok(audit(server, page=page))["entries"] if entry["subject"])
    # a change of their post by our key is refused, and makes no entry in either log
    their_post = draft(server, theirs, key=other_key)
    assert api(server, "DELETE", f"{API}/posts/{their_post}")[0] == 404
    assert ok(audit(server, other_key))["entries"][0]["subject"]["id"] == their_post


def write_entries(server, organization_id: str, count: int, days_ago: int = 0, action: str = "seeded.entry") -> None:
    with connect_database(server.database) as connection:
        for number in range(count):
            connection.execute(
                "INSERT INTO audit_entry (id, organization_id, at, actor_type, actor_id, actor_name, action, "
                "subject_type, subject_id, address) VALUES (?, ?, ?, 'key', 'default', 'default', ?, 'tag', ?, ?)",
                (f"seeded-{organization_id}-{days_ago}-{number:03d}", organization_id,
                 rustiz.iso_at(time.time() - days_ago * 86400 - number), action, f"tag-{number:03d}", "10.0.0.1"))


def test_pages_of_fifty_newest_first(shared):
    server, other_org, other_key = shared["server"], shared["other_org"], shared["other_key"]
    write_entries(server, other_org, 120, days_ago=1)
    first = ok(audit(server, other_key, action="seeded"))
    assert first["pages"] == 3 and len(first["entries"]) == 50
    everything = first["entries"] + ok(audit(server, other_key, action="seeded", page=2))["entries"] + ok(
        audit(server, other_key, action="seeded", page=3))["entries"]
    assert len(everything) == 120 and len({entry["id"] for entry in everything}) == 120
    moments = [entry["at"] for entry in everything]
    assert moments == sorted(moments, reverse=True)
    assert ok(audit(server, other_key, action="seeded", page=4)) == {"entries": [], "pages": 3}
    assert ok(audit(server, action="seeded")) == {"entries": [], "pages": 0}  # (another organization's)


def test_entries_older_than_rustiz_audit_days_are_forgotten(start_server):
    server = start_server(env={"RUSTIZ_AUDIT_DAYS": "30"})
    organization = ok(api(server, "GET", f"{API}/organization"))["id"]
    write_entries(server, organization, 3, days_ago=40)
    write_entries(server, organization, 2, days_ago=20)
    server.stop()
    server.start()  # (the primary worker's housekeeping runs at start, then every five minutes)
    remaining = wait_for(lambda: ok(audit(server))["entries"], lambda entries: len(entries) == 2)
    assert {entry["id"].split("-")[-2] for entry in remaining} == {"20"}


def test_an_audit_write_that_fails_never_fails_the_change(start_server):
    server = start_server()
    with connect_database(server.database) as connection:
        connection.execute("DROP TABLE audit_entry")
    tag = ok(api(server, "POST", f"{API}/tags", {"name": "still-made"}), 201)
    assert any(tag["id"] == item["id"] for item in ok(api(server, "GET", f"{API}/tags"))["tags"])
    assert any("audit" in line and "not written" in line for line in server.stderr_lines), server.stderr_lines[-5:]


def test_an_audited_route_is_still_counted_under_its_own_feature_by_get_metrics(shared):
    server = shared["server"]
    library_item(server, "tags", {"name": "counted"})
    status, _, body = server.request("GET", "/metrics")
    assert status == 200
    text = body.decode()  # (the family "audit" is GET /audit's own, which never answers 201)
    assert 'family="api_library",status="201"' in text and 'family="audit",status="201"' not in text


def test_rotating_the_organization_s_key_is_recorded_as_made_by_the_old_key(shared):
    server = shared["server"]  # (last in this module: the server's key changes)
    old_key = server.key
    new = ok(api(server, "POST", f"{API}/organization/api-key"), 201)["apiKey"]
    assert api(server, "GET", f"{API}/audit", key=old_key)[0] == 401
    entry, = newest(server, key=new)
    assert (entry["action"], entry["subject"], entry["actor"]["id"]) == ("key.rotated", {"type": "key", "id": "default"},
                                                                         "default")
