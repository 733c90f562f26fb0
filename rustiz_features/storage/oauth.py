"""OAuth bookkeeping: the connect flows waiting for a platform's consent, the apps rustiz registered on an
instance (Mastodon), and a channel's tokens with the lease under which one process refreshes them.

Rules:
- A flow's state is good once: take_oauth_flow removes it (and the expired ones) as it reads it.
- A registered app is kept once per (provider, origin): when two workers register at once, the first saved
  stays and both use it.
- Only the holder of a channel's refresh lease writes its refreshed tokens; the lease expires, so a process
  that died holding it does not stop the next refresh.
- The writes that make or renew the channel a consent connected are channel writes: storage/channels.py.
"""
from __future__ import annotations

import json
from typing import Optional

from rustiz import Store, utc_now_iso


def start_oauth_flow(store: Store, state: str, organization_id: str, provider: str, code_verifier: Optional[str],
                     refresh_channel_id: Optional[str], details: dict, expires_at: float) -> None:
    with store.writing() as db:
        db.execute("INSERT INTO oauth_flow (state, organization_id, provider, code_verifier, refresh_channel_id, "
                   "details, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (state, organization_id, provider, code_verifier, refresh_channel_id, json.dumps(details),
                    expires_at))


def oauth_flow_owner(store: Store, state: str, now: float) -> Optional[tuple]:
    """(organization id, provider) of the live flow `state` names, left in place; None when unknown or expired."""
    row = store.read("SELECT organization_id, provider, expires_at FROM oauth_flow WHERE state = ?",
                     (state,)).fetchone()
    return None if row is None or row[2] < now else (row[0], row[1])


def take_oauth_flow(store: Store, state: str, now: float) -> Optional[dict]:
    """The flow `state` names, removed (a state is good once), or None when unknown or expired; expired
    flows go with it."""
    with store.writing() as db:
        row = db.execute("SELECT organization_id, provider, code_verifier, refresh_channel_id, details, expires_at "
                         "FROM oauth_flow WHERE state = ?", (state,)).fetchone()
        db.execute("DELETE FROM oauth_flow WHERE state = ? OR expires_at < ?", (state, now))
    if row is None or row[5] < now:
        return None
    return {"organization_id": row[0], "provider": row[1], "code_verifier": row[2],
            "refresh_channel_id": row[3], "details": json.loads(row[4])}


def oauth_app(store: Store, provider: str, origin: str) -> Optional[tuple]:
    """(client id, client secret) of the app rustiz registered on `origin` (a Mastodon instance), or None."""
    return store.read("SELECT client_id, client_secret FROM oauth_app WHERE provider = ? AND origin = ?",
                      (provider, origin)).fetchone()


def save_oauth_app(store: Store, provider: str, origin: str, client_id: str, client_secret: str) -> tuple:
    """Keep a registered app; when another worker registered one first, that one stays and is returned."""
    with store.writing() as db:
        db.execute("INSERT OR IGNORE INTO oauth_app (provider, origin, client_id, client_secret, created_at) "
                   "VALUES (?, ?, ?, ?, ?)", (provider, origin, client_id, client_secret, utc_now_iso()))
        return db.execute("SELECT client_id, client_secret FROM oauth_app WHERE provider = ? AND origin = ?",
                          (provider, origin)).fetchone()


def channel_tokens(store: Store, channel_id: str) -> tuple:
    """(credentials, refresh token, token expiration ISO or None, refresh needed) of a channel."""
    row = store.read("SELECT token, refresh_token, token_expiration, refresh_needed FROM integration WHERE id = ?",
                     (channel_id,)).fetchone()
    return json.loads(row[0] or "{}"), row[1], row[2], bool(row[3])


def channels_with_tokens_expiring(store: Store, before: str) -> list:
    """Live, enabled channels whose refreshable token expires before the ISO instant `before`:
    [{id, name, organization_id, provider, token_expiration}], soonest first."""
    rows = store.read("SELECT id, name, organization_id, provider_identifier, token_expiration FROM integration "
                      "WHERE refresh_token IS NOT NULL AND token_expiration IS NOT NULL AND token_expiration < ? "
                      "AND refresh_needed = 0 AND disabled = 0 AND deleted_at IS NULL "
                      "ORDER BY token_expiration LIMIT 500", (before,)).fetchall()
    return [dict(zip(("id", "name", "organization_id", "provider", "token_expiration"), row)) for row in rows]


def take_refresh_lease(store: Store, channel_id: str, owner: str, now: float, seconds: float) -> bool:
    """True when `owner` may refresh the channel's tokens now: no other owner holds an unexpired lease."""
    with store.writing() as db:
        return db.execute("UPDATE integration SET refresh_lease_owner = ?, refresh_lease_until = ? WHERE id = ? "
                          "AND (refresh_lease_until IS NULL OR refresh_lease_until < ? OR refresh_lease_owner = ?)",
                          (owner, now + seconds, channel_id, now, owner)).rowcount == 1


def save_refreshed_tokens(store: Store, channel_id: str, owner: str, credentials: dict, refresh_token: Optional[str],
                          token_expiration: Optional[str]) -> None:
    """New tokens from a refresh, and the lease given back; the refresh token stays unless a new one came."""
    with store.writing() as db:
        db.execute("UPDATE integration SET token = ?, refresh_token = COALESCE(?, refresh_token), "
                   "token_expiration = ?, refresh_lease_owner = NULL, refresh_lease_until = NULL, updated_at = ? "
                   "WHERE id = ? AND refresh_lease_owner = ?",
                   (json.dumps(credentials), refresh_token, token_expiration, utc_now_iso(), channel_id, owner))


def release_refresh_lease(store: Store, channel_id: str, owner: str) -> None:
    with store.writing() as db:
        db.execute("UPDATE integration SET refresh_lease_owner = NULL, refresh_lease_until = NULL "
                   "WHERE id = ? AND refresh_lease_owner = ?", (channel_id, owner))
