"""An organization's members (people with a role), the invites that make new ones, and password reset links.

Rules:
- A member is a membership row (storage/web_users.py's person, in one organization, with one role). Removing
  a member ends that person's sessions in that organization in the same transaction: the next request fails.
- The last admin of an organization stays an admin: a change that would leave none changes nothing
  (LastAdmin), checked in the transaction that writes it.
- Invites and reset links are single use: the row that holds a token's hash is deleted when it is used, by
  the statement that checks it is still there. Expired rows are refused where they are read.
- Emails are stored and compared in lower case.
"""
from __future__ import annotations

import sqlite3
from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso

ROLES = ("admin", "editor", "author", "viewer")  # the highest first


class LastAdmin(Exception):
    """The change would leave the organization without an admin."""


def _member_row(row: tuple) -> dict:
    return {"id": row[0], "email": row[1], "name": row[2], "role": row[3], "createdAt": row[4]}


_MEMBERS_SQL = ("SELECT u.id, u.email, u.name, m.role, m.created_at FROM membership m "
                "JOIN web_user u ON u.id = m.user_id WHERE m.organization_id = ?")


def members(store: Store, organization_id: str) -> list:
    """The organization's members, admins first, then by email."""
    rows = store.read(_MEMBERS_SQL + " ORDER BY CASE m.role WHEN 'admin' THEN 0 WHEN 'editor' THEN 1 "
                      "WHEN 'author' THEN 2 ELSE 3 END, u.email", (organization_id,))
    return [_member_row(row) for row in rows]


def member(store: Store, organization_id: str, user_id: str) -> Optional[dict]:
    """One member of the organization by their user id, or None."""
    row = store.read(_MEMBERS_SQL + " AND u.id = ?", (organization_id, user_id)).fetchone()
    return None if row is None else _member_row(row)


def member_by_email(store: Store, organization_id: str, email: str) -> Optional[dict]:
    """One member of the organization by their email, or None."""
    row = store.read(_MEMBERS_SQL + " AND u.email = ?", (organization_id, email.lower())).fetchone()
    return None if row is None else _member_row(row)


def members_with_roles(store: Store, organization_id: str, roles: tuple) -> list:
    """(user id, email, name, role) of the organization's members who have one of `roles` (e-mail to the team)."""
    rows = store.read(_MEMBERS_SQL + " ORDER BY u.email", (organization_id,))
    return [(row[0], row[1], row[2], row[3]) for row in rows if row[3] in roles]


def _leaves_no_admin(db: sqlite3.Connection, organization_id: str, user_id: str) -> bool:
    """Whether taking `user_id`'s admin role away would leave the organization without an admin."""
    admins = [row[0] for row in db.execute("SELECT user_id FROM membership WHERE organization_id = ? AND "
                                           "role = 'admin'", (organization_id,))]
    return admins == [user_id]


def set_role(store: Store, organization_id: str, user_id: str, role: str) -> Optional[dict]:
    """The member's new role (None when not a member); raises LastAdmin when they are the last admin."""
    with store.writing() as db:
        row = db.execute("SELECT role FROM membership WHERE organization_id = ? AND user_id = ?",
                         (organization_id, user_id)).fetchone()
        if row is None:
            return None
        if role != "admin" and _leaves_no_admin(db, organization_id, user_id):
            raise LastAdmin()
        db.execute("UPDATE membership SET role = ? WHERE organization_id = ? AND user_id = ?",
                   (role, organization_id, user_id))
    return member(store, organization_id, user_id)


def remove_member(store: Store, organization_id: str, user_id: str) -> Optional[dict]:
    """The member gone from the organization, with their sessions in it (None when not a member); raises
    LastAdmin when they are its last admin. The person's account stays (other organizations, invites later)."""
    found = member(store, organization_id, user_id)
    if found is None:
        return None
    with store.writing() as db:
        if _leaves_no_admin(db, organization_id, user_id):
            raise LastAdmin()
        removed = db.execute("DELETE FROM membership WHERE organization_id = ? AND user_id = ?",
                             (organization_id, user_id)).rowcount
        db.execute("DELETE FROM web_session WHERE organization_id = ? AND web_user_id = ?",
                   (organization_id, user_id))
    return found if removed else None


