"""/check's runs in one SQLite file, shared by the processes of one machine (the contract:
`mrtr_stores.check_runs.RunStore`). A run is one row of JSON; admitting a run is one write transaction, so two
workers never both admit one visitor's run. Every SQLite failure is `RunStoreDown` (saving), `RunRefused` in words
(starting) or "no such run" (reading), never a driver exception.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mrtr_stores.check_runs import RUN_ID, STORE_AWAY, Run, RunRefused, RunStoreDown, admit, decode, encode
from mrtr_stores.sqlite_files import SQLITE_BUSY_TIMEOUT, PerThread

T = TypeVar("T")
log = logging.getLogger("mrtr.check")
FILE_NAME = "runs.sqlite3"

_SCHEMA = ("CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, run TEXT NOT NULL) WITHOUT ROWID",)


class SqliteRunStore:
    """The runs in `directory`/runs.sqlite3 (the directory is made when missing)."""

    def __init__(self, directory: Path, clock: Callable[[], float] = time.time) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / FILE_NAME
        self.clock = clock
        self._connections = PerThread(str(self.path), busy_timeout=SQLITE_BUSY_TIMEOUT, schema=_SCHEMA)
        self._run(lambda db: None)  # a bad directory shows at start-up

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._connections.run(
            work, lambda exc: RunStoreDown(f"the run store {self.path}: {type(exc).__name__}: {exc}"))

    def save(self, run: Run) -> None:
        run.updated = self.clock()
        text = encode(run)
        self._run(lambda db: db.execute("INSERT OR REPLACE INTO runs (id, run) VALUES (?, ?)", (run.id, text)))

    def get(self, run_id: str) -> Run | None:
        if not RUN_ID.fullmatch(run_id):
            return None
        try:
            row = self._run(lambda db: db.execute("SELECT run FROM runs WHERE id = ?", (run_id,)).fetchone())
        except RunStoreDown as exc:
            log.warning("check: the run store is unavailable: %s", exc)
            return None
        return decode(row[0] if row else None, self.clock())

    def start(self, visitor: str, url: str, limit: int, window: float) -> Run:
        now = self.clock()

        def work(db: sqlite3.Connection) -> Run:
            db.execute("BEGIN IMMEDIATE")  # one admission at a time, across every process of the machine
            try:
                kept = [decode(text, now) for (text,) in db.execute("SELECT run FROM runs")]
                run = admit([r for r in kept if r is not None],
                            lambda gone: db.execute("DELETE FROM runs WHERE id = ?", (gone,)),
                            visitor=visitor, url=url, now=now, limit=limit, window=window)
                run.updated = now
                db.execute("INSERT INTO runs (id, run) VALUES (?, ?)", (run.id, encode(run)))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return run

        try:
            return self._run(work)
        except RunStoreDown as exc:
            log.warning("check: the run store is unavailable: %s", exc)
            raise RunRefused(STORE_AWAY) from None
