"""Posts and post groups: their rows, tags and thread order, as the API, the MCP tools, imports and exports
read and write them.

Rules:
- A group (post_group) is one thread per channel: a root post and its replies (comments), each reply after
  its parent. Reads return live posts only (not deleted), shaped as Postiz's Post DB row (`post_row`).
- Writes are whole: `save_posts` writes new and changed threads, their tags and the Idempotency-Key's answer
  in one transaction, and refuses (PostBeingPublished, writing nothing) to change a post the scheduler has
  claimed. Every write tells the scheduler (store.posts_changed).
- Only the scheduler (storage.scheduling) moves a post out of QUEUE; the review of drafts keys' posts is
  storage.review's.
"""
from __future__ import annotations

import sqlite3
from typing import Any, Optional

from rustiz import Store, utc_now_iso
from . import idempotency as idempotency_store, queue as queue_store, rows_in_chunks
from .idempotency import IdempotentResponse


class PostBeingPublished(Exception):
    """A write would change a post the scheduler has claimed (state PUBLISHING); nothing was written."""

    def __init__(self, post_id: str):
        super().__init__(post_id)
        self.post_id = post_id


# The columns of a post that post_row shapes, in its order (p: the post table).
POST_COLUMNS = (
    "p.id, p.state, p.publish_date, p.organization_id, p.integration_id, p.content, p.delay, p.post_group, "
    "p.parent_post_id, p.release_id, p.release_url, p.settings, p.image, p.creation_method, "
    "p.interval_in_days, p.error, p.created_at, p.updated_at, p.deleted_at, p.multi_channel_group")


def post_row(row: tuple) -> dict:
    """A post in the shape of Postiz's Post DB row (§7.2); `state` may also be PUBLISHING here."""
    return {"id": row[0], "state": row[1], "publishDate": row[2], "organizationId": row[3],
            "integrationId": row[4], "content": row[5], "delay": row[6], "group": row[7],
            "parentPostId": row[8], "releaseId": row[9], "releaseURL": row[10], "settings": row[11],
            "image": row[12], "creationMethod": row[13], "intervalInDays": row[14], "error": row[15],
            "createdAt": row[16], "updatedAt": row[17], "deletedAt": row[18], "multiChannelGroup": row[19]}


def post(store: Store, organization_id: str, post_id: str) -> Optional[dict]:
    """A live post of the organization (not deleted, on a channel that is not deleted)."""
    row = store.read(f"SELECT {POST_COLUMNS} FROM post p JOIN integration i ON i.id = p.integration_id "
                     "WHERE p.id = ? AND p.organization_id = ? AND p.deleted_at IS NULL "
                     "AND i.deleted_at IS NULL", (post_id, organization_id)).fetchone()
    return None if row is None else post_row(row)


def post_author(store: Store, organization_id: str, post_id: str) -> Optional[str]:
    """The person (web_user id) who made the post, or None (made by a key, MCP or before people were recorded)."""
    row = store.read("SELECT created_by FROM post WHERE id = ? AND organization_id = ?",
                     (post_id, organization_id)).fetchone()
    return row[0] if row else None


def posts_by_id(store: Store, organization_id: str, post_ids: list) -> dict:
    """id -> post, for the live posts among `post_ids` (others are simply absent)."""
    rows = rows_in_chunks(store, f"SELECT {POST_COLUMNS} FROM post p WHERE p.organization_id = ? "
                                 "AND p.deleted_at IS NULL AND p.id IN ({in_list})", (organization_id,), post_ids)
    return {row[0]: post_row(row) for row in rows}


def thread_waits(store: Store, organization_id: str, group: str) -> dict:
    """post id -> not_before, for the parts of one group that wait for a time of their own (a reply's
    delay once the part before it went out, a retry's wait)."""
    return dict(store.read("SELECT id, not_before FROM post WHERE organization_id = ? AND post_group = ? "
                           "AND deleted_at IS NULL AND not_before IS NOT NULL", (organization_id, group)))


