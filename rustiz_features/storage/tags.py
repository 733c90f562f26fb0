"""The organization's tags: a name and a colour, linked to posts (tag_post) by storage.posts.

Rules:
- A live tag's name is unique in its organization whatever its case: checked by Unicode case folding inside
  the write transaction (writers take turns), with the index on lower(name) behind it (SQLite's lower folds
  only ASCII). A clash raises TagNameTaken and writes nothing.
- Deleting a tag marks it deleted: the posts linked to it keep showing it, and its name is free again.
"""
from __future__ import annotations

import sqlite3
from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso
from . import soft_delete_row, update_live_row


class TagNameTaken(Exception):
    """Another live tag of the organization has this name (in any case); nothing was written."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _tag(row: tuple) -> dict:
    return {"id": row[0], "name": row[1], "color": row[2]}


def tags(store: Store, organization_id: str) -> list:
    """The organization's live tags, {id, name, color}, by name."""
    rows = store.read("SELECT id, name, color FROM tag WHERE organization_id = ? AND deleted_at IS NULL "
                      "ORDER BY lower(name), id", (organization_id,))
    return [_tag(row) for row in rows]


def tag(store: Store, organization_id: str, tag_id: str) -> Optional[dict]:
    """A live tag of the organization, or None."""
    row = store.read("SELECT id, name, color FROM tag WHERE id = ? AND organization_id = ? AND deleted_at IS NULL",
                     (tag_id, organization_id)).fetchone()
    return None if row is None else _tag(row)


def _refuse_taken_name(db: sqlite3.Connection, organization_id: str, name: str, tag_id: Optional[str]) -> None:
    folded = name.casefold()
    for other_id, other_name in db.execute("SELECT id, name FROM tag WHERE organization_id = ? "
                                           "AND deleted_at IS NULL", (organization_id,)):
        if other_id != tag_id and other_name.casefold() == folded:
            raise TagNameTaken(other_name)


def create_tag(store: Store, organization_id: str, name: str, color: str) -> dict:
    """A new tag; raises TagNameTaken."""
    tag_id, now = new_uuid(), utc_now_iso()
    try:
        with store.writing(no_channels=True) as db:
            _refuse_taken_name(db, organization_id, name, None)
            db.execute("INSERT INTO tag (id, organization_id, name, color, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (tag_id, organization_id, name, color, now, now))
    except sqlite3.IntegrityError:  # (the index: a name the case folding above did not see as the same)
        raise TagNameTaken(name) from None
    return {"id": tag_id, "name": name, "color": color}


def update_tag(store: Store, organization_id: str, tag_id: str, changes: dict) -> Optional[dict]:
    """A live tag with `changes` ({"name"?, "color"?}) made: the tag as it is now, None when there is no such
    tag; raises TagNameTaken."""
    try:
        with store.writing(no_channels=True) as db:
            if "name" in changes:
                _refuse_taken_name(db, organization_id, changes["name"], tag_id)
            if not update_live_row(db, "tag", organization_id, tag_id, changes):
                return None
    except sqlite3.IntegrityError:
        raise TagNameTaken(changes["name"]) from None
    return tag(store, organization_id, tag_id)


def delete_tag(store: Store, organization_id: str, tag_id: str) -> bool:
    """A live tag marked deleted; whether there was one."""
    return soft_delete_row(store, "tag", organization_id, tag_id)
