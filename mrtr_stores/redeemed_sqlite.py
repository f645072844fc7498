"""The redeemed-ticket store in one SQLite file, so several processes on one machine share it.

Any SQLite failure (locked past its busy timeout, the file unwritable or gone) becomes
`StoreUnavailable`: single use then fails closed with a retryable error and the ticket is not spent.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mrtr import StoreUnavailable
from mrtr_stores.sqlite_files import SQLITE_BUSY_TIMEOUT, PerThread

T = TypeVar("T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS redeemed (jti TEXT PRIMARY KEY, exp REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS redeemed_exp ON redeemed (exp)",
)


class SqliteStore:
    """A store in one SQLite file, so several processes on one machine share it."""

    def __init__(self, path: str | Path, *, evict_every: int = 64, busy_timeout: float | None = None) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._connections = PerThread(self.path, busy_timeout=SQLITE_BUSY_TIMEOUT if busy_timeout is None
                                      else busy_timeout, schema=_SCHEMA)
        self._evict_every = evict_every
        self._count = 0
        self._run(lambda db: None)  # open (and create) it now, so a bad path shows at start-up

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on this thread's connection; any SQLite failure becomes StoreUnavailable."""
        return self._connections.run(
            work, lambda exc: StoreUnavailable(f"SQLite store {self.path}: {type(exc).__name__}: {exc}"))

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
