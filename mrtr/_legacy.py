"""The 2025-11-25 era and the legacy shim: old clients served by the same handlers.

What this module owns: `initialize` and the session it starts, the legacy method dispatch, and the
shim: when a handler returns input_required, each question becomes a real server-to-client request;
the answers come back as client responses and the same handler runs again with them (and with the
ticket byte for byte, as a modern client would echo it). Rounds give up after the server's limits.
It must never trust anything a modern request did not send, and it never builds wire errors for
requests it did not start (`connection.py` does).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

from ._calls import call
from ._conversation import Conversation
from ._handler import InputRequired
from ._methods import LIST_METHODS, complete
from .errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    MissingCapability,
    ProtocolError,
    TicketRejected,
)
from .messages import JSON, JSONObject, RequestId, as_object, error_response, request_message, result_response
from .protocol import INPUT_REQUIRED_METHODS, LEGACY_VERSION, LEGACY_VERSIONS, Exchange, request_id_of
from .tickets import CHECK_TITLES, Trace

log = logging.getLogger("mrtr")


@dataclass
class _ShimFlow:
    origin_id: RequestId | None
    method: str
    params: JSONObject
    questions: dict[str, JSONObject]
    state: str | None
    round: int
    deadline: float
    pending: dict[RequestId, str] = field(default_factory=dict)  # server request id -> question key
    answers: JSONObject = field(default_factory=dict)
    sent: set[RequestId] = field(default_factory=set)  # server request ids already handed to the adapter


class LegacySession:
    """A 2025-11-25 session on one conversation: `initialize`, its method dispatch, and the shim."""

    def __init__(self, conv: Conversation, *, channel: bool = True,
                 request_ids: Iterator[RequestId] | None = None) -> None:
        self.conv = conv
        self.server = conv.server
        self.channel = channel
        self.legacy_version: str | None = None
        self.legacy_capabilities: JSONObject = {}
        self.initialized = False
        # The ids of the requests this side sends (the shim's questions). An adapter whose session may be
        # served by several processes gives each process ids of its own, so an answer names its process.
        self._ids: Iterator[RequestId] = request_ids if request_ids is not None else itertools.count(1)
        self._flows: dict[RequestId, _ShimFlow] = {}  # server request id -> flow

    def waiting_on(self) -> set[RequestId | None]:
        """The client requests whose shim rounds wait for answers."""
        return {flow.origin_id for flow in self._flows.values()}

    def _note(self, line: str) -> None:
        self.conv.note(line)

    def expire(self) -> Exchange:
        """Give up on shim rounds whose client has not answered in time."""
        self.conv.begin()
        now = self.server.clock()
        out = Exchange(log=self.conv.log)
        for flow in {id(f): f for f in self._flows.values()}.values():
            if now >= flow.deadline:
                self._drop(flow)
                self._note(f"shim: gave up on request {flow.origin_id!r} after {self.server.shim_round_timeout:.0f} s")
                out.messages.append(self._shim_failure(flow, "the client did not answer in time"))
                out.origin = flow.origin_id
        return out

    def session_state(self) -> JSONObject:
        """What another process needs to go on with this session (`resume`): JSON-safe, no secrets."""
        return {"version": self.legacy_version, "capabilities": dict(self.legacy_capabilities)}

    def resume(self, state: JSONObject) -> None:
        """Go on with a session that `initialize` started in another process, from its `session_state()`.

        Raises:
            ValueError: the state is not one `session_state` wrote.
        """
        version, caps = state.get("version"), state.get("capabilities")
        if not isinstance(version, str) or version not in LEGACY_VERSIONS or not isinstance(caps, dict):
            raise ValueError("not the state of a 2025-11-25 session")
        self.legacy_version = version
        self.legacy_capabilities = caps
        self.initialized = True

    def initialize(self, params: JSONObject) -> JSONObject:
        """Start the session: fix its version and the client's capabilities."""
        requested = params.get("protocolVersion")
        caps = params.get("capabilities", {})
        if not isinstance(caps, dict):
            raise InvalidParams("capabilities must be an object")
        self.legacy_version = requested if isinstance(requested, str) and requested in LEGACY_VERSIONS \
            else LEGACY_VERSION
        self.legacy_capabilities = caps
        self.initialized = True
        self._note(f"legacy session started at {self.legacy_version}; capabilities fixed: {sorted(caps)}")
        return {
            "protocolVersion": self.legacy_version,
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}, "completions": {}},
            "serverInfo": dict(self.server.info),
            "instructions": self.server.instructions,
        }

    def cancel(self, request_id: JSON) -> None:
        """The client cancelled `request_id`: drop its shim rounds."""
        for flow in list({id(f): f for f in self._flows.values()}.values()):
            if flow.origin_id == request_id:
                self._drop(flow)
                self._note(f"shim: request {request_id!r} cancelled by the client")

    def serve(self, method: str, params: JSONObject, request_id: RequestId, trace: Trace) -> JSONObject | None:
        """The result of one request in this session, or None when the shim took over (answers come later)."""
        if method == "ping":
            return {}
        if method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
            result = LIST_METHODS[method](self.conv)
            return {k: v for k, v in result.items() if k not in ("ttlMs", "cacheScope")}
        if method == "completion/complete":
            return complete(self.conv, params)
        if method not in INPUT_REQUIRED_METHODS:
            raise MethodNotFound(f"Method not found: {method}")
        clean = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState", "_meta")}
        return self._legacy_round(method, clean, request_id, trace, round_no=1)

    def _legacy_round(self, method: str, params: JSONObject, request_id: RequestId | None, trace: Trace, *,
                      round_no: int) -> JSONObject | None:
        try:
            result = call(self.conv, method, params, self.legacy_capabilities, trace)
        except MissingCapability as exc:
            missing = sorted(exc.required)
            return self._legacy_failure(method, f"the client did not declare {missing}, "
                                                "so the server cannot ask its question")
        if not isinstance(result, InputRequired):
            return {k: v for k, v in result.items() if k not in ("ttlMs", "cacheScope")}
        if not self.channel:
            return self._legacy_failure(method, "this tool needs to ask a question, but a 2025-11-25 client "
                                                "without a session has no channel to be asked on; use a session "
                                                "or a 2026-07-28 client")
        if round_no > self.server.shim_max_rounds:
            return self._legacy_failure(method, f"gave up after {self.server.shim_max_rounds} rounds of questions")
        flow = _ShimFlow(request_id, method, params, result.questions, result.state, round_no,
                         self.server.clock() + self.server.shim_round_timeout)
        for key in result.questions:
            sid = next(self._ids)
            flow.pending[sid] = key
            self._flows[sid] = flow
        if not result.questions:  # state-only round: re-enter at once with the ticket
            return self._legacy_continue(flow, trace)
        self._note(f"shim: round {round_no}: asking the client {list(result.questions)} as server requests")
        return None

    def pending_requests(self, origin_id: RequestId | None) -> list[JSONObject]:
        """The shim's questions for `origin_id` not yet handed to the adapter, as server requests."""
        out = []
        for sid, flow in self._flows.items():
            if flow.origin_id == origin_id and sid in flow.pending and sid not in flow.sent:
                flow.sent.add(sid)
                question = flow.questions[flow.pending[sid]]
                method = question.get("method")
                params = as_object(question.get("params"))
                if method == "elicitation/create" and params.get("mode") == "url" and "elicitationId" not in params:
                    params = {**params, "elicitationId": str(sid)}  # 2025-11-25 requires one; 2026-07-28 has none
                out.append(request_message(sid, method if isinstance(method, str) else "", params))
        return out

    def client_response(self, message: JSONObject) -> Exchange:
        """The client answered one of the shim's questions."""
        sid = request_id_of(message)
        flow = self._flows.get(sid) if sid is not None else None
        if flow is None or sid is None:
            self._note(f"ignored a response to unknown server request {message.get('id')!r}")
            return Exchange(log=self.conv.log, http_status=202)
        key = flow.pending.pop(sid)
        del self._flows[sid]
        if "error" in message:
            self._drop(flow)
            error = message.get("error")
            text = error.get("message") if isinstance(error, dict) else None
            return Exchange(messages=[self._shim_failure(flow, f"the client answered with an error: {text!r}")],
                            log=self.conv.log, origin=flow.origin_id, http_status=202)
        answer = message.get("result")
        if isinstance(answer, dict):
            answer = {k: v for k, v in answer.items() if k not in ("_meta", "resultType")}
        flow.answers[key] = answer
        if flow.pending:
            return Exchange(log=self.conv.log, origin=flow.origin_id, http_status=202)
        trace = Trace()
        try:
            outcome = self._legacy_continue(flow, trace)
        except ProtocolError as exc:
            if isinstance(exc, TicketRejected):
                self._note(f"requestState rejected at “{CHECK_TITLES[exc.check]}”: {exc.reason}")
            reply = error_response(flow.origin_id, exc.to_error())
            return Exchange(messages=[reply], trace=trace, log=self.conv.log, origin=flow.origin_id, http_status=202)
        except Exception:
            log.exception("internal error in the legacy shim")
            reply = error_response(flow.origin_id, InternalError("Internal error").to_error())
            return Exchange(messages=[reply], trace=trace, log=self.conv.log, origin=flow.origin_id, http_status=202)
        if outcome is None:
            return Exchange(messages=self.pending_requests(flow.origin_id), trace=trace, log=self.conv.log,
                            origin=flow.origin_id, http_status=202)
        reply = result_response(flow.origin_id, outcome)
        return Exchange(messages=[reply], trace=trace, log=self.conv.log, origin=flow.origin_id, http_status=202)

    def _legacy_continue(self, flow: _ShimFlow, trace: Trace) -> JSONObject | None:
        params: JSONObject = {**flow.params, "inputResponses": dict(flow.answers)}
        if flow.state is not None:
            params["requestState"] = flow.state  # byte for byte, as a modern client would echo it
        self._note(f"shim: re-running {flow.method} with the client's answers")
        return self._legacy_round(flow.method, params, flow.origin_id, trace, round_no=flow.round + 1)

    def _drop(self, flow: _ShimFlow) -> None:
        for sid in [s for s, f in self._flows.items() if f is flow]:
            del self._flows[sid]

    def _legacy_failure(self, method: str, reason: str) -> JSONObject:
        self._note(f"shim: {reason}")
        if method == "tools/call":
            return {"content": [{"type": "text", "text": f"Could not finish: {reason}."}], "isError": True}
        raise InvalidRequest(f"Could not finish: {reason}.")

    def _shim_failure(self, flow: _ShimFlow, reason: str) -> JSONObject:
        try:
            result = self._legacy_failure(flow.method, reason)
        except ProtocolError as exc:
            return error_response(flow.origin_id, exc.to_error())
        return result_response(flow.origin_id, result)

