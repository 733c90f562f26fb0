"""The scheduler's storage: which posts are due, their claims and leases, their outcomes, retries and
recurrence, and the scheduler's sign of life.

Rules:
- A post row is due when it is queued, not awaiting review, its publish date and not_before (a retry's wait,
  a thread part's delay) have passed, and, for a thread part, the part before it is published (DUE_SQL).
- Only the scheduler moves a post out of QUEUE, each move one write transaction; every move that may make a
  post claimable tells the other processes (store.posts_changed).
- An outcome (published, failed) queues its webhook deliveries in the same transaction (storage.deliveries).
- PostgreSQL: claims and the publish's result are shared transactions that lock only their rows (FOR UPDATE
  SKIP LOCKED), so processes claim and record side by side; a claim checks again that its post is due (a
  scheduler may claim from a list it read earlier) and reads what publishing needs in the statement that
  claims. Leases are renewed while a post publishes, and an expired one is taken over by one process.
"""
from __future__ import annotations

import json
import time
from typing import Any, Optional

from rustiz import Store, iso_at, new_uuid, utc_now_iso
from . import deliveries as delivery_store
from . import notifications as notification_store

# What a due post is: queued, on a live channel, not awaiting review, and for a thread part, after its parent.
DUE_SQL = ("FROM post p JOIN integration i ON i.id = p.integration_id "
           "LEFT JOIN post parent ON parent.id = p.parent_post_id "
           "WHERE p.state = 'QUEUE' AND p.deleted_at IS NULL AND i.deleted_at IS NULL AND p.review IS NULL "
           "AND (p.parent_post_id IS NULL OR parent.state = 'PUBLISHED') "
           # (issue 26, queue: a paused channel's queued posts wait; resuming moves them to the next slots)
           "AND NOT EXISTS (SELECT 1 FROM queue_slot qs JOIN queue_channel qc ON qc.integration_id = qs.integration_id "
           "WHERE qs.post_id = p.id AND qs.slot = p.publish_date AND qc.paused = 1)")


def release_waiting_posts(store: Store, channel_id: str) -> int:
    """Posts that waited for the channel to be reconnected become due now; how many."""
    now = utc_now_iso()
    with store.writing() as db:
        released = db.execute("UPDATE post SET not_before = ?, updated_at = ? WHERE integration_id = ? AND "
                              "state = 'QUEUE' AND deleted_at IS NULL AND not_before > ?",
                              (now, now, channel_id, now)).rowcount
    store.posts_changed()
    return released


def next_due_time(store: Store, after: str) -> Optional[str]:
    """The earliest time after `after` that a queued post becomes due (ISO, UTC), or None."""
    return store.read("SELECT MIN(due) FROM (SELECT MAX(p.publish_date, COALESCE(p.not_before, '')) AS due "
                      + DUE_SQL + ") AS due_times WHERE due > ?", (after,)).fetchone()[0]


def due_posts(store: Store, now: str, limit: int = 500) -> list:
    """(post id, channel id, provider, due time) of the earliest due post of each channel, earliest first."""
    if store.remote:  # (PostgreSQL has no SQLite's "the row where MIN was found" for bare columns)
        rows = store.read("SELECT id, integration_id, provider_identifier, due FROM (SELECT DISTINCT ON "
                          "(p.integration_id) p.id, p.integration_id, i.provider_identifier, "
                          "MAX(p.publish_date, COALESCE(p.not_before, '')) AS due " + DUE_SQL +
                          " AND p.publish_date <= ? AND COALESCE(p.not_before, '') <= ? AND NOT EXISTS "
                          "(SELECT 1 FROM post busy WHERE busy.integration_id = p.integration_id "
                          "AND busy.state = 'PUBLISHING') "
                          "ORDER BY p.integration_id, due) AS first_due ORDER BY due LIMIT ?", (now, now, limit))
        return [tuple(row) for row in rows]
    rows = store.read("SELECT p.id, p.integration_id, i.provider_identifier, "
                      "MIN(MAX(p.publish_date, COALESCE(p.not_before, ''))) AS due "
                      + DUE_SQL + " AND p.publish_date <= ? AND COALESCE(p.not_before, '') <= ? "
                      "GROUP BY p.integration_id ORDER BY due LIMIT ?", (now, now, limit))
    return [tuple(row) for row in rows]


