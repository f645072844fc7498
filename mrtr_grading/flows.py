"""The grading server's flows, sans-IO: the tools a client under test is pointed at, each playing one scripted
`input_required` flow, and `respond`, which answers one JSON-RPC request from its method and params alone.

What this module owns: the flows (`FLOWS`, one tool each, decided from the request alone, since the server keeps no
session) and the tickets they hand out. It never grades (a flow answers whatever a client sends, so a flawed client
still reaches the end of the flow and the grade is read afterwards from the recording), and it opens no socket:
the HTTP server of `mrtr check-client`, the web page and the in-page lesson are adapters around it.
"""

from __future__ import annotations

from collections.abc import Callable

from mrtr import JSON, JSONObject, as_object
from mrtr.protocol import META_CAPABILITIES, META_VERSION, MODERN_VERSION

#: A ticket made to break every re-encoding: leading and trailing spaces, non-ASCII, a literal `\u` escape,
#: JSON-looking text (a client that parses and re-dumps it changes the spacing) and 4 KB of length.
HARD_TICKET = (' {"grader": "mrtr", "note": "caf\u00e9 \u2014 \u00fcn\u00efc\u00f6d\u00e9 \\u00e9 \\n", '
               '"n": 1.0, "pad": "' + "x" * 4000 + '"}  ')
#: Calls of the never-ending tool the server answers before it gives up on the client with an error.
ENDLESS_CAP = 40
#: The schema the typed-answers flow asks with: a boolean, an enum, a bounded number with a default, a string.
TYPED_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "agree": {"type": "boolean", "title": "Agree?"},
        "size": {"type": "string", "enum": ["small", "large"], "title": "Size"},
        "count": {"type": "integer", "minimum": 2, "maximum": 5, "default": 3, "title": "Count"},
        "label": {"type": "string", "default": "grade", "title": "Label"},
    },
    "required": ["agree", "size", "count"],
}
#: The keys the multi-round flow asks in rounds 1, 2 and 3.
ROUND_KEYS = ("first", "second", "third")
#: What the grading run's user chooses for the user-choice flow's questions (told to the client's user through
#: MRTR_CHECK_CLIENT_CHOICES; each question's message starts with its key, for drivers that see no keys).
CHOICES: dict[str, str] = {"declined": "decline", "dismissed": "cancel"}
#: The environment variable a client's user reads the choices from (`mrtr check-client --user-choices` sets it).
CHOICES_VARIABLE = "MRTR_CHECK_CLIENT_CHOICES"
#: The error a server answers for a protocol version it does not serve (2026-07-28 basic/versioning).
UNSUPPORTED_VERSION = -32022


def form(key: str, message: str, schema: JSONObject | None = None) -> JSONObject:
    """One `inputRequests` entry: a form elicitation under `key`."""
    requested = schema or {"type": "object", "properties": {"ok": {"type": "boolean", "title": "OK?"}},
                           "required": ["ok"]}
    return {key: {"method": "elicitation/create",
                  "params": {"mode": "form", "message": message, "requestedSchema": requested}}}


def asking(questions: JSONObject | None, ticket: str | None) -> JSONObject:
    result: JSONObject = {"resultType": "input_required"}
    if questions is not None:
        result["inputRequests"] = questions
    if ticket is not None:
        result["requestState"] = ticket
    return result


def done(text: str) -> JSONObject:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}]}


def _round(params: JSONObject, prefix: str) -> int:
    """The round a retry is in, read from the grader's own ticket (`prefix:N`); 1 for a first call."""
    ticket = params.get("requestState")
    if isinstance(ticket, str) and ticket.startswith(prefix + ":"):
        number = ticket.removeprefix(prefix + ":").split(":")[0]
        return int(number) + 1 if number.isdigit() else 1
    return 1


def flow_ticket_echo(params: JSONObject, calls: int) -> JSONObject:
    if "requestState" not in params and "inputResponses" not in params:
        return asking(form("ok", "Echo the ticket byte for byte."), HARD_TICKET)
    return done("echoed" if params.get("requestState") == HARD_TICKET else "the ticket came back changed")


def flow_retry_rounds(params: JSONObject, calls: int) -> JSONObject:
    n = _round(params, "retry")
    return asking(form("ok", f"Round {n} of 3."), f"retry:{n}") if n < 3 else done("three rounds")


def flow_multi_round(params: JSONObject, calls: int) -> JSONObject:
    n = _round(params, "multi")
    if n > len(ROUND_KEYS):
        return done("every round answered")
    return asking(form(ROUND_KEYS[n - 1], f"Round {n}: a new question."), f"multi:{n}:{'z' * n}")


def flow_plain(params: JSONObject, calls: int) -> JSONObject:
    return done("nothing asked")


def flow_no_ticket(params: JSONObject, calls: int) -> JSONObject:
    if "inputResponses" in params:
        return done("answered")
    return asking(form("ok", "A question without a ticket."), None)


def flow_endless(params: JSONObject, calls: int) -> JSONObject:
    return asking(form("ok", "Again? (this server never stops asking)"), f"endless:{calls}")


def flow_state_only(params: JSONObject, calls: int) -> JSONObject:
    n = _round(params, "state")
    return asking(None, f"state:{n}") if n < 3 else done("the work finished")


def flow_url_mode(params: JSONObject, calls: int) -> JSONObject:
    if "inputResponses" in params:
        return done("the page was answered")
    page: JSONObject = {"page": {"method": "elicitation/create",
                     "params": {"mode": "url", "message": "Open this page.", "elicitationId": "grade-1",
                                "url": "https://example.invalid/grade"}}}
    return asking(page, "url:1")


