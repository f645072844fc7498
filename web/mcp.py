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

One function, `handle_http(HttpIn, services, sessions, config) -> HttpOut`, does all of the above
without a framework, and it has two thin callers: the Flask view `endpoint` (the blueprint, the
test client, `url_for('mcp.endpoint')`), and `wsgi_entry`, which app.py installs in front of Flask
so that exactly the path `/mcp` skips Flask's per-request machinery; both send the same bytes
(tests/web/test_mcp_lean.py). One function, `_error_response`, turns every refusal into a
response; bodies come from the core's `ProtocolError.to_error()`. This module never reads
`flask.request` or `current_app` outside the Flask view.

Limits, each a named constant below or an app setting: the body (`MRTR_MAX_BODY`, read at most
that plus one byte whatever the framing, UTF-8 only), live sessions (`MAX_SESSIONS` in all,
`MAX_SESSIONS_PER_PRINCIPAL` each: a principal's new session ends only that principal's least
recently used one), calls waiting on the shim per session (`MAX_PENDING_CALLS_PER_SESSION`),
idle sessions (`SESSION_IDLE_TIMEOUT`) and the shim's wait (`MRTR_SHIM_WAIT`). A waiting legacy
stream writes an SSE comment every `KEEPALIVE_INTERVAL` seconds, so a client that has gone is
noticed by the failed write: its call is cancelled and its worker thread freed.
"""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
import json
import logging
import queue
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.datastructures import Headers, MIMEAccept
from werkzeug.http import HTTP_STATUS_CODES, parse_accept_header, parse_options_header
from werkzeug.wsgi import get_content_length, get_host

from mrtr import (
    INVALID_REQUEST,
    JSON,
    LEGACY_VERSIONS,
    META_VERSION,
    Connection,
    Exchange,
    HeaderMismatch,
    InternalError,
    JSONObject,
    NotUtf8,
    ProtocolError,
    RequestId,
    as_object,
    error_response,
    may_hold_surrogates,
    request_id_of,
    utf8_text,
)
from mrtr_settings.environment import Settings
from mrtr_settings.stores import open_sessions
from mrtr_stores.sessions import DirectoryDown, LocalDirectory, SessionDirectory, process_tag, tag_of
from web import security
from web.admission import HELD_KEY, HeldSlots
from web.services import SETTINGS_KEY, Services, get_services

bp = Blueprint("mcp", __name__)
log = logging.getLogger("mrtr.http")

SESSIONS_KEY = "mrtr.mcp_sessions"
#: Live 2025-11-25 sessions in this process; past it, initialize gets 503 (no one's session is ended).
MAX_SESSIONS = 1000
#: Live sessions of one principal; its next initialize ends its own least recently used session.
MAX_SESSIONS_PER_PRINCIPAL = 20
#: Calls of one session waiting on the shim for the client's answers; one more gets 429.
MAX_PENDING_CALLS_PER_SESSION = 8
#: A legacy session nobody has used for this long is ended (seconds).
SESSION_IDLE_TIMEOUT = 30 * 60.0
#: Seconds between SSE comments on a waiting legacy stream: a closed stream is noticed within two.
KEEPALIVE_INTERVAL = 0.5
#: How often a waiting legacy stream looks for answers relayed from other processes (seconds).
RELAY_POLL = 0.1
#: Retry-After (seconds) on 503 answers: the store is down, or the session table is full.
RETRY_AFTER = 1
#: Bytes read from the request body at a time.
READ_CHUNK = 64 * 1024
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
    request_id: RequestId | None = None
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
                _cancel(self, origin)


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

    def request_ids(self) -> Iterator[str] | None:
        """The ids a new session's questions get: tagged with this process when another process may receive the
        answer (a shared directory), else None (the core's own 1, 2, 3...)."""
        if not self.directory.shared:
            return None
        numbers = self._question_numbers
        return (f"{self.tag}-{next(numbers)}" for _ in itertools.count())

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
        conn = connect(self.request_ids())
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

    def relay(self, tag: str, sid: str, message: JSONObject) -> None:
        self.directory.post(tag, sid, message, self.wall())

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


@bp.record_once
def _setup(state: Any) -> None:
    app: Flask = state.app
    settings: Settings = app.extensions[SETTINGS_KEY]
    app.extensions[SESSIONS_KEY] = Sessions(new_id=session_ids(settings.replica_name),
                                            directory=open_sessions(settings, ttl=SESSION_IDLE_TIMEOUT),
                                            tag=process_tag(settings.replica_name))


# -- the request and the response, without a framework ---------------------------------------


@dataclass(frozen=True)
class HttpIn:
    """One HTTP request to /mcp, as `handle_http` needs it: built from a WSGI environ by both callers.

    `headers` maps lower-case names to values; `stream` is the raw body (read at most the limit
    plus one byte by `_read_body`), `content_length` is None for a chunked body, and
    `input_terminated` says the server ends the stream at the body's end (chunked framing).
    """

    method: str
    headers: Mapping[str, str]
    scheme: str
    remote_addr: str | None
    content_length: int | None
    input_terminated: bool
    stream: IO[bytes]
    environ: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_environ(cls, environ: dict[str, Any]) -> HttpIn:
        return cls(
            method=str(environ.get("REQUEST_METHOD", "GET")).upper(),
            headers=EnvironHeaders(environ),
            scheme=str(environ.get("wsgi.url_scheme", "http")),
            remote_addr=environ.get("REMOTE_ADDR"),
            content_length=get_content_length(environ),
            input_terminated=bool(environ.get("wsgi.input_terminated")),
            # Raw: `_read_body` never reads past the Content-Length, which is all werkzeug's wrapper adds.
            stream=environ["wsgi.input"],
            environ=environ,
        )

    @functools.cached_property
    def host(self) -> str:
        """The Host the client addressed (only an Origin check needs it)."""
        return get_host(self.environ)

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)

    def content_type(self) -> tuple[str, dict[str, str]]:
        """The mimetype (lower case, '' when missing) and its parameters."""
        mimetype, params = parse_options_header(self.headers.get("content-type", ""))
        return mimetype.lower(), params


