"""Analytics over time: each channel's figures once a day and each published post's at about 1 h, 24 h and 7 days,
stored (storage/analytics.py); the series GET /analytics/:integration answers; the best times to post.

Rules:
- Figures are the platform's own, read through the provider's analytics call (`platform_figures`, the same
  call GET /analytics makes, so through the one outbound client and the token keeper); never invented.
- Each snapshot is taken once, whichever process gets there first: its subject is claimed under a lease
  (storage.analytics.claim_snapshot). A process that dies mid-snapshot leaves its lease, which ends.
- A failed read is logged and never fails, disables or flags the channel: a channel's day is given up (the next
  day tries again), a post's age is tried again an hour later while that age lasts.
- Bounded: at most RUSTIZ_ANALYTICS_CALLS_PER_MINUTE platform calls per process per minute (default 30), one
  sweep a minute; snapshots older than RUSTIZ_ANALYTICS_KEEP_DAYS (default 400) are forgotten.
- A channel's day is the UTC date; a post's age counts from when it went out (published_at).
- It imports background (numeric settings) and the storage; publishers and the token keeper when it reads.
"""
from __future__ import annotations

import asyncio
import datetime
import math
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Awaitable, Optional

from rustiz import ApiError, Config, Store, log, nest_error
from .recurrence import zone_named
from .storage import analytics as analytics_store
from .storage import organizations as organization_store

if TYPE_CHECKING:
    from .http_client import HttpClient
    from .publishers.base import Release

SWEEP_SECONDS = 60.0
CALLS_PER_MINUTE = 30
KEEP_DAYS = 400
LEASE_SECONDS = 300.0  # well beyond one platform call (the client's own timeouts end it sooner)
POST_RETRY_SECONDS = 3600.0
BEST_TIMES_MINIMUM = 10  # published posts with 24 h or 7 d figures before best times are given
BEST_TIMES_SHOWN = 5
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


async def platform_figures(config: Config, store: Store, http: HttpClient, channel_id: str, name: str,
                           provider_id: str, release: Optional[Release], days: int) -> list:
    """A channel's (or, with `release`, one of its published posts') figures in Postiz's AnalyticsData shape, as its
    platform gives them now; [] for a platform without figures. Raises ApiError 409 (credentials or the operator's
    app missing) or 502 (the platform did not answer)."""
    from .connect import TokenKeeper
    from .publishers import provider_for
    from .publishers.base import Channel, PublishError
    from .publishers.oauth import OAuthProvider
    from .storage import channels as channel_store
    provider = provider_for(provider_id)
    if provider is None:
        return []
    credentials, session = await store.off_loop(channel_store.channel_secrets, store, channel_id)
    if isinstance(provider, OAuthProvider) and provider.uses_operator_app(credentials) and \
            provider.app(config.settings or {}) is None:
        raise nest_error(409, f"{provider.label}'s figures need the operator's app, which this server does not "
                              f"have: set {' and '.join(provider.app_variables)} in config.env")
    channel = Channel(channel_id, name, credentials, session, http,
                      lambda saved: channel_store.save_channel_session(store, channel_id, saved))

    def read() -> Awaitable:
        return (provider.channel_analytics(channel, days) if release is None
                else provider.post_analytics(channel, release, days))
    try:
        if isinstance(provider, OAuthProvider):  # (tokens refreshed as for a publish, one worker at a time)
            figures = await TokenKeeper(config, store, http).call(provider, channel, read)
        else:
            figures = await read()
    except PublishError as failed:
        raise nest_error(502, f"{provider.label} did not give its figures: {failed.message}; try again "
                              "later") from None
    except KeyError as missing:  # a channel row without the credentials its platform needs (hand-made, old)
        raise nest_error(409, f"the channel \"{name}\" has no {missing.args[0]} among its {provider.label} "
                              "credentials: connect it again") from None
    return figures or []


def has_figures(provider_id: str) -> bool:
    """Whether the platform gives figures at all (its provider has an analytics call)."""
    from .publishers import provider_for
    from .publishers.base import Provider
    provider = provider_for(provider_id)
    return provider is not None and type(provider).channel_analytics is not Provider.channel_analytics


def totals_of(figures: list, summed: bool) -> dict:
    """{label: number} of Postiz-shaped figures: each label's latest point (a channel's day), or with `summed`
    its points added up (a post's figures given day by day, as Pinterest's)."""
    totals: dict = {}
    for item in figures if isinstance(figures, list) else []:
        points = [point for point in item.get("data") or [] if isinstance(point, dict)] \
            if isinstance(item, dict) and isinstance(item.get("label"), str) else []
        numbers = [(str(point.get("date", "")), number) for point in points
                   if (number := _number(point.get("total"))) is not None]
        if numbers:
            totals[item["label"][:100]] = sum(n for _, n in numbers) if summed else max(numbers)[1]
    return totals


def _number(value: Any) -> Optional[float]:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def shown(total: float) -> str:
    """A stored total as Postiz writes one: "1200", or "12.5" when it is not whole."""
    return str(int(total)) if total == int(total) else repr(round(total, 4))