def groups_made_together(store: Store, organization_id: str, post: dict) -> list:
    """The live groups (threads on their channels) one request made with `post`'s, its own first; only its
    own when it has no multi-channel group (made before rustiz kept them, or imported row by row)."""
    if post["multiChannelGroup"] is None:
        return [post["group"]]
    rows = store.read("SELECT DISTINCT post_group FROM post WHERE organization_id = ? AND multi_channel_group = ? "
                      "AND deleted_at IS NULL AND post_group <> ? ORDER BY post_group",
                      (organization_id, post["multiChannelGroup"], post["group"]))
    return [post["group"], *(row[0] for row in rows)]


def thread(store: Store, organization_id: str, group: str) -> list:
    """The live posts of one group in thread order: the root first, then each reply after its parent."""
    rows = store.read(f"SELECT {POST_COLUMNS} FROM post p WHERE p.organization_id = ? "
                      "AND p.post_group = ? AND p.deleted_at IS NULL", (organization_id, group))
    by_parent: dict = {}
    for row in rows:
        by_parent.setdefault(row[8], []).append(post_row(row))
    ordered: list = []
    pending = sorted(by_parent.get(None, []), key=lambda post: post["createdAt"])
    while pending:
        post = pending.pop(0)
        ordered.append(post)
        pending[:0] = sorted(by_parent.get(post["id"], []), key=lambda child: child["createdAt"])
    return ordered


def post_tags(store: Store, post_ids: list) -> dict:
    """post id -> [{"tag": Postiz Tags row}], for the tags linked to those posts."""
    tags: dict = {}
    rows = rows_in_chunks(store, "SELECT tp.post_id, t.id, t.name, t.color, t.organization_id, t.deleted_at, "
                                 "t.created_at, t.updated_at FROM tag_post tp JOIN tag t ON t.id = tp.tag_id "
                                 "WHERE tp.post_id IN ({in_list}) ORDER BY t.name", (), post_ids)
    for row in rows:  # (a post's tags are all in one chunk: sorted by name)
        tags.setdefault(row[0], []).append({"tag": {
            "id": row[1], "name": row[2], "color": row[3], "orgId": row[4], "deletedAt": row[5],
            "createdAt": row[6], "updatedAt": row[7]}})
    return tags


def root_posts_for_listing(store: Store, organization_id: str, start: str, end: str,
                           customer_id: Optional[str]) -> list:
    """Root posts of live channels dated in [start, end], plus every recurring one (the caller expands them).

    Each row is a post with `integration` {id, providerIdentifier, name, picture}, `recurrenceAnchor`,
    `repeatUntil` and `repeatCount` added."""
    sql = (f"SELECT {POST_COLUMNS}, i.provider_identifier, i.name, i.picture, p.recurrence_anchor, "
           "p.repeat_until, p.repeat_count FROM post p "
           "JOIN integration i ON i.id = p.integration_id "
           "WHERE p.organization_id = ? AND p.deleted_at IS NULL AND p.parent_post_id IS NULL "
           "AND i.deleted_at IS NULL AND (p.publish_date BETWEEN ? AND ? OR p.interval_in_days IS NOT NULL)")
    parameters: tuple = (organization_id, start, end)
    if customer_id is not None:
        sql += " AND i.customer_id = ?"
        parameters += (customer_id,)
    posts = []
    for row in store.read(sql + " ORDER BY p.publish_date, p.id", parameters):
        post = post_row(row)
        post["integration"] = {"id": row[4], "providerIdentifier": row[20], "name": row[21], "picture": row[22]}
        post["recurrenceAnchor"], post["repeatUntil"], post["repeatCount"] = row[23], row[24], row[25]
        posts.append(post)
    return posts


def repeat_end(store: Store, post_id: str) -> tuple:
    """(recurrence anchor, repeatUntil, repeatCount) of a post (all None for an unknown one)."""
    row = store.read("SELECT recurrence_anchor, repeat_until, repeat_count FROM post WHERE id = ?",
                     (post_id,)).fetchone()
    return tuple(row) if row else (None, None, None)