class EnvironHeaders(Mapping[str, str]):
    """A WSGI environ's request headers by lower-case name, each looked up when asked for.

    Copying them all out per request costs more than the few look-ups /mcp makes, all the more as
    a server's environ may carry its whole process environment too (granian copies `os.environ`
    into every one). An empty Content-Type or Content-Length counts as absent.
    """

    _BARE = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self._environ = environ

    def __getitem__(self, name: str) -> str:
        key = name.upper().replace("-", "_")
        if key in self._BARE:
            value = self._environ.get(key)
            if not value:
                raise KeyError(name)
            return str(value)
        return str(self._environ["HTTP_" + key])

    def __iter__(self) -> Iterator[str]:
        for key, value in self._environ.items():
            if key.startswith("HTTP_") or (key in self._BARE and value):
                yield key.removeprefix("HTTP_").replace("_", "-").lower()

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass
class HttpOut:
    """What to send: the status, every header (security headers are the callers' to add), and a body.

    The body is bytes, or for an SSE stream an iterator of frames whose `close()` (called by the
    server when the client has gone) cancels the call waiting behind it.
    """

    status: int
    headers: list[tuple[str, str]]
    body: bytes | Iterator[bytes] = b""

    def close(self) -> None:
        close = getattr(self.body, "close", None)
        if close is not None:
            close()


@dataclass(frozen=True)
class McpConfig:
    """The settings /mcp reads (from `mrtr_settings.environment`, read once at start-up), plus Flask's body limit."""

    max_body: int | None = None
    allowed_origins: frozenset[str] = frozenset()
    anonymous_principal: str | None = None
    shim_wait: float | None = None
    #: The process's cap on held streams (web/admission.py); None holds any number.
    held: HeldSlots | None = field(default=None, compare=False)

    @classmethod
    def of(cls, app: Flask) -> McpConfig:
        settings: Settings = app.extensions[SETTINGS_KEY]
        origins = settings.allowed_origins
        return cls(
            max_body=int(app.config.get("MAX_CONTENT_LENGTH") or 0) or None,
            allowed_origins=frozenset(o.strip().rstrip("/").lower() for o in origins.split(",") if o.strip()),
            anonymous_principal=settings.anonymous_principal or None,
            shim_wait=settings.shim_wait,
            held=app.extensions.get(HELD_KEY),
        )


