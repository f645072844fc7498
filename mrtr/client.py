"""A strict dual-era MCP client that resolves input_required: the one learners copy, `mrtr call` and the tests run.

It probes `server/discover` (retrying once with a version from `data.supported` after `-32022`) and falls back to
the 2025-11-25 `initialize` only for a server that does not know `server/discover`. `list_tools` judges every tool
definition (`mrtr.tooldefs`); an invalid one is never called. In the modern era each `input_required` is answered
through callbacks and retried with a new id, only this round's answers in `inputResponses` and the newest ticket
echoed byte for byte (none when the server gave none), for a bounded number of rounds; a round that carries only a
ticket is retried after a growing pause and without `inputResponses`. Whatever breaks the protocol is refused with
its own error (`mrtr.client_errors`), never answered: an unknown `resultType`, an `input_required` with neither
member, a question of a kind or mode the client did not declare. In the legacy era it answers the server's own
requests as they arrive. Every message sent and received is kept in `transcript`.

The client does no I/O itself: a transport moves messages (`InMemoryTransport` here; HTTP and stdio in
`mrtr_client`), and the pause between state-only rounds is an injected `sleep`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ._connection import Connection
from .client_errors import (
    BadAnswer,
    ClientError,
    EmptyInputRequired,
    InvalidTool,
    MalformedResult,
    RoundsExceeded,
    ServerError,
    TransportError,
    UndeclaredRequest,
    UnknownResultType,
)
from .clock import Sleep, system_sleep
from .forms import answer_by_schema, content_problems
from .messages import JSON, JSONObject, as_list, as_object, error_json, error_of
from .protocol import (
    INPUT_REQUIRED_METHODS,
    LEGACY_VERSION,
    LEGACY_VERSIONS,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    MODERN_VERSION,
)
from .tooldefs import ToolDef, read_tools

#: Answers one embedded request (`{"method", "params"}`) with what goes in `inputResponses` under its key.
Answerer = Callable[[JSONObject], JSONObject]
#: Answers any embedded request, told its key too (scripted answers are keyed): `on_input(key, request)`.
KeyedAnswerer = Callable[[str, JSONObject], JSONObject]

#: The embedded requests 2026-07-28 defines.
INPUT_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")
#: The pause before retrying a round that carried only a ticket: doubled each such round, up to the most.
PACE_FIRST, PACE_MOST = 0.05, 0.25
#: How many pages of tools/list the client reads before it stops following nextCursor.
MAX_LIST_PAGES = 20
#: The codes a 2026-07-28 server answers with: a probe refused with one of them reached a modern server.
MODERN_ERROR_CODES = frozenset({-32020, -32021, -32022})
ACTIONS = ("accept", "decline", "cancel")


class Transport(Protocol):
    def send(self, message: JSONObject) -> None: ...

    def receive(self, timeout: float) -> JSONObject | None: ...


@dataclass(frozen=True)
class Line:
    direction: str  # "-->" sent, "<--" received
    message: JSONObject
    note: str = ""

    @property
    def text(self) -> str:
        return json.dumps(self.message, separators=(",", ":"), ensure_ascii=False)


class InMemoryTransport:
    """Talks to a `Connection` in this process, through JSON text as a real transport would."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._inbox: list[JSONObject] = []

    def send(self, message: JSONObject) -> None:
        self._inbox.extend(self.connection.receive_text(json.dumps(message)).messages)

    def receive(self, timeout: float) -> JSONObject | None:
        return self._inbox.pop(0) if self._inbox else None


def declared_capabilities(*, url_mode: bool = False, sampling: bool = False, roots: bool = False) -> JSONObject:
    """The client capabilities to declare: form elicitation always, URL mode, sampling and roots when answered."""
    caps: JSONObject = {"elicitation": {"form": {}, "url": {}} if url_mode else {"form": {}}}
    if sampling:
        caps["sampling"] = {}
    if roots:
        caps["roots"] = {}
    return caps


def declares(capabilities: JSONObject, request: JSONObject) -> bool:
    """Whether `capabilities` cover the embedded `request` (a bare `elicitation: {}` means form mode only)."""
    method = request.get("method")
    if method == "elicitation/create":
        elicitation = capabilities.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        mode = as_object(request.get("params")).get("mode", "form")
        return mode in elicitation or (mode == "form" and not elicitation)
    if method == "sampling/createMessage":
        return isinstance(capabilities.get("sampling"), dict)
    return method == "roots/list" and isinstance(capabilities.get("roots"), dict)


