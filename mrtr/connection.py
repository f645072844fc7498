"""One conversation: a stdio process, an HTTP session, or a single stateless request.

What this module owns: `Connection`, the entry points adapters call (`receive_text`, `receive`,
`expire`), era selection, and the one place every exception becomes a wire error (`_respond`).
It must never do I/O or read the system clock: adapters move the bytes, the server's clock tells time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .errors import InternalError, InvalidParams, InvalidRequest, ParseError, ProtocolError, TicketRejected
from .legacy import LegacyEra
from .protocol import (
    MAX_MESSAGE_BYTES,
    META_VERSION,
    Exchange,
    may_hold_surrogates,
    request_id_of,
    shape_problem,
    valid_request_id,
)
from .tickets import CHECK_TITLES, Trace

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("mrtr")


class Connection(LegacyEra):
    """One conversation: a stdio process, an HTTP session, or a single stateless request."""

    def __init__(self, server: Server, principal: str, *, channel: bool = True, stateless: bool = False,
                 request_ids: Iterator[Any] | None = None) -> None:
        super().__init__(server, principal, channel=channel, stateless=stateless, request_ids=request_ids)

    # -- entry points ----------------------------------------------------------------------------

    def receive_text(self, text: str | bytes) -> Exchange:
        """Parse one raw JSON-RPC message (bounded in size and depth), then serve it."""
        if len(text) > MAX_MESSAGE_BYTES:
            return self._error_exchange(None, InvalidRequest(
                f"message is {len(text)} bytes; the limit is {MAX_MESSAGE_BYTES}", http_status=413))
        try:
            message = json.loads(text)
        except RecursionError:
            return self._error_exchange(None, ParseError("JSON nested too deeply"))
        except (ValueError, UnicodeDecodeError) as exc:
            return self._error_exchange(None, ParseError(f"Parse error: {exc}"))
        return self.receive(message, check_text=may_hold_surrogates(text))

    def receive(self, message: Any, *, check_text: bool = True) -> Exchange:
        """Serve one parsed JSON-RPC message (`check_text`: scan its strings for lone surrogates)."""
        self._log = []
        self._outbox = []
        if isinstance(message, list):
            return self._error_exchange(None, InvalidRequest("JSON-RPC batches are not supported"))
        if not isinstance(message, dict):
            return self._error_exchange(None, InvalidRequest("a JSON-RPC message must be an object"))
        problem = shape_problem(message, check_text=check_text)
        if problem:
            return self._error_exchange(request_id_of(message), InvalidRequest(problem))
        if "method" not in message and "id" in message and ("result" in message or "error" in message):
            return self._client_response(message)
        return self._respond(message)

    # -- the one place exceptions become wire errors ---------------------------------------------

    def _respond(self, message: dict[str, Any]) -> Exchange:
        request_id = message.get("id")
        is_notification = "id" not in message
        trace = Trace()
        try:
            if message.get("jsonrpc") != "2.0":
                raise InvalidRequest('the "jsonrpc" member must be exactly "2.0"')
            method = message.get("method")
            if not isinstance(method, str) or not method:
                raise InvalidRequest('the "method" member must be a non-empty string')
            if not is_notification and not valid_request_id(request_id):
                raise InvalidRequest("the id must be a string or an integer")
            params = message.get("params", None)
            if params is not None and not isinstance(params, dict):
                raise InvalidParams("params must be an object", http_status=400)
            if is_notification:
                self._notification(method, params or {})
                return Exchange(log=self._log, http_status=202)
            outcome = self._dispatch(method, params, request_id, trace)
            if outcome is None:  # the shim took over; the response comes later
                return Exchange(messages=self._pending_requests(request_id), trace=trace, log=self._log,
                                origin=request_id)
            return Exchange(messages=[*self._outbox, {"jsonrpc": "2.0", "id": request_id, "result": outcome}],
                            trace=trace, log=self._log, origin=request_id)
        except TicketRejected as exc:
            self._note(f"requestState rejected at “{CHECK_TITLES[exc.check]}”: {exc.reason}")
            if self.server.operator_log:
                log.info("requestState rejected at “%s”: %s", CHECK_TITLES[exc.check], exc.reason)
            return self._error_exchange(None if is_notification else request_id, exc, trace)
        except ProtocolError as exc:
            return self._error_exchange(None if is_notification else request_id, exc, trace)
        except Exception:
            log.exception("internal error while serving %r", message.get("method"))
            self._note("internal error (details in the server log)")
            return self._error_exchange(None if is_notification else request_id, InternalError("Internal error"), trace)

    def _error_exchange(self, request_id: Any, exc: ProtocolError, trace: Trace | None = None) -> Exchange:
        if not valid_request_id(request_id):
            request_id = None
        return Exchange(
            messages=[{"jsonrpc": "2.0", "id": request_id, "error": exc.to_error()}],
            trace=trace, log=self._log, origin=request_id,
            http_status=exc.http_status,
        )

    # -- era selection and method table ----------------------------------------------------------

    def _dispatch(self, method: str, params: dict[str, Any] | None, request_id: Any, trace: Trace) -> Any:
        meta = (params or {}).get("_meta")
        modern = isinstance(meta, dict) and META_VERSION in meta
        if not modern and method == "initialize" and isinstance((params or {}).get("protocolVersion"), str) \
                and not self.stateless:
            return self._initialize(params or {})
        if not modern and self.initialized and not self.stateless:
            return self._legacy(method, params or {}, request_id, trace)
        return self._modern(method, params, trace)

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            self._note("client sent notifications/initialized")
        elif method == "notifications/cancelled":
            self._cancel(params.get("requestId"))

