"""The redeemed-ticket store: remembers spent ticket ids until their tickets expire.

Signing cannot make a ticket single-use; only memory on the server side can. Every store offers
one atomic operation, `redeem(jti, exp, now)`, true the first time an id is redeemed and false
after. An id is kept only until its ticket's expiry: after that the expiry check refuses the
ticket anyway, so eviction is safe and memory stays flat. Stores never read the clock; the
caller passes `now`.

A store that cannot answer (SQLite locked past its busy timeout, its file unwritable or gone)
raises `StoreUnavailable`, never a driver exception: single use then fails closed with a
retryable error and the ticket is not spent.
"""

from __future__ import annotations

import heapq
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol, TypeVar

from .errors import StoreUnavailable

T = TypeVar("T")

#: How long a SQLite write waits for another process's lock before the store counts as down (s).
SQLITE_BUSY_TIMEOUT = 10.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS redeemed (jti TEXT PRIMARY KEY, exp REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS redeemed_exp ON redeemed (exp)",
)


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


class RedeemedStore(Protocol):
    def redeem(self, jti: str, exp: float, now: float) -> bool: ...

    def __len__(self) -> int: ...


class MemoryStore:
    """A per-process store. Replicas in one process can share one instance."""

    def __init__(self) -> None:
        self._spent: dict[str, float] = {}
        self._by_expiry: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def redeem(self, jti: str, exp: float, now: float) -> bool:
        with self._lock:
            self._evict(now)
            if jti in self._spent:
                return False
            self._spent[jti] = exp
            heapq.heappush(self._by_expiry, (exp, jti))
            return True

    def _evict(self, now: float) -> None:
        while self._by_expiry and self._by_expiry[0][0] <= now:
            _, jti = heapq.heappop(self._by_expiry)
            self._spent.pop(jti, None)

    def __len__(self) -> int:
        return len(self._spent)


class SqliteStore:
    """A store in one SQLite file, so several processes on one machine share it."""

    def __init__(self, path: str | Path, *, evict_every: int = 64, busy_timeout: float | None = None) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._evict_every = evict_every
        self._busy_timeout = SQLITE_BUSY_TIMEOUT if busy_timeout is None else busy_timeout
        self._count = 0
        self._run(lambda db: None)  # open (and create) it now, so a bad path shows at start-up

    def _db(self) -> sqlite3.Connection:
        # sqlite3 connections belong to the thread that made them; keep one per thread. Each new
        # connection makes sure the table exists, so a store whose file was lost comes back.
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = connect_wal(self.path, busy_timeout=self._busy_timeout, schema=_SCHEMA)
        return db

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on this thread's connection; any SQLite failure becomes StoreUnavailable."""
        try:
            return work(self._db())
        except sqlite3.Error as exc:
            db = getattr(self._local, "db", None)
            self._local.db = None  # reconnect next time: the file may have been fixed or replaced
            if db is not None:
                db.close()
            raise StoreUnavailable(f"SQLite store {self.path}: {type(exc).__name__}: {exc}") from exc

    def redeem(self, jti: str, exp: float, now: float) -> bool:
        self._count += 1
        evict = self._count % self._evict_every == 0

        def work(db: sqlite3.Connection) -> bool:
            if evict:
                db.execute("DELETE FROM redeemed WHERE exp <= ?", (now,))
            # A spent id whose ticket has expired may be reused only after eviction; an expired
            # ticket never gets this far, so the lazy schedule above is enough.
            cur = db.execute("INSERT OR IGNORE INTO redeemed (jti, exp) VALUES (?, ?)", (jti, exp))
            return cur.rowcount == 1

        return self._run(work)

    def __len__(self) -> int:
        return self._run(lambda db: int(db.execute("SELECT COUNT(*) FROM redeemed").fetchone()[0]))
