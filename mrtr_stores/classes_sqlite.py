"""A live class in one SQLite file (the contract: `mrtr_stores.classes.ClassStore`), shared by the processes of
one machine (WAL mode, one connection per thread).

A class and everything in it is deleted once it is older than the TTL, swept at most every 30 s on the injected
clock. Every SQLite failure becomes `ClassStoreUnavailable` and drops the thread's connection (the file may have
been fixed or replaced by the next request).
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from mrtr_stores import classes
from mrtr_stores.classes import (
    CODE_ALPHABET,
    CODE_LENGTH,
    NICKNAME_TAKEN,
    ClassroomError,
    ClassRow,
    ClassStoreUnavailable,
    ExportRow,
    Learner,
    check_draw,
    check_nickname,
    class_full,
    digest,
    host_ok,
    normalize_code,
    too_many_draws,
)
from mrtr_stores.failures import failures_become
from mrtr_stores.sqlite_files import PerThread, SqlValue

#: How long a write waits for another process's lock before the store counts as down (seconds).
BUSY_TIMEOUT = 15.0
#: The sweep of classes past their TTL runs at most this often (seconds, on the store's clock).
PURGE_EVERY = 30.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
  id TEXT PRIMARY KEY, code TEXT NOT NULL UNIQUE, host_hash TEXT, lesson TEXT NOT NULL,
  created REAL NOT NULL, version INTEGER NOT NULL DEFAULT 0, stage INTEGER NOT NULL DEFAULT 0,
  question_no INTEGER NOT NULL DEFAULT 0, question_id TEXT, revealed INTEGER NOT NULL DEFAULT 0,
  round_open INTEGER NOT NULL DEFAULT 0, single_use INTEGER NOT NULL DEFAULT 1,
  first_replay TEXT, locked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS learners (
  id INTEGER PRIMARY KEY AUTOINCREMENT, class_id TEXT NOT NULL, nickname TEXT NOT NULL, nick_key TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE, created REAL NOT NULL, ticket TEXT, UNIQUE (class_id, nick_key));
CREATE TABLE IF NOT EXISTS answers (
  class_id TEXT NOT NULL, question_id TEXT NOT NULL, learner_id INTEGER NOT NULL, option TEXT NOT NULL,
  at REAL NOT NULL, graded INTEGER, PRIMARY KEY (class_id, question_id, learner_id));
CREATE TABLE IF NOT EXISTS draws (
  class_id TEXT NOT NULL, question_id TEXT NOT NULL, learner_id INTEGER NOT NULL, draw TEXT NOT NULL,
  PRIMARY KEY (class_id, question_id, learner_id));
CREATE TABLE IF NOT EXISTS attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT, class_id TEXT NOT NULL, learner_id INTEGER NOT NULL, move TEXT NOT NULL,
  outcome TEXT NOT NULL, stopped_at TEXT NOT NULL, single_use INTEGER NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS attempts_class ON attempts (class_id, learner_id, at);
CREATE INDEX IF NOT EXISTS classes_created ON classes (created);
"""


def _unavailable(store: SqliteClassStore, exc: BaseException) -> ClassStoreUnavailable:
    store._connections.drop()  # the file may be fixed or replaced by the next request
    return ClassStoreUnavailable(f"SQLite {store.path}: {type(exc).__name__}: {str(exc)[:120]}")


_CLASS_COLS = ("id, code, host_hash, lesson, created, version, stage, question_no, question_id, revealed,"
               " round_open, single_use, first_replay, locked")


#: A row of `_CLASS_COLS`, as SQLite returns it (its booleans are integers).
ClassColumns: TypeAlias = tuple[str, str, str | None, str, float, int, int, int, str | None, int, int, int, str | None,
                                int]


def _class(row: ClassColumns | None) -> ClassRow | None:
    if row is None:
        return None
    return ClassRow(*row[:9], bool(row[9]), bool(row[10]), bool(row[11]), row[12], bool(row[13]))


