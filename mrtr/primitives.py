"""What a server offers: tools, prompts and resources, as plain records of data and a handler.

A handler is written once for both protocol eras. It receives a `CallContext` and returns either
a complete result (a dict, without `resultType`) or an `InputRequired` made by `ctx.ask(...)`.
This module also holds the small builders for embedded input requests, and the validation of the
answers a client sends back for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .handler import CallContext, InputRequired

Handler = Callable[["CallContext"], "dict[str, Any] | InputRequired"]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    handler: Handler
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    title: str | None = None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        if self.title:
            out["title"] = self.title
        return out


@dataclass(frozen=True)
class Prompt:
    name: str
    description: str
    handler: Handler
    arguments: tuple[dict[str, Any], ...] = ()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "arguments": list(self.arguments)}


@dataclass(frozen=True)
class Resource:
    uri: str
    name: str
    handler: Handler
    description: str = ""
    mime_type: str = "text/plain"

    def describe(self) -> dict[str, Any]:
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

    def describe(self) -> dict[str, Any]:
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


# -- embedded input requests ---------------------------------------------------------------------


def elicit_form(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def sample(text: str, max_tokens: int = 100) -> dict[str, Any]:
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens},
    }


def list_roots() -> dict[str, Any]:
    return {"method": "roots/list", "params": {}}


def required_capability(request: dict[str, Any]) -> dict[str, Any]:
    """The client capability an embedded request needs, in `requiredCapabilities` form."""
    method = request["method"]
    if method == "elicitation/create":
        mode = request.get("params", {}).get("mode", "form")
        return {"elicitation": {mode: {}}} if mode == "url" else {"elicitation": {}}
    if method == "sampling/createMessage":
        return {"sampling": {}}
    return {"roots": {}}


def has_capability(caps: dict[str, Any], request: dict[str, Any]) -> bool:
    method = request["method"]
    if method == "elicitation/create":
        elicitation = caps.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        if request.get("params", {}).get("mode", "form") == "url":
            return "url" in elicitation
        # A bare {"elicitation": {}} means form; one that lists only url does not.
        return not elicitation or "form" in elicitation
    if method == "sampling/createMessage":
        return isinstance(caps.get("sampling"), dict)
    return isinstance(caps.get("roots"), dict)


# -- answers -------------------------------------------------------------------------------------

_PRIMITIVES: dict[str, Callable[[Any], bool]] = {
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "array": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
}


def answer_problem(request: dict[str, Any], answer: Any) -> str | None:
    """Why `answer` is not a usable reply to the embedded `request`, or None when it is."""
    if not isinstance(answer, dict):
        return f"the answer is {type(answer).__name__}, not an object"
    method = request["method"]
    if method == "elicitation/create":
        action = answer.get("action")
        if action not in ("accept", "decline", "cancel"):
            return "the answer has no valid action (accept, decline or cancel)"
        if action != "accept" or request.get("params", {}).get("mode") == "url":
            return None
        content = answer.get("content")
        if not isinstance(content, dict):
            return "an accepted form answer needs a content object"
        schema = request["params"].get("requestedSchema", {})
        for key in schema.get("required", []):
            if key not in content:
                return f"the answer is missing the required field {key!r}"
        for key, prop in schema.get("properties", {}).items():
            check = _PRIMITIVES.get(prop.get("type", ""))
            if key in content and check is not None and not check(content[key]):
                return f"the field {key!r} should be a {prop.get('type')}"
        return None
    if method == "sampling/createMessage":
        if answer.get("role") != "assistant" or not isinstance(answer.get("content"), dict | list):
            return "a sampling answer needs role 'assistant' and content"
        return None
    roots = answer.get("roots")
    if not isinstance(roots, list) or not all(isinstance(r, dict) and isinstance(r.get("uri"), str) for r in roots):
        return "a roots answer needs a list of roots with uris"
    return None
