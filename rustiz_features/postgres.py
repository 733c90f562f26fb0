"""PostgreSQL under the Store: the same SQL as SQLite, translated, on psycopg 3 connections.

Rules:
- The Store (rustiz.py, section 3) stays the only owner of SQL. This module only adapts: it gives the Store an
  object that behaves like the sqlite3 connection it uses (`execute` -> a cursor with fetchone, fetchall,
  rowcount and iteration; BEGIN/COMMIT/ROLLBACK; `in_transaction`), and rewrites SQLite's dialect into
  PostgreSQL's in the few places they differ (`translate`, `translate_schema`).
- One connection per thread (psycopg connections are not for sharing between threads at once): the event loop's
  thread has one, each thread of the Store's pool has one, and the listener thread two more (it listens on
  one, and acknowledges on the other).
- Errors come back as the sqlite3 exceptions the rest of rustiz already handles: a broken unique key is a
  sqlite3.IntegrityError; a database that cannot be reached is rustiz.DatabaseUnwritable (answered 503).
- Imported only when RUSTIZ_DATABASE (or DATABASE_URL) is a postgresql:// URL; psycopg is imported here.
"""
from __future__ import annotations

import functools
import os
import re
import sqlite3
import threading
import time
from typing import Any, Callable, Optional

from rustiz import DatabaseUnwritable, UserError, log, redacted_url

try:
    import psycopg
except ImportError:  # checked by open_database, which tells the operator what to install
    psycopg = None  # type: ignore[assignment]

# (Every write transaction takes an advisory lock: see Store._writing and WRITE_LOCK_KEY in rustiz.py.)
# (rustiz_channels comes from triggers on the tables integration and customer: see MIGRATIONS in rustiz.py.)
NOTIFY_CHANNELS = ("rustiz_credentials", "rustiz_posts", "rustiz_channels")

# The tables whose rows SQLite's INSERT OR REPLACE / OR IGNORE may meet again, by their primary key.
_CONFLICT_KEYS = {"rate_limit": ("key",), "idempotency_key": ("organization_id", "key"), "write_probe": ("id",),
                  "oauth_app": ("provider", "origin"), "alert": ("organization_id", "kind", "subject_id")}
_INSERT_OR = re.compile(r"INSERT OR (REPLACE|IGNORE) INTO (\w+) \(([^)]*)\)")
# A statement that fires the rustiz_channels triggers (and so sends their notice when its transaction commits).
_CHANGES_CHANNELS = re.compile(r"\s*(?:INSERT(?: OR \w+)? INTO|UPDATE|DELETE FROM|TRUNCATE(?: TABLE)?) "
                               r"(?:integration|customer)\b")
# A change of keys or channels made by a listening process waits, at most this long, until every listener
# (every rustiz process on the database) has acknowledged it: see Listener.announce.
HEARD_BY_ALL_SECONDS = 0.1
LISTENER_NAME = "rustiz-listen"  # (the listeners' application_name: how a process counts them)
ACKNOWLEDGED = "rustiz_heard"  # the channel of the listeners' acknowledgements
_SCALAR_EXTREMUM = re.compile(r"\b(MAX|MIN)\((?=[^()]*,)")  # MAX(a, b) is GREATEST(a, b); MAX(a) an aggregate


def missing_driver_message() -> str:
    return ("RUSTIZ_DATABASE names a PostgreSQL database, and that needs the psycopg package: "
            "pip install 'psycopg[binary]' (or build the .pyz with build_zipapp.py --with-postgres)")


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """One statement of the Store's SQLite SQL as PostgreSQL runs it."""
    match = _INSERT_OR.search(sql)
    if match:
        kind, table, columns = match.groups()
        keys = _CONFLICT_KEYS[table]
        names = [name.strip() for name in columns.split(",")]
        action = "DO NOTHING" if kind == "IGNORE" else "DO UPDATE SET " + ", ".join(
            f"{name} = EXCLUDED.{name}" for name in names if name not in keys)
        sql = f"{sql[:match.start()]}INSERT INTO {table} ({columns}){sql[match.end():]} " \
              f"ON CONFLICT ({', '.join(keys)}) {action}"
    sql = _SCALAR_EXTREMUM.sub(lambda found: "GREATEST(" if found[1] == "MAX" else "LEAST(", sql)
    sql = sql.replace(" IN ()", " IN (SELECT NULL WHERE FALSE)")  # SQLite takes an empty list; PostgreSQL not
    sql = sql.replace(" IS NOT ?", " IS DISTINCT FROM ?").replace(" IS ?", " IS NOT DISTINCT FROM ?")  # (NULL-safe =)
    return sql.replace("%", "%%").replace("?", "%s")


