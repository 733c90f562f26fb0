"""Autopost's feeds and the items seen in them (rustiz_features/autopost.py).

Rules:
- A feed belongs to one organization: its URL, channels (a JSON list of ids), template, mode, whether to add a
  picture, how often it is fetched, whether it is paused (and why), the validators of its last answer (ETag,
  Last-Modified), its last fetch (when, what came of it, the error) and its failures in a row.
- A feed is fetched by one process at a time: claim_feed leases it (a conditional UPDATE only one process wins),
  finish_fetch releases it. Only the lease holder records items.
- An item seen is one row, unique by (feed, item key). record_item inserts it in the same transaction as the
  posts it becomes, after checking no process recorded it and the lease is still this process's: each item
  becomes posts once, across restarts and processes.
- A feed paused for its failures gets one notification, written in the transaction that pauses it.
- Deleting a feed deletes it and its items.
"""
from __future__ import annotations

import json
from typing import Optional

from rustiz import Store, encode_json, new_uuid, utc_now_iso
from . import notifications as notification_store
from . import posts as post_store

RECENT_ITEMS = 5  # the latest items of each feed its listing shows
_COLUMNS = ("id, url, integrations, template, mode, include_image, interval_minutes, paused, paused_reason, etag, "
            "last_modified, primed, next_fetch_at, last_fetch_at, last_result, last_error, failures, created_at, "
            "organization_id")
_NAMES = ("id", "url", "integrations", "template", "mode", "includeImage", "intervalMinutes", "paused",
          "pausedReason", "etag", "lastModified", "primed", "nextFetchAt", "lastFetchAt", "lastResult", "lastError",
          "failures", "createdAt", "organizationId")
_FIELD_COLUMNS = {"url": "url", "integrations": "integrations", "template": "template", "mode": "mode",
                  "includeImage": "include_image", "intervalMinutes": "interval_minutes", "paused": "paused"}
# A feed no live lease holds (the parameter: now).
_FREE = "(lease_until IS NULL OR lease_until < ?)"


def _feed(row: tuple) -> dict:
    feed = dict(zip(_NAMES, row))
    feed["integrations"] = json.loads(feed["integrations"])
    for flag in ("includeImage", "paused", "primed"):
        feed[flag] = bool(feed[flag])
    return feed


def feeds(store: Store, organization_id: str) -> list:
    """The organization's feeds, oldest first, each with its latest items ("recent")."""
    rows = [_feed(row) for row in store.read(f"SELECT {_COLUMNS} FROM autopost_feed WHERE organization_id = ? "
                                             "ORDER BY created_at, id", (organization_id,))]
    for feed in rows:
        feed["recent"] = recent_items(store, feed["id"])
    return rows


def feed(store: Store, organization_id: str, feed_id: str) -> Optional[dict]:
    """One feed of the organization with its latest items, or None."""
    row = store.read(f"SELECT {_COLUMNS} FROM autopost_feed WHERE id = ? AND organization_id = ?",
                     (feed_id, organization_id)).fetchone()
    if row is None:
        return None
    found = _feed(row)
    found["recent"] = recent_items(store, feed_id)
    return found


def recent_items(store: Store, feed_id: str) -> list:
    rows = store.read("SELECT title, link, outcome, reason, post_id, created_at FROM autopost_item WHERE feed_id = ? "
                      "AND outcome <> 'seen' ORDER BY created_at DESC LIMIT ?", (feed_id, RECENT_ITEMS))
    return [dict(zip(("title", "link", "outcome", "reason", "postId", "at"), row)) for row in rows]


def create_feed(store: Store, organization_id: str, fields: dict, now: float) -> str:
    """A new feed (fields by their API names), due at once; its id."""
    feed_id, stamp = new_uuid(), utc_now_iso()
    with store.writing(no_channels=True) as db:
        db.execute("INSERT INTO autopost_feed (id, organization_id, url, integrations, template, mode, include_image, "
                   "interval_minutes, paused, next_fetch_at, created_at, updated_at) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (feed_id, organization_id, fields["url"], encode_json(fields["integrations"]), fields["template"],
                    fields["mode"], int(fields["includeImage"]), fields["intervalMinutes"], int(fields["paused"]),
                    now, stamp, stamp))
    return feed_id


