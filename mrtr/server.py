"""The MRTR server: one message in, messages out, and the trace of every ticket check.

Rule 1: no I/O. A `Connection` is fed parsed or raw JSON-RPC messages and returns an `Exchange`
with the messages to send back; adapters (stdio, Flask, the playground) move the bytes.
Rule 2: time comes from the injected clock, never from the system.
Rule 3: every exception becomes a wire error in exactly one place, `Connection._respond`.

Two eras share one method table. A request whose `params._meta` names a protocol version is
served statelessly (2026-07-28): nothing from earlier requests is trusted. An `initialize`
without that `_meta` starts a 2025-11-25 session on this connection; there, when a handler
returns input_required, the legacy shim turns each question into a real server-to-client request,
waits for the answers, and runs the same handler again with them.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from . import __version__
from .catalog import Catalog, answer_problem, has_capability, required_capability
from .clock import Clock
from .errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    MissingCapability,
    MissingMeta,
    ParseError,
    ProtocolError,
    StoreUnavailable,
    TicketRejected,
    UnsupportedVersion,
)
from .keys import KeyRing
from .store import RedeemedStore
from .tickets import CHECK_TITLES, DEFAULT_TTL, TicketCodec, Trace, check_binding

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = (MODERN_VERSION, LEGACY_VERSION)
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

#: The only methods that may ever answer input_required (MRTR "Supported Requests").
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Methods the 2026-07-28 lifecycle removed; a modern request for them is an unknown method.
REMOVED_METHODS = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
     "notifications/initialized", "notifications/roots/list_changed"}
)

MAX_MESSAGE_BYTES = 1_000_000
MAX_JSON_DEPTH = 32
LIST_TTL_MS = 60_000

log = logging.getLogger("mrtr")


@dataclass(frozen=True)
class Policy:
    """Production switches: single use (the redeemed store) and sealed (AEAD) tickets."""

    single_use: bool = True
    sealed: bool = False


@dataclass
class InputRequired:
    questions: dict[str, dict[str, Any]]
    state: str | None


@dataclass
class Exchange:
    """What one incoming message produced."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    trace: Trace | None = None
    log: list[str] = field(default_factory=list)
    #: the client request id these messages belong to (routes shim traffic to the right stream)
    origin: Any = None
    http_status: int = 200

    @property
    def response(self) -> dict[str, Any] | None:
        """The last response (result or error) among the messages, if any."""
        return next((m for m in reversed(self.messages) if "method" not in m), None)


def _meta_result(result: dict[str, Any], server_info: dict[str, str]) -> dict[str, Any]:
    meta = dict(result.get("_meta") or {})
    meta[META_SERVER_INFO] = server_info
    return {**result, "_meta": meta}


class Server:
    """The shared, stateless part: catalog, keys, redeemed store, clock and policy."""

    def __init__(
        self,
        *,
        ring: KeyRing,
        store: RedeemedStore,
        clock: Clock,
        catalog: Catalog | None = None,
        policy: Policy = Policy(),
        ttl: int = DEFAULT_TTL,
        name: str = "mrtr-lab",
        instructions: str = "A teaching server: the deploy tool asks for confirmation with input_required.",
        shim_max_rounds: int = 8,
        shim_round_timeout: float = 300.0,
        on_log: Callable[[str], None] | None = None,
        jti: Callable[[], str] | None = None,
    ) -> None:
        from .tools import lesson_catalog  # the default catalog; local import keeps tools optional

        self.ring = ring
        self.store = store
        self.clock = clock
        self.catalog = catalog if catalog is not None else lesson_catalog()
        self.policy = policy
        self.ttl = ttl
        self.jti = jti  # ticket-id generator for deterministic demos; None means random ids
        self.codec = TicketCodec(ring, sealed=policy.sealed, ttl=ttl, jti=jti)
        self.info = {"name": name, "version": __version__}
        self.instructions = instructions
        self.shim_max_rounds = shim_max_rounds
        self.shim_round_timeout = shim_round_timeout
        self.on_log = on_log

    def with_policy(self, policy: Policy) -> Server:
        """The same server (keys, store, clock, catalog) under other switches."""
        clone = object.__new__(Server)
        clone.__dict__.update(self.__dict__)
        clone.policy = policy
        clone.codec = TicketCodec(self.ring, sealed=policy.sealed, ttl=self.ttl, jti=self.jti)
        return clone

    def connect(self, principal: str, *, channel: bool = True) -> Connection:
        """A connection for one stdio process or one HTTP session (`channel`: can we ask the client?)."""
        return Connection(self, principal, channel=channel)

    def handle(self, message: Any, *, principal: str, check_text: bool = True) -> Exchange:
        """Serve one stateless message: the whole contract of the 2026-07-28 era.

        `check_text=False` is for adapters that parsed raw text already shown free of lone
        surrogates by `may_hold_surrogates`; everyone else lets the server scan the strings.
        """
        return Connection(self, principal, channel=False, stateless=True).receive(message, check_text=check_text)


