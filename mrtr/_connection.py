"""One conversation: a stdio process, an HTTP session, or a single stateless request.

What this module owns: `Connection`, the entry points adapters call (`receive_text`, `receive`,
`expire`), era selection, and the one place every exception becomes a wire error (`_respond`).
A connection has a `Conversation` (what both eras share) and a `LegacySession` (used only once a
client sends `initialize`); it inherits from neither. It must never do I/O or read the system
clock: adapters move the bytes, the server's clock tells time.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator

from . import _modern
from ._conversation import Conversation, ServerView
from ._legacy import LegacySession
from .errors import InternalError, InvalidRequest, ParseError, ProtocolError, TicketRejected
from .messages import JSON, JSONObject, RequestId, error_response, result_response
from .protocol import (
    MAX_JSON_DEPTH,
    MAX_MESSAGE_BYTES,
    META_VERSION,
    Exchange,
    parse_request,
    request_id_of,
    shape_problem,
    valid_request_id,
)
from .tickets import CHECK_TITLES, Trace
from .wire import json_loads, may_hold_surrogates, nesting_bound

log = logging.getLogger("mrtr")


class Connection:
    """One conversation: a stdio process, an HTTP session, or a single stateless request."""

    def __init__(self, server: ServerView, principal: str, *, channel: bool = True, stateless: bool = False,
                 request_ids: Iterator[RequestId] | None = None) -> None:
        self.server = server
        self.principal = principal
        self.stateless = stateless
        self.conv = Conversation(server, principal, stateless=stateless)
        self._channel = channel
        self._request_ids = request_ids

    @functools.cached_property
    def legacy(self) -> LegacySession:
        """The 2025-11-25 session on this connection, made when first needed: a stateless 2026-07-28 request
        (every /mcp call) never needs one."""
        return LegacySession(self.conv, channel=self._channel, request_ids=self._request_ids)

    # -- the legacy session, for adapters that keep one across processes --------------------------

    @property
    def initialized(self) -> bool:
        """Whether a 2025-11-25 `initialize` started a session on this connection."""
        return self.legacy.initialized

    def session_state(self) -> JSONObject:
        return self.legacy.session_state()

    def resume(self, state: JSONObject) -> None:
        self.legacy.resume(state)

    def expire(self) -> Exchange:
        """Give up on shim rounds whose client has not answered in time."""
        return self.legacy.expire()

    def waiting_on(self) -> set[RequestId | None]:
        """The client requests whose shim rounds still wait for the client's answers."""
        return self.legacy.waiting_on()

    # -- entry points ----------------------------------------------------------------------------

    def receive_text(self, text: str | bytes) -> Exchange:
        """Parse one raw JSON-RPC message (bounded in size and depth), then serve it."""
        if len(text) > MAX_MESSAGE_BYTES:
            return self._error_exchange(None, InvalidRequest(
                f"message is {len(text)} bytes; the limit is {MAX_MESSAGE_BYTES}", http_status=413))
        try:
            message: JSON = json_loads(text)
        except RecursionError:
            return self._error_exchange(None, ParseError("JSON nested too deeply"))
        except (ValueError, UnicodeDecodeError) as exc:
            return self._error_exchange(None, ParseError(f"Parse error: {exc}"))
        return self.receive(message, check_text=may_hold_surrogates(text),
                            check_depth=nesting_bound(text) > MAX_JSON_DEPTH)

    def receive(self, message: JSON, *, check_text: bool = True, check_depth: bool = True) -> Exchange:
        """Serve one parsed JSON-RPC message (`check_text`: scan its strings for lone surrogates; `check_depth`:
        walk it for its depth, which an adapter that counted the raw text's brackets may know is in bounds)."""
        self.conv.begin()
        if isinstance(message, list):
            return self._error_exchange(None, InvalidRequest("JSON-RPC batches are not supported"))
        if not isinstance(message, dict):
            return self._error_exchange(None, InvalidRequest("a JSON-RPC message must be an object"))
        problem = shape_problem(message, check_text=check_text, check_depth=check_depth)
        if problem:
            return self._error_exchange(request_id_of(message), InvalidRequest(problem))
        if "method" not in message and "id" in message and ("result" in message or "error" in message):
            return self.legacy.client_response(message)
        return self._respond(message)

    # -- the one place exceptions become wire errors ---------------------------------------------

    def _respond(self, message: JSONObject) -> Exchange:
        is_notification = "id" not in message
        request_id = request_id_of(message)
        trace = Trace()
        try:
            request = parse_request(message)
            if request.id is None:
                self._notification(request.method, request.params or {})
                return Exchange(log=self.conv.log, http_status=202)
            outcome = self._dispatch(request.method, request.params, request.id, trace)
            if outcome is None:  # the shim took over; the response comes later
                return Exchange(messages=self.legacy.pending_requests(request_id), trace=trace, log=self.conv.log,
                                origin=request_id)
            return Exchange(messages=[*self.conv.outbox, result_response(request_id, outcome)],
                            trace=trace, log=self.conv.log, origin=request_id)
        except TicketRejected as exc:
            self.conv.note(f"requestState rejected at “{CHECK_TITLES[exc.check]}”: {exc.reason}")
            if self.server.operator_log:
                log.info("requestState rejected at “%s”: %s", CHECK_TITLES[exc.check], exc.reason)
            return self._error_exchange(None if is_notification else request_id, exc, trace)
        except ProtocolError as exc:
            return self._error_exchange(None if is_notification else request_id, exc, trace)
        except Exception:
            log.exception("internal error while serving %r", message.get("method"))
            self.conv.note("internal error (details in the server log)")
            return self._error_exchange(None if is_notification else request_id, InternalError("Internal error"), trace)

    def _error_exchange(self, request_id: RequestId | None, exc: ProtocolError, trace: Trace | None = None) -> Exchange:
        if not valid_request_id(request_id):
            request_id = None
        return Exchange(
            messages=[error_response(request_id, exc.to_error())],
            trace=trace, log=self.conv.log, origin=request_id,
            http_status=exc.http_status,
        )

    # -- era selection ---------------------------------------------------------------------------

    def _dispatch(self, method: str, params: JSONObject | None, request_id: RequestId,
                  trace: Trace) -> JSONObject | None:
        meta = (params or {}).get("_meta")
        is_modern = isinstance(meta, dict) and META_VERSION in meta
        if not is_modern and method == "initialize" and isinstance((params or {}).get("protocolVersion"), str) \
                and not self.stateless:
            return self.legacy.initialize(params or {})
        if not is_modern and self.legacy.initialized and not self.stateless:
            return self.legacy.serve(method, params or {}, request_id, trace)
        return _modern.serve(self.conv, method, params or {}, trace)

    def _notification(self, method: str, params: JSONObject) -> None:
        if method == "notifications/initialized":
            self.conv.note("client sent notifications/initialized")
        elif method == "notifications/cancelled":
            self.legacy.cancel(params.get("requestId"))