@dataclass(frozen=True)
class Accepts:
    json: bool
    sse: bool


# -- the two thin callers: the Flask view, and the WSGI entry installed in front of Flask -------------


@bp.route("/mcp", methods=["POST", "GET", "DELETE"])
def endpoint() -> Response:
    """The Flask caller (the test client, and any app that does not install `wsgi_entry`)."""
    out = handle_http(HttpIn.from_environ(request.environ), get_services(), current_app.extensions[SESSIONS_KEY],
                      McpConfig.of(current_app))
    response = Response(out.body, status=out.status)
    response.headers = Headers(out.headers)  # exactly handle_http's; the app's after_request adds security's
    return response


#: The methods the WSGI entry serves; the rest (HEAD, OPTIONS, ...) go to Flask, which answers them as before.
LEAN_METHODS = frozenset({"POST", "GET", "DELETE"})
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class WsgiEntry:
    """A WSGI app serving exactly the path `/mcp` through `handle_http`, and handing every other request to
    `fallback` (the Flask app's own `wsgi_app`). It skips Flask's per-request machinery (request context,
    URL matching, hooks) and adds web/security.py's headers itself, so the answers are the Flask view's."""

    def __init__(self, app: Flask, fallback: WSGIApp) -> None:
        self.app = app
        self.fallback = fallback
        self._config: McpConfig | None = None  # read at the first request: the settings never change after

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/mcp" or environ.get("REQUEST_METHOD") not in LEAN_METHODS:
            return self.fallback(environ, start_response)
        app = self.app
        config = self._config or McpConfig.of(app)
        self._config = config
        out = handle_http(HttpIn.from_environ(environ), app.extensions["mrtr"], app.extensions[SESSIONS_KEY], config)
        start_response(f"{out.status} {HTTP_STATUS_CODES.get(out.status, 'UNKNOWN').upper()}",
                       security.with_security_headers(out.headers))
        if isinstance(out.body, bytes):
            return [out.body]
        return out.body  # the server calls its close() when the client has gone


def wsgi_entry(app: Flask, fallback: WSGIApp) -> WsgiEntry:
    """`app.wsgi_app = wsgi_entry(app, app.wsgi_app)`: /mcp served beside Flask, everything else by Flask."""
    return WsgiEntry(app, fallback)


def handle_http(req: HttpIn, services: Services, sessions: Sessions, config: McpConfig) -> HttpOut:
    """Everything /mcp does, for either caller: the checks, the core call, and every error as a response."""
    try:
        return _serve(req, services, sessions, config)
    except Refusal as refusal:
        return _error_response(refusal)
    except Exception:  # a bug of ours, never a client's fault; still no traceback on the wire
        log.exception("internal error in the MCP endpoint")
        return _error_response(Refusal(InternalError("Internal error")))


def _serve(req: HttpIn, services: Services, sessions: Sessions, config: McpConfig) -> HttpOut:
    _check_origin(req, config)
    principal = _principal(req, services, config)
    sid = (req.header("Mcp-Session-Id") or "").strip()
    if req.method == "GET":
        raise _refuse(
            "GET is not served here: 2026-07-28 has no standalone stream, and 2025-11-25 "
            "sessions get their messages on the POST that caused them",
            405,
            Allow="POST, DELETE",
        )
    if req.method == "DELETE":
        if not sid:
            raise _refuse(
                "DELETE ends a 2025-11-25 session and needs its Mcp-Session-Id; 2026-07-28 has no sessions",
                405,
                Allow="POST",
            )
        try:
            ended = sessions.end(sid, principal)
        except DirectoryDown as exc:
            log.warning("legacy session %s… could not be ended everywhere: %s", sid[:8], exc)
            raise _refuse("The session store is unavailable: try again shortly", 503,
                          **{"Retry-After": str(RETRY_AFTER)}) from None
        if not ended:
            raise _refuse("Session not found (it ended, or was never yours)", 404)
        return _empty(204)

    mimetype, _ = req.content_type()
    if mimetype != "application/json":
        raise _refuse(f"Content-Type must be application/json, not {mimetype or 'missing'!r}", 415)
    accepts = _accepts(req)
    body = _read_body(req, config)
    return _answer(req, body, accepts, principal, sid, services, sessions, config)


