"""Discord through a channel webhook, against a fake of Discord's webhook API and the real server."""
from __future__ import annotations

from conftest import provider_fixtures
from fakes.discord import CHANNEL_ID, GUILD_ID, WEBHOOK_ID, FakeDiscord, discord_error
from support import (waiting_for_reconnect, connect, connected, get_post, notifications, png_file, refresh_needed, schedule, scheduled,
                     settled_rows, uploaded)

SETTINGS = {"__type": "discord", "channel": "general"}


discord, rustiz, channel = provider_fixtures("discord", FakeDiscord, names=("discord", "rustiz", "channel"))


def message_link(message_id: str, channel_id: str = CHANNEL_ID) -> str:
    return f"https://discord.com/channels/{GUILD_ID}/{channel_id}/{message_id}"


def test_connect_reads_the_webhooks_name_and_avatar(rustiz, discord, channel):
    assert channel["name"] == "Announcements bot"
    assert channel["picture"] == f"https://cdn.discordapp.com/avatars/{WEBHOOK_ID}/a1b2c3.png"
    assert [request.method for request in discord.requests] == ["GET"]  # nothing is posted to the channel
    status, duplicate = connect(rustiz, "discord", discord.credentials())
    assert (status, duplicate["reconnected"]) == (200, True), duplicate  # the webhook id tells the account


def test_wrong_token_and_deleted_webhook_are_refused_at_connect(rustiz, discord):
    status, answer = connect(rustiz, "discord", discord.credentials(token="not-the-token"))
    assert status == 400 and "Discord refused these credentials" in answer["message"]
    assert "Invalid Webhook Token" in answer["message"]
    deleted = {"webhookUrl": discord.url + "/api/webhooks/42/" + "whatever"}
    status, answer = connect(rustiz, "discord", deleted)
    assert status == 400 and "no longer exists" in answer["message"] and "10015" in answer["message"]


def test_text_post_goes_out_as_discord_markdown_with_a_link_to_the_message(rustiz, discord, channel):
    post_id = scheduled(rustiz, channel["id"], '<p>Hello <strong>world</strong>, read '
                                               '<a href="https://example.com/docs">the docs</a></p><p><u>Bye</u></p>',
                        settings=SETTINGS)
    [row] = settled_rows(rustiz, post_id)
    [message] = discord.published
    assert message["content"] == "Hello **world**, read [the docs](https://example.com/docs)\n__Bye__"
    assert (row["state"], row["release_id"], row["release_url"]) == ("PUBLISHED", message["id"],
                                                                     message_link(message["id"]))
    [execute] = discord.requests_to("POST", r"/api/webhooks/.*")
    assert execute.query["wait"] == "true"
    assert get_post(rustiz, post_id)["releaseURL"] == message_link(message["id"])


def test_images_are_uploaded_as_multipart_files(rustiz, discord, channel):
    picture = png_file()
    images = [uploaded(rustiz, picture), uploaded(rustiz, picture, "second.png")]
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Two pictures</p>", settings=SETTINGS,
                                           images=images))
    assert row["state"] == "PUBLISHED", row
    [message] = discord.published
    assert message["content"] == "Two pictures"
    assert [(name, content_type, size) for name, _, content_type, size in message["files"]] == [
        ("files[0]", "image/png", len(picture)), ("files[1]", "image/png", len(picture))]
    assert [attachment["id"] for attachment in message["attachments"]] == [0, 1]


def test_thread_parts_follow_the_post_in_the_same_channel(rustiz, discord, channel):
    rows = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>First</p>", "<p>Second</p>", settings=SETTINGS))
    assert [row["state"] for row in rows] == ["PUBLISHED", "PUBLISHED"]
    assert [(message["content"], message["channel_id"]) for message in discord.published] == [
        ("First", CHANNEL_ID), ("Second", CHANNEL_ID)]
    assert [row["release_url"] for row in rows] == [message_link(message["id"]) for message in discord.published]
    assert "thread_id" not in discord.requests_to("POST", r"/api/webhooks/.*")[-1].query


