"""Telegram's operator bot (issue 28), through the built server on both backends and the fake Bot API
(tests/fakes/telegram.py): GET /social/telegram's code, `/connect <code>` seen in the bot's long-polled updates
making the chat a channel of the code's organization, one watcher across processes, and hostile updates:
forged, reused, expired and other organizations' codes, a bot that may not post, malformed and oversized updates.
Deleting a published message (both kinds of Telegram channel) is tested in-process at the end."""
from __future__ import annotations

import json
import re
import time

import pytest

from conftest import LOCAL_FAKES, wanted_backends
from fakes.telegram import FakeTelegram
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel, NeedsReconnect, Release
from support import API, Database, api, connect_database, notifications, run, settled, scheduled, wait_for

OPERATOR = {"TELEGRAM_BOT_NAME": "rustiz_bot", "RUSTIZ_TELEGRAM_POLL_SECONDS": "1",
            "RUSTIZ_TELEGRAM_IDLE_SECONDS": "0.2"}


@pytest.fixture(params=wanted_backends())
def backend(request) -> str:
    """Both backends: the watcher's lease and the codes are database rows."""
    return request.param


@pytest.fixture
def telegram():
    fake = FakeTelegram()
    yield fake
    fake.close()


def operator_env(telegram, **more) -> dict:
    return {**LOCAL_FAKES, **telegram.env, **OPERATOR, "TELEGRAM_TOKEN": telegram.token, **more}


@pytest.fixture
def server(start_server, telegram):
    return start_server(env=operator_env(telegram))


def new_code(server, key: str | None = None) -> str:
    status, answer = api(server, "GET", f"{API}/social/telegram", key=key)
    assert status == 200, answer
    assert answer["bot"] == "rustiz_bot" and answer["url"] == "https://t.me/rustiz_bot"
    assert re.fullmatch(r"[A-Za-z0-9]{16}", answer["code"]), answer
    return answer["code"]


def channels(server, key: str | None = None) -> list:
    return api(server, "GET", f"{API}/integrations", key=key)[1]


def handled(telegram, update_id: int) -> None:
    """Wait until the watcher has moved past `update_id` (its next poll starts after it)."""
    telegram.wait_for(lambda: any(offset > update_id for offset in telegram.offsets), timeout=20)


def test_without_the_operators_bot_the_code_route_says_what_to_set(start_server, telegram):
    server = start_server(env={**LOCAL_FAKES, **telegram.env})
    status, answer = api(server, "GET", f"{API}/social/telegram")
    assert status == 400 and answer["needsOperatorApp"] is True, answer
    assert answer["variables"] == ["TELEGRAM_TOKEN", "TELEGRAM_BOT_NAME"] and "own bot" in answer["message"]


def test_connect_in_a_channel_makes_it_a_channel_that_publishes_with_the_operators_bot(server, telegram):
    code = new_code(server)
    update = telegram.command(f"/connect {code}")
    [channel] = wait_for(lambda: channels(server), bool)
    assert (channel["name"], channel["identifier"], channel["profile"]) == ("Rustiz News", "telegram", "rustiz_news")
    with connect_database(server.database) as db:
        credentials = json.loads(db.execute("SELECT token FROM integration").fetchone()[0])
    assert credentials == {"botToken": telegram.token, "chatId": str(telegram.chat["id"])}
    handled(telegram, update)
    assert any("connected through rustiz's bot" in text for text in notifications(server))
    assert telegram.deleted  # the command, which shows the code, is removed
    post = settled(server, scheduled(server, channel["id"], "<p>Hello from the <strong>bot</strong></p>"))
    assert post["state"] == "PUBLISHED", post
    assert telegram.published[-1]["text"] == "Hello from the <b>bot</b>"


