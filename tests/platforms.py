"""One fake platform per provider rustiz publishes to, started together, for tests that connect
channels of every kind (the API's and the CLI's channel tests, the end-to-end publish of each)."""
from __future__ import annotations

from fakes.bluesky import FakeBluesky
from fakes.devto import FakeDevto
from fakes.discord import FakeDiscord
from fakes.hashnode import FakeHashnode
from fakes.lemmy import FakeLemmy
from fakes.listmonk import FakeListmonk
from fakes.mastodon import FakeMastodon
from fakes.nostr import FakeNostrRelay
from fakes.slack import FakeSlack
from fakes.telegram import FakeTelegram
from fakes.webhook import FakeWebhookReceiver
from fakes.wordpress import FakeWordPress

FAKES = {"bluesky": FakeBluesky, "devto": FakeDevto, "discord": FakeDiscord, "hashnode": FakeHashnode,
         "lemmy": FakeLemmy, "listmonk": FakeListmonk, "mastodon": FakeMastodon, "nostr": FakeNostrRelay,
         "slack": FakeSlack, "telegram": FakeTelegram, "webhook": FakeWebhookReceiver, "wordpress": FakeWordPress}


class Platforms:
    """`fakes[provider]`, `env` (every fake's variables, to start rustiz with), `credentials(provider)`."""

    def __init__(self):
        self.fakes = {}
        try:
            for provider, fake in FAKES.items():
                self.fakes[provider] = fake()
        except BaseException:
            self.close()
            raise
        self.env = {name: value for fake in self.fakes.values() for name, value in (fake.env or {}).items()}

    def credentials(self, provider: str) -> dict:
        return self.fakes[provider].credentials()

    def close(self) -> None:
        for fake in self.fakes.values():
            fake.close()
