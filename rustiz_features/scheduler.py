"""The scheduler: due posts to their platforms, exactly once, every outcome recorded.

Rules:
- It is the only code that moves a post out of QUEUE: claimed (PUBLISHING, with a lease), then
  PUBLISHED or ERROR with the platform's words; it re-reads a post when it claims it.
- It retries only what is safe to retry, and re-sends after an unknown outcome only where the platform
  recognises a repeat; elsewhere the post ends in ERROR saying where to check.
- A provider never sleeps or retries; the scheduler decides, and honours each platform's spacing,
  concurrency and rate-limit answers.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import sqlite3
import time
import traceback
import zlib
from typing import TYPE_CHECKING, Any, Optional

from rustiz import ApiError, Config, Store, duration, iso_at, log
from .alerts import AlertSender
from .analytics_snapshots import AnalyticsSnapshots
from .background import RowSender, WokenLoop, epoch_seconds, failure_text, retry_waits
from .digest import DailyDigests
from . import mail
from .metrics import count, record_lag
from .publishers import PROVIDER_MODULES, provider_for
from .post_events import ACTIVE_SENDERS as ACTIVE_WEBHOOK_SENDERS, event_envelope
from .recurrence import next_occurrence
from .storage import deliveries as delivery_store
from .storage import notifications as notification_store
from .storage import scheduling as schedule_store
from .storage import channels as channel_store
from .storage import oauth as oauth_store
from .storage import organizations as organization_store
from .storage import operations as operation_store

# What publishing needs (the publishers' base, the outbound client, media, the catalogue) is imported by
# the methods that publish: a server whose scheduler has nothing due loads none of it (about 8 ms of
# start-up and most of a MiB).
if TYPE_CHECKING:
    from .http_client import HttpClient
    from .publishers.base import Channel, MediaFile, OutgoingPost, Provider, PublishError, Release


# SQLite: one scheduler per database: whoever holds the flock on <database>-scheduler (the kernel frees it
# when its process dies, even by kill -9), so after a crash the next rustiz takes over at once and
# every post still PUBLISHING was left by a dead process. It sleeps until the earliest due time and
# is woken when posts change (directly in its process, through the shared counter in others).
#
# PostgreSQL: a scheduler in every process, on every machine, on a thread and event loop of its own (its queries
# wait on the network). Each claims due posts under row locks (FOR UPDATE SKIP LOCKED: two processes never take
# the same post, nor two posts of one channel at once) with a short lease that it renews while the publish runs.
# A process that dies stops renewing: once its leases have expired, any other process recovers those posts
# under the same rules as after a crash on SQLite. Wake-ups come as NOTIFY from whichever process changed posts.
# Each process reads the due posts once and claims from that list until something changes (_due_list), and a
# claim is offered several of them at once (_start_due_posts): neither costs more as processes are added.

SCHEDULER_LEASE_SECONDS = 900  # SQLite: how long a claim stays marked as ours; shown on the post as lease_until
SHARED_LEASE_SECONDS = 60  # PostgreSQL: a claim's lease, renewed every third of it (RUSTIZ_SCHEDULER_LEASE_SECONDS)
# The scheduler writes "alive at <time>" into its lock file this often, so that the next one knows since
# when no scheduler ran (what a post missed meanwhile is told).
SCHEDULER_HEARTBEAT_SECONDS = 10
RESEND_WINDOW_SECONDS = 1800  # an interrupted publish is repeated only this soon: Mastodon forgets keys after 1 h
RETRY_CAP_SECONDS = 1800
RECONNECT_RECHECK_SECONDS = 300  # a post waiting for its channel looks again this often (a reconnect releases it)
# Tokens that live for weeks (Meta's 60-day ones) are refreshed by a sweep this often, even on a channel that
# publishes nothing; short-lived ones (an hour, a day) are refreshed when used.
TOKEN_SWEEP_SECONDS = 3600
TOKEN_SWEEP_HORIZON_SECONDS = 90 * 86400  # no platform refreshes further ahead than this
DUE_LIST_SECONDS = 5.0  # PostgreSQL: the longest a due list once read is claimed from again (see _due_list)
CLAIM_BATCH = 16  # PostgreSQL: due posts offered to one claim, which takes the first no other process took


class Scheduler(WokenLoop):
    """Claims due posts, hands each to its publisher, records PUBLISHED or ERROR, notifies, calls webhooks."""

    def __init__(self, config: Config, store: Store, loop: asyncio.AbstractEventLoop):
        self.config, self.store, self.loop = config, store, loop
        self._http: Optional[HttpClient] = None
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self.lock_descriptor: Optional[int] = None
        self.busy_channels: set = set()
        self.busy_per_provider: dict = {}
        # Publishes in flight per organization, and per (provider, organization): see _fair_shares.
        self.busy_per_organization: dict = {}
        self.busy_per_provider_organization: dict = {}
        self.channel_organizations: dict = {}  # channel id -> organization id (a channel never changes organization)
        self.organizations_with_channels = 0
        self.channel_free_at: dict = {}  # channel id -> Unix time its next publish may start (spacing, throttling)
        self.tasks: set = set()
        self.seen_generation = b""
        self.started_at = 0.0  # when this process took the lock
        self.last_alive_before: Optional[float] = None  # the previous scheduler's last heartbeat, when known
        self.beaten_at = 0.0
        self.throttled: dict = {}  # channel id -> (until, platform label): the platform asked us to wait
        self.token_sweep_at = 0.0  # when the long-lived tokens are looked at next
        self.shared = store.remote  # PostgreSQL: one scheduler among many (see the top of this module)
        self.lease_seconds = float(config.settings.get("RUSTIZ_SCHEDULER_LEASE_SECONDS", "") or 0) \
            if config.settings else 0.0
        self.lease_seconds = self.lease_seconds or (SHARED_LEASE_SECONDS if self.shared else SCHEDULER_LEASE_SECONDS)
        self.leases_renewed_at = 0.0
        self.claimed: set = set()  # ids of the posts this scheduler is publishing
        # PostgreSQL: the due posts read last, what it knew then, and until when it may claim from them
        self.due_list: list = []
        self.due_list_generation = b""
        self.due_list_until = 0.0
        self.next_due: Optional[str] = None
        self.deliveries = WebhookDeliveries(self)
        self.alerts = AlertSender(self)
        self.mail = mail.MailSender(self)  # (e-mail: the outbox, sent from every process)
        from .evergreen import EvergreenRefill  # (issue 26, queue: evergreen posts back in their queue)
        self.evergreen = EvergreenRefill(self)
        self.digests = DailyDigests(config, store)
        self.analytics = AnalyticsSnapshots(self)  # (analytics over time: snapshots, from every process)
        from .autopost import FeedPoller
        self.feeds = FeedPoller(self)  # (RSS/Atom autopost: due feeds fetched from every process)
        self.platform_deletes = None  # (issue 28: deletes on platforms tried again; made on the first tick)
        self.telegram_bot = None  # (issue 28, chat: Telegram's operator bot, watched when TELEGRAM_TOKEN is set)
        if (config.settings or {}).get("TELEGRAM_TOKEN", "").strip():
            from .telegram_bot import TelegramBotWatcher
            self.telegram_bot = TelegramBotWatcher(self)

    @property
    def http(self) -> HttpClient:
        """The scheduler's own outbound client (publishes, media downloads, webhooks), made on first use."""
        if self._http is None:
            from .http_client import OUTBOUND_THREADS, HttpClient
            self._http = HttpClient(self.config.fetch_allow,
                                    threads=max(OUTBOUND_THREADS, self.config.publish_concurrency))
        return self._http

    # --- running: the lock, waking, and the loop over due posts ---------------------------------

    @property
    def running(self) -> bool:
        return self.lock_descriptor is not None or (self.shared and self.started_at > 0)

    def tick(self) -> None:
        """Called every second: take the lock if its holder died, and notice changes other processes made."""
        self.deliveries.start()  # in every process, lock or not: deliveries are claimed row by row
        self.alerts.start()  # (the same, and where the lock is held it also looks for late posts)
        self.mail.start()  # (the same, when RUSTIZ_SMTP_URL is set)
        self.evergreen.start()  # (issue 26: claims nothing; a copy is written once, in a write transaction)
        self.analytics.tick()  # (the same: once a minute, the due snapshots; claims keep them taken once)
        self.feeds.start()  # (the same: each due feed claimed under a lease)
        if self.platform_deletes is None:  # (made here, not at start: its module is compiled on first use)
            from .platform_delete import PlatformDeleteRetries
            self.platform_deletes = PlatformDeleteRetries(self)
        self.platform_deletes.start()  # (the same: each due retry claimed under a lease)
        if self.telegram_bot is not None:
            self.telegram_bot.start()  # (issue 28: every process tries; the one holding the lease watches)
        if not self.running:
            if not self._take_lock():
                return
            self._recover_interrupted()
            self.store.on_posts_changed = self.wake if not self.shared else \
                lambda: self.loop.call_soon_threadsafe(self.wake)  # (called from the listener's thread)
            log(f"scheduler running in process {os.getpid()}")
            self.wake()
        if self.shared:
            self._keep_leases()
        self.digests.tick()  # (where the scheduler runs: once a minute, the daily digests due)
        if time.time() - self.beaten_at >= SCHEDULER_HEARTBEAT_SECONDS:
            self._beat()
        if time.time() >= self.token_sweep_at:
            self.token_sweep_at = time.time() + TOKEN_SWEEP_SECONDS
            task = self.loop.create_task(self._refresh_long_lived_tokens())
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        generation = self.store.posts_generation()
        if generation != self.seen_generation:
            self.seen_generation = generation
            self.wake()

    def _take_lock(self) -> bool:
        if self.shared:  # (no file lock: every process schedules; row locks and leases keep them apart)
            self.last_alive_before = schedule_store.last_scheduler_heartbeat(self.store)
            self.started_at = time.time()
            self._beat()
            return True
        import fcntl
        descriptor = os.open(self.store.path + "-scheduler", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            return False
        self.lock_descriptor = descriptor
        self.started_at = time.time()
        heartbeat = re.search(rb"alive at (\d+)", os.pread(descriptor, 200, 0))
        self.last_alive_before = int(heartbeat[1]) if heartbeat else None
        self._beat()
        return True

    def _beat(self) -> None:
        """Write this scheduler's sign of life into the lock file (read by whoever takes the lock next), or
        on PostgreSQL into the database (read by any scheduler that starts)."""
        self.beaten_at = time.time()
        if self.shared:
            with contextlib.suppress(sqlite3.Error):  # (a missed beat only makes a missed post's story vaguer)
                schedule_store.beat_scheduler(self.store, self.owner, self.beaten_at)
            return
        line = f"rustiz scheduler {self.owner} alive at {self.beaten_at:.0f} ({iso_at(self.beaten_at)})\n".encode()
        try:
            os.pwrite(self.lock_descriptor, line, 0)
            os.ftruncate(self.lock_descriptor, len(line))
        except OSError as error:  # a full disk: missed posts are told less precisely, nothing else changes
            log(f"scheduler: cannot write its heartbeat into its lock file: {error.strerror}")

    def _keep_leases(self) -> None:
        """PostgreSQL: renew the leases of what this process publishes (every third of a lease), and recover
        the posts whose lease ran out: their process died or lost the database for longer than a lease."""
        now = time.time()
        if now - self.leases_renewed_at < self.lease_seconds / 3:
            return
        self.leases_renewed_at = now
        try:
            if self.claimed:
                schedule_store.renew_leases(self.store, sorted(self.claimed), self.owner,
                                            iso_at(now + self.lease_seconds))
            self._recover_interrupted()
        except sqlite3.Error as error:
            log(f"scheduler: could not renew or check leases ({error}); trying again in a second")
            self.leases_renewed_at = 0.0

    def may_run(self) -> bool:
        return self.running

    def _run_due(self) -> None:
        now = time.time()
        try:
            due, next_due = self._due_list(now)
            next_free = self._start_due_posts(now, due)
        except sqlite3.Error as error:
            log(f"scheduler: the database failed ({error}); trying again in 5 s")
            self.sleep(5)
            return
        wakes = [moment for moment in (next_free, next_due and epoch_seconds(next_due)) if moment]
        if wakes:  # capped at an hour: a clock that jumps cannot make rustiz oversleep
            self.sleep(min(3600.0, max(0.0, min(wakes) - time.time())))

    def _due_list(self, now: float) -> tuple:
        """(the due posts as schedule_store.due_posts gives them, the next time a post comes due or None).

        PostgreSQL: the list read last is claimed from again while no notice came (a post added, edited, or made
        claimable by a publish), nothing more came due, it is younger than DUE_LIST_SECONDS and some of it is
        left. Reading it is a pass over every due post; once per publish in every process, that pass was most
        of the database's work and grew with the processes. A claim checks again that its post is due, so a
        stale entry is only skipped. Posts due at the same time are in an order of this process's own, so
        that processes claiming from the same list mostly try different posts."""
        if self.shared and self.due_list and now < self.due_list_until \
                and self.store.posts_generation() == self.due_list_generation:
            return self.due_list, self.next_due
        generation = self.store.posts_generation()  # (before reading: a change made meanwhile reads again)
        due = schedule_store.due_posts(self.store, iso_at(now))
        next_due = schedule_store.next_due_time(self.store, iso_at(now))
        if self.shared:
            due.sort(key=lambda row: (row[3], zlib.crc32(f"{self.owner} {row[0]}".encode())))
            self.due_list, self.due_list_generation, self.next_due = due, generation, next_due
            self.due_list_until = min(now + DUE_LIST_SECONDS, epoch_seconds(next_due) if next_due else now + 3600)
        return due, next_due

    def _start_due_posts(self, now: float, due: list) -> Optional[float]:
        """Claim and start what is due and allowed by the caps; returns when a spaced-out channel frees up.
        PostgreSQL: each claim is offered the next CLAIM_BATCH posts the caps allow and takes the first another
        process has not, so that processes claiming from the same list do not pay a transaction per post taken."""
        next_free = None
        # (one publish at a time per channel; its end wakes us)
        due = [row for row in due if row[1] not in self.busy_channels]
        organizations = self._organizations_of([row[1] for row in due])
        shares = self._fair_shares(due, organizations)
        waiting, tried = list(zip(due, organizations)), set()
        while len(self.busy_channels) < self.config.publish_concurrency:
            offered, free_at = self._offered(waiting, tried, shares, now)
            if free_at is not None:
                next_free = free_at if next_free is None else min(next_free, free_at)
            if not offered:
                break
            ids = [row[0] for row, _ in offered]
            claim = schedule_store.claim_post(self.store, ids, self.owner, iso_at(now + self.lease_seconds))
            taken = ids.index(claim["id"]) if claim else len(ids) - 1
            tried.update(ids[:taken + 1])  # (those before the one taken: claimed by another process, or no longer due)
            if claim:
                self._start(claim, *offered[taken])
        if tried and self.due_list:  # (none of them to try again until the list is read again)
            self.due_list = [row for row in self.due_list if row[0] not in tried]
        return next_free

    def _offered(self, waiting: list, tried: set, shares: dict, now: float) -> tuple:
        """(the first CLAIM_BATCH (SQLite: 1) of the (due row, organization) pairs in `waiting`, not `tried`, that
        the caps let start now; the earliest time a spaced-out channel among those passed frees up, or None). A
        row is held back while its organization's share is taken (another organization's post goes first, this
        one at the next end), its channel's spacing runs, or its platform's cap is taken. (The list may hold
        hundreds of rows, looked through after every publish: what is full is found once, not per row.)"""
        full_organizations = {name for name, busy in self.busy_per_organization.items() if busy >= shares[None]}
        full_pairs = {pair for pair, busy in self.busy_per_provider_organization.items() if busy >= shares[pair[0]]}
        full_providers = {name for name, busy in self.busy_per_provider.items() if busy >= self._provider_cap(name)}
        offered, next_free, wanted = [], None, CLAIM_BATCH if self.shared else 1
        for pair in waiting:
            (post_id, channel_id, provider, _), organization = pair
            if post_id in tried or organization in full_organizations or (provider, organization) in full_pairs:
                continue
            free_at = self.channel_free_at.get(channel_id, 0.0)
            if free_at > now:
                next_free = free_at if next_free is None else min(next_free, free_at)
            elif provider not in full_providers:
                offered.append(pair)
                if len(offered) == wanted:
                    break
        return offered, next_free

    def _start(self, claim: dict, row: tuple, organization: str) -> None:
        """Publish a claimed post, counted in the caps until it ends."""
        post_id, channel_id, provider, _ = row
        self.claimed.add(post_id)
        self.busy_channels.add(channel_id)
        self.busy_per_provider[provider] = self.busy_per_provider.get(provider, 0) + 1
        self.busy_per_organization[organization] = self.busy_per_organization.get(organization, 0) + 1
        pair = (provider, organization)
        self.busy_per_provider_organization[pair] = self.busy_per_provider_organization.get(pair, 0) + 1
        task = self.loop.create_task(self._publish(claim, organization))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _organizations_of(self, channel_ids: list) -> list:
        """The organization of each channel (its own id for one not found: a disabled channel's post, about to fail)."""
        known = self.channel_organizations
        if any(channel_id not in known for channel_id in channel_ids):
            if len(known) > 100_000:
                known.clear()
            known.update((row[0], row[1]) for row in operation_store.channels_to_check(self.store))
            self.organizations_with_channels = len(set(known.values()))
        return [known.get(channel_id, channel_id) for channel_id in channel_ids]

    @staticmethod
    def _count_out(counts: dict, key: Any) -> None:
        """One publish fewer under `key` (gone at none, so that only those publishing are looked at)."""
        counts[key] -= 1
        if not counts[key]:
            del counts[key]

    @staticmethod
    def _provider_cap(provider: str) -> int:
        """Publishes at once on one platform, across channels and organizations."""
        platform = provider_for(provider)
        return platform.concurrency if platform else 1

    def _fair_shares(self, due: list, organizations: list) -> dict:
        """How many publishes one organization may have in flight: in all (key None; RUSTIZ_PUBLISH_CONCURRENCY)
        and on each platform (key: the provider; its cap). An equal part (at least one) among the organizations
        publishing or with posts due there, and, where other organizations have channels, one slot less than
        all: one organization's slow servers cannot hold every slot while another's posts wait, nor take the
        last one from a post that comes due while they hang."""
        contenders: dict = {None: set(organizations)}
        for (_, _, provider, _), organization in zip(due, organizations):
            contenders.setdefault(provider, set()).add(organization)
        for provider, organization in self.busy_per_provider_organization:
            contenders[None].add(organization)
            contenders.setdefault(provider, set()).add(organization)
        shares = {}
        for provider, names in contenders.items():
            cap = self.config.publish_concurrency if provider is None else self._provider_cap(provider)
            most = cap - 1 if self.organizations_with_channels > 1 else cap
            shares[provider] = max(1, min(most, cap // max(1, len(names))))
        return shares

    async def _publish(self, claim: dict, organization: str) -> None:
        from .publishers.base import Channel
        platform = provider_for(claim["provider"])
        channel = Channel(claim["channel_id"], claim["channel_name"], json.loads(claim["credentials"] or "{}"),
                          json.loads(claim["session"] or "null"), self.http,
                          lambda session: channel_store.save_channel_session(self.store, claim["channel_id"], session))
        try:
            await self._attempt(claim, platform, channel)
        except Exception:  # a bug in rustiz: the post must still end in a state that says so
            log(f"publishing post {claim['id']} failed unexpectedly:\n{traceback.format_exc()}")
            self._fail(claim, platform, "rustiz failed while publishing this post (its log has the details); "
                                          "it may or may not have been published")
        finally:
            self.claimed.discard(claim["id"])
            self.busy_channels.discard(claim["channel_id"])
            self.busy_per_provider[claim["provider"]] -= 1
            self._count_out(self.busy_per_organization, organization)
            self._count_out(self.busy_per_provider_organization, (claim["provider"], organization))
            spacing = platform.spacing if platform else 0.0
            self.channel_free_at[claim["channel_id"]] = time.time() + max(spacing, channel.throttled_for)
            if channel.throttled_for:
                self.throttled[claim["channel_id"]] = (time.time() + channel.throttled_for,
                                                       platform.label if platform else claim["provider"])
            self.wake()

    async def _attempt(self, claim: dict, platform: Optional[Provider], channel: Channel) -> None:
        from .publishers.base import OutgoingPost, PublishError, Release
        from . import short_links
        label = platform.label if platform else claim["provider"]
        refusal = self._refusal_before_publishing(claim, platform, label)
        if refusal:
            self._fail(claim, platform, refusal)
            return
        if claim["refresh_needed"] or claim["in_between_steps"]:
            self._wait_for_channel(claim, label)
            return
        due = max(claim["publish_date"], claim["not_before"] or "")
        late = time.time() - epoch_seconds(due)
        if late > self.config.publish_grace_seconds and claim["attempts"] == 1:
            self._missed(claim, due, late)
            return
        count("rustiz_publish_attempts_total", claim["provider"])
        # (from when the post existed: a post of type "now" is dated at the start of its minute)
        record_lag(time.time() - epoch_seconds(max(due, claim["created_at"] or "")))
        staged: list = []
        try:
            settings = json.loads(claim["settings"] or "{}")
            media, settings_media = await self._media(claim, settings, platform.media_settings, staged)
            text = await short_links.text_to_publish(self.store, self.config, self.http, claim)  # (issue 26)
            post = OutgoingPost(claim["id"], text, media, settings, claim["part"],
                                claim["idempotency_key"], claim["publish_date"], settings_media)
            parent = (Release(claim["parent_release_id"] or "", claim["parent_release_url"] or "",
                              json.loads(claim["parent_reply_ref"] or "null")) if claim["parent_id"] else None)
            release = await self.publish_part(platform, channel, post, parent)
        except PublishError as error:
            self._failed_attempt(claim, platform, channel, error)
            return
        finally:
            for path in staged:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        self._published(claim, label, release)

    def _refusal_before_publishing(self, claim: dict, platform: Optional[Provider], label: str) -> Optional[str]:
        if platform is None:
            return (f"rustiz cannot publish to {label} channels: it publishes to "
                    f"{', '.join(sorted(PROVIDER_MODULES))}")
        if claim["disabled"]:
            return "Channel disabled: enable the channel, then retry the post"
        part = [{"content": claim["content"], "image": json.loads(claim["image"] or "[]")}]
        # (FRONTEND_URL may have changed since the post was scheduled)
        return platform.media_refusal(part, json.loads(claim["settings"] or "{}"), self.config.frontend_url)

    async def publish_part(self, platform: Provider, channel: Channel, post: OutgoingPost,
                           parent: Optional[Release]) -> Release:
        """Publish; on an OAuth channel, with its tokens refreshed ahead of expiry, and once more after a 401
        that a refresh cures (a refused request published nothing, so sending it again is safe)."""
        from .connect import TokenKeeper
        from .publishers.oauth import OAuthProvider
        if not isinstance(platform, OAuthProvider):
            return await platform.publish(channel, post, parent)
        keeper = TokenKeeper(self.config, self.store, self.http)
        return await keeper.call(platform, channel, lambda: platform.publish(channel, post, parent))

    def _wait_for_channel(self, claim: dict, label: str, cause: str = "") -> None:
        """A post on a channel that needs reconnecting (or a choice after consent) waits for it, visibly, up to
        PUBLISH_GRACE after its date; reconnecting releases it at once. `cause`: what the platform said."""
        grace = self.config.publish_grace_seconds
        deadline = epoch_seconds(claim["publish_date"]) + grace
        choosing = bool(claim["in_between_steps"])
        if time.time() >= deadline:
            self._fail(claim, None, f"Failed on {label}: the channel still needed "
                                    f"{'a page or board chosen' if choosing else 'reconnecting'} {duration(grace)} "
                                    "after the post's date (PUBLISH_GRACE), so the post was not sent; "
                                    f"{'finish connecting' if choosing else 'reconnect'} the channel, then retry the post")
            return
        why = ("Waiting for the channel's page or board to be chosen" if choosing else
               f"Waiting for the channel to be reconnected ({cause or f'{label} refused its credentials'})")
        schedule_store.requeue_post(
            self.store, claim["id"], iso_at(min(deadline, time.time() + RECONNECT_RECHECK_SECONDS)),
            f"{why}: it goes out as soon as the channel is {'ready' if choosing else 'reconnected'}, "
            f"or fails at {iso_at(deadline)} (PUBLISH_GRACE)", attempted=False)

    async def _media(self, claim: dict, settings: dict, names: tuple, staged: list) -> tuple:
        """(the post's images and videos, the media objects of the settings `names`, e.g. YouTube's
        thumbnail) as local files: our uploads directly, other URLs downloaded now."""
        items = json.loads(claim["image"] or "[]")
        media = tuple([await self._media_file(item, f"media item {index}", staged)
                       for index, item in enumerate(items, 1)])
        in_settings = {name: await self._media_file(settings[name], f"the {name} setting", staged)
                       for name in names if isinstance(settings.get(name), dict) and settings[name].get("path")}
        return media, in_settings

    async def _media_file(self, item: Any, where: str, staged: list) -> "MediaFile":
        """One media object ({"path", "alt"...}) as a local file. An upload's URL is given under today's
        FRONTEND_URL, for platforms that download it themselves."""
        from .catalogue import upload_relative_path
        from .media import fetch_media, read_from_bucket, sniff_media_type
        from .publishers.base import MediaFile, Rejected, Retryable
        url = (item.get("path") or "") if isinstance(item, dict) else ""
        relative = upload_relative_path(url)
        path = os.path.join(self.config.uploads, *relative.split("/")) if relative else ""
        name = os.path.basename(path)
        if relative and self.config.storage is not None:  # our uploads are in the bucket: read into a staged file
            from .object_storage import StorageError
            try:
                path = await read_from_bucket(self.http, self.config, relative) or ""
            except StorageError as error:
                raise Retryable(f"the media could not be read from the uploads bucket: {error}", item=where) from None
            if path:
                staged.append(path)
        if path and os.path.isfile(path):
            url = f"{self.config.frontend_url}/uploads/{relative}"
        else:
            try:
                download = await fetch_media(self.http, url, self.config.uploads, self.config.max_video_bytes)
            except ApiError as refused:
                reason = str(refused.body.get("message", refused.body)).removeprefix("upload-from-url: ")
                raise Rejected(f"the media could not be read from {url[:200]}: {reason}", item=where) from None
            staged.append(download.temporary_path)
            path = name = download.temporary_path
        with open(path, "rb") as file:
            kind = sniff_media_type(file.read(64))
        if isinstance(kind, str):
            raise Rejected(f"{url[:200]} is not an image or video rustiz can publish ({kind})", item=where)
        alt = item.get("alt") if isinstance(item, dict) and isinstance(item.get("alt"), str) else ""
        return MediaFile(url, path, kind.content_type, kind.kind, alt, os.path.basename(name))

    async def _refresh_long_lived_tokens(self) -> None:
        """Refresh every long-lived token within its platform's refresh_ahead_seconds of expiring, so that a
        channel with nothing to publish for weeks is not stranded when its token lapses unused."""
        try:
            expiring = oauth_store.channels_with_tokens_expiring(self.store, iso_at(time.time() + TOKEN_SWEEP_HORIZON_SECONDS))
        except sqlite3.Error as error:
            log(f"scheduler: could not look for tokens to refresh ({error}); looking again in an hour")
            return
        if not expiring:
            return  # (before importing what a refresh needs: an idle server loads none of it)
        from .connect import TokenKeeper
        from .publishers.base import Channel, PublishError
        from .publishers.oauth import OAuthProvider, TokenRefused
        keeper = TokenKeeper(self.config, self.store, self.http)
        for row in expiring:
            platform = provider_for(row["provider"])
            if not isinstance(platform, OAuthProvider) or platform.refresh_ahead_seconds <= TOKEN_SWEEP_SECONDS or \
                    epoch_seconds(row["token_expiration"]) > time.time() + platform.refresh_ahead_seconds:
                continue
            channel = Channel(row["id"], row["name"], *channel_store.channel_secrets(self.store, row["id"]), self.http)
            try:
                await keeper.refresh(platform, channel)
                log(f"{platform.label} channel {row['id']}: its token was refreshed ahead of its expiry")
            except TokenRefused as refused:
                self._flag_for_reconnect({"channel_id": row["id"], "channel_name": row["name"],
                                          "organization_id": row["organization_id"]}, platform.label, refused)
            except PublishError as failed:  # a passing failure: the next sweep tries again
                log(f"{platform.label} channel {row['id']}: refreshing its token failed ({failed.message}); "
                    "trying again in an hour")

    # --- outcomes ---------------------------------------------------------------------------------

    def _published(self, claim: dict, label: str, release: Release) -> None:
        event = self._webhook_event(claim, "post.published", {"releaseId": release.id, "releaseURL": release.url})
        what = f"part {claim['part'] + 1} of a thread" if claim["part"] else "a post"
        notification = (claim["organization_id"], f"Published {what} on {label} ({claim['channel_name']}): "
                                                  f"{release.url or release.id}", release.url or None, claim["id"])
        if schedule_store.record_published(self.store, claim["id"], release.id, release.url, release.reply_ref, event,
                                           notification):
            self.deliveries.wake()  # (only when it queued some: looking for due deliveries is two queries)
        recurring = schedule_store.finished_recurring_root(self.store, claim["organization_id"], claim["group"])
        if recurring is not None:
            root_id, publish_date, every_days, anchor, until, count = recurring
            upcoming = next_occurrence(publish_date, anchor, every_days,
                                       organization_store.organization_timezone(self.store, claim["organization_id"]),
                                       time.time(), until, count)
            # None: its end (repeatUntil, repeatCount) or the calendar's (9999-12-31) comes first; it stays PUBLISHED
            if upcoming is not None:
                schedule_store.rearm_recurring(self.store, root_id, upcoming)

    def _failed_attempt(self, claim: dict, platform: Provider, channel: Channel, error: PublishError) -> None:
        from .publishers.base import NeedsReconnect, OutcomeUnknown, Retryable
        attempts, label = claim["attempts"], platform.label
        count("rustiz_publish_failures_total", claim["provider"])
        if isinstance(error, Retryable) or (isinstance(error, OutcomeUnknown) and platform.resend_is_safe):
            if attempts <= self.config.retry_limit:
                wait = error.after if getattr(error, "after", None) else min(
                    RETRY_CAP_SECONDS, self.config.retry_base_seconds * 2 ** (attempts - 1))
                channel.throttle(wait if getattr(error, "after", None) else 0.0)
                schedule_store.requeue_post(self.store, claim["id"], iso_at(time.time() + wait),
                                            f"Attempt {attempts} of {self.config.retry_limit + 1}: "
                                            f"{failure_text(label, error, claim['part'])}; trying again in "
                                            f"{duration(wait)}")
                return
            error.message = f"gave up after {attempts} attempts; the last one: {error.message}"
        elif isinstance(error, OutcomeUnknown):
            error.message += (f". It may have been published: check {platform.where_to_check(channel)} before "
                              "retrying; rustiz does not send it again by itself, so that it is never posted twice")
        elif isinstance(error, NeedsReconnect):
            self._flag_for_reconnect(claim, label, error)
            self._wait_for_channel(claim, label, failure_text(label, error, claim["part"]))
            return
        self._fail(claim, platform, failure_text(label, error, claim["part"]))

    def _flag_for_reconnect(self, claim: dict, label: str, error: PublishError) -> None:
        """The channel needs reconnecting: flagged, with one notification however many posts find out."""
        from .connect import reconnect_link
        if channel_store.mark_refresh_needed(self.store, claim["channel_id"]):
            link = reconnect_link(self.config, claim["channel_id"])
            notification_store.add_notification(
                self.store, claim["organization_id"],
                f"{claim['channel_name']}: reconnect this {label} channel, its credentials were refused: "
                f"{failure_text(label, error, 0)}. Its posts wait until it is reconnected (up to PUBLISH_GRACE "
                f"after their date): {link}", link)
            self.alerts.channel_needs_reconnect(claim, label, failure_text(label, error, 0), link)
            mail.channel_needs_reconnect(self.store, self.config, claim["organization_id"], claim["channel_name"],
                                         label, failure_text(label, error, 0), link)

    def _fail(self, claim: dict, platform: Optional[Provider], text: str) -> None:
        later_parts = schedule_store.record_failed(self.store, claim["id"], text,
                                                   self._webhook_event(claim, "post.failed", {"error": text}))
        self.deliveries.wake()
        suffix = f" ({later_parts} later thread part{'s' if later_parts > 1 else ''} not published)" if later_parts else ""
        notification_store.add_notification(self.store, claim["organization_id"],
                                            f"{claim['channel_name']}: {text}{suffix}", post_id=claim["id"])
        self.alerts.post_failed(claim, text + suffix)
        mail.post_failed(self.store, self.config, claim, text + suffix)

    def _missed(self, claim: dict, due: str, late: float) -> None:
        grace = duration(self.config.publish_grace_seconds)
        why = self._why_late(claim["channel_id"], epoch_seconds(due))
        upcoming = None
        if claim["interval_days"] and not claim["parent_id"]:
            upcoming = next_occurrence(claim["publish_date"], claim["recurrence_anchor"], claim["interval_days"],
                                       organization_store.organization_timezone(self.store, claim["organization_id"]),
                                       time.time(), claim["repeat_until"], claim["repeat_count"])
        if upcoming is not None:
            schedule_store.rearm_recurring(self.store, claim["id"], upcoming)
            notification_store.add_notification(
                self.store, claim["organization_id"],
                f"{claim['channel_name']}: skipped the occurrence due at {due}: {why}, and it "
                f"was {duration(late)} late, more than the {grace} grace period "
                f"(PUBLISH_GRACE); the recurring post next goes out at {upcoming}", post_id=claim["id"])
            return
        self._fail(claim, None, f"Missed: this post was due at {due}, but {why}; it was {duration(late)} late, "
                                f"more than the {grace} grace period (PUBLISH_GRACE), so it was not sent. Retry it "
                                "to publish it now")

    def _why_late(self, channel_id: str, due: float) -> str:
        """What kept a post from going out at its time, from what this scheduler knows."""
        if due < self.started_at:
            started = iso_at(self.started_at)
            stopped = self.last_alive_before
            if stopped is None:
                return f"no rustiz scheduler was running then (this one started at {started})"
            if due >= stopped:
                return (f"rustiz was not running from {iso_at(stopped)} (its last sign of life) to {started} "
                        "(stopped, restarting, or its machine asleep)")
            return (f"it was still waiting for its turn when rustiz stopped at {iso_at(stopped)}, and rustiz only "
                    f"started again at {started}")
        until, label = self.throttled.get(channel_id, (0.0, ""))
        if until > due:
            return (f"rustiz was running, and {label} had asked it to wait before the next post on this channel "
                    f"(a rate limit, until {iso_at(until)})")
        return (f"rustiz was running, and the post waited behind other posts and their retries (rustiz publishes "
                f"{self.config.publish_concurrency} posts at once at most, one at a time per channel)")

    def _recover_interrupted(self) -> None:
        """Posts left PUBLISHING by a process that died: sent again where that cannot duplicate, else ERROR.
        (PostgreSQL: those whose lease expired, each taken over by one process, so each is recovered once.)"""
        rows = schedule_store.expired_publishing_posts(self.store, iso_at(time.time()), self.owner,
                                                       iso_at(time.time() + self.lease_seconds)) \
            if self.shared else schedule_store.publishing_posts(self.store)
        for post_id, provider, owner, channel_name, since, credentials in rows:
            platform = provider_for(provider)
            recent = time.time() - epoch_seconds(since) < RESEND_WINDOW_SECONDS
            if platform is not None and platform.resend_is_safe and recent:
                schedule_store.requeue_post(self.store, post_id, iso_at(time.time()),
                                            f"rustiz stopped while publishing this post ({owner}); sending it again, "
                                            f"which {platform.label} recognises as the same post")
            else:
                self._fail_interrupted(post_id, platform, provider, channel_name, since, credentials)

    def _fail_interrupted(self, post_id: str, platform: Optional[Provider], provider: str, channel_name: str,
                          since: str, credentials: Optional[str]) -> None:
        """An interrupted post that may have gone out: ERROR, saying where to look before retrying."""
        from .publishers.base import Channel
        label = platform.label if platform else provider
        channel = Channel("", channel_name, json.loads(credentials or "{}"), None, self.http)
        where = platform.where_to_check(channel) if platform else f"the channel \"{channel_name}\""
        claim = schedule_store.post_for_publishing(self.store, post_id)
        self._fail(claim, platform, f"Failed on {label}: rustiz stopped (a crash, a kill or a power cut) while "
                                      f"publishing this post at {since}, so it may have been published: check "
                                      f"{where} before retrying")

    # --- outgoing webhooks --------------------------------------------------------------------

    @staticmethod
    def _webhook_event(claim: dict, event: str, details: dict) -> dict:
        """What the organization's webhooks are told of a post's outcome (queued with the outcome itself)."""
        return event_envelope(event, claim["organization_id"],
                              {"id": claim["channel_id"], "name": claim["channel_name"], "provider": claim["provider"]},
                              {"id": claim["id"], "group": claim["group"], "part": claim["part"],
                               "publishDate": claim["publish_date"], **details})

    async def stop(self, timeout: float) -> None:
        """Let publishes in flight finish (up to `timeout`); what is still running is recovered at the next start."""
        self.stop_sleeping()
        self.deliveries.stop()
        self.alerts.stop()
        self.mail.stop()
        self.evergreen.stop()
        self.feeds.stop()
        if self.platform_deletes is not None:
            self.platform_deletes.stop()
        if self.telegram_bot is not None:
            self.telegram_bot.stop()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=timeout)
        if self.running:
            self._beat()  # the moment this scheduler stopped, for the next one
        self.store.on_posts_changed = None
        if self._http is not None:
            self._http.close()


# --- outgoing webhook deliveries ----------------------------------------------------------------------
# Each outcome event is one webhook_delivery row per webhook, queued by record_published/record_failed (of
# storage.scheduling) in the outcome's own transaction, so a crash cannot record PUBLISHED and lose the event. Any
# process sharing the database may send it: it claims the row under a lease (a conditional UPDATE only one process
# wins), sends it with the row's id as the delivery id (the same on every try, so a receiver can drop repeats), and
# records it delivered, or its next try with back-off, or gives it up with a notification after about a day. A
# process killed mid-send leaves its lease, which ends: another process then sends the same delivery again.

WEBHOOK_RETRY_WAITS = (5.0, 30.0, 120.0, 600.0, 1800.0) + (3600.0,) * 23  # before each retry: ~24 h in all
WEBHOOK_LEASE_SECONDS = 120  # well beyond one try (WEBHOOK_TIMEOUTS: 30 s at most), so a live sender keeps it
WEBHOOK_TIMEOUTS = (10.0, 15.0, 30.0)  # connect, silence, total
WEBHOOK_CONCURRENCY = 8  # deliveries in flight at once, per process
WEBHOOK_POLL_SECONDS = 30.0  # how often a process looks for what others queued (or left under an ended lease)
WEBHOOK_KEEP_SECONDS = 7 * 86400  # delivered and given-up rows are forgotten after this
WEBHOOK_HOUSEKEEPING_SECONDS = 3600


def webhook_retry_waits(settings: Optional[dict]) -> tuple:
    """The seconds before each retry: RUSTIZ_WEBHOOK_RETRY_WAITS ("5,30,120": three retries), or the default."""
    return retry_waits(settings, "RUSTIZ_WEBHOOK_RETRY_WAITS", WEBHOOK_RETRY_WAITS, "webhooks are retried")


class WebhookDeliveries(RowSender):
    """This process's sender of webhook deliveries: woken when one is queued here, it sleeps until the next is
    due (and at most WEBHOOK_POLL_SECONDS), claims what is due, sends it, and records what happened."""
    active = ACTIVE_WEBHOOK_SENDERS  # (post_events wakes it when an event is queued in this process)

    def __init__(self, scheduler: Scheduler):
        self.scheduler, self.store, self.loop = scheduler, scheduler.store, scheduler.loop
        self.retry_waits = webhook_retry_waits(scheduler.config.settings)
        self.housekeeping_at = 0.0

    def _run_due(self) -> None:
        if self.stopped:
            return
        now = time.time()
        try:
            self._forget_finished(now)
            self._start_due(now)
            next_due = delivery_store.next_webhook_delivery_time(self.store)
        except sqlite3.Error as error:
            log(f"webhook deliveries: the database failed ({error}); trying again in 5 s")
            next_due = now + 5
        self.sleep_until(now, next_due, WEBHOOK_POLL_SECONDS, WEBHOOK_CONCURRENCY)

    def _forget_finished(self, now: float) -> None:
        if now >= self.housekeeping_at:
            self.housekeeping_at = now + WEBHOOK_HOUSEKEEPING_SECONDS
            delivery_store.forget_finished_webhook_deliveries(self.store, iso_at(now - WEBHOOK_KEEP_SECONDS))

    def _start_due(self, now: float) -> None:
        room = WEBHOOK_CONCURRENCY - self.in_flight
        if room <= 0:
            return
        self.send_claimed((delivery_store.claim_webhook_delivery(self.store, delivery_id, self.scheduler.owner,
                                                                 now + WEBHOOK_LEASE_SECONDS, now)
                           for delivery_id in delivery_store.due_webhook_deliveries(self.store, now, room)),
                          self._send, self.scheduler.tasks)

    async def _send(self, delivery: dict) -> None:
        try:
            try:
                problem, may_retry = await self._attempt(delivery)
            except Exception:  # a bug in rustiz: logged, and the delivery follows the retry schedule
                log(f"webhook delivery {delivery['id']} failed unexpectedly:\n{traceback.format_exc()}")
                problem, may_retry = "rustiz failed while sending it (its log has the details)", True
            self._record(delivery, problem, may_retry)
        except sqlite3.Error as error:
            log(f"webhook delivery {delivery['id']}: its outcome could not be recorded ({error}); it is tried "
                f"again when its lease ends, in {WEBHOOK_LEASE_SECONDS} s")

    async def _attempt(self, delivery: dict) -> tuple:
        """("", False) when the receiver took it; else (the problem in a few words, whether a retry may help)."""
        from .http_client import AddressRefused, ConnectFailed, NoAnswer, Timeouts, signed_json_request
        body, headers = signed_json_request(json.loads(delivery["payload"]), delivery["secret"], delivery["event"],
                                            delivery["id"])
        try:
            reply = await self.scheduler.http.request("POST", delivery["url"], body=body, headers=headers,
                                                      timeouts=Timeouts(*WEBHOOK_TIMEOUTS))
        except AddressRefused as error:  # refused again on every try, until the operator allows the address
            return str(error), False
        except (ConnectFailed, NoAnswer) as error:
            return str(error), True
        if reply.status < 300:
            return "", False
        return f"HTTP {reply.status}", True  # the receiver's body is not quoted: it may be any server's page

    def _record(self, delivery: dict, problem: str, may_retry: bool) -> None:
        if not problem:
            delivery_store.record_webhook_delivered(self.store, delivery["id"])
            return
        attempts, owner = delivery["attempts"], self.scheduler.owner
        if may_retry and attempts <= len(self.retry_waits):
            delivery_store.retry_webhook_delivery(self.store, delivery["id"], owner,
                                                  time.time() + self.retry_waits[attempts - 1], problem)
        elif delivery_store.give_up_webhook_delivery(self.store, delivery["id"], owner, problem):
            self._announce_giving_up(delivery, problem)

    def _announce_giving_up(self, delivery: dict, problem: str) -> None:
        """One log line and one notification naming the webhook, the event and the last problem."""
        from .catalogue import url_host
        post_id = json.loads(delivery["payload"])["post"]["id"]
        attempts = delivery["attempts"]
        text = (f"Webhook \"{delivery['name']}\" ({url_host(delivery['url'])}) did not take the {delivery['event']} "
                f"event of post {post_id} after {attempts} tr{'y' if attempts == 1 else 'ies'} over "
                f"{duration(time.time() - epoch_seconds(delivery['created_at']))}; the last problem: {problem}. "
                f"rustiz stopped trying (delivery {delivery['id']})")
        log(text)
        notification_store.add_notification(self.store, delivery["organization_id"], text)


class SchedulerThread:
    """PostgreSQL: the Scheduler on a thread and event loop of its own, so that its queries (which wait on the
    network) never hold up the requests' loop. The worker ticks it and stops it as it would a Scheduler."""

    def __init__(self, config: Config, store: Store):
        import threading
        from rustiz import new_event_loop
        self.loop = new_event_loop()
        self.scheduler = Scheduler(config, store, self.loop)
        self.thread = threading.Thread(target=self._run, name="rustiz-scheduler", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._tick)
        self.loop.run_forever()
        self.loop.close()

    def _tick(self) -> None:
        try:
            self.scheduler.tick()
        except sqlite3.Error as error:
            log(f"scheduler: the database failed ({error}); trying again in a second")
        self.loop.call_later(1.0, self._tick)

    def tick(self) -> None:
        """(The worker's every-second call: this scheduler ticks on its own loop.)"""

    async def stop(self, timeout: float) -> None:
        """Let its publishes finish (up to `timeout`), then end its loop and thread."""
        finished = asyncio.run_coroutine_threadsafe(self.scheduler.stop(timeout), self.loop)
        with contextlib.suppress(Exception):
            await asyncio.wrap_future(finished)
        self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.get_running_loop().run_in_executor(None, self.thread.join, timeout)