def test_a_code_works_once_and_forged_ones_get_no_answer(server, telegram):
    code = new_code(server)
    forged = telegram.command("/connect AAAAAAAAAAAAAAAA")
    handled(telegram, forged)
    assert channels(server) == [] and telegram.requests_to("POST", r"/bot[^/]+/getChat") == []
    telegram.command(f"/connect@rustiz_bot {code}")
    wait_for(lambda: channels(server), bool)
    sends_before = len(telegram.sends())
    elsewhere = {"id": -1009999999999, "type": "supergroup", "title": "Elsewhere"}
    reused = telegram.command(f"/connect {code}", chat=elsewhere, kind="message")
    handled(telegram, reused)
    assert len(channels(server)) == 1 and len(telegram.sends()) == sends_before  # nothing said in any chat
    another_bot = telegram.command(f"/connect@some_other_bot {new_code(server)}")
    handled(telegram, another_bot)
    assert len(channels(server)) == 1


def test_an_expired_code_connects_nothing(start_server, telegram):
    server = start_server(env=operator_env(telegram, RUSTIZ_TELEGRAM_CODE_SECONDS="1"))
    code = new_code(server)
    time.sleep(1.5)
    handled(telegram, telegram.command(f"/connect {code}"))
    assert channels(server) == []


def test_each_code_connects_its_own_organization(server, telegram):
    other_org, other_key = Database(server).organization()
    theirs = new_code(server, key=other_key)
    handled(telegram, telegram.command(f"/connect {theirs}"))
    wait_for(lambda: channels(server, key=other_key), bool)
    assert channels(server) == []  # the organization that did not ask gets nothing


def test_a_bot_that_may_not_post_is_told_to_the_organization_and_the_code_still_works(server, telegram):
    telegram.member = {"status": "administrator", "can_post_messages": False}
    code = new_code(server)
    handled(telegram, telegram.command(f"/connect {code}"))
    assert channels(server) == []
    assert any("cannot post in the chat" in text and "Post Messages" in text for text in notifications(server))
    telegram.member = {"status": "administrator", "can_post_messages": True}
    telegram.command(f"/connect {code}")
    wait_for(lambda: channels(server), bool)


def test_malformed_and_oversized_updates_are_skipped_and_never_come_back(server, telegram):
    code = new_code(server)
    chat = {"id": telegram.chat["id"], "type": "channel", "title": "Rustiz News"}
    for junk in ({}, {"message": "text"}, {"channel_post": {"chat": chat}},
                 {"channel_post": {"message_id": 1, "chat": chat, "text": "/connect " + code + "x" * 5000}},
                 {"channel_post": {"message_id": 1, "chat": {**chat, "id": "not a number"}, "text": f"/connect {code}"}},
                 {"channel_post": {"message_id": 1, "chat": {**chat, "id": True}, "text": f"/connect {code}"}},
                 {"channel_post": {"message_id": 1, "chat": {**chat, "id": 2**70}, "text": f"/connect {code}"}},
                 {"message": {"message_id": 1, "chat": {"id": 42, "type": "private"}, "text": f"/connect {code}"}},
                 {"channel_post": {"message_id": 1, "chat": chat, "text": ["/connect", code]}},
                 {"channel_post": {"message_id": 1, "chat": chat, "text": f"/connect {code[:-1]}\u0000"}},
                 {"edited_channel_post": {"message_id": 1, "chat": chat, "text": f"/connect {code}"}}):
        telegram.push(junk)
    telegram.push({"update_id": "not-an-id", "message": {}})  # (Telegram's ids are numbers: skipped, offset kept)
    last = telegram.command(f"/connect {code}")
    wait_for(lambda: channels(server), bool)
    handled(telegram, last)
    assert len(channels(server)) == 1
    assert max(telegram.offsets) == last + 1


def test_one_watcher_polls_at_a_time_across_processes(start_server, telegram, tmp_path):
    first = start_server(env=operator_env(telegram), data_dir=tmp_path / "shared", args=("--workers", "2"))
    second = start_server(env=operator_env(telegram), data_dir=tmp_path / "shared")
    telegram.wait_for(lambda: len(telegram.offsets) >= 4, timeout=20)
    code = new_code(second)
    telegram.command(f"/connect {code}")
    wait_for(lambda: channels(first), bool)
    time.sleep(1.5)
    assert telegram.most_polls_at_once == 1, telegram.offsets
    assert len(channels(first)) == 1


