"""The method table: every 2026-07-28 method this server answers, as data (lessons read it too).

What this module owns: the listings (`tools/list` and friends, `server/discover`), `completion/complete`,
and `MODERN_METHODS`, which maps each method to its handler. Only the three in INPUT_REQUIRED_METHODS
reach a tool, prompt or resource handler, through `calls.call`. It must never check `_meta` or
tickets itself.
"""

from __future__ import annotations

from collections.abc import Callable

from ._calls import CallResult, call
from ._conversation import Conversation
from .errors import InvalidParams
from .messages import JSON, JSONObject
from .protocol import INPUT_REQUIRED_METHODS, LIST_TTL_MS, SUPPORTED_VERSIONS
from .tickets import Trace


def _list_tools(conn: Conversation) -> JSONObject:
    return {"tools": [t.describe() for t in conn.server.catalog.tools.values()],
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


def _list_prompts(conn: Conversation) -> JSONObject:
    return {"prompts": [p.describe() for p in conn.server.catalog.prompts.values()],
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


def _list_resources(conn: Conversation) -> JSONObject:
    return {"resources": [r.describe() for r in conn.server.catalog.resources.values()],
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


def _list_templates(conn: Conversation) -> JSONObject:
    return {"resourceTemplates": [t.describe() for t in conn.server.catalog.templates.values()],
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


def complete(conn: Conversation, params: JSONObject) -> JSONObject:
    """completion/complete: checks the reference, then offers no suggestions (nothing here is enumerable)."""
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, dict) or ref.get("type") not in ("ref/prompt", "ref/resource"):
        raise InvalidParams('params.ref must be {"type": "ref/prompt", "name": ...} '
                            'or {"type": "ref/resource", "uri": ...}')
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise InvalidParams("params.argument must be an object with a string name")
    catalog = conn.server.catalog
    name = ref.get("name")
    if ref["type"] == "ref/prompt" and not (isinstance(name, str) and name in catalog.prompts):
        raise InvalidParams(f"Unknown prompt: {ref.get('name')}")
    if ref["type"] == "ref/resource" and not any(t.uri_template == ref.get("uri") for t in catalog.templates.values()):
        raise InvalidParams(f"Unknown resource template: {ref.get('uri')}")
    return {"completion": {"values": [], "total": 0, "hasMore": False}}


def _discover(conn: Conversation) -> JSONObject:
    catalog = conn.server.catalog
    caps: JSONObject = {"tools": {}}
    if catalog.prompts:
        caps["prompts"] = {}
    if catalog.resources or catalog.templates:
        caps["resources"] = {}
    if catalog.prompts or catalog.templates:
        caps["completions"] = {}
    versions: list[JSON] = list(SUPPORTED_VERSIONS)
    return {"supportedVersions": versions, "capabilities": caps,
            "instructions": conn.server.instructions,
            "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


LIST_METHODS: dict[str, Callable[[Conversation], JSONObject]] = {
    "server/discover": _discover,
    "tools/list": _list_tools,
    "prompts/list": _list_prompts,
    "resources/list": _list_resources,
    "resources/templates/list": _list_templates,
}


#: One method: the conversation, the params, the client's capabilities and the ticket's trace in, an outcome out.
MethodHandler = Callable[[Conversation, JSONObject, JSONObject, Trace], CallResult]


def _listing(fn: Callable[[Conversation], JSONObject]) -> MethodHandler:
    def handler(conn: Conversation, params: JSONObject, caps: JSONObject, trace: Trace) -> CallResult:
        return fn(conn)

    return handler


def _carrier(method: str) -> MethodHandler:
    def handler(conn: Conversation, params: JSONObject, caps: JSONObject, trace: Trace) -> CallResult:
        return call(conn, method, params, caps, trace)

    return handler


def _complete(conn: Conversation, params: JSONObject, caps: JSONObject, trace: Trace) -> CallResult:
    return complete(conn, params)


def _table() -> dict[str, MethodHandler]:
    table = {name: _listing(fn) for name, fn in LIST_METHODS.items()}
    table.update({name: _carrier(name) for name in sorted(INPUT_REQUIRED_METHODS)})
    table["completion/complete"] = _complete
    return table


#: Every 2026-07-28 method this server answers. Only the three in INPUT_REQUIRED_METHODS can ask.
MODERN_METHODS = _table()
