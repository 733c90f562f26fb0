"""Single sign-on's bookkeeping: the sign-ins waiting for the identity provider (who signs in is web_users').

Rules:
- A flow's state is good once: take_oidc_flow removes it (and the expired ones) as it reads it.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store


def start_oidc_flow(store: Store, state: str, browser_hash: str, nonce: str, code_verifier: str,
                    expires_at: float, now: float) -> None:
    """A sign-in sent to the identity provider; the expired ones go (an abandoned sign-in is not kept)."""
    with store.writing(no_channels=True) as db:
        db.execute("DELETE FROM oidc_flow WHERE expires_at < ?", (now,))
        db.execute("INSERT INTO oidc_flow (state, browser_hash, nonce, code_verifier, expires_at) "
                   "VALUES (?, ?, ?, ?, ?)", (state, browser_hash, nonce, code_verifier, expires_at))


def take_oidc_flow(store: Store, state: str, now: float) -> Optional[dict]:
    """The flow `state` names, removed (a state is good once), or None when unknown or expired."""
    with store.writing(no_channels=True) as db:
        row = db.execute("SELECT browser_hash, nonce, code_verifier, expires_at FROM oidc_flow WHERE state = ?",
                         (state,)).fetchone()
        db.execute("DELETE FROM oidc_flow WHERE state = ? OR expires_at < ?", (state, now))
    if row is None or row[3] < now:
        return None
    return {"browser_hash": row[0], "nonce": row[1], "code_verifier": row[2]}

