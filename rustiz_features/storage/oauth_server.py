"""rustiz as an OAuth 2.1 authorization server (issue 27): registered clients, authorization codes, tokens.

Rules:
- Codes and tokens are stored as their SHA-256 hex digests only; callers hash before calling.
- A code is good once: take_authorization_code marks it used in the transaction that reads it.
- A refresh token is good once: rotate_refresh_token revokes it as it issues the next; a reused one revokes
  every token of its chain (RFC 6819 5.2.2.3, OAuth 2.1 4.3.1).
- Times are Unix seconds (REAL), so expiry checks are a comparison in both backends.
"""
from __future__ import annotations

import json
from typing import Optional

from rustiz import Store


def register_client(store: Store, client_id: str, name: str, redirect_uris: list, source: str, now: float) -> None:
    """A client registered (source 'dcr' or 'metadata-document'); registrations never used for 24 h go."""
    with store.writing(no_channels=True) as db:
        db.execute("DELETE FROM oauth_client WHERE used = 0 AND created_at < ?", (now - 24 * 3600,))
        db.execute("INSERT INTO oauth_client (client_id, name, redirect_uris, source, created_at, last_used_at, used) "
                   "VALUES (?, ?, ?, ?, ?, NULL, 0)", (client_id, name, json.dumps(redirect_uris), source, now))


def client(store: Store, client_id: str, now: float) -> Optional[dict]:
    """The registered client, or None (also when it was never used and is over 24 h old)."""
    row = store.read("SELECT client_id, name, redirect_uris, source, created_at, last_used_at, used "
                     "FROM oauth_client WHERE client_id = ?", (client_id,)).fetchone()
    if row is None or (not row[6] and row[4] < now - 24 * 3600):
        return None
    return {"client_id": row[0], "name": row[1], "redirect_uris": json.loads(row[2]), "source": row[3],
            "created_at": row[4], "last_used_at": row[5], "used": bool(row[6])}


def save_document_client(store: Store, client_id: str, name: str, redirect_uris: list, now: float) -> None:
    """A client known by its metadata document (its client_id is the document's URL), as just fetched: kept
    (created_at is when it was fetched, for the cache) until fetched again."""
    with store.writing(no_channels=True) as db:
        if db.execute("UPDATE oauth_client SET name = ?, redirect_uris = ?, created_at = ? WHERE client_id = ?",
                      (name, json.dumps(redirect_uris), now, client_id)).rowcount == 0:
            db.execute("INSERT INTO oauth_client (client_id, name, redirect_uris, source, created_at, last_used_at, "
                       "used) VALUES (?, ?, ?, 'metadata-document', ?, NULL, 0)",
                       (client_id, name, json.dumps(redirect_uris), now))


def client_name(store: Store, client_id: str) -> Optional[str]:
    """The registered client's name (expired or not), or None."""
    row = store.read("SELECT name FROM oauth_client WHERE client_id = ?", (client_id,)).fetchone()
    return row[0] if row else None


def save_authorization_code(store: Store, code_hash: str, client_id: str, redirect_uri: str, code_challenge: str,
                            resource: str, organization_id: str, user_id: Optional[str], scope: str,
                            expires_at: float) -> None:
    """A code the consent page gave (its expired and used fellows go)."""
    with store.writing(no_channels=True) as db:
        db.execute("DELETE FROM oauth_code WHERE expires_at < ? OR used = 1", (expires_at - 3600,))
        db.execute("INSERT INTO oauth_code (code_hash, client_id, redirect_uri, code_challenge, resource, "
                   "organization_id, user_id, scope, expires_at, used) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                   (code_hash, client_id, redirect_uri, code_challenge, resource, organization_id, user_id, scope,
                    expires_at))


def take_authorization_code(store: Store, code_hash: str) -> Optional[dict]:
    """The code's grant, marked used as it is read; `reused` tells a code already taken. None when unknown."""
    with store.writing(no_channels=True) as db:
        row = db.execute("SELECT client_id, redirect_uri, code_challenge, resource, organization_id, user_id, scope, "
                         "expires_at, used FROM oauth_code WHERE code_hash = ?", (code_hash,)).fetchone()
        if row is None:
            return None
        db.execute("UPDATE oauth_code SET used = 1 WHERE code_hash = ?", (code_hash,))
    return {"client_id": row[0], "redirect_uri": row[1], "code_challenge": row[2], "resource": row[3],
            "organization_id": row[4], "user_id": row[5], "scope": row[6], "expires_at": row[7],
            "reused": bool(row[8])}


