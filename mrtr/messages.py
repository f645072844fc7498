"""The types of what crosses the wire, and the few builders that make well-formed messages.

What this module owns: `JSON` (every value a JSON text can hold), `JSONObject`, `RequestId`, the typed
shapes a caller reads back (`Request`, `ErrorObject`, `InputRequiredResult`), the builders of
JSON-RPC responses, and `as_object`/`as_list`, which narrow a JSON value without trusting it.
Messages stay plain JSON objects, so an adapter writes them as they are; the types say what is
in them. It must never import another module of the core: everything else builds on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypeAlias, TypedDict

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
