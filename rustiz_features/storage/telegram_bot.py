"""Telegram's operator bot: the /connect codes and the lease of the one process that watches the bot's updates.

Rules:
- A code is kept as its SHA-256 only, bound to one organization, good once and until it expires: take_code
  marks it used in the same statement that checks it, so two updates bearing it connect one chat at most.
- One watcher at a time across processes: the lease is a single row (id 1) that a
  process takes when it is free, expired or its own; only the holder moves the offset.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store


def add_code(store: Store, code_hash: str, organization_id: str, expires_at: float, now: float) -> None:
    """A new code for the organization; the expired and used ones go (they can never be taken)."""
    with store.writing() as db:
        db.execute("DELETE FROM telegram_connect_code WHERE expires_at < ? OR used = 1", (now,))
        db.execute("INSERT INTO telegram_connect_code (code_hash, organization_id, expires_at) VALUES (?, ?, ?)",
                   (code_hash, organization_id, expires_at))


def code_organization(store: Store, code_hash: str, now: float) -> Optional[str]:
    """The organization of a live, unused code; None for any other (unknown, used, expired)."""
    row = store.read("SELECT organization_id FROM telegram_connect_code WHERE code_hash = ? AND used = 0 "
                     "AND expires_at >= ?", (code_hash, now)).fetchone()
    return row[0] if row else None


def take_code(store: Store, code_hash: str, now: float) -> Optional[str]:
    """Use the code: its organization when it was live and unused (it is used now), else None."""
    with store.writing() as db:
        taken = db.execute("UPDATE telegram_connect_code SET used = 1 WHERE code_hash = ? AND used = 0 "
                           "AND expires_at >= ?", (code_hash, now)).rowcount == 1
        row = db.execute("SELECT organization_id FROM telegram_connect_code WHERE code_hash = ?",
                         (code_hash,)).fetchone() if taken else None
    return row[0] if row else None


def take_watch_lease(store: Store, owner: str, now: float, seconds: float) -> Optional[int]:
    """The offset to poll from when `owner` holds the watcher's lease (taken or renewed now), else None."""
    with store.writing() as db:  # (write transactions are serialized: the row is made once)
        db.execute("INSERT INTO telegram_bot_watch (id, next_offset) SELECT 1, 0 WHERE NOT EXISTS "
                   "(SELECT 1 FROM telegram_bot_watch WHERE id = 1)")
        held = db.execute("UPDATE telegram_bot_watch SET lease_owner = ?, lease_until = ? WHERE id = 1 AND "
                          "(lease_until IS NULL OR lease_until < ? OR lease_owner = ?)",
                          (owner, now + seconds, now, owner)).rowcount == 1
        row = db.execute("SELECT next_offset FROM telegram_bot_watch WHERE id = 1").fetchone() if held else None
    return row[0] if row else None


def save_offset(store: Store, owner: str, next_offset: int) -> None:
    """The first update not yet handled, written by the lease holder only."""
    with store.writing() as db:
        db.execute("UPDATE telegram_bot_watch SET next_offset = ? WHERE id = 1 AND lease_owner = ?",
                   (next_offset, owner))


def release_watch_lease(store: Store, owner: str) -> None:
    with store.writing() as db:
        db.execute("UPDATE telegram_bot_watch SET lease_owner = NULL, lease_until = NULL WHERE id = 1 AND "
                   "lease_owner = ?", (owner,))


def renew_operator_token(store: Store, token: str) -> list:
    """Give every live Telegram channel of the operator's bot (a stored token of the same bot: `<bot id>:...`)
    the operator's current token, and clear its reconnect flag: the ids of the channels changed."""
    import json
    bot_id = token.partition(":")[0] + ":"
    rows = store.read("SELECT id, token FROM integration WHERE provider_identifier = 'telegram' AND "
                      "deleted_at IS NULL").fetchall()
    changed = []
    with store.writing() as db:
        for channel_id, stored in rows:
            credentials = json.loads(stored or "{}")
            old = credentials.get("botToken")
            if isinstance(old, str) and old.startswith(bot_id) and old != token:
                db.execute("UPDATE integration SET token = ?, refresh_needed = 0 WHERE id = ? AND token = ?",
                           (json.dumps({**credentials, "botToken": token}), channel_id, stored))
                changed.append(channel_id)
    return changed
