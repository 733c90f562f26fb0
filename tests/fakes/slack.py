"""A Slack incoming webhook as Slack serves it: JSON {text, blocks} in, plain text out ("ok", or an
error code such as invalid_blocks, no_service or channel_is_archived), 429 with Retry-After."""
from __future__ import annotations

from fakes import FakePlatform, FakeRequest, Reconnect, answer

PATH = "/services/T0AB12CD3/B0EF45GH6/sEcReTtOkEn123"


def slack_error(status: int, code: str, headers: dict | None = None) -> tuple:
    return answer(status, code, {"Content-Type": "text/html", **(headers or {})})


class FakeSlack(FakePlatform):
    post_settings = {"channel": "general"}  # as Discord's

    def __init__(self):
        super().__init__()
        self.removed = False
        self.path = PATH  # the webhook's; a test makes a new webhook by changing it
        self.route("POST", r"/services/(T\w+)/(B\w+)/(\w+)", self.incoming)

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Slack webhook", None

    def credentials(self) -> dict:
        return {"webhookUrl": self.url + self.path}

    def incoming(self, request: FakeRequest):
        if self.removed or request.path != self.path:
            return slack_error(404, "no_service")
        try:
            message = request.json()
        except ValueError:
            return slack_error(400, "invalid_payload")
        blocks = message.get("blocks") or []
        if not message.get("text") and not blocks:
            return slack_error(400, "no_text")
        if len(blocks) > 50:
            return slack_error(400, "invalid_blocks")
        for block in blocks:
            if block.get("type") == "section" and not 0 < len(block["text"]["text"]) <= 3000:
                return slack_error(400, "invalid_blocks")
            if block.get("type") == "image" and not (block.get("image_url") and block.get("alt_text")):
                return slack_error(400, "invalid_blocks")
        self.published.append(message)
        return slack_error(200, "ok")


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeSlack


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"webhookUrl": f"{url}/services/T1/B1/token"}


def _new_webhook(fake, extras):
    fake.path = "/services/T0AB12CD3/B0NEW0000/nEwSeCrEt456"
    return fake.credentials()


RECONNECT = Reconnect(lambda fake, extras: fake.credentials(),
                      lambda fake: {"webhookUrl": "https://hooks.slack.com/services/not-a-webhook"},
                      "this is not a Slack incoming webhook URL", _new_webhook)
