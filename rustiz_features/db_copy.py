"""`rustiz db copy`: an instance's whole database into another (SQLite into PostgreSQL, usually), then its uploads
into a bucket, each checked after.

Rules:
- The target must be empty: nothing is ever overwritten or merged. It gets rustiz's schema first (the same
  migrations), so both sides have the same tables and columns.
- Rows go table by table, in pages (a large table is never whole in memory), each table in one transaction;
  afterwards every table's row count must match, and every uploaded file's SHA-256 (done by object_storage).
- What fails is said in one line naming the table or file; a failed copy leaves the source untouched, and the
  target is to be dropped and made again before the next try (the message says so).
"""
from __future__ import annotations

import sys
from typing import Optional

from rustiz import Config, Store, UserError, is_postgres_url, redacted_url
from .storage import operations as operation_store


def copy_database(config: Config, target: str, uploads_to: Optional[str]) -> int:
    if not is_postgres_url(target) and "://" in target:
        raise UserError(f"--to {target.split('://')[0]}://...: give a postgresql:// URL (or a SQLite file path)")
    if target == config.database:
        raise UserError("--to names this instance's own database: give the new, empty one")
    source, destination = Store(config.database), Store(target)
    try:
        _refuse_non_empty(destination, target)
        storage = _empty_bucket(config, uploads_to) if uploads_to else None
        counts = {}
        for table in source.table_names():
            in_source, copied = operation_store.copy_table(source, destination, table)
            counts[table] = (in_source, operation_store.row_count(destination, table), copied)
            print(f"{table}: {copied} rows", file=sys.stderr)
        mismatched = {table: found for table, found in counts.items() if len(set(found)) != 1}
        if mismatched:
            raise UserError("row counts differ after the copy: " + "; ".join(
                f"{table}: source {found[0]}, target {found[1]}" for table, found in mismatched.items()) +
                f". Drop and recreate {redacted_url(target)} before trying again")
    finally:
        source.close()
        destination.close()
    files = _copy_uploads(config, storage) if uploads_to else []
    print(f"copied {sum(found[0] for found in counts.values())} rows in {len(counts)} tables to "
          f"{redacted_url(target)}" + (f", and {len(files)} uploads to {uploads_to} (SHA-256 checked)" if uploads_to
                                        else "") + ": all counts match. Point RUSTIZ_DATABASE"
          + (" and RUSTIZ_STORAGE" if uploads_to else "") + " at the new ones and start the servers.")
    return 0


def _refuse_non_empty(destination: Store, target: str) -> None:
    holding = [table for table in destination.table_names() if operation_store.row_count(destination, table)]
    if holding:
        raise UserError(f"{redacted_url(target)} already holds data (in {', '.join(holding)}); rustiz db copy only "
                        "copies into an empty database, so that nothing is overwritten or mixed")


def _empty_bucket(config: Config, uploads_to: str) -> tuple:
    """The bucket --uploads-to names (keys, region and endpoint from the AWS_* variables), refused unless empty."""
    from .http_client import HttpClient
    from .object_storage import StorageError, bucket_is_empty, storage_from_settings
    storage = storage_from_settings({**(config.settings or {}), "RUSTIZ_STORAGE": uploads_to})
    http = HttpClient(config.fetch_allow)
    try:
        empty = bucket_is_empty(storage, http)
    except StorageError as error:
        raise UserError(f"cannot use {uploads_to}: {error}") from None
    if not empty:
        raise UserError(f"{uploads_to} already holds objects; rustiz db copy only copies uploads into an empty prefix")
    return storage, http


def _copy_uploads(config: Config, bucket: tuple) -> list:
    from .object_storage import StorageError, copy_uploads_to_bucket
    storage, http = bucket
    try:
        return copy_uploads_to_bucket(config.uploads, storage, http)
    except StorageError as error:
        raise UserError(f"the rows are copied, but not the uploads: {error}") from None
    finally:
        http.close()
