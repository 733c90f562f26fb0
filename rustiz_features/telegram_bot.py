"""Telegram's operator bot, as Postiz sets it up (TELEGRAM_TOKEN, TELEGRAM_BOT_NAME): a user adds the bot to a
channel or group and sends `/connect <code>` there, the code the web app showed (GET /public/v1/social/telegram
answers {"url", "code", "bot"}); rustiz sees the command in the bot's updates and makes that chat a channel of
the code's organization. The user's own bot token (pasted credentials) keeps working beside it.

Rules:
- Codes: 16 random letters and digits (about 95 bits), kept hashed, one organization's, good once and for
  RUSTIZ_TELEGRAM_CODE_SECONDS (an hour). A command with an unknown, used or expired code gets no answer at
  all: nothing tells a guesser anything. The chat must be a channel, group or supergroup, and the bot able to
  post there (TelegramProvider.connect checks it, before the code is used, so a fix and a new /connect work).
- One watcher across processes and workers: the process that holds the lease (storage/telegram_bot.py)
  long-polls getUpdates from the offset stored with it; the others try again now and then, and take over when
  its lease runs out. Every update moves the offset past it, handled or not, so a malformed one never comes
  back. Updates are read bounded (at most 100 a call, each command at most 200 characters).
- When FRONTEND_URL is public https, the lease holder sets the bot's webhook instead (setWebhook, with a
  secret derived from the token) and POST /integrations/telegram/updates (TelegramUpdates) reads only the
  requests bearing that secret; a redelivered update is harmless, as a code works once.
- The channel's credentials are the operator's token and the chat, as a pasted bot's are, so publishing and
  deleting need nothing else; a new TELEGRAM_TOKEN of the same bot (after /revoke) is given to its chats by the
  first process that holds the lease, which clears their reconnect flags.
"""
from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
import time
from typing import Any, Optional

from rustiz import Request, Response, json_response, log, not_found, route_options
from .api_docs import documented, object_schema
from .background import RowSender, SenderHost
from .catalogue import MAX_SAFE_INTEGER, NewChannel
from .publishers import provider_for
from .publishers.base import Channel, PublishError, Rejected, tuned
from .storage import channels as channel_store
from .storage import notifications as notification_store
from .storage import scheduling as schedule_store
from .storage import telegram_bot as bot_store

CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
CODE_LENGTH = 16
COMMAND_LIMIT = 200  # characters of a message read as a command; anything longer is not one
UPDATES_PER_CALL = 100  # getUpdates' own maximum
_CONNECT_COMMAND = re.compile(r"\s*/connect(?:@(\w{1,64}))?\s+([A-Za-z0-9]{%d})\s*" % CODE_LENGTH)


def operator_bot(settings: dict) -> Optional[tuple]:
    """(token, bot username without @) of the operator's bot, or None when TELEGRAM_TOKEN or
    TELEGRAM_BOT_NAME is not set."""
    token, name = (settings.get(key, "").strip() for key in ("TELEGRAM_TOKEN", "TELEGRAM_BOT_NAME"))
    return (token, name.lstrip("@")) if token and name else None


WEBHOOK_PATH = "/integrations/telegram/updates"


def webhook_address(frontend_url: str) -> Optional[str]:
    """Where Telegram sends the bot's updates when FRONTEND_URL is a public https address; None: long polling."""
    from .http_client import private_host_reason
    if not frontend_url.startswith("https://") or private_host_reason(frontend_url):
        return None
    return frontend_url.rstrip("/") + WEBHOOK_PATH


def webhook_secret(token: str) -> str:
    """The secret_token Telegram sends back with each update (X-Telegram-Bot-Api-Secret-Token): derived from the
    bot's token, so every process knows it and a new token makes a new one."""
    import hmac
    return hmac.new(token.encode(), b"rustiz telegram webhook", "sha256").hexdigest()


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def new_connect_code(store: Any, settings: dict, organization_id: str) -> dict:
    """GET /social/telegram's answer: a new code of the organization, the bot's name and its t.me link.
    Raises LookupError when the operator's bot is not configured."""
    bot = operator_bot(settings)
    if bot is None:
        raise LookupError("TELEGRAM_TOKEN and TELEGRAM_BOT_NAME")
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    now = time.time()
    bot_store.add_code(store, code_hash(code), organization_id,
                       now + tuned("RUSTIZ_TELEGRAM_CODE_SECONDS", 3600.0, 1.0), now)
    return {"url": f"https://t.me/{bot[1]}", "code": code, "bot": bot[1]}


def connect_command(message: Any, bot_name: str) -> Optional[tuple]:
    """(chat id, message id, code) of a `/connect <code>` (or `/connect@<bot> <code>`) in a channel or group;
    None for anything else, however it is shaped."""
    if not isinstance(message, dict) or not isinstance(message.get("chat"), dict):
        return None
    text, chat, message_id = message.get("text"), message["chat"], message.get("message_id")
    if not isinstance(text, str) or len(text) > COMMAND_LIMIT or chat.get("type") not in ("group", "supergroup",
                                                                                           "channel"):
        return None
    chat_id = chat.get("id")
    if type(chat_id) is not int or abs(chat_id) > MAX_SAFE_INTEGER or type(message_id) is not int:
        return None
    found = _CONNECT_COMMAND.fullmatch(text)
    if found is None or (found[1] and found[1].lower() != bot_name.lower()):
        return None
    return chat_id, message_id, found[2]


