"""The 2026-07-28 era: one stateless request in, one result out, the ticket checked on every retry.

What this module owns: `Conversation`, the state both eras share (the server, the principal, the
log lines and notifications of the message being served), and the modern path: `_meta` checks,
the method table lookup, and `_call`, which opens and binds a ticket before running a handler.
It must never keep anything between requests or send a server-to-client request (the legacy shim
in `legacy.py` does that), and it never turns an exception into a wire error (`connection.py` does).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .errors import InternalError, InvalidParams, MethodNotFound, MissingMeta, UnsupportedVersion
from .handler import CallContext, InputRequired
from .methods import MODERN_METHODS
from .primitives import Prompt, Resource, ResourceTemplate, Tool
from .protocol import (
    INPUT_REQUIRED_METHODS,
    LIST_TTL_MS,
    META_CAPABILITIES,
    META_VERSION,
    MODERN_VERSION,
    REMOVED_METHODS,
    SUPPORTED_VERSIONS,
    with_server_info,
)
from .tickets import Trace, check_binding

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("mrtr")


class Conversation:
    """What both eras share: the server, who is speaking, and what serving one message produced."""

    def __init__(self, server: Server, principal: str, *, stateless: bool = False) -> None:
        self.server = server
        self.principal = principal
        self.stateless = stateless
        self._log: list[str] = []
        self._outbox: list[dict[str, Any]] = []  # notifications that go out before this message's response

    def _note(self, line: str) -> None:
        self._log.append(line)
        log.debug(line)
        if self.server.on_log:
            self.server.on_log(line)

    def _modern(self, method: str, params: dict[str, Any] | None, trace: Trace) -> dict[str, Any]:
        if method in REMOVED_METHODS:
            raise MethodNotFound(f"Method not found: {method} (removed in {MODERN_VERSION})")
        if method not in MODERN_METHODS:
            raise MethodNotFound(f"Method not found: {method}")
        meta = (params or {}).get("_meta")
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
        result = MODERN_METHODS[method](self, params or {}, caps, trace)
        if isinstance(result, InputRequired):
            body: dict[str, Any] = {"resultType": "input_required"}
            if result.questions:
                body["inputRequests"] = result.questions
            if result.state is not None:
                body["requestState"] = result.state
            return with_server_info(body, self.server.info)
        return with_server_info({**result, "resultType": "complete"}, self.server.info)

    # -- the calls that may ask for input --------------------------------------------------------

    def _call(self, method: str, params: dict[str, Any], caps: dict[str, Any], trace: Trace) -> Any:
        if method == "resources/read":
            target = params.get("uri")
            if not isinstance(target, str):
                raise InvalidParams("params.uri must be a string")
            entry: Resource | ResourceTemplate | Tool | Prompt | None = self.server.catalog.resource_for(target)
            if entry is None:
                raise InvalidParams(f"Resource not found: {target}", {"uri": target})
            arguments: dict[str, Any] = {}
        else:
            target = params.get("name")
            if not isinstance(target, str):
                raise InvalidParams("params.name must be a string")
            table = self.server.catalog.tools if method == "tools/call" else self.server.catalog.prompts
            entry = table.get(target)
            if entry is None:
                kind = "tool" if method == "tools/call" else "prompt"
                raise InvalidParams(f"Unknown {kind}: {target}")
            arguments = params.get("arguments", {})
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, dict):
                raise InvalidParams("params.arguments must be an object")
        responses = params.get("inputResponses")
        if "inputResponses" in params and not isinstance(responses, dict):
            raise InvalidParams("params.inputResponses must be an object mapping keys to answers")
        now = self.server.clock()
        meta = params.get("_meta")
        ctx = CallContext(self, method=method, target=target, arguments=arguments, input_responses=responses,
                          capabilities=caps, trace=trace, now=now,
                          progress_token=meta.get("progressToken") if isinstance(meta, dict) else None)
        if "requestState" in params:
            claims = self.server.codec.open(params["requestState"], trace)
            check_binding(claims, trace, principal=self.principal, now=now, method=method, target=target,
                          arguments=arguments)
            ctx.state = claims
        result = entry.handler(ctx)
        if ctx.state is not None and trace.first_failure is None and not isinstance(result, InputRequired):
            self._note(f"requestState accepted: ticket {ctx.state.get('jti')} for {self.principal}")
        if ctx.state is not None and not ctx._answered:
            trace.skip_rest("the handler finished without reading an answer", "not-needed")
        if isinstance(result, InputRequired):
            if method not in INPUT_REQUIRED_METHODS:  # pragma: no cover - guarded by the table below
                raise InternalError("input_required from a method that may not return it")
            if not result.questions and result.state is None:
                raise InternalError("input_required needs inputRequests or requestState")
            return result
        if method == "resources/read":
            retry = "inputResponses" in params or "requestState" in params
            # Results of retries must not be cached (caching utility); first-round reads may be.
            result = {**result, "ttlMs": 0 if retry else LIST_TTL_MS, "cacheScope": "private" if retry else "public"}
        return result