def _answer(req: HttpIn, body: str, accepts: Accepts, principal: str, sid: str, services: Services,
            sessions: Sessions, config: McpConfig) -> HttpOut:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        # The core owns the wording (and the depth and size limits) of parse errors.
        return _reply(Connection(services.server, principal, channel=False, stateless=True).receive_text(body), accepts)

    if _is_modern(req, message):
        _check_headers(req, message, services)
        exchange = services.server.handle(message, principal=principal, check_text=may_hold_surrogates(body))
        return _reply(exchange, accepts)
    if sid:
        try:
            return _in_session(services, sessions, sid, principal, message, accepts, config)
        except DirectoryDown as exc:
            log.warning("legacy session %s… could not be looked up: %s", sid[:8], exc)
            raise Refusal(HttpRefusal("The session store is unavailable: try again shortly", http_status=503),
                          _request_id(message), {"Retry-After": str(RETRY_AFTER)}) from None
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


def _check_origin(req: HttpIn, config: McpConfig) -> None:
    origin = req.header("Origin")
    if origin is None:
        return  # not a browser; the bearer token is what authenticates
    configured = config.allowed_origins
    normalized = origin.strip().rstrip("/").lower()
    own = f"{req.scheme}://{req.host}".lower()
    try:
        host = urlsplit(normalized).hostname
    except ValueError:
        host = None
    if normalized in configured or (normalized == own and host in LOOPBACK_HOSTS):
        return
    raise _refuse(f"Origin {origin!r} is not allowed to call this server", 403)


def _principal(req: HttpIn, services: Services, config: McpConfig) -> str:
    header = req.header("Authorization")
    realm = 'Bearer realm="mrtr-lab"'
    if header is None:
        if config.anonymous_principal:
            return config.anonymous_principal
        raise _refuse("Authorization: Bearer <token> is required", 401, **{"WWW-Authenticate": realm})
    scheme, _, token = header.strip().partition(" ")
    principal = services.principal_for(token.strip()) if scheme.lower() == "bearer" else None
    if principal is None:
        raise _refuse("The bearer token is not valid", 401, **{"WWW-Authenticate": f'{realm}, error="invalid_token"'})
    return principal


def _accepts(req: HttpIn) -> Accepts:
    accepts = _accepts_of(req.header("Accept") or "")
    if not (accepts.json or accepts.sse):
        raise _refuse("Accept must allow application/json or text/event-stream", 406)
    return accepts


@functools.lru_cache(maxsize=256)
def _accepts_of(value: str) -> Accepts:
    """What an Accept value allows. Clients send the same few values over and over, and parsing one
    was an eighth of /mcp's CPU time per request; the cache is bounded, so odd values only evict."""
    if not value.strip():
        return Accepts(json=True, sse=True)
    offered = parse_accept_header(value, MIMEAccept)
    return Accepts(json=offered.quality("application/json") > 0, sse=offered.quality("text/event-stream") > 0)


