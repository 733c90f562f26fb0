"""What operations read and copy: GET /metrics and GET /health?verbose=1's counts, `rustiz doctor`'s checks,
and `rustiz backup` / `rustiz db copy`, table by table.

Rules:
- Reads only, but for copy_rows, which writes a whole table into an empty database in one transaction.
- Table names come from the schema (Store.table_names, in the core, which knows their order by reference),
  never from a user: each is checked against it anyway before it goes into a statement.
"""
from __future__ import annotations

from typing import Any, Optional

from rustiz import Store


def post_counts_by_state(store: Store) -> list:
    """(state, number of posts) for the posts not deleted, each thread part counted."""
    return [tuple(row) for row in store.read("SELECT state, COUNT(*) FROM post WHERE deleted_at IS NULL "
                                             "GROUP BY state ORDER BY state")]


def channels_needing_attention(store: Store) -> tuple:
    """(channels flagged for reconnecting, channels disabled), deleted ones left out."""
    row = store.read("SELECT COALESCE(SUM(CASE WHEN refresh_needed = 1 THEN 1 ELSE 0 END), 0), "
                     "COALESCE(SUM(CASE WHEN disabled = 1 THEN 1 ELSE 0 END), 0) "
                     "FROM integration WHERE deleted_at IS NULL").fetchone()
    return int(row[0]), int(row[1])


def channels_to_check(store: Store) -> list:
    """(id, organization id, name, provider) of every channel not deleted nor disabled, for rustiz doctor."""
    return [tuple(row) for row in store.read(
        "SELECT id, organization_id, name, provider_identifier FROM integration "
        "WHERE deleted_at IS NULL AND disabled = 0 ORDER BY organization_id, name, id")]


def integrity_problems(store: Store) -> list:
    """What SQLite's quick check finds wrong with the file (nothing: []); on PostgreSQL, a query that reads
    every table's row count fails with the reason when the database cannot be read."""
    if store.remote:
        for table in store.table_names():
            row_count(store, table)
        return []
    found = [row[0] for row in store.read("PRAGMA quick_check").fetchall()]
    return [] if found == ["ok"] else found


def newest_update(store: Store) -> Optional[str]:
    """The latest updated_at of any post (ISO, UTC): a clock that went back is later than now."""
    return store.read("SELECT MAX(updated_at) FROM post").fetchone()[0]


def database_clock(store: Store) -> Optional[float]:
    """PostgreSQL: the database server's time (Unix seconds), to compare with this machine's; SQLite: None."""
    if not store.remote:
        return None
    return float(store.read("SELECT EXTRACT(EPOCH FROM clock_timestamp())").fetchone()[0])


def row_count(store: Store, table: str) -> int:
    return store.read(f"SELECT COUNT(*) FROM {_checked_table(store, table)}").fetchone()[0]


def _checked_table(store: Store, table: str) -> str:
    if table not in store.table_names():  # (names come from the schema, never from a user: checked anyway)
        raise ValueError(f"no table {table!r}")
    return table


def columns(store: Store, table: str) -> list:
    if store.remote:
        return [row[0] for row in store.read("SELECT column_name FROM information_schema.columns WHERE "
                                             "table_schema = current_schema() AND table_name = ? "
                                             "ORDER BY ordinal_position", (table,))]
    return [row[1] for row in store.read(f"PRAGMA table_info({_checked_table(store, table)})")]


def rows(store: Store, table: str, columns: list, batch: int = 1000) -> Any:
    """The rows of `table` (values in `columns`' order), `batch` at a time: a large table never whole in memory."""
    listed = ", ".join(columns)
    order = ", ".join(str(position + 1) for position in range(len(columns)))
    offset = 0
    while True:
        page = store.read(f"SELECT {listed} FROM {_checked_table(store, table)} ORDER BY {order} LIMIT ? OFFSET ?",
                          (batch, offset)).fetchall()
        if not page:
            return
        yield page
        offset += len(page)


def copy_rows(store: Store, table: str, columns: list, pages: Any) -> int:
    """Insert every row of `pages` into `table`, in one transaction with the table's other pages (a failure
    leaves the table empty). A post's parent is set once all posts are in, so their order does not matter."""
    parent = columns.index("parent_post_id") if table == "post" else -1
    placeholders = ", ".join("?" * len(columns))
    inserted, parents = 0, []
    with store.writing() as db:
        for page in pages:
            for row in page:
                row = tuple(row)
                if parent >= 0 and row[parent] is not None:
                    parents.append((row[parent], row[0]))
                    row = row[:parent] + (None,) + row[parent + 1:]
                db.execute(f"INSERT INTO {_checked_table(store, table)} ({', '.join(columns)}) VALUES ({placeholders})", row)
                inserted += 1
        for parent_id, post_id in parents:
            db.execute("UPDATE post SET parent_post_id = ? WHERE id = ?", (parent_id, post_id))
    return inserted


def copy_table(source: Store, destination: Store, table: str) -> tuple:
    """Every row of `table` copied from `source` into `destination`, in the columns both have (see copy_rows):
    (rows in the source, rows copied)."""
    wanted = set(columns(destination, table))
    shared = [column for column in columns(source, table) if column in wanted]
    copied = copy_rows(destination, table, shared, rows(source, table, shared))
    return row_count(source, table), copied
