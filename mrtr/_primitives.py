"""What a server offers: tools, prompts and resources, as plain records of data and a handler.

A handler is written once for both protocol eras. It receives a `CallContext` and returns either
a complete result (a dict, without `resultType`) or an `InputRequired` made by `ctx.ask(...)`.
The questions a handler asks, and the answers' validation, are in `inputs`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ._handler import CallContext, InputRequired
from .messages import JSONObject

#: What a handler is: the context of one call in, a complete result or `InputRequired` out.
Handler = Callable[[CallContext], JSONObject | InputRequired]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    handler: Handler
    input_schema: JSONObject = field(default_factory=lambda: {"type": "object", "properties": {}})
    title: str | None = None

    @functools.cached_property
    def header_params(self) -> tuple[tuple[str, str], ...]:
        """(argument, header suffix) for each input property its schema marks `x-mcp-header`: the arguments a
        2026-07-28 client mirrors in `Mcp-Param-<suffix>` headers. Read once per tool, not once per call."""
        properties = self.input_schema.get("properties")
        if not isinstance(properties, dict):
            return ()
        return tuple((name, suffix) for name, schema in properties.items()
                     if isinstance(schema, dict) and isinstance(suffix := schema.get("x-mcp-header"), str))

    def describe(self) -> JSONObject:
        out: JSONObject = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        if self.title:
            out["title"] = self.title
        return out


@dataclass(frozen=True)
class Prompt:
    name: str
    description: str
    handler: Handler
    arguments: tuple[JSONObject, ...] = ()

    def describe(self) -> JSONObject:
        return {"name": self.name, "description": self.description, "arguments": list(self.arguments)}


@dataclass(frozen=True)
class Resource:
    uri: str
    name: str
    handler: Handler
    description: str = ""
    mime_type: str = "text/plain"

    def describe(self) -> JSONObject:
        return {"uri": self.uri, "name": self.name, "description": self.description, "mimeType": self.mime_type}


@dataclass(frozen=True)
class ResourceTemplate:
    """Resources named by an RFC 6570 level-1 template such as `test://items/{id}`.

    The handler reads `ctx.target` (the concrete URI); `match` gives it the variables.
    """

    uri_template: str
    name: str
    handler: Handler
    description: str = ""
    mime_type: str = "text/plain"

    def describe(self) -> JSONObject:
        return {"uriTemplate": self.uri_template, "name": self.name, "description": self.description,
                "mimeType": self.mime_type}

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's variables in `uri`, or None when `uri` is not one of this template's resources."""
        pattern, names = "", []
        for literal, name in re.findall(r"([^{]*)(?:\{([A-Za-z0-9_]+)\})?", self.uri_template):
            pattern += re.escape(literal)
            if name:
                names.append(name)
                pattern += r"([^/?#{}]+)"
        found = re.fullmatch(pattern, uri)
        return dict(zip(names, found.groups(), strict=True)) if found else None


@dataclass
class Catalog:
    tools: dict[str, Tool] = field(default_factory=dict)
    prompts: dict[str, Prompt] = field(default_factory=dict)
    resources: dict[str, Resource] = field(default_factory=dict)
    templates: dict[str, ResourceTemplate] = field(default_factory=dict)

    def merged(self, other: Catalog) -> Catalog:
        return Catalog(
            {**self.tools, **other.tools}, {**self.prompts, **other.prompts}, {**self.resources, **other.resources},
            {**self.templates, **other.templates},
        )

    def resource_for(self, uri: str) -> Resource | ResourceTemplate | None:
        """The resource at `uri`: a direct one first, else the first template that matches it."""
        direct = self.resources.get(uri)
        if direct is not None:
            return direct
        return next((t for t in self.templates.values() if t.match(uri) is not None), None)
