"""The audit log's rows: entries written, listed a page at a time, and who made them (people and keys).

Rules:
- An entry stores its actor's name and e-mail as they were when it was written, so that the entries of a
  person removed since, or of a key revoked since, still say who.
- Every read is bound to one organization: no entry of another organization is ever listed.
- The housekeeping that forgets entries older than RUSTIZ_AUDIT_DAYS is the core's
  (Store.forget_old_audit_entries), beside the other expiries the primary worker sweeps.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from rustiz import Store, new_cuid
from .keys import DEFAULT_KEY_NAME
from .oauth_server import client_name as oauth_client_name

ENTRIES_PER_PAGE = 50


class Actor(NamedTuple):
    """Who made a change: `kind` is "user", "key", "mcp" or "client" (the API's actor.type)."""
    kind: str
    id: Optional[str]
    name: Optional[str] = None
    email: Optional[str] = None


def add_entries(store: Store, organization_id: str, at: str, actor: Actor, action: str, subject_type: Optional[str],
                subject_ids: list, address: Optional[str]) -> None:
    """One entry per subject id (one entry with no subject when there is none), in one transaction."""
    rows = [(new_cuid(), organization_id, at, actor.kind, actor.id, actor.name, actor.email, action,
             subject_type if subject_id is not None else None, subject_id, address)
            for subject_id in (subject_ids or [None])]
    with store.writing() as db:
        db.executemany("INSERT INTO audit_entry (id, organization_id, at, actor_type, actor_id, actor_name, "
                       "actor_email, action, subject_type, subject_id, address) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def _filters(organization_id: str, actor_id: Optional[str], action: Optional[str]) -> tuple:
    """The WHERE clause and its parameters: the organization's entries, of one actor, of one action (or of
    every action of one noun: "post" matches post.created, post.deleted...)."""
    where, parameters = ["organization_id = ?"], [organization_id]
    if actor_id:
        where.append("actor_id = ?")
        parameters.append(actor_id)
    if action:
        where.append("action = ?" if "." in action else "action LIKE ?")
        parameters.append(action if "." in action else action + ".%")
    return " AND ".join(where), tuple(parameters)


def entries_page(store: Store, organization_id: str, page: int, actor_id: Optional[str] = None,
                 action: Optional[str] = None) -> tuple:
    """([entry in the API's shape], number of pages): page `page` (from 1), newest first."""
    where, parameters = _filters(organization_id, actor_id, action)
    total = store.read(f"SELECT COUNT(*) FROM audit_entry WHERE {where}", parameters).fetchone()[0]
    rows = store.read(f"SELECT id, at, actor_type, actor_id, actor_name, actor_email, action, subject_type, "
                      f"subject_id, address FROM audit_entry WHERE {where} ORDER BY at DESC, id DESC "
                      f"LIMIT ? OFFSET ?", parameters + (ENTRIES_PER_PAGE, (page - 1) * ENTRIES_PER_PAGE))
    entries = [{"id": row[0], "at": row[1],
                "actor": {"type": row[2], "id": row[3], "name": row[4], "email": row[5]},
                "action": row[6],
                "subject": None if row[8] is None else {"type": row[7], "id": row[8]},
                "address": row[9]} for row in rows]
    return entries, -(-total // ENTRIES_PER_PAGE)


def actors(store: Store, organization_id: str) -> list:
    """Everyone who has an entry in the organization's log ([{type, id, name, email}], by name): what the log's
    filter by person or key offers."""
    rows = store.read("SELECT actor_type, actor_id, MAX(actor_name), MAX(actor_email) FROM audit_entry "
                      "WHERE organization_id = ? AND actor_id IS NOT NULL GROUP BY actor_type, actor_id",
                      (organization_id,))
    found = [{"type": row[0], "id": row[1], "name": row[2], "email": row[3]} for row in rows]
    return sorted(found, key=lambda actor: ((actor["name"] or actor["email"] or "").lower(), actor["type"]))


def key_actor(store: Store, organization_id: str, key_id: Optional[str], kind: str = "key") -> Actor:
    """An API key as an actor (`kind` "mcp" for an agent's): its id and name; the organization's own key
    is "default"; an OAuth token's ("oauth:<client id>:<grant>") is named after its client."""
    if key_id is None:
        return Actor(kind, DEFAULT_KEY_NAME, DEFAULT_KEY_NAME)
    if key_id.startswith("oauth:"):  # an MCP client's token (rustiz_features/oauth_server.py): the client's name
        return Actor(kind, key_id, oauth_client_name(store, key_id.split(":")[1]))
    row = store.read("SELECT name FROM api_key WHERE id = ? AND organization_id = ?",
                     (key_id, organization_id)).fetchone()
    return Actor(kind, key_id, row[0] if row else None)


def user_actor(store: Store, user_id: str) -> Actor:
    """A person (web user) as an actor: id, name and e-mail."""
    row = store.read("SELECT name, email FROM web_user WHERE id = ?", (user_id,)).fetchone()
    return Actor("user", user_id, *(row if row else (None, None)))


def session_actor(store: Store, token_hash: str) -> Optional[Actor]:
    """Who signed in the web session (its token's hash): the person, or the API key it was signed in with
    (the organization's own key, or a named full key); None for a session that has ended."""
    row = store.read("SELECT organization_id, web_user_id, api_key_hash FROM web_session WHERE token_hash = ?",
                     (token_hash,)).fetchone()
    if row is None:
        return None
    organization_id, user_id, key_hash = row
    if user_id is not None:
        return user_actor(store, user_id)
    named = store.read("SELECT id FROM api_key WHERE key_hash = ? AND organization_id = ?",
                       (key_hash, organization_id)).fetchone()
    return key_actor(store, organization_id, named[0] if named else None)
