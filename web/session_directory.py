"""The 2025-11-25 sessions every process of a deployment can see, and the mailbox that carries a client's
answer to the process holding the call it answers.

A legacy session is opened by one process, but its next request may reach any worker or replica. The
directory keeps what another process needs to go on with a session (its principal and the core's
`session_state()`), so any process can serve it; the mailbox relays a client's answer to a shim question
(a JSON-RPC response, whose id names the process that asked) to that process, whose waiting stream takes
it out. Three backends, chosen like the redeemed store: `LocalDirectory` (one process: nothing to share),
`SqliteDirectory` (the processes of one machine) and `RedisDirectory` (replicas on several hosts).

Stores never read the clock: callers pass `now`. Every failure of a shared backend is `DirectoryDown`,
never a driver exception, so /mcp answers 503 and stays up. It never holds a token or a key.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mrtr_stores.sqlite_files import PerThread

T = TypeVar("T")

#: How long an unused session stays in the directory (seconds): web/mcp.py's SESSION_IDLE_TIMEOUT.
DEFAULT_TTL = 30 * 60.0
#: How long an answer waits in the mailbox for its process before it is dropped (seconds).
MAILBOX_TTL = 600.0
#: How long a SQLite write waits for another process's lock (seconds).
BUSY_TIMEOUT = 5.0
#: The most bytes of one relayed message (the /mcp body limit is smaller).
MAX_MESSAGE = 1024 * 1024


class DirectoryDown(Exception):
    """The shared directory could not be read or written; the message says which and why."""


class Directory(Protocol):
    #: False when there is nothing to share (one process): callers then skip the directory entirely.
    shared: bool

    def put(self, sid: str, principal: str, state: dict[str, Any], now: float) -> None: ...

    def get(self, sid: str, now: float) -> tuple[str, dict[str, Any]] | None: ...

    def delete(self, sid: str) -> None: ...

    def post(self, tag: str, sid: str, message: dict[str, Any], now: float) -> None: ...

    def take(self, tag: str, now: float) -> list[tuple[str, dict[str, Any]]]: ...


def process_tag(replica: str | None) -> str:
    """A name for this process that no other process of the deployment has: the replica, the pid, a nonce.
    It prefixes the ids of the questions this process asks, so an answer names the process to relay it to."""
    prefix = "".join(c for c in (replica or "") if c.isascii() and (c.isalnum() or c in "-_"))[:40]
    return f"{prefix or 'p'}.{os.getpid()}.{secrets.token_hex(3)}"


def tag_of(request_id: Any) -> str | None:
    """The process tag in a question's id (`<tag>-<n>`), or None for an id no tagged process gave."""
    if not isinstance(request_id, str) or "-" not in request_id:
        return None
    tag, _, number = request_id.rpartition("-")
    return tag if number.isdigit() and tag.count(".") == 2 else None


