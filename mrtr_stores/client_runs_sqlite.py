"""/check-client's runs in one SQLite file, shared by the processes of one machine (the contract:
`mrtr_stores.client_runs.ClientRunStore`). A run is a row, each recorded request a row of its own; starting a run
and recording a request are each one IMMEDIATE transaction, so two workers never both count one call. Every
SQLite failure is `ClientRunRefused` in words (starting), `RunGone` (recording, noting) or "no such run" (reading),
never a driver exception.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mrtr_stores.client_runs import (
    LIFETIME,
    MAX_OUTPUT,
    RUN_ID,
    STORE_AWAY,
    CallRefused,
    ClientRun,
    ClientRunRefused,
    Entry,
    RunGone,
    call_problem,
    new_run_id,
    refuse_start,
)
from mrtr_stores.sqlite_files import SQLITE_BUSY_TIMEOUT, PerThread

T = TypeVar("T")
log = logging.getLogger("mrtr.check_client")
FILE_NAME = "client-runs.sqlite3"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS client_runs (id TEXT PRIMARY KEY, visitor TEXT NOT NULL, started REAL NOT NULL, "
    "expires REAL NOT NULL, calls INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0, "
    "output TEXT NOT NULL DEFAULT '', exit_code INTEGER, choices INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS client_calls (run_id TEXT NOT NULL, seq INTEGER NOT NULL, tool TEXT NOT NULL, "
    "entry TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID",
    # every start a visitor made, kept for the rate limit's window even after the run itself is forgotten
    "CREATE TABLE IF NOT EXISTS client_starts (visitor TEXT NOT NULL, at REAL NOT NULL)",
)
_COLUMNS = "id, visitor, started, expires, calls, bytes, output, exit_code, choices"


class _Down(Exception):
    """The file could not be read or written (the message is for the log)."""


def _run_of(row: tuple[object, ...] | None) -> ClientRun | None:
    if row is None:
        return None
    rid, visitor, started, expires, calls, size, output, exit_code, choices = row
    return ClientRun(str(rid), str(visitor), float(str(started)), float(str(expires)), int(str(calls)),
                     int(str(size)), str(output), None if exit_code is None else int(str(exit_code)), bool(choices))


class SqliteClientRuns:
    """The runs in `directory`/client-runs.sqlite3 (the directory is made when missing)."""

    def __init__(self, directory: Path, clock: Callable[[], float] = time.time) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / FILE_NAME
        self.clock = clock
        self._connections = PerThread(str(self.path), busy_timeout=SQLITE_BUSY_TIMEOUT, schema=_SCHEMA)
        self._run(lambda db: None)  # a bad directory shows at start-up

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._connections.run(work, lambda exc: _Down(f"{self.path}: {type(exc).__name__}: {exc}"))

    def _transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def inside(db: sqlite3.Connection) -> T:
            db.execute("BEGIN IMMEDIATE")  # one writer at a time, across every process of the machine
            try:
                done = work(db)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return done

        return self._run(inside)

    def start(self, visitor: str, limit: int, window: float) -> ClientRun:
        now = self.clock()

        def work(db: sqlite3.Connection) -> ClientRun:
            _forget_expired(db, now, window)
            live = db.execute("SELECT COUNT(*) FROM client_runs").fetchone()[0]
            starts = [at for (at,) in db.execute("SELECT at FROM client_starts WHERE visitor = ?", (visitor,))]
            refuse_start(starts, live, now=now, limit=limit, window=window)
            run = ClientRun(new_run_id(), visitor, now, now + LIFETIME)
            db.execute("INSERT INTO client_runs (id, visitor, started, expires) VALUES (?, ?, ?, ?)",
                       (run.id, visitor, run.started, run.expires))
            db.execute("INSERT INTO client_starts (visitor, at) VALUES (?, ?)", (visitor, now))
            return run

        try:
            return self._transaction(work)
        except _Down as exc:
            log.warning("check-client: the run store is unavailable: %s", exc)
            raise ClientRunRefused(STORE_AWAY) from None

    def get(self, run_id: str) -> ClientRun | None:
        if not RUN_ID.fullmatch(run_id):
            return None
        try:
            row = self._run(lambda db: db.execute(f"SELECT {_COLUMNS} FROM client_runs WHERE id = ?",  # noqa: S608
                                                  (run_id,)).fetchone())
        except _Down as exc:
            log.warning("check-client: the run store is unavailable: %s", exc)
            return None
        run = _run_of(row)
        return run if run is not None and run.expires > self.clock() else None

    def record(self, run_id: str, tool: str, size: int, entry: Entry) -> str:
        if not RUN_ID.fullmatch(run_id):
            raise RunGone(run_id)
        now = self.clock()

        def work(db: sqlite3.Connection) -> str | None:
            run = _run_of(db.execute(f"SELECT {_COLUMNS} FROM client_runs WHERE id = ?",  # noqa: S608
                                     (run_id,)).fetchone())
            if run is None:
                return None
            if run.expires <= now:  # its client is still calling: the run is forgotten now, not at the next start
                _forget(db, run_id)
                return None
            problem = call_problem(run, size)
            if problem:
                raise CallRefused(problem)
            prior = db.execute("SELECT COUNT(*) FROM client_calls WHERE run_id = ? AND tool = ?",
                               (run_id, tool)).fetchone()[0] if tool else 0
            text = entry(prior + 1, now)
            db.execute("INSERT INTO client_calls (run_id, seq, tool, entry) VALUES (?, ?, ?, ?)",
                       (run_id, run.calls + 1, tool, text))
            db.execute("UPDATE client_runs SET calls = calls + 1, bytes = bytes + ? WHERE id = ?", (size, run_id))
            return text

        try:
            text = self._transaction(work)
        except _Down as exc:
            log.warning("check-client: the run store is unavailable: %s", exc)
            raise RunGone(run_id) from None
        if text is None:
            raise RunGone(run_id)
        return text

    def calls(self, run_id: str) -> list[str]:
        if self.get(run_id) is None:
            return []
        try:
            rows = self._run(lambda db: db.execute(
                "SELECT entry FROM client_calls WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall())
        except _Down as exc:
            log.warning("check-client: the run store is unavailable: %s", exc)
            return []
        return [str(text) for (text,) in rows]

    def note(self, run_id: str, output: str, exit_code: int | None, choices_known: bool) -> None:
        if self.get(run_id) is None:
            raise RunGone(run_id)
        try:
            self._run(lambda db: db.execute(
                "UPDATE client_runs SET output = ?, exit_code = ?, choices = ? WHERE id = ?",
                (output[:MAX_OUTPUT], exit_code, int(choices_known), run_id)))
        except _Down as exc:
            log.warning("check-client: the run store is unavailable: %s", exc)
            raise RunGone(run_id) from None


def _forget_expired(db: sqlite3.Connection, now: float, window: float) -> None:
    """Runs past their lifetime and their requests go; starts stay as long as the rate limit's window reads them."""
    for rid in [rid for (rid,) in db.execute("SELECT id FROM client_runs WHERE expires <= ?", (now,))]:
        _forget(db, rid)
    db.execute("DELETE FROM client_starts WHERE at <= ?", (now - max(window, LIFETIME),))


def _forget(db: sqlite3.Connection, run_id: str) -> None:
    db.execute("DELETE FROM client_calls WHERE run_id = ?", (run_id,))
    db.execute("DELETE FROM client_runs WHERE id = ?", (run_id,))
