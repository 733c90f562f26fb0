"""Delete on the platform (issue 28): what DELETE /posts/:id?onPlatform=true does on each channel of the post's group,
after the group is deleted in rustiz as without onPlatform.

Rules:
- One entry per channel: {"integration", "deleted", "reason"}. `deleted` says that nothing of the post is left on that
  platform as far as rustiz knows: true when every published part was deleted (or was gone already: a 404 for its
  id), and when nothing was ever published there (the reason says so); false otherwise, the reason saying why in the
  platform's words and where what is left can be deleted by hand.
- A platform whose provider cannot delete (can_delete False) is never called: its reason is its provider's delete()
  refusal, which is given no credentials nor outbound client.
- A channel's parts are deleted last first, and its first failure stops it, so that what is left is the start of
  the thread (the post and its first replies), never a reply whose post is gone.
- OAuth channels' tokens are refreshed as for a publish (connect.TokenKeeper); a channel whose platform's rate limit
  ran out (Channel.throttled_for) is asked nothing more. The channels are done at once, each within
  PLATFORM_DELETE_SECONDS; one that takes longer is reported as not known to be deleted.
- What is left on a platform is also told in a notification, since the post itself is gone from rustiz.
- A passing failure (a 5xx, a rate limit, a lost answer, no end within the time) is tried again later from the
  scheduler of any process (PlatformDeleteRetries: a row per channel, claimed under a lease), after each of
  RETRY_WAITS; the answer says so, and one notification tells how it ended (deleted, refused, or given up with
  what is left). A refusal, a dead grant or a removed channel is never tried again: the person must act.
"""
from __future__ import annotations

import asyncio
import sqlite3
import time
import traceback
from typing import TYPE_CHECKING, Any

from rustiz import Config, Store, duration, log
from .background import RowSender, SenderHost, retry_waits, wake_all
from .storage import channels as channel_store
from .storage import notifications as notification_store
from .storage import platform_delete as retry_store

if TYPE_CHECKING:  # (the scheduler loads this module on its first tick: the outbound client only when needed)
    from .http_client import HttpClient

PLATFORM_DELETE_SECONDS = 30.0  # per channel, all of its parts (RUSTIZ_PLATFORM_DELETE_SECONDS)
RETRY_WAITS = (60.0, 300.0, 1800.0, 7200.0, 21600.0)  # before each retry (RUSTIZ_PLATFORM_DELETE_RETRY_WAITS): ~8.5 h
RETRY_CONCURRENCY = 4  # channels retried at once, per process
RETRY_POLL_SECONDS = 60.0  # how often a process looks for retries others queued (or left under an ended lease)


def delete_seconds(config: Config) -> float:
    """PLATFORM_DELETE_SECONDS, or RUSTIZ_PLATFORM_DELETE_SECONDS (1 to 300) when set."""
    raw = (config.settings or {}).get("RUSTIZ_PLATFORM_DELETE_SECONDS", "")
    try:
        return min(300.0, max(1.0, float(raw))) if raw else PLATFORM_DELETE_SECONDS
    except ValueError:
        return PLATFORM_DELETE_SECONDS


def channels_of(thread: list) -> dict:
    """channel id -> its parts of `thread` (a group's posts in thread order), the channels in their first part's order."""
    parts: dict = {}
    for part in thread:
        parts.setdefault(part["integrationId"], []).append(part)
    return parts


def published_parts(parts: list) -> list:
    """The parts that went out (a release id other than "missing": a recurring post's last occurrence too)."""
    return [part for part in parts if part["releaseId"] and part["releaseId"] != "missing"]


