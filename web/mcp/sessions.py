"""/mcp's 2025-11-25 sessions: the live sessions of this process and, through the shared session directory
(`mrtr_stores.sessions`), the way to every other process's.

Limits, each a named constant: live sessions (`MAX_SESSIONS` in all, `MAX_SESSIONS_PER_PRINCIPAL` each: a
principal's new session ends only that principal's least recently used one) and idle sessions
(`SESSION_IDLE_TIMEOUT`). A session opened elsewhere is adopted from the directory; an answer to a question another
process asked is relayed to it through the directory's mailbox. Never reads a request.
"""

from __future__ import annotations

import itertools
import logging
import queue
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from mrtr import JSON, Connection, JSONObject
from mrtr.messages import RequestId, error_response
from mrtr_stores.sessions import DirectoryDown, LocalDirectory, SessionDirectory, tag_of
from web.mcp.wire import (
    HttpRefusal,
)

log = logging.getLogger("mrtr.http")

#: Live 2025-11-25 sessions in this process; past it, initialize gets 503 (no one's session is ended).
MAX_SESSIONS = 1000
#: Live sessions of one principal; its next initialize ends its own least recently used session.
MAX_SESSIONS_PER_PRINCIPAL = 20
#: A legacy session nobody has used for this long is ended (seconds).
SESSION_IDLE_TIMEOUT = 30 * 60.0


@dataclass
class Session:
    """One 2025-11-25 HTTP session: a core Connection bound to the principal that opened it."""

    sid: str
    principal: str
    conn: Connection
    last_seen: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: tools/call id -> the queue its SSE stream is waiting on (shim requests, then the result)
    streams: dict[RequestId | None, queue.Queue[list[JSONObject]]] = field(default_factory=dict)

    def route(self, messages: list[JSONObject], origin: RequestId | None) -> None:
        """Hand messages to the stream of `origin` (caller holds the lock). No stream: nobody waits."""
        stream = self.streams.get(origin)
        if stream is not None and messages:
            stream.put(messages)

    def close(self, reason: str) -> None:
        """The session has ended: every call still waiting ends now, with `reason` as its error."""
        with self.lock:
            for origin in list(self.streams):
                error = HttpRefusal(f"The session ended ({reason}) before the client answered", http_status=200)
                self.route([error_response(origin, error.to_error())], origin)
                cancel(self, origin)


class SessionsFull(Exception):
    """Every session slot of this process is taken by live sessions."""