@failures_become(sqlite3.Error, _unavailable)
class SqliteClassStore:
    """All class data in one SQLite file. Thread-safe (a connection per thread); process-safe (WAL)."""

    def __init__(self, path: str | Path, *, clock: Callable[[], float], ttl_seconds: float) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self.ttl = ttl_seconds
        self._connections = PerThread(self.path, busy_timeout=BUSY_TIMEOUT)
        self._purged_at = float("-inf")
        db = self._db()
        db.executescript(SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(classes)")}
        if "locked" not in columns:  # a class file from before the presenter could lock a class
            db.execute("ALTER TABLE classes ADD COLUMN locked INTEGER NOT NULL DEFAULT 0")
        if "graded" not in {row[1] for row in db.execute("PRAGMA table_info(answers)")}:  # before drawn questions
            db.execute("ALTER TABLE answers ADD COLUMN graded INTEGER")

    def _db(self) -> sqlite3.Connection:
        return self._connections.get()

    def _write(self, sql: str, args: tuple[SqlValue, ...] = ()) -> sqlite3.Cursor:
        return self._db().execute(sql, args)

    # -- lifetime ------------------------------------------------------------------------------------

    def purge(self, *, force: bool = False) -> int:
        """Delete every class older than the TTL, with its learners, answers and attempts."""
        now = self.clock()
        if not force and now - self._purged_at < PURGE_EVERY:
            return 0
        self._purged_at = now
        db = self._db()
        ids = [r[0] for r in db.execute("SELECT id FROM classes WHERE created <= ?", (now - self.ttl,))]
        for class_id in ids:
            self.delete(class_id)
        return len(ids)

    def delete(self, class_id: str) -> None:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            for table in ("answers", "attempts", "draws", "learners"):
                db.execute(f"DELETE FROM {table} WHERE class_id = ?", (class_id,))  # noqa: S608 - fixed names
            db.execute("DELETE FROM classes WHERE id = ?", (class_id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def count_classes(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM classes").fetchone()[0])

    # -- classes -------------------------------------------------------------------------------------

    def create(self, *, lesson: str, host_secret: str | None) -> ClassRow:
        self.purge()
        for _ in range(20):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            class_id = secrets.token_urlsafe(12)
            try:
                self._write("INSERT INTO classes (id, code, host_hash, lesson, created) VALUES (?,?,?,?,?)",
                            (class_id, code, digest(host_secret) if host_secret else None, lesson, self.clock()))
            except sqlite3.IntegrityError:
                continue
            found = self.by_code(code)
            assert found is not None
            return found
        raise RuntimeError("could not find a free join code")  # pragma: no cover - 31^6 codes

    def by_code(self, code: str) -> ClassRow | None:
        self.purge()
        row = _class(self._db().execute(f"SELECT {_CLASS_COLS} FROM classes WHERE code = ?",  # noqa: S608
                                        (normalize_code(code),)).fetchone())
        if row is not None and row.created <= self.clock() - self.ttl:
            self.delete(row.id)
            return None
        return row

    def by_id(self, class_id: str) -> ClassRow | None:
        return _class(self._db().execute(f"SELECT {_CLASS_COLS} FROM classes WHERE id = ?",  # noqa: S608
                                         (class_id,)).fetchone())

    def host_ok(self, row: ClassRow, secret: str | None) -> bool:
        return host_ok(row, secret)

    def version(self, class_id: str) -> int | None:
        found = self._db().execute("SELECT version FROM classes WHERE id = ?", (class_id,)).fetchone()
        return None if found is None else int(found[0])

    def _bump(self, class_id: str, *, stage: bool, sets: str = "", args: tuple[SqlValue, ...] = ()) -> None:
        extra = ", stage = stage + 1" if stage else ""
        self._write(f"UPDATE classes SET version = version + 1{extra}{sets} WHERE id = ?",  # noqa: S608
                    (*args, class_id))

    def set_question(self, class_id: str, number: int, question_id: str) -> None:
        self._bump(class_id, stage=True, sets=", question_no = ?, question_id = ?, revealed = 0",
                   args=(number, question_id))

    def reveal(self, class_id: str) -> None:
        self._bump(class_id, stage=True, sets=", revealed = 1")

    def set_round(self, class_id: str, open_: bool) -> None:
        self._bump(class_id, stage=True, sets=", round_open = ?", args=(int(open_),))

    def set_single_use(self, class_id: str, on: bool) -> None:
        self._bump(class_id, stage=True, sets=", single_use = ?", args=(int(on),))

    def set_locked(self, class_id: str, locked: bool) -> None:
        self._bump(class_id, stage=False, sets=", locked = ?", args=(int(locked),))

    # -- learners ------------------------------------------------------------------------------------

    def join(self, row: ClassRow, nickname: str) -> tuple[Learner, str]:
        """Add a learner; returns it and its secret token (shown to that learner, stored hashed)."""
        name = check_nickname(nickname)
        token = secrets.token_urlsafe(24)
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            count = db.execute("SELECT COUNT(*) FROM learners WHERE class_id = ?", (row.id,)).fetchone()[0]
            if count >= classes.MAX_LEARNERS:
                raise class_full()
            try:
                cur = db.execute("INSERT INTO learners (class_id, nickname, nick_key, token_hash, created) "
                                 "VALUES (?,?,?,?,?)", (row.id, name, name.casefold(), digest(token), self.clock()))
            except sqlite3.IntegrityError:
                raise ClassroomError(NICKNAME_TAKEN) from None
            db.execute("UPDATE classes SET version = version + 1 WHERE id = ?", (row.id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return Learner(int(cur.lastrowid or 0), row.id, name, self.clock(), None), token

    def learner(self, row: ClassRow, token: str | None) -> Learner | None:
        if not token:
            return None
        found = self._db().execute("SELECT id, class_id, nickname, created, ticket FROM learners "
                                   "WHERE token_hash = ? AND class_id = ?", (digest(token), row.id)).fetchone()
        return Learner(*found) if found else None

    def learners(self, class_id: str) -> list[Learner]:
        return [Learner(*r) for r in self._db().execute(
            "SELECT id, class_id, nickname, created, ticket FROM learners WHERE class_id = ? ORDER BY id",
            (class_id,))]

    def count_learners(self, class_id: str) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM learners WHERE class_id = ?", (class_id,)).fetchone()[0])

    def set_ticket(self, learner: Learner, ticket: str) -> None:
        self._write("UPDATE learners SET ticket = ? WHERE id = ?", (ticket, learner.id))

    def remove_learner(self, class_id: str, learner_id: int) -> bool:
        """Take a learner out of the class with everything they sent; their token stops working. False when
        the class has no such learner."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            cur = db.execute("DELETE FROM learners WHERE class_id = ? AND id = ?", (class_id, learner_id))
            removed = cur.rowcount == 1
            if removed:
                for table in ("answers", "attempts", "draws"):
                    db.execute(f"DELETE FROM {table} WHERE class_id = ? AND learner_id = ?",  # noqa: S608
                               (class_id, learner_id))
                db.execute("UPDATE classes SET version = version + 1 WHERE id = ?", (class_id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return removed

    # -- answers -------------------------------------------------------------------------------------

    def answer(self, row: ClassRow, learner: Learner, question_id: str, option: str, right: bool | None = None) -> None:
        db = self._db()
        graded = None if right is None else int(right)
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT INTO answers (class_id, question_id, learner_id, option, at, graded) "
                       "VALUES (?,?,?,?,?,?) ON CONFLICT (class_id, question_id, learner_id) DO UPDATE SET "
                       "option = excluded.option, at = excluded.at, graded = excluded.graded",
                       (row.id, question_id, learner.id, option, self.clock(), graded))
            db.execute("UPDATE classes SET version = version + 1 WHERE id = ?", (row.id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def my_answer(self, row: ClassRow, learner: Learner, question_id: str) -> str | None:
        found = self._db().execute("SELECT option FROM answers WHERE class_id = ? AND question_id = ? AND "
                                   "learner_id = ?", (row.id, question_id, learner.id)).fetchone()
        return found[0] if found else None

    def tally(self, class_id: str, question_id: str) -> dict[str, int]:
        return {option: int(n) for option, n in self._db().execute(
            "SELECT option, COUNT(*) FROM answers WHERE class_id = ? AND question_id = ? GROUP BY option",
            (class_id, question_id))}

    def right_count(self, class_id: str, question_id: str) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM answers WHERE class_id = ? AND question_id = ? AND "
                                      "graded = 1", (class_id, question_id)).fetchone()[0])

    # -- draws ---------------------------------------------------------------------------------------

    def keep_draw(self, row: ClassRow, learner: Learner, question_id: str, draw: str) -> str:
        check_draw(draw)
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            kept = db.execute("SELECT draw FROM draws WHERE class_id = ? AND question_id = ? AND learner_id = ?",
                              (row.id, question_id, learner.id)).fetchone()
            if kept is None:
                known = {q for (q,) in db.execute("SELECT DISTINCT question_id FROM draws WHERE class_id = ?",
                                                  (row.id,))}
                if question_id not in known and len(known) >= classes.MAX_DRAWN_QUESTIONS:
                    raise too_many_draws()
                db.execute("INSERT INTO draws (class_id, question_id, learner_id, draw) VALUES (?,?,?,?)",
                           (row.id, question_id, learner.id, draw))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return str(kept[0]) if kept is not None else draw

    # -- attempts ------------------------------------------------------------------------------------

    def record_attempt(self, row: ClassRow, learner: Learner, *, move: str, outcome: str, stopped_at: str,
                       single_use: bool, replay_through: bool) -> bool:
        """Store one attempt; returns True when it made this learner the first to get a replay through."""
        db = self._db()
        now = self.clock()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT INTO attempts (class_id, learner_id, move, outcome, stopped_at, single_use, at) "
                       "VALUES (?,?,?,?,?,?,?)", (row.id, learner.id, move, outcome, stopped_at, int(single_use), now))
            first = False
            if replay_through:
                cur = db.execute("UPDATE classes SET first_replay = ? WHERE id = ? AND first_replay IS NULL",
                                 (learner.nickname, row.id))
                first = cur.rowcount == 1
            db.execute("UPDATE classes SET version = version + 1 WHERE id = ?", (row.id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return first

    def recent_attempts(self, learner: Learner, since: float) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM attempts WHERE class_id = ? AND learner_id = ? "
                                      "AND at > ?", (learner.class_id, learner.id, since)).fetchone()[0])

    def heat(self, class_id: str) -> dict[tuple[str, str], int]:
        """Attempts per (move, check that stopped it); a move that went through counts under ''."""
        return {(move, stopped): int(n) for move, stopped, n in self._db().execute(
            "SELECT move, stopped_at, COUNT(*) FROM attempts WHERE class_id = ? GROUP BY move, stopped_at",
            (class_id,))}

    # -- export --------------------------------------------------------------------------------------

    def export_rows(self, class_id: str) -> list[ExportRow]:
        """One row per answer and per attempt: kind, nickname, item, value, detail, time."""
        db = self._db()
        rows: list[ExportRow] = []
        rows += db.execute("SELECT 'answer', l.nickname, a.question_id, a.option, CASE a.graded WHEN 1 THEN 'right' "
                           "WHEN 0 THEN 'wrong' ELSE '' END, a.at FROM answers a "
                           "JOIN learners l ON l.id = a.learner_id WHERE a.class_id = ? ORDER BY a.at, l.id",
                           (class_id,)).fetchall()
        rows += db.execute("SELECT 'attempt', l.nickname, t.move, t.outcome, t.stopped_at, t.at FROM attempts t "
                           "JOIN learners l ON l.id = t.learner_id WHERE t.class_id = ? ORDER BY t.id",
                           (class_id,)).fetchall()
        return rows