@dataclass
class _ShimFlow:
    origin_id: Any
    method: str
    params: dict[str, Any]
    questions: dict[str, dict[str, Any]]
    state: str | None
    round: int
    deadline: float
    pending: dict[Any, str] = field(default_factory=dict)  # server request id -> question key
    answers: dict[str, Any] = field(default_factory=dict)
    sent: set[Any] = field(default_factory=set)  # server request ids already handed to the adapter


class CallContext:
    """What a handler sees: the request, the verified ticket (if any) and the means to ask."""

    def __init__(
        self,
        conn: Connection,
        *,
        method: str,
        target: str,
        arguments: dict[str, Any],
        input_responses: dict[str, Any] | None,
        capabilities: dict[str, Any],
        trace: Trace,
        now: float,
        progress_token: Any = None,
    ) -> None:
        self._conn = conn
        self.server = conn.server
        self.method = method
        self.target = target
        self.arguments = arguments
        self.input_responses = input_responses
        self.capabilities = capabilities
        self.principal = conn.principal
        self.trace = trace
        self.now = now
        #: verified ticket claims, or None when the request carried no ticket
        self.state: dict[str, Any] | None = None
        self._answered = False
        self._progress_token = progress_token

    def progress(self, progress: float, total: float | None = None) -> None:
        """Report progress; sent before the response only when the request carried a progressToken."""
        if self._progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self._progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        self._conn._outbox.append({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def string_arg(self, name: str, *, max_length: int = 200) -> str:
        value = self.arguments.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InvalidParams(f"argument {name!r} must be a non-empty string")
        if len(value) > max_length:
            raise InvalidParams(f"argument {name!r} is longer than {max_length} characters")
        return value

    def can_ask(self, request: dict[str, Any]) -> bool:
        return has_capability(self.capabilities, request)

    def ask(self, questions: dict[str, dict[str, Any]], *, work: dict[str, Any], step: str) -> InputRequired:
        """End this round with input_required: the questions, and the work sealed in a fresh ticket.

        Raises:
            MissingCapability: a question needs a capability the request did not declare.
        """
        missing: dict[str, Any] = {}
        for request in questions.values():
            if not self.can_ask(request):
                missing.update(required_capability(request))
        if missing:
            raise MissingCapability(missing)
        claims = self.server.codec.claims(
            now=self.now, sub=self.principal, method=self.method, target=self.target,
            arguments=self.arguments, work=work, step=step,
        )
        token = self.server.codec.encode(claims)
        self._conn._note(f"minted ticket {claims['jti']} for {self.principal} ({self.method} {self.target}, "
                         f"step {step}, expires in {self.server.ttl} s)")
        return InputRequired(questions, token)

    def answers(self, questions: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
        """The client's answers to `questions`, or None when one is missing or malformed.

        With a ticket present this runs the last two checks: answer included, then (when the
        answer is there and single use is on) not already redeemed.

        Raises:
            TicketRejected: the ticket was already redeemed.
            StoreUnavailable: the redeemed store cannot be reached; the ticket is not spent
                (HTTP 503, a retryable error, never the frozen ticket error).
        """
        self._answered = True
        responses = self.input_responses or {}
        problem = None
        for key, request in questions.items():
            if key not in responses:
                problem = f"no answer for {key!r}"
                break
            problem = answer_problem(request, responses[key])
            if problem:
                problem = f"{key!r}: {problem}"
                break
        if self.state is None:
            return None if problem else {k: responses[k] for k in questions}
        if problem:
            self.trace.record("answer", "fail", f"{problem}; the server asks again")
            self.trace.skip_rest("no answer to redeem")
            return None
        said = ", ".join(f"{k}: {responses[k].get('action', 'answered')}" for k in questions)
        self.trace.record("answer", "pass", said)
        if not self.server.policy.single_use:
            self.trace.record("single-use", "skipped", "spent tickets are not remembered", "switched-off")
        elif self._redeem():
            self.trace.record("single-use", "pass", f"ticket {self.state.get('jti')} redeemed now")
        else:
            reason = f"ticket {self.state.get('jti')} was already redeemed"
            self.trace.record("single-use", "fail", reason)
            raise TicketRejected("single-use", reason)
        return {k: responses[k] for k in questions}

    def _redeem(self) -> bool:
        state = self.state or {}
        try:
            return self.server.store.redeem(str(state.get("jti")), float(state["exp"]), self.now)
        except StoreUnavailable as exc:
            detail = "the redeemed store is unavailable: nothing was done and the ticket is not spent"
            self.trace.record("single-use", "skipped", detail, "unavailable")
            self._conn._note(f"single use not checked for ticket {state.get('jti')}: {detail}")
            log.warning("redeemed store unavailable, request refused with a retryable error: %s", exc.reason)
            raise


class Connection:
    """One conversation: a stdio process, an HTTP session, or a single stateless request."""

    def __init__(self, server: Server, principal: str, *, channel: bool = True, stateless: bool = False) -> None:
        self.server = server
        self.principal = principal
        self.channel = channel
        self.stateless = stateless
        self.legacy_version: str | None = None
        self.legacy_capabilities: dict[str, Any] = {}
        self.initialized = False
        self.closed = False
        self._ids = itertools.count(1)
        self._flows: dict[Any, _ShimFlow] = {}  # server request id -> flow
        self._log: list[str] = []
        self._outbox: list[dict[str, Any]] = []  # notifications that go out before this message's response

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
            return self._error_exchange(_safe_id(message), InvalidRequest(problem))
        if "method" not in message and "id" in message and ("result" in message or "error" in message):
            return self._client_response(message)
        return self._respond(message)

    def expire(self) -> Exchange:
        """Give up on shim rounds whose client has not answered in time."""
        self._log = []
        now = self.server.clock()
        out = Exchange(log=self._log)
        for flow in {id(f): f for f in self._flows.values()}.values():
            if now >= flow.deadline:
                self._drop(flow)
                self._note(f"shim: gave up on request {flow.origin_id!r} after {self.server.shim_round_timeout:.0f} s")
                out.messages.append(self._shim_failure(flow, "the client did not answer in time"))
                out.origin = flow.origin_id
        return out

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
            if not is_notification and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
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
            log.info("requestState rejected at “%s”: %s", CHECK_TITLES[exc.check], exc.reason)
            return self._error_exchange(None if is_notification else request_id, exc, trace)
        except ProtocolError as exc:
            return self._error_exchange(None if is_notification else request_id, exc, trace)
        except Exception:
            log.exception("internal error while serving %r", message.get("method"))
            self._note("internal error (details in the server log)")
            return self._error_exchange(None if is_notification else request_id, InternalError("Internal error"), trace)

    def _error_exchange(self, request_id: Any, exc: ProtocolError, trace: Trace | None = None) -> Exchange:
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            request_id = None
        return Exchange(
            messages=[{"jsonrpc": "2.0", "id": request_id, "error": exc.to_error()}],
            trace=trace, log=self._log, origin=request_id,
            http_status=exc.http_status,
        )

    def _note(self, line: str) -> None:
        self._log.append(line)
        log.debug(line)
        if self.server.on_log:
            self.server.on_log(line)

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

    def _modern(self, method: str, params: dict[str, Any] | None, trace: Trace) -> dict[str, Any]:
        if method in REMOVED_METHODS:
            raise MethodNotFound(f"Method not found: {method} (removed in {MODERN_VERSION})")
        if method not in MODERN_METHODS:
            raise MethodNotFound(f"Method not found: {method}")
        meta = (params or {}).get("_meta")
        if not isinstance(meta, dict):
            raise MissingMeta("Missing params._meta: every 2026-07-28 request declares its protocol version "
                              "and client capabilities there")
        if META_VERSION not in meta:
            raise MissingMeta(f"Missing _meta[{META_VERSION!r}]")
        version = meta[META_VERSION]
        if version not in SUPPORTED_VERSIONS:
            raise UnsupportedVersion(version, list(SUPPORTED_VERSIONS))
        caps = meta.get(META_CAPABILITIES)
        if META_CAPABILITIES not in meta:
            raise MissingMeta(f"Missing _meta[{META_CAPABILITIES!r}]")
        if not isinstance(caps, dict):
            raise MissingMeta(f"_meta[{META_CAPABILITIES!r}] must be an object")
        result = MODERN_METHODS[method](self, params or {}, caps, trace)
        if isinstance(result, InputRequired):
            body: dict[str, Any] = {"resultType": "input_required"}
            if result.questions:
                body["inputRequests"] = result.questions
            if result.state is not None:
                body["requestState"] = result.state
            return _meta_result(body, self.server.info)
        return _meta_result({**result, "resultType": "complete"}, self.server.info)

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        caps = params.get("capabilities", {})
        if not isinstance(caps, dict):
            raise InvalidParams("capabilities must be an object")
        self.legacy_version = requested if requested in LEGACY_VERSIONS else LEGACY_VERSION
        self.legacy_capabilities = caps
        self.initialized = True
        self._note(f"legacy session started at {self.legacy_version}; capabilities fixed: {sorted(caps)}")
        return {
            "protocolVersion": self.legacy_version,
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}, "completions": {}},
            "serverInfo": self.server.info,
            "instructions": self.server.instructions,
        }

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            self._note("client sent notifications/initialized")
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            for flow in list({id(f): f for f in self._flows.values()}.values()):
                if flow.origin_id == request_id:
                    self._drop(flow)
                    self._note(f"shim: request {request_id!r} cancelled by the client")

    # -- the calls that may ask for input --------------------------------------------------------

    def _call(self, method: str, params: dict[str, Any], caps: dict[str, Any], trace: Trace) -> Any:
        if method == "resources/read":
            target = params.get("uri")
            if not isinstance(target, str):
                raise InvalidParams("params.uri must be a string")
            entry = self.server.catalog.resource_for(target)
            if entry is None:
                raise InvalidParams(f"Resource not found: {target}", {"uri": target})
            arguments: dict[str, Any] = {}
        else:
            target = params.get("name")
            if not isinstance(target, str):
                raise InvalidParams("params.name must be a string")
            table = self.server.catalog.tools if method == "tools/call" else self.server.catalog.prompts
            entry = table.get(target)
            if entry is None:
                kind = "tool" if method == "tools/call" else "prompt"
                raise InvalidParams(f"Unknown {kind}: {target}")
            arguments = params.get("arguments", {})
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, dict):
                raise InvalidParams("params.arguments must be an object")
        responses = params.get("inputResponses")
        if "inputResponses" in params and not isinstance(responses, dict):
            raise InvalidParams("params.inputResponses must be an object mapping keys to answers")
        now = self.server.clock()
        meta = params.get("_meta")
        ctx = CallContext(self, method=method, target=target, arguments=arguments, input_responses=responses,
                          capabilities=caps, trace=trace, now=now,
                          progress_token=meta.get("progressToken") if isinstance(meta, dict) else None)
        if "requestState" in params:
            claims = self.server.codec.open(params["requestState"], trace)
            check_binding(claims, trace, principal=self.principal, now=now, method=method, target=target,
                          arguments=arguments)
            ctx.state = claims
        result = entry.handler(ctx)
        if ctx.state is not None and trace.first_failure is None and not isinstance(result, InputRequired):
            self._note(f"requestState accepted: ticket {ctx.state.get('jti')} for {self.principal}")
        if ctx.state is not None and not ctx._answered:
            trace.skip_rest("the handler finished without reading an answer", "not-needed")
        if isinstance(result, InputRequired):
            if method not in INPUT_REQUIRED_METHODS:  # pragma: no cover - guarded by the table below
                raise InternalError("input_required from a method that may not return it")
            if not result.questions and result.state is None:
                raise InternalError("input_required needs inputRequests or requestState")
            return result
        if method == "resources/read":
            retry = "inputResponses" in params or "requestState" in params
            # Results of retries must not be cached (caching utility); first-round reads may be.
            result = {**result, "ttlMs": 0 if retry else LIST_TTL_MS, "cacheScope": "private" if retry else "public"}
        return result

    # -- legacy era and the shim ---------------------------------------------------------------

    def _legacy(self, method: str, params: dict[str, Any], request_id: Any, trace: Trace) -> Any:
        if method == "ping":
            return {}
        if method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
            result = LIST_METHODS[method](self)
            return {k: v for k, v in result.items() if k not in ("ttlMs", "cacheScope")}
        if method == "completion/complete":
            return _complete(self, params)
        if method not in INPUT_REQUIRED_METHODS:
            raise MethodNotFound(f"Method not found: {method}")
        clean = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState", "_meta")}
        return self._legacy_round(method, clean, request_id, trace, round_no=1)

    def _legacy_round(self, method: str, params: dict[str, Any], request_id: Any, trace: Trace, *,
                      round_no: int) -> Any:
        try:
            result = self._call(method, params, self.legacy_capabilities, trace)
        except MissingCapability as exc:
            missing = sorted(exc.data["requiredCapabilities"])
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

    def _pending_requests(self, origin_id: Any) -> list[dict[str, Any]]:
        out = []
        for sid, flow in self._flows.items():
            if flow.origin_id == origin_id and sid in flow.pending and sid not in flow.sent:
                flow.sent.add(sid)
                question = flow.questions[flow.pending[sid]]
                out.append({"jsonrpc": "2.0", "id": sid, "method": question["method"],
                            "params": question.get("params", {})})
        return out

    def _client_response(self, message: dict[str, Any]) -> Exchange:
        sid = message.get("id")
        flow = self._flows.get(sid) if isinstance(sid, int | str) and not isinstance(sid, bool) else None
        if flow is None:
            self._note(f"ignored a response to unknown server request {sid!r}")
            return Exchange(log=self._log, http_status=202)
        key = flow.pending.pop(sid)
        del self._flows[sid]
        if "error" in message:
            self._drop(flow)
            error = message.get("error")
            text = error.get("message") if isinstance(error, dict) else None
            return Exchange(messages=[self._shim_failure(flow, f"the client answered with an error: {text!r}")],
                            log=self._log, origin=flow.origin_id, http_status=202)
        answer = message.get("result")
        if isinstance(answer, dict):
            answer = {k: v for k, v in answer.items() if k not in ("_meta", "resultType")}
        flow.answers[key] = answer
        if flow.pending:
            return Exchange(log=self._log, origin=flow.origin_id, http_status=202)
        trace = Trace()
        try:
            outcome = self._legacy_continue(flow, trace)
        except ProtocolError as exc:
            if isinstance(exc, TicketRejected):
                self._note(f"requestState rejected at “{CHECK_TITLES[exc.check]}”: {exc.reason}")
            reply = {"jsonrpc": "2.0", "id": flow.origin_id, "error": exc.to_error()}
            return Exchange(messages=[reply], trace=trace, log=self._log, origin=flow.origin_id, http_status=202)
        except Exception:
            log.exception("internal error in the legacy shim")
            reply = {"jsonrpc": "2.0", "id": flow.origin_id, "error": InternalError("Internal error").to_error()}
            return Exchange(messages=[reply], trace=trace, log=self._log, origin=flow.origin_id, http_status=202)
        if outcome is None:
            return Exchange(messages=self._pending_requests(flow.origin_id), trace=trace, log=self._log,
                            origin=flow.origin_id, http_status=202)
        reply = {"jsonrpc": "2.0", "id": flow.origin_id, "result": outcome}
        return Exchange(messages=[reply], trace=trace, log=self._log, origin=flow.origin_id, http_status=202)

    def _legacy_continue(self, flow: _ShimFlow, trace: Trace) -> Any:
        params = {**flow.params, "inputResponses": dict(flow.answers)}
        if flow.state is not None:
            params["requestState"] = flow.state  # byte for byte, as a modern client would echo it
        self._note(f"shim: re-running {flow.method} with the client's answers")
        return self._legacy_round(flow.method, params, flow.origin_id, trace, round_no=flow.round + 1)

    def _drop(self, flow: _ShimFlow) -> None:
        for sid in [s for s, f in self._flows.items() if f is flow]:
            del self._flows[sid]

    def _legacy_failure(self, method: str, reason: str) -> dict[str, Any]:
        self._note(f"shim: {reason}")
        if method == "tools/call":
            return {"content": [{"type": "text", "text": f"Could not finish: {reason}."}], "isError": True}
        raise InvalidRequest(f"Could not finish: {reason}.")

    def _shim_failure(self, flow: _ShimFlow, reason: str) -> dict[str, Any]:
        try:
            result = self._legacy_failure(flow.method, reason)
        except ProtocolError as exc:
            return {"jsonrpc": "2.0", "id": flow.origin_id, "error": exc.to_error()}
        return {"jsonrpc": "2.0", "id": flow.origin_id, "result": result}


