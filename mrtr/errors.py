"""JSON-RPC and MCP error codes, and the exceptions that carry them.

This module owns every error the core can put on the wire. Nothing else in `mrtr` builds an
error object by hand: handlers raise one of these, and `Connection` turns it into a response in
exactly one place. Each exception carries an HTTP status *hint* so adapters never have to guess.
"""

from __future__ import annotations

from .messages import JSON, ErrorObject, JSONObject

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022

#: The one message every requestState failure gets on the wire, whatever the real reason.
FROZEN_TICKET_MESSAGE = "Invalid or expired requestState"


class ProtocolError(Exception):
    """An error that becomes a JSON-RPC error response."""

    code: int = INTERNAL_ERROR
    http_status: int = 200

    def __init__(self, message: str, data: JSON = None, *, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        if http_status is not None:
            self.http_status = http_status

    def to_error(self) -> ErrorObject:
        error: ErrorObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(ProtocolError):
    code = PARSE_ERROR
    http_status = 400


class InvalidRequest(ProtocolError):
    code = INVALID_REQUEST
    http_status = 400


class MethodNotFound(ProtocolError):
    code = METHOD_NOT_FOUND
    http_status = 404


class InvalidParams(ProtocolError):
    """Bad params. In-band (HTTP 200) unless the envelope itself is broken."""

    code = INVALID_PARAMS


class MissingMeta(InvalidParams):
    """A modern request without the required `_meta` keys: malformed, so HTTP 400."""

    http_status = 400


class HeaderMismatch(ProtocolError):
    code = HEADER_MISMATCH
    http_status = 400


class MissingCapability(ProtocolError):
    code = MISSING_CAPABILITY
    http_status = 400

    def __init__(self, required: JSONObject, message: str | None = None) -> None:
        names = ", ".join(sorted(required)) or "a capability"
        super().__init__(
            message or f"This request needs the client capability: {names}",
            {"requiredCapabilities": required},
        )
        self.required = required


class UnsupportedVersion(ProtocolError):
    code = UNSUPPORTED_VERSION
    http_status = 400

    def __init__(self, requested: JSON, supported: list[str]) -> None:
        versions: list[JSON] = list(supported)
        super().__init__("Unsupported protocol version", {"supported": versions, "requested": requested})


class InternalError(ProtocolError):
    code = INTERNAL_ERROR
    http_status = 500


class TicketRejected(InvalidParams):
    """A requestState failed a check. The wire sees only the frozen message; `reason` is for logs."""

    def __init__(self, check: str, reason: str) -> None:
        super().__init__(FROZEN_TICKET_MESSAGE, {"reason": "invalid_request_state"})
        self.check = check
        self.reason = reason


#: The reason a malformed answer's error carries, so a client tells it from the frozen ticket refusal.
INVALID_INPUT_RESPONSE = "invalid_input_response"


class MalformedAnswer(InvalidParams):
    """An answer in inputResponses is there but does not fit its question (spec, MRTR "Error Handling": malformed
    input SHOULD get an error). Unlike a ticket failure it says what is wrong: the client sent the answer, and a
    client must be able to tell "fix your answer" from "your requestState was refused"."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"Invalid inputResponses: {reason}", {"reason": INVALID_INPUT_RESPONSE, "key": key})
        self.key = key
        self.reason = reason


#: What a client is told when the redeemed store cannot be reached: nothing happened, try again.
STORE_UNAVAILABLE_MESSAGE = (
    "Temporarily unavailable: the server could not record this requestState as used, so nothing was done. "
    "Try the same request again shortly."
)


class StoreUnavailable(ProtocolError):
    """The redeemed-ticket store cannot be reached (Redis down, SQLite locked or unwritable).

    Raised by the stores themselves, so single use fails closed: the request is refused with
    HTTP 503 and a retryable error, and the ticket is not spent. This is not a ticket failure
    (the frozen message is for those); `reason` is for the server log only.
    """

    code = INTERNAL_ERROR
    http_status = 503

    def __init__(self, reason: str) -> None:
        super().__init__(STORE_UNAVAILABLE_MESSAGE, {"retryable": True})
        self.reason = reason