@functools.lru_cache(maxsize=1024)
def changes_channels(sql: str) -> bool:
    """Whether a statement of the Store's SQL fires the rustiz_channels triggers."""
    return _CHANGES_CHANNELS.match(sql) is not None


def translate_schema(statement: str) -> str:
    """A migration statement: SQLite's types as PostgreSQL's (REAL is 4 bytes there; Unix times need 8)."""
    statement = re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement)
    statement = re.sub(r"\bBLOB\b", "BYTEA", statement)
    return re.sub(r"\bINTEGER\b", "BIGINT", statement)


def _unreachable(url: str, error: Exception) -> DatabaseUnwritable:
    cause = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return DatabaseUnwritable(f"rustiz cannot use its PostgreSQL database ({redacted_url(url)}): {cause}")


class Cursor:
    """What the Store reads from an executed statement, as sqlite3's cursor offers it."""
    __slots__ = ("rows", "rowcount")

    def __init__(self, rows: list, rowcount: int):
        self.rows, self.rowcount = rows, rowcount

    def fetchone(self) -> Optional[tuple]:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list:
        return self.rows

    def __iter__(self):
        return iter(self.rows)


def _parameters(values: Any) -> tuple:
    """SQLite stores a bool as 0/1 in INTEGER columns; PostgreSQL would refuse to compare a bool with them."""
    return tuple(int(value) if type(value) is bool else value for value in values)


class Database:
    """A sqlite3.Connection look-alike over one psycopg connection per thread."""

    def __init__(self, url: str):
        if psycopg is None:
            raise UserError(missing_driver_message())
        self.url = url
        self._local = threading.local()
        self._connections: list = []
        self._lock = threading.Lock()
        self.connection()  # the first connection now: a wrong URL stops `serve` with one clear line

    def connection(self) -> Any:
        connection = getattr(self._local, "connection", None)
        if connection is None or connection.closed:
            try:
                connection = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            except psycopg.Error as error:
                raise _unreachable(self.url, error) from None
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    @property
    def in_transaction(self) -> bool:
        connection = getattr(self._local, "connection", None)
        return connection is not None and not connection.closed and \
            connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def execute(self, sql: str, parameters: Any = ()) -> Cursor:
        if sql.startswith("BEGIN"):
            if ";" not in sql:
                sql = "BEGIN"  # (SQLite's BEGIN IMMEDIATE: the write lock is the advisory lock Store.writing takes)
            self._local.changes_channels = False
        elif changes_channels(sql):
            self._local.changes_channels = True
        connection = self.connection()
        try:
            cursor = connection.execute(translate(sql), _parameters(parameters))
            rows = cursor.fetchall() if cursor.description is not None else []
            return Cursor(rows, cursor.rowcount)
        except psycopg.IntegrityError as error:
            raise sqlite3.IntegrityError(str(error).splitlines()[0]) from None
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            if connection.closed:
                self._local.connection = None  # the next statement connects again
            raise _unreachable(self.url, error) from None
        except psycopg.Error as error:  # (a rustiz bug: logged with the statement by whoever catches it)
            raise sqlite3.DatabaseError(f"{type(error).__name__}: {error}") from error

    @property
    def changes_channels(self) -> bool:
        """Whether this thread's transaction changed channels or groups (its commit will send a notice)."""
        return getattr(self._local, "changes_channels", False)

    def executemany(self, sql: str, rows: Any) -> None:
        for row in rows:
            self.execute(sql, row)

    def execute_schema(self, statement: str) -> None:
        """A migration's statement, as is (no parameters: nothing is rewritten but the types)."""
        self.connection().execute(translate_schema(statement))

    def close(self) -> None:
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()


