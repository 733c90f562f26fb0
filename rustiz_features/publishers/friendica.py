"""Friendica: mastodon_shared.py's provider under Friendica's name in the picker (Friendica speaks Mastodon's client
API). It asks for the coarse scopes Friendica knows and connects only a server that runs Friendica; the
server's own limits (its long posts) come from its instance document, as on any Mastodon channel.
"""
from __future__ import annotations

from .mastodon_shared import COARSE_SCOPES, MastodonApiProvider


class FriendicaProvider(MastodonApiProvider):
    identifier = "friendica"
    software = "friendica"
    scopes = COARSE_SCOPES
    resend_is_safe = False  # Friendica does not document Mastodon's Idempotency-Key: a repeat may post twice


PROVIDER = FriendicaProvider()
