"""A Discord channel webhook as Discord's API serves it: GET answers the webhook object, POST
?wait=true answers the message made (204 without wait), JSON or multipart payload_json + files[n],
2,000 characters, forum channels that need thread_name, and Discord's error bodies and rate-limit headers."""
from __future__ import annotations

import itertools
import json

from fakes import FakePlatform, FakeRequest, Reconnect, answer

WEBHOOK_ID = "1199887766554433221"
TOKEN = "hook-token-abc"
GUILD_ID = "1100000000000000001"
CHANNEL_ID = "1100000000000000002"


def discord_error(status: int, message: str, code: int, **extra) -> tuple:
    return answer(status, {"message": message, "code": code, **extra})


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

    def execute(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            parts = request.multipart()
            payload = json.loads(parts.pop("payload_json")[1])
            files = [(name, filename, content_type, len(data)) for name, (filename, data, content_type) in parts.items()]
        else:
            payload, files = request.json(), []
        content = payload.get("content") or ""
        if len(content) > 2000:
            return discord_error(400, "Invalid Form Body", 50035, errors={"content": {"_errors": [
                {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}})
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
        self.published.append({"id": message_id, "content": content, "files": files, "channel_id": channel_id,
                               "attachments": payload.get("attachments", []), "thread_name": payload.get("thread_name")})
        headers = {"X-RateLimit-Limit": 5, "X-RateLimit-Remaining": 4, "X-RateLimit-Reset-After": 0.4,
                   "X-RateLimit-Bucket": "abcd1234"}
        if request.query.get("wait") != "true":
            return answer(204, b"", headers)
        return answer(200, {"id": message_id, "type": 0, "content": content, "channel_id": channel_id,
                            "webhook_id": self.webhook_id, "attachments": [{"filename": file[1]} for file in files]},
                      headers)


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
