"""Pixelfed: mastodon_shared.py's provider under Pixelfed's name in the picker (Pixelfed speaks Mastodon's client
API). It asks for the coarse scopes Pixelfed knows and connects only a server that runs Pixelfed; its rules (a
post needs a photo or a video, the server's own limits) follow from the software, as on any Mastodon channel.
"""
from __future__ import annotations

from .mastodon_shared import COARSE_SCOPES, MastodonApiProvider


class PixelfedProvider(MastodonApiProvider):
    identifier = "pixelfed"
    software = "pixelfed"
    scopes = COARSE_SCOPES


PROVIDER = PixelfedProvider()
