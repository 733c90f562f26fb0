"""A receiver for rustiz's own `webhook` provider and for organization webhooks: checks each
signature, drops repeated deliveries (as a receiver should), records what it accepted."""
from __future__ import annotations

import hashlib
import hmac

from fakes import FakePlatform, FakeRequest, Reconnect, answer


def signature_ok(request: FakeRequest, secret: str) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), request.headers["x-rustiz-timestamp"].encode() + b"." +
                                    request.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(request.headers.get("x-rustiz-signature", ""), expected)


class FakeWebhookReceiver(FakePlatform):
    def __init__(self, secret: str | None = "hook-secret"):
        super().__init__()
        self.secret = secret
        self.deliveries: dict = {}
        self.events: list = []
        self.route("POST", "/hook", self.receive)

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return f"Webhook to {self.url.removeprefix('http://')}", None

    def credentials(self) -> dict:
        return {"url": self.url + "/hook", **({"secret": self.secret} if self.secret else {})}

    def receive(self, request: FakeRequest):
        if self.secret is not None and not signature_ok(request, self.secret):
            return answer(401, {"message": "bad signature"})
        event = request.json()
        self.events.append(event)
        if event["event"] != "post.publish":
            return answer(200, {})
        delivery = request.headers["x-rustiz-delivery"]
        if delivery not in self.deliveries:
            self.published.append(event["post"])
            self.deliveries[delivery] = len(self.published)
        number = self.deliveries[delivery]
        return answer(200, {"id": f"msg-{number}", "url": f"{self.url}/m/{number}"})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeWebhookReceiver


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"url": f"{url}/hook"}


def _renew(fake, extras):
    fake.secret = "a-new-signing-secret"
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {**fake.credentials(), "secret": "not-the-secret"},
                      "bad signature", lambda fake, extras: extras(FakeWebhookReceiver()).credentials())
