"""/mcp's legacy streams: `initialize` opens a 2025-11-25 session, and a call that must ask the client a question
is held open on its SSE stream while the core's shim asks with `elicitation/create` and waits for the answer.

Limits: calls waiting on the shim per session (`MAX_PENDING_CALLS_PER_SESSION`), the process's held streams
(web/site/admission.py) and the shim's wait (`MRTR_SHIM_WAIT`). A waiting stream writes an SSE comment every
`KEEPALIVE_INTERVAL` seconds, so a client that has gone is noticed by the failed write: its call is cancelled and
its worker thread freed. With a shared session directory, a waiting stream also takes the answers other processes
relayed to it every `RELAY_POLL` seconds.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mrtr import JSON, JSONObject
from mrtr.messages import RequestId, error_response
from mrtr.protocol import request_id_of
from mrtr_stores.sessions import MAILBOX_TTL, MAX_RELAYS_PER_PRINCIPAL, DirectoryDown, NotAwaited, RelaysExhausted
from web.mcp.sessions import Session, Sessions, SessionsFull, cancel
from web.mcp.wire import (
    RETRY_AFTER,
    Accepts,
    HttpOut,
    HttpRefusal,
    McpConfig,
    Refusal,
    empty,
    reply,
    request_id_in,
    sse,
)
from web.site.services import Services

log = logging.getLogger("mrtr.http")

#: Calls of one session waiting on the shim for the client's answers; one more gets 429.
MAX_PENDING_CALLS_PER_SESSION = 8
#: Seconds between SSE comments on a waiting legacy stream: a closed stream is noticed within two.
KEEPALIVE_INTERVAL = 0.5
#: How often a waiting legacy stream looks for answers relayed from other processes (seconds).
RELAY_POLL = 0.1


def initialize(
    services: Services, sessions: Sessions, principal: str, message: JSONObject, accepts: Accepts
) -> HttpOut:
    ids = sessions.request_ids()
    conn = services.server.connect(principal, channel=True, request_ids=ids)
    exchange = conn.receive(message)
    response = exchange.response
    if not response or "result" not in response:
        return reply(exchange, accepts)
    try:
        session = sessions.open(principal, conn)
    except SessionsFull:
        log.warning("legacy initialize refused: %d sessions are live, the limit", sessions.limit)
        raise Refusal(
            HttpRefusal(f"The server has {sessions.limit} live 2025-11-25 sessions, its limit: try again later",
                        http_status=503),
            request_id_in(message), {"Retry-After": str(RETRY_AFTER)},
        ) from None
    if ids is not None:
        ids.sid = session.sid  # its questions, asked from now on, are recorded as awaited under this id
    try:
        sessions.publish(session)
    except DirectoryDown as exc:  # served here all the same; another process will not find it
        log.warning("legacy session could not be shared with the other processes: %s", exc)
    out = reply(exchange, accepts)
    out.headers.append(("Mcp-Session-Id", session.sid))
    return out


def in_session(services: Services, sessions: Sessions, sid: str, principal: str, message: JSON, accepts: Accepts,
               config: McpConfig) -> HttpOut:
    """A message of a 2025-11-25 session, whichever process opened it: an answer to a question another process
    asked is relayed there; anything else is served here, from the session as the directory knows it."""
    elsewhere = sessions.owner_elsewhere(message)
    local = sessions.get(sid, principal)
    # One read of the directory per request: it says whether the session still exists anywhere, and keeps it alive.
    try:
        known = sessions.directory.shared and sessions.known(sid, principal)
    except DirectoryDown:
        if local is None:
            raise
        known = True  # the directory is away: this process still serves the session it holds
        log.warning("legacy session %s… served from this process alone: its directory is unavailable", sid[:8])
    if local is not None and sessions.directory.shared and not known:
        sessions.end(sid, principal)  # ended elsewhere (DELETE reached another process): gone here too
        local = None
    if elsewhere is not None and isinstance(message, dict) and (local is not None or known):
        try:
            sessions.relay(elsewhere, sid, message, principal)
        except NotAwaited as exc:
            log.info("legacy answer refused: %s", exc)
            raise Refusal(HttpRefusal("No question with this id is waiting in this session: answer only the "
                                      "questions the server asked, once each", http_status=400), None) from None
        except RelaysExhausted:
            raise Refusal(HttpRefusal(f"Too many answers relayed for this user ({MAX_RELAYS_PER_PRINCIPAL} per "
                                      f"{MAILBOX_TTL:.0f} s): try again later", http_status=429), None,
                          {"Retry-After": str(int(MAILBOX_TTL))}) from None
        return empty(202)
    if local is None and known:
        local = sessions.adopt(sid, principal,
                               lambda ids: services.server.connect(principal, channel=True, request_ids=ids))
    session = local
    if session is None:
        raise Refusal(
            HttpRefusal("Session not found (it ended, or was never yours): send initialize again", http_status=404),
            request_id_in(message),
        )
    return _continue_session(session, message, accepts, config, sessions)


def _continue_session(session: Session, message: JSON, accepts: Accepts, config: McpConfig,
                      sessions: Sessions | None = None) -> HttpOut:
    is_request = isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message
    with session.lock:
        if is_request and request_id_in(message) in session.streams:
            raise Refusal(
                HttpRefusal("A call with this id is still waiting for the client's answers: use a new id",
                            http_status=400),
                request_id_in(message),
            )
        exchange = session.conn.receive(message)
        if exchange.origin is not None and not is_request:
            session.route(exchange.messages, exchange.origin)  # a client's answer moves its tools/call on
            return empty(202)
        if exchange.response is not None or not exchange.messages:
            return reply(exchange, accepts, legacy=True)
        if len(session.streams) >= MAX_PENDING_CALLS_PER_SESSION:
            cancel(session, exchange.origin)
            raise Refusal(
                HttpRefusal(
                    f"This session already has {MAX_PENDING_CALLS_PER_SESSION} calls waiting for the client's "
                    "answers, its limit: answer or close one of them first",
                    http_status=429,
                ),
                exchange.origin,
            )
        if not accepts.sse:
            cancel(session, exchange.origin)
            raise Refusal(
                HttpRefusal(
                    "This call has to ask the client a question, which needs an SSE response: accept text/event-stream",
                    http_status=406,
                ),
                exchange.origin,
            )
        give_back = _nothing if config.held is None else config.held.take()
        if give_back is None:
            cancel(session, exchange.origin)
            raise Refusal(
                HttpRefusal(
                    f"This server already holds {_limit(config)} calls open for their clients' answers, "
                    "its limit per process: call again shortly",
                    http_status=503,
                ),
                exchange.origin,
                {"Retry-After": str(RETRY_AFTER)},
            )
        inbox: queue.Queue[list[JSONObject]] = queue.Queue()
        session.streams[exchange.origin] = inbox
    held = _HeldCall(session, exchange.origin, give_back)
    wait = config.shim_wait or float(session.conn.server.shim_round_timeout)
    relayed = sessions.deliver if sessions is not None and sessions.directory.shared else None
    return sse(_shim_stream(held, exchange.messages, inbox, wait, relayed), on_close=held.abandon)


def _nothing() -> None:
    pass


def _limit(config: McpConfig) -> int:
    return config.held.limit if config.held is not None else 0


@dataclass
class _HeldCall:
    """A legacy call held open on its stream: it ends exactly once, however the stream ends (answered,
    timed out, closed by a gone client, or closed by the server before its first frame was sent)."""

    session: Session
    origin: RequestId | None
    give_back: Callable[[], None]
    ended: bool = False

    def end(self, finished: bool) -> None:
        session = self.session
        with session.lock:
            if self.ended:
                return
            self.ended = True
            session.streams.pop(self.origin, None)
            if not finished:  # the client went away: a closed stream is a cancellation
                cancel(session, self.origin)
                log.info("legacy call %r on a session of %s cancelled: the client closed its stream",
                         self.origin, session.principal)
        self.give_back()

    def abandon(self) -> None:
        self.end(finished=False)


def _shim_stream(
    held: _HeldCall, first: list[JSONObject], inbox: queue.Queue[list[JSONObject]], wait: float,
    relayed: Callable[[], None] | None = None,
) -> Iterator[JSONObject | None]:
    """The server requests of each shim round, then the final response, on one SSE stream.

    Each round waits at most `wait` seconds for the client's answers; then the core's `expire()`
    gives up on rounds past their deadline, and if its clock disagrees this stream gives up anyway.
    While it waits it yields None (a keep-alive comment) every `KEEPALIVE_INTERVAL` seconds: when
    the client has closed the stream that write fails, the server closes this generator, and the
    `finally` below cancels the call, so the worker thread is free again within about a second. With a shared
    directory (`relayed`), it also takes the answers other processes relayed here every `RELAY_POLL` seconds.
    """
    session, origin = held.session, held.origin
    finished = False
    poll = RELAY_POLL if relayed is not None else KEEPALIVE_INTERVAL
    try:
        yield from first
        while not finished:
            batch = None
            deadline = time.monotonic() + wait
            quiet_since = time.monotonic()
            while batch is None and (remaining := deadline - time.monotonic()) > 0:
                if relayed is not None:
                    try:
                        relayed()
                    except DirectoryDown as exc:
                        log.warning("relayed answers could not be read: %s", exc)
                try:
                    batch = inbox.get(timeout=min(poll, remaining))
                except queue.Empty:
                    if time.monotonic() - quiet_since >= KEEPALIVE_INTERVAL:
                        quiet_since = time.monotonic()
                        yield None
            if batch is None:
                with session.lock:
                    expired = session.conn.expire()
                    for message in expired.messages:
                        session.route([message], request_id_of(message))
                try:
                    batch = inbox.get_nowait()
                except queue.Empty:  # the core's clock says "not yet": give up here, and tell the core
                    error = HttpRefusal(f"The client did not answer within {wait:g} s", http_status=200)
                    batch = [error_response(origin, error.to_error())]
                    with session.lock:
                        cancel(session, origin)
            yield from batch
            finished = any("method" not in m for m in batch)
    finally:
        held.end(finished)
