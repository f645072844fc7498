"""The types of what crosses the wire, and the few builders that make well-formed messages.

What this module owns: `JSON` (every value a JSON text can hold), `JSONObject`, `RequestId`, the typed
shapes a caller reads back (`Request`, `ErrorObject`, `InputRequiredResult`, `InputRequest`, `ListedTool`)
and the readers that check a peer's message before giving one (`error_of`, `input_required_of`,
`listed_tools`), the builders of JSON-RPC messages, and `as_object`/`as_list`, which narrow a JSON value
without trusting it. Messages stay plain JSON objects, so an adapter writes them as they are and a client
sends what the builders made; the types say what is in them. The shapes are TypedDicts, not msgspec
Structs: they cost nothing at run time, and the in-page checker runs these types on Pyodide, which has no
msgspec. It must never import another module of the core: everything else builds on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypeAlias, TypedDict, cast

#: Every value a JSON text can hold. Values read from a client are this until a check narrows them.
JSON: TypeAlias = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]
JSONObject: TypeAlias = dict[str, JSON]
#: A JSON-RPC request id: a string or an integer (never a boolean; `valid_request_id` checks).
RequestId: TypeAlias = str | int


@dataclass(frozen=True)
class Request:
    """A JSON-RPC request or notification whose envelope has been checked (`protocol.parse_request`).

    `id` is None for a notification; `params` is None when the message had none. What is inside
    `params` is still the client's and is checked by whoever reads it.
    """

    id: RequestId | None
    method: str
    params: JSONObject | None

    @property
    def is_notification(self) -> bool:
        return self.id is None


class ErrorObject(TypedDict):
    """The `error` member of a JSON-RPC error response."""

    code: int
    message: str
    data: NotRequired[JSON]


class InputRequiredResult(TypedDict):
    """A 2026-07-28 result that ends a round: the questions, and the ticket to bring back."""

    resultType: Literal["input_required"]
    inputRequests: NotRequired[dict[str, JSONObject]]
    requestState: NotRequired[str]


class InputRequest(TypedDict):
    """One question of an `input_required` result: a request the client answers (`elicitation/create`,
    `sampling/createMessage` or `roots/list`), embedded without `jsonrpc` or `id`."""

    method: str
    params: JSONObject


class ListedTool(TypedDict):
    """A tool as a server lists it in `tools/list`'s result (`listed_tools`): its name checked, the rest the
    server's own JSON, read with `as_object` where a shape is needed."""

    name: str
    title: NotRequired[JSON]
    description: NotRequired[JSON]
    inputSchema: NotRequired[JSON]
    annotations: NotRequired[JSON]


def as_object(value: JSON | object) -> JSONObject:
    """`value` when it is a JSON object, else an empty one (for reading optional members safely)."""
    return value if isinstance(value, dict) else {}


def as_list(value: JSON | object) -> list[JSON]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def error_json(error: ErrorObject) -> JSONObject:
    """An `ErrorObject` as a plain JSON object, ready to send."""
    out: JSONObject = {"code": error["code"], "message": error["message"]}
    if "data" in error:
        out["data"] = error["data"]
    return out


def result_response(request_id: RequestId | None, result: JSONObject) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, error: ErrorObject) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": error_json(error)}


def request_message(request_id: RequestId, method: str, params: JSONObject | None = None) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification_message(method: str, params: JSONObject | None = None) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def error_of(message: JSONObject) -> ErrorObject | None:
    """The error of a response, typed, when it has a well-formed one."""
    error = message.get("error")
    if not isinstance(error, dict):
        return None
    code, text = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool) or not isinstance(text, str):
        return None
    out: ErrorObject = {"code": code, "message": text}
    if "data" in error:
        out["data"] = error["data"]
    return out


def input_required_of(message: JSONObject) -> InputRequiredResult | None:
    """A response's result, typed, when it ends a round with input_required: the questions that are objects,
    and the ticket when it is a string."""
    result = message.get("result")
    if not isinstance(result, dict) or result.get("resultType") != "input_required":
        return None
    out: InputRequiredResult = {"resultType": "input_required"}
    questions = result.get("inputRequests")
    if isinstance(questions, dict):
        out["inputRequests"] = {k: as_object(v) for k, v in questions.items()}
    state = result.get("requestState")
    if isinstance(state, str):
        out["requestState"] = state
    return out


def listed_tools(result: JSON) -> list[ListedTool]:
    """The tools a `tools/list` result lists, in order: each one that is an object with a string name."""
    tools = as_object(result).get("tools")
    if not isinstance(tools, list):
        return []
    # Only `name` is a checked member; the others are typed as the peer's JSON, so nothing unchecked is claimed.
    return [cast(ListedTool, tool) for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)]