def claim_post(store: Store, post_ids: list, owner: str, lease_until: str) -> Optional[dict]:
    """QUEUE -> PUBLISHING for the first of `post_ids` that may be claimed, and everything publishing it needs,
    read in the same transaction; None when none may.

    A post may not be claimed when it meanwhile left the queue (edited to a draft, deleted, claimed), or
    (PostgreSQL) when it is no longer due, or another process is claiming or publishing on the same channel."""
    now = utc_now_iso()
    with store.writing(shared=store.remote) as db:
        if store.remote:
            return _claim_shared(db, post_ids, owner, lease_until, now)
        for post_id in post_ids:
            if db.execute("UPDATE post SET state = 'PUBLISHING', lease_owner = ?, lease_until = ?, "
                          "attempts = attempts + 1, idempotency_key = COALESCE(idempotency_key, ?), "
                          "updated_at = ? WHERE id = ? AND state = 'QUEUE' AND deleted_at IS NULL "
                          "AND review IS NULL", (owner, lease_until, new_uuid(), now, post_id)).rowcount:
                break
        else:
            return None
    return post_for_publishing(store, post_id)


def _claim_shared(db: Any, post_ids: list, owner: str, lease_until: str, now: str) -> Optional[dict]:
    """PostgreSQL, in a shared transaction: lock the first of `post_ids` still due and its channel, skipping
    what another process holds (a scheduler claims from a list it read earlier, which other processes claim
    from too), then claim it and read what publishing needs in one statement, unless another post of its
    channel is publishing (then the next). Two statements, not one: the second's snapshot is taken once the
    channel is locked, so it sees every claim committed before; the first only skips most of those early."""
    passed: list = []
    while True:
        locked = db.execute("SELECT p.id " + DUE_SQL + " AND p.id = ANY(?) AND NOT (p.id = ANY(?)) "
                            "AND p.publish_date <= ? AND COALESCE(p.not_before, '') <= ? AND NOT EXISTS "
                            "(SELECT 1 FROM post busy WHERE busy.integration_id = p.integration_id "
                            "AND busy.state = 'PUBLISHING') ORDER BY array_position(?, p.id) LIMIT 1 "
                            "FOR UPDATE OF p, i SKIP LOCKED", (post_ids, passed, now, now, post_ids)).fetchone()
        if locked is None:
            return None
        row = db.execute("WITH p AS (UPDATE post SET state = 'PUBLISHING', lease_owner = ?, lease_until = ?, "
                         "attempts = attempts + 1, idempotency_key = COALESCE(idempotency_key, ?), updated_at = ? "
                         "WHERE id = ? AND NOT EXISTS (SELECT 1 FROM post busy WHERE busy.integration_id = "
                         "post.integration_id AND busy.state = 'PUBLISHING') RETURNING *) "
                         f"SELECT {_PUBLISHING_COLUMNS}, {_PART_SQL} FROM p {_PUBLISHING_JOINS}",
                         (owner, lease_until, new_uuid(), now, locked[0], locked[0])).fetchone()
        if row is not None:
            return _publishing_claim(row)
        passed.append(locked[0])


def renew_leases(store: Store, post_ids: list, owner: str, lease_until: str) -> None:
    """PostgreSQL: the posts `owner` still publishes stay its own until `lease_until`."""
    with store.writing(shared=True) as db:
        db.execute(f"UPDATE post SET lease_until = ? WHERE lease_owner = ? AND state = 'PUBLISHING' "
                   f"AND id IN ({','.join('?' * len(post_ids))})", (lease_until, owner, *post_ids))


def expired_publishing_posts(store: Store, now: str, owner: str, lease_until: str) -> list:
    """PostgreSQL: the posts left PUBLISHING whose lease ran out, taken over by `owner` until `lease_until` (so
    one process recovers each); rows as `publishing_posts` gives them, with the owner that lost them."""
    with store.writing(shared=True) as db:
        lost = db.execute("SELECT id, lease_owner FROM post WHERE state = 'PUBLISHING' AND lease_until < ? "
                          "ORDER BY lease_until LIMIT 500 FOR UPDATE SKIP LOCKED", (now,)).fetchall()
        if not lost:
            return []
        ids = [row[0] for row in lost]
        db.execute(f"UPDATE post SET lease_owner = ?, lease_until = ? WHERE id IN ({','.join('?' * len(ids))})",
                   (owner, lease_until, *ids))
        rows = db.execute("SELECT p.id, i.provider_identifier, p.lease_owner, i.name, p.updated_at, i.token "
                          "FROM post p JOIN integration i ON i.id = p.integration_id "
                          f"WHERE p.id IN ({','.join('?' * len(ids))})", ids).fetchall()
    previous = dict(lost)
    return [(row[0], row[1], previous[row[0]], *row[3:]) for row in rows]


