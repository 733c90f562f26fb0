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
    """A person who signs in to the web app with a password (raises sqlite3.IntegrityError for a taken email)."""
    with store.writing() as db:
        db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, created_at) "
                   "VALUES (?, ?, ?, ?, ?)", (new_uuid(), organization_id, email.lower(), password_hash,
                                              utc_now_iso()))


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
    """The organization's web user and its sessions gone (False when there is none with that email)."""
    with store.writing() as db:
        user = _web_user_id(db, organization_id, email)
        if user is None:
            return False
        db.execute("DELETE FROM web_session WHERE web_user_id = ?", (user,))
        db.execute("DELETE FROM web_user WHERE id = ?", (user,))
    return True


def _web_user_id(db: sqlite3.Connection, organization_id: str, email: str) -> Optional[str]:
    row = db.execute("SELECT id FROM web_user WHERE email = ? AND organization_id = ?",
                     (email.lower(), organization_id)).fetchone()
    return row[0] if row else None


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
