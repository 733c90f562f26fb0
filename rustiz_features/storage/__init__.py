"""Each feature's SQL, beside the feature: one module per area, called by that feature.

The core (rustiz.py) keeps the storage *engine*: `Store` owns the connection (SQLite, or PostgreSQL through
rustiz_features.postgres), transactions, the migration runner with its one ordered list of migrations, and
the few queries the request path and `init`/`serve` need (key and session lookup, the organization, the
integrations listing, rate limits). The modules here own everything else.

Rules of every module in this package:
- Its functions take the engine as their first argument, `store`, and speak SQL only through
  `store.read(sql, parameters)` (reads; in the server, shared per loop turn) and `with store.writing() as db:`
  (one write transaction). They call `store.posts_changed()` / `store.credentials_changed()` after writes
  that the scheduler or other processes must hear of.
- They import the core and nothing above storage: no handler, publisher or scheduler module. Handlers and
  the CLI import them under an alias that names the area: `from rustiz_features.storage import posts as
  post_store`, then `post_store.create_posts(store, ...)`.
- No SQL anywhere else in the package but here and in the core's engine.
"""
from __future__ import annotations

import sqlite3
from typing import Iterator

from rustiz import Store, utc_now_iso

IN_LIST_CHUNK = 500  # values per `IN (...)` list: well under SQLite's limit on a statement's parameters


def rows_in_chunks(store: Store, sql: str, before: tuple, values: list) -> Iterator[tuple]:
    """The rows of `sql` for each chunk of `values`: its `{in_list}` becomes "?,?,..." for the chunk, whose values
    follow the parameters `before`. (A caller that orders its rows gets that order within each chunk.)"""
    for start in range(0, len(values), IN_LIST_CHUNK):
        chunk = values[start:start + IN_LIST_CHUNK]
        yield from store.read(sql.format(in_list=",".join("?" * len(chunk))), (*before, *chunk))


def update_live_row(db: sqlite3.Connection, table: str, organization_id: str, row_id: str, changes: dict) -> bool:
    """Set `changes` (column -> value, names from code) and updated_at on a live row of the organization in
    `table` (one with id, organization_id, updated_at and deleted_at); whether there was one."""
    assignments = "".join(f"{column} = ?, " for column in changes)
    return db.execute(f"UPDATE {table} SET {assignments}updated_at = ? WHERE id = ? AND organization_id = ? "
                      "AND deleted_at IS NULL", (*changes.values(), utc_now_iso(), row_id, organization_id)
                      ).rowcount > 0


def soft_delete_row(store: Store, table: str, organization_id: str, row_id: str) -> bool:
    """A live row of the organization in `table` marked deleted (kept for what still names it); whether
    there was one."""
    now = utc_now_iso()
    with store.writing(no_channels=True) as db:
        return db.execute(f"UPDATE {table} SET deleted_at = ?, updated_at = ? WHERE id = ? AND organization_id = ? "
                          "AND deleted_at IS NULL", (now, now, row_id, organization_id)).rowcount > 0
