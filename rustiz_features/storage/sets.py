"""The organization's sets: a name, a choice of channels and their settings, which fill the composer.

Rules:
- `channels` (a JSON list of channel ids) and `settings` (a JSON object keyed by those ids) are stored as the
  caller checked them; the caller drops channels deleted since when it shows a set.
- Deleting a set marks it deleted.
"""
from __future__ import annotations

import json
from typing import Optional

from rustiz import Store, encode_json, new_uuid, utc_now_iso
from . import soft_delete_row, update_live_row

_COLUMNS = "id, name, channels, settings"


def _set(row: tuple) -> dict:
    return {"id": row[0], "name": row[1], "channels": json.loads(row[2]), "settings": json.loads(row[3])}


def sets(store: Store, organization_id: str) -> list:
    """The organization's live sets, {id, name, channels, settings}, by name."""
    rows = store.read(f"SELECT {_COLUMNS} FROM post_set WHERE organization_id = ? AND deleted_at IS NULL "
                      "ORDER BY lower(name), id", (organization_id,))
    return [_set(row) for row in rows]


def post_set(store: Store, organization_id: str, set_id: str) -> Optional[dict]:
    """A live set of the organization, or None."""
    row = store.read(f"SELECT {_COLUMNS} FROM post_set WHERE id = ? AND organization_id = ? AND deleted_at IS NULL",
                     (set_id, organization_id)).fetchone()
    return None if row is None else _set(row)


def create_set(store: Store, organization_id: str, name: str, channels: list, settings: dict) -> dict:
    """A new set."""
    set_id, now = new_uuid(), utc_now_iso()
    with store.writing(no_channels=True) as db:
        db.execute("INSERT INTO post_set (id, organization_id, name, channels, settings, created_at, updated_at) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (set_id, organization_id, name, encode_json(channels), encode_json(settings), now, now))
    return {"id": set_id, "name": name, "channels": channels, "settings": settings}


def update_set(store: Store, organization_id: str, set_id: str, changes: dict) -> Optional[dict]:
    """A live set with `changes` ({"name"?, "channels"?, "settings"?}) made: the set as it is now, None when there
    is no such set."""
    columns = {name: value if name == "name" else encode_json(value) for name, value in changes.items()}
    with store.writing(no_channels=True) as db:
        if not update_live_row(db, "post_set", organization_id, set_id, columns):
            return None
    return post_set(store, organization_id, set_id)


def delete_set(store: Store, organization_id: str, set_id: str) -> bool:
    """A live set marked deleted; whether there was one."""
    return soft_delete_row(store, "post_set", organization_id, set_id)