def update_feed(store: Store, organization_id: str, feed_id: str, changes: dict, now: float) -> bool:
    """Changes (API names) made to a feed; whether there is one. A new URL forgets what was seen and fetched
    (its first fetch again only marks items seen); resuming forgets the failures; either is due at once."""
    columns = {_FIELD_COLUMNS[name]: encode_json(value) if name == "integrations" else (
        int(value) if isinstance(value, bool) else value) for name, value in changes.items()}
    due_now = "url" in changes or changes.get("paused") is False
    if changes.get("paused") is False:
        columns.update(failures=0, paused_reason=None)
    if "url" in changes:  # (a fetch of the old address still running loses its lease: it records nothing)
        columns.update(etag=None, last_modified=None, primed=0, last_result=None, last_error=None, lease_owner=None,
                       lease_until=None)
    if due_now:
        columns["next_fetch_at"] = now
    assignments = "".join(f"{column} = ?, " for column in columns)
    with store.writing(no_channels=True) as db:
        found = db.execute(f"UPDATE autopost_feed SET {assignments}updated_at = ? WHERE id = ? AND organization_id = ?",
                           (*columns.values(), utc_now_iso(), feed_id, organization_id)).rowcount > 0
        if found and "url" in changes:
            db.execute("DELETE FROM autopost_item WHERE feed_id = ?", (feed_id,))
    return found


def delete_feed(store: Store, organization_id: str, feed_id: str) -> bool:
    with store.writing(no_channels=True) as db:
        found = db.execute("DELETE FROM autopost_feed WHERE id = ? AND organization_id = ?",
                           (feed_id, organization_id)).rowcount > 0
        if found:
            db.execute("DELETE FROM autopost_item WHERE feed_id = ?", (feed_id,))
    return found


def due_feeds(store: Store, now: float, limit: int) -> list:
    """Ids of feeds due to be fetched (not paused, no live lease), the longest waiting first."""
    return [row[0] for row in store.read(
        f"SELECT id FROM autopost_feed WHERE paused = 0 AND next_fetch_at <= ? AND {_FREE} "
        "ORDER BY next_fetch_at LIMIT ?", (now, now, limit))]


def next_due_time(store: Store) -> Optional[float]:
    """When the next feed not paused is due (None: no such feed)."""
    return store.read("SELECT MIN(next_fetch_at) FROM autopost_feed WHERE paused = 0").fetchone()[0]


def claim_feed(store: Store, feed_id: str, owner: str, lease_until: float, now: float,
               organization_id: Optional[str] = None) -> Optional[dict]:
    """Lease a feed to `owner`: a due one not paused (the loop), or with `organization_id` any of that
    organization's (fetch now). The feed, or None when another process holds it (or it is not due, or gone)."""
    if organization_id is None:
        condition, parameters = "paused = 0 AND next_fetch_at <= ?", (now,)
    else:
        condition, parameters = "organization_id = ?", (organization_id,)
    with store.writing(no_channels=True) as db:
        if db.execute(f"UPDATE autopost_feed SET lease_owner = ?, lease_until = ? WHERE id = ? AND {_FREE} "
                      f"AND {condition}", (owner, lease_until, feed_id, now, *parameters)).rowcount != 1:
            return None
        row = db.execute(f"SELECT {_COLUMNS} FROM autopost_feed WHERE id = ?", (feed_id,)).fetchone()
    return _feed(row)


def holds_lease(store: Store, feed_id: str, owner: str) -> bool:
    return store.read("SELECT 1 FROM autopost_feed WHERE id = ? AND lease_owner = ?", (feed_id, owner)).fetchone() \
        is not None


def seen_keys(store: Store, feed_id: str, keys: list) -> set:
    """Which of `keys` the feed has recorded."""
    from . import rows_in_chunks
    return {row[0] for row in rows_in_chunks(
        store, "SELECT item_key FROM autopost_item WHERE feed_id = ? AND item_key IN ({in_list})", (feed_id,), keys)}


