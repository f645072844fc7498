"""SQLite files that several processes share: the one way this project opens one.

What this module owns: `connect_wal` (WAL mode, a busy timeout, the schema applied, and the retry
that lets workers started together set up the same new file) and `PerThread`, which keeps one
connection per thread (sqlite3 connections belong to the thread that made them) and reopens it
after a failure. The SQLite stores that many threads and processes hit (redeemed tickets, the
session directory, the class store) open their files through here.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeAlias, TypeVar

#: How long a SQLite write waits for another process's lock before the store counts as down (s).
#: A value SQLite stores and hands back: a statement's parameter, a column of a row.
SqlValue: TypeAlias = str | int | float | bytes | None

SQLITE_BUSY_TIMEOUT = 10.0


#: Tries at switching a new SQLite file to WAL while other processes set it up too (20 ms apart: 5 s in all).
WAL_ATTEMPTS = 250


def connect_wal(path: str, *, busy_timeout: float, schema: Iterable[str] = ()) -> sqlite3.Connection:
    """A connection to the SQLite file `path` in WAL mode, with `schema` applied.

    Processes started together (a server's workers) set up the same new file at once, and switching it to WAL
    does not wait for the busy timeout: a "database is locked" there is tried again, a bounded number of times,
    instead of failing a worker's start. Any other error is raised as it is.
    """
    db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=True)
    for attempt in range(WAL_ATTEMPTS):
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            for statement in schema:
                db.execute(statement)
            return db
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_ATTEMPTS - 1:
                db.close()
                raise
            time.sleep(0.02)
        except sqlite3.Error:
            db.close()
            raise
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


T = TypeVar("T")


class PerThread:
    """One connection to a shared SQLite file for each thread, opened on first use with `connect_wal`.

    sqlite3 connections belong to the thread that made them, so each thread keeps its own. Every new
    connection applies the schema, so a store whose file was lost comes back. After a failure `run`
    drops the thread's connection (the file may have been fixed or replaced) and raises what `failure`
    makes of the driver's error, so no store ever lets a driver exception out.
    """

    def __init__(self, path: str, *, busy_timeout: float, schema: Iterable[str] = ()) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._schema = tuple(schema)
        self._local = threading.local()

    def get(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = connect_wal(self.path, busy_timeout=self._busy_timeout, schema=self._schema)
        return db

    def drop(self) -> None:
        db, self._local.db = getattr(self._local, "db", None), None
        if db is not None:
            db.close()

    def run(self, work: Callable[[sqlite3.Connection], T], failure: Callable[[sqlite3.Error], Exception]) -> T:
        """`work` on this thread's connection; a SQLite error drops the connection and raises `failure(error)`."""
        try:
            return work(self.get())
        except sqlite3.Error as exc:
            self.drop()
            raise failure(exc) from exc
