"""The web app's users (an email and a password hash per organization) and the sign-in sessions they and the
organization's API keys open.

Rules:
- Emails are stored and looked up in lower case; one email is one web user, whatever the organization.
- A new password, a removed user (and, in storage/keys.py and the core, a revoked or rotated key) ends the
  sessions signed in with the old credentials.
- Each request's session lookup (Store.web_session) stays in the core, on the request path.
"""
from __future__ import annotations

import sqlite3
import time
from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso


def add_web_user(store: Store, organization_id: str, email: str, password_hash: str) -> None:
    """A person who signs in to the web app with a password, an admin of the organization (raises
    sqlite3.IntegrityError for a taken email)."""
    user_id, now = new_uuid(), utc_now_iso()
    with store.writing() as db:
        db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, created_at) "
                   "VALUES (?, ?, ?, ?, ?)", (user_id, organization_id, email.lower(), password_hash, now))
        db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) VALUES (?, ?, 'admin', ?)",
                   (user_id, organization_id, now))


def web_user(store: Store, email: str) -> Optional[tuple]:
    """(user id, organization id, password hash) of the web user with this email, or None."""
    return store.read("SELECT id, organization_id, password_hash FROM web_user WHERE email = ?",
                      (email.lower(),)).fetchone()


def set_web_user_password(store: Store, organization_id: str, email: str, password_hash: str) -> bool:
    """A new password for the organization's web user (False when there is none with that email); the
    sessions signed in with the old password end."""
    with store.writing() as db:
        user = _web_user_id(db, organization_id, email)
        if user is None:
            return False
        db.execute("UPDATE web_user SET password_hash = ? WHERE id = ?", (password_hash, user))
        db.execute("DELETE FROM web_session WHERE web_user_id = ?", (user,))
    return True


def remove_web_user(store: Store, organization_id: str, email: str) -> bool:
    """The person no longer a member of the organization, their sessions there ended; a person left in no
    organization is gone with all their sessions (False when the organization has no member with that email)."""
    with store.writing() as db:
        user = _web_user_id(db, organization_id, email)
        if user is None:
            return False
        db.execute("DELETE FROM web_session WHERE web_user_id = ? AND organization_id = ?", (user, organization_id))
        db.execute("DELETE FROM membership WHERE user_id = ? AND organization_id = ?", (user, organization_id))
        if db.execute("SELECT 1 FROM membership WHERE user_id = ?", (user,)).fetchone() is None:
            db.execute("DELETE FROM web_session WHERE web_user_id = ?", (user,))
            db.execute("DELETE FROM web_user WHERE id = ?", (user,))
    return True


def _web_user_id(db: sqlite3.Connection, organization_id: str, email: str) -> Optional[str]:
    """The id of the person with this email who is a member of the organization, or None."""
    row = db.execute("SELECT u.id FROM web_user u JOIN membership m ON m.user_id = u.id "
                     "WHERE u.email = ? AND m.organization_id = ?", (email.lower(), organization_id)).fetchone()
    return row[0] if row else None


def person(store: Store, user_id: str) -> Optional[dict]:
    """{id, email, name} of a web user, or None."""
    row = store.read("SELECT id, email, name FROM web_user WHERE id = ?", (user_id,)).fetchone()
    return None if row is None else {"id": row[0], "email": row[1], "name": row[2]}


def organizations_of(store: Store, user_id: str) -> list:
    """[(organization id, name, role)] of the organizations the person is a member of, by name."""
    return [tuple(row) for row in store.read(
        "SELECT o.id, o.name, m.role FROM membership m JOIN organization o ON o.id = m.organization_id "
        "WHERE m.user_id = ? ORDER BY lower(o.name), o.id", (user_id,))]


def member_role(store: Store, user_id: str, organization_id: str) -> Optional[str]:
    """The person's role in the organization, or None when they are not a member."""
    row = store.read("SELECT role FROM membership WHERE user_id = ? AND organization_id = ?",
                     (user_id, organization_id)).fetchone()
    return row[0] if row else None


def switch_web_session(store: Store, token_hash: str, organization_id: str) -> None:
    """The session goes on in another organization (the caller checked the person is a member there)."""
    with store.writing() as db:
        db.execute("UPDATE web_session SET organization_id = ? WHERE token_hash = ?", (organization_id, token_hash))


def create_web_session(store: Store, token_hash: str, organization_id: str, csrf_token: str, expires_at: float,
                       api_key_hash: Optional[str] = None, web_user_id: Optional[str] = None) -> None:
    """A session signed in with the API key of that hash, or by that web user (one of the two)."""
    with store.writing() as db:
        db.execute("DELETE FROM web_session WHERE expires_at < ?", (time.time(),))
        db.execute("INSERT INTO web_session (token_hash, organization_id, csrf_token, expires_at, api_key_hash, "
                   "web_user_id) VALUES (?, ?, ?, ?, ?, ?)",
                   (token_hash, organization_id, csrf_token, expires_at, api_key_hash, web_user_id))


def end_web_session(store: Store, token_hash: str) -> None:
    """Sign a browser out: its session row goes."""
    with store.writing() as db:
        db.execute("DELETE FROM web_session WHERE token_hash = ?", (token_hash,))
