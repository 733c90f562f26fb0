"""Discord as its API serves it, both ways rustiz connects it.

A channel webhook: GET answers the webhook object, POST ?wait=true answers the message made (204 without
wait), JSON or multipart payload_json + files[n], 2,000 characters, forum channels that need thread_name,
DELETE .../messages/:id. The operator's app and bot (issue 28): the consent page with the bot scope (the user
picks a server there; the token answer carries `guild`), the token endpoint (HTTP Basic; invalid_grant for a
used code or a dead refresh token), GET /guilds/:id and /guilds/:id/channels with the bot's token, messages
in a channel, a thread opened on a message (once: 160004 after), deleting a message (10008 when gone),
Missing Access / Missing Permissions for channels the bot may not post in. Discord's error bodies and
rate-limit headers throughout."""
from __future__ import annotations

import base64
import itertools
import json
import secrets

from fakes import FakePlatform, FakeRequest, Reconnect, answer, consent_page

WEBHOOK_ID = "1199887766554433221"
TOKEN = "hook-token-abc"
GUILD_ID = "1100000000000000001"
CHANNEL_ID = "1100000000000000002"


BOT_TOKEN = "bot-token-MTEx.GhIj.kLmN"
NEWS_ID = "1100000000000000003"  # an announcement channel
LOCKED_ID = "1100000000000000004"  # a text channel the bot may not post in
SERVER_CHANNELS = [
    {"id": CHANNEL_ID, "type": 0, "name": "general"}, {"id": NEWS_ID, "type": 5, "name": "news"},
    {"id": LOCKED_ID, "type": 0, "name": "staff"}, {"id": "1100000000000000005", "type": 2, "name": "Voice"},
    {"id": "1100000000000000006", "type": 4, "name": "Text Channels"},
    {"id": "1100000000000000007", "type": 15, "name": "help-forum"},
]
RATE_HEADERS = {"X-RateLimit-Limit": 5, "X-RateLimit-Remaining": 4, "X-RateLimit-Reset-After": 0.4,
                "X-RateLimit-Bucket": "abcd1234"}


def discord_error(status: int, message: str, code: int, **extra) -> tuple:
    return answer(status, {"message": message, "code": code, **extra})