async def delete_on_platforms(config: Config, store: Store, http: HttpClient, organization_id: str, post_id: str,
                              thread: list, references: dict) -> list:
    """The entries of DELETE /posts/:id?onPlatform=true for a group's `thread` (read before it was deleted);
    `references`: post id -> its stored reply reference. A channel that failed for a passing reason is queued to
    be tried again, and its reason says when."""
    seconds = delete_seconds(config)
    entries = list(await asyncio.gather(*(
        _bounded(config, store, http, organization_id, channel_id, parts, references, seconds)
        for channel_id, parts in channels_of(thread).items())))
    for entry in entries:
        left, after = entry.pop("left", None), entry.pop("after", None)
        if left:
            wait = max(delete_retry_waits(config)[0], after or 0.0)  # (the platform's own wait when it is longer)
            await store.off_loop(retry_store.add_retry, store, organization_id, entry["integration"], post_id,
                                 [_stored_part(part, references) for part in left], time.time() + wait,
                                 entry["reason"])
            entry["reason"] += _retry_words(wait, left)
            wake_all(ACTIVE_RETRIERS)
    return entries


def delete_retry_waits(config: Config) -> tuple:
    """The seconds before each new try: RUSTIZ_PLATFORM_DELETE_RETRY_WAITS, or RETRY_WAITS."""
    return retry_waits(config.settings, "RUSTIZ_PLATFORM_DELETE_RETRY_WAITS", RETRY_WAITS,
                       "deletes on platforms are retried")


def _retry_words(wait: float, left: list) -> str:
    return (f"; a passing failure: rustiz tries again in {duration(wait)} and tells you in a notification"
            f"{_left_words(left, [])}")


def _stored_part(part: dict, references: dict) -> dict:
    """What a retry needs of a published part: its ids, address and reply reference."""
    return {"id": part["id"], "integrationId": part["integrationId"], "releaseId": part["releaseId"],
            "releaseURL": part["releaseURL"], "reference": references.get(part["id"])}


async def _bounded(config: Config, store: Store, http: HttpClient, organization_id: str, channel_id: str, parts: list,
                   references: dict, seconds: float) -> dict:
    """One channel's entry, within `seconds`; a bug in rustiz is logged and told, never raised."""
    entry = {"integration": channel_id, "deleted": False, "reason": ""}
    progress: list = []  # (the parts deleted so far, for a channel that runs out of time)
    try:
        entry.update(await asyncio.wait_for(
            _channel_entry(config, store, http, organization_id, channel_id, parts, references, progress), seconds))
    except asyncio.TimeoutError:
        entry["reason"] = f"the platform did not finish deleting within {seconds:.0f} s, so the post may still be there"
        entry["left"] = _still_there(published_parts(parts), progress)
    except Exception:
        log(f"deleting the posts of channel {channel_id} on its platform failed unexpectedly:\n{traceback.format_exc()}")
        entry["reason"] = "rustiz failed while deleting it on the platform (its log has the details)"
    return entry


def _still_there(published: list, deleted: list) -> list:
    """The published parts not in `deleted` (post ids)."""
    return [part for part in published if part["id"] not in deleted]


def _left_words(published: list, deleted: list) -> str:
    """"; still there: <url or id>, ..." for the published parts not in `deleted` (post ids)."""
    left = [part["releaseURL"] or part["releaseId"] for part in _still_there(published, deleted)]
    return f"; still there: {', '.join(left)}" if left else ""


