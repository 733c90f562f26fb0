"""Discord as Postiz sets it up (issue 28): the operator's OAuth app and bot, against the fake Discord
(tests/fakes/discord.py) and the built server: consent with the bot scope, the server as the channel, the
post's `channel` setting, the `channels` tool (listed for this kind only), thread parts in a thread opened on
the post, refusals in Discord's words, and deleting messages of both kinds."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from fakes.discord import CHANNEL_ID, GUILD_ID, LOCKED_ID, NEWS_ID, FakeDiscord
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel, NeedsReconnect, Rejected, Release
from rustiz_features.publishers.discord import DiscordApp
from support import (API, api, connect_database, connect_oauth, connected, consent_link, notifications,
                     redirect_query, refresh_needed, run, settled_rows, scheduled, trigger, visit)

provider = provider_for("discord")


@pytest.fixture
def discord():
    fake = FakeDiscord()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, discord):
    return start_server_with_fakes(env={**discord.env, **discord.app_settings(), "RUSTIZ_RETRY_BASE": "0.2"})


def settings(channel: str = CHANNEL_ID) -> dict:
    return {"__type": "discord", "channel": channel}


def stored_credentials(server, channel_id: str) -> dict:
    with connect_database(server.database) as db:
        return json.loads(db.execute("SELECT token FROM integration WHERE id = ?", (channel_id,)).fetchone()[0])


def test_consent_asks_for_the_bot_on_a_server_with_postizs_parameters_and_the_server_becomes_the_channel(server,
                                                                                                        discord):
    status, body = api(server, "GET", f"{API}/social/discord")
    assert status == 200, body
    query = {name: values[-1] for name, values in parse_qs(urlsplit(body["url"]).query).items()}
    assert urlsplit(body["url"]).path == "/oauth2/authorize"
    assert (query["client_id"], query["scope"], query["permissions"], query["integration_type"]) == (
        discord.client_id, "bot identify guilds", "377957124096", "0")
    assert query["redirect_uri"].endswith("/integrations/social/discord")
    back = connect_oauth(server, "discord")
    assert back["notice"] == "connected", back
    status, row = api(server, "GET", f"{API}/integrations/{back['channel']}")
    assert (row["name"], row["internalId"], row["picture"]) == (
        "Rustiz Fans", GUILD_ID, f"https://cdn.discordapp.com/icons/{GUILD_ID}/f00d.png"), row
    credentials = stored_credentials(server, back["channel"])
    assert credentials["guildId"] == GUILD_ID and credentials["accessToken"].startswith("at-")
    assert discord.bot_token not in json.dumps(credentials)  # the operator's bot token stays in config.env
    [guild_read] = discord.requests_to("GET", rf"/api/guilds/{GUILD_ID}")
    assert guild_read.headers["authorization"] == f"Bot {discord.bot_token}"


def test_the_bot_token_is_part_of_the_operators_app(start_server_with_fakes, discord):
    server = start_server_with_fakes(env={**discord.env, "DISCORD_CLIENT_ID": discord.client_id,
                                          "DISCORD_CLIENT_SECRET": discord.client_secret})
    status, body = api(server, "GET", f"{API}/social/discord")
    assert status == 400 and body["needsOperatorApp"] is True, body
    assert body["variables"] == ["DISCORD_CLIENT_ID", "DISCORD_CLIENT_SECRET", "DISCORD_BOT_TOKEN_ID"]
    # a webhook channel needs none of it
    assert connected(server, "discord", discord.credentials())["name"] == "Announcements bot"


def test_a_refused_consent_or_a_used_code_connects_nothing(server, discord):
    assert connect_oauth(server, "discord", link="deny")["problem"] == "denied"
    status, body = api(server, "GET", f"{API}/social/discord")
    callback = urlsplit(consent_link(body["url"]))
    discord.codes.clear()  # the code was used already: Discord answers invalid_grant
    back = redirect_query(visit(server, callback.path + "?" + callback.query)[1]["location"])
    assert back["problem"] == "refused", back
    assert any('Invalid "code" in request' in text for text in notifications(server))
    assert api(server, "GET", f"{API}/integrations") == (200, [])


def test_the_channels_tool_lists_text_and_announcement_channels_for_the_oauth_kind_only(server, discord):
    channel_id = connect_oauth(server, "discord")["channel"]
    status, answer = api(server, "GET", f"{API}/integration-settings/{channel_id}")
    assert [tool["methodName"] for tool in answer["output"]["tools"]] == ["channels"]
    status, answer = trigger(server, channel_id, "channels")
    assert status in (200, 201), answer
    assert answer["output"] == [{"id": CHANNEL_ID, "name": "general"}, {"id": NEWS_ID, "name": "news"},
                                {"id": LOCKED_ID, "name": "staff"}]
    webhook = connected(server, "discord", discord.credentials())
    status, answer = api(server, "GET", f"{API}/integration-settings/{webhook['id']}")
    assert answer["output"]["tools"] == []  # a webhook posts where it was made: nothing to pick
    status, answer = trigger(server, webhook["id"], "channels")
    assert status == 404, answer


def test_the_bot_posts_in_the_posts_channel_and_thread_parts_go_into_a_thread_on_the_post(server, discord):
    channel_id = connect_oauth(server, "discord")["channel"]
    rows = settled_rows(server, scheduled(server, channel_id, "<p>Release <strong>1.0</strong></p>",
                                          "<p>Changelog</p>", "<p>Thanks</p>", settings=settings(NEWS_ID)))
    assert [row["state"] for row in rows] == ["PUBLISHED"] * 3, rows
    post, first, second = discord.published
    assert (post["content"], post["channel_id"], post["by"]) == ("Release **1.0**", NEWS_ID, "bot")
    thread = discord.thread_of[post["id"]]
    assert (first["channel_id"], second["channel_id"]) == (thread, thread)
    assert len(discord.requests_to("POST", r"/api/channels/\d+/messages/\d+/threads")) == 1
    assert [row["release_url"] for row in rows] == [
        f"https://discord.com/channels/{GUILD_ID}/{NEWS_ID}/{post['id']}",
        f"https://discord.com/channels/{GUILD_ID}/{thread}/{first['id']}",
        f"https://discord.com/channels/{GUILD_ID}/{thread}/{second['id']}"]
    assert all(request.headers["authorization"] == f"Bot {discord.bot_token}"
               for request in discord.requests_to("POST", r"/api/channels/.*"))


def test_a_channel_the_bot_may_not_post_in_fails_in_discords_words_without_disconnecting(server, discord):
    channel_id = connect_oauth(server, "discord")["channel"]
    [row] = settled_rows(server, scheduled(server, channel_id, "<p>Hi staff</p>", settings=settings(LOCKED_ID)))
    assert row["state"] == "ERROR" and "Missing Permissions" in row["error"], row
    assert "Send Messages" in row["error"]
    assert not refresh_needed(server, channel_id)


def test_a_channel_setting_that_is_not_a_channel_id_is_refused_before_anything_is_sent(server, discord):
    channel_id = connect_oauth(server, "discord")["channel"]
    [row] = settled_rows(server, scheduled(server, channel_id, "<p>Hi</p>", settings=settings("general")))
    assert row["state"] == "ERROR" and "channels tool" in row["error"], row
    assert discord.requests_to("POST", r"/api/channels/.*") == []


def test_a_rate_limit_is_retried_after_discords_retry_after(server, discord):
    channel_id = connect_oauth(server, "discord")["channel"]
    discord.fail_next("POST", rf"/api/channels/{CHANNEL_ID}/messages", 429,
                      {"message": "You are being rate limited.", "retry_after": 0.3, "global": False},
                      {"Retry-After": "1", "X-RateLimit-Remaining": "0"})
    [row] = settled_rows(server, scheduled(server, channel_id, "<p>Once</p>", settings=settings()))
    assert row["state"] == "PUBLISHED", row
    assert [message["content"] for message in discord.published] == ["Once"]


# --- deleting (the Provider.delete of issue 28), in-process against the fake ---------------------------

def test_delete_removes_a_bot_message_and_a_message_already_gone_counts_as_deleted(discord, http, monkeypatch):
    for name, value in discord.env.items():
        monkeypatch.setenv(name, value)
    discord.messages["1300000000000000900"] = NEWS_ID
    channel = Channel("c1", "Rustiz Fans", {"accessToken": "at", "guildId": GUILD_ID}, None, http)
    channel.app = DiscordApp(discord.client_id, discord.client_secret, discord.bot_token)
    release = Release("1300000000000000900", f"https://discord.com/channels/{GUILD_ID}/{NEWS_ID}/1300000000000000900")
    run(provider.delete(channel, release))
    assert discord.deleted == ["1300000000000000900"] and provider.can_delete
    run(provider.delete(channel, release))  # 404 Unknown Message: it is gone, as asked
    channel.app = DiscordApp(discord.client_id, discord.client_secret, "wrong")
    with pytest.raises(NeedsReconnect):
        run(provider.delete(channel, release))


def test_delete_through_the_webhook_that_sent_the_message_even_in_a_forum_topic(discord, http):
    webhook = Channel("c2", "Announcements bot", discord.credentials(), {"guild_id": GUILD_ID,
                                                                        "channel_id": CHANNEL_ID}, http)
    discord.messages.update({"1300000000000000901": CHANNEL_ID, "1300000000000000902": "1300000000000000777"})
    run(provider.delete(webhook, Release("1300000000000000901",
                                         f"https://discord.com/channels/{GUILD_ID}/{CHANNEL_ID}/1300000000000000901")))
    run(provider.delete(webhook, Release("1300000000000000902", f"https://discord.com/channels/{GUILD_ID}/"
                                                                "1300000000000000777/1300000000000000902")))
    assert discord.deleted == ["1300000000000000901", "1300000000000000902"]
    [_, in_topic] = discord.requests_to("DELETE", r"/api/webhooks/.*")
    assert in_topic.query == {"thread_id": "1300000000000000777"}
    discord.webhook_id = "1199887766554433299"  # the webhook was deleted meanwhile
    with pytest.raises(NeedsReconnect):
        run(provider.delete(webhook, Release("1300000000000000903", "")))
    with pytest.raises(Rejected):  # an OAuth channel without the operator's bot configured: said so
        run(provider.delete(Channel("c3", "x", {"accessToken": "at", "guildId": GUILD_ID}, None, http),
                            Release("1", f"https://discord.com/channels/{GUILD_ID}/{CHANNEL_ID}/1")))


def test_webhook_channels_need_no_operator_app_in_rustiz_doctor(start_server_with_fakes, discord):
    from fakes.slack import FakeSlack
    from test_cli_doctor import doctor
    slack = FakeSlack()
    try:
        server = start_server_with_fakes()  # (no DISCORD_* or SLACK_* app)
        connected(server, "discord", discord.credentials(), "Discord hook")
        connected(server, "slack", slack.credentials(), "Slack hook")
        status, lines, output = doctor(server)
        verdicts = {check.split(" (")[0]: verdict for check, verdict in lines.items() if check.startswith("channel ")}
        assert verdicts['channel "Discord hook"'][0] == "ok", output
        assert verdicts['channel "Slack hook"'][0] == "ok", output
    finally:
        slack.close()


def test_a_refresh_keeps_the_server_and_a_used_refresh_token_is_refused(discord, http, monkeypatch):
    from rustiz_features.publishers.oauth import TokenRefused
    for name, value in discord.env.items():
        monkeypatch.setenv(name, value)
    app = DiscordApp(discord.client_id, discord.client_secret, discord.bot_token)
    discord.refresh_tokens.add("rt-first")
    tokens = run(provider.refresh_tokens(http, app, "rt-first"))
    assert tokens.refresh_token in discord.refresh_tokens and tokens.extra is None  # (the server stays as stored)
    with pytest.raises(TokenRefused):
        run(provider.refresh_tokens(http, app, "rt-first"))  # Discord rotates refresh tokens: the old one is dead


def test_a_502_is_sent_again_and_an_answer_without_the_message_is_never_sent_twice(server, discord):
    channel_id = connect_oauth(server, "discord")["channel"]
    discord.fail_next("POST", rf"/api/channels/{CHANNEL_ID}/messages", 502, "<html>Bad gateway</html>")
    [row] = settled_rows(server, scheduled(server, channel_id, "<p>Through</p>", settings=settings()))
    assert row["state"] == "PUBLISHED" and [m["content"] for m in discord.published] == ["Through"], row
    discord.fail_next("POST", rf"/api/channels/{CHANNEL_ID}/messages", 200, "<html>a proxy's page</html>")
    [row] = settled_rows(server, scheduled(server, channel_id, "<p>Unknown</p>", settings=settings()))
    assert row["state"] == "ERROR" and "Rustiz Fans" in row["error"], row
    assert len(discord.requests_to("POST", rf"/api/channels/{CHANNEL_ID}/messages")) == 3
