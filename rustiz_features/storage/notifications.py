"""An organization's notifications: what went wrong (or right) that a person should read, newest first.

Rules:
- Written by the scheduler (outcomes, retries, deliveries given up) and the connect flows (their problems);
  read one page at a time by GET /public/v1/notifications, in Postiz's shape, plus `postId`: the post a
  notification is about (null when none), so the web app links to its page.
"""
from __future__ import annotations

from typing import Any, Optional

from rustiz import Store, new_uuid, utc_now_iso


def add_notification(store: Store, organization_id: str, content: str, link: Optional[str] = None,
                     post_id: Optional[str] = None) -> None:
    with store.writing() as db:
        insert_notification(db, organization_id, content, link, post_id, utc_now_iso())


def insert_notification(db: Any, organization_id: str, content: str, link: Optional[str], post_id: Optional[str],
                        now: str) -> None:
    """A notification, inside a write transaction the caller holds (the scheduler's outcome's own)."""
    db.execute("INSERT INTO notification (id, organization_id, content, link, post_id, created_at, updated_at) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)", (new_uuid(), organization_id, content, link, post_id, now, now))


def notifications(store: Store, organization_id: str, offset: int, limit: int) -> tuple:
    """(one page of notifications newest first, in Postiz's shape; how many there are in all)."""
    total = store.read("SELECT count(*) FROM notification WHERE organization_id = ? AND deleted_at IS NULL",
                       (organization_id,)).fetchone()[0]
    rows = store.read("SELECT id, content, link, created_at, post_id FROM notification WHERE organization_id = ? "
                      "AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                      (organization_id, limit, offset))
    return [{"id": row[0], "content": row[1], "link": row[2], "createdAt": row[3], "postId": row[4]}
            for row in rows], total
