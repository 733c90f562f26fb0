"""Single sign-on's bookkeeping: the sign-ins waiting for the identity provider, and who a verified e-mail is.

Rules:
- A flow's state is good once: take_oidc_flow removes it (and the expired ones) as it reads it.
- A person is found by the lower-cased e-mail of their web user, and only as a member of an organization.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store


def start_oidc_flow(store: Store, state: str, browser_hash: str, nonce: str, code_verifier: str,
                    expires_at: float, now: float) -> None:
    """A sign-in sent to the identity provider; the expired ones go (an abandoned sign-in is not kept)."""
    with store.writing(no_channels=True) as db:
        db.execute("DELETE FROM oidc_flow WHERE expires_at < ?", (now,))
        db.execute("INSERT INTO oidc_flow (state, browser_hash, nonce, code_verifier, expires_at) VALUES (?, ?, ?, ?, ?)",
                   (state, browser_hash, nonce, code_verifier, expires_at))


def take_oidc_flow(store: Store, state: str, now: float) -> Optional[dict]:
    """The flow `state` names, removed (a state is good once), or None when unknown or expired."""
    with store.writing(no_channels=True) as db:
        row = db.execute("SELECT browser_hash, nonce, code_verifier, expires_at FROM oidc_flow WHERE state = ?",
                         (state,)).fetchone()
        db.execute("DELETE FROM oidc_flow WHERE state = ? OR expires_at < ?", (state, now))
    if row is None or row[3] < now:
        return None
    return {"browser_hash": row[0], "nonce": row[1], "code_verifier": row[2]}


def member_by_email(store: Store, email: str) -> Optional[tuple]:
    """(web user id, organization id) of the member with this e-mail: the organization the person first joined
    while they are still its member, else the one they joined earliest; None when they are no member."""
    return store.read("SELECT u.id, m.organization_id FROM web_user u JOIN membership m ON m.user_id = u.id "
                      "WHERE u.email = ? ORDER BY CASE WHEN m.organization_id = u.organization_id THEN 0 ELSE 1 END, "
                      "m.created_at, m.organization_id LIMIT 1", (email.lower(),)).fetchone()