class UpdateHandler:
    """What rustiz does with one of the bot's updates, however it came (long poll or webhook): a /connect."""

    def __init__(self, store: Any, http: Any, bot: tuple):
        self.store, self.http, self.bot = store, http, bot
        self.provider = provider_for("telegram")

    async def handle(self, update: Any) -> Optional[int]:
        """Act on the update when it is a /connect; its update_id (None for something that is not an update)."""
        update_id = update.get("update_id") if isinstance(update, dict) else None
        if type(update_id) is not int or not 0 <= update_id < 2**53:
            return None
        command = connect_command(update.get("message") or update.get("channel_post"), self.bot[1])
        if command is not None:
            await self._connect(*command)
        return update_id

    async def _connect(self, chat_id: int, message_id: int, code: str) -> None:
        """Make the chat a channel of the code's organization, when the code is live and the bot may post there."""
        hashed = code_hash(code)
        organization_id = await self.store.off_loop(bot_store.code_organization, self.store, hashed, time.time())
        if organization_id is None:
            return  # unknown, used or expired: no answer (see the module)
        probe = Channel("", "", {"botToken": self.bot[0], "chatId": str(chat_id)}, None, self.http)
        try:
            connected = await self.provider.connect(probe)
        except Rejected as refused:
            await self._tell(organization_id, f"Telegram: rustiz's bot @{self.bot[1]} cannot post in the chat where "
                                              f"/connect was sent: {refused.message}. The code still works once "
                                              "that is fixed")
            return
        except PublishError as failed:
            log(f"telegram bot: could not check chat {chat_id} ({failed.message}); its /connect must be sent again")
            return
        if await self.store.off_loop(bot_store.take_code, self.store, hashed, time.time()) != organization_id:
            return  # used meanwhile
        new = NewChannel("telegram", connected.account, probe.credentials, None, connected.session, connected.limits)
        row, existed = await self.store.off_loop(channel_store.add_channel, self.store, organization_id, new)
        if existed:  # (a reconnect: what waited for it goes out, as after a consent)
            await self.store.off_loop(schedule_store.release_waiting_posts, self.store, row["id"])
        await self._tell(organization_id, f"Telegram: \"{row['name']}\" is "
                                          f"{'reconnected' if existed else 'connected'} through rustiz's bot")
        try:  # the command shows the code in the chat: gone once used (an admin bot may delete it)
            await self.provider.call(probe, "deleteMessage", "the /connect message",
                                     json_body={"chat_id": chat_id, "message_id": message_id})
        except PublishError:
            pass

    async def _tell(self, organization_id: str, text: str) -> None:
        await self.store.off_loop(notification_store.add_notification, self.store, organization_id, text)