# --- the series GET /analytics/:integration answers -----------------------------------------------------------

def utc_day(now: float, days_back: int = 0) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now - days_back * 86400))


def channel_series(store: Store, channel_id: str, days: int, now: float) -> list:
    """[{"label", "data": [{"total", "date"}] (one point per day with a snapshot, oldest first),
    "percentageChange"}] over the last `days` days (today included); [] when none is stored."""
    series: dict = {}
    for metric, day, total in analytics_store.channel_days(store, channel_id, utc_day(now, days - 1)):
        series.setdefault(metric, []).append({"total": shown(total), "date": day})
    return [{"label": label, "data": points, "percentageChange": percentage_change(points)}
            for label, points in series.items()]


def percentage_change(points: list) -> float:
    """From the first point's total to the last's, in percent, as Postiz computes it (0 from a zero start)."""
    first, last = float(points[0]["total"]), float(points[-1]["total"])
    return round((last - first) / first * 100, 2) if first else 0


def post_history(store: Store, post_id: str) -> list:
    """[{"age": "1h"|"24h"|"7d", "takenAt", "figures": [{"label", "total"}]}] of a post's snapshots, by age."""
    ages: dict = {}
    for age, metric, total, taken_at in analytics_store.post_ages(store, post_id):
        entry = ages.setdefault(age, {"age": age, "takenAt": taken_at, "figures": []})
        entry["figures"].append({"label": metric, "total": shown(total)})
    return [ages[age] for age, _ in analytics_store.SNAPSHOT_AGES if age in ages]


# --- best times ----------------------------------------------------------------------------------------------

def best_times(store: Store, organization_id: str, channel_id: str) -> dict:
    """{"times": [{"day", "time": "HH:00", "score"}] best first (at most BEST_TIMES_SHOWN), "basedOn": posts
    counted, "reason": None or why there are none}: each weekday and hour (in the organization's timezone) the
    channel's posts went out at, scored by those posts' engagement (their 7 d figures, else their 24 h ones, added
    up) against the channel's average, so 1.5 means half as much again as its average post."""
    engagement: dict = {}  # post id -> (age rank, publish instant, summed figures): 7 d figures win over 24 h ones
    for post_id, published_at, age, total in analytics_store.engagement_by_post(store, channel_id):
        rank = 1 if age == "7d" else 0
        if published_at and (post_id not in engagement or engagement[post_id][0] < rank):
            engagement[post_id] = (rank, published_at, float(total or 0))
    counted = len(engagement)
    if counted < BEST_TIMES_MINIMUM:
        missing = BEST_TIMES_MINIMUM - counted
        return {"times": [], "basedOn": counted, "reason": (
            f"Best times need at least {BEST_TIMES_MINIMUM} published posts with figures from the platform "
            f"(taken a day after they went out); this channel has {counted}, so {missing} more "
            f"{'is' if missing == 1 else 'are'} needed")}
    average = sum(total for _, _, total in engagement.values()) / counted
    if not average:
        return {"times": [], "basedOn": counted, "reason": "None of this channel's posts has any engagement yet"}
    zone = zone_named(organization_store.organization_timezone(store, organization_id))
    slots: dict = {}
    for _, instant, total in engagement.values():
        local = datetime.datetime.fromisoformat(instant[:19]).replace(tzinfo=datetime.timezone.utc).astimezone(zone)
        slots.setdefault((local.weekday(), local.hour), []).append(total)
    scored = sorted((-(sum(totals) / len(totals) / average), -len(totals), day, hour)
                    for (day, hour), totals in slots.items())  # (best first; more posts, then earlier, on a tie)
    return {"times": [{"day": WEEKDAYS[day], "time": f"{hour:02d}:00", "score": round(-score, 2)}
                      for score, _, day, hour in scored[:BEST_TIMES_SHOWN]], "basedOn": counted, "reason": None}


# --- taking snapshots -------------------------------------------------------------------------------------------

def failure_words(error: Exception) -> str:
    """What a failed read says in the log: the platform's words (an ApiError's message), else the error."""
    if isinstance(error, ApiError) and isinstance(error.body, dict):
        return str(error.body.get("message"))
    return repr(error)


async def take_channel_snapshot(config: Config, store: Store, http: HttpClient, owner: str, channel: dict,
                                now: float) -> bool:
    """Today's (UTC, per `now`) figures of one channel, when this process wins its claim; whether it stored them."""
    day = utc_day(now)
    subject = f"day:{channel['id']}:{day}"
    if not await store.off_loop(analytics_store.claim_snapshot, store, subject, owner, now, LEASE_SECONDS):
        return False
    try:
        figures = await platform_figures(config, store, http, channel["id"], channel["name"], channel["provider"],
                                         None, 30)
        await store.off_loop(analytics_store.save_channel_day, store, channel["id"], day, totals_of(figures, False))
        return True
    except Exception as error:  # (never the channel's trouble: logged, and tomorrow is another day)
        log(f"analytics: the figures of channel {channel['id']} ({channel['provider']}) for {day} were not taken: "
            f"{failure_words(error)}; the next day tries again")
        return False
    finally:
        await store.off_loop(analytics_store.finish_claim, store, subject, owner)


