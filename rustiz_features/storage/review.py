"""Drafts awaiting a person's review (made or changed with a drafts-scoped key): the queries that list them,
their version, and the decision (approve: queued at a date; reject: kept with the reason).

Rules:
- `review` is 'review' or 'rejected' on each post of the group (NULL: no review pending); the scheduler never
  claims a post that has one (storage.scheduling.DUE_SQL).
- A decision may be bound to the version the reviewer saw: when the group changed since, PostGroupChanged
  is raised and nothing is written. The check and the write are one transaction.
"""
from __future__ import annotations

import json
from typing import Callable, Optional

from rustiz import Store, sha256, utc_now_iso
from .posts import POST_COLUMNS, post_row


class PostGroupChanged(Exception):
    """A decision was made on another version of a post group than the one stored now; nothing was written."""

    def __init__(self, version: str):
        super().__init__(version)
        self.version = version


def post_reviews(store: Store, post_ids: list) -> dict:
    """post id -> (review, reason) for those of `post_ids` that await review or were rejected."""
    if not post_ids:
        return {}
    rows = store.read(f"SELECT id, review, review_reason FROM post WHERE review IS NOT NULL "
                      f"AND id IN ({','.join('?' * len(post_ids))})", post_ids)
    return {row[0]: (row[1], row[2]) for row in rows}


def posts_for_review(store: Store, organization_id: str, review: str) -> list:
    """Root posts of live channels whose review is `review` ("review" or "rejected"), oldest first."""
    rows = store.read(f"SELECT {POST_COLUMNS}, i.provider_identifier, i.name, i.picture, p.review_reason, "
                      "p.repeat_until, p.repeat_count "
                      "FROM post p JOIN integration i ON i.id = p.integration_id WHERE p.organization_id = ? "
                      "AND p.review = ? AND p.deleted_at IS NULL AND p.parent_post_id IS NULL "
                      "AND i.deleted_at IS NULL ORDER BY p.created_at, p.id", (organization_id, review))
    posts = []
    for row in rows:
        post = post_row(row)
        post["integration"] = {"id": row[4], "providerIdentifier": row[20], "name": row[21], "picture": row[22]}
        post["review"], post["reviewReason"] = review, row[23]
        post["repeatUntil"], post["repeatCount"] = row[24], row[25]
        posts.append(post)
    return posts


# Every column of a post that a change of the group (content, media, settings, date, parts added or
# removed, a decision) touches; updated_at too, so that a change undone still counts as one.
_VERSIONED_COLUMNS = ("id, integration_id, parent_post_id, content, image, settings, publish_date, delay, "
                      "interval_in_days, state, review, review_reason, updated_at")


def group_version(store: Store, organization_id: str, group: str) -> str:
    """The version of a post group as it is now: it differs after any change to any of its live posts."""
    return _group_version(store.read, organization_id, group)


def _group_version(execute: Callable, organization_id: str, group: str) -> str:
    rows = execute(f"SELECT {_VERSIONED_COLUMNS} FROM post WHERE organization_id = ? AND post_group = ? "
                   "AND deleted_at IS NULL ORDER BY id", (organization_id, group)).fetchall()
    return sha256(json.dumps([list(row) for row in rows], default=str).encode()).hexdigest()[:20]


def decide_review(store: Store, organization_id: str, group: str, reason: Optional[str] = None,
                  publish_date: Optional[str] = None, seen_version: Optional[str] = None) -> int:
    """A person's decision on a draft awaiting review (or rejected before): with `publish_date` approved
    (its thread queued at that date), else rejected with `reason`. Returns how many posts changed.
    With `seen_version`, raises PostGroupChanged (writing nothing) when the group is another version now."""
    now = utc_now_iso()
    with store.writing() as db:
        if seen_version is not None:
            version = _group_version(db.execute, organization_id, group)
            if version != seen_version:
                raise PostGroupChanged(version)
        if publish_date is not None:
            changed = db.execute(
                "UPDATE post SET review = NULL, review_reason = NULL, state = 'QUEUE', publish_date = ?, "
                "recurrence_anchor = ?, error = NULL, not_before = NULL, attempts = 0, updated_at = ? "
                "WHERE organization_id = ? AND post_group = ? AND review IS NOT NULL AND state = 'DRAFT' "
                "AND deleted_at IS NULL", (publish_date, publish_date, now, organization_id, group)).rowcount
        else:
            changed = db.execute(
                "UPDATE post SET review = 'rejected', review_reason = ?, updated_at = ? WHERE organization_id = ? "
                "AND post_group = ? AND review IS NOT NULL AND state = 'DRAFT' AND deleted_at IS NULL",
                (reason, now, organization_id, group)).rowcount
    store.posts_changed()
    return changed
