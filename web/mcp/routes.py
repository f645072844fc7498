"""POST /mcp: a thin Streamable HTTP adapter over the `mrtr` core, serving both protocol eras.

What this module owns, and nothing else: HTTP. Origin and bearer token checks, content type,
size and Accept negotiation, the 2026-07-28 request headers (`MCP-Protocol-Version`, `Mcp-Method`,
`Mcp-Name`, `Mcp-Param-*`) checked against the body, and the routing of each request to its era. Every
protocol decision (era, methods, tickets, errors, the HTTP status hint) is the core's. Beside it, one job
each: the request and response types and the one place a refusal becomes a response (web.mcp.wire), the
2025-11-25 sessions (web.mcp.sessions) and the SSE streams the legacy shim talks on (web.mcp.legacy).

Era routing, per request: a body whose `params._meta` names a protocol version, or a non-legacy
`MCP-Protocol-Version` header, is modern and served statelessly (a session id on it is ignored).
Otherwise `initialize` opens a session, a request naming a live session continues it, and any
other legacy traffic is refused with 400 and a reason.

One function, `handle_http(HttpIn, services, sessions, config) -> HttpOut`, does all of the above
without a framework, and it has two thin callers: the Flask view `endpoint` (the blueprint, the
test client, `url_for('mcp.endpoint')`), and `wsgi_entry`, which app.py installs in front of Flask
so that exactly the path `/mcp` skips Flask's per-request machinery; both send the same bytes
(tests/web/test_mcp_lean.py). This module never reads `flask.request` or `current_app` outside the
Flask view. The body is read at most `MRTR_MAX_BODY` plus one byte, whatever the framing, UTF-8 only.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.datastructures import Headers, MIMEAccept
from werkzeug.http import HTTP_STATUS_CODES, parse_accept_header

from mrtr import JSON, Connection, JSONObject, as_object
from mrtr.errors import HeaderMismatch, InternalError
from mrtr.protocol import LEGACY_VERSIONS, MAX_JSON_DEPTH, META_VERSION
from mrtr.wire import NotUtf8, json_loads, may_hold_surrogates, nesting_bound, utf8_text
from mrtr_settings.environment import Settings
from mrtr_settings.stores import open_sessions
from mrtr_stores.sessions import DirectoryDown, process_tag
from web.mcp.legacy import in_session, initialize
from web.mcp.sessions import SESSION_IDLE_TIMEOUT, Sessions, session_ids
from web.mcp.wire import (
    RETRY_AFTER,
    Accepts,
    HttpIn,
    HttpOut,
    HttpRefusal,
    McpConfig,
    Refusal,
    empty,
    refusal_response,
    refuse,
    reply,
    request_id_in,
)
from web.site import security
from web.site.services import SETTINGS_KEY, Services, get_services

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask.blueprints import BlueprintSetupState

bp = Blueprint("mcp", __name__)
log = logging.getLogger("mrtr.http")
SESSIONS_KEY = "mrtr.mcp_sessions"
#: Bytes read from the request body at a time.
READ_CHUNK = 64 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
NAMED_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
SENTINEL_PREFIX, SENTINEL_SUFFIX = "=?base64?", "?="


@bp.record_once
def _setup(state: BlueprintSetupState) -> None:
    app = state.app
    settings: Settings = app.extensions[SETTINGS_KEY]
    app.extensions[SESSIONS_KEY] = Sessions(new_id=session_ids(settings.replica_name),
                                            directory=open_sessions(settings, ttl=SESSION_IDLE_TIMEOUT),
                                            tag=process_tag(settings.replica_name))


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


class WsgiEntry:
    """A WSGI app serving exactly the path `/mcp` through `handle_http`, and handing every other request to
    `fallback` (the Flask app's own `wsgi_app`). It skips Flask's per-request machinery (request context,
    URL matching, hooks) and adds web/site/security.py's headers itself, so the answers are the Flask view's."""

    def __init__(self, app: Flask, fallback: WSGIApplication) -> None:
        self.app = app
        self.fallback = fallback
        self._config: McpConfig | None = None  # read at the first request: the settings never change after

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/mcp" or environ.get("REQUEST_METHOD") not in LEAN_METHODS:
            return self.fallback(environ, start_response)
        app = self.app
        config = self._config or McpConfig.of(app)
        self._config = config
        out = handle_http(HttpIn.from_environ(environ), app.extensions["mrtr"], app.extensions[SESSIONS_KEY], config)
        start_response(_status_line(out.status), _with_security_headers(out.headers))
        if isinstance(out.body, bytes):
            return [out.body]
        return out.body  # the server calls its close() when the client has gone


@functools.lru_cache(maxsize=64)
def _status_line(status: int) -> str:
    return f"{status} {HTTP_STATUS_CODES.get(status, 'UNKNOWN').upper()}"


#: web/site/security.py's headers for /mcp (framed by nobody), worked out once: they never depend on the request.
_SECURITY_HEADERS = security.security_headers(None)
_SECURITY_NAMES = frozenset(name.lower() for name, _ in _SECURITY_HEADERS)


def _with_security_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`security.with_security_headers(headers)`: when no header of the response is a security one (a JSON
    answer sets only its type, length and perhaps Retry-After), that is the list with them appended."""
    if any(name.lower() in _SECURITY_NAMES for name, _ in headers):
        return security.with_security_headers(headers)
    return headers + _SECURITY_HEADERS


def wsgi_entry(app: Flask, fallback: WSGIApplication) -> WsgiEntry:
    """`app.wsgi_app = wsgi_entry(app, app.wsgi_app)`: /mcp served beside Flask, everything else by Flask."""
    return WsgiEntry(app, fallback)


# -- the request, whatever its era ---------------------------------------------------------------


def handle_http(req: HttpIn, services: Services, sessions: Sessions, config: McpConfig) -> HttpOut:
    """Everything /mcp does, for either caller: the checks, the core call, and every error as a response."""
    try:
        return _serve(req, services, sessions, config)
    except Refusal as refusal:
        return refusal_response(refusal)
    except Exception:  # a bug of ours, never a client's fault; still no traceback on the wire
        log.exception("internal error in the MCP endpoint")
        return refusal_response(Refusal(InternalError("Internal error")))


def _serve(req: HttpIn, services: Services, sessions: Sessions, config: McpConfig) -> HttpOut:
    _check_origin(req, config)
    principal = _principal(req, services, config)
    sid = (req.header("Mcp-Session-Id") or "").strip()
    if req.method == "GET":
        raise refuse(
            "GET is not served here: 2026-07-28 has no standalone stream, and 2025-11-25 "
            "sessions get their messages on the POST that caused them",
            405,
            Allow="POST, DELETE",
        )
    if req.method == "DELETE":
        if not sid:
            raise refuse(
                "DELETE ends a 2025-11-25 session and needs its Mcp-Session-Id; 2026-07-28 has no sessions",
                405,
                Allow="POST",
            )
        try:
            ended = sessions.end(sid, principal)
        except DirectoryDown as exc:
            log.warning("legacy session %s… could not be ended everywhere: %s", sid[:8], exc)
            raise refuse("The session store is unavailable: try again shortly", 503,
                          **{"Retry-After": str(RETRY_AFTER)}) from None
        if not ended:
            raise refuse("Session not found (it ended, or was never yours)", 404)
        return empty(204)

    mimetype, _ = req.content_type()
    if mimetype != "application/json":
        raise refuse(f"Content-Type must be application/json, not {mimetype or 'missing'!r}", 415)
    accepts = _accepts(req)
    body = _read_body(req, config)
    return _answer(req, body, accepts, principal, sid, services, sessions, config)


def _answer(req: HttpIn, body: str, accepts: Accepts, principal: str, sid: str, services: Services,
            sessions: Sessions, config: McpConfig) -> HttpOut:
    try:
        message = json_loads(body)  # the one decode of the request (mrtr.wire: msgspec, or json where it differs)
    except (ValueError, RecursionError):
        # The core owns the wording (and the depth and size limits) of parse errors.
        return reply(Connection(services.server, principal, channel=False, stateless=True).receive_text(body), accepts)

    if _is_modern(req, message):
        _check_headers(req, message, services)
        exchange = services.server.handle(message, principal=principal, check_text=may_hold_surrogates(body),
                                          check_depth=nesting_bound(body) > MAX_JSON_DEPTH)
        return reply(exchange, accepts)
    if sid:
        try:
            return in_session(services, sessions, sid, principal, message, accepts, config)
        except DirectoryDown as exc:
            log.warning("legacy session %s… could not be looked up: %s", sid[:8], exc)
            raise Refusal(HttpRefusal("The session store is unavailable: try again shortly", http_status=503),
                          request_id_in(message), {"Retry-After": str(RETRY_AFTER)}) from None
    if isinstance(message, dict) and message.get("method") == "initialize":
        return initialize(services, sessions, principal, message, accepts)
    raise Refusal(
        HttpRefusal(
            "This looks like 2025-11-25 traffic without a session: send initialize first and echo its "
            "Mcp-Session-Id, or send 2026-07-28 requests with params._meta and the MCP-Protocol-Version header",
            http_status=400,
        ),
        request_id_in(message),
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
    raise refuse(f"Origin {origin!r} is not allowed to call this server", 403)


def _principal(req: HttpIn, services: Services, config: McpConfig) -> str:
    header = req.header("Authorization")
    realm = 'Bearer realm="mrtr-lab"'
    if header is None:
        if config.anonymous_principal:
            return config.anonymous_principal
        raise refuse("Authorization: Bearer <token> is required", 401, **{"WWW-Authenticate": realm})
    scheme, _, token = header.strip().partition(" ")
    principal = services.principal_for(token.strip()) if scheme.lower() == "bearer" else None
    if principal is None:
        raise refuse("The bearer token is not valid", 401, **{"WWW-Authenticate": f'{realm}, error="invalid_token"'})
    return principal


def _accepts(req: HttpIn) -> Accepts:
    accepts = _accepts_of(req.header("Accept") or "")
    if not (accepts.json or accepts.sse):
        raise refuse("Accept must allow application/json or text/event-stream", 406)
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
        return refuse(f"The request body is larger than the limit of {limit} bytes", 413)

    length = req.content_length
    if limit is not None and length is not None and length > limit:
        raise too_big()
    charset = req.content_type()[1].get("charset")
    if charset is not None and charset.strip().lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise refuse(f"The body must be UTF-8 JSON, not charset={charset!r}", 415)
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
        raise refuse("The request body ended early or its framing is broken", 400) from None
    if limit is not None and total > limit:
        raise too_big()
    if length is not None and total < length:
        raise refuse("The request body ended early", 400)
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
    request_id = request_id_in(message)
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
    if tool is None or not tool.header_params:
        return
    arguments = as_object(params.get("arguments"))
    for prop, suffix in tool.header_params:
        header = _header(req, f"Mcp-Param-{suffix}")
        if prop in arguments and header != _header_form(arguments[prop]):
            raise HeaderMismatch(f"The Mcp-Param-{suffix} header is missing or does not match arguments.{prop}")
        if prop not in arguments and header is not None:
            raise HeaderMismatch(f"The Mcp-Param-{suffix} header was sent but arguments.{prop} was not")
