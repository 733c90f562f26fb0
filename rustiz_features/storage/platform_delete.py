"""Deletes on a platform to try again (issue 28): what a channel's platform did not delete for a passing reason.

Rules:
- A row is one channel of one deleted post: the parts still on the platform (JSON, in thread order, each with its
  release id, URL and reply reference), the attempts made so far and when the next is due.
- It is claimed under a lease by whichever process is free (a conditional UPDATE: of several racing, exactly one
  changes the row); only the holder reschedules or finishes it, so one outcome is told once.
"""
from __future__ import annotations

import json
from typing import Optional

from rustiz import Store, new_uuid

_FREE = "(lease_until IS NULL OR lease_until < ?)"  # no live lease holds the row (the parameter: now)
_COLUMNS = ("id", "organization_id", "channel_id", "post_id", "parts", "attempts", "last_reason")


def add_retry(store: Store, organization_id: str, channel_id: str, post_id: str, parts: list, next_attempt_at: float,
              reason: str) -> None:
    """A channel's parts to delete again from `next_attempt_at` (one attempt made already)."""
    with store.writing() as db:
        db.execute("INSERT INTO platform_delete_retry (id, organization_id, channel_id, post_id, parts, "
                   "next_attempt_at, last_reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (new_uuid(), organization_id, channel_id, post_id, json.dumps(parts, ensure_ascii=False),
                    next_attempt_at, reason))


def due_retries(store: Store, now: float, limit: int) -> list:
    """Ids of the retries due by `now` that no live lease holds, the longest waiting first."""
    return [row[0] for row in store.read(
        f"SELECT id FROM platform_delete_retry WHERE next_attempt_at <= ? AND {_FREE} ORDER BY next_attempt_at "
        "LIMIT ?", (now, now, limit))]


def next_retry_time(store: Store) -> Optional[float]:
    """When the next retry may run (its time, or the end of the lease holding it); None when there is none."""
    return store.read("SELECT MIN(CASE WHEN lease_until > next_attempt_at THEN lease_until ELSE next_attempt_at END) "
                      "FROM platform_delete_retry").fetchone()[0]


def claim_retry(store: Store, retry_id: str, owner: str, lease_until: float, now: float) -> Optional[dict]:
    """Lease a due retry to `owner` and count the attempt; the row with its parts decoded, or None when it is no
    longer due or another process claimed it first."""
    with store.writing() as db:
        claimed = db.execute(
            "UPDATE platform_delete_retry SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 "
            f"WHERE id = ? AND next_attempt_at <= ? AND {_FREE}", (owner, lease_until, retry_id, now, now)).rowcount
        row = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM platform_delete_retry WHERE id = ?",
                         (retry_id,)).fetchone() if claimed == 1 else None
    if row is None:
        return None
    retry = dict(zip(_COLUMNS, row))
    retry["parts"] = json.loads(retry["parts"])
    return retry


def reschedule_retry(store: Store, retry_id: str, owner: str, parts: list, next_attempt_at: float, reason: str) -> None:
    """The attempt failed for a passing reason again: what is still there, tried at `next_attempt_at`."""
    with store.writing() as db:
        db.execute("UPDATE platform_delete_retry SET parts = ?, next_attempt_at = ?, last_reason = ?, "
                   "lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?",
                   (json.dumps(parts, ensure_ascii=False), next_attempt_at, reason, retry_id, owner))


def finish_retry(store: Store, retry_id: str, owner: str) -> bool:
    """No further attempt (done, refused, or given up); True when this call ended it (so one notification tells)."""
    with store.writing() as db:
        return db.execute("DELETE FROM platform_delete_retry WHERE id = ? AND lease_owner = ?",
                          (retry_id, owner)).rowcount == 1