class TelegramBotWatcher(RowSender):
    """Long-polls the operator bot's updates while this process holds the lease (see the module)."""

    def __init__(self, host: SenderHost):
        self.host, self.store, self.loop = host, host.store, host.loop
        self.bot = operator_bot(host.config.settings or {})
        self.owner = f"{host.owner}:telegram"
        self.wait_seconds = int(tuned("RUSTIZ_TELEGRAM_POLL_SECONDS", 25.0, 0.0))  # getUpdates' long-poll timeout
        self.idle_seconds = tuned("RUSTIZ_TELEGRAM_IDLE_SECONDS", 10.0, 0.05)  # between tries without the lease
        self.lease_seconds = self.wait_seconds + 30.0
        self.paused_until = 0.0
        self.poll: Any = None  # the getUpdates task in flight
        self.token_renewed = False  # (once per process, by the lease holder: see _renew_token)
        self.webhook_url = webhook_address(host.config.frontend_url)  # None: updates are long-polled
        self.webhook_set = False

    def may_run(self) -> bool:
        return super().may_run() and self.bot is not None

    def stop(self) -> None:
        """No more polls; the lease is given back, so a restarted or other process takes over at once."""
        super().stop()
        if self.poll is not None:
            self.poll.cancel()  # (a long poll would hold the shutdown for its whole timeout)
        if self.bot is not None:
            try:
                bot_store.release_watch_lease(self.store, self.owner)  # (a quick write, as the process ends)
            except sqlite3.Error as error:
                log(f"telegram bot: could not give back the watcher's lease ({error}); it ends by itself")

    def _run_due(self) -> None:
        if self.stopped or (self.poll is not None and not self.poll.done()):
            return
        now = time.time()
        if now < self.paused_until:
            self.sleep(self.paused_until - now)
            return
        try:
            offset = bot_store.take_watch_lease(self.store, self.owner, now, self.lease_seconds)
        except sqlite3.Error as error:
            log(f"telegram bot: the database failed ({error}); trying again later")
            offset = None
        if offset is None:  # another process watches (or the database failed)
            self.sleep(self.idle_seconds)
            return
        if not self.token_renewed:
            self.token_renewed = True
            self._renew_token()
        if self.webhook_url is not None and self.webhook_set:
            self.sleep(self.idle_seconds)  # (the webhook is set: this process keeps the lease, Telegram sends)
            return
        self.poll = self.loop.create_task(self._poll(offset) if self.webhook_url is None else self._set_webhook())
        self.host.tasks.add(self.poll)
        self.poll.add_done_callback(self._polled)

    def _renew_token(self) -> None:
        """After @BotFather's /revoke the operator sets the bot's new token: its chats take it, and their posts that
        waited for a reconnect go out (no /connect again)."""
        try:
            for channel_id in bot_store.renew_operator_token(self.store, self.bot[0]):
                schedule_store.release_waiting_posts(self.store, channel_id)
                log(f"telegram bot: channel {channel_id} now uses the operator bot's new token")
        except sqlite3.Error as error:
            log(f"telegram bot: could not give the channels the bot's new token ({error})")

    def _polled(self, task: Any) -> None:
        self.host.tasks.discard(task)
        self.wake()

    def _bot_channel(self) -> tuple:
        """(the Telegram provider, a Channel of the bot alone) for the bot's own calls (no chat)."""
        return provider_for("telegram"), Channel("", "telegram bot", {"botToken": self.bot[0], "chatId": ""}, None,
                                                 self.host.http)

    async def _set_webhook(self) -> None:
        """FRONTEND_URL is public https: Telegram sends the updates to WEBHOOK_PATH there, with the secret."""
        provider, channel = self._bot_channel()
        try:
            await provider.call(channel, "setWebhook", "the bot's webhook (setWebhook)", json_body={
                "url": self.webhook_url, "secret_token": webhook_secret(self.bot[0]),
                "allowed_updates": ["message", "channel_post"], "max_connections": 10})
        except PublishError as failed:
            log(f"telegram bot: setWebhook failed: {failed.message}; trying again in {self.idle_seconds:g} s")
            self.paused_until = time.time() + self.idle_seconds
            return
        self.webhook_set = True
        log(f"telegram bot: Telegram sends the bot's updates to {self.webhook_url}")

    async def _poll(self, offset: int) -> None:
        from .http_client import Timeouts
        provider, channel = self._bot_channel()
        try:
            updates = await provider.call(channel, "getUpdates", "the bot's updates (getUpdates)", json_body={
                "offset": offset, "limit": UPDATES_PER_CALL, "timeout": self.wait_seconds,
                "allowed_updates": ["message", "channel_post"]},
                timeouts=Timeouts(read=self.wait_seconds + 15, total=self.wait_seconds + 30))
        except PublishError as failed:
            log(f"telegram bot: getUpdates failed: {failed.message}; trying again in {self.idle_seconds:g} s")
            self.paused_until = time.time() + self.idle_seconds
            if failed.status == 409:  # a webhook is set (FRONTEND_URL was public): polling needs it gone
                await self._quietly(provider.call(channel, "deleteWebhook", "the bot's webhook (deleteWebhook)"))
            return
        next_offset = offset
        handler = UpdateHandler(self.store, self.host.http, self.bot)
        for update in updates[:UPDATES_PER_CALL] if isinstance(updates, list) else ():
            update_id = await handler.handle(update)
            next_offset = max(next_offset, update_id + 1) if update_id is not None else next_offset
        if next_offset != offset:
            await self.store.off_loop(bot_store.save_offset, self.store, self.owner, next_offset)

    @staticmethod
    async def _quietly(call: Any) -> None:
        try:
            await call
        except PublishError as failed:
            log(f"telegram bot: {failed.message}")


class TelegramUpdates:
    """POST /integrations/telegram/updates: the operator bot's updates, when Telegram sends them (FRONTEND_URL is
    public https, see TelegramBotWatcher). Only a request bearing the secret rustiz gave setWebhook is read."""

    def __init__(self, app: Any):
        self.app, self.store, self.config = app, app.store, app.config

    @route_options(authenticated=False)  # (Telegram's request: the secret header is its credential)
    @documented("Telegram's operator bot: its updates, sent by Telegram with the secret of setWebhook; a /connect "
                "<code> makes the chat a channel (rustiz)", ("200", object_schema({})),
                more_answers={"404": {"description": "No operator bot, or not Telegram's secret"}})
    async def receive(self, request: Request) -> Response:
        import hmac
        bot = operator_bot(self.config.settings or {})
        given = request.headers.get("x-telegram-bot-api-secret-token", "")
        if bot is None or not hmac.compare_digest(given.encode(), webhook_secret(bot[0]).encode()):
            raise not_found("no Telegram webhook here")
        await UpdateHandler(self.store, self.app.http, bot).handle(request.json())
        return json_response({})
