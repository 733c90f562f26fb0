"""A Slack incoming webhook as Slack serves it: JSON {text, blocks} in, plain text out ("ok", or an
error code such as invalid_blocks, no_service or channel_is_archived), 429 with Retry-After."""
from __future__ import annotations

from fakes import FakePlatform, FakeRequest, answer

PATH = "/services/T0AB12CD3/B0EF45GH6/sEcReTtOkEn123"


def slack_error(status: int, code: str, headers: dict | None = None) -> tuple:
    return answer(status, code, {"Content-Type": "text/html", **(headers or {})})


class FakeSlack(FakePlatform):
    def __init__(self):
        super().__init__()
        self.removed = False
        self.path = PATH  # the webhook's; a test makes a new webhook by changing it
        self.route("POST", r"/services/(T\w+)/(B\w+)/(\w+)", self.incoming)

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
