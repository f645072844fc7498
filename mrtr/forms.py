"""Values from JSON Schemas, for a client: the fields of an elicitation form, answers and arguments by schema.

What this module owns: `FormField` (one property of a form or of a tool's inputSchema, read without trusting it),
`fields_of`, `value_by_schema` (the value a field would take when nobody types one: its default, else the first
choice, else a value of its type that meets its bounds), `answer_by_schema` (the default answer to an embedded
request), `arguments_by_schema` (a tool's required arguments), `value_problem`/`content_problems` (why a typed or
scripted value does not fit), and `parse_value` (text a person typed, read by the field's type).

It must never fetch anything: a `$ref` is followed only inside the same document (`#/...`); a network reference
is left alone (SEP-2106), and the field it names is taken as untyped. A URL-mode request is never answered as if
its page had been finished: the default declines it, because no person saw the page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .messages import JSON, JSONObject, as_list, as_object

#: A string for a field with no default, choice or format: short, lowercase, fits most patterns.
EXAMPLE_TEXT = "example"
FORMAT_EXAMPLES = {"email": "user@example.com", "uri": "https://example.com/", "date": "2026-01-01",
                   "date-time": "2026-01-01T00:00:00Z"}
#: How deep same-document `$ref`s are followed before the field is taken as untyped (a cycle ends here).
MAX_REF_DEPTH = 8


@dataclass(frozen=True)
class FormField:
    """One property of an object schema, as a client reads it."""

    name: str
    schema: JSONObject
    required: bool

    @property
    def type(self) -> str:
        """The property's JSON type ("string", "integer", "number", "boolean", "array", "object"), or "" when the
        schema names none (or several)."""
        kind = self.schema.get("type")
        if isinstance(kind, str):
            return kind
        if self.choices:
            return "string"
        return ""

    @property
    def title(self) -> str:
        for key in ("title", "description"):
            text = self.schema.get(key)
            if isinstance(text, str) and text.strip():
                return text.strip()
        return ""

    @property
    def choices(self) -> list[JSON]:
        """The values a single-select field allows (`enum`, or `oneOf` of `const`s), else []."""
        enum = self.schema.get("enum")
        if isinstance(enum, list):
            return list(enum)
        consts = [as_object(option).get("const") for option in as_list(self.schema.get("oneOf"))]
        return [c for c in consts if c is not None]

    @property
    def item_choices(self) -> list[JSON]:
        """The values a multi-select (array) field allows, else []."""
        items = as_object(self.schema.get("items"))
        enum = items.get("enum")
        if isinstance(enum, list):
            return list(enum)
        return [c for o in as_list(items.get("anyOf")) if (c := as_object(o).get("const")) is not None]

    @property
    def default(self) -> JSON:
        return self.schema.get("default")

    @property
    def has_default(self) -> bool:
        return "default" in self.schema


def resolve_local(schema: JSON, root: JSONObject, depth: int = 0) -> JSONObject:
    """`schema` with a same-document `$ref` (`#/$defs/x`) followed; any other reference is never fetched, and the
    schema is returned as it is."""
    node = as_object(schema)
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#") or depth >= MAX_REF_DEPTH:
        return node
    target: JSON = root
    for part in [p for p in ref[1:].split("/") if p]:
        target = as_object(target).get(part.replace("~1", "/").replace("~0", "~"))
    return resolve_local(target, root, depth + 1) if isinstance(target, dict) else {}


def fields_of(schema: JSON) -> list[FormField]:
    """The properties of an object schema, in order, each with its same-document `$ref` followed."""
    root = as_object(schema)
    required = {name for name in as_list(root.get("required")) if isinstance(name, str)}
    return [FormField(name, resolve_local(prop, root), name in required)
            for name, prop in as_object(root.get("properties")).items()]


def _number(field: FormField) -> int | float:
    low, high = field.schema.get("minimum"), field.schema.get("maximum")
    value: int | float = 1
    if isinstance(low, int | float) and not isinstance(low, bool):
        value = max(value, low)
    if isinstance(high, int | float) and not isinstance(high, bool):
        value = min(value, high)
    return int(value) if field.type == "integer" else value


def _text(field: FormField) -> str:
    fmt = field.schema.get("format")
    text = FORMAT_EXAMPLES.get(fmt, EXAMPLE_TEXT) if isinstance(fmt, str) else EXAMPLE_TEXT
    low, high = field.schema.get("minLength"), field.schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    if isinstance(high, int) and high >= 0:
        text = text[:high]
    return text


def value_by_schema(field: FormField) -> JSON:
    """The value `field` takes when nobody chooses one: its default, its first choice, else one of its type."""
    if field.has_default:
        return field.default
    if "const" in field.schema:
        return field.schema["const"]
    if field.choices:
        return field.choices[0]
    kind = field.type
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return _number(field)
    if kind == "array":
        low = field.schema.get("minItems")
        count = max(low if isinstance(low, int) else 1, 1)
        return field.item_choices[:count] if field.item_choices else [EXAMPLE_TEXT] * count
    if kind == "object":
        return {f.name: value_by_schema(f) for f in fields_of(field.schema) if f.required}
    if kind == "null":
        return None
    return _text(field)


def answer_by_schema(request: JSONObject) -> JSONObject:
    """The default answer to one embedded elicitation: every form field by its schema (`value_by_schema`), accepted.

    A URL-mode request is declined: accepting it would tell the server a person consented to a page nobody
    showed them, and only the person can finish it.
    """
    params = as_object(request.get("params"))
    if params.get("mode") == "url":
        return {"action": "decline"}
    content: JSONObject = {f.name: value_by_schema(f) for f in fields_of(params.get("requestedSchema"))}
    return {"action": "accept", "content": content}


def arguments_by_schema(input_schema: JSON) -> JSONObject:
    """Arguments for a tool from its inputSchema: each required property by its schema, nothing else."""
    return {f.name: value_by_schema(f) for f in fields_of(input_schema) if f.required}


def _type_problem(field: FormField, value: JSON) -> str | None:
    kind = field.type
    checks = {"string": isinstance(value, str), "boolean": isinstance(value, bool),
              "integer": isinstance(value, int) and not isinstance(value, bool),
              "number": isinstance(value, int | float) and not isinstance(value, bool),
              "array": isinstance(value, list), "object": isinstance(value, dict), "null": value is None}
    if kind in checks and not checks[kind]:
        return f"{field.name} must be {'an' if kind[0] in 'aeio' else 'a'} {kind}"
    return None


def value_problem(field: FormField, value: JSON) -> str | None:
    """Why `value` does not fit `field` (type, choices, bounds, length), or None when it does."""
    problem = _type_problem(field, value)
    if problem:
        return problem
    if field.choices and value not in field.choices:
        return f"{field.name} must be one of {', '.join(json.dumps(c) for c in field.choices)}"
    if isinstance(value, list) and field.item_choices:
        wrong = [v for v in value if v not in field.item_choices]
        if wrong:
            return f"{field.name} allows only {', '.join(json.dumps(c) for c in field.item_choices)}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = field.schema.get("minimum"), field.schema.get("maximum")
        if isinstance(low, int | float) and value < low:
            return f"{field.name} must be at least {low}"
        if isinstance(high, int | float) and value > high:
            return f"{field.name} must be at most {high}"
    if isinstance(value, str):
        low, high = field.schema.get("minLength"), field.schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            return f"{field.name} needs at least {low} characters"
        if isinstance(high, int) and len(value) > high:
            return f"{field.name} takes at most {high} characters"
    return None


def content_problems(schema: JSON, content: JSONObject) -> list[str]:
    """Why an accepted form's `content` does not fit its `requestedSchema`: missing required fields, and values that
    do not fit their field."""
    problems = []
    for field in fields_of(schema):
        if field.name not in content:
            if field.required:
                problems.append(f"{field.name} is required")
            continue
        problem = value_problem(field, content[field.name])
        if problem:
            problems.append(problem)
    return problems


def parse_value(field: FormField, text: str) -> JSON:
    """What a person typed for `field`, read by its type: numbers and booleans parsed, arrays and objects as JSON
    (or a comma-separated list for an array of strings), strings as they are.

    Raises:
        ValueError: the text is not a value of the field's type (the message says what was expected).
    """
    kind = field.type
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("y", "yes", "true", "1", "on"):
            return True
        if lowered in ("n", "no", "false", "0", "off"):
            return False
        raise ValueError(f"{field.name} is yes or no")
    if kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError(f"{field.name} is a whole number") from None
    if kind == "number":
        try:
            number = float(text.strip())
        except ValueError:
            raise ValueError(f"{field.name} is a number") from None
        return int(number) if number.is_integer() and "." not in text else number
    if kind in ("array", "object") or (not kind and text.strip()[:1] in ("[", "{")):
        try:
            return json.loads(text)  # type: ignore[no-any-return]
        except json.JSONDecodeError:
            if kind == "array":
                return [part.strip() for part in text.split(",") if part.strip()]
            raise ValueError(f"{field.name} is a JSON {kind or 'value'}") from None
    return text
