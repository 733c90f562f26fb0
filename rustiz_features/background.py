"""The base of the background work, below the scheduler and its senders (webhook deliveries, alerts, mail, feeds).

Rules:
- It imports the core only: the scheduler (scheduler.py) and the alert sender (alerts.py) import it, and
  neither is imported from here, so alerts never imports the scheduler and the scheduler may import alerts.
- A sender reaches the scheduler it runs beside only through SenderHost: the process's owner name, its
  tasks, its outbound client, whether it publishes here, and its publish. The scheduler is one such host.
- Times are posts' stored instants ('YYYY-MM-DDTHH:MM:SS.mmmZ'); failure texts are what a post's error and
  an alert quote, at most 2,000 characters.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Awaitable, Callable, Iterable, Optional, Protocol

from rustiz import Config, Store, log

if TYPE_CHECKING:
    from .http_client import HttpClient
    from .publishers.base import Channel, OutgoingPost, Provider, PublishError, Release


def epoch_seconds(iso: str) -> float:
    """The Unix time of an instant as posts store it ('YYYY-MM-DDTHH:MM:SS.mmmZ')."""
    import calendar
    return calendar.timegm(time.strptime(iso[:19], "%Y-%m-%dT%H:%M:%S")) + int(iso[20:23] or 0) / 1000


def failure_text(label: str, error: PublishError, part: int) -> str:
    """"Failed on Mastodon (HTTP 422) at thread part 2, media item 1: <message> — <body excerpt>"."""
    where = ", ".join(filter(None, (f"thread part {part + 1}" if part else "", error.item)))
    text = f"Failed on {label}" + (f" (HTTP {error.status})" if error.status else "") + (f" at {where}" if where else "")
    text += f": {error.message}"
    if error.body and error.body not in error.message and len(error.body) > len(error.message) + 40:
        text += f" — {label} answered: {error.body}"  # the body says more than the message we picked
    return text[:2000]


def retry_waits(settings: Optional[dict], variable: str, default: tuple, what: str) -> tuple:
    """The seconds before each retry from `variable` ("5,30,120": three retries), or `default` (logged, naming
    `what` is then done on it, when the value is not such a list)."""
    raw = (settings or {}).get(variable, "").strip()
    if not raw:
        return default
    with contextlib.suppress(ValueError):
        waits = tuple(float(item) for item in raw.split(","))
        if all(0 <= wait <= 86400 for wait in waits):  # (also refuses nan)
            return waits
    log(f"{variable} must be seconds between 0 and 86400 separated by commas, like 5,30,120; "
        f"got {raw[:100]!r}: {what} on the default schedule instead")
    return default


class SenderHost(Protocol):
    """What a RowSender needs of the scheduler it runs beside (scheduler.Scheduler is one)."""
    config: Config
    store: Store
    loop: asyncio.AbstractEventLoop
    owner: str  # "<host>:<pid>": this process's name on the rows it claims
    tasks: set  # the tasks the host's stop() lets finish

    @property
    def running(self) -> bool:
        """Whether this process publishes posts (holds the scheduler's lock, or schedules on PostgreSQL)."""

    @property
    def http(self) -> HttpClient:
        """The host's outbound client."""

    async def publish_part(self, platform: Provider, channel: Channel, post: OutgoingPost,
                           parent: Optional[Release]) -> Release:
        """Publish as the scheduler does (an OAuth channel's token refreshed first)."""


class WokenLoop:
    """Work that runs when woken, however often in one turn of the event loop only once (`_run_due`), and
    otherwise sleeps on one timer (`sleep`), which each run replaces."""
    loop: asyncio.AbstractEventLoop
    timer: Optional[asyncio.TimerHandle] = None
    wake_pending = False

    def may_run(self) -> bool:
        raise NotImplementedError

    def wake(self) -> None:
        if not self.wake_pending and self.may_run():
            self.wake_pending = True
            self.loop.call_soon(self._woken)

    def _woken(self) -> None:
        self.wake_pending = False
        self.stop_sleeping()
        self._run_due()

    def _run_due(self) -> None:
        raise NotImplementedError

    def sleep(self, seconds: float) -> None:
        """Wake again in `seconds`, unless woken sooner."""
        self.timer = self.loop.call_later(seconds, self.wake)

    def stop_sleeping(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


def wake_all(senders: set) -> None:
    """Wake each running sender of `senders`, from any thread of the process (its loop's thread runs the wake)."""
    for sender in list(senders):
        with contextlib.suppress(RuntimeError):  # (its loop closed meanwhile)
            sender.loop.call_soon_threadsafe(sender.wake)


class RowSender(WokenLoop):
    """A WokenLoop that sends rows claimed under a lease (webhook deliveries, alerts, mail, feeds to fetch):
    started by the scheduler's first tick in every process, stopped with the scheduler."""
    started = stopped = False
    in_flight = 0  # rows this process claimed whose send has not ended
    active: Optional[set] = None  # a set it is in while it runs, for wake_all when a row is queued in this process

    def send_claimed(self, claimed: Iterable[Optional[dict]], send: Callable[[dict], Awaitable[None]],
                     tasks: set) -> None:
        """Send each row this process claimed (None: another process claimed it first) as one of `tasks`, which
        stop() lets finish; a row counts in flight until its send ends, and that end wakes this loop."""
        for row in claimed:
            if row is not None:
                self.in_flight += 1
                task = self.loop.create_task(self._counted(send(row)))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    async def _counted(self, sending: Awaitable[None]) -> None:
        try:
            await sending
        finally:
            self.in_flight -= 1
            self.wake()

    def start(self) -> None:
        if not self.started:
            self.started = True
            if self.active is not None:
                self.active.add(self)
            self.wake()

    def stop(self) -> None:
        """Claim nothing more (sends in flight finish, or their leases end and another process takes them)."""
        self.stopped = True
        if self.active is not None:
            self.active.discard(self)
        self.stop_sleeping()

    def sleep_until(self, now: float, next_due: Optional[float], poll_seconds: float, concurrency: int) -> None:
        """Sleep until `next_due` (None: nothing is due) and at most `poll_seconds`, that long when all `concurrency`
        sends are in flight (one that ends wakes it); `now`: when this run began."""
        if next_due is None or self.in_flight >= concurrency:
            next_due = now + poll_seconds
        self.sleep(min(poll_seconds, max(0.0, next_due - time.time())))

    def may_run(self) -> bool:
        return self.started and not self.stopped