async def _channel_entry(config: Config, store: Store, http: HttpClient, organization_id: str, channel_id: str,
                         parts: list, references: dict, progress: list) -> dict:
    """{"deleted", "reason"} of one channel; `progress` gets the id of each part deleted, as it is."""
    from .publishers import provider_for
    from .publishers.base import Channel, OutcomeUnknown, PublishError, Release, Retryable
    published = published_parts(parts)
    row = await store.off_loop(channel_store.channel, store, organization_id, channel_id, True)
    provider = provider_for(row["provider_identifier"]) if row else None
    label = provider.label if provider else (row or {}).get("provider_identifier") or "the platform"
    if not published:
        return {"deleted": True, "reason": f"nothing of this post was published on {label}, so there was nothing "
                                           "to delete there"}
    if provider is None or row["deleted"]:
        why = "its channel was removed from rustiz" if row else "its channel is unknown"
        return {"deleted": False, "reason": f"not deleted on {label}: {why}{_left_words(published, [])}"}
    releases = [Release(part["releaseId"], part["releaseURL"] or "", references.get(part["id"])) for part in published]
    if not provider.can_delete:  # (asked only why: no credentials, no outbound client)
        try:
            await provider.delete(Channel(channel_id, row["name"], {}, None, None), releases[0])  # type: ignore[arg-type]
            refusal = f"{label} cannot delete it"
        except PublishError as refused:
            refusal = refused.message
        return {"deleted": False, "reason": f"{refusal}; delete it on {label} by hand{_left_words(published, [])}"}
    credentials, session = await store.off_loop(channel_store.channel_secrets, store, channel_id)
    channel = Channel(channel_id, row["name"], credentials, session, http,
                      lambda saved: channel_store.save_channel_session(store, channel_id, saved))
    for part, release in reversed(list(zip(published, releases))):
        if channel.throttled_for:  # (the platform's rate limit ran out on the part before: no call until it resets)
            return {"deleted": False, "left": _still_there(published, progress), "after": channel.throttled_for,
                    "reason": f"{label} asked rustiz to wait {channel.throttled_for:.0f} s before its next call "
                              "(a rate limit)"}
        try:
            await _delete_part(config, store, http, provider, channel, release)
        except (Retryable, OutcomeUnknown) as passing:  # (a lost answer: the next try finds it deleted, or not)
            return {"deleted": False, "left": _still_there(published, progress),
                    "after": getattr(passing, "after", None), "reason": _failure_words(label, passing, published, part)}
        except PublishError as failed:
            return {"deleted": False, "reason": _failure_words(label, failed, published, part) +
                    f"; delete it on {label} by hand{_left_words(published, progress)}"}
        except KeyError as missing:  # a channel row without the credentials its platform needs (hand-made, old)
            return {"deleted": False, "reason": f"not deleted on {label}: the channel has no {missing.args[0]} among "
                                                f"its credentials{_left_words(published, progress)}"}
        progress.append(part["id"])
    count = len(published)
    return {"deleted": True, "reason": f"deleted on {label}" + (f" ({count} parts of the thread)" if count > 1 else "")}


async def _delete_part(config: Config, store: Store, http: HttpClient, provider: Any, channel: Any, release: Any) -> None:
    """provider.delete, on an OAuth channel with fresh tokens and once more after a 401 a refresh cures."""
    from .connect import TokenKeeper
    from .publishers.oauth import OAuthProvider
    if not isinstance(provider, OAuthProvider):
        await provider.delete(channel, release)
        return
    await TokenKeeper(config, store, http).call(provider, channel, lambda: provider.delete(channel, release))


def _failure_words(label: str, failed: Any, published: list, part: dict) -> str:
    """Why a part was not deleted, in the platform's words (the caller says what follows and what is left)."""
    from .publishers.base import NeedsReconnect
    which = "the post" if part is published[0] else f"thread part {published.index(part) + 1}"
    status = f" (HTTP {failed.status})" if failed.status else ""
    reconnect = isinstance(failed, NeedsReconnect)
    advice = "; it refused the channel's credentials: reconnect the channel" if reconnect else ""
    return f"{label} did not delete {which}{status}: {failed.message}{advice}"


# --- trying again: passing failures, from the scheduler of any process -----------------------------------------

ACTIVE_RETRIERS: set = set()  # this process's PlatformDeleteRetries (a retry queued here wakes them)


