"""Wire constants and limits, and `Exchange`: what every era and adapter agrees on.

What this module owns: the protocol versions and `_meta` keys, the methods that may ask for input,
the size and depth limits, the `Exchange` one incoming message produces, and the checks that decide
whether a parsed message is safe to serve (`shape_problem`, `request_id_of`). Whether raw text is
UTF-8 and free of lone surrogates is `wire`'s. It must never import the eras, the handler API or
the server: everything else builds on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import InvalidParams, InvalidRequest
from .messages import (
    JSON,
    ErrorObject,
    InputRequiredResult,
    JSONObject,
    Request,
    RequestId,
    as_object,
    error_of,
    input_required_of,
)
from .tickets import Trace
from .wire import LONE_SURROGATE_PROBLEM, holds_lone_surrogate

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


@dataclass
class Exchange:
    """What one incoming message produced: the messages to send back, in order, and how it went."""

    messages: list[JSONObject] = field(default_factory=list)
    trace: Trace | None = None
    log: list[str] = field(default_factory=list)
    #: the client request id these messages belong to (routes shim traffic to the right stream)
    origin: RequestId | None = None
    http_status: int = 200

    @property
    def response(self) -> JSONObject | None:
        """The last response (result or error) among the messages, if any."""
        return next((m for m in reversed(self.messages) if "method" not in m), None)

    @property
    def result(self) -> JSONObject | None:
        """The response's result, when the response is one."""
        response = self.response
        result = response.get("result") if response is not None else None
        return result if isinstance(result, dict) else None

    @property
    def error(self) -> ErrorObject | None:
        """The response's error, when the response is one."""
        response = self.response
        return error_of(response) if response is not None else None

    @property
    def input_required(self) -> InputRequiredResult | None:
        """The result, typed, when it ends a round with input_required."""
        response = self.response
        return input_required_of(response) if response is not None else None


def with_server_info(result: JSONObject, server_info: dict[str, str]) -> JSONObject:
    """`result` with the server's name and version added to its `_meta`."""
    meta = dict(as_object(result.get("_meta")))
    meta[META_SERVER_INFO] = dict(server_info)
    return {**result, "_meta": meta}


def valid_request_id(value: JSON) -> bool:
    """Whether `value` may be a JSON-RPC request id here: a string or an integer (never a boolean)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def request_id_of(message: JSONObject) -> RequestId | None:
    """The message's id when it is a valid one, else None (what an error response may echo)."""
    request_id = message.get("id")
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


def parse_request(message: JSONObject) -> Request:
    """The envelope of a request or notification, checked: `"jsonrpc": "2.0"`, a method, a valid id, object params.

    Raises:
        InvalidRequest: the envelope is not JSON-RPC 2.0 (HTTP 400).
        InvalidParams: params is there but not an object (HTTP 400).
    """
    if message.get("jsonrpc") != "2.0":
        raise InvalidRequest('the "jsonrpc" member must be exactly "2.0"')
    method = message.get("method")
    if not isinstance(method, str) or not method:
        raise InvalidRequest('the "method" member must be a non-empty string')
    request_id = request_id_of(message)
    if "id" in message and request_id is None:
        raise InvalidRequest("the id must be a string or an integer")
    params = message.get("params", None)
    if params is not None and not isinstance(params, dict):
        raise InvalidParams("params must be an object", http_status=400)
    return Request(request_id, method, params)


def _nesting_problem(value: JSON, limit: int) -> str | None:
    stack: list[tuple[JSON, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return f"message nests deeper than {limit} levels"
        for child in item.values() if isinstance(item, dict) else item if isinstance(item, list) else ():
            kind = type(child)  # exact types: faster than isinstance on every value of a large message
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
    return None


def shape_problem(value: JSON, limit: int = MAX_JSON_DEPTH, *, check_text: bool = True,
                  check_depth: bool = True) -> str | None:
    """Why a parsed message cannot be served safely: too deep, or text that is not valid Unicode.

    JSON's \\u escapes can smuggle in lone UTF-16 surrogates, which no UTF-8 encoder will write
    back out; refusing them here keeps every later digest, log line and page render safe.
    `check_text=False` skips that scan when the raw text has already been shown free of them
    (`wire.may_hold_surrogates`), and `check_depth=False` skips the walk for depth when the raw text holds
    no more brackets than the limit (`wire.nesting_bound`).
    """
    if check_depth and type(value) in (dict, list):
        problem = _nesting_problem(value, limit)
        if problem:
            return problem
    if check_text and holds_lone_surrogate(value):
        return LONE_SURROGATE_PROBLEM
    return None