# --- invites ---------------------------------------------------------------------------------------------------

def _invite_row(row: tuple) -> dict:
    return {"id": row[0], "email": row[1], "role": row[2], "expiresAt": row[3], "createdAt": row[4]}


def invites(store: Store, organization_id: str) -> list:
    """The organization's pending invites (expired ones too: they can be sent again), newest first."""
    rows = store.read("SELECT id, email, role, expires_at, created_at FROM invite WHERE organization_id = ? "
                      "ORDER BY created_at DESC, email", (organization_id,))
    return [_invite_row(row) for row in rows]


def add_invite(store: Store, organization_id: str, email: str, role: str, token_hash: str, expires_at: str,
               invited_by: Optional[str]) -> dict:
    """A new invite; raises sqlite3.IntegrityError when the organization already invited that email."""
    invite_id, now = new_uuid(), utc_now_iso()
    with store.writing() as db:
        db.execute("INSERT INTO invite (id, organization_id, email, role, token_hash, expires_at, invited_by, "
                   "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (invite_id, organization_id, email.lower(), role, token_hash, expires_at, invited_by, now))
    return {"id": invite_id, "email": email.lower(), "role": role, "expiresAt": expires_at, "createdAt": now}


def renew_invite(store: Store, organization_id: str, invite_id: str, token_hash: str,
                 expires_at: str) -> Optional[dict]:
    """The invite with a new token and expiry (the old token no longer works); None when there is none."""
    with store.writing() as db:
        changed = db.execute("UPDATE invite SET token_hash = ?, expires_at = ? WHERE id = ? AND organization_id = ?",
                             (token_hash, expires_at, invite_id, organization_id)).rowcount
    if not changed:
        return None
    row = store.read("SELECT id, email, role, expires_at, created_at FROM invite WHERE id = ?",
                     (invite_id,)).fetchone()
    return None if row is None else _invite_row(row)


def revoke_invite(store: Store, organization_id: str, invite_id: str) -> Optional[dict]:
    """The invite deleted (its link no longer works); None when there is none."""
    row = store.read("SELECT id, email, role, expires_at, created_at FROM invite WHERE id = ? AND "
                     "organization_id = ?", (invite_id, organization_id)).fetchone()
    if row is None:
        return None
    with store.writing() as db:
        gone = db.execute("DELETE FROM invite WHERE id = ? AND organization_id = ?",
                          (invite_id, organization_id)).rowcount
    return _invite_row(row) if gone else None


def invite_for_token(store: Store, token_hash: str, now: str) -> Optional[dict]:
    """A live invite by its token's hash, with its organization's id and name and whether its email has an
    account; None when unknown or expired."""
    row = store.read("SELECT i.id, i.email, i.role, i.expires_at, i.created_at, i.organization_id, o.name, "
                     "i.invited_by, u.id FROM invite i JOIN organization o ON o.id = i.organization_id "
                     "LEFT JOIN web_user u ON u.email = i.email WHERE i.token_hash = ? AND i.expires_at > ?",
                     (token_hash, now)).fetchone()
    if row is None:
        return None
    return {**_invite_row(row), "organizationId": row[5], "organizationName": row[6], "invitedBy": row[7],
            "userId": row[8]}


def accept_invite(store: Store, token_hash: str, now: str, new_person: Optional[tuple] = None) -> Optional[tuple]:
    """Use a live invite once: its email's person becomes a member with its role. `new_person` (name, password
    hash) makes the account first when the email has none. (organization id, user id), or None when the invite
    is gone, expired, or its email has no account and no new person was given (nothing changes then)."""
    with store.writing() as db:
        row = db.execute("SELECT id, organization_id, email, role FROM invite WHERE token_hash = ? AND "
                         "expires_at > ?", (token_hash, now)).fetchone()
        if row is None:
            return None
        invite_id, organization_id, email, role = row
        user = db.execute("SELECT id FROM web_user WHERE email = ?", (email,)).fetchone()
        if user is None and new_person is None:
            return None
        if not db.execute("DELETE FROM invite WHERE id = ? AND token_hash = ?", (invite_id, token_hash)).rowcount:
            return None  # (another request used it first)
        if user is None:
            user_id = new_uuid()
            db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, created_at, name) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (user_id, organization_id, email, new_person[1], utc_now_iso(),
                                                     new_person[0]))
        else:
            user_id = user[0]
        _join(db, user_id, organization_id, role)
    return organization_id, user_id


