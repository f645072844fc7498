"""The client's Streamable HTTP transport: one POST per message, the answer read as JSON or as an SSE stream.

`HttpTransport` is an `mrtr.Transport`: `send` POSTs a message with the headers the body mirrors
(`mrtr_client.mcp_headers`), and `receive` hands back what came: a JSON body's message at once, an event stream's
messages one by one as they arrive (a 2025-11-25 server may ask its own question on the stream and wait for the answer,
which is POSTed on a connection of its own). It learns from each tools/list it sees which arguments of which valid
tool go into `Mcp-Param-*` headers, keeps a legacy session's `Mcp-Session-Id` and agreed version, and sends
`Authorization: Bearer` when given a token. Every read is bounded in time and size; redirects are not followed.
A reply that is no JSON-RPC at all is a `TransportError` naming the HTTP status, never a traceback.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

from mrtr import JSON, JSONObject, as_object
from mrtr.client_errors import TransportError
from mrtr.tooldefs import read_tools

from .mcp_headers import mirrored_headers

ACCEPT = "application/json, text/event-stream"
USER_AGENT = "mrtr-call/1"
MAX_BYTES = 4 * 1024 * 1024


def line_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first SSE line ends (CRLF, LF or CR) and where the next begins; None while it may go on."""
    for i, byte in enumerate(buffer):
        if byte == 0x0A:
            return i, i + 1
        if byte == 0x0D:
            if i + 1 == len(buffer):
                return None  # maybe a CRLF split across chunks
            return i, i + (2 if buffer[i + 1] == 0x0A else 1)
    return None


def sse_data(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The data of each event of an SSE stream, as the chunks arrive (`event:`, `id:`, `retry:` and comments are
    dropped: a 2026-07-28 stream carries JSON-RPC in `data:` and nothing else a client needs)."""
    buffer, data_lines = b"", []
    for chunk in chunks:
        buffer += chunk
        while (cut := line_end(buffer)) is not None:
            line, buffer = buffer[: cut[0]], buffer[cut[1]:]
            if line.startswith(b"data:"):
                data_lines.append(line[5:].removeprefix(b" "))
            elif not line and data_lines:
                yield b"\n".join(data_lines)
                data_lines = []
    if data_lines:
        yield b"\n".join(data_lines)


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
    """Messages POSTed to one MCP endpoint."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 30.0, max_bytes: int = MAX_BYTES,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the server must be an http:// or https:// URL, got {url[:80]!r}")
        self.url = url
        self._parts = parts
        self._path = urlunsplit(("", "", parts.path or "/", parts.query, ""))
        self.token = token
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._monotonic = monotonic
        self.param_headers: dict[str, dict[str, str]] = {}
        self.session_id: str | None = None
        self.session_version: str | None = None
        self._methods: dict[JSON, str] = {}
        self._inbox: list[JSONObject] = []
        self._responses: dict[int, http.client.HTTPResponse] = {}
        self._streams: list[tuple[http.client.HTTPConnection, socket.socket | None, Iterator[bytes]]] = []

    # -- the Transport protocol ---------------------------------------------------------------------

    def send(self, message: JSONObject) -> None:
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            self._methods[message["id"]] = method
        conn = self._connection()
        try:
            conn.request("POST", self._path, body=json.dumps(message, ensure_ascii=False).encode(),
                         headers=self.headers_for(message))
            sock = conn.sock  # kept: getresponse() may hand the socket to the response and forget it
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise TransportError(f"could not POST to {self.url}: {describe(exc)}") from None
        self._take(conn, sock, response, message)

    def receive(self, timeout: float) -> JSONObject | None:
        deadline = self._monotonic() + timeout
        while not self._inbox and self._streams:
            conn, sock, events = self._streams[0]
            try:
                data = next(events, None) if self._wait(sock, deadline) else None
            except (OSError, http.client.HTTPException):
                data = None
            if data is None:
                self._end(self._streams.pop(0)[0])
                continue
            messages = parse_messages(data, "an event on the stream")
            self._queue(messages)
            if any("method" not in m for m in messages):  # the response ends its request's stream
                self._end(self._streams.pop(0)[0])
        return self._inbox.pop(0) if self._inbox else None

    def close(self) -> None:
        for conn, _sock, _events in self._streams:
            self._end(conn)
        self._streams.clear()

    def _end(self, conn: http.client.HTTPConnection) -> None:
        response = self._responses.pop(id(conn), None)
        if response is not None:
            response.close()
        conn.close()

    # -- one POST -------------------------------------------------------------------------------------

    def headers_for(self, message: JSONObject) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": ACCEPT, "User-Agent": USER_AGENT,
                   **mirrored_headers(message, self.param_headers, self.session_version)}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _connection(self) -> http.client.HTTPConnection:
        host, port = self._parts.hostname or "", self._parts.port
        if self._parts.scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=self.timeout, context=ssl.create_default_context())
        return http.client.HTTPConnection(host, port, timeout=self.timeout)

    def _take(self, conn: http.client.HTTPConnection, sock: socket.socket | None,
              response: http.client.HTTPResponse, message: JSONObject) -> None:
        status = response.status
        ctype = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if message.get("method") == "initialize" and response.getheader("Mcp-Session-Id"):
            self.session_id = response.getheader("Mcp-Session-Id")
        if status == 200 and ctype == "text/event-stream":
            self._streams.append((conn, sock, sse_data(self._chunks(response))))
            self._responses[id(conn)] = response
            return
        try:
            raw = self._body(sock, response)
        finally:
            response.close()
            conn.close()
        if status == 202 or (not raw.strip() and "id" not in message):
            return
        if status in (401, 403):
            raise TransportError(f"HTTP {status}: the server refused the request's credentials"
                                 f"{'' if self.token else ' (give a bearer token with --token)'}")
        if 300 <= status < 400:
            raise TransportError(f"HTTP {status} redirect to {response.getheader('Location') or 'elsewhere'}: "
                                 "give the final URL")
        if ctype != "application/json" and not raw.strip().startswith((b"{", b"[")):
            raise TransportError(f"HTTP {status} with {ctype or 'no content type'} and no JSON-RPC message: "
                                 f"{raw[:80]!r}")
        self._queue(parse_messages(raw, f"the HTTP {status} body"))

    def _chunks(self, response: http.client.HTTPResponse) -> Iterator[bytes]:
        received = 0
        while chunk := response.read1(65536):
            received += len(chunk)
            if received > self.max_bytes:
                raise TransportError(f"the event stream passed {self.max_bytes // 1024} KiB; stopped reading")
            yield chunk

    def _body(self, sock: socket.socket | None, response: http.client.HTTPResponse) -> bytes:
        data = bytearray()
        deadline = self._monotonic() + self.timeout
        try:
            while self._wait(sock, deadline) and (chunk := response.read1(65536)):
                data += chunk
                if len(data) > self.max_bytes:
                    raise TransportError(f"the response is larger than {self.max_bytes // 1024} KiB; stopped reading")
        except (OSError, http.client.HTTPException) as exc:
            raise TransportError(f"the response from {self.url} broke off: {describe(exc)}") from None
        return bytes(data)

    def _wait(self, sock: socket.socket | None, deadline: float) -> bool:
        """Shorten the socket's timeout to what is left of `deadline`; False when nothing is left."""
        left = deadline - self._monotonic()
        if left <= 0:
            return False
        if sock is not None:
            sock.settimeout(left)
        return True

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
    if isinstance(exc, TimeoutError | socket.timeout):
        return "no answer in time"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    if isinstance(exc, socket.gaierror):
        return "the host name does not resolve"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return f"{type(exc).__name__} {exc}".strip()
