"""One fake platform per provider that connects with pasted credentials, read from the catalogue and
started together, for tests that connect channels of every kind (the API's and the CLI's channel tests,
the address guard's, the end-to-end publish of each). A provider's fake is tests/fakes/<its publisher
module>.py, with what tests/fakes/__init__.py lists for these platforms."""
from __future__ import annotations

import importlib
from types import ModuleType

from rustiz_features.catalogue import CREDENTIAL_SPECS, DESCRIPTORS


def fake_module(provider: str) -> ModuleType:
    """tests/fakes/<the provider's publisher module>.py."""
    return importlib.import_module(f"fakes.{DESCRIPTORS[provider].publisher}")


CONNECTABLE = sorted(CREDENTIAL_SPECS)  # the providers that connect with pasted credentials
FAKES = {provider: fake_module(provider).FAKE for provider in CONNECTABLE}
# Settings each provider's Postiz DTO requires to publish (the others need none).
REQUIRED_SETTINGS = {provider: fake.post_settings for provider, fake in FAKES.items() if fake.post_settings}


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
