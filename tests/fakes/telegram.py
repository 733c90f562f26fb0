"""The Telegram Bot API as rustiz uses it (https://core.telegram.org/bots/api): getMe, getChat,
getChatMember, sendMessage, sendPhoto/sendVideo/sendAnimation and sendMediaGroup, with parameters as
JSON or multipart, answers as {"ok": true, "result": ...} or {"ok": false, "error_code", "description"},
and parse_mode HTML checked as strictly as Telegram does (unknown tags are refused).

For the operator's bot (issue 28): getUpdates as a long poll (it answers the updates from `offset` on, waiting
up to `timeout` seconds, capped here, for one to come; updates before `offset` are forgotten, as Telegram
confirms them), with a count of the polls in flight at once; deleteMessage (400 "message to delete not found"
for a message that is not there) and deleteMessages (skips the missing ones); setWebhook / deleteWebhook, and
getUpdates refused with 409 while a webhook is set."""
from __future__ import annotations

import html
import itertools
import json
import re
import threading
import time

from fakes import FakePlatform, FakeRequest, Reconnect, answer

TELEGRAM_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre", "blockquote",
                 "tg-spoiler", "span", "tg-emoji"}
SINGLE_MEDIA = {"sendPhoto": "photo", "sendVideo": "video", "sendAnimation": "animation"}


def ok(result) -> tuple:
    return answer(200, {"ok": True, "result": result})


def error(code: int, description: str, **parameters) -> tuple:
    body = {"ok": False, "error_code": code, "description": description}
    if parameters:
        body["parameters"] = parameters
    return answer(code, body)


def visible_length(text: str) -> int:
    return len(html.unescape(re.sub(r"<[^>]*>", "", text)).encode("utf-16-le")) // 2


