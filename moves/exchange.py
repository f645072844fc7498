"""A move's messages kept for the report's sequence diagram (`exchange_of`): compact, JSON-safe, tickets shortened.

What is kept labels an arrow (method, id, tool, ticket, result kind, error code and message) and nothing more:
arguments, answers and `_meta` are left out, and no bearer token is ever in a message. `to_json` never includes it.
"""

from __future__ import annotations

from moves.engine import MoveResult
from moves.targets.remote import clip
from mrtr import JSON, JSONObject, as_object

#: What a kept message may hold: enough to label its arrow (method, id, tool, ticket, outcome), nothing more.
_KEEP_PARAMS = ("name", "requestState")
_KEEP_RESULT = ("resultType", "requestState", "isError")
_TEXT_MAX = 200


def short_ticket(value: str, issued: str | None = None) -> str:
    """A ticket shortened for the page (its first 16 and last 6 characters). An edited ticket whose short form
    would read as the issued one's also shows where it first differs, so the two never look the same."""
    if len(value) <= 40:
        return value
    short = f"{value[:16]}…{value[-6:]}"
    if issued and value != issued and short == short_ticket(issued):
        at = next((i for i, (a, b) in enumerate(zip(value, issued, strict=False)) if a != b), len(issued))
        short = f"{value[:16]}…{value[at:at + 6]}…{value[-6:]}"
    return short


def _kept(message: JSON, issued: str | None) -> JSONObject | None:
    """One JSON-RPC message, compact and JSON-safe: method, id, tool name, ticket (shortened), result kind,
    error code and message. Arguments, answers and _meta are left out; no bearer token is ever in a message."""
    if not isinstance(message, dict):
        return None
    kept: JSONObject = {"jsonrpc": "2.0"}
    request_id = message.get("id")
    if isinstance(request_id, str | int) and not isinstance(request_id, bool):
        kept["id"] = request_id if isinstance(request_id, int) else clip(request_id, 40)
    method = message.get("method")
    if isinstance(method, str):
        kept["method"] = clip(method, 60)
        params = as_object(message.get("params"))
        kept["params"] = {k: (short_ticket(v, issued) if k == "requestState" else clip(v, 60))
                          for k in _KEEP_PARAMS if isinstance(v := params.get(k), str)}
    if "result" in message:
        result = as_object(message.get("result"))
        kept["result"] = {k: (v if isinstance(v, bool) else short_ticket(v) if k == "requestState" else clip(v, 60))
                          for k in _KEEP_RESULT if isinstance(v := result.get(k), str | bool)}
    if "error" in message:
        error = as_object(message.get("error"))
        code = error.get("code")
        kept["error"] = {"code": code if isinstance(code, int) and not isinstance(code, bool) else "",
                         "message": clip(str(error.get("message", "")), _TEXT_MAX)}
    return kept


def exchange_of(result: MoveResult) -> list[JSONObject]:
    """The move's messages, round one first, as JSON-safe dicts: who sent (owner / other), when (story
    seconds), what was sent and answered (`_kept`), why nothing came back, and the check trace when the
    target exposes one (remote servers do not)."""
    issued = result.ticket
    kept: list[JSONObject] = []
    for step in ([result.minted] if result.minted else []) + list(result.steps):
        trace: list[JSON] | None = None
        if step.reply.trace is not None:
            trace = [{k: clip(str(c.get(k, "")), _TEXT_MAX) for k in ("check", "outcome", "detail")}
                     for c in step.reply.trace if isinstance(c, dict)]
        kept.append({"role": str(step.role), "at": float(step.at), "sent": _kept(step.sent, issued),
                     "response": _kept(step.reply.response, issued),
                     "error": clip(step.reply.transport_error, _TEXT_MAX) if step.reply.transport_error else "",
                     "trace": trace})
    return kept

