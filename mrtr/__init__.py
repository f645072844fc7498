"""mrtr: a sans-IO MCP server, client and ticket codec for Multi Round-Trip Requests.

Messages in, messages out, and the trace of every ticket check alongside. The package never
imports a web framework, opens no sockets or files, and reads time only through the clock it is
given; adapters (the Flask app, the stdio server in `mrtr_cli`) move the bytes. Everything a caller
needs is named here; the submodules are the core's own business.

    server = Server(ring=KeyRing([key]), store=MemoryStore(), clock=system_clock, catalog=catalog)
    exchange = server.handle(message, principal="alice")   # an Exchange: messages, trace, log
    exchange.input_required                               # typed, when the call asks for input
"""

__version__ = "0.1.0"

from .client import Client, ClientError, InMemoryTransport, Line, Transport  # noqa: E402
from .clock import FIXED_EPOCH, Clock, FakeClock, system_clock  # noqa: E402
from .connection import Connection  # noqa: E402
from .errors import (  # noqa: E402
    FROZEN_TICKET_MESSAGE,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_INPUT_RESPONSE,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    STORE_UNAVAILABLE_MESSAGE,
    UNSUPPORTED_VERSION,
    HeaderMismatch,
    InternalError,
    MalformedAnswer,
    ProtocolError,
    StoreUnavailable,
    TicketRejected,
)
from .handler import CallContext, InputRequired, Policy  # noqa: E402
from .keys import MIN_KEY_LENGTH, KeyConfigError, KeyRing  # noqa: E402
from .messages import (  # noqa: E402
    JSON,
    ErrorObject,
    InputRequiredResult,
    JSONObject,
    Request,
    RequestId,
    as_list,
    as_object,
    error_of,
    error_response,
    result_response,
)
from .primitives import Catalog, Handler, Prompt, Resource, ResourceTemplate, Tool  # noqa: E402
from .protocol import (  # noqa: E402
    INPUT_REQUIRED_METHODS,
    LEGACY_VERSION,
    LEGACY_VERSIONS,
    MAX_JSON_DEPTH,
    MAX_MESSAGE_BYTES,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_SERVER_INFO,
    META_VERSION,
    MODERN_VERSION,
    SUPPORTED_VERSIONS,
    Exchange,
    parse_request,
    request_id_of,
    shape_problem,
)
from .questions import elicit_form, list_roots, sample  # noqa: E402
from .redeemed import Claim, ClaimingStore, MemoryStore, RedeemedStore  # noqa: E402
from .server import Server  # noqa: E402
from .tickets import (  # noqa: E402
    CHECK_TITLES,
    CHECKS,
    DEFAULT_TTL,
    MAX_TICKET_LENGTH,
    SEALED_PREFIX,
    SIGNED_PREFIX,
    Check,
    SealedParts,
    SignedParts,
    TicketCodec,
    Trace,
    b64decode_strict,
    b64encode,
    canonical_json,
    check_binding,
    parse_claims,
    read_payload,
    seal_key,
    seal_key_id,
    split_ticket,
)
from .wire import (  # noqa: E402
    LONE_SURROGATE_PROBLEM,
    NotUtf8,
    has_lone_surrogate,
    holds_lone_surrogate,
    json_dumps,
    json_loads,
    lone_surrogate_escape,
    may_hold_surrogates,
    nesting_bound,
    utf8_problem,
    utf8_text,
)

__all__ = [
    # the server and its parts
    "Server", "Connection", "Exchange", "Policy", "KeyRing", "KeyConfigError", "MIN_KEY_LENGTH",
    "RedeemedStore", "ClaimingStore", "Claim", "MemoryStore", "Clock", "FakeClock", "system_clock", "FIXED_EPOCH",
    # what a server offers, and how a handler asks
    "Catalog", "Tool", "Prompt", "Resource", "ResourceTemplate", "Handler", "CallContext", "InputRequired",
    "elicit_form", "sample", "list_roots",
    # messages
    "JSON", "JSONObject", "Request", "RequestId", "ErrorObject", "InputRequiredResult", "as_object", "as_list",
    "error_of", "error_response", "result_response", "parse_request", "request_id_of",
    "MODERN_VERSION", "LEGACY_VERSION", "LEGACY_VERSIONS", "SUPPORTED_VERSIONS",
    "META_VERSION", "META_CAPABILITIES", "META_CLIENT_INFO", "META_SERVER_INFO", "INPUT_REQUIRED_METHODS",
    "MAX_MESSAGE_BYTES", "MAX_JSON_DEPTH", "shape_problem",
    # errors on the wire
    "ProtocolError", "InternalError", "HeaderMismatch", "TicketRejected", "StoreUnavailable", "MalformedAnswer",
    "INVALID_INPUT_RESPONSE",
    "FROZEN_TICKET_MESSAGE", "STORE_UNAVAILABLE_MESSAGE", "PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND",
    "INVALID_PARAMS", "INTERNAL_ERROR", "HEADER_MISMATCH", "MISSING_CAPABILITY", "UNSUPPORTED_VERSION",
    # tickets and their checks
    "TicketCodec", "Trace", "Check", "CHECKS", "CHECK_TITLES", "DEFAULT_TTL", "MAX_TICKET_LENGTH",
    "SIGNED_PREFIX", "SEALED_PREFIX", "SignedParts", "SealedParts", "split_ticket", "seal_key", "seal_key_id",
    "parse_claims", "read_payload", "check_binding", "canonical_json", "b64encode", "b64decode_strict",
    # text from clients
    "utf8_text", "utf8_problem", "NotUtf8", "has_lone_surrogate", "holds_lone_surrogate", "may_hold_surrogates",
    "lone_surrogate_escape", "LONE_SURROGATE_PROBLEM",
    # JSON text (msgspec where it agrees with the standard library)
    "json_loads", "json_dumps", "nesting_bound",
    # the small client the lab and the tests use
    "Client", "ClientError", "InMemoryTransport", "Line", "Transport",
    "__version__",
]