class FakeTelegram(FakePlatform):
    def __init__(self):
        super().__init__()
        self.token = "7000001:AAH" + "k" * 32
        self.bot = {"id": 7000001, "is_bot": True, "first_name": "Rustiz", "username": "rustiz_bot"}
        self.chat = {"id": -1001234567890, "type": "channel", "title": "Rustiz News", "username": "rustiz_news"}
        self.member = {"status": "administrator", "can_post_messages": True}
        self.messages: dict = {}
        self.message_ids = itertools.count(501)
        self.env = {"RUSTIZ_TELEGRAM_API_URL": self.url}
        self.route("POST", r"/bot([^/]+)/(\w+)", self.call)
        # (issue 28, chat: the operator's bot)
        self.updates: list = []
        self.update_ids = itertools.count(800000001)
        self.deleted: list = []
        self.polls_now = self.most_polls_at_once = 0
        self.offsets: list = []  # the offset of each getUpdates
        self.poll_lock = threading.Lock()

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Rustiz News", "rustiz_news"

    def credentials(self, chat_id="@rustiz_news") -> dict:
        return {"botToken": self.token, "chatId": chat_id}

    def sends(self) -> list:
        """The send* requests (answered or not), as (method, parameters)."""
        return [(request.path.rpartition("/")[2], self.parameters(request))
                for request in self.requests_to("POST", r"/bot[^/]+/send\w+")]

    @staticmethod
    def parameters(request: FakeRequest) -> dict:
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("application/json"):
            return request.json()
        if content_type.startswith("multipart/form-data"):
            return {name: part if part[0] else part[1].decode() for name, part in request.multipart().items()}
        return {**request.query, **(request.form() if request.body else {})}

    def call(self, request: FakeRequest):
        if request.match[1] != self.token:
            return error(401, "Unauthorized")
        method, parameters = request.match[2], self.parameters(request)
        if method == "getMe":
            return ok(self.bot)
        if method == "getUpdates":
            return self.webhook_conflict() or self.get_updates(parameters)
        if method in ("setWebhook", "deleteWebhook"):
            self.webhook = parameters if method == "setWebhook" else None
            return ok(True)
        if str(parameters.get("chat_id")) not in (str(self.chat["id"]), f"@{self.chat.get('username')}"):
            return error(400, "Bad Request: chat not found")
        if method == "getChat":
            return ok(self.chat)
        if method == "getChatMember":
            return ok({"user": self.bot, **self.member})
        if method == "sendMessage":
            return self.send_message(parameters)
        if method in SINGLE_MEDIA:
            return self.send_single(method, parameters)
        if method == "sendMediaGroup":
            return self.send_album(parameters)
        if method == "deleteMessage":
            if self.messages.pop(parameters.get("message_id"), None) is None:
                return error(400, "Bad Request: message to delete not found")
            self.deleted.append(parameters["message_id"])
            return ok(True)
        if method == "deleteMessages":
            found = [number for number in parameters.get("message_ids") or [] if self.messages.pop(number, None)]
            self.deleted += found
            return ok(True)
        return error(404, "Not Found: method not found")

    # --- the operator's bot: updates -----------------------------------------------------------

    webhook = None  # setWebhook's parameters while one is set

    def webhook_conflict(self):
        if self.webhook is not None:
            return error(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook "
                              "to delete the webhook first")
        return None

    def push(self, update: dict) -> int:
        """Queue an update (its update_id is given here unless it has one); returns the update_id."""
        update = {"update_id": next(self.update_ids), **update} if "update_id" not in update else update
        with self.poll_lock:
            self.updates.append(update)
        return update["update_id"]

    def command(self, text: str, chat: dict | None = None, kind: str = "channel_post") -> int:
        """Someone sends `text` in `chat` (this fake's chat unless given): returns the update's id."""
        chat = chat or {key: self.chat[key] for key in ("id", "type", "title", "username") if key in self.chat}
        message = {"message_id": next(self.message_ids), "date": int(time.time()), "chat": chat, "text": text}
        self.messages[message["message_id"]] = message
        return self.push({kind: message})

    def get_updates(self, parameters: dict):
        offset, limit = int(parameters.get("offset") or 0), int(parameters.get("limit") or 100)
        with self.poll_lock:
            self.offsets.append(offset)
            self.polls_now += 1
            self.most_polls_at_once = max(self.most_polls_at_once, self.polls_now)
        try:
            deadline = time.monotonic() + min(float(parameters.get("timeout") or 0), 2.0)
            while True:
                with self.poll_lock:
                    self.updates = [update for update in self.updates
                                    if not isinstance(update.get("update_id"), int) or update["update_id"] >= offset]
                    waiting = self.updates[:limit]
                if waiting or time.monotonic() >= deadline:
                    return ok(waiting)
                time.sleep(0.05)
        finally:
            with self.poll_lock:
                self.polls_now -= 1

    # --- sending ------------------------------------------------------------------------------

    def _problem(self, text: str, parameters: dict, limit: int, what: str):
        if parameters.get("parse_mode") == "HTML":
            for tag in re.findall(r"</?([a-zA-Z0-9-]+)", text):
                if tag.lower() not in TELEGRAM_TAGS:
                    return error(400, f"Bad Request: can't parse entities: Unsupported start tag \"{tag}\"")
        if visible_length(text) > limit:
            return error(400, f"Bad Request: {what} is too long")
        reply = parameters.get("reply_parameters")
        reply = json.loads(reply) if isinstance(reply, str) else reply
        if reply and reply["message_id"] not in self.messages:
            return error(400, "Bad Request: message to be replied not found")
        return None

    def _message(self, parameters: dict, **content) -> dict:
        reply = parameters.get("reply_parameters")
        reply = json.loads(reply) if isinstance(reply, str) else reply
        message = {"message_id": next(self.message_ids), "date": 1700000000,
                   "chat": {key: self.chat[key] for key in ("id", "type", "title", "username") if key in self.chat},
                   "reply_to": reply["message_id"] if reply else None, **content}
        self.messages[message["message_id"]] = message
        self.published.append(message)
        return {key: value for key, value in message.items() if key != "media"}  # the file bytes are not JSON

    def send_message(self, parameters: dict):
        text = parameters.get("text") or ""
        if not text.strip():
            return error(400, "Bad Request: message text is empty")
        return self._problem(text, parameters, 4096, "message") or ok(self._message(parameters, text=text))

    def send_single(self, method: str, parameters: dict):
        kind = SINGLE_MEDIA[method]
        caption = parameters.get("caption") or ""
        if not isinstance(parameters.get(kind), tuple):
            return error(400, f"Bad Request: there is no {kind} in the request")
        data = parameters[kind][1]
        return self._problem(caption, parameters, 1024, "message caption") or ok(
            self._message(parameters, caption=caption, media=[(kind, data)]))

    def send_album(self, parameters: dict):
        items = json.loads(parameters["media"])
        if not 2 <= len(items) <= 10:
            return error(400, "Bad Request: wrong number of media items in the album")
        caption = items[0].get("caption") or ""
        problem = self._problem(caption, {**parameters, "parse_mode": items[0].get("parse_mode")}, 1024,
                                "message caption")
        if problem:
            return problem
        files = []
        for item in items:
            attached = parameters.get(item["media"].removeprefix("attach://"))
            if not isinstance(attached, tuple):
                return error(400, "Bad Request: wrong file identifier/HTTP URL specified")
            files.append((item["type"], attached[1]))
        first = self._message(parameters, caption=caption, media=files[:1])
        return ok([first] + [self._message(parameters, media=[file]) for file in files[1:]])


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeTelegram


def credentials_at(url: str) -> dict:
    """Credentials of some account: they cannot aim elsewhere, the API's address is the operator's
    (RUSTIZ_TELEGRAM_API_URL)."""
    return {"botToken": "123456789:AAE" + "x" * 30, "chatId": "@rustiz_news"}


def _renew(fake, extras):
    fake.token = "7000001:AAH" + "n" * 32  # /revoke at @BotFather: the same bot, a new token
    return fake.credentials()


def _other_account(fake, extras):
    fake.token, fake.bot = "7000002:AAH" + "o" * 32, {**fake.bot, "id": 7000002, "username": "other_bot"}
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {**fake.credentials(), "botToken": "7000001:AAH" + "w" * 32},
                      "Unauthorized", _other_account)
