"""Analytics in Postiz's shape (GET /analytics/:integration, GET /analytics/post/:postId), the post's figures over
time (GET /analytics/post/:postId/history) and a channel's best times (GET /integrations/:id/best-times).

Rules:
- Figures are the platform's own counts, never invented. A platform without counts answers [] (as Postiz); one
  that fails answers 502 saying so.
- Shape: [{"label", "data": [{"total": "<number as text>", "date": "YYYY-MM-DD"}], "percentageChange"}].
  A channel's answer is its daily snapshots over the last days asked for (1 to 365) (analytics_snapshots.py); before its
  first snapshot, its figures as of now (one point each) — which then become today's snapshot, so the series
  starts. A post's answer is its figures as of now, kept ANALYTICS_CACHE_SECONDS.
"""
from __future__ import annotations

import time
from typing import Optional

from rustiz import App, Request, Response, json_response, nest_error, not_found
from .analytics_snapshots import best_times, channel_series, platform_figures, post_history, \
    start_series
from .api_docs import INTEGER, array_of, documented, object_schema, parameter, ref
from .http_client import HttpClient
from .publishers.base import Release
from .storage import posts as post_store
from .storage import channels as channel_store

ANALYTICS_CACHE_SECONDS = 600
ANALYTICS_CACHE_ENTRIES = 1000
MAX_DAYS = 365
_FIGURES = array_of(ref("AnalyticsData"))
_DAYS_BACK = parameter("query", "date", "Days back, 1 to 365 (default 30); platforms that give a daily history "
                                        "(Pinterest) answer that many days, the others today's totals", schema=INTEGER)
_PERIOD = parameter("query", "date", "Days back, 1 to 365 (default 30; the web app offers 7, 30 and 90)", schema=INTEGER)
_SNAPSHOTS = object_schema({"snapshots": array_of(object_schema({
    "age": {"enum": ["1h", "24h", "7d"]}, "takenAt": {"type": "string"},
    "figures": array_of(object_schema({"label": {"type": "string"}, "total": {"type": "string"}}))}))})
_BEST_TIMES = object_schema({
    "times": array_of(object_schema({"day": {"type": "string"}, "time": {"type": "string"}, "score": {"type": "number"}})),
    "basedOn": {"type": "integer"}, "reason": {"type": ["string", "null"]}})


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

    @documented("A channel's figures day by day over the last days asked for (1 to 365), from its daily snapshots; before "
                "the first snapshot, its figures as of now (which start the series). [] where the platform gives "
                "none. 409: the channel lacks its credentials or the operator's app; 502: the platform did not answer",
                ("200", _FIGURES), "BadRequest NotFound Conflict PlatformUnreachable",
                (parameter("path", "integration", "A channel id"), _PERIOD))
    async def channel(self, request: Request, organization_id: str) -> Response:
        days = analytics_days(request)  # (Postiz takes any number of days back: clients send 7, 14, 30...)
        channel = await self.store.off_loop(channel_store.channel, self.store, organization_id, request.params["integration"])
        if channel is None:
            raise not_found("Integration not found")
        series = await self.store.off_loop(channel_series, self.store, channel["id"], days, time.time())
        if series:
            return json_response(series)
        figures = await self._cached(("channel", channel["id"], days), channel["id"], channel["name"],
                                     channel["provider_identifier"], None, days)
        if figures:
            await self.store.off_loop(start_series, self.store, channel["id"], figures, time.time())
        return json_response(figures)

    @documented("A channel's best times to post: the weekdays and hours (in the organization's timezone) its own "
                "posts did best at, by their figures a day and a week after they went out; none (with the reason) "
                "before enough of its posts have figures", ("200", _BEST_TIMES), "NotFound",
                (parameter("path", "id", "A channel id"),))
    async def best_times(self, request: Request, organization_id: str) -> Response:
        channel = await self.store.off_loop(channel_store.channel, self.store, organization_id, request.params["id"])
        if channel is None:
            raise not_found("Integration not found")
        return json_response(await self.store.off_loop(best_times, self.store, organization_id, channel["id"]))

    @documented("A published post's figures as taken about 1 hour, 24 hours and 7 days after it went out (rustiz)",
                ("200", _SNAPSHOTS), "NotFound", (parameter("path", "postId", "A post id"),))
    async def post_history(self, request: Request, organization_id: str) -> Response:
        post = await self.store.off_loop(post_store.post, self.store, organization_id, request.params["postId"])
        if post is None:
            raise not_found("Post not found")
        return json_response({"snapshots": await self.store.off_loop(post_history, self.store, post["id"])})

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
        return await platform_figures(self.app.config, self.store, self.http, channel_id, name, provider_id, release,
                                      days)
