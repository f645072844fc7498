"""One POST to an MCP endpoint, the project's only HTTP client code: the connection, the budgets, the raw answer.

`HttpEndpoint` owns a URL, the address actually connected to (`connect_to`: a caller that resolved and vetted the
host pins what it vetted, and the URL's host name still goes in `Host` and TLS's SNI), and the budgets: the time a
request may take and the bytes its answer may have. `post` writes one request on a connection of its own and hands
back a `Posted`, whose `response` reads the status line; the `HttpAnswer` it gives has the status, the headers and the
body as chunks read under a deadline (`TimeoutError` past it) and a byte cap (`TooLarge` past it), or as the data of
each SSE event (`sse_data`). Redirects are never followed: a 3xx is an answer like any other. Network failures are
raised as they come (`OSError`, `http.client.HTTPException`, `ssl.SSLError`), for the caller to word:
`mrtr_client.HttpTransport` turns them into a `TransportError`, the checker (`moves.targets.http`) into evidence.
It decides nothing about JSON-RPC and never imports the checker, the web app or the `mrtr` command.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

ACCEPT = "application/json, text/event-stream"
USER_AGENT = "mrtr-call/1"
MAX_BYTES = 4 * 1024 * 1024
CHUNK = 65536


class TooLarge(Exception):
    """An answer passed the endpoint's byte budget; reading stopped there."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} bytes")
        self.limit = limit


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
    """The data of each event of an SSE stream, as the chunks arrive. `event:`, `id:`, `retry:` and comments are
    dropped (a 2026-07-28 stream carries JSON-RPC in `data:` and nothing else a client needs), and so is an event the
    stream ends in the middle of, before its blank line: the SSE format never dispatches one."""
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


#: What went wrong on the wire, for a caller to word: see `failure`.
Failure = Literal["timeout", "refused", "unresolved", "tls", "broken", "os", "other"]


def failure(exc: BaseException) -> Failure:
    """The kind of a network failure `post`, `response` or a read raised (tested in this order: a time-out is an
    OSError, a refused connection a ConnectionError, a TLS failure an OSError)."""
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, socket.gaierror):
        return "unresolved"
    if isinstance(exc, ssl.SSLError):
        return "tls"
    if isinstance(exc, http.client.HTTPException | ConnectionError):
        return "broken"
    if isinstance(exc, OSError):
        return "os"
    return "other"


#: Every exception `failure` names (the ones a caller catches around `post` and the reads).
NETWORK_ERRORS = (OSError, http.client.HTTPException)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to `address` (when given) while the request names the URL's host."""

    def __init__(self, host: str, port: int | None, address: str | None, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address or self.host, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """The same over TLS: the certificate is checked against the URL's host name, not the pinned address."""

    def __init__(self, host: str, port: int | None, address: str | None, timeout: float,
                 context: ssl.SSLContext) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address
        self._ctx = context

    def connect(self) -> None:
        sock = socket.create_connection((self._address or self.host, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self.host)


class HttpAnswer:
    """One answer: status and headers at once, the body as it comes, under `deadline` and the byte budget.

    `deadline` may be moved between reads (a client reading a stream across several waits does)."""

    def __init__(self, conn: http.client.HTTPConnection, sock: socket.socket | None,
                 response: http.client.HTTPResponse, *, deadline: float, max_bytes: int,
                 monotonic: Callable[[], float]) -> None:
        self._conn, self._sock, self._response = conn, sock, response
        self.deadline = deadline
        self.max_bytes = max_bytes
        self._monotonic = monotonic
        self.status = response.status
        self.headers: list[tuple[str, str]] = response.getheaders()
        self.received = 0

    def header(self, name: str) -> str | None:
        return self._response.getheader(name)

    @property
    def content_type(self) -> str:
        """The media type, lower case, without parameters ("" when none was sent)."""
        return (self.header("Content-Type") or "").split(";")[0].strip().lower()

    def chunks(self) -> Iterator[bytes]:
        """The body in pieces as they arrive; `TimeoutError` once the deadline passes, `TooLarge` once the pieces
        add up to more than the budget (counted over the whole answer, however it is read)."""
        while True:
            left = self.deadline - self._monotonic()
            if left <= 0:
                raise TimeoutError
            if self._sock is not None:
                self._sock.settimeout(left)
            chunk = self._response.read1(CHUNK)
            if not chunk:
                return
            self.received += len(chunk)
            if self.received > self.max_bytes:
                raise TooLarge(self.max_bytes)
            yield chunk

    def body(self) -> bytes:
        """The whole body (see `chunks` for what it raises)."""
        return b"".join(self.chunks())

    def events(self) -> Iterator[bytes]:
        """The data of each SSE event of the body (see `sse_data`, and `chunks` for what it raises)."""
        return sse_data(self.chunks())

    def close(self) -> None:
        self._response.close()
        self._conn.close()


class Posted:
    """A request written, its answer not yet read: requests of a burst are all written before any is read."""

    def __init__(self, endpoint: HttpEndpoint, conn: http.client.HTTPConnection, started: float) -> None:
        self._endpoint = endpoint
        self._conn = conn
        self._sock = conn.sock  # kept: getresponse() may hand the socket to the response and forget it
        self.started = started

    def response(self, deadline: float | None = None) -> HttpAnswer:
        """Read the status line and headers; the body is read under `deadline` (default: the endpoint's timeout
        from when the request was sent). Closes the connection if even the status line fails."""
        try:
            response = self._conn.getresponse()
        except BaseException:
            self._conn.close()
            raise
        end = self.started + self._endpoint.timeout if deadline is None else deadline
        return HttpAnswer(self._conn, self._sock, response, deadline=end, max_bytes=self._endpoint.max_bytes,
                        monotonic=self._endpoint.monotonic)

    def close(self) -> None:
        self._conn.close()


class HttpEndpoint:
    """POSTs to one URL, each on a fresh connection to the URL's host or to the pinned `connect_to` address."""

    def __init__(self, url: str, *, connect_to: str | None = None, timeout: float = 30.0,
                 max_bytes: int = MAX_BYTES, user_agent: str = USER_AGENT,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the server must be an http:// or https:// URL, got {url[:80]!r}")
        self.url = url
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port  # ValueError for a port that is no number: the caller's usage error
        self.path = urlunsplit(("", "", parts.path or "/", parts.query, ""))
        self.connect_to = connect_to
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.user_agent = user_agent
        self.monotonic = monotonic

    @property
    def where(self) -> str:
        """host:port, as a person would name the server."""
        return f"{self.host}:{self.port or (443 if self.scheme == 'https' else 80)}"

    def post(self, body: bytes, headers: Mapping[str, str]) -> Posted:
        """Write one POST (JSON body, `Accept` both answer types, this endpoint's user agent, then `headers`)."""
        started = self.monotonic()
        conn = self._connection()
        try:
            conn.request("POST", self.path, body=body, headers={
                "Content-Type": "application/json", "Accept": ACCEPT, "User-Agent": self.user_agent, **headers})
        except BaseException:
            conn.close()
            raise
        return Posted(self, conn, started)

    def exchange(self, body: bytes, headers: Mapping[str, str]) -> HttpAnswer:
        """`post`, then its `response`."""
        return self.post(body, headers).response()

    def _connection(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return _PinnedHTTPSConnection(self.host, self.port, self.connect_to, self.timeout,
                                          ssl.create_default_context())
        return _PinnedHTTPConnection(self.host, self.port, self.connect_to, self.timeout)
