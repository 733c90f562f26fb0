"""The queue's rows: each channel's weekly schedule and switches, the organization's default schedule, the slot
each queued root post holds, and evergreen marks.

Rules:
- A queued root post holds one slot (queue_slot: unique per channel and time), and its whole thread carries
  that time as publish_date; both change together, in one write transaction.
- Slots are chosen inside the write transaction (writers take turns, on PostgreSQL through the advisory
  lock), from the free times the caller computed; the unique constraint is the last guard.
- A slot row whose post left the queue (deleted, published, a draft, given a date of its own) no longer counts:
  `_forget_left` drops such rows before any choice.
- An evergreen copy is written only when, in the same transaction, no copy of its post is queued.
"""
from __future__ import annotations

import sqlite3
from typing import Optional

from rustiz import Store, utc_now_iso
from . import rows_in_chunks

SETTINGS_DEFAULTS = {"schedule": None, "paused": False, "reflow": True, "evergreen": False,
                     "evergreenCooldownDays": 30}
_SETTING_COLUMNS = {"schedule": "schedule", "paused": "paused", "reflow": "reflow", "evergreen": "evergreen",
                    "evergreenCooldownDays": "evergreen_cooldown_days"}
_QUEUED = "state IN ('QUEUE', 'PUBLISHING') AND deleted_at IS NULL"


class EvergreenCopyWaiting(Exception):
    """A copy of that evergreen post is queued already (another process made it): nothing was written."""


class QueueFull(Exception):
    """No free slot among the times offered (the channel's next 90 days are taken); nothing was written."""

    def __init__(self, channel_id: str):
        super().__init__(channel_id)
        self.channel_id = channel_id


def channel_settings(store: Store, channel_id: str) -> dict:
    """The channel's queue settings (defaults when it has none); `schedule` is the stored JSON or None."""
    row = store.read("SELECT schedule, paused, reflow, evergreen, evergreen_cooldown_days FROM queue_channel "
                     "WHERE integration_id = ?", (channel_id,)).fetchone()
    if row is None:
        return dict(SETTINGS_DEFAULTS)
    return {"schedule": row[0], "paused": bool(row[1]), "reflow": bool(row[2]), "evergreen": bool(row[3]),
            "evergreenCooldownDays": row[4]}


def update_channel_settings(store: Store, channel_id: str, changes: dict) -> None:
    """Set some of the channel's settings (keys of SETTINGS_DEFAULTS; booleans stored as 0/1)."""
    columns = [_SETTING_COLUMNS[name] for name in changes]
    values = [int(value) if isinstance(value, bool) else value for value in changes.values()]
    with store.writing() as db:
        db.execute(f"INSERT INTO queue_channel (integration_id, {', '.join(columns)}) VALUES (?{', ?' * len(columns)}) "
                   f"ON CONFLICT (integration_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in columns)}",
                   (channel_id, *values))
    store.posts_changed()  # (pausing or resuming changes what the scheduler may claim)


def organization_default(store: Store, organization_id: str) -> Optional[tuple]:
    """(the organization's default schedule JSON, when it was set) or None."""
    row = store.read("SELECT schedule, set_at FROM queue_default WHERE organization_id = ?",
                     (organization_id,)).fetchone()
    return None if row is None else (row[0], row[1])


def set_organization_default(store: Store, organization_id: str, schedule: Optional[str]) -> None:
    """A new default (None: none). Channels that took the old one (connected after it was set, without a
    schedule of their own) keep it as their own: a default is what a channel starts with, not a link."""
    now = utc_now_iso()
    with store.writing() as db:
        old = db.execute("SELECT schedule, set_at FROM queue_default WHERE organization_id = ?",
                         (organization_id,)).fetchone()
        if old is not None:
            db.execute("INSERT INTO queue_channel (integration_id, schedule) SELECT i.id, ? FROM integration i "
                       "WHERE i.organization_id = ? AND i.created_at >= ? AND NOT EXISTS (SELECT 1 FROM "
                       "queue_channel c WHERE c.integration_id = i.id AND c.schedule IS NOT NULL) "
                       "ON CONFLICT (integration_id) DO UPDATE SET schedule = excluded.schedule",
                       (old[0], organization_id, old[1]))
        db.execute("DELETE FROM queue_default WHERE organization_id = ?", (organization_id,))
        if schedule is not None:
            db.execute("INSERT INTO queue_default (organization_id, schedule, set_at) VALUES (?, ?, ?)",
                       (organization_id, schedule, now))


def channel_created_at(store: Store, channel_id: str) -> Optional[str]:
    row = store.read("SELECT created_at FROM integration WHERE id = ?", (channel_id,)).fetchone()
    return row[0] if row else None


