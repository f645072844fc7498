"""The URL-mode pages' completions in one SQLite file, shared by the processes of one machine (the contract:
`mrtr_stores.completions.CompletionStore`). One row per reference: whether its page was finished, and until when it
is kept, and whose it is. Opening is one write transaction that also forgets the expired rows, the owner's first to
expire past the per-owner cap, and everyone's past the cap.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mrtr import StoreUnavailable
from mrtr_stores.completions import MAX_OPEN, MAX_PER_OWNER, REF, TTL
from mrtr_stores.sqlite_files import SQLITE_BUSY_TIMEOUT, PerThread

T = TypeVar("T")
FILE_NAME = "url-completions.sqlite3"

_SCHEMA = (
    # The table of before knew no owner; its rows expire within TTL and are simply no longer read.
    "CREATE TABLE IF NOT EXISTS url_pages (ref TEXT PRIMARY KEY, owner TEXT NOT NULL, done INTEGER NOT NULL,"
    " expires REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS url_pages_expires ON url_pages (expires)",
    "CREATE INDEX IF NOT EXISTS url_pages_owner ON url_pages (owner, expires)",
)


class SqliteCompletions:
    """The completions in `directory`/url-completions.sqlite3 (the directory is made when missing)."""

    def __init__(self, directory: Path, *, cap: int = MAX_OPEN, per_owner: int = MAX_PER_OWNER) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.path = Path(directory) / FILE_NAME
        self.cap, self.per_owner = cap, per_owner
        self._connections = PerThread(str(self.path), busy_timeout=SQLITE_BUSY_TIMEOUT, schema=_SCHEMA)
        self._run(lambda db: None)  # a bad directory shows at start-up

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._connections.run(
            work, lambda exc: StoreUnavailable(f"the completion store {self.path}: {type(exc).__name__}: {exc}"))

    def open(self, ref: str, now: float, owner: str = "") -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM url_pages WHERE expires <= ?", (now,))
                db.execute("INSERT OR REPLACE INTO url_pages (ref, owner, done, expires) VALUES (?, ?, 0, ?)",
                           (ref, owner, now + TTL))
                db.execute("DELETE FROM url_pages WHERE ref IN (SELECT ref FROM url_pages WHERE owner = ? "
                           "ORDER BY expires LIMIT max(0, (SELECT COUNT(*) FROM url_pages WHERE owner = ?) - ?))",
                           (owner, owner, self.per_owner))
                db.execute("DELETE FROM url_pages WHERE ref IN (SELECT ref FROM url_pages "
                           "ORDER BY expires LIMIT max(0, (SELECT COUNT(*) FROM url_pages) - ?))",
                           (self.cap,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

        self._run(work)

    def _state(self, ref: str, now: float) -> int | None:
        if not REF.fullmatch(ref):
            return None
        row = self._run(lambda db: db.execute("SELECT done FROM url_pages WHERE ref = ? AND expires > ?",
                                              (ref, now)).fetchone())
        return int(row[0]) if row else None

    def is_open(self, ref: str, now: float) -> bool:
        return self._state(ref, now) == 0

    def complete(self, ref: str, now: float) -> bool:
        if not REF.fullmatch(ref):
            return False
        return self._run(lambda db: db.execute(
            "UPDATE url_pages SET done = 1 WHERE ref = ? AND done = 0 AND expires > ?", (ref, now)).rowcount == 1)

    def is_complete(self, ref: str, now: float) -> bool:
        return self._state(ref, now) == 1
