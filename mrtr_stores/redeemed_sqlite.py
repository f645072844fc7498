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

_INSERT = "INSERT OR IGNORE INTO redeemed (jti, exp) VALUES (?, ?)"
_EVICT = "DELETE FROM redeemed WHERE exp <= ?"
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
        """One statement in one transaction (autocommit) on this thread's connection: sqlite3 keeps the statement
        prepared in the connection's cache, and the PRAGMAs and the schema ran when the connection opened, so
        nothing else reaches SQLite on the request path (every 64th call also evicts expired ids first)."""
        self._count += 1  # unlocked: a lost increment only moves an eviction by one call
        try:
            db = self._connections.get()
            if self._count % self._evict_every == 0:
                db.execute(_EVICT, (now,))
            # A spent id whose ticket has expired may be reused only after eviction; an expired
            # ticket never gets this far, so the lazy schedule above is enough.
            return db.execute(_INSERT, (jti, exp)).rowcount == 1
        except sqlite3.Error as exc:
            self._connections.drop()  # the file may have been fixed or replaced: the next call reopens it
            raise StoreUnavailable(f"SQLite store {self.path}: {type(exc).__name__}: {exc}") from exc

    def __len__(self) -> int:
        return self._run(lambda db: int(db.execute("SELECT COUNT(*) FROM redeemed").fetchone()[0]))