def accept_invites_of(store: Store, email: str, now: str, password_hash: str) -> Optional[tuple]:
    """Every live invite of the email used at once (single sign-on: the identity provider vouches for the email
    they were sent to); the account made first, with `password_hash`, when there is none. (the organization of
    the newest invite, the user id, [(invite id, organization id) of each invite accepted]), or None when the
    email has no live invite."""
    with store.writing() as db:
        rows = db.execute("SELECT id, organization_id, role FROM invite WHERE email = ? AND expires_at > ? "
                          "ORDER BY created_at", (email.lower(), now)).fetchall()
        if not rows:
            return None
        user = db.execute("SELECT id FROM web_user WHERE email = ?", (email.lower(),)).fetchone()
        user_id = user[0] if user else new_uuid()
        if user is None:
            db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, created_at) "
                       "VALUES (?, ?, ?, ?, ?)", (user_id, rows[-1][1], email.lower(), password_hash, utc_now_iso()))
        accepted = []
        for invite_id, organization_id, role in rows:
            if db.execute("DELETE FROM invite WHERE id = ?", (invite_id,)).rowcount:
                _join(db, user_id, organization_id, role)
                accepted.append((invite_id, organization_id))
    return rows[-1][1], user_id, accepted


def _join(db: sqlite3.Connection, user_id: str, organization_id: str, role: str) -> None:
    """The person a member of the organization with `role` (an invite's, which replaces a role they had)."""
    db.execute("DELETE FROM membership WHERE user_id = ? AND organization_id = ?", (user_id, organization_id))
    db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) VALUES (?, ?, ?, ?)",
               (user_id, organization_id, role, utc_now_iso()))


# --- password reset links --------------------------------------------------------------------------------------

def add_password_reset(store: Store, user_id: str, token_hash: str, expires_at: str) -> None:
    """A reset link for the person; it replaces the links sent before (only the newest works)."""
    with store.writing() as db:
        db.execute("DELETE FROM password_reset WHERE user_id = ?", (user_id,))
        db.execute("INSERT INTO password_reset (token_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
                   (token_hash, user_id, expires_at, utc_now_iso()))


def use_password_reset(store: Store, token_hash: str, now: str) -> Optional[tuple]:
    """Use a live reset link once: (the person's user id, their organization id, email), or None."""
    with store.writing() as db:
        row = db.execute("SELECT r.user_id, u.organization_id, u.email FROM password_reset r JOIN web_user u "
                         "ON u.id = r.user_id WHERE r.token_hash = ? AND r.expires_at > ?",
                         (token_hash, now)).fetchone()
        if row is None or not db.execute("DELETE FROM password_reset WHERE user_id = ?", (row[0],)).rowcount:
            return None
    return row[0], row[1], row[2]


def password_reset_is_live(store: Store, token_hash: str, now: str) -> bool:
    """Whether a reset link of that token's hash exists and has not expired."""
    return store.read("SELECT 1 FROM password_reset WHERE token_hash = ? AND expires_at > ?",
                      (token_hash, now)).fetchone() is not None