def result_kind(result: JSONObject) -> str:
    """`resultType`, with an absent one read as "complete" (a pre-2026 server)."""
    kind = result.get("resultType", "complete")
    return kind if isinstance(kind, str) else repr(kind)


class Client:
    """One MCP client on one transport. Construct it, `connect()` (or let the first call do it), then call."""

    def __init__(
        self,
        transport: Transport,
        *,
        on_elicit: Answerer = answer_by_schema,
        on_sample: Answerer | None = None,
        on_roots: Answerer | None = None,
        on_input: KeyedAnswerer | None = None,
        capabilities: JSONObject | None = None,
        client_info: dict[str, str] | None = None,
        max_rounds: int = 10,
        timeout: float = 10.0,
        sleep: Sleep = system_sleep,
    ) -> None:
        self.transport = transport
        self.on_elicit = on_elicit
        self.on_sample = on_sample
        self.on_roots = on_roots
        self.on_input = on_input
        self.capabilities = capabilities if capabilities is not None else declared_capabilities(
            sampling=on_sample is not None, roots=on_roots is not None)
        self.client_info = client_info or {"name": "mrtr-lab-client", "version": "1.0"}
        self.max_rounds = max_rounds
        self.timeout = timeout
        self.sleep = sleep
        self.era: str | None = None
        self.version = MODERN_VERSION
        self.discovered: JSONObject = {}
        self.tools: dict[str, ToolDef] = {}
        self.transcript: list[Line] = []
        self._next_id = 1

    # -- plumbing --------------------------------------------------------------------------------

    def _send(self, message: JSONObject, note: str = "") -> None:
        self.transcript.append(Line("-->", message, note))
        self.transport.send(message)

    def _new_id(self) -> int:
        request_id, self._next_id = self._next_id, self._next_id + 1
        return request_id

    def meta(self, version: str | None = None) -> JSONObject:
        """The `_meta` every modern request carries: the version, the capabilities, who the client is."""
        return {META_VERSION: version or self.version, META_CAPABILITIES: self.capabilities,
                META_CLIENT_INFO: dict(self.client_info)}

    def request(self, method: str, params: JSONObject | None = None, *, note: str = "") -> JSONObject:
        """Send one request and return its response, answering server requests on the way.

        Raises:
            TransportError: no response came within `timeout` (or the transport could not deliver one).
        """
        request_id = self._new_id()
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message, note)
        while True:
            incoming = self.transport.receive(self.timeout)
            if incoming is None:
                raise TransportError(f"no response to {method} (id {request_id}) within {self.timeout:g} s")
            self.transcript.append(Line("<--", incoming))
            if "method" in incoming and "id" in incoming:
                self._serve(incoming)
            elif incoming.get("id") == request_id and "method" not in incoming:
                return incoming

    def _serve(self, request: JSONObject) -> None:
        """Answer a request the server sent (the 2025-11-25 era); a modern server sends none, so none is answered."""
        method, request_id = request.get("method"), request.get("id")
        answerer = {"elicitation/create": self.on_elicit, "sampling/createMessage": self.on_sample,
                    "roots/list": self.on_roots}.get(method if isinstance(method, str) else "")
        error: JSONObject | None = None
        if self.era != "legacy" or answerer is None:
            error = {"code": -32601, "message": f"this client does not answer {method} here"}
        elif not declares(self.capabilities, request):
            error = {"code": -32602, "message": "this client did not declare that elicitation mode"}
        reply: JSONObject = {"jsonrpc": "2.0", "id": request_id}
        if error is None and answerer is not None:
            question: JSONObject = {"method": method, "params": as_object(request.get("params"))}
            reply["result"] = self.on_input(str(request_id), question) if self.on_input else answerer(question)
        else:
            reply["error"] = error
        self._send(reply, "the client answers the server's question")

    def notify(self, method: str, params: JSONObject | None = None) -> None:
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    # -- lifecycle -------------------------------------------------------------------------------

    def connect(self, *, prefer: str = "auto") -> str:
        """Pick the era: `server/discover` (with one retry after -32022), else the 2025-11-25 `initialize`.

        Raises:
            ClientError: the server and this client share no protocol version, or the handshake failed.
        """
        if prefer != "legacy" and self._discover():
            self.era = "modern"
            return self.era
        self._initialize()
        self.era = "legacy"
        return self.era

    def _discover(self) -> bool:
        """Whether the server is modern (and on which version); False for one that does not know server/discover."""
        for attempt in (1, 2):
            try:
                response = self.request("server/discover", {"_meta": self.meta()}, note="probe for a modern server")
            except TransportError:
                return False
            error = error_of(response)
            if error is None:
                result = as_object(response.get("result"))
                self.discovered = result
                return self._agree(as_list(result.get("supportedVersions")), "server/discover")
            if error["code"] == -32022 and attempt == 1:
                supported = as_list(as_object(error.get("data")).get("supported"))
                if not self._agree(supported, "-32022"):
                    return False
                continue  # the version is now one the server listed: ask again with it
            if error["code"] in MODERN_ERROR_CODES:
                raise ServerError(f"server/discover was refused: {error['message']} ({error['code']})",
                                  error_json(error))
            return False
        return False

    def _agree(self, versions: list[JSON], where: str) -> bool:
        """Take the modern version when `versions` lists it; False to fall back to the legacy handshake."""
        if MODERN_VERSION in versions:
            self.version = MODERN_VERSION
            return True
        if not versions or any(v in LEGACY_VERSIONS for v in versions):
            return False
        shown = ", ".join(str(v) for v in versions)
        raise ClientError(f"no protocol version in common: the server supports {shown} ({where}); this client "
                          f"speaks {MODERN_VERSION} and {LEGACY_VERSION}")

    def _initialize(self) -> None:
        caps = {k: v for k, v in self.capabilities.items() if k in ("elicitation", "sampling", "roots")}
        response = self.request("initialize", {"protocolVersion": LEGACY_VERSION, "capabilities": caps,
                                               "clientInfo": dict(self.client_info)})
        result = self._result(response, "initialize")
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise ClientError(f"initialize answered protocol version {version!r}, which this client does not speak")
        self.version = str(version)
        self.notify("notifications/initialized")

    # -- listing and calling -----------------------------------------------------------------------

    def list_tools(self) -> list[ToolDef]:
        """Every tool the server lists (all pages), each judged; `tools` keeps them by name for `call_tool`."""
        if self.era is None:
            self.connect()
        tools: list[ToolDef] = []
        cursor: JSON = None
        for _page in range(MAX_LIST_PAGES):
            params: JSONObject = {"_meta": self.meta()} if self.era == "modern" else {}
            if isinstance(cursor, str):
                params["cursor"] = cursor
            result = self._result(self.request("tools/list", params), "tools/list")
            tools += read_tools(result)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        self.tools = {tool.name: tool for tool in tools if tool.name}
        return tools

    def call_tool(self, name: str, arguments: JSONObject) -> JSONObject:
        """Call a tool to completion and return its final result.

        Raises:
            InvalidTool: `list_tools` found the tool's definition invalid; nothing was sent.
            ClientError: see `mrtr.client_errors` for each way a call is refused or fails.
        """
        tool = self.tools.get(name)
        if tool is not None and not tool.valid:
            raise InvalidTool(f"the tool {name!r} is not called: {'; '.join(tool.problems)}")
        return self._call("tools/call", {"name": name, "arguments": arguments})

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> JSONObject:
        """Get a prompt to completion (it may ask for input like a tool)."""
        return self._call("prompts/get", {"name": name, "arguments": dict(arguments or {})})

    def read_resource(self, uri: str) -> JSONObject:
        """Read a resource to completion (it may ask for input like a tool)."""
        return self._call("resources/read", {"uri": uri})

    def _call(self, method: str, base: JSONObject) -> JSONObject:
        if self.era is None:
            self.connect()
        if self.era == "legacy":
            return self._result(self.request(method, base), method)
        return self._rounds(method, base)

    def _rounds(self, method: str, base: JSONObject) -> JSONObject:
        """The MRTR loop: every retry is built afresh from `base`, so nothing of one round leaks into the next
        beyond the newest ticket, and nothing of this call into any other."""
        params: JSONObject = {**base, "_meta": self.meta()}
        pause = PACE_FIRST
        for retry in range(self.max_rounds + 1):
            result = self._result(self.request(method, params), method)
            if result_kind(result) == "complete":
                return result
            questions, ticket = self._input_required(result, method)
            if retry == self.max_rounds:
                break
            params = {**base, "_meta": self.meta()}
            if questions:
                params["inputResponses"] = {key: self._answer(key, q) for key, q in questions.items()}
                pause = PACE_FIRST
            else:  # only a ticket: the server is handing its work on; do not hammer it
                self.sleep(pause)
                pause = min(pause * 2, PACE_MOST)
            if ticket is not None:
                params["requestState"] = ticket  # echoed exactly, never parsed
        target = base.get("name", base.get("uri"))
        raise RoundsExceeded(f"{method} {target} still asked for input after {self.max_rounds} retries; the client "
                             f"stops at max_rounds={self.max_rounds}")

    def _input_required(self, result: JSONObject, method: str) -> tuple[dict[str, JSONObject], str | None]:
        """The questions and the ticket of an input_required result, every question checked before any is answered."""
        if method not in INPUT_REQUIRED_METHODS:
            raise MalformedResult(f"{method} answered input_required, which only tools/call, prompts/get and "
                                  "resources/read may")
        raw_questions, ticket = result.get("inputRequests"), result.get("requestState")
        if raw_questions is not None and not isinstance(raw_questions, dict):
            raise MalformedResult("inputRequests is not an object")
        if ticket is not None and not isinstance(ticket, str):
            raise MalformedResult("requestState is not a string")
        if not raw_questions and ticket is None:
            raise EmptyInputRequired("the server answered input_required with neither inputRequests nor "
                                     "requestState; there is nothing to answer and nothing to echo")
        questions: dict[str, JSONObject] = {}
        for key, question in (raw_questions or {}).items():
            if not isinstance(question, dict) or not isinstance(question.get("method"), str):
                raise MalformedResult(f"input request {key!r} is not an object with a method")
            self._check_declared(key, question)
            questions[key] = question
        return questions, ticket

    def _check_declared(self, key: str, question: JSONObject) -> None:
        method = question["method"]
        if method not in INPUT_METHODS:
            raise UndeclaredRequest(f"input request {key!r} is {method!r}, which is not an embedded request "
                                    f"2026-07-28 defines ({', '.join(INPUT_METHODS)})")
        params = question.get("params", {})
        if not isinstance(params, dict):
            raise MalformedResult(f"input request {key!r} has params that are not an object")
        mode = params.get("mode", "form")
        if method == "elicitation/create" and mode not in ("form", "url"):
            raise UndeclaredRequest(f"input request {key!r} asks in elicitation mode {mode!r}, which 2026-07-28 "
                                    "does not define")
        answerer = self.on_input or {"sampling/createMessage": self.on_sample,
                                     "roots/list": self.on_roots}.get(method, self.on_elicit)
        if not declares(self.capabilities, question) or answerer is None:
            what = f"{mode}-mode elicitation" if method == "elicitation/create" else method
            raise UndeclaredRequest(f"input request {key!r} is {what}, which this client did not declare "
                                    f"(it declared {json.dumps(self.capabilities, separators=(',', ':'))})")

    def _answer(self, key: str, question: JSONObject) -> JSONObject:
        method = question["method"]
        if self.on_input is not None:
            answer = self.on_input(key, question)
        elif method == "sampling/createMessage" and self.on_sample is not None:
            return self.on_sample(question)
        elif method == "roots/list" and self.on_roots is not None:
            return self.on_roots(question)
        else:
            answer = self.on_elicit(question)
        if method == "elicitation/create":
            check_elicit_answer(key, as_object(question.get("params")), answer)
        return answer

    def _result(self, response: JSONObject, method: str) -> JSONObject:
        error = error_of(response)
        if error is not None:
            raise ServerError(f"{method}: {error['message']} ({error['code']})", error_json(error))
        result = response.get("result")
        if "error" in response or not isinstance(result, dict):
            raise MalformedResult(f"the response to {method} has neither a result object nor a well-formed error")
        kind = result_kind(result)
        if kind not in ("complete", "input_required"):
            raise UnknownResultType(f"{method} answered resultType {kind!r}, which this client does not know "
                                    "(2026-07-28 defines complete and input_required)")
        if kind == "input_required" and (self.era == "legacy" or method not in INPUT_REQUIRED_METHODS):
            raise MalformedResult(f"{method} answered input_required, which it may not here")
        return result


def check_elicit_answer(key: str, params: JSONObject, answer: JSONObject) -> None:
    """Refuse an answer the client must not send: an unknown action, content on a URL-mode or non-accept answer, or
    accepted form content that does not fit the form (missing required fields, wrong types or choices).

    Raises:
        BadAnswer: naming the question's key and what is wrong.
    """
    action = answer.get("action")
    if action not in ACTIONS:
        raise BadAnswer(f"the answer to {key!r} has action {action!r}; it must be accept, decline or cancel")
    if "content" in answer and (action != "accept" or params.get("mode") == "url"):
        raise BadAnswer(f"the answer to {key!r} carries content, which only an accepted form may")
    if action == "accept" and params.get("mode", "form") == "form":
        content = answer.get("content", {})
        if not isinstance(content, dict):
            raise BadAnswer(f"the answer to {key!r} has content that is not an object")
        problems = content_problems(params.get("requestedSchema"), content)
        if problems:
            raise BadAnswer(f"the answer to {key!r} does not fit its form: {'; '.join(problems)}")
