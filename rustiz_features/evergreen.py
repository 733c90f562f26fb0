"""Evergreen posts (issue 26): a published post marked evergreen goes back in its channel's queue, as a new post
with the same content, once it last went out more than the channel's cooldown ago.

Rules:
- Only channels whose evergreen switch is on (and whose queue is not paused); the oldest such post first, one
  copy per post at a time, on the channel's next free slot in the next 90 days (none free: it waits).
- Never within the duplicate window of the same text on that channel (duplicates.py).
- Exactly once across processes: the copy is written only when, in the same write transaction (writers take
  turns), no copy of that post is queued (storage.queue.place_thread).
- The refill runs in every process that runs a scheduler, every RUSTIZ_EVERGREEN_POLL_SECONDS (default 60).
"""
from __future__ import annotations

import sqlite3
import time

from rustiz import iso_at, log, new_cuid, new_uuid
from .alerts import numeric_setting
from .background import RowSender, SenderHost
from .duplicates import find_duplicates
from . import queue
from .post_events import queue_post_event
from .storage import channels as channel_store
from .storage import posts as post_store
from .storage import queue as queue_store


def cooled_down_before(settings: dict, now: float = 0.0) -> str:
    """The instant before which an evergreen post must last have gone out to be queued again."""
    return iso_at((now or time.time()) - settings["evergreenCooldownDays"] * 86400)


def refill(store, now: float = 0.0) -> list:
    """One round over the evergreen channels: for each, its oldest evergreen post past the cooldown is queued
    again when a slot is free. Returns the ids of the copies made."""
    made = []
    for channel_id, organization_id, cooldown in queue_store.evergreen_channels(store):
        before = cooled_down_before({"evergreenCooldownDays": cooldown}, now)
        for source_id, group, _ in queue_store.evergreen_candidates(store, channel_id, before):
            copy_id = _queue_copy(store, organization_id, channel_id, source_id, group)
            if copy_id:
                made.append(copy_id)
                break  # (one a round per channel: the next round sees the queue as it is now)
    return made


def _queue_copy(store, organization_id: str, channel_id: str, source_id: str, group: str):
    """Queue a copy of one evergreen post's thread; its id, or None (no free slot, a duplicate, made elsewhere)."""
    channel = channel_store.channel_row(store, organization_id, channel_id)
    source = post_store.thread(store, organization_id, group)
    if channel is None or not source:
        return None
    slots, first_free = queue.first_free_slot(store, organization_id, channel)
    if first_free is None:
        return None
    plan = {"type": "queue", "date": first_free, "posts": [{"integration": {"id": channel_id}, "group": None,
                                                             "values": [{"content": source[0]["content"]}]}]}
    if find_duplicates(store, plan):
        return None
    made_together, new_group, parent, rows = new_uuid(), new_uuid(), None, []
    for part in source:
        rows.append({"id": new_cuid(), "existing": False, "state": "QUEUE", "publish_date": first_free,
                     "integration_id": channel_id, "content": part["content"], "delay": part["delay"] or 0,
                     "post_group": new_group, "parent_post_id": parent, "settings": part["settings"],
                     "image": part["image"], "creation_method": source[0]["creationMethod"], "interval_in_days": None,
                     "multi_channel_group": made_together, "created_by": None})
        parent = rows[-1]["id"]
    rows[0].update(queue_slots=slots, evergreen_source=source_id)
    try:
        post_store.save_posts(store, organization_id, [rows], set(), [])
    except (queue_store.QueueFull, queue_store.EvergreenCopyWaiting):
        return None
    queue_post_event(store, organization_id, "post.queued", [rows[0]["id"]], {"evergreenOf": source_id})
    return rows[0]["id"]


class EvergreenRefill(RowSender):
    """The scheduler's companion that runs `refill` every RUSTIZ_EVERGREEN_POLL_SECONDS in this process."""

    def __init__(self, host: SenderHost):
        self.host, self.store, self.loop = host, host.store, host.loop
        self.poll_seconds = numeric_setting(host.config.settings, "RUSTIZ_EVERGREEN_POLL_SECONDS", 60.0, 0.05, 86400)

    def _run_due(self) -> None:
        if self.stopped:
            return
        try:
            refill(self.store)
        except sqlite3.Error as error:
            log(f"evergreen: the database failed ({error}); trying again later")
        self.sleep(self.poll_seconds)