def too_long() -> tuple:
    return discord_error(400, "Invalid Form Body", 50035, errors={"content": {"_errors": [
        {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}})


class FakeDiscord(FakePlatform):
    post_settings = {"channel": "general"}  # Postiz's DTO asks for a channel; the webhook decides it

    def __init__(self, forum: bool = False, avatar: str | None = "a1b2c3"):
        super().__init__()
        self.forum, self.avatar = forum, avatar
        self.webhook_id, self.token = WEBHOOK_ID, TOKEN  # a test makes a new webhook by changing both
        self.ids = itertools.count(1300000000000000001)
        self.threads: dict = {}  # thread id -> name, for the topics a forum webhook opened
        self.route("GET", r"/api/webhooks/(\d+)/([\w-]+)", self.webhook)
        self.route("POST", r"/api/webhooks/(\d+)/([\w-]+)", self.execute)
        # (issue 28, chat: the operator's app and bot; webhook messages deleted)
        self.messages: dict = {}  # message id -> channel id, of every message made (by the webhook or the bot)
        self.deleted: list = []  # ids of the messages deleted
        self.client_id, self.client_secret, self.bot_token = "1234567890", "discord-secret", BOT_TOKEN
        self.codes: dict = {}  # code -> redirect_uri
        self.refresh_tokens: set = set()
        self.bot_in_server = True
        self.thread_of: dict = {}  # message id -> the thread opened on it
        self.route("GET", r"/oauth2/authorize", self.consent)
        self.route("POST", r"/api/oauth2/token", self.token_endpoint)
        self.route("GET", r"/api/guilds/(\d+)", self.guild)
        self.route("GET", r"/api/guilds/(\d+)/channels", self.guild_channels)
        self.route("POST", r"/api/channels/(\d+)/messages", self.bot_message)
        self.route("POST", r"/api/channels/(\d+)/messages/(\d+)/threads", self.open_thread)
        self.route("DELETE", r"/api/channels/(\d+)/messages/(\d+)", self.bot_delete)
        self.route("DELETE", r"/api/webhooks/(\d+)/([\w-]+)/messages/(\d+)", self.webhook_delete)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_DISCORD_AUTH_URL": self.url, "RUSTIZ_DISCORD_API_URL": self.url}

    def app_settings(self) -> dict:
        """The operator's app as config.env names it (Postiz's variables)."""
        return {"DISCORD_CLIENT_ID": self.client_id, "DISCORD_CLIENT_SECRET": self.client_secret,
                "DISCORD_BOT_TOKEN_ID": self.bot_token}

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Announcements bot", None

    def credentials(self, token: str | None = None) -> dict:
        return {"webhookUrl": f"{self.url}/api/webhooks/{self.webhook_id}/{token or self.token}"}

    def _refused(self, request: FakeRequest):
        webhook_id, token = request.match.groups()
        if webhook_id != self.webhook_id:
            return discord_error(404, "Unknown Webhook", 10015)
        if token != self.token:
            return discord_error(401, "Invalid Webhook Token", 50027)
        return None

    def webhook(self, request: FakeRequest):
        return self._refused(request) or answer(200, {
            "id": self.webhook_id, "type": 1, "name": "Announcements bot", "avatar": self.avatar,
            "channel_id": CHANNEL_ID, "guild_id": GUILD_ID, "application_id": None, "token": self.token})

    @staticmethod
    def message_body(request: FakeRequest) -> tuple:
        """(payload, files) of a message: JSON, or multipart payload_json + files[n] as (name, filename, type, size)."""
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            return request.json(), []
        parts = request.multipart()
        payload = json.loads(parts.pop("payload_json")[1])
        return payload, [(name, filename, content_type, len(data)) for name, (filename, data, content_type) in parts.items()]

    def execute(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        payload, files = self.message_body(request)
        content = payload.get("content") or ""
        if len(content) > 2000:
            return too_long()
        if not content and not files:
            return discord_error(400, "Cannot send an empty message", 50006)
        channel_id = request.query.get("thread_id") or CHANNEL_ID
        if self.forum and channel_id == CHANNEL_ID:
            if not payload.get("thread_name"):
                return discord_error(400, "Webhooks posted to forum channels must have a thread_name or thread_id",
                                     220001)
            channel_id = str(next(self.ids))
            self.threads[channel_id] = payload["thread_name"]
        message_id = str(next(self.ids))
        self.messages[message_id] = channel_id
        self.published.append({"id": message_id, "content": content, "files": files, "channel_id": channel_id,
                               "attachments": payload.get("attachments", []), "thread_name": payload.get("thread_name")})
        headers = RATE_HEADERS
        if request.query.get("wait") != "true":
            return answer(204, b"", headers)
        return answer(200, {"id": message_id, "type": 0, "content": content, "channel_id": channel_id,
                            "webhook_id": self.webhook_id, "attachments": [{"filename": file[1]} for file in files]},
                      headers)


    # --- the operator's app and bot (issue 28) ----------------------------------------------------------

    def consent(self, request: FakeRequest):
        """Discord's authorize page: with the bot scope the user also picks the server to add the bot to."""
        query = request.query
        if query.get("client_id") != self.client_id or query.get("response_type") != "code" \
                or not query.get("redirect_uri"):
            return answer(400, "<html><body>Invalid OAuth2 request</body></html>", {"Content-Type": "text/html"})
        code = "code-" + secrets.token_urlsafe(8)
        self.codes[code] = query["redirect_uri"]
        return consent_page(f"Add the bot to a server? scope={query.get('scope')} "
                            f"permissions={query.get('permissions')}", query["redirect_uri"],
                            {"code": code, "state": query.get("state", ""), "guild_id": GUILD_ID,
                             "permissions": query.get("permissions", "")},
                            {"error": "access_denied", "error_description": "The resource owner or authorization "
                             "server denied the request", "state": query.get("state", "")}, allow_label="Authorize")

    def token_endpoint(self, request: FakeRequest):
        expected = "Basic " + base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if request.headers.get("authorization") != expected:
            return answer(401, {"error": "invalid_client"})
        form = request.form()
        tokens = {"access_token": "at-" + secrets.token_urlsafe(8), "token_type": "Bearer", "expires_in": 604800,
                  "refresh_token": "rt-" + secrets.token_urlsafe(8), "scope": "bot identify guilds"}
        if form.get("grant_type") == "authorization_code":
            if not form.get("redirect_uri") or self.codes.pop(form.get("code"), None) != form.get("redirect_uri"):
                return answer(400, {"error": "invalid_grant", "error_description": 'Invalid "code" in request.'})
            tokens["guild"] = {"id": GUILD_ID, "name": "Rustiz Fans", "icon": "f00d"}
        elif form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return answer(400, {"error": "invalid_grant"})
            self.refresh_tokens.discard(form["refresh_token"])
        else:
            return answer(400, {"error": "unsupported_grant_type"})
        self.refresh_tokens.add(tokens["refresh_token"])
        return answer(200, tokens)

    def _bot_refused(self, request: FakeRequest):
        if request.headers.get("authorization") != f"Bot {self.bot_token}":
            return discord_error(401, "401: Unauthorized", 0)
        return None

    def guild(self, request: FakeRequest):
        refused = self._bot_refused(request)
        if refused:
            return refused
        if request.match[1] != GUILD_ID:
            return discord_error(404, "Unknown Guild", 10004)
        if not self.bot_in_server:
            return discord_error(403, "Missing Access", 50001)
        return answer(200, {"id": GUILD_ID, "name": "Rustiz Fans", "icon": "f00d", "owner_id": "1"}, RATE_HEADERS)

    def guild_channels(self, request: FakeRequest):
        refused = self._bot_refused(request) or (None if request.match[1] == GUILD_ID else
                                                  discord_error(404, "Unknown Guild", 10004))
        return refused or answer(200, SERVER_CHANNELS, RATE_HEADERS)

    def bot_message(self, request: FakeRequest):
        refused = self._bot_refused(request)
        if refused:
            return refused
        channel_id = request.match[1]
        if channel_id == LOCKED_ID:
            return discord_error(403, "Missing Permissions", 50013)
        if channel_id not in {item["id"] for item in SERVER_CHANNELS} and channel_id not in self.thread_of.values():
            return discord_error(404, "Unknown Channel", 10003)
        payload, files = self.message_body(request)
        content = payload.get("content") or ""
        if len(content) > 2000:
            return too_long()
        message_id = str(next(self.ids))
        self.messages[message_id] = channel_id
        self.published.append({"id": message_id, "content": content, "files": files, "channel_id": channel_id,
                               "by": "bot"})
        return answer(200, {"id": message_id, "type": 0, "content": content, "channel_id": channel_id}, RATE_HEADERS)

    def open_thread(self, request: FakeRequest):
        refused = self._bot_refused(request)
        if refused:
            return refused
        channel_id, message_id = request.match.groups()
        if self.messages.get(message_id) != channel_id:
            return discord_error(404, "Unknown Message", 10008)
        if message_id in self.thread_of:
            return discord_error(400, "A thread has already been created for this message", 160004)
        thread_id = str(next(self.ids))
        self.thread_of[message_id] = thread_id
        return answer(201, {"id": thread_id, "type": 11, "parent_id": channel_id, "name": request.json()["name"]})

    def _delete(self, channel_id: str, message_id: str):
        if self.messages.get(message_id) != channel_id:
            return discord_error(404, "Unknown Message", 10008)
        del self.messages[message_id]
        self.deleted.append(message_id)
        return answer(204, b"", RATE_HEADERS)

    def bot_delete(self, request: FakeRequest):
        return self._bot_refused(request) or self._delete(*request.match.groups())

    def webhook_delete(self, request: FakeRequest):
        webhook_id, token, message_id = request.match.groups()
        if webhook_id != self.webhook_id:
            return discord_error(404, "Unknown Webhook", 10015)
        if token != self.token:
            return discord_error(401, "Invalid Webhook Token", 50027)
        return self._delete(request.query.get("thread_id") or CHANNEL_ID, message_id)


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeDiscord


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"webhookUrl": f"{url}/api/webhooks/1/token"}


def _new_webhook(fake, extras):
    fake.webhook_id, fake.token = "1199887766554433299", "hook-token-new"
    return fake.credentials()


RECONNECT = Reconnect(lambda fake, extras: fake.credentials(), lambda fake: fake.credentials(token="wrong-token"),
                      "Invalid Webhook Token", _new_webhook)
