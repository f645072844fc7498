"""An MCP 2026-07-28 Streamable HTTP endpoint as a move target: any server's URL, two bearer tokens.

Each request is one POST on a fresh connection, with the headers the transport requires mirrored
from the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and `Mcp-Param-*` for arguments
that a tools/list seen earlier marked `x-mcp-header`) and the sending principal's `Authorization: Bearer`
token. The POST, its budgets, the pinned address and the splitting of an event stream into events are the client's
own (`mrtr_client.HttpEndpoint`, what `mrtr_client.HttpTransport` sends through), so the project has one HTTP client;
this target adds what a checker needs: two principals, bursts, and a verdict on every malformed reply. The answer
may be JSON or an SSE stream; either way it is read under one deadline and a byte cap, so a server that never
answers, trickles forever or sends a gigabyte costs at most `timeout` seconds and `max_bytes` bytes. Redirects are
not followed.

`connect_to` pins the IP address actually connected to (the /check page resolves and vets the
host first, then connects to exactly what it vetted). Tokens are sent, never stored in messages,
labels or errors. `send` never raises for a bad peer: every failure is a `Reply.transport_error`.
"""

from __future__ import annotations

import copy
import json
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
from mrtr_client import HttpAnswer, HttpEndpoint, Posted, TooLarge, failure, header_value, mirrored_headers

__all__ = ["HttpTarget", "TargetConfigError", "header_value", "mirrored_headers"]

USER_AGENT = "mrtr-check/1"


class TargetConfigError(ValueError):
    """The target cannot even be set up (a malformed URL, a missing token): a usage error."""


def _param_headers_of(result: JSON) -> dict[str, dict[str, str]]:
    """For each tool a tools/list result lists, the arguments its inputSchema marks `x-mcp-header` (and the header
    suffix each goes under). Invalid definitions too: the checker calls the tool it was told to, and says so."""
    return {tool.name: marked for tool in read_tools(result) if (marked := param_headers(tool.definition))}


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
            parts.port  # noqa: B018 (reading it checks it)
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
        self._endpoint = HttpEndpoint(url, connect_to=connect_to, timeout=timeout, max_bytes=max_bytes,
                                      user_agent=USER_AGENT, monotonic=monotonic)
        self.label = urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
        self.timeout = timeout
        self.max_bytes = max_bytes
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
            reply = self._failed(exc)
        if message.get("method") == "tools/list" and reply.response:
            self._param_headers.update(_param_headers_of(reply.response.get("result")))
        return reply

    def send_burst(self, role: Role, messages: list[JSONObject]) -> list[Reply]:
        """Send every message at once, each on a connection of its own: all requests are written before any answer
        is read, so a server that handles connections concurrently really gets them together."""
        deadline = self._monotonic() + self.timeout
        opened: list[Posted | Reply] = []
        for message in messages:
            try:
                opened.append(self._endpoint.post(self._body(message), self._headers(role, message)))
            except Exception as exc:  # noqa: BLE001 (a peer must never crash the checker)
                opened.append(self._failed(exc))
        replies = []
        for message, posted in zip(messages, opened, strict=True):
            if isinstance(posted, Reply):
                replies.append(posted)
                continue
            try:
                exchange = posted.response(deadline)
            except Exception as exc:  # noqa: BLE001
                replies.append(self._failed(exc))
                continue
            try:
                replies.append(self._read(exchange, message.get("id"), role))
            except Exception as exc:  # noqa: BLE001
                replies.append(self._failed(exc))
            finally:
                exchange.close()
        return replies

    def _failed(self, exc: Exception) -> Reply:
        return Reply(None, transport_error=_describe_exception(exc, self.timeout, self._where()),
                     timed_out=failure(exc) == "timeout")

    # -- one POST -------------------------------------------------------------------------------

    @property
    def connect_to(self) -> str | None:
        """The vetted address every request connects to (None: the URL's host, resolved)."""
        return self._endpoint.connect_to

    def _where(self) -> str:
        return self._endpoint.where

    @staticmethod
    def _body(message: JSONObject) -> bytes:
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()

    def _headers(self, role: Role, message: JSONObject) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._tokens[role]}", **mirrored_headers(message, self._param_headers)}

    def _post(self, role: Role, message: JSONObject) -> Reply:
        exchange = self._endpoint.exchange(self._body(message), self._headers(role, message))
        try:
            return self._read(exchange, message.get("id"), role)
        finally:
            exchange.close()

    def _read(self, exchange: HttpAnswer, request_id: JSON, role: Role) -> Reply:
        status, ctype = exchange.status, exchange.content_type
        if 300 <= status < 400:
            where = exchange.header("Location") or "elsewhere"
            return Reply(None, http_status=status, transport_error=(
                f"HTTP {status} redirect to {clip(where, 80)}: the checker does not follow redirects; "
                "give it the final URL"))
        if ctype == "text/event-stream" and status == 200:
            checked = self._read_sse(exchange.events(), request_id)
        else:
            try:
                raw = exchange.body()
            except TooLarge:
                raw, checked = b"", Checked(error=f"the response is larger than {self.max_bytes // 1024} KiB; "
                                                  "the checker stopped reading")
            else:
                checked = self._judge_body(raw, ctype, status, request_id, role)
        return Reply(checked.response, checked.notifications, http_status=status, transport_error=checked.error)

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

    def _read_sse(self, events: Iterator[bytes], request_id: JSON) -> Checked:
        notifications: list[JSONObject] = []
        try:
            for payload in events:
                message, error = parse_json(payload, "an event on the stream")
                if error:
                    return Checked(None, notifications, error)
                if is_response(message) and message.get("id") == request_id:
                    response, problem = check_response(message, request_id)
                    return Checked(response, notifications, problem)
                if isinstance(message, dict):
                    notifications.append(message)
        except TooLarge:
            return Checked(None, notifications, f"the event stream passed {self.max_bytes // 1024} KiB without "
                                                "answering the request; the checker stopped reading")
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
    kind = failure(exc)
    if kind == "timeout":
        return f"no complete answer within {timeout:g} s"
    if kind == "refused":
        return f"could not connect to {where}: connection refused (is the server running?)"
    if kind == "unresolved":
        return f"could not resolve the host of {where}"
    if kind == "tls":
        return f"TLS failed with {where}: {clip(str(exc), 80)}"
    if kind == "broken":
        return f"the connection to {where} broke: {type(exc).__name__} {clip(str(exc), 60)}".rstrip()
    if isinstance(exc, OSError):
        return f"could not talk to {where}: {clip(exc.strerror or str(exc), 80)}"
    return f"unexpected failure talking to {where}: {type(exc).__name__}"