class Sessions:
    """The live sessions of this process, and (with a shared directory) the way to every other process's.

    A session opened elsewhere is adopted from the directory on its first request here; an answer to a
    question another process asked is relayed to it through the directory's mailbox (`deliver`), so no
    routing is needed for a session to work, whichever worker or replica each request reaches.

    Sessions are kept in least-recently-used order. Any left unused for `idle_timeout` seconds
    are ended, as if the client had sent DELETE; clients that come back get 404 and initialize
    again. One principal holds at most `per_principal` sessions: its next one ends its own least
    recently used session, never another principal's. When `limit` live sessions are open,
    `open` raises `SessionsFull` rather than end anyone's session.
    """

    def __init__(self, limit: int = MAX_SESSIONS, idle_timeout: float = SESSION_IDLE_TIMEOUT,
                 clock: Callable[[], float] = time.monotonic, per_principal: int = MAX_SESSIONS_PER_PRINCIPAL,
                 new_id: Callable[[], str] = lambda: secrets.token_urlsafe(32),
                 directory: SessionDirectory | None = None, tag: str = "",
                 wall: Callable[[], float] = time.time) -> None:
        #: Where every process finds a session, and the mailbox for answers (mrtr_stores.sessions).
        self.directory: SessionDirectory = directory or LocalDirectory()
        #: This process's name in the ids of the questions it asks (only with a shared directory).
        self.tag = tag
        self.wall = wall  # the directory's expiry times are wall-clock times, shared by every process
        self._question_numbers = itertools.count(1)
        self.limit = limit
        self.new_id = new_id  # a session id: random; tests inject a sequence to compare two apps byte for byte
        self.per_principal = per_principal
        self.idle_timeout = idle_timeout
        self.clock = clock
        self._lock = threading.Lock()
        self._live: OrderedDict[str, Session] = OrderedDict()
        self._by_principal: dict[str, OrderedDict[str, Session]] = {}

    def _drop(self, session: Session) -> Session:
        self._live.pop(session.sid, None)
        own = self._by_principal.get(session.principal)
        if own is not None:
            own.pop(session.sid, None)
            if not own:
                del self._by_principal[session.principal]
        return session

    def _evict_idle(self, now: float) -> list[tuple[Session, str]]:
        ended = []
        while self._live and now - next(iter(self._live.values())).last_seen > self.idle_timeout:
            ended.append((self._drop(next(iter(self._live.values()))), "idle for too long"))
        return ended

    def open(self, principal: str, conn: Connection) -> Session:
        """A new session for `principal`.

        Raises:
            SessionsFull: `limit` other sessions are live (and none of them is this principal's).
        """
        now = self.clock()
        session = Session(self.new_id(), principal, conn, last_seen=now)
        with self._lock:
            ended = self._evict_idle(now)
            own = self._by_principal.get(principal) or OrderedDict()
            # Room comes only from this principal's own sessions, for its own cap and the global one.
            while own and (len(own) >= self.per_principal or len(self._live) >= self.limit):
                ended.append((self._drop(next(iter(own.values()))), "replaced by a newer session of the same user"))
            full = len(self._live) >= self.limit
            if not full:
                self._live[session.sid] = session
                self._by_principal.setdefault(principal, OrderedDict())[session.sid] = session
        _close_all(ended)
        replaced = [old.sid for old, why in ended if why.startswith("replaced")]
        if replaced and self.directory.shared:
            try:  # a replaced session ends everywhere, or another process would adopt it again
                for sid in replaced:
                    self.directory.delete(sid)
            except DirectoryDown as exc:
                log.warning("replaced legacy sessions could not be ended everywhere: %s", exc)
        if full:
            raise SessionsFull
        return session

    def get(self, sid: str, principal: str) -> Session | None:
        """The session, if it is live and belongs to `principal` (another principal's id is not found)."""
        now = self.clock()
        with self._lock:
            ended = self._evict_idle(now)
            session = self._live.get(sid)
            if session is not None and secrets.compare_digest(session.principal.encode(), principal.encode()):
                session.last_seen = now
                self._live.move_to_end(sid)
                self._by_principal[principal].move_to_end(sid)
            else:
                session = None
        _close_all(ended)
        return session

    def request_ids(self, sid: str | None = None) -> QuestionIds | None:
        """The ids a new session's questions get: tagged with this process when another process may receive the
        answer (a shared directory), else None (the core's own 1, 2, 3...). Each id is recorded as awaited in the
        directory once the session's id is known (`sid`, or `QuestionIds.sid` after `open`), so only answers to
        questions really asked are relayed."""
        if not self.directory.shared:
            return None
        return QuestionIds(self, sid)

    def publish(self, session: Session) -> None:
        """Make a new session visible to every process (nothing to do with one process)."""
        if self.directory.shared:
            self.directory.put(session.sid, session.principal, session.conn.session_state(), self.wall())

    def adopt(self, sid: str, principal: str, connect: Callable[[Iterator[str] | None], Connection]) -> Session | None:
        """A session another process opened, now served here too; None when the directory does not know it or it
        is another principal's. Raises DirectoryDown when the directory cannot be read."""
        if not self.directory.shared:
            return None
        record = self.directory.get(sid, self.wall())
        if record is None or not secrets.compare_digest(record[0].encode(), principal.encode()):
            return None
        conn = connect(self.request_ids(sid))
        try:
            conn.resume(record[1])
        except ValueError:
            return None
        session = Session(sid, principal, conn, last_seen=self.clock())
        with self._lock:
            ended = self._evict_idle(session.last_seen)
            if sid in self._live:  # another thread adopted it meanwhile: use that one
                session = self._live[sid]
            elif len(self._live) < self.limit:
                self._live[sid] = session
                self._by_principal.setdefault(principal, OrderedDict())[sid] = session
        _close_all(ended)
        return session

    def owner_elsewhere(self, message: JSON) -> str | None:
        """The tag of the process that asked the question `message` answers, when that is another process."""
        if not self.directory.shared or not isinstance(message, dict) or "method" in message:
            return None
        tag = tag_of(message.get("id"))
        return tag if tag is not None and tag != self.tag else None

    def known(self, sid: str, principal: str) -> bool:
        """Whether the directory holds `principal`'s session `sid` (for an answer relayed without adopting)."""
        record = self.directory.get(sid, self.wall()) if self.directory.shared else None
        return record is not None and secrets.compare_digest(record[0].encode(), principal.encode())

    def relay(self, tag: str, sid: str, message: JSONObject, principal: str) -> None:
        """Relay an answer to the process `tag`. Raises NotAwaited (no such question waits in the session),
        RelaysExhausted (the principal's cap) or DirectoryDown."""
        self.directory.post(tag, sid, message, self.wall(), principal)

    def deliver(self) -> None:
        """Hand every answer relayed to this process to the session whose call is waiting for it."""
        for sid, message in self.directory.take(self.tag, self.wall()):
            with self._lock:
                session = self._live.get(sid)
            if session is None:
                log.info("a relayed answer for a session this process no longer holds was dropped")
                continue
            with session.lock:
                exchange = session.conn.receive(message)
                if exchange.origin is not None:
                    session.route(exchange.messages, exchange.origin)

    def count(self, principal: str | None = None) -> int:
        """Live sessions, in all or of one principal."""
        with self._lock:
            return len(self._live) if principal is None else len(self._by_principal.get(principal, ()))

    def __len__(self) -> int:
        return self.count()

    def end(self, sid: str, principal: str) -> bool:
        session = self.get(sid, principal)
        with self._lock:
            ended = session is not None and self._live.get(sid) is session
            if ended and session is not None:
                self._drop(session)
        if ended and session is not None:
            session.close("ended by DELETE")
        if self.directory.shared and (ended or self.known(sid, principal)):
            self.directory.delete(sid)  # every other process then finds it gone
            ended = True
        return ended


