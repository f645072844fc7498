"""The redeemed-ticket store: remembers spent ticket ids until their tickets expire.

Signing cannot make a ticket single-use; only memory on the server side can. Every store offers
one atomic operation, `redeem(jti, exp, now)`, true the first time an id is redeemed and false
after. An id is kept only until its ticket's expiry: after that the expiry check refuses the
ticket anyway, so eviction is safe and memory stays flat. Stores never read the clock; the
caller passes `now`.
"""

from __future__ import annotations

import heapq
import sqlite3
import threading
from pathlib import Path
from typing import Protocol


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

    def __init__(self, path: str | Path, *, evict_every: int = 64) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._evict_every = evict_every
        self._count = 0
        self._db().execute(
            "CREATE TABLE IF NOT EXISTS redeemed (jti TEXT PRIMARY KEY, exp REAL NOT NULL) WITHOUT ROWID"
        )
        self._db().execute("CREATE INDEX IF NOT EXISTS redeemed_exp ON redeemed (exp)")

    def _db(self) -> sqlite3.Connection:
        # sqlite3 connections belong to the thread that made them; keep one per thread.
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=True)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def redeem(self, jti: str, exp: float, now: float) -> bool:
        db = self._db()
        self._count += 1
        if self._count % self._evict_every == 0:
            db.execute("DELETE FROM redeemed WHERE exp <= ?", (now,))
        # A spent id whose ticket has expired may be reused only after eviction; an expired
        # ticket never gets this far, so the lazy schedule above is enough.
        cur = db.execute("INSERT OR IGNORE INTO redeemed (jti, exp) VALUES (?, ?)", (jti, exp))
        return cur.rowcount == 1

    def evict(self, now: float) -> int:
        return self._db().execute("DELETE FROM redeemed WHERE exp <= ?", (now,)).rowcount

    def __len__(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM redeemed").fetchone()[0])
