"""Wire messages, constants and limits: what every era and adapter agrees on.

What this module owns: the protocol versions and `_meta` keys, the methods that may ask for input,
the size and depth limits, the `Exchange` one incoming message produces, and the checks that decide
whether a parsed message is safe to serve (`shape_problem`, `may_hold_surrogates`, `request_id_of`).
It must never import the eras, the handler API or the server: everything else builds on it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .tickets import Trace

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



def with_server_info(result: dict[str, Any], server_info: dict[str, str]) -> dict[str, Any]:
    """`result` with the server's name and version added to its `_meta`."""
    meta = dict(result.get("_meta") or {})
    meta[META_SERVER_INFO] = server_info
    return {**result, "_meta": meta}


def as_object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (for reading optional members safely)."""
    return value if isinstance(value, dict) else {}


def valid_request_id(value: Any) -> bool:
    """Whether `value` may be a JSON-RPC request id here: a string or an integer (never a boolean)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def request_id_of(message: dict[str, Any]) -> Any:
    """The message's id when it is a valid one, else None (what an error response may echo)."""
    request_id = message.get("id")
    return request_id if valid_request_id(request_id) else None


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