async def take_post_snapshot(config: Config, store: Store, http: HttpClient, owner: str, post: dict,
                             now: float) -> bool:
    """One published post's figures at its age `post["age"]`, when this process wins the claim."""
    from .publishers.base import Release
    subject = f"post:{post['id']}:{post['age']}"
    if not await store.off_loop(analytics_store.claim_snapshot, store, subject, owner, now, LEASE_SECONDS):
        return False
    retry_at = None
    try:
        figures = await platform_figures(config, store, http, post["channel_id"], post["name"], post["provider"],
                                         Release(post["release_id"], post["release_url"] or ""), 30)
        await store.off_loop(analytics_store.save_post_age, store, post["id"], post["age"], totals_of(figures, True))
        return True
    except Exception as error:
        retry_at = now + POST_RETRY_SECONDS
        log(f"analytics: the {post['age']} figures of post {post['id']} were not taken: "
            f"{failure_words(error)}; trying again in an hour")
        return False
    finally:
        await store.off_loop(analytics_store.finish_claim, store, subject, owner, retry_at)


async def take_due_snapshots(config: Config, store: Store, http: HttpClient, owner: str, now: float,
                             budget: int = CALLS_PER_MINUTE) -> int:
    """The snapshots due at `now` (channels' days, posts' ages), at most `budget` platform calls; how many were
    stored. Tests call it with a `now` of their own to play days that have passed."""
    taken = calls = 0
    for channel in await store.off_loop(analytics_store.channels_to_snapshot, store, utc_day(now), budget * 4):
        if calls >= budget:
            return taken
        if not has_figures(channel["provider"]):  # (marked taken, so that it does not hide the others tomorrow)
            await store.off_loop(skip_snapshot, store, f"day:{channel['id']}:{utc_day(now)}", owner, now)
            continue
        calls += 1
        taken += await take_channel_snapshot(config, store, http, owner, channel, now)
    for post in await store.off_loop(analytics_store.posts_to_snapshot, store, now, budget):
        if calls >= budget:
            break
        if not has_figures(post["provider"]):
            await store.off_loop(skip_snapshot, store, f"post:{post['id']}:{post['age']}", owner, now)
            continue
        calls += 1
        taken += await take_post_snapshot(config, store, http, owner, post, now)
    return taken


def skip_snapshot(store: Store, subject: str, owner: str, now: float) -> None:
    """A snapshot of a platform without figures, marked taken without a call."""
    if analytics_store.claim_snapshot(store, subject, owner, now, LEASE_SECONDS):
        analytics_store.finish_claim(store, subject, owner)


class AnalyticsSnapshots:
    """Ticked every second by the scheduler, in every process: once a minute one sweep of the due snapshots (the
    claims keep processes from taking one twice), and once a day the old ones forgotten."""

    def __init__(self, host: Any):
        from .alerts import numeric_setting
        self.host = host  # the scheduler: its config, store, loop, owner name, tasks and outbound client
        settings = host.config.settings
        self.budget = int(numeric_setting(settings, "RUSTIZ_ANALYTICS_CALLS_PER_MINUTE", CALLS_PER_MINUTE, 0, 6000))
        self.keep_days = int(numeric_setting(settings, "RUSTIZ_ANALYTICS_KEEP_DAYS", KEEP_DAYS, 1, 36500))
        self.swept_at = time.time()  # (the first sweep a minute after start: a server that starts has other work)
        self.forgotten_at = 0.0
        self.sweeping: Optional[asyncio.Task] = None

    def tick(self) -> None:
        now = time.time()
        if not self.budget or now - self.swept_at < SWEEP_SECONDS or (self.sweeping and not self.sweeping.done()):
            return
        self.swept_at = now
        self.sweeping = self.host.loop.create_task(self._sweep(now))
        self.host.tasks.add(self.sweeping)
        self.sweeping.add_done_callback(self.host.tasks.discard)

    async def _sweep(self, now: float) -> None:
        host = self.host
        try:
            await take_due_snapshots(host.config, host.store, host.http, host.owner, now, self.budget)
            if now - self.forgotten_at >= 86400:
                self.forgotten_at = now
                await host.store.off_loop(analytics_store.forget_old_snapshots, host.store, self.keep_days, now)
        except sqlite3.Error as error:
            log(f"analytics: the database failed ({error}); the next sweep tries again")


def start_series(store: Store, channel_id: str, figures: list, now: float) -> bool:
    """Today's snapshot of a channel from the figures a request just read (its series starts there), unless a
    process is taking it or took it; whether it was stored."""
    subject, owner = f"day:{channel_id}:{utc_day(now)}", f"request:{channel_id}"
    if not analytics_store.claim_snapshot(store, subject, owner, now, LEASE_SECONDS):
        return False
    analytics_store.save_channel_day(store, channel_id, utc_day(now), totals_of(figures, False))
    analytics_store.finish_claim(store, subject, owner)
    return True