def post_marks(store: Store, post_ids: list) -> dict:
    """post id -> {"inQueue", "evergreen"} for those of `post_ids` that have either (others: both false)."""
    marks: dict = {}
    for post_id, in_queue in rows_in_chunks(
            store, "SELECT q.post_id, p.state FROM queue_slot q JOIN post p ON p.id = q.post_id "
                   "WHERE p.deleted_at IS NULL AND p.publish_date = q.slot AND q.post_id IN ({in_list})", (), post_ids):
        marks.setdefault(post_id, {"inQueue": False, "evergreen": False})["inQueue"] = in_queue == "QUEUE"
    for (post_id,) in rows_in_chunks(store, "SELECT post_id FROM evergreen_post WHERE source_id IS NULL "
                                            "AND post_id IN ({in_list})", (), post_ids):
        marks.setdefault(post_id, {"inQueue": False, "evergreen": False})["evergreen"] = True
    return marks


# --- inside save_posts' write transaction ------------------------------------------------------------------

def _forget_left(db: sqlite3.Connection, channel_id: str) -> None:
    """Drop the slot rows of posts that left the queue (deleted, published, failed, drafts, or given a date of
    their own): their slots are free again."""
    db.execute("DELETE FROM queue_slot WHERE integration_id = ? AND post_id NOT IN (SELECT p.id FROM post p WHERE "
               "p.integration_id = ? AND p.state IN ('QUEUE', 'PUBLISHING') AND p.deleted_at IS NULL "
               "AND p.publish_date = queue_slot.slot)", (channel_id, channel_id))


def _taken(db: sqlite3.Connection, channel_id: str, since: str, except_groups: tuple = ()) -> set:
    """The minutes ('YYYY-MM-DDTHH:MM') from `since` on that a root post of the channel holds: queued ones and
    those with a date of their own (which the queue never moves)."""
    skip = f" AND post_group NOT IN ({','.join('?' * len(except_groups))})" if except_groups else ""
    rows = db.execute(f"SELECT publish_date FROM post WHERE integration_id = ? AND parent_post_id IS NULL AND {_QUEUED} "
                      f"AND publish_date >= ?{skip}", (channel_id, since, *except_groups))
    return {row[0][:16] for row in rows}


def place_thread(db: sqlite3.Connection, thread: list) -> None:
    """A thread to be queued (its root carries `queue_slots`, the free-looking times in order): its rows get the
    first time no root post of the channel holds. Raises QueueFull, and EvergreenCopyWaiting for a copy of an
    evergreen post (`evergreen_source`) when one is queued already."""
    root = thread[0]
    channel_id, candidates = root["integration_id"], root["queue_slots"]
    if root.get("evergreen_source") and db.execute(
            "SELECT 1 FROM evergreen_post w JOIN post y ON y.id = w.post_id WHERE w.source_id = ? "
            "AND y.deleted_at IS NULL AND y.state IN ('QUEUE', 'PUBLISHING')", (root["evergreen_source"],)).fetchone():
        raise EvergreenCopyWaiting(root["evergreen_source"])
    if not candidates:
        raise QueueFull(channel_id)
    _forget_left(db, channel_id)
    taken = _taken(db, channel_id, candidates[0][:16], (root["post_group"],) if root["existing"] else ())
    slot = next((time for time in candidates if time[:16] not in taken), None)
    if slot is None:
        raise QueueFull(channel_id)
    for row in thread:
        row["publish_date"] = slot


def mark_thread(db: sqlite3.Connection, thread: list) -> None:
    """After a thread is written: its root's slot (when it was queued) and its evergreen mark (when given)."""
    root = thread[0]
    if "queue_slots" in root:
        db.execute("DELETE FROM queue_slot WHERE post_id = ?", (root["id"],))
        db.execute("INSERT INTO queue_slot (post_id, integration_id, slot) VALUES (?, ?, ?)",
                   (root["id"], root["integration_id"], root["publish_date"]))
    if root.get("evergreen_source"):
        db.execute("INSERT INTO evergreen_post (post_id, source_id) VALUES (?, ?)", (root["id"], root["evergreen_source"]))
    elif root.get("evergreen") is not None:
        db.execute("DELETE FROM evergreen_post WHERE post_id = ? AND source_id IS NULL", (root["id"],))
        if root["evergreen"]:
            db.execute("INSERT INTO evergreen_post (post_id) VALUES (?) ON CONFLICT (post_id) DO NOTHING",
                       (root["id"],))


# --- moving queued posts ----------------------------------------------------------------------------------

def queued_posts(store: Store, channel_id: str) -> list:
    """The channel's queued root posts not yet claimed, as (post id, group, slot), in slot order."""
    return [tuple(row) for row in store.read(
        "SELECT p.id, p.post_group, q.slot FROM queue_slot q JOIN post p ON p.id = q.post_id "
        "WHERE q.integration_id = ? AND p.state = 'QUEUE' AND p.deleted_at IS NULL AND p.publish_date = q.slot "
        "ORDER BY q.slot, p.id", (channel_id,))]


