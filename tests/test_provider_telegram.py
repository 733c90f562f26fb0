"""The telegram provider against a fake Bot API, through the real server: connecting a bot to a chat
(and checking it may post there), text as Telegram HTML, photos, videos and albums, replies, limits,
and every error rule (ok:false is an error, whatever the HTTP status)."""
from __future__ import annotations

import pytest

from conftest import provider_fixtures
from fakes.telegram import FakeTelegram
from support import (waiting_for_reconnect, connect, gif_file, jpeg_file, mp4_file, png_file, refresh_needed, schedule, scheduled, settled,
                     uploaded)

fake, server, channel = provider_fixtures("telegram", FakeTelegram)


# --- connecting ----------------------------------------------------------------------------------

def test_connecting_reads_the_chat_and_one_chat_is_one_channel(server, fake):
    status, channel = connect(server, "telegram", fake.credentials("@rustiz_news"))
    assert status == 201, channel
    assert (channel["name"], channel["profile"], channel["picture"]) == ("Rustiz News", "rustiz_news", None)
    [member_check] = fake.requests_to("POST", r"/bot[^/]+/getChatMember")
    assert member_check.json() == {"chat_id": "@rustiz_news", "user_id": fake.bot["id"]}
    status, body = connect(server, "telegram", fake.credentials(str(fake.chat["id"])))  # the same chat by id
    assert (status, body["reconnected"]) == (200, True), body


@pytest.mark.parametrize("chat_type, member, reason", [
    ("channel", {"status": "administrator", "can_post_messages": False}, 'only an administrator with the "Post Messages" '
                                                                         'right can post there'),
    ("channel", {"status": "member"}, "the bot @rustiz_bot is member in the channel"),
    ("supergroup", {"status": "left"}, 'the bot @rustiz_bot is left in the group "Rustiz News" and cannot send '
                                       'messages there'),
])
def test_connecting_refuses_a_bot_that_cannot_post_in_the_chat(server, fake, chat_type, member, reason):
    fake.chat["type"], fake.member = chat_type, member
    status, body = connect(server, "telegram", fake.credentials())
    assert status == 400 and body["message"].startswith("Telegram refused these credentials: "), body
    assert reason in body["message"], body


def test_connecting_refuses_a_wrong_token_or_an_unknown_chat_with_telegrams_reason(server, fake):
    status, body = connect(server, "telegram", {**fake.credentials(), "botToken": "7000001:AAH" + "z" * 32})
    assert status == 400 and "Unauthorized" in body["message"] and "@BotFather" in body["message"], body
    assert "z" * 32 not in body["message"]
    status, body = connect(server, "telegram", fake.credentials("@no_such_channel"))
    assert status == 400 and "Bad Request: chat not found" in body["message"], body


# --- publishing ------------------------------------------------------------------------------------

