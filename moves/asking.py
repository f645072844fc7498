"""Which other listed tools ask for input: the target of the moves that spend one tool's ticket on another.

A ticket must be bound to the whole request it was minted for (the method, the tool and the arguments), so a
server with two tools that ask for input must refuse one tool's ticket on the other, even with the same arguments.
`with_cross_tool` finds such a second tool before the moves are played: it calls each other listed tool whose
input schema takes the chosen arguments (at most `MAX_TRIED`, as the owner, with those arguments) and keeps the
first that answers input_required with a requestState, and the questions it asked. Each tool tried is really
called, as `--tool`'s search does; a tool whose schema cannot take the arguments is never called. Speaks only the
`Target` protocol: no sockets, no Flask, no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from mrtr import JSON, JSONObject, as_object
from mrtr.messages import ListedTool, as_list

from .calls import Call, modern_request
from .target import Target

#: The most other tools called while looking for one that asks (each call is a real call of that tool).
MAX_TRIED = 4

_JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "object": (dict,),
                                            "array": (list,), "number": (int, float), "integer": (int,)}


def takes(input_schema: JSON, arguments: JSONObject) -> bool:
    """Whether a tool's inputSchema plainly takes `arguments`: every required property given, every argument a
    listed property of the right JSON type (a schema that lists no properties takes none)."""
    schema = as_object(input_schema)
    props = as_object(schema.get("properties"))
    required = as_list(schema.get("required"))
    if not all(name in arguments for name in required if isinstance(name, str)):
        return False
    for name, value in arguments.items():
        if name not in props:
            return False
        kind = as_object(props[name]).get("type")
        allowed = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
        if allowed is not None and not isinstance(value, allowed):
            return False
        if isinstance(value, bool) and allowed is not None and bool not in allowed:  # True is an int to Python
            return False
    return True


def with_cross_tool(target: Target, tools: list[ListedTool], call: Call, next_id: Callable[[], int]) -> Call:
    """`call` with `cross_tool` set to the first other listed tool that asks for input when the owner calls it with
    the same arguments (and `cross_questions` to what it asked), or to None when no tool does."""
    tried = 0
    for tool in tools:
        name = tool["name"]
        if name == call.tool or not takes(tool.get("inputSchema"), call.arguments):
            continue
        if tried == MAX_TRIED:
            break
        tried += 1
        message = modern_request(next_id(), "tools/call", {"name": name, "arguments": call.arguments}, call)
        result = as_object((target.send("owner", message).response or {}).get("result"))
        ticket = result.get("requestState")
        if result.get("resultType") == "input_required" and isinstance(ticket, str) and ticket:
            return replace(call, cross_tool=name, cross_questions=as_object(result.get("inputRequests")))
    return replace(call, cross_tool=None, cross_questions={})