def _insert_item(db: object, feed_id: str, item: dict, outcome: str, reason: Optional[str],
                 post_id: Optional[str], stamp: str) -> bool:
    """An item's row unless recorded before (writers take turns: the check and the insert see no other)."""
    if db.execute("SELECT 1 FROM autopost_item WHERE feed_id = ? AND item_key = ?",
                  (feed_id, item["key"])).fetchone():
        return False
    db.execute("INSERT INTO autopost_item (feed_id, item_key, title, link, outcome, reason, post_id, created_at) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (feed_id, item["key"], item["title"][:300], item["link"][:2000],
                                                   outcome, reason, post_id, stamp))
    return True


def mark_seen(store: Store, feed_id: str, owner: str, items: list) -> int:
    """The feed's first fetch: its items recorded as seen, nothing posted; how many were new."""
    stamp = utc_now_iso()
    with store.writing(no_channels=True) as db:
        if db.execute("SELECT 1 FROM autopost_feed WHERE id = ? AND lease_owner = ?", (feed_id, owner)).fetchone() \
                is None:
            return 0
        return sum(_insert_item(db, feed_id, item, "seen", None, None, stamp) for item in items)


def record_item(store: Store, organization_id: str, feed_id: str, owner: str, item: dict, outcome: str,
                reason: Optional[str] = None, threads: Optional[list] = None, tag_labels: tuple = ()) -> bool:
    """An item recorded with its outcome ('posted' with `threads`, the post rows save_plan would write, or
    'duplicate' / 'refused' with the reason), in one transaction. False (and nothing written) when it was
    recorded before or the lease passed to another process."""
    stamp = utc_now_iso()
    post_id = threads[0][0]["id"] if threads else None
    with store.writing() as db:
        if db.execute("SELECT 1 FROM autopost_feed WHERE id = ? AND lease_owner = ?", (feed_id, owner)).fetchone() \
                is None or not _insert_item(db, feed_id, item, outcome, reason, post_id, stamp):
            return False
        if threads:
            post_store.write_threads(db, organization_id, threads, set(), list(tag_labels), stamp)
    if threads:
        store.posts_changed()
    return True


def finish_fetch(store: Store, feed_id: str, owner: str, outcome: dict, failure_limit: int,
                 notification: Optional[str] = None) -> Optional[dict]:
    """Record a fetch's outcome and release the lease: `outcome` has result, error (None on success), etag,
    lastModified, primed, nextFetchAt. A failure counts towards `failure_limit`, at which the feed is paused
    and `notification` added (once: the pause and it are one transaction). The feed as it is now, None when
    the lease had passed to another process or the feed is gone."""
    stamp = utc_now_iso()
    with store.writing(no_channels=True) as db:
        row = db.execute("SELECT organization_id, failures, etag, last_modified, paused FROM autopost_feed "
                         "WHERE id = ? AND lease_owner = ?", (feed_id, owner)).fetchone()
        if row is None:
            return None
        organization_id, failures, etag, last_modified, paused = row
        failed = outcome["error"] is not None
        failures = failures + 1 if failed else 0
        pause = failed and not paused and failures >= failure_limit  # (a paused feed fetched now: told once)
        db.execute("UPDATE autopost_feed SET lease_owner = NULL, lease_until = NULL, last_fetch_at = ?, "
                   "last_result = ?, last_error = ?, failures = ?, etag = ?, last_modified = ?, "
                   "primed = MAX(primed, ?), next_fetch_at = ?, paused = MAX(paused, ?), "
                   "paused_reason = CASE WHEN ? = 1 THEN ? ELSE paused_reason END WHERE id = ?",
                   (stamp, outcome["result"], outcome["error"], failures,
                    outcome.get("etag", etag) if not failed else etag,
                    outcome.get("lastModified", last_modified) if not failed else last_modified,
                    int(outcome.get("primed", False)), outcome["nextFetchAt"], int(pause), int(pause),
                    f"{failures} fetches in a row failed" if pause else None, feed_id))
        if pause and notification:
            notification_store.insert_notification(db, organization_id, notification, None, None, stamp)
    return {"organizationId": organization_id, "paused": pause, "failures": failures}


def release_feed(store: Store, feed_id: str, owner: str) -> None:
    """The lease given back without a fetch recorded (a fetch that could not start)."""
    with store.writing(no_channels=True) as db:
        db.execute("UPDATE autopost_feed SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?",
                   (feed_id, owner))
