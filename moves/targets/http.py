"""An MCP 2026-07-28 Streamable HTTP endpoint as a move target: any server's URL, two bearer tokens.

Each request is one POST on a fresh connection, with the headers the transport requires mirrored
from the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and `Mcp-Param-*` for arguments
that a tools/list seen earlier marked `x-mcp-header`) and the sending principal's `Authorization: Bearer`
token. The headers and the splitting of an event stream into lines are the client's own (`mrtr_client`), so the
project speaks Streamable HTTP one way; this target adds what a checker needs: two principals, pinned addresses,
bursts, and a verdict on every malformed reply. The answer may be JSON or an SSE stream; either way it is read
under one deadline and a byte cap, so a server that never answers, trickles forever or sends a
gigabyte costs at most `timeout` seconds and `max_bytes` bytes. Redirects are not followed.

`connect_to` pins the IP address actually connected to (the /check page resolves and vets the
host first, then connects to exactly what it vetted). Tokens are sent, never stored in messages,
labels or errors. `send` never raises for a bad peer: every failure is a `Reply.transport_error`.
"""

from __future__ import annotations

import copy
import http.client
import json
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from urllib.parse import urlsplit, urlunsplit

from moves.schedule import Slots
from moves.target import Progress, Reply, Role
from moves.targets.remote import (
    DEFAULT_TIMEOUT,
    MAX_REPLY_BYTES,
    Checked,
    Timing,
    check_response,
    clip,
    is_response,
    parse_json,
)
from mrtr import JSON, JSONObject
from mrtr.tooldefs import param_headers, read_tools
from mrtr_client import header_value, mirrored_headers
from mrtr_client.http_transport import ACCEPT, line_end

__all__ = ["HttpTarget", "TargetConfigError", "header_value", "mirrored_headers"]

USER_AGENT = "mrtr-check/1"


class TargetConfigError(ValueError):
    """The target cannot even be set up (a malformed URL, a missing token): a usage error."""


