"""The 2026-07-28 era: one stateless request in, one result out, the ticket checked on every retry.

What this module owns: `serve`, which checks a request's `_meta` (protocol version, client
capabilities), looks its method up in the method table and shapes the result (`resultType`,
`inputRequests`, `requestState`, the server's name). It keeps nothing between requests, never
sends a server-to-client request (the legacy shim in `legacy.py` does that), and never turns an
exception into a wire error (`connection.py` does).
"""

from __future__ import annotations

from ._conversation import Conversation
from ._handler import InputRequired
from ._methods import MODERN_METHODS
from .errors import MethodNotFound, MissingMeta, UnsupportedVersion
from .messages import JSONObject
from .protocol import (
    META_CAPABILITIES,
    META_VERSION,
    MODERN_VERSION,
    REMOVED_METHODS,
    SUPPORTED_VERSIONS,
    with_server_info,
)
from .tickets import Trace


def serve(conv: Conversation, method: str, params: JSONObject, trace: Trace) -> JSONObject:
    """The result of one 2026-07-28 request (raises a `ProtocolError` for anything it refuses)."""
    if method in REMOVED_METHODS:
        raise MethodNotFound(f"Method not found: {method} (removed in {MODERN_VERSION})")
    if method not in MODERN_METHODS:
        raise MethodNotFound(f"Method not found: {method}")
    meta = params.get("_meta")
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
    result = MODERN_METHODS[method](conv, params, caps, trace)
    if isinstance(result, InputRequired):
        body: JSONObject = {"resultType": "input_required"}
        if result.questions:
            body["inputRequests"] = dict(result.questions)
        if result.state is not None:
            body["requestState"] = result.state
        return with_server_info(body, conv.server.info)
    return with_server_info({**result, "resultType": "complete"}, conv.server.info)