def queued_publish_dates(store: Store, channel_id: str, since: str) -> set:
    """Publish dates (as stored) of the channel's queued root posts from `since` on."""
    rows = store.read("SELECT publish_date FROM post WHERE integration_id = ? AND state = 'QUEUE' "
                      "AND parent_post_id IS NULL AND deleted_at IS NULL AND publish_date >= ?",
                      (channel_id, since))
    return {row[0] for row in rows}


def channel_roots_near(store: Store, channel_id: str, start: str, end: str) -> list:
    """Root posts of a channel dated in [start, end] that are queued, being published or published, as
    (id, post_group, content, publish_date, state): what a new post's text is compared with (duplicates)."""
    return store.read("SELECT id, post_group, content, publish_date, state FROM post WHERE integration_id = ? "
                      "AND publish_date BETWEEN ? AND ? AND parent_post_id IS NULL AND deleted_at IS NULL "
                      "AND state IN ('QUEUE', 'PUBLISHING', 'PUBLISHED')", (channel_id, start, end)).fetchall()


def posts_for_export(store: Store, organization_id: str, start: str, end: str, limit: int) -> list:
    """The live posts (roots and their replies) of the groups whose root is dated in [start, end], on live
    channels, ordered by the root's date; at most `limit` groups (the caller asks for one more to know)."""
    rows = store.read(
        f"SELECT {POST_COLUMNS} FROM post p JOIN (SELECT r.post_group, r.publish_date FROM post r "
        "JOIN integration i ON i.id = r.integration_id WHERE r.organization_id = ? AND r.parent_post_id IS NULL "
        "AND r.deleted_at IS NULL AND i.deleted_at IS NULL AND r.publish_date BETWEEN ? AND ? "
        "ORDER BY r.publish_date, r.id LIMIT ?) g ON g.post_group = p.post_group "
        "WHERE p.organization_id = ? AND p.deleted_at IS NULL ORDER BY g.publish_date, p.post_group, p.created_at",
        (organization_id, start, end, limit, organization_id))
    return [post_row(row) for row in rows]


def save_post_batches(store: Store, organization_id: str, batches: list) -> None:
    """Write several save_posts batches, each (threads, replaced_groups, tag_labels), in ONE transaction:
    all of them or none (an import)."""
    now = utc_now_iso()
    with store.writing() as db:
        for threads, replaced_groups, tag_labels in batches:
            _write_threads(db, organization_id, threads, replaced_groups, tag_labels, now)
    store.posts_changed()


def save_posts(store: Store, organization_id: str, threads: list, replaced_groups: set, tag_labels: list,
               idempotency: Optional[IdempotentResponse] = None) -> Optional[IdempotentResponse]:
    """Write new and updated posts in one transaction.

    `threads`: per channel, its rows root first, each a dict of post fields (snake_case keys of the
    post table) with `existing` telling whether to update the row with that id instead of inserting.
    Live posts of `replaced_groups` that are not rewritten here are soft-deleted. Tags are matched to
    the organization's tags by name (unknown labels are ignored, as Postiz does) and linked to roots.
    With `idempotency`, a response already stored under that key (in the last 24 h) is returned and
    nothing is written; otherwise `idempotency` is stored with the posts, and None is returned.
    """
    now = utc_now_iso()
    with store.writing() as db:
        if idempotency is not None:
            earlier = idempotency_store.earlier_response(store, db.execute, organization_id, idempotency.key)
            if earlier is not None:
                return earlier
        _write_threads(db, organization_id, threads, replaced_groups, tag_labels, now)
        if idempotency is not None:
            idempotency_store.store_response(db, organization_id, idempotency)
    store.posts_changed()
    return None


