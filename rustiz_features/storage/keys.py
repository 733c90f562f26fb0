"""Named API keys with a scope (the organization's own key is the full key named "default"): add, list, revoke.

Rules:
- Only a key's hash is stored; a listing never carries hashes.
- A revoked key ends the web sessions signed in with it, and running servers hear of it
  (store.credentials_changed).
- The lookups of the request path (a key's hash to its organization and scope, its last use) and the
  organization's own key (set_api_key_hash, which init and `key rotate` write) stay in the core.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso

DEFAULT_KEY_NAME = "default"  # how key list shows the organization's own key (organization.api_key_hash)


def api_key_hash(store: Store, organization_id: str) -> Optional[str]:
    """The hash of the organization's own key, or None."""
    row = store.read("SELECT api_key_hash FROM organization WHERE id = ?", (organization_id,)).fetchone()
    return row[0] if row else None


def add_api_key(store: Store, organization_id: str, name: str, scope: str, api_key_hash: str) -> dict:
    """A new named key; raises sqlite3.IntegrityError when the organization has a key of that name."""
    key_id, now = new_uuid(), utc_now_iso()
    with store.writing() as db:
        db.execute("INSERT INTO api_key (id, organization_id, name, scope, key_hash, created_at) "
                   "VALUES (?, ?, ?, ?, ?, ?)", (key_id, organization_id, name, scope, api_key_hash, now))
    return {"id": key_id, "name": name, "scope": scope, "createdAt": now, "lastUsedAt": None}


def api_keys(store: Store, organization_id: str) -> list:
    """The organization's keys, its own first (id and name "default"), never their hashes."""
    own = store.read("SELECT COALESCE(api_key_created_at, created_at), api_key_last_used_at FROM organization "
                     "WHERE id = ?", (organization_id,)).fetchone()
    keys = [] if own is None else [
        {"id": DEFAULT_KEY_NAME, "name": DEFAULT_KEY_NAME, "scope": "full", "createdAt": own[0],
         "lastUsedAt": own[1]}]
    rows = store.read("SELECT id, name, scope, created_at, last_used_at FROM api_key WHERE organization_id = ? "
                      "ORDER BY created_at, name", (organization_id,))
    return keys + [{"id": row[0], "name": row[1], "scope": row[2], "createdAt": row[3], "lastUsedAt": row[4]}
                   for row in rows]


def revoke_api_key(store: Store, organization_id: str, name_or_id: str) -> Optional[dict]:
    """The named key (by name or id) deleted, with the web sessions signed in with it; None when unknown."""
    with store.writing() as db:
        row = db.execute("SELECT id, name, scope, key_hash FROM api_key WHERE organization_id = ? "
                         "AND (id = ? OR name = ?)", (organization_id, name_or_id, name_or_id)).fetchone()
        if row is None:
            return None
        db.execute("DELETE FROM web_session WHERE api_key_hash = ?", (row[3],))
        db.execute("DELETE FROM api_key WHERE id = ?", (row[0],))
    store.credentials_changed()
    return {"id": row[0], "name": row[1], "scope": row[2]}