class LocalDirectory:
    """One process: every session lives in it, so there is nothing to look up or relay."""

    shared = False

    def put(self, sid: str, principal: str, state: dict[str, Any], now: float) -> None:
        pass

    def get(self, sid: str, now: float) -> tuple[str, dict[str, Any]] | None:
        return None

    def delete(self, sid: str) -> None:
        pass

    def post(self, tag: str, sid: str, message: dict[str, Any], now: float) -> None:
        raise DirectoryDown("no shared directory: an answer for another process cannot be relayed")

    def take(self, tag: str, now: float) -> list[tuple[str, dict[str, Any]]]:
        return []


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions (sid TEXT PRIMARY KEY, principal TEXT NOT NULL, state TEXT NOT NULL, "
    "expires REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS sessions_expires ON sessions (expires)",
    "CREATE TABLE IF NOT EXISTS mailbox (n INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, "
    "sid TEXT NOT NULL, message TEXT NOT NULL, expires REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS mailbox_tag ON mailbox (tag, n)",
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

    def put(self, sid: str, principal: str, state: dict[str, Any], now: float) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM sessions WHERE expires <= ?", (now,))
            db.execute("INSERT OR REPLACE INTO sessions (sid, principal, state, expires) VALUES (?, ?, ?, ?)",
                       (sid, principal, json.dumps(state), now + self.ttl))

        self._run(work)

    def get(self, sid: str, now: float) -> tuple[str, dict[str, Any]] | None:
        def work(db: sqlite3.Connection) -> tuple[str, dict[str, Any]] | None:
            row = db.execute("SELECT principal, state FROM sessions WHERE sid = ? AND expires > ?",
                             (sid, now)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE sessions SET expires = ? WHERE sid = ?", (now + self.ttl, sid))
            return str(row[0]), json.loads(row[1])

        return self._run(work)

    def delete(self, sid: str) -> None:
        self._run(lambda db: db.execute("DELETE FROM sessions WHERE sid = ?", (sid,)))

    def post(self, tag: str, sid: str, message: dict[str, Any], now: float) -> None:
        text = json.dumps(message, separators=(",", ":"))
        if len(text) > MAX_MESSAGE:
            raise DirectoryDown("an answer too large to relay")
        self._run(lambda db: db.execute("INSERT INTO mailbox (tag, sid, message, expires) VALUES (?, ?, ?, ?)",
                                        (tag, sid, text, now + MAILBOX_TTL)))

    def take(self, tag: str, now: float) -> list[tuple[str, dict[str, Any]]]:
        def work(db: sqlite3.Connection) -> list[tuple[str, dict[str, Any]]]:
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
            return [(str(sid), json.loads(message)) for _, sid, message in rows]

        return self._run(work)


class RedisDirectory:
    """Sessions and the mailbox in Redis, shared by replicas on several hosts: a key per session with its own
    time to live, and a list per process tag."""

    shared = True

    def __init__(self, client: Any, *, ttl: float = DEFAULT_TTL, prefix: str = "mrtr:legacy:") -> None:
        self.client = client
        self.ttl = ttl
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str, *, ttl: float = DEFAULT_TTL, timeout: float = 5.0) -> RedisDirectory:
        from mrtr_stores.redis_clients import redis_client  # only when Redis is configured

        return cls(redis_client(url, timeout=timeout), ttl=ttl)

    def _do(self, work: Callable[[], T]) -> T:
        import redis

        try:
            return work()
        except redis.exceptions.RedisError as exc:
            raise DirectoryDown(f"the session directory in Redis: {type(exc).__name__}: {exc}") from exc

    def put(self, sid: str, principal: str, state: dict[str, Any], now: float) -> None:
        value = json.dumps({"principal": principal, "state": state})
        self._do(lambda: self.client.set(f"{self.prefix}s:{sid}", value, px=int(self.ttl * 1000)))

    def get(self, sid: str, now: float) -> tuple[str, dict[str, Any]] | None:
        key = f"{self.prefix}s:{sid}"
        raw = self._do(lambda: self.client.get(key))
        if raw is None:
            return None
        self._do(lambda: self.client.pexpire(key, int(self.ttl * 1000)))
        record = json.loads(raw)
        return str(record["principal"]), dict(record["state"])

    def delete(self, sid: str) -> None:
        self._do(lambda: self.client.delete(f"{self.prefix}s:{sid}"))

    def post(self, tag: str, sid: str, message: dict[str, Any], now: float) -> None:
        text = json.dumps({"sid": sid, "message": message}, separators=(",", ":"))
        if len(text) > MAX_MESSAGE:
            raise DirectoryDown("an answer too large to relay")
        key = f"{self.prefix}m:{tag}"

        def work() -> None:
            pipe = self.client.pipeline()
            pipe.rpush(key, text)
            pipe.pexpire(key, int(MAILBOX_TTL * 1000))
            pipe.execute()

        self._do(work)

    def take(self, tag: str, now: float) -> list[tuple[str, dict[str, Any]]]:
        key = f"{self.prefix}m:{tag}"

        def work() -> list[Any]:
            pipe = self.client.pipeline()  # MULTI/EXEC: read and empty the list in one step
            pipe.lrange(key, 0, -1)
            pipe.delete(key)
            return list(pipe.execute()[0])

        out = []
        for raw in self._do(work):
            record = json.loads(raw)
            out.append((str(record["sid"]), dict(record["message"])))
        return out