def _write_threads(db: sqlite3.Connection, organization_id: str, threads: list, replaced_groups: set,
                   tag_labels: list, now: str) -> None:
    kept = [row["id"] for thread in threads for row in thread if row["existing"]]
    # Checked inside the write transaction: the scheduler claims posts in one too, so no claim
    # can slip in between this check and the writes below.
    busy = db.execute(f"SELECT id FROM post WHERE state = 'PUBLISHING' AND id IN ({','.join('?' * len(kept))})",
                      kept).fetchone()
    if busy is not None:
        raise PostBeingPublished(busy[0])
    for group in replaced_groups:
        db.execute("UPDATE post SET deleted_at = ?, updated_at = ? WHERE organization_id = ? "
                   f"AND post_group = ? AND deleted_at IS NULL AND id NOT IN ({','.join('?' * len(kept))})",
                   (now, now, organization_id, group, *kept))
    tag_ids = _tag_ids(db, organization_id, tag_labels)
    for thread in threads:
        if "queue_slots" in thread[0]:  # (type "queue": the thread takes the channel's next free slot)
            queue_store.place_thread(db, thread)
        for row in thread:
            _write_post(db, organization_id, row, now)
        queue_store.mark_thread(db, thread)
        db.execute("DELETE FROM tag_post WHERE post_id = ?", (thread[0]["id"],))
        db.executemany("INSERT INTO tag_post (post_id, tag_id) VALUES (?, ?)",
                       [(thread[0]["id"], tag_id) for tag_id in tag_ids])


# The columns a saved post row sets (beside its id, organization, dates, anchor and review); the repeat's end
# (issue 26) is None in rows that do not say it.
_WRITTEN_POST_COLUMNS = ("state", "publish_date", "integration_id", "content", "delay", "post_group",
                         "parent_post_id", "settings", "image", "creation_method", "interval_in_days",
                         "multi_channel_group", "repeat_until", "repeat_count")
_OPTIONAL_POST_COLUMNS = ("repeat_until", "repeat_count")


def _write_post(db: sqlite3.Connection, organization_id: str, row: dict, now: str) -> None:
    values = tuple(row.get(field) if field in _OPTIONAL_POST_COLUMNS else row[field]
                   for field in _WRITTEN_POST_COLUMNS)
    if "review" in row:  # (a row without it keeps its review: an edit by a person changes nothing there)
        _write_post_review(db, organization_id, row, now, values)
        return
    if row["existing"]:
        # Back in the queue (or a draft) means the last failure no longer describes the post.
        # An edited queued post is a new post to the scheduler: no retry wait, a fresh idempotency key.
        # A recurring post keeps counting from its anchor unless its date or interval changes (the
        # right-hand sides all read the row as it was before this UPDATE).
        db.execute(f"UPDATE post SET {', '.join(field + ' = ?' for field in _WRITTEN_POST_COLUMNS)}, "
                   "error = CASE WHEN ? IN ('QUEUE', 'DRAFT') THEN NULL ELSE error END, "
                   # A person queueing a post awaiting review approves it (a drafts key cannot queue).
                   "review = CASE WHEN ? = 'QUEUE' THEN NULL ELSE review END, "
                   "review_reason = CASE WHEN ? = 'QUEUE' THEN NULL ELSE review_reason END, "
                   "recurrence_anchor = CASE WHEN publish_date = ? AND interval_in_days IS ? "
                   "THEN COALESCE(recurrence_anchor, publish_date) ELSE ? END, "
                   "not_before = NULL, attempts = 0, idempotency_key = NULL, "
                   "deleted_at = NULL, updated_at = ? WHERE id = ? AND organization_id = ?",
                   (*values, row["state"], row["state"], row["state"], row["publish_date"], row["interval_in_days"],
                    row["publish_date"],
                    now, row["id"], organization_id))
    else:
        db.execute(f"INSERT INTO post (id, organization_id, created_at, updated_at, recurrence_anchor, created_by, "
                   f"{', '.join(_WRITTEN_POST_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?{', ?' * len(values)})",
                   (row["id"], organization_id, now, now, row["publish_date"], row.get("created_by"), *values))


