"""SQLite files that several processes share: the one way this project opens one.

What this module owns: `connect_wal` (WAL mode, a busy timeout, the schema applied, and the retry
that lets workers started together set up the same new file) and `PerThread`, which keeps one
connection per thread (sqlite3 connections belong to the thread that made them) and reopens it
after a failure. Every SQLite store (redeemed tickets, the session directory, the class store,
LTI launches) opens its file through here.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable

#: How long a SQLite write waits for another process's lock before the store counts as down (s).
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
