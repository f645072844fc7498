"""The answers the checker sends: each input request answered from its requestedSchema (`answers_for`), or from what
the author supplied (`--answers`, by key or by round), and each `answer` kind of moves.toml built from that
(`answers_of`: none, decline, cancel, a wrong type, a missing field, an unasked key, an extra key). Pure functions.
"""

from __future__ import annotations

import copy
from typing import Any

from mrtr import as_object
from mrtr.messages import as_list

from .calls import Call

#: The key an answer goes under that no server asked for (wrong-key and extra-key answers).
UNASKED = "mrtr-check-unasked"


def _number(value: Any, default: float = 0) -> float:
    """A schema's numeric keyword as a number; anything else (a peer's "5", null, true) is the default."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else default


def _value_for(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return True
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if isinstance(schema.get("oneOf"), list) and schema["oneOf"] and isinstance(schema["oneOf"][0], dict):
        return schema["oneOf"][0].get("const", True)
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        low = _number(schema.get("minimum", schema.get("exclusiveMinimum", 0)))
        value = low + 1 if "exclusiveMinimum" in schema else max(low, 1 if "maximum" not in schema else low)
        return int(value) if kind == "integer" else value
    if kind == "array":
        items = as_object(schema.get("items"))
        raw_any_of, raw_enum = items.get("anyOf"), items.get("enum")
        any_of: list[Any] = raw_any_of if isinstance(raw_any_of, list) else []
        enum: list[Any] = raw_enum if isinstance(raw_enum, list) else []
        options = enum or [o.get("const") for o in any_of if isinstance(o, dict)]
        return options[: max(1, int(_number(schema.get("minItems"), 1)))] if options else []
    text = "yes"
    if schema.get("format") == "email":
        text = "lab@example.com"
    elif schema.get("format") == "uri":
        text = "https://example.com/"
    elif schema.get("format") == "date":
        text = "2026-01-01"
    elif schema.get("format") == "date-time":
        text = "2026-01-01T00:00:00Z"
    minimum = int(_number(schema.get("minLength")))
    return text + "y" * max(0, min(minimum, 10_000) - len(text))


def _is_form(request: Any) -> bool:
    """Whether an input request is a form elicitation (the only kind the checker answers from its schema)."""
    request = as_object(request)
    params = as_object(request.get("params", request))
    return request.get("method", "elicitation/create") == "elicitation/create" \
        and params.get("mode", "form") == "form" and isinstance(params.get("requestedSchema"), dict)


def _supplied(value: Any, request: Any) -> Any:
    if _is_form(request) and isinstance(value, dict) and "action" not in value:
        return {"action": "accept", "content": copy.deepcopy(value)}
    return copy.deepcopy(value)


def supplied_answers(call: Call, round_n: int) -> dict[str, Any]:
    """The author's answers (`Call.answers`) for round `round_n`: those given for any round, then the round's."""
    general = {k: v for k, v in call.answers.items() if not k.isdigit()}
    return {**general, **as_object(call.answers.get(str(round_n)))}


def unanswerable(input_requests: dict[str, Any], supplied: dict[str, Any] | None = None) -> str | None:
    """Why the checker cannot answer these questions itself ("'login' (a url-mode elicitation)"), or None."""
    for key, request in (input_requests or {}).items():
        if key in (supplied or {}) or _is_form(request):
            continue
        request = as_object(request)
        method = request.get("method", "elicitation/create")
        mode = as_object(request.get("params", request)).get("mode", "form")
        kind = f"a {str(mode)[:20]}-mode elicitation" if method == "elicitation/create" else \
            f"a {str(method)[:40]} request"
        return f"{str(key)[:40]!r} ({kind})"
    return None


def answers_for(input_requests: dict[str, Any], supplied: dict[str, Any] | None = None) -> dict[str, Any]:
    """Accept answers that satisfy each input request's requestedSchema (every property filled); a key in
    `supplied` (the author's `--answers`) gets that answer instead."""
    answers: dict[str, Any] = {}
    for key, request in (input_requests or {}).items():
        if supplied and key in supplied:
            answers[key] = _supplied(supplied[key], request)
            continue
        params = request.get("params", request) if isinstance(request, dict) else {}
        schema = params.get("requestedSchema") if isinstance(params, dict) else None
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        content = {name: _value_for(prop) for name, prop in props.items()} if isinstance(props, dict) else {}
        answers[key] = {"action": "accept", "content": content}
    return answers


def answers_of(kind: str, input_requests: dict[str, Any], supplied: dict[str, Any] | None = None
               ) -> dict[str, Any] | None:
    """The inputResponses an `answer` kind sends (see moves/catalog.py), or None for "none".

    Raises:
        ValueError: the questions have no field to send with the wrong type, or none to leave out.
    """
    if kind == "none":
        return None
    accepted = answers_for(input_requests, supplied)
    if kind == "accept":
        return accepted
    if kind == "wrong-key":
        return {f"{key}-{UNASKED}": answer for key, answer in accepted.items()}
    if kind == "extra-key":
        return {UNASKED: {"action": "accept", "content": {}}, **accepted}
    if kind in ("decline", "cancel"):
        return {key: {"action": kind} for key in accepted}
    changed: dict[str, Any] = {}
    for key, answer in accepted.items():
        params = as_object(as_object(input_requests.get(key)).get("params", input_requests.get(key)))
        schema = as_object(params.get("requestedSchema"))
        content = dict(answer["content"])
        if kind == "wrong-type":
            props = as_object(schema.get("properties"))
            content = {name: _wrong_type(as_object(props.get(name))) for name in content}
        else:  # missing-key
            required = [r for r in as_list(schema.get("required")) if isinstance(r, str)]
            content = {name: value for name, value in content.items() if name not in (required or content)}
        if content != answer["content"]:
            changed[key] = {"action": "accept", "content": content}
        else:
            changed[key] = answer
    if changed == accepted:
        what = "with the wrong type" if kind == "wrong-type" else "to leave out"
        raise ValueError(f"the questions have no field {what}")
    return changed


def _wrong_type(schema: dict[str, Any]) -> Any:
    """A value of another JSON type than the field asks for: "yes" for a boolean, a number for text."""
    kind = schema.get("type")
    if kind == "boolean":
        return "yes"
    if kind in ("number", "integer"):
        return "1"
    if kind == "array":
        return "yes"
    return 12345