def _param_headers_of(result: JSON) -> dict[str, dict[str, str]]:
    """For each tool a tools/list result lists, the arguments its inputSchema marks `x-mcp-header` (and the header
    suffix each goes under). Invalid definitions too: the checker calls the tool it was told to, and says so."""
    return {tool.name: marked for tool in read_tools(result) if (marked := param_headers(tool.definition))}


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to a vetted address while sending the URL's host name."""

    def __init__(self, host: str, port: int | None, address: str | None, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address or self.host, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int | None, address: str | None, timeout: float,
                 context: ssl.SSLContext) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address
        self._ctx = context

    def connect(self) -> None:
        sock = socket.create_connection((self._address or self.host, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self.host)


class HttpTarget:
    """Moves sent as POSTs to one MCP endpoint, as two principals with their own bearer tokens."""

    def __init__(self, url: str, tokens: Mapping[str, str] | list[tuple[str, str]], *,
                 timeout: float = DEFAULT_TIMEOUT, max_bytes: int = MAX_REPLY_BYTES,
                 connect_to: str | None = None, timing: Timing | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TargetConfigError(f"the target must be an http:// or https:// URL, got {clip(url, 80)!r}")
        if parts.username or parts.password:
            raise TargetConfigError("put credentials in --token, not in the URL")
        try:
            self._port = parts.port
        except ValueError:
            raise TargetConfigError(f"the URL's port is not a number: {clip(url, 80)!r}") from None
        pairs = list(tokens.items()) if isinstance(tokens, Mapping) else list(tokens)
        if len(pairs) != 2:
            raise TargetConfigError("an HTTP target needs two principals: --token NAME=TOKEN, given twice")
        (self.owner, owner_token), (self.other, other_token) = pairs
        if self.owner == self.other:
            raise TargetConfigError("the two --token principals need different names")
        # "owner-again" is the owner on a connection of its own: every request here opens one anyway.
        self._tokens: dict[Role, str] = {"owner": owner_token, "other": other_token, "owner-again": owner_token}
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._path = urlunsplit(("", "", parts.path or "/", parts.query, ""))
        self.label = urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.connect_to = connect_to
        self.timing = timing or Timing()
        self._monotonic = monotonic
        self._param_headers: dict[str, dict[str, str]] = {}

    # -- the Target protocol --------------------------------------------------------------------

    def begin(self) -> None:
        self.timing.begin()

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None,
                on_progress: Progress | None = None) -> bool:
        return self.timing.advance(seconds, past_expiry=past_expiry, expires_at=expires_at, on_progress=on_progress)

    def near_expiry(self, seconds: float, fraction: float, *, expires_at: float | None,
                    on_progress: Progress | None = None) -> bool:
        """A remote server's clock cannot be moved: wait, for real, until `fraction` of the ticket's life."""
        return self.timing.near_expiry(fraction, expires_at=expires_at, on_progress=on_progress)

    def close(self) -> None:
        """Nothing stays open between requests."""

    def for_move(self, gate: Slots, index: int) -> HttpTarget:
        """This target for move `index` played beside others (moves.schedule): its own timing; every request opens a
        connection of its own anyway, so the moves share nothing else but the headers tools/list taught."""
        view = copy.copy(self)
        view.timing = self.timing.for_move(gate, index)
        return view

    def send(self, role: Role, message: JSONObject) -> Reply:
        try:
            reply = self._post(role, message)
        except Exception as exc:  # a peer must never crash the checker; say what happened instead
            reply = Reply(None, transport_error=_describe_exception(exc, self.timeout, self._where()),
                          timed_out=isinstance(exc, TimeoutError | socket.timeout))
        if message.get("method") == "tools/list" and reply.response:
            self._param_headers.update(_param_headers_of(reply.response.get("result")))
        return reply

    def send_burst(self, role: Role, messages: list[JSONObject]) -> list[Reply]:
        """Send every message at once, each on a connection of its own: all requests are written before any answer
        is read, so a server that handles connections concurrently really gets them together."""
        deadline = self._monotonic() + self.timeout
        opened: list[tuple[http.client.HTTPConnection | None, socket.socket | None, Reply | None]] = []
        for message in messages:
            conn = None
            try:
                conn = self._connection(self.timeout)
                conn.request("POST", self._path, body=self._body(message), headers=self._headers(role, message))
                opened.append((conn, conn.sock, None))
            except Exception as exc:  # noqa: BLE001 (a peer must never crash the checker)
                if conn is not None:
                    conn.close()
                opened.append((None, None, self._failed(exc)))
        replies = []
        for message, (conn, sock, failed) in zip(messages, opened, strict=True):
            if conn is None:
                replies.append(failed or Reply(None, transport_error="not sent"))
                continue
            try:
                replies.append(self._read(conn.getresponse(), sock, message.get("id"), deadline, role))
            except Exception as exc:  # noqa: BLE001
                replies.append(self._failed(exc))
            finally:
                conn.close()
        return replies

    def _failed(self, exc: Exception) -> Reply:
        return Reply(None, transport_error=_describe_exception(exc, self.timeout, self._where()),
                     timed_out=isinstance(exc, TimeoutError | socket.timeout))

    # -- one POST -------------------------------------------------------------------------------

    def _where(self) -> str:
        return f"{self._host}:{self._port or (443 if self._scheme == 'https' else 80)}"

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return _PinnedHTTPSConnection(self._host, self._port, self.connect_to, timeout,
                                          ssl.create_default_context())
        return _PinnedHTTPConnection(self._host, self._port, self.connect_to, timeout)

    @staticmethod
    def _body(message: JSONObject) -> bytes:
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()

    def _headers(self, role: Role, message: JSONObject) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "Accept": ACCEPT,
            "User-Agent": USER_AGENT,
            "Authorization": f"Bearer {self._tokens[role]}",
            **mirrored_headers(message, self._param_headers),
        }

    def _post(self, role: Role, message: JSONObject) -> Reply:
        deadline = self._monotonic() + self.timeout
        conn = self._connection(self.timeout)
        try:
            conn.request("POST", self._path, body=self._body(message), headers=self._headers(role, message))
            sock = conn.sock  # kept: reads below shorten its timeout to what is left of the deadline
            response = conn.getresponse()
            return self._read(response, sock, message.get("id"), deadline, role)
        finally:
            conn.close()

    def _read(self, response: http.client.HTTPResponse, sock: socket.socket | None, request_id: JSON,
              deadline: float, role: Role) -> Reply:
        status = response.status
        ctype = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if 300 <= status < 400:
            where = response.getheader("Location") or "elsewhere"
            return Reply(None, http_status=status, transport_error=(
                f"HTTP {status} redirect to {clip(where, 80)}: the checker does not follow redirects; "
                "give it the final URL"))
        if ctype == "text/event-stream" and status == 200:
            checked = self._read_sse(self._chunks(response, sock, deadline), request_id)
        else:
            raw, error = self._read_body(self._chunks(response, sock, deadline))
            checked = Checked(error=error) if error else self._judge_body(raw, ctype, status, request_id, role)
        return Reply(checked.response, checked.notifications, http_status=status, transport_error=checked.error)

    def _chunks(self, response: http.client.HTTPResponse, sock: socket.socket | None,
                deadline: float) -> Iterator[bytes]:
        """The body in pieces as they arrive, under the deadline; raises TimeoutError past it."""
        while True:
            left = deadline - self._monotonic()
            if left <= 0:
                raise TimeoutError
            if sock is not None:
                sock.settimeout(left)
            chunk = response.read1(65536)
            if not chunk:
                return
            yield chunk

    def _read_body(self, chunks: Iterator[bytes]) -> tuple[bytes, str | None]:
        data = bytearray()
        for chunk in chunks:
            data += chunk
            if len(data) > self.max_bytes:
                return b"", f"the response is larger than {self.max_bytes // 1024} KiB; the checker stopped reading"
        return bytes(data), None

    def _judge_body(self, raw: bytes, ctype: str, status: int, request_id: JSON, role: Role) -> Checked:
        text = raw.decode("utf-8", "replace")
        if status in (401, 403):
            return Checked(error=f"HTTP {status}: the server refused the bearer token of {self._name(role)}")
        if not raw.strip():
            return Checked(error=f"HTTP {status} with an empty body: no JSON-RPC response to the request")
        if ctype == "text/html" or text.lstrip()[:15].lower().startswith(("<!doctype", "<html")):
            return Checked(error=f"HTTP {status} with an HTML page{_title(text)}, not an MCP response: "
                                 "is this the MCP endpoint's URL?")
        message, error = parse_json(raw, f"the HTTP {status} body ({ctype or 'no content type'})")
        if error:
            return Checked(error=error)
        response, problem = check_response(message, request_id)
        if problem:
            return Checked(error=f"HTTP {status}: {problem}")
        return Checked(response=response)

    def _read_sse(self, chunks: Iterator[bytes], request_id: JSON) -> Checked:
        notifications: list[JSONObject] = []
        buffer = b""
        data_lines: list[bytes] = []
        received = 0
        for chunk in chunks:
            received += len(chunk)
            if received > self.max_bytes:
                return Checked(None, notifications, f"the event stream passed {self.max_bytes // 1024} KiB without "
                                                    "answering the request; the checker stopped reading")
            buffer += chunk
            while True:
                cut = line_end(buffer)
                if cut is None:
                    break
                line, buffer = buffer[: cut[0]], buffer[cut[1]:]
                if line:
                    if line.startswith(b"data:"):
                        data_lines.append(line[5:].removeprefix(b" "))
                    continue  # event:, id:, retry: and comments carry nothing the checker needs
                if not data_lines:
                    continue
                payload, data_lines = b"\n".join(data_lines), []
                message, error = parse_json(payload, "an event on the stream")
                if error:
                    return Checked(None, notifications, error)
                if is_response(message) and message.get("id") == request_id:
                    response, problem = check_response(message, request_id)
                    return Checked(response, notifications, problem)
                if isinstance(message, dict):
                    notifications.append(message)
        return Checked(None, notifications, "the event stream ended without a response to the request")

    def _name(self, role: Role) -> str:
        return self.other if role == "other" else self.owner


def _title(html: str) -> str:
    lower = html.lower()
    start, end = lower.find("<title>"), lower.find("</title>")
    if 0 <= start < end:
        title = clip(html[start + 7: end], 60)
        return f" ({title!r})" if title else ""
    return ""


def _describe_exception(exc: Exception, timeout: float, where: str) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no complete answer within {timeout:g} s"
    if isinstance(exc, ConnectionRefusedError):
        return f"could not connect to {where}: connection refused (is the server running?)"
    if isinstance(exc, socket.gaierror):
        return f"could not resolve the host of {where}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed with {where}: {clip(str(exc), 80)}"
    if isinstance(exc, http.client.HTTPException | ConnectionError):
        return f"the connection to {where} broke: {type(exc).__name__} {clip(str(exc), 60)}".rstrip()
    if isinstance(exc, OSError):
        return f"could not talk to {where}: {clip(exc.strerror or str(exc), 80)}"
    return f"unexpected failure talking to {where}: {type(exc).__name__}"