# What publishing a post needs, read in one statement: the post (p), its channel (i), the part before it
# (parent) and its place in the thread (_PART_SQL, whose parameter is the post's id).
_PUBLISHING_COLUMNS = (
    "p.id, p.organization_id, p.integration_id, p.content, p.settings, p.image, p.post_group, "
    "p.parent_post_id, p.publish_date, p.not_before, p.attempts, p.idempotency_key, p.interval_in_days, "
    "i.provider_identifier, i.name, i.token, i.session, i.disabled, i.refresh_needed, "
    "parent.release_id, parent.release_url, parent.reply_ref, p.recurrence_anchor, i.in_between_steps, "
    "p.created_at")
_PUBLISHING_JOINS = "JOIN integration i ON i.id = p.integration_id LEFT JOIN post parent ON parent.id = p.parent_post_id"
_PART_SQL = ("(WITH RECURSIVE up(id, parent) AS (SELECT id, parent_post_id FROM post WHERE id = ? "
             "UNION ALL SELECT post.id, post.parent_post_id FROM post JOIN up ON post.id = up.parent) "
             "SELECT COUNT(*) - 1 FROM up)")
_PUBLISHING_NAMES = (
    "id", "organization_id", "channel_id", "content", "settings", "image", "group", "parent_id",
    "publish_date", "not_before", "attempts", "idempotency_key", "interval_days", "provider",
    "channel_name", "credentials", "session", "disabled", "refresh_needed", "parent_release_id",
    "parent_release_url", "parent_reply_ref", "recurrence_anchor", "in_between_steps", "created_at", "part")


def _publishing_claim(row: tuple) -> dict:
    return dict(zip(_PUBLISHING_NAMES, row))


def post_for_publishing(store: Store, post_id: str) -> dict:
    """A post with its channel (credentials, session, state), the part before it, and its place in the thread."""
    return _publishing_claim(store.read(f"SELECT {_PUBLISHING_COLUMNS}, {_PART_SQL} FROM post p {_PUBLISHING_JOINS} "
                                        "WHERE p.id = ?", (post_id, post_id)).fetchone())


def requeue_post(store: Store, post_id: str, not_before: str, note: str, attempted: bool = True) -> None:
    """A claimed post back to the queue, to be tried again from `not_before`; `note` says why (shown as error).
    `attempted` False: nothing was tried (the post waits for its channel), so the claim is not an attempt."""
    with store.writing() as db:
        db.execute("UPDATE post SET state = 'QUEUE', not_before = ?, error = ?, lease_owner = NULL, "
                   "lease_until = NULL, attempts = MAX(attempts - ?, 0), updated_at = ? "
                   "WHERE id = ? AND state = 'PUBLISHING'",
                   (not_before, note, 0 if attempted else 1, utc_now_iso(), post_id))
    store.posts_changed()


def record_published(store: Store, post_id: str, release_id: str, release_url: str, reply_ref: Any,
                     webhook_event: Optional[dict] = None, notification: Optional[tuple] = None) -> int:
    """PUBLISHED with its release; the next thread part becomes due after its delay. `webhook_event` is
    queued for the organization's webhooks (how many deliveries that made is returned), and `notification`
    ((organization id, text, link, post id), see storage.notifications) added, in the same transaction. A shared transaction on PostgreSQL: the post is
    this scheduler's under its lease, and what else it writes are new rows and the post's own thread parts.
    Other schedulers are told only when this makes a post claimable for them (a thread part, or the channel's
    next post): telling them of every publish made each re-read the whole due list once per publish."""
    from rustiz_features.storage import deliveries as delivery_store  # (until scheduling moves beside it)
    now = utc_now_iso()
    with store.writing(shared=store.remote) as db:
        queued = delivery_store.queue_webhook_event(db, webhook_event, now) if webhook_event is not None else 0
        if notification is not None:
            notification_store.insert_notification(db, *notification, now)
        db.execute("UPDATE post SET state = 'PUBLISHED', release_id = ?, release_url = ?, reply_ref = ?, "
                   "error = NULL, lease_owner = NULL, lease_until = NULL, published_at = ?, updated_at = ? "
                   "WHERE id = ?", (release_id, release_url, None if reply_ref is None else json.dumps(reply_ref),
                                    now, now, post_id))
        # the thread parts after it, and a row (None, None) when its channel has more posts waiting
        followers = db.execute("SELECT id, delay FROM post WHERE parent_post_id = ? AND deleted_at IS NULL "
                               "AND state = 'QUEUE' UNION ALL SELECT NULL, NULL WHERE EXISTS (SELECT 1 FROM post "
                               "WHERE integration_id = (SELECT integration_id FROM post WHERE id = ?) "
                               "AND state = 'QUEUE' AND deleted_at IS NULL)", (post_id, post_id)).fetchall()
        for child_id, delay in followers:
            if child_id is not None:
                db.execute("UPDATE post SET not_before = ? WHERE id = ?",
                           (iso_at(time.time() + max(0, delay or 0) * 60), child_id))
    if followers:
        store.posts_changed()
    return queued


