"""What `mrtr.Client` raises: one class per way an exchange can fail, each with a message a person can act on.

`ClientError` is the base (and the only one a caller must catch). `RefusedResult` and its subclasses are the strict
refusals: the server sent something the client will not answer or retry, and nothing more was sent. This module
imports only `mrtr.messages`.
"""

from __future__ import annotations

from .messages import JSONObject


class ClientError(Exception):
    """The server answered with an error, or the exchange could not finish."""

    def __init__(self, message: str, error: JSONObject | None = None) -> None:
        super().__init__(message)
        self.error = error or {}


class TransportError(ClientError):
    """The bytes did not get there or back: no answer in time, a broken connection, a body that is not JSON-RPC."""


class ServerError(ClientError):
    """The server answered the request with a JSON-RPC error (`error` holds it)."""

    @property
    def code(self) -> int | None:
        code = self.error.get("code")
        return code if isinstance(code, int) else None


class RefusedResult(ClientError):
    """A strict refusal: the result breaks the protocol, so the client neither answers nor retries it."""


class UnknownResultType(RefusedResult):
    """A `resultType` this client does not know (the spec: an unrecognized value is invalid)."""


class EmptyInputRequired(RefusedResult):
    """An `input_required` result with neither `inputRequests` nor `requestState` (the spec needs one)."""


class MalformedResult(RefusedResult):
    """A result whose members have the wrong shape (a requestState that is not a string, a question that is not an
    object, input_required on a method that cannot ask)."""


class UndeclaredRequest(RefusedResult):
    """An embedded request of a kind or mode this client did not declare, or one 2026-07-28 does not define."""


class RoundsExceeded(ClientError):
    """The server kept asking for input past the client's bound on rounds (`max_rounds`)."""


class InvalidTool(ClientError):
    """The tool's listed definition is invalid (`ToolDef.problems`), so the client will not call it."""


class BadAnswer(ClientError):
    """The answer callback returned something the client will not send (an unknown action, content that does not fit
    the form, content for a URL-mode request)."""
