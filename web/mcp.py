"""POST /mcp: a thin Streamable HTTP adapter over the `mrtr` core, serving both protocol eras.

What this module owns, and nothing else: HTTP. Origin and bearer token checks, content type,
size and Accept negotiation, the 2026-07-28 request headers (`MCP-Protocol-Version`, `Mcp-Method`,
`Mcp-Name`, `Mcp-Param-*`) checked against the body, JSON or SSE framing, and the 2025-11-25
sessions (`Mcp-Session-Id`) with the SSE streams the legacy shim talks on. Every protocol decision
(era, methods, tickets, errors, the HTTP status hint) is the core's.

Era routing, per request: a body whose `params._meta` names a protocol version, or a non-legacy
`MCP-Protocol-Version` header, is modern and served statelessly (a session id on it is ignored).
Otherwise `initialize` opens a session, a request naming a live session continues it, and any
other legacy traffic is refused with 400 and a reason.

One function, `_error_response`, turns every refusal into a response; bodies come from the core's
`ProtocolError.to_error()`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import queue
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from mrtr import Connection
from mrtr.errors import (
    INVALID_REQUEST,
    HeaderMismatch,
    InternalError,
    ProtocolError,
)
from mrtr.server import LEGACY_VERSIONS, META_VERSION, may_hold_surrogates
from web.services import Services, get_services

bp = Blueprint("mcp", __name__)
log = logging.getLogger("mrtr.http")

SESSIONS_KEY = "mrtr.mcp_sessions"
MAX_SESSIONS = 1000
#: A legacy session nobody has used for this long is ended (seconds).
SESSION_IDLE_TIMEOUT = 30 * 60.0
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
NAMED_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
SENTINEL_PREFIX, SENTINEL_SUFFIX = "=?base64?", "?="


class HttpRefusal(ProtocolError):
    """Refused by the HTTP layer before the core saw the message (auth, origin, framing, sessions)."""

    code = INVALID_REQUEST


@dataclass
class Refusal(Exception):
    """An error response to send: the core-shaped error, the id it answers and any extra headers."""

    error: ProtocolError
    request_id: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def _refuse(message: str, status: int, **headers: str) -> Refusal:
    return Refusal(HttpRefusal(message, http_status=status), headers=headers)


# -- legacy sessions -----------------------------------------------------------------------------


@dataclass
class Session:
    """One 2025-11-25 HTTP session: a core Connection bound to the principal that opened it."""

    sid: str
    principal: str
    conn: Connection
    last_seen: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: tools/call id -> the queue its SSE stream is waiting on (shim requests, then the result)
    streams: dict[Any, queue.Queue[list[dict[str, Any]]]] = field(default_factory=dict)

    def route(self, messages: list[dict[str, Any]], origin: Any) -> None:
        """Hand messages to the stream of `origin` (caller holds the lock). No stream: nobody waits."""
        stream = self.streams.get(origin)
        if stream is not None and messages:
            stream.put(messages)


class Sessions:
    """The live sessions of this process (so several processes need sticky routing).

    Sessions are kept in least-recently-used order: the oldest go when there are more than
    `limit`, and any left unused for `idle_timeout` seconds are ended, as if the client had
    sent DELETE. Clients that come back after that get 404 and initialize again.
    """

    def __init__(self, limit: int = MAX_SESSIONS, idle_timeout: float = SESSION_IDLE_TIMEOUT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.idle_timeout = idle_timeout
        self.clock = clock
        self._lock = threading.Lock()
        self._live: OrderedDict[str, Session] = OrderedDict()

    def _evict(self, now: float) -> None:
        while self._live and (len(self._live) > self.limit
                              or now - next(iter(self._live.values())).last_seen > self.idle_timeout):
            self._live.popitem(last=False)

    def open(self, principal: str, conn: Connection) -> Session:
        now = self.clock()
        session = Session(secrets.token_urlsafe(32), principal, conn, last_seen=now)
        with self._lock:
            self._live[session.sid] = session
            self._evict(now)
        return session

    def get(self, sid: str, principal: str) -> Session | None:
        """The session, if it is live and belongs to `principal` (another principal's id is not found)."""
        now = self.clock()
        with self._lock:
            self._evict(now)
            session = self._live.get(sid)
            if session is None or not secrets.compare_digest(session.principal.encode(), principal.encode()):
                return None
            session.last_seen = now
            self._live.move_to_end(sid)
            return session

    def __len__(self) -> int:
        return len(self._live)

    def end(self, sid: str, principal: str) -> bool:
        session = self.get(sid, principal)
        with self._lock:
            return session is not None and self._live.pop(sid, None) is not None


@bp.record_once
def _setup(state: Any) -> None:
    app: Flask = state.app
    app.extensions[SESSIONS_KEY] = Sessions()


# -- the view ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accepts:
    json: bool
    sse: bool


@bp.route("/mcp", methods=["POST", "GET", "DELETE"])
def endpoint() -> Response:
    try:
        return _serve(get_services())
    except Refusal as refusal:
        return _error_response(refusal)
    except Exception:  # a bug of ours, never a client's fault; still no traceback on the wire
        log.exception("internal error in the MCP endpoint")
        return _error_response(Refusal(InternalError("Internal error")))


def _serve(services: Services) -> Response:
    _check_origin()
    principal = _principal(services)
    sessions: Sessions = current_app.extensions[SESSIONS_KEY]
    sid = request.headers.get("Mcp-Session-Id", "").strip()
    if request.method == "GET":
        raise _refuse(
            "GET is not served here: 2026-07-28 has no standalone stream, and 2025-11-25 "
            "sessions get their messages on the POST that caused them",
            405,
            Allow="POST, DELETE",
        )
    if request.method == "DELETE":
        if not sid:
            raise _refuse(
                "DELETE ends a 2025-11-25 session and needs its Mcp-Session-Id; 2026-07-28 has no sessions",
                405,
                Allow="POST",
            )
        if not sessions.end(sid, principal):
            raise _refuse("Session not found (it ended, or was never yours)", 404)
        return Response(status=204)

    if request.mimetype != "application/json":
        raise _refuse(f"Content-Type must be application/json, not {request.mimetype or 'missing'!r}", 415)
    accepts = _accepts()
    body = _read_body()
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        # The core owns the wording (and the depth and size limits) of parse errors.
        return _reply(Connection(services.server, principal, channel=False, stateless=True).receive_text(body), accepts)

    if _is_modern(message):
        _check_headers(message, services)
        exchange = services.server.handle(message, principal=principal, check_text=may_hold_surrogates(body))
        return _reply(exchange, accepts)
    if sid:
        session = sessions.get(sid, principal)
        if session is None:
            raise Refusal(
                HttpRefusal("Session not found (it ended, or was never yours): send initialize again", http_status=404),
                _request_id(message),
            )
        return _continue_session(session, message, accepts)
    if isinstance(message, dict) and message.get("method") == "initialize":
        return _initialize(services, sessions, principal, message, accepts)
    raise Refusal(
        HttpRefusal(
            "This looks like 2025-11-25 traffic without a session: send initialize first and echo its "
            "Mcp-Session-Id, or send 2026-07-28 requests with params._meta and the MCP-Protocol-Version header",
            http_status=400,
        ),
        _request_id(message),
    )


# -- checks before the core --------------------------------------------------------------------


def _check_origin() -> None:
    origin = request.headers.get("Origin")
    if origin is None:
        return  # not a browser; the bearer token is what authenticates
    configured = {
        o.strip().rstrip("/").lower()
        for o in str(current_app.config.get("MRTR_ALLOWED_ORIGINS") or "").split(",")
        if o.strip()
    }
    normalized = origin.strip().rstrip("/").lower()
    own = f"{request.scheme}://{request.host}".lower()
    try:
        host = urlsplit(normalized).hostname
    except ValueError:
        host = None
    if normalized in configured or (normalized == own and host in LOOPBACK_HOSTS):
        return
    raise _refuse(f"Origin {origin!r} is not allowed to call this server", 403)


def _principal(services: Services) -> str:
    header = request.headers.get("Authorization")
    realm = 'Bearer realm="mrtr-lab"'
    if header is None:
        anonymous = current_app.config.get("MRTR_ANONYMOUS_PRINCIPAL")
        if anonymous:
            return str(anonymous)
        raise _refuse("Authorization: Bearer <token> is required", 401, **{"WWW-Authenticate": realm})
    scheme, _, token = header.strip().partition(" ")
    principal = services.principal_for(token.strip()) if scheme.lower() == "bearer" else None
    if principal is None:
        raise _refuse("The bearer token is not valid", 401, **{"WWW-Authenticate": f'{realm}, error="invalid_token"'})
    return principal


def _accepts() -> Accepts:
    if not request.headers.get("Accept", "").strip():
        return Accepts(json=True, sse=True)
    offered = request.accept_mimetypes
    accepts = Accepts(json=offered.quality("application/json") > 0, sse=offered.quality("text/event-stream") > 0)
    if not (accepts.json or accepts.sse):
        raise _refuse("Accept must allow application/json or text/event-stream", 406)
    return accepts


def _read_body() -> bytes:
    limit = current_app.config.get("MAX_CONTENT_LENGTH")

    def too_big() -> Refusal:
        return _refuse(f"The request body is larger than the limit of {limit} bytes", 413)

    if limit is not None and request.content_length is not None and request.content_length > limit:
        raise too_big()
    try:
        return request.get_data(cache=False)
    except RequestEntityTooLarge:
        raise too_big() from None
    except ClientDisconnected:
        raise _refuse("The request body ended early", 400) from None


def _is_modern(message: Any) -> bool:
    if not isinstance(message, dict):
        return True  # batches and scalars: the core refuses them with the modern error shapes
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and META_VERSION in meta:
        return True
    version = request.headers.get("MCP-Protocol-Version", "").strip()
    return bool(version) and version not in LEGACY_VERSIONS


def _header(name: str) -> str | None:
    """A header's value with surrounding whitespace removed and the base64 sentinel form decoded."""
    raw = request.headers.get(name)
    if raw is None:
        return None
    value = raw.strip()
    if (
        value.startswith(SENTINEL_PREFIX)
        and value.endswith(SENTINEL_SUFFIX)
        and len(value) >= len(SENTINEL_PREFIX) + len(SENTINEL_SUFFIX)
    ):
        encoded = value[len(SENTINEL_PREFIX) : -len(SENTINEL_SUFFIX)]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise HeaderMismatch(f"The {name} header is not valid base64 inside =?base64?...?=") from None
    return value


def _header_form(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _check_headers(message: Any, services: Services) -> None:
    """The 2026-07-28 request headers must mirror the body. Names: any case; values: exact."""
    if not isinstance(message, dict):
        return  # nothing to mirror: the core refuses batches and scalars
    request_id = _request_id(message)
    try:
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        if META_VERSION in meta and _header("MCP-Protocol-Version") != meta[META_VERSION]:
            raise HeaderMismatch(f"The MCP-Protocol-Version header does not match params._meta[{META_VERSION!r}]")
        method = message.get("method")
        if isinstance(method, str) and _header("Mcp-Method") != method:
            raise HeaderMismatch("The Mcp-Method header is missing or does not match the body's method")
        key = NAMED_METHODS.get(method) if isinstance(method, str) else None
        if key and isinstance(params.get(key), str) and _header("Mcp-Name") != params[key]:
            raise HeaderMismatch(f"The Mcp-Name header is missing or does not match params.{key}")
        if method == "tools/call":
            _check_param_headers(params, services)
    except HeaderMismatch as exc:
        raise Refusal(exc, request_id) from None


def _check_param_headers(params: dict[str, Any], services: Services) -> None:
    tool = services.server.catalog.tools.get(params.get("name")) if isinstance(params.get("name"), str) else None
    arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
    properties = tool.input_schema.get("properties", {}) if tool else {}
    for prop, schema in properties.items():
        suffix = schema.get("x-mcp-header") if isinstance(schema, dict) else None
        if not isinstance(suffix, str):
            continue
        header = _header(f"Mcp-Param-{suffix}")
        if prop in arguments and header != _header_form(arguments[prop]):
            raise HeaderMismatch(f"The Mcp-Param-{suffix} header is missing or does not match arguments.{prop}")
        if prop not in arguments and header is not None:
            raise HeaderMismatch(f"The Mcp-Param-{suffix} header was sent but arguments.{prop} was not")


def _request_id(message: Any) -> Any:
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


# -- legacy sessions ---------------------------------------------------------------------------


def _initialize(
    services: Services, sessions: Sessions, principal: str, message: dict[str, Any], accepts: Accepts
) -> Response:
    conn = services.server.connect(principal, channel=True)
    exchange = conn.receive(message)
    response = exchange.response
    if not response or "result" not in response:
        return _reply(exchange, accepts)
    session = sessions.open(principal, conn)
    reply = _reply(exchange, accepts)
    reply.headers["Mcp-Session-Id"] = session.sid
    return reply


def _continue_session(session: Session, message: Any, accepts: Accepts) -> Response:
    is_request = isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message
    with session.lock:
        exchange = session.conn.receive(message)
        if exchange.origin is not None and not is_request:
            session.route(exchange.messages, exchange.origin)  # a client's answer moves its tools/call on
            return Response(status=202)
        if exchange.response is not None or not exchange.messages:
            return _reply(exchange, accepts, legacy=True)
        if not accepts.sse:
            _cancel(session, exchange.origin)
            raise Refusal(
                HttpRefusal(
                    "This call has to ask the client a question, which needs an SSE response: accept text/event-stream",
                    http_status=406,
                ),
                exchange.origin,
            )
        inbox: queue.Queue[list[dict[str, Any]]] = queue.Queue()
        session.streams[exchange.origin] = inbox
    wait = float(current_app.config.get("MRTR_SHIM_WAIT") or session.conn.server.shim_round_timeout)
    return _sse(_shim_stream(session, exchange.origin, exchange.messages, inbox, wait))


def _shim_stream(
    session: Session, origin: Any, first: list[dict[str, Any]], inbox: queue.Queue[list[dict[str, Any]]], wait: float
) -> Iterator[dict[str, Any]]:
    """The server requests of each shim round, then the final response, on one SSE stream.

    Each round waits at most `wait` seconds for the client's answers; then the core's `expire()`
    gives up on rounds past their deadline, and if its clock disagrees this stream gives up anyway.
    """
    finished = False
    try:
        yield from first
        while not finished:
            try:
                batch = inbox.get(timeout=wait)
            except queue.Empty:
                with session.lock:
                    expired = session.conn.expire()
                    for message in expired.messages:
                        session.route([message], message.get("id"))
                try:
                    batch = inbox.get_nowait()
                except queue.Empty:  # the core's clock says "not yet": give up here, and tell the core
                    error = HttpRefusal(f"The client did not answer within {wait:g} s", http_status=200)
                    batch = [{"jsonrpc": "2.0", "id": origin, "error": error.to_error()}]
                    with session.lock:
                        _cancel(session, origin)
            yield from batch
            finished = any("method" not in m for m in batch)
    finally:
        with session.lock:
            session.streams.pop(origin, None)
            if not finished:  # the client went away: a closed stream is a cancellation
                _cancel(session, origin)


def _cancel(session: Session, origin: Any) -> None:
    """Tell the core to drop the shim rounds of `origin` (caller holds the lock)."""
    session.conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": origin}})


# -- responses -----------------------------------------------------------------------------------


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(payload, separators=(",", ":")), status=status, headers=headers, mimetype="application/json"
    )


def _sse(messages: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> Response:
    def frames() -> Iterator[str]:
        for message in messages:
            yield f"event: message\ndata: {json.dumps(message, separators=(',', ':'))}\n\n"

    return Response(
        frames(),
        status=200,
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _reply(exchange: Any, accepts: Accepts, *, legacy: bool = False) -> Response:
    """JSON or SSE as the client allows; notifications (progress) travel only on SSE."""
    if not exchange.messages:
        return Response(status=202)
    response = exchange.response or exchange.messages[-1]
    status = exchange.http_status
    if legacy and response.get("id") is not None:
        status = 200  # on a 2025-11-25 session, a 404 would read as "session gone"
    if status == 202:
        status = 200
    if status != 200 or not accepts.sse or (accepts.json and len(exchange.messages) == 1):
        return _json(response, status)
    return _sse(exchange.messages)


def _error_response(refusal: Refusal) -> Response:
    """The one place a refusal becomes an HTTP response."""
    body = {"jsonrpc": "2.0", "id": refusal.request_id, "error": refusal.error.to_error()}
    return _json(body, refusal.error.http_status, refusal.headers)
