"""Idempotency keys (POST /posts): the answer given to a request with an Idempotency-Key, stored so that
its retries within IDEMPOTENCY_SECONDS (the Store's: its housekeeping forgets older ones) get it again.

Rules:
- One row per (organization, key): the first answer wins; a later one is stored only when none is.
- A response stored with posts is written in their transaction (posts.save_posts, through
  `earlier_response` and `store_response`), so a retry never sees posts without their answer.
"""
from __future__ import annotations

import sqlite3
import time
from typing import Callable, NamedTuple, Optional

from rustiz import Store


class IdempotentResponse(NamedTuple):
    """The answer given to the first request with an Idempotency-Key, replayed to its retries."""
    key: str
    request_hash: str
    status: int
    body: bytes


def stored_response(store: Store, organization_id: str, key: str) -> Optional[IdempotentResponse]:
    """The answer stored under `key` in the last IDEMPOTENCY_SECONDS, or None."""
    return earlier_response(store, store.read, organization_id, key)


def earlier_response(store: Store, execute: Callable, organization_id: str, key: str) -> Optional[IdempotentResponse]:
    """`stored_response` through `execute`: a shared read's, or a write transaction's `db.execute`."""
    row = execute("SELECT request_hash, status, response FROM idempotency_key WHERE organization_id = ? "
                  "AND key = ? AND created_at > ?", (organization_id, key, time.time() - store.IDEMPOTENCY_SECONDS)
                  ).fetchone()
    return None if row is None else IdempotentResponse(key, row[0], row[1], bytes(row[2]))


def store_response(db: sqlite3.Connection, organization_id: str, response: IdempotentResponse) -> None:
    """Write `response` under its key in the transaction of `db`."""
    db.execute("INSERT OR REPLACE INTO idempotency_key (organization_id, key, request_hash, status, response, "
               "created_at) VALUES (?, ?, ?, ?, ?, ?)", (organization_id, response.key, response.request_hash,
                                                         response.status, response.body, time.time()))


def remember_response(store: Store, organization_id: str, response: IdempotentResponse) -> None:
    """Store a response that wrote nothing (a refused request), unless the key was taken meanwhile."""
    with store.writing() as db:
        if earlier_response(store, db.execute, organization_id, response.key) is None:
            store_response(db, organization_id, response)