class Listener:
    """A thread on its own connection that LISTENs for the changes other processes announce (NOTIFY) and calls
    `on_notice(channel)` for each; it reconnects after a failure. `listening` is False while it is not
    connected (a change made then is not heard: what was remembered must not be trusted until it is again).

    A notice whose payload is a token is acknowledged, once `on_notice` has run, with a notice of that token
    on ACKNOWLEDGED: the process that announced a change (`announce`, then `heard_by_all`) waits until every
    listener has taken it in, so that the answer it then gives is followed by no stale answer elsewhere."""

    def __init__(self, url: str, on_notice: Callable[[str], None]):
        self.url, self.on_notice = url, on_notice
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self.listening = False
        self._acknowledgements: dict = {}  # token announced by this process -> acknowledgements heard so far
        self._acknowledged = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="rustiz-listen", daemon=True)
        self.thread.start()
        self.ready.wait(10)

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                # (acknowledgements go out on a connection of their own: a statement run on the listening one
                # while it listens could take in, and drop, notices meant for the loop below)
                with psycopg.connect(self.url, autocommit=True, connect_timeout=10,
                                     application_name=LISTENER_NAME) as connection, \
                        psycopg.connect(self.url, autocommit=True, connect_timeout=10) as acknowledging:
                    for channel in NOTIFY_CHANNELS + (ACKNOWLEDGED,):
                        connection.execute(f"LISTEN {channel}")
                    for channel in NOTIFY_CHANNELS:  # whatever changed while this listener was not listening
                        self.on_notice(channel)
                    self.listening = True
                    self.ready.set()
                    while not self.stopping.is_set():
                        for notice in connection.notifies(timeout=1.0):
                            self._take(acknowledging, notice)
            except psycopg.Error as error:
                self.listening = False
                self.ready.set()
                if not self.stopping.is_set():
                    log(f"PostgreSQL listener: {str(error).strip().splitlines()[0] if str(error).strip() else error}; "
                        "connecting again in 2 s")
                    time.sleep(2)

    def _take(self, acknowledging: Any, notice: Any) -> None:
        if notice.channel == ACKNOWLEDGED:
            with self._acknowledged:
                if notice.payload in self._acknowledgements:
                    self._acknowledgements[notice.payload] += 1
                    self._acknowledged.notify_all()
            return
        self.on_notice(notice.channel)
        if notice.payload:
            acknowledging.execute("SELECT pg_notify(%s, %s)", (ACKNOWLEDGED, notice.payload))

    def announce(self, database: Database, channel: str) -> Optional[tuple]:
        """Send a notice of `channel` with a token of its own (in this thread's transaction when one is open:
        it then goes out at the commit), and count the listeners that will have to acknowledge it; the
        (token, count) for heard_by_all. None when this listener is not listening (nobody would answer it)."""
        if not self.listening:
            return None
        token = os.urandom(8).hex()
        with self._acknowledged:
            self._acknowledgements[token] = 0
        try:
            listeners = database.execute(
                "SELECT (SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = ? "
                "AND datname = current_database()), pg_notify(?, ?)", (LISTENER_NAME, channel, token)).fetchone()[0]
        except sqlite3.DatabaseError:
            self.forget((token, 0))
            raise
        return token, listeners

    def heard_by_all(self, announced: Optional[tuple]) -> None:
        """Wait, at most HEARD_BY_ALL_SECONDS, until the listeners counted by `announce` have acknowledged its
        notice (a process that stops meanwhile makes the wait last that long; one that starts answers too)."""
        if announced is None:
            return
        token, listeners = announced
        with self._acknowledged:
            self._acknowledged.wait_for(lambda: self._acknowledgements[token] >= listeners or not self.listening,
                                        HEARD_BY_ALL_SECONDS)
        self.forget(announced)

    def forget(self, announced: tuple) -> None:
        """No more acknowledgements of `announced` are awaited (heard_by_all, or a transaction rolled back)."""
        with self._acknowledged:
            self._acknowledgements.pop(announced[0], None)

    def stop(self) -> None:
        self.stopping.set()
