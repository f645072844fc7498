"""The 2025-11-25 session directory and its mailbox in one SQLite file, shared by the processes of one machine
(the contract: `mrtr_stores.sessions.SessionDirectory`).

Every SQLite failure becomes `DirectoryDown`, never a driver exception. Expiry is measured on the `now` the
caller passes; expired sessions and answers are deleted on later writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mrtr import JSONObject, as_object
from mrtr_stores.sessions import (
    DEFAULT_TTL,
    MAILBOX_TTL,
    MAX_AWAITED,
    MAX_MESSAGE,
    MAX_RELAYS_PER_PRINCIPAL,
    DirectoryDown,
    NotAwaited,
    RelaysExhausted,
    answered_id,
)
from mrtr_stores.sqlite_files import PerThread

T = TypeVar("T")

#: How long a SQLite write waits for another process's lock (seconds).
BUSY_TIMEOUT = 5.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions (sid TEXT PRIMARY KEY, principal TEXT NOT NULL, state TEXT NOT NULL, "
    "expires REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS sessions_expires ON sessions (expires)",
    "CREATE TABLE IF NOT EXISTS mailbox (n INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, "
    "sid TEXT NOT NULL, message TEXT NOT NULL, expires REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS mailbox_tag ON mailbox (tag, n)",
    "CREATE TABLE IF NOT EXISTS awaited (sid TEXT NOT NULL, qid TEXT NOT NULL, expires REAL NOT NULL, "
    "PRIMARY KEY (sid, qid)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS relays (principal TEXT PRIMARY KEY, until REAL NOT NULL, n INTEGER NOT NULL) "
    "WITHOUT ROWID",
)


class SqliteDirectory:
    """Sessions and the mailbox in one SQLite file, shared by the processes of one machine."""

    shared = True

    def __init__(self, path: str | Path, *, ttl: float = DEFAULT_TTL) -> None:
        self.path = str(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.ttl = ttl
        self._connections = PerThread(self.path, busy_timeout=BUSY_TIMEOUT, schema=_SCHEMA)
        self._run(lambda db: None)  # a bad path shows at start-up

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._connections.run(
            work, lambda exc: DirectoryDown(f"the session directory {self.path}: {type(exc).__name__}: {exc}"))

    def put(self, sid: str, principal: str, state: JSONObject, now: float) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM sessions WHERE expires <= ?", (now,))
            db.execute("INSERT OR REPLACE INTO sessions (sid, principal, state, expires) VALUES (?, ?, ?, ?)",
                       (sid, principal, json.dumps(state), now + self.ttl))

        self._run(work)

    def get(self, sid: str, now: float) -> tuple[str, JSONObject] | None:
        def work(db: sqlite3.Connection) -> tuple[str, JSONObject] | None:
            row = db.execute("SELECT principal, state FROM sessions WHERE sid = ? AND expires > ?",
                             (sid, now)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE sessions SET expires = ? WHERE sid = ?", (now + self.ttl, sid))
            return str(row[0]), as_object(json.loads(row[1]))

        return self._run(work)

    def delete(self, sid: str) -> None:
        self._run(lambda db: db.execute("DELETE FROM sessions WHERE sid = ?", (sid,)))

    def expect(self, sid: str, question_id: str, now: float) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM awaited WHERE expires <= ?", (now,))
            db.execute("INSERT OR REPLACE INTO awaited (sid, qid, expires) VALUES (?, ?, ?)",
                       (sid, question_id, now + MAILBOX_TTL))
            db.execute("DELETE FROM awaited WHERE sid = ? AND qid NOT IN (SELECT qid FROM awaited WHERE sid = ? "
                       "ORDER BY expires DESC LIMIT ?)", (sid, sid, MAX_AWAITED))

        self._run(work)

    def post(self, tag: str, sid: str, message: JSONObject, now: float, principal: str = "") -> None:
        text = json.dumps(message, separators=(",", ":"))
        if len(text) > MAX_MESSAGE:
            raise DirectoryDown("an answer too large to relay")
        question = answered_id(message)
        if question is None:
            raise NotAwaited("an answer whose id names no question of this server")

        def work(db: sqlite3.Connection) -> int:
            db.execute("BEGIN IMMEDIATE")
            try:
                done = _relay(db, tag, sid, question, text, now, principal)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return done

        done = self._run(work)
        if done == 0:
            raise NotAwaited(f"no question {question} waits in this session")
        if done == -1:
            raise RelaysExhausted(f"{MAX_RELAYS_PER_PRINCIPAL} answers relayed in {MAILBOX_TTL:.0f} s")

    def take(self, tag: str, now: float) -> list[tuple[str, JSONObject]]:
        def work(db: sqlite3.Connection) -> list[tuple[str, JSONObject]]:
            # Read and delete in one write transaction, so two threads never take the same answer.
            db.execute("BEGIN IMMEDIATE")
            try:
                rows = db.execute("SELECT n, sid, message FROM mailbox WHERE tag = ? ORDER BY n", (tag,)).fetchall()
                if rows:
                    db.execute("DELETE FROM mailbox WHERE tag = ? AND n <= ?", (tag, rows[-1][0]))
                db.execute("DELETE FROM mailbox WHERE expires <= ?", (now,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return [(str(sid), as_object(json.loads(message))) for _, sid, message in rows]

        return self._run(work)


def _relay(db: sqlite3.Connection, tag: str, sid: str, question: str, text: str, now: float, principal: str) -> int:
    """One relay inside a write transaction: 1 relayed, 0 no such question waits, -1 the principal's cap."""
    if db.execute("DELETE FROM awaited WHERE sid = ? AND qid = ? AND expires > ?", (sid, question, now)).rowcount != 1:
        return 0
    row = db.execute("SELECT until, n FROM relays WHERE principal = ?", (principal,)).fetchone()
    until, count = (row[0], row[1]) if row is not None and row[0] > now else (now + MAILBOX_TTL, 0)
    if count >= MAX_RELAYS_PER_PRINCIPAL:
        db.execute("INSERT INTO awaited (sid, qid, expires) VALUES (?, ?, ?)", (sid, question, now + MAILBOX_TTL))
        return -1
    db.execute("INSERT OR REPLACE INTO relays (principal, until, n) VALUES (?, ?, ?)", (principal, until, count + 1))
    db.execute("INSERT INTO mailbox (tag, sid, message, expires) VALUES (?, ?, ?, ?)",
               (tag, sid, text, now + MAILBOX_TTL))
    return 1
