"""/mcp's request and response without a framework: what `handle_http` reads (`HttpIn`, headers looked up in the
WSGI environ), what it sends (`HttpOut`: JSON, or SSE frames whose close cancels the call behind them), the settings
it reads (`McpConfig`), and the one function, `refusal_response`, that turns every refusal into a response (bodies
from the core's `ProtocolError.to_error()`). Never reads `flask.request`.

HttpOut headers are complete and in the order Werkzeug's Response wrote them before /mcp built its own (extra
headers, then Content-Type and Content-Length), so the Flask view and the WSGI entry send the same bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import IO, TYPE_CHECKING

from flask import Flask
from werkzeug.http import parse_options_header
from werkzeug.wsgi import get_content_length, get_host

from mrtr import JSON, Exchange, JSONObject, ProtocolError
from mrtr.errors import INVALID_REQUEST
from mrtr.messages import RequestId, error_response
from mrtr.protocol import request_id_of
from mrtr.wire import json_dumps
from mrtr_settings.environment import Settings
from web.site.admission import HELD_KEY, HeldSlots
from web.site.services import SETTINGS_KEY

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

#: Retry-After (seconds) on 503 answers: the store is down, or the session table is full.
RETRY_AFTER = 1
#: What Flask's empty Response always said; kept so the two callers and older clients see the same bytes.
EMPTY_CONTENT_TYPE = "text/html; charset=utf-8"


# -- refusals ------------------------------------------------------------------------------------


class HttpRefusal(ProtocolError):
    """Refused by the HTTP layer before the core saw the message (auth, origin, framing, sessions)."""

    code = INVALID_REQUEST


@dataclass
class Refusal(Exception):
    """An error response to send: the core-shaped error, the id it answers and any extra headers."""

    error: ProtocolError
    request_id: RequestId | None = None
    headers: dict[str, str] = field(default_factory=dict)


def refuse(message: str, status: int, **headers: str) -> Refusal:
    return Refusal(HttpRefusal(message, http_status=status), headers=headers)


def request_id_in(message: JSON) -> RequestId | None:
    return request_id_of(message) if isinstance(message, dict) else None


# -- the request and the response, without a framework ---------------------------------------


@dataclass(eq=False)  # not frozen: a frozen record's __init__ set each field through object.__setattr__, twice the cost
class HttpIn:
    """One HTTP request to /mcp, as `handle_http` needs it: built from a WSGI environ by both callers; read, never
    changed.

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
    environ: WSGIEnvironment = field(repr=False, compare=False)

    @classmethod
    def from_environ(cls, environ: WSGIEnvironment) -> HttpIn:
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
        """`headers.get(name.lower(), default)`, with the environ key of each name worked out once per process."""
        key = _environ_key(name)
        value = self.environ.get(key)
        if value is None or (not value and key in EnvironHeaders._BARE):
            return default
        return str(value)

    def content_type(self) -> tuple[str, Mapping[str, str]]:
        """The mimetype (lower case, '' when missing) and its parameters (read-only: shared between requests)."""
        return _parsed_content_type(str(self.environ.get("CONTENT_TYPE") or ""))


@functools.lru_cache(maxsize=64)
def _parsed_content_type(value: str) -> tuple[str, Mapping[str, str]]:
    """A Content-Type value parsed once per process: clients send the same one or two over and over, and parsing
    it was a tenth of the adapter's instructions per request. Bounded, so odd values only evict."""
    mimetype, params = parse_options_header(value)
    return mimetype.lower(), MappingProxyType(params)


@functools.lru_cache(maxsize=256)
def _environ_key(name: str) -> str:
    """Where a WSGI environ keeps header `name`: CONTENT_TYPE and CONTENT_LENGTH bare, the rest under HTTP_.
    The names are /mcp's own and its tools' `Mcp-Param-*`; the cache is bounded all the same."""
    key = name.upper().replace("-", "_")
    return key if key in EnvironHeaders._BARE else "HTTP_" + key


class EnvironHeaders(Mapping[str, str]):
    """A WSGI environ's request headers by lower-case name, each looked up when asked for.

    Copying them all out per request costs more than the few look-ups /mcp makes, all the more as
    a server's environ may carry its whole process environment too (granian copies `os.environ`
    into every one). An empty Content-Type or Content-Length counts as absent.
    """

    _BARE = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})

    def __init__(self, environ: WSGIEnvironment) -> None:
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
    #: The process's cap on held streams (web/site/admission.py); None holds any number.
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


# -- responses -----------------------------------------------------------------------------------


def empty(status: int) -> HttpOut:
    # 204 carries no Content-Length (RFC 9110, section 8.6); 202 says its empty body's length.
    length = [] if status == 204 else [("Content-Length", "0")]
    return HttpOut(status, [("Content-Type", EMPTY_CONTENT_TYPE), *length])


_JSON_TYPE = ("Content-Type", "application/json")


def json_response(payload: JSON, status: int = 200, headers: dict[str, str] | None = None) -> HttpOut:
    body = json_dumps(payload)  # the one encode of the request (compact UTF-8; mrtr.wire)
    length = ("Content-Length", str(len(body)))
    return HttpOut(status, [*headers.items(), _JSON_TYPE, length] if headers else [_JSON_TYPE, length], body)


class Frames:
    """An SSE body: one frame per message, a keep-alive comment for each None.

    The server calls `close()` however the response ends (WSGI's contract); it closes the messages
    at once, not at GC time, and then runs `on_close`, even when no frame was ever asked for (a
    generator's `finally` never runs then).
    """

    def __init__(self, messages: Iterator[JSONObject | None] | list[JSONObject],
                 on_close: Callable[[], None] | None = None) -> None:
        self._messages = messages
        self._next = iter(messages).__next__
        self._on_close = on_close

    def __iter__(self) -> Frames:
        return self

    def __next__(self) -> bytes:
        message = self._next()
        if message is None:
            return b": keep-alive\n\n"  # an SSE comment: clients ignore it; a gone client fails the write
        return b"event: message\ndata: " + json_dumps(message) + b"\n\n"

    def close(self) -> None:
        close = getattr(self._messages, "close", None)
        if close is not None:
            close()
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()


def sse(messages: Iterator[JSONObject | None] | list[JSONObject],
         on_close: Callable[[], None] | None = None) -> HttpOut:
    return HttpOut(200, [("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
                         ("Content-Type", "text/event-stream; charset=utf-8")], Frames(messages, on_close))


def reply(exchange: Exchange, accepts: Accepts, *, legacy: bool = False) -> HttpOut:
    """JSON or SSE as the client allows; notifications (progress) travel only on SSE."""
    if not exchange.messages:
        return empty(202)
    response = exchange.response or exchange.messages[-1]
    status = exchange.http_status
    if legacy and response.get("id") is not None and status == 404:
        status = 200  # on a 2025-11-25 session, a 404 would read as "session gone"; a 400 still says "malformed"
    if status == 202:
        status = 200
    if status == 503:  # the redeemed store is down: nothing was done, the client may retry
        return json_response(response, status, {"Retry-After": str(RETRY_AFTER)})
    if status != 200 or not accepts.sse or (accepts.json and len(exchange.messages) == 1):
        return json_response(response, status)
    return sse(exchange.messages)


def refusal_response(refusal: Refusal) -> HttpOut:
    """The one place a refusal becomes an HTTP response."""
    body = error_response(refusal.request_id, refusal.error.to_error())
    return json_response(body, refusal.error.http_status, refusal.headers)
