"""The client's Streamable HTTP transport: one POST per message, the answer read as JSON or as an SSE stream.

`HttpTransport` is an `mrtr.Transport`: `send` POSTs a message with the headers the body mirrors
(`mrtr_client.mcp_headers`), and `receive` hands back what came: a JSON body's message at once, an event stream's
messages one by one as they arrive (a 2025-11-25 server may ask its own question on the stream and wait for the answer,
which is POSTed on a connection of its own). It learns from each tools/list it sees which arguments of which valid
tool go into `Mcp-Param-*` headers, keeps a legacy session's `Mcp-Session-Id` and agreed version, and sends
`Authorization: Bearer` when given a token. The POST itself is `mrtr_client.http_wire`'s (the project's one HTTP
client, which the checker uses too): every read is bounded in time and size, redirects are not followed, and the
address connected to may be pinned.
A reply that is no JSON-RPC at all is a `TransportError` naming the HTTP status, never a traceback.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

from mrtr import JSON, JSONObject, as_object
from mrtr.client_errors import TransportError
from mrtr.tooldefs import read_tools

from .http_wire import (
    ACCEPT,
    MAX_BYTES,
    NETWORK_ERRORS,
    USER_AGENT,
    HttpAnswer,
    HttpEndpoint,
    TooLarge,
    failure,
    line_end,
    sse_data,
)
from .mcp_headers import mirrored_headers

__all__ = ["ACCEPT", "MAX_BYTES", "USER_AGENT", "HttpTransport", "describe", "line_end", "parse_messages", "sse_data"]


def parse_messages(raw: bytes, where: str) -> list[JSONObject]:
    """The JSON-RPC messages in a body or an event: one object, or each object of a batch."""
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise TransportError(f"{where} is not JSON: {raw[:80]!r}") from None
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, dict) for v in values):
        raise TransportError(f"{where} is not a JSON-RPC message")
    return values


class HttpTransport:
    """Messages POSTed to one MCP endpoint (`connect_to` pins the address connected to, as `HttpEndpoint` says)."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 30.0, max_bytes: int = MAX_BYTES,
                 connect_to: str | None = None, user_agent: str = USER_AGENT,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.endpoint = HttpEndpoint(url, connect_to=connect_to, timeout=timeout, max_bytes=max_bytes,
                                     user_agent=user_agent, monotonic=monotonic)
        self.url = url
        self.token = token
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._monotonic = monotonic
        self.param_headers: dict[str, dict[str, str]] = {}
        self.session_id: str | None = None
        self.session_version: str | None = None
        self._methods: dict[JSON, str] = {}
        self._inbox: list[JSONObject] = []
        self._streams: list[tuple[HttpAnswer, Iterator[bytes]]] = []

    # -- the Transport protocol ---------------------------------------------------------------------

    def send(self, message: JSONObject) -> None:
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            self._methods[message["id"]] = method
        try:
            exchange = self.endpoint.exchange(json.dumps(message, ensure_ascii=False).encode(),
                                              self.headers_for(message))
        except NETWORK_ERRORS as exc:
            raise TransportError(f"could not POST to {self.url}: {describe(exc)}") from None
        self._take(exchange, message)

    def receive(self, timeout: float) -> JSONObject | None:
        deadline = self._monotonic() + timeout
        while not self._inbox and self._streams:
            exchange, events = self._streams[0]
            exchange.deadline = deadline
            try:
                data = next(events, None)
            except NETWORK_ERRORS:
                data = None  # no more in time, or the stream broke: what it said so far is all there is
            except TooLarge:
                self._streams.pop(0)[0].close()
                raise TransportError(f"the event stream passed {self.max_bytes // 1024} KiB; stopped reading") from None
            if data is None:
                self._streams.pop(0)[0].close()
                continue
            messages = parse_messages(data, "an event on the stream")
            self._queue(messages)
            if any("method" not in m for m in messages):  # the response ends its request's stream
                self._streams.pop(0)[0].close()
        return self._inbox.pop(0) if self._inbox else None

    def close(self) -> None:
        for exchange, _events in self._streams:
            exchange.close()
        self._streams.clear()

    # -- one POST -------------------------------------------------------------------------------------

    def headers_for(self, message: JSONObject) -> dict[str, str]:
        """The headers of this message's POST beyond the fixed ones (`HttpEndpoint.post` adds those)."""
        headers = mirrored_headers(message, self.param_headers, self.session_version)
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _take(self, exchange: HttpAnswer, message: JSONObject) -> None:
        status, ctype = exchange.status, exchange.content_type
        if message.get("method") == "initialize" and exchange.header("Mcp-Session-Id"):
            self.session_id = exchange.header("Mcp-Session-Id")
        if status == 200 and ctype == "text/event-stream":
            self._streams.append((exchange, exchange.events()))
            return
        try:
            raw = exchange.body()
        except TooLarge:
            raise TransportError(f"the response is larger than {self.max_bytes // 1024} KiB; stopped reading") from None
        except NETWORK_ERRORS as exc:
            raise TransportError(f"the response from {self.url} broke off: {describe(exc)}") from None
        finally:
            exchange.close()
        if status == 202 or (not raw.strip() and "id" not in message):
            return
        if status in (401, 403):
            raise TransportError(f"HTTP {status}: the server refused the request's credentials"
                                 f"{'' if self.token else ' (give a bearer token with --token)'}")
        if 300 <= status < 400:
            raise TransportError(f"HTTP {status} redirect to {exchange.header('Location') or 'elsewhere'}: "
                                 "give the final URL")
        if ctype != "application/json" and not raw.strip().startswith((b"{", b"[")):
            raise TransportError(f"HTTP {status} with {ctype or 'no content type'} and no JSON-RPC message: "
                                 f"{raw[:80]!r}")
        self._queue(parse_messages(raw, f"the HTTP {status} body"))

    def _queue(self, messages: list[JSONObject]) -> None:
        for message in messages:
            method = self._methods.pop(message.get("id"), None) if "method" not in message else None
            if method == "tools/list":
                result = message.get("result")
                self.param_headers.update({t.name: t.headers for t in read_tools(result) if t.valid and t.headers})
            if method == "initialize":
                version = as_object(message.get("result")).get("protocolVersion")
                self.session_version = version if isinstance(version, str) else None
            self._inbox.append(message)


def describe(exc: BaseException) -> str:
    """A failure to connect or read, in a few words."""
    kind = failure(exc)
    if kind == "timeout":
        return "no answer in time"
    if kind == "refused":
        return "connection refused (is the server running?)"
    if kind == "unresolved":
        return "the host name does not resolve"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return f"{type(exc).__name__} {exc}".strip()