def _read_body(req: HttpIn, config: McpConfig) -> str:
    """The body as text: at most the limit plus one byte is read, whatever the framing, and only UTF-8.

    Werkzeug's own limit cuts a chunked body at the limit without a word, so the body is read
    here from the WSGI input: with a Content-Length, that many bytes (refused unread if too
    many); without one (chunked), until its end or one byte past the limit.
    """
    limit = config.max_body

    def too_big() -> Refusal:
        return _refuse(f"The request body is larger than the limit of {limit} bytes", 413)

    length = req.content_length
    if limit is not None and length is not None and length > limit:
        raise too_big()
    charset = req.content_type()[1].get("charset")
    if charset is not None and charset.strip().lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise _refuse(f"The body must be UTF-8 JSON, not charset={charset!r}", 415)
    if length is None and not req.input_terminated:
        length = 0  # neither Content-Length nor chunked: the body is empty (RFC 9112, section 6.3)
    stream = req.stream
    budget = length if length is not None else (limit + 1 if limit is not None else None)
    chunks: list[bytes] = []
    total = 0
    try:
        while budget is None or total < budget:
            chunk = stream.read(READ_CHUNK if budget is None else min(READ_CHUNK, budget - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except Exception as exc:  # a disconnect, or broken chunked framing: the server's own exception types
        log.info("request body could not be read: %s: %s", type(exc).__name__, exc)
        raise _refuse("The request body ended early or its framing is broken", 400) from None
    if limit is not None and total > limit:
        raise too_big()
    if length is not None and total < length:
        raise _refuse("The request body ended early", 400)
    try:
        return utf8_text(b"".join(chunks))
    except NotUtf8 as exc:
        raise Refusal(exc) from None


def _is_modern(req: HttpIn, message: JSON) -> bool:
    if not isinstance(message, dict):
        return True  # batches and scalars: the core refuses them with the modern error shapes
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and META_VERSION in meta:
        return True
    version = (req.header("MCP-Protocol-Version") or "").strip()
    return bool(version) and version not in LEGACY_VERSIONS


def _header(req: HttpIn, name: str) -> str | None:
    """A header's value with surrounding whitespace removed and the base64 sentinel form decoded."""
    raw = req.header(name)
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


def _header_form(value: JSON) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _check_headers(req: HttpIn, message: JSON, services: Services) -> None:
    """The 2026-07-28 request headers must mirror the body. Names: any case; values: exact."""
    if not isinstance(message, dict):
        return  # nothing to mirror: the core refuses batches and scalars
    request_id = _request_id(message)
    try:
        params = as_object(message.get("params"))
        meta = as_object(params.get("_meta"))
        if META_VERSION not in meta and "id" in message:
            return  # the core answers 400 -32602 (missing _meta): the body is wrong before any header is
        if META_VERSION in meta and _header(req, "MCP-Protocol-Version") != meta[META_VERSION]:
            raise HeaderMismatch(f"The MCP-Protocol-Version header does not match params._meta[{META_VERSION!r}]")
        method = message.get("method")
        if isinstance(method, str) and _header(req, "Mcp-Method") != method:
            raise HeaderMismatch("The Mcp-Method header is missing or does not match the body's method")
        key = NAMED_METHODS.get(method) if isinstance(method, str) else None
        if key and isinstance(params.get(key), str) and _header(req, "Mcp-Name") != params[key]:
            raise HeaderMismatch(f"The Mcp-Name header is missing or does not match params.{key}")
        if method == "tools/call":
            _check_param_headers(req, params, services)
    except HeaderMismatch as exc:
        raise Refusal(exc, request_id) from None


def _check_param_headers(req: HttpIn, params: JSONObject, services: Services) -> None:
    name = params.get("name")
    tool = services.server.catalog.tools.get(name) if isinstance(name, str) else None
    arguments = as_object(params.get("arguments"))
    properties = as_object(tool.input_schema.get("properties")) if tool else {}
    for prop, schema in properties.items():
        suffix = schema.get("x-mcp-header") if isinstance(schema, dict) else None
        if not isinstance(suffix, str):
            continue
        header = _header(req, f"Mcp-Param-{suffix}")
        if prop in arguments and header != _header_form(arguments[prop]):
            raise HeaderMismatch(f"The Mcp-Param-{suffix} header is missing or does not match arguments.{prop}")
        if prop not in arguments and header is not None:
            raise HeaderMismatch(f"The Mcp-Param-{suffix} header was sent but arguments.{prop} was not")


def _request_id(message: JSON) -> RequestId | None:
    return request_id_of(message) if isinstance(message, dict) else None


# -- legacy sessions ---------------------------------------------------------------------------


def _initialize(
    services: Services, sessions: Sessions, principal: str, message: JSONObject, accepts: Accepts
) -> HttpOut:
    conn = services.server.connect(principal, channel=True, request_ids=sessions.request_ids())
    exchange = conn.receive(message)
    response = exchange.response
    if not response or "result" not in response:
        return _reply(exchange, accepts)
    try:
        session = sessions.open(principal, conn)
    except SessionsFull:
        log.warning("legacy initialize refused: %d sessions are live, the limit", sessions.limit)
        raise Refusal(
            HttpRefusal(f"The server has {sessions.limit} live 2025-11-25 sessions, its limit: try again later",
                        http_status=503),
            _request_id(message), {"Retry-After": str(RETRY_AFTER)},
        ) from None
    try:
        sessions.publish(session)
    except DirectoryDown as exc:  # served here all the same; another process will not find it
        log.warning("legacy session could not be shared with the other processes: %s", exc)
    reply = _reply(exchange, accepts)
    reply.headers.append(("Mcp-Session-Id", session.sid))
    return reply


def _in_session(services: Services, sessions: Sessions, sid: str, principal: str, message: JSON, accepts: Accepts,
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
        sessions.relay(elsewhere, sid, message)
        return _empty(202)
    if local is None and known:
        local = sessions.adopt(sid, principal,
                               lambda ids: services.server.connect(principal, channel=True, request_ids=ids))
    session = local
    if session is None:
        raise Refusal(
            HttpRefusal("Session not found (it ended, or was never yours): send initialize again", http_status=404),
            _request_id(message),
        )
    return _continue_session(session, message, accepts, config, sessions)


def _continue_session(session: Session, message: JSON, accepts: Accepts, config: McpConfig,
                      sessions: Sessions | None = None) -> HttpOut:
    is_request = isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message
    with session.lock:
        if is_request and _request_id(message) in session.streams:
            raise Refusal(
                HttpRefusal("A call with this id is still waiting for the client's answers: use a new id",
                            http_status=400),
                _request_id(message),
            )
        exchange = session.conn.receive(message)
        if exchange.origin is not None and not is_request:
            session.route(exchange.messages, exchange.origin)  # a client's answer moves its tools/call on
            return _empty(202)
        if exchange.response is not None or not exchange.messages:
            return _reply(exchange, accepts, legacy=True)
        if len(session.streams) >= MAX_PENDING_CALLS_PER_SESSION:
            _cancel(session, exchange.origin)
            raise Refusal(
                HttpRefusal(
                    f"This session already has {MAX_PENDING_CALLS_PER_SESSION} calls waiting for the client's "
                    "answers, its limit: answer or close one of them first",
                    http_status=429,
                ),
                exchange.origin,
            )
        if not accepts.sse:
            _cancel(session, exchange.origin)
            raise Refusal(
                HttpRefusal(
                    "This call has to ask the client a question, which needs an SSE response: accept text/event-stream",
                    http_status=406,
                ),
                exchange.origin,
            )
        give_back = _nothing if config.held is None else config.held.take()
        if give_back is None:
            _cancel(session, exchange.origin)
            raise Refusal(
                HttpRefusal(
                    f"This server already holds {_limit(config)} calls open for their clients' answers, "
                    "its limit per process: call again shortly",
                    http_status=503,
                ),
                exchange.origin,
                {"Retry-After": str(RETRY_AFTER)},
            )
        inbox: queue.Queue[list[dict[str, Any]]] = queue.Queue()
        session.streams[exchange.origin] = inbox
    held = _HeldCall(session, exchange.origin, give_back)
    wait = config.shim_wait or float(session.conn.server.shim_round_timeout)
    relayed = sessions.deliver if sessions is not None and sessions.directory.shared else None
    return _sse(_shim_stream(held, exchange.messages, inbox, wait, relayed), on_close=held.abandon)


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
                _cancel(session, self.origin)
                log.info("legacy call %r on a session of %s cancelled: the client closed its stream",
                         self.origin, session.principal)
        self.give_back()

    def abandon(self) -> None:
        self.end(finished=False)


def _shim_stream(
    held: _HeldCall, first: list[dict[str, Any]], inbox: queue.Queue[list[dict[str, Any]]], wait: float,
    relayed: Callable[[], None] | None = None,
) -> Iterator[dict[str, Any] | None]:
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
                    batch = [{"jsonrpc": "2.0", "id": origin, "error": error.to_error()}]
                    with session.lock:
                        _cancel(session, origin)
            yield from batch
            finished = any("method" not in m for m in batch)
    finally:
        held.end(finished)


def _cancel(session: Session, origin: RequestId | None) -> None:
    """Tell the core to drop the shim rounds of `origin` (caller holds the lock)."""
    session.conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": origin}})


# -- responses -----------------------------------------------------------------------------------
# HttpOut headers are complete and in the order Werkzeug's Response wrote them before this module
# built its own (extra headers, then Content-Type and Content-Length), so both callers send the same.

#: What Flask's empty Response always said; kept so the two callers and older clients see the same bytes.
EMPTY_CONTENT_TYPE = "text/html; charset=utf-8"


def _empty(status: int) -> HttpOut:
    # 204 carries no Content-Length (RFC 9110, section 8.6); 202 says its empty body's length.
    length = [] if status == 204 else [("Content-Length", "0")]
    return HttpOut(status, [("Content-Type", EMPTY_CONTENT_TYPE), *length])


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> HttpOut:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return HttpOut(status, [*(headers or {}).items(), ("Content-Type", "application/json"),
                            ("Content-Length", str(len(body)))], body)


class _Frames:
    """An SSE body: one frame per message, a keep-alive comment for each None.

    The server calls `close()` however the response ends (WSGI's contract); it closes the messages
    at once, not at GC time, and then runs `on_close`, even when no frame was ever asked for (a
    generator's `finally` never runs then).
    """

    def __init__(self, messages: Iterator[dict[str, Any] | None] | list[dict[str, Any]],
                 on_close: Callable[[], None] | None = None) -> None:
        self._messages = messages
        self._next = iter(messages).__next__
        self._on_close = on_close

    def __iter__(self) -> _Frames:
        return self

    def __next__(self) -> bytes:
        message = self._next()
        if message is None:
            return b": keep-alive\n\n"  # an SSE comment: clients ignore it; a gone client fails the write
        return f"event: message\ndata: {json.dumps(message, separators=(',', ':'))}\n\n".encode()

    def close(self) -> None:
        close = getattr(self._messages, "close", None)
        if close is not None:
            close()
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()


def _sse(messages: Iterator[dict[str, Any] | None] | list[dict[str, Any]],
         on_close: Callable[[], None] | None = None) -> HttpOut:
    return HttpOut(200, [("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
                         ("Content-Type", "text/event-stream; charset=utf-8")], _Frames(messages, on_close))


def _reply(exchange: Exchange, accepts: Accepts, *, legacy: bool = False) -> HttpOut:
    """JSON or SSE as the client allows; notifications (progress) travel only on SSE."""
    if not exchange.messages:
        return _empty(202)
    response = exchange.response or exchange.messages[-1]
    status = exchange.http_status
    if legacy and response.get("id") is not None and status == 404:
        status = 200  # on a 2025-11-25 session, a 404 would read as "session gone"; a 400 still says "malformed"
    if status == 202:
        status = 200
    if status == 503:  # the redeemed store is down: nothing was done, the client may retry
        return _json(response, status, {"Retry-After": str(RETRY_AFTER)})
    if status != 200 or not accepts.sse or (accepts.json and len(exchange.messages) == 1):
        return _json(response, status)
    return _sse(exchange.messages)


def _error_response(refusal: Refusal) -> HttpOut:
    """The one place a refusal becomes an HTTP response."""
    body = {"jsonrpc": "2.0", "id": refusal.request_id, "error": refusal.error.to_error()}
    return _json(body, refusal.error.http_status, refusal.headers)