def test_a_new_token_of_the_operators_bot_reaches_its_chats_without_connecting_again(start_server, telegram, tmp_path):
    first = start_server(env=operator_env(telegram), data_dir=tmp_path / "data")
    telegram.command(f"/connect {new_code(first)}")
    [channel] = wait_for(lambda: channels(first), bool)
    own_bot = {"botToken": "7000009:AAH" + "z" * 32, "chatId": "@someone_else"}  # a user's own bot: not touched
    database = Database(first)
    own_id = database.channel("Own bot", "telegram")
    with database.connect() as db:
        db.execute("UPDATE integration SET token = ? WHERE id = ?", (json.dumps(own_bot), own_id))
    first.stop()
    telegram.token = "7000001:AAH" + "n" * 32  # /revoke at @BotFather: the same bot, a new token
    again = start_server(env=operator_env(telegram), data_dir=tmp_path / "data")

    def tokens() -> dict:
        with connect_database(again.database) as db:
            return {name: json.loads(token)["botToken"] for name, token in db.execute("SELECT name, token FROM integration")}
    assert wait_for(tokens, lambda found: found["Rustiz News"] == telegram.token)["Own bot"] == own_bot["botToken"]
    post = settled(again, scheduled(again, channel["id"], "<p>Still here</p>"))
    assert post["state"] == "PUBLISHED", post


def test_with_a_public_https_frontend_telegram_sends_the_updates_to_a_route_that_checks_its_secret(start_server,
                                                                                                   telegram):
    server = start_server(env=operator_env(telegram, FRONTEND_URL="https://rustiz.example.com"))
    telegram.wait_for(lambda: telegram.webhook is not None)
    hook = telegram.webhook
    assert hook["url"] == "https://rustiz.example.com/integrations/telegram/updates", hook
    assert hook["allowed_updates"] == ["message", "channel_post"] and re.fullmatch(r"[0-9a-f]{64}", hook["secret_token"])
    assert telegram.offsets == []  # no polling meanwhile
    code = new_code(server)
    chat = {key: telegram.chat[key] for key in ("id", "type", "title", "username")}
    update = json.dumps({"update_id": 5, "channel_post": {"message_id": 9, "chat": chat, "text": f"/connect {code}"}})

    def deliver(secret: str | None) -> int:
        headers = {"Content-Type": "application/json", **({"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {})}
        return server.request("POST", "/integrations/telegram/updates", headers, update.encode())[0]
    assert deliver(None) == 404 and deliver("0" * 64) == 404  # forged: not Telegram
    assert channels(server) == []
    assert deliver(hook["secret_token"]) == 200
    [channel] = channels(server)
    assert channel["name"] == "Rustiz News"
    assert deliver(hook["secret_token"]) == 200 and len(channels(server)) == 1  # Telegram's retry: the code is used
    status, _, _ = server.request("POST", "/integrations/telegram/updates",
                                  {"X-Telegram-Bot-Api-Secret-Token": hook["secret_token"]}, b"{not json")
    assert status == 400


def test_polling_again_removes_a_webhook_left_from_before(server, telegram):
    telegram.webhook = {"url": "https://old.example.com/integrations/telegram/updates"}
    telegram.wait_for(lambda: telegram.webhook is None)
    telegram.command(f"/connect {new_code(server)}")
    wait_for(lambda: channels(server), bool)


# --- deleting (both kinds of Telegram channel: the credentials are the same shape), in-process ---------

def test_delete_removes_a_message_or_every_message_of_an_album(telegram, http, monkeypatch):
    for name, value in telegram.env.items():
        monkeypatch.setenv(name, value)
    provider = provider_for("telegram")
    channel = Channel("c1", "Rustiz News", telegram.credentials(str(telegram.chat["id"])), None, http)
    for number in (601, 602, 603):
        telegram.messages[number] = {"message_id": number}
    run(provider.delete(channel, Release("601", "https://t.me/rustiz_news/601")))
    run(provider.delete(channel, Release("601", "https://t.me/rustiz_news/601")))  # gone already: deleted
    run(provider.delete(channel, Release("602", "", {"messages": [602, 603]})))
    assert telegram.deleted == [601, 602, 603] and provider.can_delete
    telegram.token = "7000001:AAH" + "r" * 32  # the token was revoked
    with pytest.raises(NeedsReconnect):
        run(provider.delete(channel, Release("604", "")))
