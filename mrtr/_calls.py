"""The three calls that may ask for input: `tools/call`, `prompts/get` and `resources/read`.

What this module owns: `call`, which finds the tool, prompt or resource, checks the shape of the
arguments and answers, opens and binds a ticket when one came back (signature, then principal,
expiry and request), and runs the handler; and `CallResult`, what a call gives back. Both eras call
it: the modern one once per request, the legacy shim once per round. A handler that reads the answers
(`CallContext.answers`) gets the spec's answer rule: a missing answer is asked again, a malformed one
raises `MalformedAnswer` (an error of its own, never the frozen ticket refusal). It never turns an
exception into a wire error and never builds a response.
"""

from __future__ import annotations

from ._conversation import Conversation
from ._handler import CallContext, InputRequired
from ._primitives import Prompt, Resource, ResourceTemplate, Tool
from .errors import InternalError, InvalidParams
from .messages import JSONObject
from .protocol import INPUT_REQUIRED_METHODS, LIST_TTL_MS
from .tickets import Trace, check_binding

#: What a call gives back: a complete result (without `resultType`), or a round that asks.
CallResult = JSONObject | InputRequired


def _target(conv: Conversation, method: str, params: JSONObject
            ) -> tuple[Resource | ResourceTemplate | Tool | Prompt, str, JSONObject]:
    """What `params` names in the server's catalogue, the name it goes by, and its arguments (a resource has none)."""
    catalog = conv.server.catalog
    entry: Resource | ResourceTemplate | Tool | Prompt | None
    if method == "resources/read":
        target = params.get("uri")
        if not isinstance(target, str):
            raise InvalidParams("params.uri must be a string")
        entry = catalog.resource_for(target)
        if entry is None:
            raise InvalidParams(f"Resource not found: {target}", {"uri": target})
        return entry, target, {}
    target = params.get("name")
    if not isinstance(target, str):
        raise InvalidParams("params.name must be a string")
    entry = catalog.tools.get(target) if method == "tools/call" else catalog.prompts.get(target)
    if entry is None:
        kind = "tool" if method == "tools/call" else "prompt"
        raise InvalidParams(f"Unknown {kind}: {target}")
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParams("params.arguments must be an object")
    return entry, target, arguments


def call(conv: Conversation, method: str, params: JSONObject, caps: JSONObject, trace: Trace) -> CallResult:
    """Serve one `tools/call`, `prompts/get` or `resources/read` for `conv`'s principal."""
    server = conv.server
    entry, target, arguments = _target(conv, method, params)
    responses = params.get("inputResponses")
    if "inputResponses" in params and not isinstance(responses, dict):
        raise InvalidParams("params.inputResponses must be an object mapping keys to answers")
    now = server.clock()
    meta = params.get("_meta")
    ctx = CallContext(principal=conv.principal, method=method, target=target, arguments=arguments,
                      input_responses=responses if isinstance(responses, dict) else None,
                      capabilities=caps, trace=trace, now=now, codec=server.codec, store=server.store,
                      policy=server.policy, note=conv.note, outbox=conv.outbox,
                      progress_token=meta.get("progressToken") if isinstance(meta, dict) else None)
    if "requestState" in params:
        claims = server.codec.open(params["requestState"], trace)
        check_binding(claims, trace, principal=conv.principal, now=now, method=method, target=target,
                      arguments=arguments)
        ctx.state = claims
    try:
        result = entry.handler(ctx)
    except BaseException:
        ctx.settle(done=False)  # a claimed ticket stays unspent: the work did not happen
        raise
    ctx.settle(done=True)
    if ctx.state is not None and trace.first_failure is None and not isinstance(result, InputRequired):
        conv.note(f"requestState accepted: ticket {ctx.state.get('jti')} for {conv.principal}")
    if ctx.state is not None and not ctx.answered:
        trace.skip_rest("the handler finished without reading an answer", "not-needed")
    if isinstance(result, InputRequired):
        if method not in INPUT_REQUIRED_METHODS:  # pragma: no cover - only these three reach a handler
            raise InternalError("input_required from a method that may not return it")
        if not result.questions and result.state is None:
            raise InternalError("input_required needs inputRequests or requestState")
        return result
    if method == "resources/read":
        retry = "inputResponses" in params or "requestState" in params
        # Results of retries must not be cached (caching utility); first-round reads may be.
        result = {**result, "ttlMs": 0 if retry else LIST_TTL_MS, "cacheScope": "private" if retry else "public"}
    return result
