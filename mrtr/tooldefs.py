"""Tool definitions as a client reads them from `tools/list`: checked before anything is called.

What this module owns: `ToolDef` (one listed tool, with the reasons a client must not call it and the
`x-mcp-header` parameters it mirrors into `Mcp-Param-*` headers), `read_tools` (a tools/list result, every entry
judged, a malformed one never hiding the valid ones), `tool_problems` and `param_headers`.

The rules for `x-mcp-header` (2026-07-28 tools, SEP-2243): the value is a non-empty header-name token (visible
ASCII, no space, colon or control character), it sits on a property whose type is string, integer or boolean, and
no two properties of a tool share one, compared without case. A tool that breaks one is excluded, never called.
It must never fetch a `$ref` or import anything that does I/O.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

from .messages import JSON, JSONObject, as_list, as_object

#: RFC 9110 `tchar`: what a header name (and so an x-mcp-header value) may be made of.
TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~")
#: The property types whose values have one plain text form in a header.
HEADER_TYPES = frozenset({"string", "integer", "boolean"})
X_MCP_HEADER = "x-mcp-header"


@dataclass(frozen=True)
class ToolDef:
    """A tool as listed: its name, its schema, why it may not be called (empty when it may), and the arguments it
    mirrors into headers (property name to the header's suffix after `Mcp-Param-`)."""

    name: str
    definition: JSONObject
    problems: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def input_schema(self) -> JSONObject:
        return as_object(self.definition.get("inputSchema"))

    @property
    def title(self) -> str:
        for key in ("title", "description"):
            text = self.definition.get(key)
            if isinstance(text, str) and text.strip():
                return text.strip()
        return ""


def _header_problem(prop: str, schema: JSONObject, seen: dict[str, str]) -> str | None:
    header = schema.get(X_MCP_HEADER)
    if not isinstance(header, str):
        return f"{prop}: x-mcp-header must be a string"
    if not header:
        return f"{prop}: x-mcp-header is empty"
    bad = sorted({c for c in header if c not in TOKEN_CHARS})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        return f"{prop}: x-mcp-header {header!r} has characters a header name cannot hold ({shown})"
    kind = schema.get("type")
    if kind not in HEADER_TYPES:
        return (f"{prop}: x-mcp-header is only for string, integer or boolean properties, "
                f"and this one is {kind if isinstance(kind, str) else 'untyped'}")
    twin = seen.get(header.lower())
    if twin is not None:
        return f"{prop}: x-mcp-header {header!r} is also on {twin} (header names ignore case)"
    seen[header.lower()] = prop
    return None


def tool_problems(tool: JSONObject) -> list[str]:
    """Why a client must not call this listed tool: no usable name or inputSchema, or a broken x-mcp-header."""
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        return ["the tool has no name"]
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return ["inputSchema is missing or not an object"]
    if schema.get("type") != "object":
        return ['inputSchema must have "type": "object"']
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return ["inputSchema.properties is not an object"]
    seen: dict[str, str] = {}
    problems = []
    for prop, prop_schema in properties.items():
        if isinstance(prop_schema, dict) and X_MCP_HEADER in prop_schema:
            problem = _header_problem(prop, prop_schema, seen)
            if problem:
                problems.append(problem)
    return problems


def param_headers(tool: JSONObject) -> dict[str, str]:
    """The properties a (valid) tool marks `x-mcp-header`, each with its header's suffix."""
    props = as_object(as_object(tool.get("inputSchema")).get("properties"))
    return {p: h for p, s in props.items() if isinstance(h := as_object(s).get(X_MCP_HEADER), str) and h}


def read_tools(result: JSON) -> list[ToolDef]:
    """Every entry of a tools/list result, judged: the valid ones with their headers, the others with reasons."""
    tools = []
    for entry in as_list(as_object(result).get("tools")):
        tool = as_object(entry)
        name = tool.get("name")
        problems = tuple(tool_problems(tool)) if isinstance(entry, dict) else ("the entry is not an object",)
        headers = param_headers(tool) if not problems else {}
        tools.append(ToolDef(name if isinstance(name, str) else "", tool, problems, headers))
    return tools
