"""The organization's signatures: saved text the composer adds at the end of a new post, one of them
automatically (autoAdd).

Rules:
- At most one live signature of an organization has autoAdd: saving one with it takes it from the others in
  the same transaction (a partial unique index stands behind that).
- Deleting a signature marks it deleted; posts never link to signatures (their text was copied in).
"""
from __future__ import annotations

import sqlite3
from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso
from . import soft_delete_row, update_live_row

_COLUMNS = "id, content, auto_add, created_at"


def _signature(row: tuple) -> dict:
    return {"id": row[0], "content": row[1], "autoAdd": bool(row[2]), "createdAt": row[3]}


def signatures(store: Store, organization_id: str) -> list:
    """The organization's live signatures, {id, content, autoAdd, createdAt}, oldest first."""
    rows = store.read(f"SELECT {_COLUMNS} FROM signature WHERE organization_id = ? AND deleted_at IS NULL "
                      "ORDER BY created_at, id", (organization_id,))
    return [_signature(row) for row in rows]


def signature(store: Store, organization_id: str, signature_id: str) -> Optional[dict]:
    """A live signature of the organization, or None."""
    row = store.read(f"SELECT {_COLUMNS} FROM signature WHERE id = ? AND organization_id = ? "
                     "AND deleted_at IS NULL", (signature_id, organization_id)).fetchone()
    return None if row is None else _signature(row)


def _take_auto_add(db: sqlite3.Connection, organization_id: str, now: str) -> None:
    """No live signature of the organization has autoAdd any more (one is about to get it)."""
    db.execute("UPDATE signature SET auto_add = 0, updated_at = ? WHERE organization_id = ? AND auto_add = 1 "
               "AND deleted_at IS NULL", (now, organization_id))


def create_signature(store: Store, organization_id: str, content: str, auto_add: bool) -> dict:
    """A new signature; with `auto_add`, the only one that has it."""
    signature_id, now = new_uuid(), utc_now_iso()
    with store.writing(no_channels=True) as db:
        if auto_add:
            _take_auto_add(db, organization_id, now)
        db.execute("INSERT INTO signature (id, organization_id, content, auto_add, created_at, updated_at) "
                   "VALUES (?, ?, ?, ?, ?, ?)", (signature_id, organization_id, content, int(auto_add), now, now))
    return {"id": signature_id, "content": content, "autoAdd": auto_add, "createdAt": now}


def update_signature(store: Store, organization_id: str, signature_id: str, changes: dict) -> Optional[dict]:
    """A live signature with `changes` ({"content"?, "auto_add"?}) made: the signature as it is now, None when
    there is no such signature. autoAdd set here is taken from the others (only when the signature exists)."""
    with store.writing(no_channels=True) as db:
        if changes.get("auto_add"):
            exists = db.execute("SELECT 1 FROM signature WHERE id = ? AND organization_id = ? "
                                "AND deleted_at IS NULL", (signature_id, organization_id)).fetchone()
            if exists is None:
                return None
            _take_auto_add(db, organization_id, utc_now_iso())
        columns = {name: int(value) if name == "auto_add" else value for name, value in changes.items()}
        if not update_live_row(db, "signature", organization_id, signature_id, columns):
            return None
    return signature(store, organization_id, signature_id)


def delete_signature(store: Store, organization_id: str, signature_id: str) -> bool:
    """A live signature marked deleted; whether there was one."""
    return soft_delete_row(store, "signature", organization_id, signature_id)