class PlatformDeleteRetries(RowSender):
    """This process's retrier of deletes that failed for a passing reason: it sleeps until the next is due (at
    most RETRY_POLL_SECONDS), claims what is due under a lease, tries it, and records what happened."""
    active = ACTIVE_RETRIERS

    def __init__(self, scheduler: SenderHost):
        self.scheduler, self.store, self.loop = scheduler, scheduler.store, scheduler.loop
        self.config = scheduler.config
        self.retry_waits = delete_retry_waits(self.config)

    def _run_due(self) -> None:
        if self.stopped:
            return
        now = time.time()
        try:
            room = RETRY_CONCURRENCY - self.in_flight
            if room > 0:  # (the lease outlasts one attempt: a live process keeps its claim)
                lease_until, owner = now + delete_seconds(self.config) + 60, self.scheduler.owner
                self.send_claimed((retry_store.claim_retry(self.store, retry_id, owner, lease_until, now)
                                   for retry_id in retry_store.due_retries(self.store, now, room)),
                                  self._attempt, self.scheduler.tasks)
            next_due = retry_store.next_retry_time(self.store)
        except sqlite3.Error as error:
            log(f"deletes on platforms to try again: the database failed ({error}); trying again in 5 s")
            next_due = now + 5
        self.sleep_until(now, next_due, RETRY_POLL_SECONDS, RETRY_CONCURRENCY)

    async def _attempt(self, retry: dict) -> None:
        references = {part["id"]: part.get("reference") for part in retry["parts"]}
        entry = await _bounded(self.config, self.store, self.scheduler.http, retry["organization_id"],
                               retry["channel_id"], retry["parts"], references, delete_seconds(self.config))
        try:
            await self.store.off_loop(self._record, retry, entry)
        except sqlite3.Error as error:
            log(f"a delete on a platform tried again ({retry['id']}): its outcome could not be recorded ({error}); it "
                f"is tried again when its lease ends")

    def _record(self, retry: dict, entry: dict) -> None:
        """Try again later (a passing failure, tries left), or end it with one notification."""
        left, after, owner = entry.pop("left", None), entry.pop("after", None), self.scheduler.owner
        if left and retry["attempts"] - 1 < len(self.retry_waits):  # (left: parts of retry["parts"], as stored)
            wait = max(self.retry_waits[retry["attempts"] - 1], after or 0.0)
            retry_store.reschedule_retry(self.store, retry["id"], owner, left, time.time() + wait, entry["reason"])
            return
        if not retry_store.finish_retry(self.store, retry["id"], owner):
            return  # (the lease passed to another process, which tells the outcome)
        name = channel_names(self.store, retry["organization_id"], [retry["channel_id"]])[retry["channel_id"]]
        tries = f"after {retry['attempts']} attempts"
        if entry["deleted"]:
            text = f"A post deleted in rustiz is now deleted on its platform too. {name}: {entry['reason']} ({tries})"
        elif left:
            text = (f"A post deleted in rustiz is still on its platform: rustiz gave up {tries}. {name}: "
                    f"{entry['reason']}; delete it there by hand{_left_words(left, [])}")
        else:
            text = f"A post deleted in rustiz is still on its platform. {name}: {entry['reason']} ({tries})"
        notification_store.add_notification(self.store, retry["organization_id"], text, None, retry["post_id"])


def tell_what_is_left(store: Store, organization_id: str, post_id: str, entries: list, names: dict) -> None:
    """A notification naming each channel where the deleted post is left, and why (nothing when none is)."""
    left = [f"{names.get(entry['integration'], entry['integration'])}: {entry['reason']}"
            for entry in entries if not entry["deleted"]]
    if left:
        notification_store.add_notification(
            store, organization_id, "A post deleted in rustiz is still on its platform. " + " | ".join(left),
            None, post_id)


def channel_names(store: Store, organization_id: str, channel_ids: list) -> dict:
    """channel id -> its name (removed channels too), for the notification."""
    names = {}
    for channel_id in channel_ids:
        row = channel_store.channel(store, organization_id, channel_id, True)
        names[channel_id] = row["name"] if row else channel_id
    return names