class QuestionIds:
    """One session's question ids (`<process tag>-<n>`), each recorded as awaited in the shared directory."""

    def __init__(self, sessions: Sessions, sid: str | None) -> None:
        self.sessions = sessions
        #: None until the session is opened (its id is made after initialize); questions come after that.
        self.sid = sid

    def __iter__(self) -> QuestionIds:
        return self

    def __next__(self) -> str:
        sessions = self.sessions
        question = f"{sessions.tag}-{next(sessions._question_numbers)}"
        if self.sid is not None:
            try:
                sessions.directory.expect(self.sid, question, sessions.wall())
            except DirectoryDown as exc:  # the question is still asked: this process can take its answer itself
                log.warning("a legacy question could not be recorded as awaited: %s", exc)
        return question


def _close_all(ended: list[tuple[Session, str]]) -> None:
    for session, reason in ended:
        session.close(reason)


def session_ids(replica: str | None) -> Callable[[], str]:
    """New session ids; behind a balancer each starts with its replica's name and a dot, so the balancer can
    send a session's next requests back to the replica that holds it (deploy/nginx.conf, "Sticky legacy
    sessions"). Only letters, digits, '-' and '_' of the name are kept: the id stays visible ASCII."""
    prefix = "".join(c for c in (replica or "") if c.isascii() and (c.isalnum() or c in "-_"))[:40]
    if not prefix:
        return lambda: secrets.token_urlsafe(32)
    return lambda: f"{prefix}.{secrets.token_urlsafe(32)}"


def cancel(session: Session, origin: RequestId | None) -> None:
    """Tell the core to drop the shim rounds of `origin` (caller holds the lock)."""
    session.conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": origin}})
