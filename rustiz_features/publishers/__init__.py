"""Publishers: one module per platform, each with one Provider (publishers/base.py) named PROVIDER.

Rules of this package:
- A platform's module is imported the first time a channel of that platform is connected, validated or
  published to (`provider_for`); nothing here imports one before.
- A platform module imports base.py and the shared helpers beside it (markup, articles, secp256k1,
  websocket, mastodon_shared...), the catalogue and the outbound client, never another platform's module.
- A provider never sleeps or retries: it raises one of base.py's errors, and the scheduler decides.
- Adding a platform: its module here, named by `publisher` in its descriptor (catalogue.py).
"""
from __future__ import annotations

from typing import Any, Optional

from ..catalogue import DESCRIPTORS

# provider identifier (Postiz's) -> its module in this package, from the descriptors that name one
PROVIDER_MODULES = {identifier: descriptor.publisher for identifier, descriptor in DESCRIPTORS.items()
                    if descriptor.publisher is not None}


def provider_for(identifier: str) -> Optional[Any]:
    """The Provider that publishes to `identifier`'s platform, its module imported on first use; None when
    rustiz has none for it."""
    module_name = PROVIDER_MODULES.get(identifier)
    if module_name is None:
        return None
    import importlib
    return importlib.import_module(f"{__name__}.{module_name}").PROVIDER