def _queued_in(db: sqlite3.Connection, channel_id: str, since: str) -> list:
    return db.execute("SELECT p.id, p.post_group, q.slot FROM queue_slot q JOIN post p ON p.id = q.post_id "
                      "WHERE q.integration_id = ? AND p.state = 'QUEUE' AND p.deleted_at IS NULL "
                      "AND p.publish_date = q.slot AND q.slot >= ? ORDER BY q.slot, p.id",
                      (channel_id, since)).fetchall()


def _move(db: sqlite3.Connection, channel_id: str, moves: list, now: str) -> None:
    """Each (post id, group, new slot): the slot rows first freed, then taken again (the unique constraint holds
    at every statement), and the thread's dates set."""
    db.execute(f"DELETE FROM queue_slot WHERE post_id IN ({','.join('?' * len(moves))})", [m[0] for m in moves])
    for post_id, group, slot in moves:
        db.execute("UPDATE post SET publish_date = ?, recurrence_anchor = ?, updated_at = ? WHERE post_group = ? "
                   "AND integration_id = ? AND deleted_at IS NULL", (slot, slot, now, group, channel_id))
        db.execute("INSERT INTO queue_slot (post_id, integration_id, slot) VALUES (?, ?, ?)", (post_id, channel_id, slot))


def reflow(store: Store, channel_id: str, since: str, candidates: list) -> int:
    """The channel's queued posts from `since` on move, in their order, to the first of `candidates` (times from
    `since` or now on) that no post with a date of its own holds; returns how many moved. A post that
    would find no time keeps its own."""
    now = utc_now_iso()
    with store.writing() as db:
        _forget_left(db, channel_id)
        queued = _queued_in(db, channel_id, since)
        if not queued:
            return 0
        fixed = _taken(db, channel_id, since, tuple(row[1] for row in queued))
        free = [time for time in candidates if time[:16] not in fixed]
        moves = [(post_id, group, slot) for (post_id, group, old), slot in zip(queued, free) if slot != old]
        if moves:
            _move(db, channel_id, moves, now)
    if moves:
        store.posts_changed()
    return len(moves)


def reorder(store: Store, channel_id: str, post_ids: list) -> bool:
    """The channel's queued posts take their slots again in the order of `post_ids`; False (nothing changed)
    when `post_ids` is not exactly the channel's queued posts (the queue changed meanwhile)."""
    now = utc_now_iso()
    with store.writing() as db:
        _forget_left(db, channel_id)
        queued = _queued_in(db, channel_id, "")
        if sorted(row[0] for row in queued) != sorted(post_ids):
            return False
        groups = {row[0]: row[1] for row in queued}
        slots = [row[2] for row in queued]
        moves = [(post_id, groups[post_id], slot) for post_id, slot in zip(post_ids, slots)]
        if moves:
            _move(db, channel_id, moves, now)
    store.posts_changed()
    return True


# --- evergreen ---------------------------------------------------------------------------------------------

def evergreen_channels(store: Store) -> list:
    """(channel id, organization id, cooldown days) of live, enabled channels whose evergreen switch is on."""
    return [tuple(row) for row in store.read(
        "SELECT c.integration_id, i.organization_id, c.evergreen_cooldown_days FROM queue_channel c JOIN integration i "
        "ON i.id = c.integration_id WHERE c.evergreen = 1 AND c.paused = 0 AND i.deleted_at IS NULL "
        "AND i.disabled = 0")]


def evergreen_candidates(store: Store, channel_id: str, went_out_before: str) -> list:
    """The channel's live evergreen posts that last went out (themselves or a copy) before `went_out_before`
    and have no copy waiting, as (post id, group, last went out), the longest ago first."""
    return [tuple(row) for row in store.read(
        "SELECT e.post_id, p.post_group, MAX(COALESCE(x.publish_date, p.publish_date)) AS last FROM evergreen_post e "
        "JOIN post p ON p.id = e.post_id LEFT JOIN evergreen_post c ON c.source_id = e.post_id "
        "LEFT JOIN post x ON x.id = c.post_id AND x.state = 'PUBLISHED' AND x.deleted_at IS NULL "
        "WHERE e.source_id IS NULL AND p.integration_id = ? AND p.deleted_at IS NULL AND p.state = 'PUBLISHED' "
        "AND NOT EXISTS (SELECT 1 FROM evergreen_post w JOIN post y ON y.id = w.post_id WHERE w.source_id = e.post_id "
        "AND y.deleted_at IS NULL AND y.state IN ('QUEUE', 'PUBLISHING')) "
        "GROUP BY e.post_id, p.post_group HAVING MAX(COALESCE(x.publish_date, p.publish_date)) < ? "
        "ORDER BY last, e.post_id", (channel_id, went_out_before))]
