"""Comments on a post group: the team's (a person, a key, MCP) and clients' (through a review link), and the
clients' decisions (approved, changes requested) kept beside them.

Rules:
- A comment belongs to a review group (storage.preview_links: a post's multi-channel group, else its own
  group), so every channel's thread of one post shows the same comments.
- Deleting a comment marks it deleted (kept for what still names it); listings show live comments only,
  oldest first.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso

_COMMENT_COLUMNS = "id, author_type, author_id, author_name, content, kind, created_at"


def _comment_row(row: tuple) -> dict:
    return {"id": row[0], "author": {"type": row[1], "id": row[2], "name": row[3]}, "content": row[4],
            "kind": row[5], "createdAt": row[6]}


def add_comment(store: Store, organization_id: str, review_group: str, author_type: str, author_id: Optional[str],
                author_name: str, content: str, kind: str = "comment") -> dict:
    """A new comment (or a client's decision, `kind` approved or changes) on the review group; its view."""
    now, comment_id = utc_now_iso(), new_uuid()
    with store.writing(no_channels=True) as db:
        db.execute("INSERT INTO post_comment (id, organization_id, review_group, author_type, author_id, "
                   "author_name, content, kind, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (comment_id, organization_id, review_group, author_type, author_id, author_name, content, kind,
                    now))
    return _comment_row((comment_id, author_type, author_id, author_name, content, kind, now))


def comments(store: Store, organization_id: str, review_group: str, limit: int) -> list:
    """The live comments of a review group, oldest first, at most the `limit` newest."""
    rows = store.read(f"SELECT {_COMMENT_COLUMNS} FROM post_comment WHERE organization_id = ? AND review_group = ? "
                      "AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ?",
                      (organization_id, review_group, limit)).fetchall()
    return [_comment_row(row) for row in reversed(rows)]


def comment(store: Store, organization_id: str, review_group: str, comment_id: str) -> Optional[dict]:
    """One live comment of the review group, or None."""
    row = store.read(f"SELECT {_COMMENT_COLUMNS} FROM post_comment WHERE id = ? AND organization_id = ? "
                     "AND review_group = ? AND deleted_at IS NULL", (comment_id, organization_id, review_group)
                     ).fetchone()
    return None if row is None else _comment_row(row)


def delete_comment(store: Store, organization_id: str, comment_id: str) -> bool:
    """A live comment marked deleted; whether there was one."""
    with store.writing(no_channels=True) as db:
        return db.execute("UPDATE post_comment SET deleted_at = ? WHERE id = ? AND organization_id = ? "
                          "AND deleted_at IS NULL", (utc_now_iso(), comment_id, organization_id)).rowcount > 0


def person_name(store: Store, user_id: str) -> Optional[str]:
    """How a web user signs a comment: their name, else their e-mail (None for an unknown id)."""
    row = store.read("SELECT COALESCE(name, email) FROM web_user WHERE id = ?", (user_id,)).fetchone()
    return None if row is None else row[0]
