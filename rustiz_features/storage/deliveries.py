"""Outgoing webhooks and their deliveries: an organization's URLs, told of each post's outcome.

Rules:
- A webhook is a row of the organization (GET/POST/DELETE /webhooks); deleting one drops its deliveries
  still waiting, so none is sent after.
- A webhook is sent the events it subscribed to (its `events`); those made before issue 26 keep post.published
  and post.failed.
- One delivery row per webhook and event, queued by `queue_webhook_event` in the transaction that records
  the outcome (storage.scheduling), so a crash loses none (post_events queues its own with `queue_deliveries`); claimed under a lease by whichever process is
  free (a conditional UPDATE: when several race for one, exactly one changes the row), then delivered,
  retried later, or given up.
"""
from __future__ import annotations

import json
import sqlite3
import time
from typing import Callable, Optional

from rustiz import Store, new_uuid, utc_now_iso
from . import rows_in_chunks, update_live_row


# A webhook as GET /webhooks shows it: its secret only as whether there is one.
_WEBHOOK_COLUMNS = "id, name, url, integrations, secret IS NOT NULL AND secret != '', created_at, events"


def _webhook_row(row: tuple) -> dict:
    return {"id": row[0], "name": row[1], "url": row[2], "integrations": json.loads(row[3]),
            "signed": bool(row[4]), "createdAt": row[5], "events": json.loads(row[6])}


def webhooks(store: Store, organization_id: str) -> list:
    return [_webhook_row(row) for row in store.read(
        f"SELECT {_WEBHOOK_COLUMNS} FROM webhook WHERE organization_id = ? AND deleted_at IS NULL "
        "ORDER BY created_at", (organization_id,))]


def create_webhook(store: Store, organization_id: str, name: str, url: str, integrations: list,
                   secret: Optional[str], events: list) -> dict:
    webhook_id, now = new_uuid(), utc_now_iso()
    with store.writing() as db:
        db.execute("INSERT INTO webhook (id, organization_id, name, url, integrations, secret, created_at, "
                   "updated_at, events) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (webhook_id, organization_id, name, url, json.dumps(integrations), secret, now, now,
                    json.dumps(events)))
        row = db.execute(f"SELECT {_WEBHOOK_COLUMNS} FROM webhook WHERE id = ?", (webhook_id,)).fetchone()
    return _webhook_row(row)


def update_webhook(store: Store, organization_id: str, webhook_id: str, changes: dict) -> Optional[dict]:
    """Change a live webhook's name, url, integrations (list), secret or events (list); None when there is none."""
    columns = {name: json.dumps(value) if isinstance(value, list) else value for name, value in changes.items()
               if name in ("name", "url", "integrations", "secret", "events")}
    with store.writing() as db:
        if columns:
            update_live_row(db, "webhook", organization_id, webhook_id, columns)
        row = db.execute(f"SELECT {_WEBHOOK_COLUMNS} FROM webhook WHERE id = ? AND organization_id = ? "
                         "AND deleted_at IS NULL", (webhook_id, organization_id)).fetchone()
    return _webhook_row(row) if row else None


def delete_webhook(store: Store, organization_id: str, webhook_id: str) -> bool:
    """Soft-delete a webhook; its deliveries still waiting are dropped with it (none is sent after)."""
    now = utc_now_iso()
    with store.writing() as db:
        deleted = db.execute("UPDATE webhook SET deleted_at = ?, updated_at = ? WHERE id = ? "
                             "AND organization_id = ? AND deleted_at IS NULL",
                             (now, now, webhook_id, organization_id)).rowcount
        db.execute(f"DELETE FROM webhook_delivery WHERE webhook_id = ? AND {_DELIVERY_PENDING}",
                   (webhook_id,))
    return bool(deleted)


# A delivery not yet delivered nor given up; one no live lease holds (the parameter: now).
_DELIVERY_PENDING = "delivered_at IS NULL AND gave_up_at IS NULL"
_DELIVERY_FREE = "(lease_until IS NULL OR lease_until < ?)"


def queue_webhook_event(db: sqlite3.Connection, event: dict, now: str) -> int:
    """A delivery of `event` (the scheduler's payload: "event", "organizationId", "channel": {"id"}) to each
    of the organization's webhooks subscribed to it that covers its channel (no channels: all); how many."""
    covering = [webhook_id for webhook_id, covered in _subscribed(db.execute, event["organizationId"], event["event"])
                if not covered or event["channel"]["id"] in covered]
    _insert_deliveries(db, event["organizationId"], event["event"], [(webhook_id, event) for webhook_id in covering],
                       now)
    return len(covering)


def _subscribed(run: Callable, organization_id: str, event: str) -> list:
    """(webhook id, the channel ids it covers, [] for all) of the organization's live webhooks sent `event`
    (`run`: a transaction's execute, or store.read)."""
    return [(webhook_id, json.loads(integrations)) for webhook_id, integrations, events in run(
        "SELECT id, integrations, events FROM webhook WHERE organization_id = ? AND deleted_at IS NULL",
        (organization_id,)).fetchall() if event in json.loads(events)]


def _insert_deliveries(db: sqlite3.Connection, organization_id: str, event: str, payloads: list, now: str) -> None:
    db.executemany("INSERT INTO webhook_delivery (id, organization_id, webhook_id, event, payload, next_attempt_at, "
                   "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [(new_uuid(), organization_id, webhook_id, event,
                     json.dumps(payload, ensure_ascii=False, separators=(",", ":")), time.time(), now)
                    for webhook_id, payload in payloads])


