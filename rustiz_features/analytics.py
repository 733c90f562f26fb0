"""Analytics in Postiz's shape (GET /analytics/:integration, GET /analytics/post/:postId), read from the
platforms on demand.

Rules:
- Figures are the platform's own counts, fetched when asked and kept for ANALYTICS_CACHE_SECONDS; never
  invented. A platform without counts answers [] (as Postiz); one that fails answers 502 saying so.
- Shape: [{"label", "data": [{"total": "<number as text>", "date": "YYYY-MM-DD"}], "percentageChange"}]:
  today's counts as one point each (platforms give totals, not history), so percentageChange is 0.
"""
from __future__ import annotations

import time
from typing import Awaitable, Optional

from rustiz import App, Request, Response, json_response, nest_error, not_found
from .api_docs import INTEGER, array_of, documented, object_schema, parameter, ref
from .http_client import HttpClient
from .publishers import provider_for
from .connect import TokenKeeper
from .publishers.base import Channel, PublishError, Release
from .publishers.oauth import OAuthProvider
from .storage import posts as post_store
from .storage import channels as channel_store

ANALYTICS_CACHE_SECONDS = 600
ANALYTICS_CACHE_ENTRIES = 1000
MAX_DAYS = 365
_FIGURES = array_of(ref("AnalyticsData"))
_DAYS_BACK = parameter("query", "date", "Days back, 1 to 365 (default 30); platforms that give a daily history "
                                        "(Pinterest) answer that many days, the others today's totals", schema=INTEGER)


def analytics_days(request: Request) -> int:
    """?date=<days back> (Postiz's name), 1..365; 30 when absent (as the Postiz CLI sends none)."""
    raw = request.query.get("date", "30") if request.query_string else "30"
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_DAYS:
        raise nest_error(400, f"date must be a whole number of days from 1 to {MAX_DAYS}, got {raw[:20]!r}")
    return int(raw)


class AnalyticsApi:
    """The two analytics routes, with a small per-worker cache so a dashboard does not hammer a platform."""

    def __init__(self, app: App):
        self.app, self.store = app, app.store
        self.cache: dict = {}  # (kind, id, days) -> (expires at, figures)

    @property
    def http(self) -> HttpClient:
        return self.app.http

    @documented("A channel's figures, read from its platform (cached 10 minutes); [] where the platform gives none. "
                "409: the channel lacks its credentials or the operator's app; 502: the platform did not answer",
                ("200", _FIGURES), "BadRequest NotFound Conflict PlatformUnreachable",
                (parameter("path", "integration", "A channel id"), _DAYS_BACK))
    async def channel(self, request: Request, organization_id: str) -> Response:
        days = analytics_days(request)
        channel = await self.store.off_loop(channel_store.channel, self.store, organization_id, request.params["integration"])
        if channel is None:
            raise not_found("Integration not found")
        return json_response(await self._cached(("channel", channel["id"], days), channel["id"], channel["name"],
                                                channel["provider_identifier"], None, days))

    @documented("A published post's figures, read from its platform (cached 10 minutes); [] before it is published",
                ("200", {"anyOf": [_FIGURES, object_schema({"missing": {"const": True}})]}),
                "BadRequest NotFound Conflict PlatformUnreachable",
                (parameter("path", "postId", "A post id"), _DAYS_BACK))
    async def post(self, request: Request, organization_id: str) -> Response:
        days = analytics_days(request)
        post = await self.store.off_loop(post_store.post, self.store, organization_id, request.params["postId"])
        if post is None:
            raise not_found("Post not found")
        if post["releaseId"] == "missing":
            return json_response({"missing": True})
        if post["state"] != "PUBLISHED" or not post["releaseId"]:
            return json_response([])
        channel = await self.store.off_loop(channel_store.channel, self.store, organization_id, post["integrationId"])
        if channel is None:
            raise not_found("Post not found")
        release = Release(post["releaseId"], post["releaseURL"] or "")
        return json_response(await self._cached(("post", post["id"], days), channel["id"], channel["name"],
                                                channel["provider_identifier"], release, days))

    async def _cached(self, key: tuple, channel_id: str, name: str, provider_id: str, release: Optional[Release],
                      days: int) -> list:
        now = time.monotonic()
        hit = self.cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        figures = await self._read(channel_id, name, provider_id, release, days)
        if len(self.cache) >= ANALYTICS_CACHE_ENTRIES:
            self.cache = {k: v for k, v in self.cache.items() if v[0] > now}
            if len(self.cache) >= ANALYTICS_CACHE_ENTRIES:
                self.cache.clear()
        self.cache[key] = (now + ANALYTICS_CACHE_SECONDS, figures)
        return figures

    async def _read(self, channel_id: str, name: str, provider_id: str, release: Optional[Release],
                    days: int) -> list:
        provider = provider_for(provider_id)
        if provider is None:
            return []
        if isinstance(provider, OAuthProvider) and provider.needs_operator_app and \
                provider.app(self.app.config.settings or {}) is None:
            raise nest_error(409, f"{provider.label}'s figures need the operator's app, which this server does not "
                                  f"have: set {' and '.join(provider.app_variables)} in config.env")
        credentials, session = await self.store.off_loop(channel_store.channel_secrets, self.store, channel_id)
        channel = Channel(channel_id, name, credentials, session, self.http,
                          lambda saved: channel_store.save_channel_session(self.store, channel_id, saved))
        def read() -> Awaitable:
            return (provider.channel_analytics(channel, days) if release is None
                    else provider.post_analytics(channel, release, days))
        try:
            if isinstance(provider, OAuthProvider):  # (tokens refreshed as for a publish, one worker at a time)
                figures = await TokenKeeper(self.app.config, self.store, self.http).call(provider, channel, read)
            else:
                figures = await read()
        except PublishError as failed:
            raise nest_error(502, f"{provider.label} did not give its figures: {failed.message}; try again "
                                  "later") from None
        except KeyError as missing:  # a channel row without the credentials its platform needs (hand-made, old)
            raise nest_error(409, f"the channel \"{name}\" has no {missing.args[0]} among its {provider.label} "
                                  "credentials: connect it again") from None
        return figures or []