def test_in_a_forum_channel_the_post_opens_a_topic_and_thread_parts_go_into_it(start_server_with_fakes):
    forum = FakeDiscord(forum=True)
    try:
        rustiz = start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.2"})
        channel = connected(rustiz, "discord", forum.credentials())
        rows = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Release notes</p><p>more</p>",
                                              "<p>Details</p>", settings=SETTINGS))
        assert [row["state"] for row in rows] == ["PUBLISHED", "PUBLISHED"], rows
        topic, reply = forum.published
        assert topic["thread_name"] == "Release notes" and forum.threads == {topic["channel_id"]: "Release notes"}
        assert reply["channel_id"] == topic["channel_id"] and reply["thread_name"] is None
        assert rows[0]["release_url"] == message_link(topic["id"], topic["channel_id"])
        # the forum refusal came once: the second post opens its topic straight away
        settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Another</p>", settings=SETTINGS))
        assert len(forum.requests_to("POST", r"/api/webhooks/.*")) == 4
    finally:
        forum.close()


def test_429_is_retried_after_discords_retry_after_and_published_once(rustiz, discord, channel):
    discord.fail_next("POST", r"/api/webhooks/.*", 429, {"message": "You are being rate limited.",
                                                         "retry_after": 0.3, "global": False},
                      {"X-RateLimit-Remaining": 0, "X-RateLimit-Reset-After": 0.3, "X-RateLimit-Scope": "user"})
    post_id = scheduled(rustiz, channel["id"], "<p>Throttled once</p>", settings=SETTINGS)
    [row] = settled_rows(rustiz, post_id)
    assert row["state"] == "PUBLISHED" and len(discord.published) == 1
    assert len(discord.requests_to("POST", r"/api/webhooks/.*")) == 2


def test_502_is_retried_but_500_on_the_message_is_not_sent_again(rustiz, discord, channel):
    discord.fail_next("POST", r"/api/webhooks/.*", 502, "<html>Bad Gateway</html>")
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>After a 502</p>", settings=SETTINGS))
    assert row["state"] == "PUBLISHED" and len(discord.published) == 1
    discord.fail_next("POST", r"/api/webhooks/.*", 500, {"message": "500: Internal Server Error", "code": 0})
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>After a 500</p>", settings=SETTINGS))
    assert row["state"] == "ERROR" and "It may have been published" in row["error"]
    assert "Failed on Discord (HTTP 500)" in row["error"] and len(discord.published) == 1


def test_a_deleted_webhook_flags_the_channel_for_reconnecting_and_the_post_waits(rustiz, discord, channel):
    discord.fail_next("POST", r"/api/webhooks/.*", *discord_error(404, "Unknown Webhook", 10015)[:2])
    row = waiting_for_reconnect(rustiz, scheduled(rustiz, channel["id"], "<p>Into the void</p>", settings=SETTINGS))
    assert "no longer exists" in row["error"], row
    assert refresh_needed(rustiz, channel["id"])
    assert any("reconnect this Discord channel" in text for text in notifications(rustiz))


def test_a_refused_message_fails_with_discords_own_words(rustiz, discord, channel):
    discord.fail_next("POST", r"/api/webhooks/.*", *discord_error(400, "Invalid Form Body", 50035, errors={
        "content": {"_errors": [{"code": "CONTENT_TYPE_INVALID", "message": "Blocked by AutoMod"}]}})[:2])
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Blocked</p>", settings=SETTINGS))
    assert row["state"] == "ERROR" and len(discord.published) == 0
    assert "Failed on Discord (HTTP 400)" in row["error"] and "Blocked by AutoMod" in row["error"]
    assert not refresh_needed(rustiz, channel["id"])


def test_discords_limits_are_refused_when_the_post_is_created(rustiz, discord, channel):
    links = "".join(f'<a href="https://example.com/{"x" * 90}/{number}">link</a> ' for number in range(25))
    status, answer = schedule(rustiz, channel["id"], f"<p>{links}</p>", settings=SETTINGS)
    assert status == 400 and "Discord allows 2,000 characters in a message; the post has" in str(answer), answer
    picture = uploaded(rustiz, png_file())
    status, answer = schedule(rustiz, channel["id"], "<p>Many</p>", settings=SETTINGS, images=[picture] * 11)
    assert status == 400 and "Discord allows 10 files in a message; the post has 11" in str(answer), answer
    assert discord.published == []


def test_files_over_discords_25_mib_are_refused_before_anything_is_sent(rustiz, discord, channel):
    big = png_file(padding=9 * 2**20)
    images = [uploaded(rustiz, big, f"big{number}.png") for number in range(3)]
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Heavy</p>", settings=SETTINGS, images=images))
    assert row["state"] == "ERROR" and "add up to 27.0 MiB" in row["error"] and "at most 25 MiB" in row["error"], row
    assert discord.requests_to("POST", r"/api/webhooks/.*") == []