def flow_typed_answers(params: JSONObject, calls: int) -> JSONObject:
    if "inputResponses" in params:
        return done("answered")
    return asking(form("settings", "Pick the settings.", TYPED_SCHEMA), "typed:1")


def flow_unknown_result(params: JSONObject, calls: int) -> JSONObject:
    return {"resultType": "bogus", "content": [{"type": "text", "text": "a result type no revision defines"}]}


def flow_empty_input_required(params: JSONObject, calls: int) -> JSONObject:
    return {"resultType": "input_required"}


def flow_headers(params: JSONObject, calls: int) -> JSONObject:
    if "inputResponses" in params:
        return done("headers and _meta seen")
    return asking(form("ok", "One question, so that a retry is graded too."), "headers:1")


def undeclared_kind(params: JSONObject) -> JSONObject | None:
    """An embedded request of a kind the call's `_meta` capabilities do not declare: roots, else sampling."""
    declared = as_object(as_object(params.get("_meta")).get(META_CAPABILITIES))
    if "roots" not in declared:
        return {"method": "roots/list", "params": {}}
    if "sampling" not in declared:
        return {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi."}}], "maxTokens": 10}}
    return None


def flow_undeclared_kind(params: JSONObject, calls: int) -> JSONObject:
    if "inputResponses" in params:
        return done("answered a request it never declared")
    kind = undeclared_kind(params)
    if kind is None:
        return done("the client declares roots and sampling: nothing undeclared to send")
    return asking({"undeclared": kind}, "undeclared:1")


def flow_malformed_result(params: JSONObject, calls: int) -> JSONObject:
    return {"resultType": "input_required", "inputRequests": "not an object", "requestState": 42}


def flow_user_choice(params: JSONObject, calls: int) -> JSONObject:
    if "inputResponses" in params:
        return done("the user's choices arrived")
    questions: JSONObject = {}
    for key, action in CHOICES.items():
        questions.update(form(key, f"{key}: the grading run's user chooses {action} for this question."))
    return asking(questions, "choice:1")


def flow_version_retry(params: JSONObject, calls: int) -> JSONObject:
    return done("the retry after -32022 arrived")


def version_error(params: JSONObject) -> JSONObject:
    """-32022 with both data members the schema requires: what the call asked for and what the server serves."""
    requested = as_object(params.get("_meta")).get(META_VERSION)
    return {"code": UNSUPPORTED_VERSION, "message": "Unsupported protocol version",
            "data": {"supported": [MODERN_VERSION], "requested": requested if isinstance(requested, str) else ""}}


ToolFlow = Callable[[JSONObject, int], JSONObject]
#: The tools, in the order they are listed (an unrelated call comes after a multi-round one, so there is a ticket
#: to leak). Each name is the rule's own tool.
FLOWS: dict[str, ToolFlow] = {
    "grade_ticket_echo": flow_ticket_echo,
    "grade_retry_rounds": flow_retry_rounds,
    "grade_multi_round": flow_multi_round,
    "grade_plain": flow_plain,
    "grade_no_ticket": flow_no_ticket,
    "grade_typed_answers": flow_typed_answers,
    "grade_url_mode": flow_url_mode,
    "grade_state_only": flow_state_only,
    "grade_headers": flow_headers,
    "grade_user_choice": flow_user_choice,
    "grade_version_retry": flow_version_retry,
    "grade_unknown_result": flow_unknown_result,
    "grade_undeclared_kind": flow_undeclared_kind,
    "grade_malformed_result": flow_malformed_result,
    "grade_empty_input_required": flow_empty_input_required,
    "grade_endless": flow_endless,
}


def tool_list() -> list[JSONObject]:
    tools: list[JSONObject] = []
    for name in FLOWS:
        schema: JSONObject = {"type": "object", "properties": {}}
        if name == "grade_retry_rounds":
            schema = {"type": "object", "properties": {"word": {"type": "string", "default": "same"}},
                      "required": ["word"]}
        tools.append({"name": name, "description": f"mrtr check-client: {name}", "inputSchema": schema})
    return tools


#: What a discover or list result carries besides its payload: never cached, the grading run is private.
CACHED: JSONObject = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}


def respond(method: str, params: JSONObject, calls: int) -> JSONObject:
    """`{"result": ...}` or `{"error": ...}` for one request; `calls` counts this tool's calls, this one too."""
    if method == "server/discover":
        # resultType and the cache hints on every such result: 2026-07-28 requires them, and the TS SDK client
        # refuses a result without them (so it could not be graded at all)
        return {"result": {**CACHED, "supportedVersions": [MODERN_VERSION],
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "mrtr check-client", "version": "1"}}}
    if method == "tools/list":
        tools: list[JSON] = list(tool_list())
        return {"result": {**CACHED, "tools": tools}}
    if method != "tools/call":
        return {"error": {"code": -32601, "message": f"the grading server does not serve {method[:60]!r}"}}
    flow = FLOWS.get(str(params.get("name")))
    if flow is None:
        return {"error": {"code": -32602, "message": "unknown tool"}}
    if flow is flow_endless and calls > ENDLESS_CAP:
        return {"error": {"code": -32603, "message": f"the grader stopped answering after {ENDLESS_CAP} calls"}}
    if flow is flow_version_retry and calls == 1:  # the first call is refused; a retry is served
        return {"error": version_error(params)}
    return {"result": flow(params, calls)}