def subscribed_webhooks(store: Store, organization_id: str, event: str) -> list:
    """(webhook id, covered channel ids, [] for all) of the organization's webhooks sent `event`."""
    return _subscribed(store.read, organization_id, event)


def queue_deliveries(store: Store, organization_id: str, event: str, payloads: list) -> int:
    """One delivery per (webhook id, payload) of `payloads`, in one transaction; how many."""
    if payloads:
        with store.writing() as db:
            _insert_deliveries(db, organization_id, event, payloads, utc_now_iso())
    return len(payloads)


def posts_for_event(store: Store, organization_id: str, post_ids: list) -> list:
    """The organization's posts among `post_ids` (deleted ones too: a post.deleted tells of them), in that order,
    as {"id", "group", "state", "publishDate", "deletedAt", "channel": {"id", "name", "provider"}}."""
    rows = rows_in_chunks(store, "SELECT p.id, p.post_group, p.state, p.publish_date, p.deleted_at, i.id, i.name, "
                                 "i.provider_identifier FROM post p JOIN integration i ON i.id = p.integration_id "
                                 "WHERE p.organization_id = ? AND p.id IN ({in_list})", (organization_id,), post_ids)
    found = {row[0]: {"id": row[0], "group": row[1], "state": row[2], "publishDate": row[3], "deletedAt": row[4],
                      "channel": {"id": row[5], "name": row[6], "provider": row[7]}} for row in rows}
    return [found[post_id] for post_id in dict.fromkeys(post_ids) if post_id in found]


def due_webhook_deliveries(store: Store, now: float, limit: int) -> list:
    """Ids of the deliveries due by `now` that no live lease holds, the longest waiting first."""
    return [row[0] for row in store.read(
        f"SELECT id FROM webhook_delivery WHERE {_DELIVERY_PENDING} AND next_attempt_at <= ? "
        f"AND {_DELIVERY_FREE} ORDER BY next_attempt_at LIMIT ?", (now, now, limit))]


def next_webhook_delivery_time(store: Store) -> Optional[float]:
    """When the next waiting delivery may be tried (its next attempt, or the end of the lease holding it)."""
    return store.read("SELECT MIN(CASE WHEN lease_until > next_attempt_at THEN lease_until "
                      f"ELSE next_attempt_at END) FROM webhook_delivery WHERE {_DELIVERY_PENDING}"
                      ).fetchone()[0]


def claim_webhook_delivery(store: Store, delivery_id: str, owner: str, lease_until: float, now: float) -> Optional[dict]:
    """Lease one due delivery to `owner` and count the attempt; with what sending it needs (its webhook's
    url, secret and name). None when it is no longer due, or another process claimed it first."""
    with store.writing() as db:
        claimed = db.execute(
            "UPDATE webhook_delivery SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 "
            f"WHERE id = ? AND {_DELIVERY_PENDING} AND next_attempt_at <= ? AND {_DELIVERY_FREE}",
            (owner, lease_until, delivery_id, now, now)).rowcount
        row = db.execute(
            "SELECT d.id, d.organization_id, d.event, d.payload, d.attempts, d.created_at, w.url, w.secret, "
            "w.name FROM webhook_delivery d JOIN webhook w ON w.id = d.webhook_id WHERE d.id = ?",
            (delivery_id,)).fetchone() if claimed == 1 else None
    names = ("id", "organization_id", "event", "payload", "attempts", "created_at", "url", "secret", "name")
    return dict(zip(names, row)) if row else None


def record_webhook_delivered(store: Store, delivery_id: str) -> None:
    with store.writing() as db:
        db.execute("UPDATE webhook_delivery SET delivered_at = ?, lease_owner = NULL, lease_until = NULL, "
                   f"last_error = NULL WHERE id = ? AND {_DELIVERY_PENDING}", (utc_now_iso(), delivery_id))


def retry_webhook_delivery(store: Store, delivery_id: str, owner: str, next_attempt_at: float, problem: str) -> None:
    """The attempt failed: try again at `next_attempt_at` (unless the lease meanwhile passed to another)."""
    with store.writing() as db:
        db.execute("UPDATE webhook_delivery SET next_attempt_at = ?, last_error = ?, lease_owner = NULL, "
                   f"lease_until = NULL WHERE id = ? AND lease_owner = ? AND {_DELIVERY_PENDING}",
                   (next_attempt_at, problem, delivery_id, owner))


def give_up_webhook_delivery(store: Store, delivery_id: str, owner: str, problem: str) -> bool:
    """No further attempt; True when this call gave it up (so that one notification says so)."""
    with store.writing() as db:
        return db.execute("UPDATE webhook_delivery SET gave_up_at = ?, last_error = ?, lease_owner = NULL, "
                          f"lease_until = NULL WHERE id = ? AND lease_owner = ? AND {_DELIVERY_PENDING}",
                          (utc_now_iso(), problem, delivery_id, owner)).rowcount == 1


def forget_finished_webhook_deliveries(store: Store, finished_before: str) -> int:
    """Delete the deliveries delivered or given up before `finished_before` (ISO), so the table stays small."""
    with store.writing() as db:
        return db.execute("DELETE FROM webhook_delivery WHERE delivered_at < ? OR gave_up_at < ?",
                          (finished_before, finished_before)).rowcount