def record_failed(store: Store, post_id: str, error: str, webhook_event: Optional[dict] = None) -> int:
    """ERROR with `error`; the thread parts after it fail too (they would reply to nothing). Returns
    how many later parts were failed with it. `webhook_event` as in record_published."""
    from rustiz_features.storage import deliveries as delivery_store  # (until scheduling moves beside it)
    now = utc_now_iso()
    with store.writing() as db:
        if webhook_event is not None:
            delivery_store.queue_webhook_event(db, webhook_event, now)
        db.execute("UPDATE post SET state = 'ERROR', error = ?, lease_owner = NULL, lease_until = NULL, "
                   "updated_at = ? WHERE id = ?", (error, now, post_id))
        failed, parents = 0, [post_id]
        while parents:
            children = [row[0] for row in db.execute(
                f"SELECT id FROM post WHERE parent_post_id IN ({','.join('?' * len(parents))}) "
                "AND deleted_at IS NULL AND state = 'QUEUE'", parents)]
            for child in children:
                db.execute("UPDATE post SET state = 'ERROR', error = ?, updated_at = ? WHERE id = ?",
                           ("Not published: an earlier part of this thread failed (" + error[:300] + ")",
                            now, child))
            failed, parents = failed + len(children), children
    store.posts_changed()
    return failed


def finished_recurring_root(store: Store, organization_id: str, group: str) -> Optional[tuple]:
    """(root id, publish date, interval in days, recurrence anchor or None) when the group recurs and none
    of it waits or is publishing."""
    return store.read("SELECT id, publish_date, interval_in_days, recurrence_anchor FROM post "
                      "WHERE organization_id = ? AND post_group = ? AND parent_post_id IS NULL AND deleted_at IS NULL "
                      "AND interval_in_days > 0 AND NOT EXISTS (SELECT 1 FROM post waiting WHERE "
                      "waiting.organization_id = ? AND waiting.post_group = ? AND waiting.deleted_at IS NULL "
                      "AND waiting.state IN ('QUEUE', 'PUBLISHING'))",
                      (organization_id, group, organization_id, group)).fetchone()


def rearm_recurring(store: Store, root_id: str, next_date: str) -> None:
    """A recurring post's whole thread back to the queue for its next occurrence."""
    now = utc_now_iso()
    with store.writing() as db:
        group = db.execute("SELECT post_group FROM post WHERE id = ?", (root_id,)).fetchone()[0]
        db.execute("UPDATE post SET state = 'QUEUE', publish_date = ?, not_before = NULL, attempts = 0, "
                   "idempotency_key = NULL, lease_owner = NULL, lease_until = NULL, updated_at = ? "
                   "WHERE post_group = ? AND deleted_at IS NULL AND state IN ('PUBLISHED', 'QUEUE', 'PUBLISHING')", (next_date, now, group))
    store.posts_changed()


def beat_scheduler(store: Store, owner: str, now: float) -> None:
    """PostgreSQL: `owner`'s scheduler is alive at `now` (signs older than a week are forgotten)."""
    with store.writing() as db:
        db.execute("INSERT INTO scheduler_heartbeat (owner, alive_at) VALUES (?, ?) "
                   "ON CONFLICT (owner) DO UPDATE SET alive_at = excluded.alive_at", (owner, now))
        db.execute("DELETE FROM scheduler_heartbeat WHERE alive_at < ?", (now - 7 * 86400,))


def last_scheduler_heartbeat(store: Store) -> Optional[float]:
    """PostgreSQL: when a scheduler last gave a sign of life, or None."""
    return store.read("SELECT MAX(alive_at) FROM scheduler_heartbeat").fetchone()[0]


def publishing_posts(store: Store) -> list:
    """(post id, provider, lease owner, channel name, claimed at, credentials) of every post left PUBLISHING."""
    return store.read("SELECT p.id, i.provider_identifier, p.lease_owner, i.name, p.updated_at, i.token FROM post p "
                      "JOIN integration i ON i.id = p.integration_id WHERE p.state = 'PUBLISHING'").fetchall()


def queue_depth(store: Store, now: str) -> tuple:
    """(queued posts due by `now`, queued posts in all, the earliest due time of the due ones or None)."""
    due, earliest = store.read("SELECT COUNT(*), MIN(MAX(p.publish_date, COALESCE(p.not_before, ''))) "
                               + DUE_SQL + " AND p.publish_date <= ? AND COALESCE(p.not_before, '') <= ?",
                               (now, now)).fetchone()
    total = store.read("SELECT COUNT(*) FROM post WHERE state = 'QUEUE' AND deleted_at IS NULL").fetchone()[0]
    return due, total, earliest
