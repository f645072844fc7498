"""What the checker calls: the tool (`--tool`, else deploy, else the first listed tool that asks for input), its
arguments (`--args`, else built from its inputSchema) and the other request's (one value changed). Each tool tried
is really called as the owner; a tool that never asks for input cannot be checked, and the error says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from moves.engine import Call, modern_request
from moves.probes import input_required, reply_gist
from moves.report import CheckError, CheckOptions
from moves.target import Role, Target
from moves.targets.remote import clip
from mrtr import JSON, JSONObject, as_object
from mrtr.messages import ListedTool, as_list, listed_tools

DEFAULT_TOOL = "deploy"


def _example(name: str, schema: JSON) -> JSON:
    schema = as_object(schema)
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind
    if kind in ("integer", "number"):
        value = schema.get("minimum", 1)
        value = value if isinstance(value, int | float) and not isinstance(value, bool) else 1  # a peer's "5"
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    if name == "env":
        return "staging"
    formats = {"email": "check@example.com", "uri": "https://example.com/", "date": "2026-07-28",
               "date-time": "2026-07-28T00:00:00Z"}
    text = formats.get(str(schema.get("format")), "mrtr-check")
    length = schema.get("minLength")
    return text.ljust(min(length, 10_000) if isinstance(length, int) and not isinstance(length, bool) else 0, "x")


def arguments_for(input_schema: JSON) -> JSONObject:
    """Arguments that satisfy a tool's inputSchema: its required properties, each with an example."""
    schema = as_object(input_schema)
    props = as_object(schema.get("properties"))
    required = [r for r in as_list(schema.get("required")) if isinstance(r, str)]
    return {name: _example(name, props.get(name)) for name in required}


def other_arguments_for(arguments: JSONObject, input_schema: JSON = None) -> JSONObject | None:
    """The same arguments with one string changed (staging <-> prod, another enum value, or a suffix).

    None when there is no string (or number, or boolean) argument to change.
    """
    props = as_object(as_object(input_schema).get("properties"))
    for name, value in arguments.items():
        if not isinstance(value, str):
            continue
        enum = as_object(props.get(name)).get("enum")
        choices = [v for v in enum if isinstance(v, str) and v != value] if isinstance(enum, list) else []
        swaps = {"staging": "prod", "prod": "staging", "production": "staging"}
        changed = choices[0] if choices else swaps.get(value, value + "-other")
        return {**arguments, name: changed}
    for name, value in arguments.items():
        if isinstance(value, bool):
            return {**arguments, name: not value}
        if isinstance(value, int | float):
            return {**arguments, name: value + 1}
    return None


def _tools(target: Target, call: Call, role: Role, next_id: Callable[[], int]) -> list[ListedTool]:
    who = target.owner if role == "owner" else target.other
    reply = target.send(role, modern_request(next_id(), "tools/list", {}, call))
    if reply.response is None:
        raise CheckError(f"{target.label} did not answer tools/list for {who}: {reply.transport_error}")
    if "error" in reply.response:
        raise CheckError(f"{target.label} refused tools/list for {who} with {reply_gist(reply)}")
    result = reply.response.get("result")
    if not isinstance(as_object(result).get("tools"), list):
        raise CheckError(f"{target.label} answered tools/list for {who} without a list of tools")
    return listed_tools(result)


def _round_one(target: Target, call: Call, next_id: Callable[[], int]) -> tuple[bool, str]:
    reply = target.send("owner", modern_request(next_id(), "tools/call",
                                                {"name": call.tool, "arguments": call.arguments}, call))
    if reply.response is None:
        raise CheckError(f"{target.label} did not answer tools/call {call.tool}: {reply.transport_error}")
    asked = input_required(reply)
    if asked and isinstance(asked.get("requestState"), str):
        return True, ""
    if asked:
        return False, "answered input_required without a requestState ticket"
    return False, f"answered {reply_gist(reply)}"


def _choose(target: Target, tools: list[ListedTool], options: CheckOptions, base: Call,
            next_id: Callable[[], int]) -> Call:
    names = [t["name"] for t in tools]
    by_name = {t["name"]: t for t in tools}
    if options.tool is not None:
        if options.tool not in by_name:
            listed = ", ".join(clip(n, 40) for n in names[:12]) or "none"
            raise CheckError(f"{target.label} lists no tool named {options.tool!r} (it lists: {listed})")
        candidates = [options.tool]
    elif DEFAULT_TOOL in by_name:
        candidates = [DEFAULT_TOOL]
    else:
        candidates = names
    if not candidates:
        raise CheckError(f"{target.label} lists no tools, so there is nothing to check")
    tried: list[str] = []
    for name in candidates:
        schema = by_name[name].get("inputSchema")
        arguments = options.arguments if options.arguments is not None else arguments_for(schema)
        call = replace(base, tool=name, arguments=arguments,
                       other_arguments=options.other_arguments if options.other_arguments is not None
                       else other_arguments_for(arguments, schema), answers=dict(options.answers or {}))
        asks, why = _round_one(target, call, next_id)
        if asks:
            return call
        tried.append(f"{name} {why}")
    if len(candidates) == 1:
        raise CheckError(f"tools/call {tried[0]}: it must ask for input (input_required with a requestState) "
                         "for the moves to be played; choose another tool with --tool, or other --args")
    raise CheckError("no tool answered input_required with a requestState; tried " + "; ".join(tried[:5])
                     + ". Name one with --tool")

