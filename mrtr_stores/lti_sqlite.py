"""The LTI tool's store on one machine, in the state directory (never in git): its key and one SQLite file (the
contract: `mrtr_stores.lti.LtiStore`).

* `lti-tool-key.pem`: the tool's private key, generated on first use (mode 0600, written whole, as the ticket key
  is: `mrtr_stores.secret_files`), shared by every process on the machine.
* `lti.sqlite3` (mode 0600: learners' ids and pending scores): `kv` (pylti1p3's launch data, with expiry),
  `launches` (what a verified launch leaves for the pages after it) and `scores` (the queue for the platform).

Every method opens its own connection, so any thread or process may use the store. Every SQLite failure is
`LtiStoreDown`.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mrtr import JSON, JSONObject, as_object
from mrtr.clock import Clock
from mrtr_stores.failures import failures_become
from mrtr_stores.lti import (
    LAUNCH_LIFETIME,
    MAX_ERROR,
    LtiStoreDown,
    PendingScore,
    new_private_key,
    retry_wait,
)
from mrtr_stores.secret_files import secret_file

KEY_FILE = "lti-tool-key.pem"
DB_FILE = "lti.sqlite3"
#: How long a write waits for another process's lock (seconds).
BUSY_TIMEOUT = 10.0


def _down(store: SqliteLtiStore, exc: BaseException) -> LtiStoreDown:
    return LtiStoreDown(f"the LTI store {store.path}: {type(exc).__name__}: {exc}")


@failures_become(sqlite3.Error, _down)
class SqliteLtiStore:
    """The key and the SQLite file in `state_dir`."""

    def __init__(self, state_dir: Path, clock: Clock = time.time) -> None:
        self.state_dir = Path(state_dir)
        self.path = path = self.state_dir / DB_FILE
        self.clock = clock
        self._key: str | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        # Learners' ids and pending scores live here: readable by the app's user only, like the key.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT)
        try:
            db.executescript("""
                CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires REAL);
                CREATE TABLE IF NOT EXISTS launches (ref TEXT PRIMARY KEY, data TEXT NOT NULL, expires REAL NOT NULL);
                CREATE TABLE IF NOT EXISTS scores (
                    key TEXT PRIMARY KEY, issuer TEXT NOT NULL, client_id TEXT NOT NULL, endpoint TEXT NOT NULL,
                    user_id TEXT NOT NULL, given REAL NOT NULL, maximum REAL NOT NULL, activity TEXT NOT NULL,
                    grading TEXT NOT NULL, timestamp TEXT NOT NULL, sent INTEGER NOT NULL DEFAULT 0,
                    attempts INTEGER NOT NULL DEFAULT 0, next_try REAL NOT NULL DEFAULT 0, last_error TEXT,
                    comment TEXT NOT NULL DEFAULT '');
            """)
            # A file made before scores had a comment gets the column (the default: no comment).
            if "comment" not in {row[1] for row in db.execute("PRAGMA table_info(scores)")}:
                db.execute("ALTER TABLE scores ADD COLUMN comment TEXT NOT NULL DEFAULT ''")
        finally:
            db.close()

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def private_key(self) -> str:
        if self._key is None:
            self._key = secret_file(self.state_dir / KEY_FILE, new_private_key).decode("ascii")
        return self._key

    # -- pylti1p3's key-value storage -----------------------------------------------------------------

    def kv_get(self, key: str) -> JSON:
        with self._db() as db:
            row = db.execute("SELECT value, expires FROM kv WHERE key = ?", (key,)).fetchone()
        if row is None or (row[1] is not None and row[1] <= self.clock()):
            return None
        value: JSON = json.loads(row[0])
        return value

    def kv_set(self, key: str, value: JSON, exp: int | None) -> None:
        expires = self.clock() + exp if exp else None
        with self._db() as db:
            db.execute("DELETE FROM kv WHERE expires IS NOT NULL AND expires <= ?", (self.clock(),))
            db.execute("INSERT OR REPLACE INTO kv (key, value, expires) VALUES (?, ?, ?)",
                       (key, json.dumps(value), expires))

    def kv_take(self, key: str) -> bool:
        """True once for a live key, which is deleted in the same transaction: a nonce is spent here."""
        with self._db() as db:
            row = db.execute("SELECT expires FROM kv WHERE key = ?", (key,)).fetchone()
            db.execute("DELETE FROM kv WHERE key = ?", (key,))
        return row is not None and (row[0] is None or row[0] > self.clock())

    # -- launches -------------------------------------------------------------------------------------

    def save_launch(self, data: JSONObject) -> str:
        ref = secrets.token_urlsafe(24)
        with self._db() as db:
            db.execute("DELETE FROM launches WHERE expires <= ?", (self.clock(),))
            db.execute("INSERT INTO launches (ref, data, expires) VALUES (?, ?, ?)",
                       (ref, json.dumps(data), self.clock() + LAUNCH_LIFETIME))
        return ref

    def launch(self, ref: str) -> JSONObject | None:
        with self._db() as db:
            row = db.execute("SELECT data, expires FROM launches WHERE ref = ?", (ref,)).fetchone()
        if row is None or row[1] <= self.clock():
            return None
        return as_object(json.loads(row[0]))

    # -- scores ---------------------------------------------------------------------------------------

    def record_score(self, score: PendingScore, *, keep_best: bool) -> bool:
        """Keep `score` until the platform accepts it; False when it changes nothing already sent or queued.

        `keep_best`: a lower score never replaces a higher one (the build lesson: a later, worse report
        does not take a verified step away).
        """
        with self._db() as db:
            row = db.execute("SELECT given, activity, grading FROM scores WHERE key = ?", (score.key,)).fetchone()
            if row is not None:
                if keep_best and row[0] > score.given:
                    return False
                if (row[0], row[1], row[2]) == (score.given, score.activity, score.grading):
                    return False
            db.execute("""INSERT OR REPLACE INTO scores (key, issuer, client_id, endpoint, user_id, given, maximum,
                          activity, grading, timestamp, sent, attempts, next_try, last_error, comment)
                          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, NULL, ?)""",
                       (score.key, score.issuer, score.client_id, json.dumps(score.endpoint), score.user_id,
                        score.given, score.maximum, score.activity, score.grading, score.timestamp, score.comment))
        return True

    def due_scores(self, limit: int, key: str | None = None) -> list[PendingScore]:
        with self._db() as db:
            rows = db.execute("""SELECT key, issuer, client_id, endpoint, user_id, given, maximum, activity, grading,
                                 timestamp, attempts, comment FROM scores WHERE sent = 0 AND next_try <= ?
                                 AND (? IS NULL OR key = ?) ORDER BY next_try LIMIT ?""",
                              (self.clock(), key, key, limit)).fetchall()
        return [PendingScore(r[0], r[1], r[2], as_object(json.loads(r[3])), r[4], r[5], r[6], r[7], r[8], r[9], r[10],
                             r[11]) for r in rows]

    def mark_sent(self, score: PendingScore) -> None:
        # Only the version that was posted is marked: a newer score recorded meanwhile stays queued.
        with self._db() as db:
            db.execute("UPDATE scores SET sent = 1, last_error = NULL WHERE key = ? AND given = ? AND timestamp = ?",
                       (score.key, score.given, score.timestamp))

    def mark_failed(self, score: PendingScore, error: str) -> None:
        wait = retry_wait(score.attempts)
        with self._db() as db:
            db.execute("UPDATE scores SET attempts = attempts + 1, next_try = ?, last_error = ? "
                       "WHERE key = ? AND timestamp = ?", (self.clock() + wait, error[:MAX_ERROR], score.key,
                                                          score.timestamp))

    def score_state(self, key: str) -> tuple[float, bool, int] | None:
        """(score given, accepted by the platform, failed attempts) for a score key, or None."""
        with self._db() as db:
            row = db.execute("SELECT given, sent, attempts FROM scores WHERE key = ?", (key,)).fetchone()
        return (row[0], bool(row[1]), row[2]) if row else None