# -- the method table (data: lessons read it too) ------------------------------------------------


def _list_tools(conn: Connection) -> dict[str, Any]:
    return {"tools": [t.describe() for t in conn.server.catalog.tools.values()],
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


def _list_prompts(conn: Connection) -> dict[str, Any]:
    return {"prompts": [p.describe() for p in conn.server.catalog.prompts.values()],
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


def _list_resources(conn: Connection) -> dict[str, Any]:
    return {"resources": [r.describe() for r in conn.server.catalog.resources.values()],
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


def _list_templates(conn: Connection) -> dict[str, Any]:
    return {"resourceTemplates": [t.describe() for t in conn.server.catalog.templates.values()],
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


def _complete(conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    """completion/complete: checks the reference, then offers no suggestions (nothing here is enumerable)."""
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, dict) or ref.get("type") not in ("ref/prompt", "ref/resource"):
        raise InvalidParams('params.ref must be {"type": "ref/prompt", "name": ...} '
                            'or {"type": "ref/resource", "uri": ...}')
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise InvalidParams("params.argument must be an object with a string name")
    catalog = conn.server.catalog
    if ref["type"] == "ref/prompt" and ref.get("name") not in catalog.prompts:
        raise InvalidParams(f"Unknown prompt: {ref.get('name')}")
    if ref["type"] == "ref/resource" and not any(t.uri_template == ref.get("uri") for t in catalog.templates.values()):
        raise InvalidParams(f"Unknown resource template: {ref.get('uri')}")
    return {"completion": {"values": [], "total": 0, "hasMore": False}}


def _discover(conn: Connection) -> dict[str, Any]:
    catalog = conn.server.catalog
    caps: dict[str, Any] = {"tools": {}}
    if catalog.prompts:
        caps["prompts"] = {}
    if catalog.resources or catalog.templates:
        caps["resources"] = {}
    if catalog.prompts or catalog.templates:
        caps["completions"] = {}
    return {"supportedVersions": list(SUPPORTED_VERSIONS), "capabilities": caps,
            "instructions": conn.server.instructions,
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


LIST_METHODS: dict[str, Callable[[Connection], dict[str, Any]]] = {
    "server/discover": _discover,
    "tools/list": _list_tools,
    "prompts/list": _list_prompts,
    "resources/list": _list_resources,
    "resources/templates/list": _list_templates,
}


MethodHandler = Callable[[Connection, dict[str, Any], dict[str, Any], Trace], Any]


def _listing(fn: Callable[[Connection], dict[str, Any]]) -> MethodHandler:
    def handler(conn: Connection, params: dict[str, Any], caps: dict[str, Any], trace: Trace) -> Any:
        return fn(conn)

    return handler


def _carrier(method: str) -> MethodHandler:
    def handler(conn: Connection, params: dict[str, Any], caps: dict[str, Any], trace: Trace) -> Any:
        return conn._call(method, params, caps, trace)

    return handler


def _table() -> dict[str, MethodHandler]:
    table = {name: _listing(fn) for name, fn in LIST_METHODS.items()}
    table.update({name: _carrier(name) for name in sorted(INPUT_REQUIRED_METHODS)})
    table["completion/complete"] = lambda conn, params, caps, trace: _complete(conn, params)
    return table


#: Every 2026-07-28 method this server answers. Only the three in INPUT_REQUIRED_METHODS can ask.
MODERN_METHODS = _table()


_SURROGATE = re.compile("[\ud800-\udfff]")
#: How a lone surrogate can arrive in raw JSON: as a \\uD800-\\uDFFF escape (or, in text that was
#: never UTF-8, as the character itself). Raw text without either cannot produce one when parsed.
_SURROGATE_IN_TEXT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE_IN_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def may_hold_surrogates(raw: str | bytes) -> bool:
    """Whether raw JSON text could parse to a string holding a lone surrogate (a cheap C scan)."""
    if isinstance(raw, bytes):
        return _SURROGATE_IN_BYTES.search(raw) is not None
    return _SURROGATE_IN_TEXT.search(raw) is not None


def _nesting_problem(value: Any, limit: int) -> str | None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return f"message nests deeper than {limit} levels"
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
    return None


def shape_problem(value: Any, limit: int = MAX_JSON_DEPTH, *, check_text: bool = True) -> str | None:
    """Why a parsed message cannot be served safely: too deep, or text that is not valid Unicode.

    JSON's \\u escapes can smuggle in lone UTF-16 surrogates, which no UTF-8 encoder will write
    back out; refusing them here keeps every later digest, log line and page render safe.
    `check_text=False` skips that scan when the raw text has already been shown free of them.
    """
    if type(value) in (dict, list):
        problem = _nesting_problem(value, limit)
        if problem:
            return problem
    if check_text and _SURROGATE.search(json.dumps(value, ensure_ascii=False)):
        return "message contains a lone UTF-16 surrogate, which is not valid Unicode text"
    return None


def _safe_id(message: dict[str, Any]) -> Any:
    request_id = message.get("id")
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


def replace_policy(policy: Policy, **changes: bool) -> Policy:
    return replace(policy, **changes)


def iter_checks(exchanges: Iterable[Exchange]) -> list[dict[str, str]]:
    return [c for e in exchanges if e.trace for c in e.trace.as_dicts()]
