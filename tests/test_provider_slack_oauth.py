"""Slack as Postiz sets it up (issue 28): the operator's OAuth v2 app, against the fake Slack
(tests/fakes/slack.py) and the built server: consent with Postiz's scopes, the workspace as the channel, the
`channels` tool (for this kind only), chat.postMessage in the post's channel with replies in its thread,
Slack's {"ok": false} errors, and chat.delete (which a webhook channel cannot do)."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from fakes.slack import BOT_USER, GENERAL, RANDOM, SECRET_ROOM, TEAM_ID, FakeSlack
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel, NeedsReconnect, Rejected, Release
from support import (API, api, connect_database, connect_oauth, connected, consent_link, notifications,
                     redirect_query, refresh_needed, run, schedule, settled_rows, scheduled, trigger, visit,
                     waiting_for_reconnect)

provider = provider_for("slack")


@pytest.fixture
def slack():
    fake = FakeSlack()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, slack):
    return start_server_with_fakes(env={**slack.env, **slack.app_settings(), "RUSTIZ_RETRY_BASE": "0.2"})


def settings(channel: str = GENERAL) -> dict:
    return {"__type": "slack", "channel": channel}


def test_consent_asks_for_postizs_scopes_and_the_workspace_becomes_the_channel(server, slack):
    status, body = api(server, "GET", f"{API}/social/slack")
    assert status == 200, body
    query = {name: values[-1] for name, values in parse_qs(urlsplit(body["url"]).query).items()}
    assert urlsplit(body["url"]).path == "/oauth/v2/authorize"
    assert query["scope"] == "channels:read,chat:write,users:read,groups:read,channels:join,chat:write.customize"
    assert query["client_id"] == slack.client_id and query["redirect_uri"].endswith("/integrations/social/slack")
    back = connect_oauth(server, "slack")
    assert back["notice"] == "connected", back
    status, row = api(server, "GET", f"{API}/integrations/{back['channel']}")
    assert (row["name"], row["internalId"], row["picture"]) == ("Rustiz Team", TEAM_ID,
                                                                "https://avatars.slack-edge.com/rustiz.png"), row
    [exchange] = slack.requests_to("POST", r"/api/oauth\.v2\.access")
    assert exchange.form()["client_secret"] == slack.client_secret
    with connect_database(server.database) as db:
        credentials = json.loads(db.execute("SELECT token FROM integration WHERE id = ?",
                                            (back["channel"],)).fetchone()[0])
    assert credentials["teamId"] == TEAM_ID and credentials["botUserId"] == BOT_USER


def test_a_used_code_connects_nothing_and_says_slacks_code(server, slack):
    assert connect_oauth(server, "slack", link="deny")["problem"] == "denied"
    status, body = api(server, "GET", f"{API}/social/slack")
    callback = urlsplit(consent_link(body["url"]))
    slack.codes.clear()
    back = redirect_query(visit(server, callback.path + "?" + callback.query)[1]["location"])
    assert back["problem"] == "refused", back
    assert any("invalid_code" in text for text in notifications(server))


def test_the_channels_tool_pages_through_the_workspaces_channels_for_the_oauth_kind_only(server, slack):
    channel_id = connect_oauth(server, "slack")["channel"]
    status, answer = api(server, "GET", f"{API}/integration-settings/{channel_id}")
    assert [tool["methodName"] for tool in answer["output"]["tools"]] == ["channels"]
    status, answer = trigger(server, channel_id, "channels")
    assert answer["output"] == [{"id": GENERAL, "name": "general"}, {"id": RANDOM, "name": "random"},
                                {"id": SECRET_ROOM, "name": "secret-room"}], answer
    assert len(slack.requests_to("GET", r"/api/conversations\.list")) == 2
    webhook = connected(server, "slack", slack.credentials())
    assert api(server, "GET", f"{API}/integration-settings/{webhook['id']}")[1]["output"]["tools"] == []
    assert trigger(server, webhook["id"], "channels")[0] == 404


def test_a_post_joins_its_channel_and_thread_parts_are_replies_in_its_thread(server, slack):
    channel_id = connect_oauth(server, "slack")["channel"]
    rows = settled_rows(server, scheduled(server, channel_id, "<p>Hello <strong>team</strong></p>", "<p>More</p>",
                                          "<p>Last</p>", settings=settings(RANDOM)))
    assert [row["state"] for row in rows] == ["PUBLISHED"] * 3, rows
    post, first, second = slack.published
    assert post["blocks"][0]["text"]["text"] == "Hello *team*" and post["channel"] == RANDOM
    assert "thread_ts" not in post and first["thread_ts"] == second["thread_ts"] == post["ts"]
    assert [row["release_id"] for row in rows] == [post["ts"], first["ts"], second["ts"]]
    assert rows[0]["release_url"] == f"https://rustiz.slack.com/archives/{RANDOM}/p{post['ts'].replace('.', '')}"
    assert [request.json() for request in slack.requests_to("POST", r"/api/conversations\.join")] == [
        {"channel": RANDOM}]


def test_a_private_channel_the_app_was_not_invited_to_fails_saying_so(server, slack):
    channel_id = connect_oauth(server, "slack")["channel"]
    [row] = settled_rows(server, scheduled(server, channel_id, "<p>psst</p>", settings=settings(SECRET_ROOM)))
    assert row["state"] == "ERROR" and "not_in_channel" in row["error"] and "/invite" in row["error"], row
    assert not refresh_needed(server, channel_id)


def test_a_revoked_token_waits_for_a_reconnect_and_a_rate_limit_is_retried(server, slack):
    channel_id = connect_oauth(server, "slack")["channel"]
    slack.fail_next("POST", r"/api/chat\.postMessage", 429, {"ok": False, "error": "ratelimited"},
                    {"Retry-After": "1"})
    [row] = settled_rows(server, scheduled(server, channel_id, "<p>once</p>", settings=settings()))
    assert row["state"] == "PUBLISHED" and len(slack.published) == 1, row
    slack.tokens.clear()  # the app was uninstalled
    status, answer = schedule(server, channel_id, "<p>after</p>", settings=settings())
    assert status in (200, 201), answer
    waiting = waiting_for_reconnect(server, answer[0]["postId"])
    assert refresh_needed(server, channel_id), waiting


def test_a_webhook_channel_still_refuses_thread_parts(server, slack):
    webhook = connected(server, "slack", slack.credentials())
    status, answer = schedule(server, webhook["id"], "<p>one</p>", "<p>two</p>", settings=settings())
    assert status == 400 and "incoming webhook, which has no replies" in str(answer), answer


# --- deleting, in-process against the fake ---------------------------------------------------------------

def test_chat_delete_removes_the_message_and_a_gone_one_counts_as_deleted(slack, http, monkeypatch):
    for name, value in slack.env.items():
        monkeypatch.setenv(name, value)
    slack.tokens.add("xoxb-test")
    slack.messages["1765000000.000077"] = {"channel": GENERAL}
    channel = Channel("c1", "Rustiz Team", {"accessToken": "xoxb-test", "teamId": TEAM_ID}, None, http)
    release = Release("1765000000.000077", "", {"channel": GENERAL, "thread_ts": "1765000000.000077"})
    run(provider.delete(channel, release))
    run(provider.delete(channel, release))  # message_not_found: gone, as asked
    assert slack.deleted == ["1765000000.000077"] and provider.can_delete
    slack.tokens.clear()
    with pytest.raises(NeedsReconnect):
        run(provider.delete(channel, release))


def test_a_webhook_message_cannot_be_deleted_and_says_why(slack, http):
    webhook = Channel("c2", "Slack webhook", slack.credentials(), None, http)
    with pytest.raises(Rejected) as refused:
        run(provider.delete(webhook, Release("key-1", "")))
    assert "no way to delete" in refused.value.message and slack.requests == []


def test_a_slack_outage_after_the_message_was_sent_is_never_sent_twice(server, slack):
    channel_id = connect_oauth(server, "slack")["channel"]
    slack.fail_next("POST", r"/api/chat\.postMessage", 200, {"ok": False, "error": "internal_error"})
    [row] = settled_rows(server, scheduled(server, channel_id, "<p>maybe</p>", settings=settings()))
    assert row["state"] == "ERROR" and "internal_error" in row["error"], row
    assert len(slack.requests_to("POST", r"/api/chat\.postMessage")) == 1
