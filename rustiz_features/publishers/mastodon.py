"""Mastodon, on any instance, and any other server speaking its client API (Pleroma, Akkoma, GoToSocial,
Pixelfed and Friendica too): one-click sign-in with Mastodon's granular scopes, or a pasted access token.
What it does is mastodon_shared.py's; the server's software, detected at connect, decides its rules.
"""
from __future__ import annotations

from .mastodon_shared import MastodonApiProvider


class MastodonProvider(MastodonApiProvider):
    identifier = "mastodon"


PROVIDER = MastodonProvider()