def test_text_goes_out_as_telegram_html_with_a_public_link(server, fake, channel):
    post_id = scheduled(server, channel["id"], '<p>Hello <strong>world</strong> &amp; 1 &lt; 2</p>'
                                               '<p>See <a href="https://example.com/?a=1&amp;b=2">this</a>'
                                               '</p><ul><li>one</li><li>two</li></ul>')
    post = settled(server, post_id, stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    [(method, sent)] = fake.sends()
    assert method == "sendMessage" and sent["parse_mode"] == "HTML" and sent["chat_id"] == "@rustiz_news"
    assert sent["text"] == ('Hello <b>world</b> &amp; 1 &lt; 2\nSee <a href="https://example.com/?a=1&amp;b=2">'
                            'this</a>\n• one\n• two')
    assert (post["releaseId"], post["releaseURL"]) == ("501", "https://t.me/rustiz_news/501")


def test_one_photo_video_or_gif_goes_with_its_own_method_and_caption(server, fake, channel):
    photo, video, gif = uploaded(server, jpeg_file(), "a.jpg"), uploaded(server, mp4_file(), "v.mp4"), \
        uploaded(server, gif_file(), "g.gif")
    for media in (photo, video, gif):
        post_id = scheduled(server, channel["id"], ("<p>Look <u>here</u></p>", [media]), allowDuplicate=True)
        assert settled(server, post_id, stop_at_error=True)["state"] == "PUBLISHED"
    assert [(method, sent["caption"], sent["parse_mode"]) for method, sent in fake.sends()] == [
        ("sendPhoto", "Look <u>here</u>", "HTML"), ("sendVideo", "Look <u>here</u>", "HTML"),
        ("sendAnimation", "Look <u>here</u>", "HTML")]
    assert [message["media"][0][1] for message in fake.published] == [jpeg_file(), mp4_file(), gif_file()]


def test_several_media_go_as_one_album_with_the_caption_on_the_first(server, fake, channel):
    photo, video = uploaded(server, png_file()), uploaded(server, mp4_file(), "v.mp4")
    post = settled(server, scheduled(server, channel["id"], ("<p>Album</p>", [photo, video])), stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    [(method, sent)] = fake.sends()
    assert method == "sendMediaGroup"
    assert [message["media"] for message in fake.published] == [[("photo", png_file())], [("video", mp4_file())]]
    assert fake.published[0]["caption"] == "Album" and post["releaseId"] == str(fake.published[0]["message_id"])


def test_more_than_ten_media_go_as_albums_of_ten_and_a_refused_album_is_not_sent_twice(server, fake, channel):
    image = uploaded(server, png_file())
    fake.fail_next("POST", r"/bot[^/]+/sendPhoto", 429, {
        "ok": False, "error_code": 429, "description": "Too Many Requests: retry after 1",
        "parameters": {"retry_after": 1}})
    post = settled(server, scheduled(server, channel["id"], ("<p>Eleven</p>", [image] * 11)), stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    # The album of ten went out once; the eleventh photo was refused once (429), then sent.
    assert [method for method, _ in fake.sends()] == ["sendMediaGroup", "sendPhoto", "sendPhoto"]
    assert len(fake.published) == 11 and fake.published[0]["caption"] == "Eleven"
    assert post["releaseId"] == str(fake.published[0]["message_id"])


def test_thread_parts_are_replies_to_the_part_before(server, fake, channel):
    image = uploaded(server, png_file())
    post = settled(server, scheduled(server, channel["id"], "<p>1</p>", ("<p>2</p>", [image]), "<p>3</p>"),
                   stop_at_error=True)
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED"] * 3, post
    first, second, third = fake.published
    assert [first["reply_to"], second["reply_to"], third["reply_to"]] == [
        None, first["message_id"], second["message_id"]]


def test_a_private_channel_links_by_its_id(server, fake):
    del fake.chat["username"]
    status, channel = connect(server, "telegram", fake.credentials(str(fake.chat["id"])))
    assert status == 201 and channel["profile"] is None, channel
    post = settled(server, scheduled(server, channel["id"], "<p>Members only</p>"), stop_at_error=True)
    assert post["releaseURL"] == "https://t.me/c/1234567890/501"


# --- errors -------------------------------------------------------------------------------------------

def test_a_429_waits_retry_after_and_publishes_once(server, fake, channel):
    fake.fail_next("POST", r"/bot[^/]+/sendMessage", 429, {
        "ok": False, "error_code": 429, "description": "Too Many Requests: retry after 1",
        "parameters": {"retry_after": 1}})
    post = settled(server, scheduled(server, channel["id"], "<p>Later</p>"), stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    assert len(fake.sends()) == 2 and len(fake.published) == 1


def test_ok_false_is_an_error_even_in_a_200_answer(server, fake, channel):
    fake.fail_next("POST", r"/bot[^/]+/sendMessage", 200, {
        "ok": False, "error_code": 400, "description": "Bad Request: message must be non-empty"})
    post = settled(server, scheduled(server, channel["id"], "<p>Hello</p>"), stop_at_error=True)
    assert post["state"] == "ERROR"
    assert post["error"].startswith("Failed on Telegram (HTTP 400): Telegram refused the message: "
                                    "Bad Request: message must be non-empty"), post["error"]
    assert len(fake.sends()) == 1 and not refresh_needed(server, channel["id"])


def test_a_refused_message_fails_with_telegrams_words_and_is_not_retried(server, fake, channel):
    fake.fail_next("POST", r"/bot[^/]+/sendMessage", 400, {
        "ok": False, "error_code": 400, "description": "Bad Request: can't parse entities: Unclosed start tag"})
    post = settled(server, scheduled(server, channel["id"], "<p>Hello</p>"), stop_at_error=True)
    assert post["state"] == "ERROR" and "Bad Request: can't parse entities: Unclosed start tag" in post["error"]
    assert len(fake.sends()) == 1 and not refresh_needed(server, channel["id"])


def test_a_revoked_token_flags_the_channel_and_the_post_waits(server, fake, channel):
    fake.token = "7000001:AAHnewtoken" + "n" * 20
    post = waiting_for_reconnect(server, scheduled(server, channel["id"], "<p>Hello</p>"))
    assert "(Failed on Telegram (HTTP 401)" in post["error"], post
    assert "revoked or replaced in @BotFather" in post["error"]
    assert refresh_needed(server, channel["id"])


@pytest.mark.parametrize("status, description", [
    (400, "Bad Request: chat not found"),
    (400, "Bad Request: not enough rights to send text messages to the chat"),
    (403, "Forbidden: bot was kicked from the channel chat"),
])
def test_a_chat_the_bot_lost_flags_the_channel_for_reconnecting(server, fake, channel, status, description):
    fake.fail_next("POST", r"/bot[^/]+/sendMessage", status, {"ok": False, "error_code": status,
                                                               "description": description})
    post = waiting_for_reconnect(server, scheduled(server, channel["id"], "<p>Hello</p>"))
    assert description in post["error"]
    assert refresh_needed(server, channel["id"])


def test_server_errors_before_sending_are_retried_and_after_sending_are_not(server, fake, channel):
    fake.fail_next("POST", r"/bot[^/]+/sendMessage", 502, "<html>Bad Gateway</html>")
    assert settled(server, scheduled(server, channel["id"], "<p>One</p>"), stop_at_error=True)["state"] == "PUBLISHED"
    fake.drop_next("POST", r"/bot[^/]+/sendMessage", after_handling=True)  # sent, but the answer was lost
    post = settled(server, scheduled(server, channel["id"], "<p>Two</p>"), stop_at_error=True)
    assert post["state"] == "ERROR", post
    assert "It may have been published: check the Telegram chat @rustiz_news" in post["error"]
    assert fake.token not in post["error"] and "<bot token>" in post["error"]
    assert [message["text"] for message in fake.published] == ["One", "Two"]  # "Two" was not sent again


# --- limits at POST /posts ------------------------------------------------------------------------

def test_telegrams_limits_are_checked_before_a_post_is_accepted(server, fake, channel):
    image = uploaded(server, png_file())
    status, body = schedule(server, channel["id"], ("<p>" + "a" * 1025 + "</p>", [image]))
    assert status == 400 and body["message"].startswith(
        "the post has images or videos, so its text is their caption, and it is 1025 characters long; "
        "Telegram allows 1,024 in a caption"), body
    status, body = schedule(server, channel["id"], "<p>ok</p>", "<p>" + "😀" * 2049 + "</p>")
    assert (status, body["message"]) == (400, "thread part 2 is 4098 characters long as Telegram counts them "
                                              "(an emoji is 2), and Telegram allows 4,096 in a message"), body
    assert scheduled(server, channel["id"], ("<p>" + "a" * 1024 + "</p>", [image]), "<p>" + "a" * 4096 + "</p>")