def issue_tokens(store: Store, access_hash: str, refresh_hash: str, chain_id: str, grant: dict, now: float,
                 access_seconds: int, refresh_seconds: int) -> None:
    """An access and a refresh token of the grant (client_id, organization_id, user_id, scope, resource) in
    chain `chain_id`; the client counts as used."""
    with store.writing(no_channels=True) as db:
        for token_hash, kind, seconds in ((access_hash, "access", access_seconds),
                                          (refresh_hash, "refresh", refresh_seconds)):
            db.execute("INSERT INTO oauth_token (token_hash, kind, chain_id, client_id, organization_id, user_id, "
                       "scope, resource, created_at, expires_at, revoked_at) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                       (token_hash, kind, chain_id, grant["client_id"], grant["organization_id"], grant["user_id"],
                        grant["scope"], grant["resource"], now, now + seconds))
        db.execute("UPDATE oauth_client SET used = 1, last_used_at = ? WHERE client_id = ?", (now, grant["client_id"]))
        db.execute("DELETE FROM oauth_token WHERE expires_at < ?", (now - 24 * 3600,))


_TOKEN_COLUMNS = "kind, chain_id, client_id, organization_id, user_id, scope, resource, expires_at, revoked_at"


def _token_row(row: tuple) -> dict:
    return dict(zip(("kind", "chain_id", "client_id", "organization_id", "user_id", "scope", "resource",
                     "expires_at", "revoked_at"), row))


def token(store: Store, token_hash: str) -> Optional[dict]:
    """The stored token (revoked and expired ones too: the caller decides), or None."""
    row = store.read(f"SELECT {_TOKEN_COLUMNS} FROM oauth_token WHERE token_hash = ?", (token_hash,)).fetchone()
    return _token_row(row) if row is not None else None


def revoke_refresh_token(store: Store, token_hash: str, now: float) -> Optional[dict]:
    """The refresh token revoked as it is used (its row as it was), or None when unknown. A row already revoked
    means reuse: then every token of its chain is revoked too."""
    with store.writing(no_channels=True) as db:
        row = db.execute(f"SELECT {_TOKEN_COLUMNS} FROM oauth_token WHERE token_hash = ? AND kind = 'refresh'",
                         (token_hash,)).fetchone()
        if row is None:
            return None
        found = _token_row(row)
        if found["revoked_at"] is not None:
            db.execute("UPDATE oauth_token SET revoked_at = ? WHERE chain_id = ? AND revoked_at IS NULL",
                       (now, found["chain_id"]))
        else:  # rotated: this one is spent
            db.execute("UPDATE oauth_token SET revoked_at = ? WHERE token_hash = ?", (now, token_hash))
    return found


def revoke_chain(store: Store, token_hash: str, client_id: Optional[str], now: float) -> bool:
    """Every token of the chain `token_hash` belongs to revoked (RFC 7009: a refresh token's access tokens go
    with it), when the token is the client's (any client when client_id is None); whether one was found."""
    row = store.read("SELECT chain_id, client_id FROM oauth_token WHERE token_hash = ?", (token_hash,)).fetchone()
    if row is None or (client_id is not None and row[1] != client_id):
        return False
    revoke_chain_id(store, row[0], now)
    return True


def revoke_chain_id(store: Store, chain_id: str, now: float) -> None:
    """Every token of the chain revoked (a reused code or refresh token; a revocation)."""
    with store.writing(no_channels=True) as db:
        db.execute("UPDATE oauth_token SET revoked_at = ? WHERE chain_id = ? AND revoked_at IS NULL", (now, chain_id))


def record_token_use(store: Store, token_hash: str, now: float) -> None:
    """An access token's last MCP call (the caller writes it at most once a minute)."""
    with store.writing(no_channels=True) as db:
        db.execute("UPDATE oauth_token SET used_at = ? WHERE token_hash = ?", (now, token_hash))


def organization_clients(store: Store, organization_id: str, now: float) -> list:
    """[{client_id, name, scope, created_at, last_used_at}] of the clients holding a live grant in the
    organization: its scope the latest grant's, created when first granted, last used at its latest MCP call
    (or token issued) of any of its tokens."""
    clients: dict = {}
    for client_id, name, scope, created_at in store.read(
            "SELECT t.client_id, c.name, t.scope, t.created_at FROM oauth_token t JOIN oauth_client c "
            "ON c.client_id = t.client_id WHERE t.organization_id = ? AND t.revoked_at IS NULL AND t.expires_at > ? "
            "ORDER BY t.created_at", (organization_id, now)):
        found = clients.setdefault(client_id, {"client_id": client_id, "name": name, "created_at": created_at})
        found.update(scope=scope, last_used_at=created_at)
    # (an access token lives an hour: its last call is read from expired ones too)
    for client_id, used_at in store.read("SELECT client_id, MAX(used_at) FROM oauth_token WHERE organization_id = ? "
                                         "AND used_at IS NOT NULL GROUP BY client_id", (organization_id,)):
        if client_id in clients:
            clients[client_id]["last_used_at"] = max(clients[client_id]["last_used_at"], used_at)
    return list(clients.values())


def revoke_client_grants(store: Store, organization_id: str, client_id: str, now: float) -> bool:
    """Every token of the client in the organization revoked; whether it held a live one."""
    with store.writing(no_channels=True) as db:
        return db.execute("UPDATE oauth_token SET revoked_at = ? WHERE organization_id = ? AND client_id = ? "
                          "AND revoked_at IS NULL AND expires_at > ?", (now, organization_id, client_id, now)
                          ).rowcount > 0