def _write_post_review(db: sqlite3.Connection, organization_id: str, row: dict, now: str,
                       values: tuple) -> None:
    """A post written with its review mark: "review" (made or changed by a drafts key: a person's review
    is pending again, any earlier reason dropped) or None (a person scheduled it)."""
    if row["existing"]:
        db.execute(f"UPDATE post SET {', '.join(field + ' = ?' for field in _WRITTEN_POST_COLUMNS)}, "
                   "review = ?, review_reason = NULL, error = NULL, not_before = NULL, attempts = 0, "
                   "idempotency_key = NULL, deleted_at = NULL, updated_at = ? WHERE id = ? AND organization_id = ?",
                   (*values, row["review"], now, row["id"], organization_id))
    else:
        db.execute(f"INSERT INTO post (id, organization_id, created_at, updated_at, recurrence_anchor, created_by, "
                   f"review, {', '.join(_WRITTEN_POST_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?{', ?' * len(values)})",
                   (row["id"], organization_id, now, now, row["publish_date"], row.get("created_by"), row["review"],
                    *values))


def _tag_ids(db: sqlite3.Connection, organization_id: str, labels: list) -> list:
    if not labels:
        return []
    rows = db.execute(f"SELECT id FROM tag WHERE organization_id = ? AND deleted_at IS NULL "
                      f"AND name IN ({','.join('?' * len(labels))})", (organization_id, *labels))
    return [row[0] for row in rows]


def update_post_fields(store: Store, organization_id: str, post_ids: list, only_in_states: tuple = (),
                       **fields: Any) -> int:
    """Set the given columns (settings, state, release_id, ...) on live posts of the organization.

    With `only_in_states`, posts that meanwhile moved to another state (the scheduler claimed them)
    are left alone. Returns how many posts changed."""
    assignments = ", ".join(f"{name} = ?" for name in fields)
    state_check = f" AND state IN ({','.join('?' * len(only_in_states))})" if only_in_states else ""
    with store.writing() as db:
        changed = db.execute(f"UPDATE post SET {assignments}, updated_at = ? WHERE organization_id = ? "
                             f"AND deleted_at IS NULL AND id IN ({','.join('?' * len(post_ids))}){state_check}",
                             (*fields.values(), utc_now_iso(), organization_id, *post_ids, *only_in_states)
                             ).rowcount
    store.posts_changed()
    return changed


def retry_failed_group(store: Store, organization_id: str, group: str) -> int:
    """Failed posts of a group back to the queue, due now, their error cleared; returns how many."""
    now = utc_now_iso()
    with store.writing() as db:
        retried = db.execute("UPDATE post SET state = 'QUEUE', error = NULL, not_before = ?, attempts = 0, "
                             "updated_at = ? WHERE organization_id = ? AND post_group = ? AND state = 'ERROR' "
                             "AND deleted_at IS NULL", (now, now, organization_id, group)).rowcount
    store.posts_changed()
    return retried


def delete_group(store: Store, organization_id: str, group: str) -> int:
    now = utc_now_iso()
    with store.writing() as db:
        deleted = db.execute("UPDATE post SET deleted_at = ?, updated_at = ? WHERE organization_id = ? "
                             "AND post_group = ? AND deleted_at IS NULL",
                             (now, now, organization_id, group)).rowcount
    store.posts_changed()
    return deleted


def write_threads(db: sqlite3.Connection, organization_id: str, threads: list, replaced_groups: set,
                  tag_labels: list, now: str) -> None:
    """save_posts' writes inside a write transaction the caller holds (autopost records a feed's item with its
    posts in one); the caller calls store.posts_changed() after it commits."""
    _write_threads(db, organization_id, threads, replaced_groups, tag_labels, now)


def reply_references(store: Store, organization_id: str, post_ids: list) -> dict:
    """post id -> the reply reference its publish stored with its release (Release.reply_ref, decoded), for the
    posts among `post_ids` that have one, deleted ones too (delete on the platform reads them after the delete)."""
    import json
    rows = rows_in_chunks(store, "SELECT id, reply_ref FROM post WHERE organization_id = ? AND reply_ref IS NOT NULL "
                                 "AND id IN ({in_list})", (organization_id,), post_ids)
    return {row[0]: json.loads(row[1]) for row in rows}
