"""The answers the checker sends: each input request answered from its requestedSchema (`answers_for`), or from what
the author supplied (`--answers`, by key or by round), and each `answer` kind of moves.toml built from that
(`answers_of`: none, decline, cancel, a wrong type, a missing field, an unasked key, an extra key). Pure functions.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace

from mrtr import JSON, JSONObject, as_object
from mrtr.messages import InputRequest, as_list

from .calls import Call

#: The key an answer goes under that no server asked for (wrong-key and extra-key answers).
UNASKED = "mrtr-check-unasked"


def _number(value: JSON, default: float = 0) -> float:
    """A schema's numeric keyword as a number; anything else (a peer's "5", null, true) is the default."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else default


def _value_for(schema: JSON) -> JSON:
    if not isinstance(schema, dict):
        return True
    if "default" in schema:
        return schema["default"]
    enum, one_of = schema.get("enum"), schema.get("oneOf")
    if isinstance(enum, list) and enum:
        return enum[0]
    if isinstance(one_of, list) and one_of and isinstance(one_of[0], dict):
        return one_of[0].get("const", True)
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        low = _number(schema.get("minimum", schema.get("exclusiveMinimum", 0)))
        value = low + 1 if "exclusiveMinimum" in schema else max(low, 1 if "maximum" not in schema else low)
        return int(value) if kind == "integer" else value
    if kind == "array":
        items = as_object(schema.get("items"))
        options = as_list(items.get("enum")) or [o.get("const") for o in as_list(items.get("anyOf"))
                                                 if isinstance(o, dict)]
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


def question_of(request: JSON) -> InputRequest:
    """An input request as the checker reads it, whatever a peer sent: its method (elicitation/create when it names
    none; any other value as text, so it never reads as one) and its params (the request itself when it has no
    "params" member, as an early draft had it; an empty object when they are not one)."""
    request = as_object(request)
    method = request.get("method", "elicitation/create")
    return {"method": method if isinstance(method, str) else str(method),
            "params": as_object(request.get("params", request))}


def _is_form(request: JSON) -> bool:
    """Whether an input request is a form elicitation (the only kind the checker answers from its schema)."""
    question = question_of(request)
    params = question["params"]
    return question["method"] == "elicitation/create" \
        and params.get("mode", "form") == "form" and isinstance(params.get("requestedSchema"), dict)


def _supplied(value: JSON, request: JSON) -> JSON:
    if _is_form(request) and isinstance(value, dict) and "action" not in value:
        return {"action": "accept", "content": copy.deepcopy(value)}
    return copy.deepcopy(value)


def cross_tool_call(call: Call, requests: Mapping[str, JSON]) -> tuple[Call, JSONObject]:
    """The call and questions of a retry sent to another asking tool with this tool's ticket: that tool, the same
    arguments, and its own questions answered beside this one's (so a ticket it wrongly accepts can do its work).

    Raises:
        ValueError: the server has no other tool that asks for input with these arguments.
    """
    if not call.cross_tool:
        raise ValueError(f"{call.tool} is the only listed tool that asks for input when called with these "
                         "arguments, so there is no other tool to spend its ticket on")
    return replace(call, tool=call.cross_tool), {**call.cross_questions, **requests}


def supplied_answers(call: Call, round_n: int) -> JSONObject:
    """The author's answers (`Call.answers`) for round `round_n`: those given for any round, then the round's."""
    general = {k: v for k, v in call.answers.items() if not k.isdigit()}
    return {**general, **as_object(call.answers.get(str(round_n)))}


def unanswerable(input_requests: Mapping[str, JSON], supplied: Mapping[str, JSON] | None = None) -> str | None:
    """Why the checker cannot answer these questions itself ("'login' (a url-mode elicitation)"), or None."""
    for key, request in (input_requests or {}).items():
        if key in (supplied or {}) or _is_form(request):
            continue
        question = question_of(request)
        method = question["method"]
        mode = question["params"].get("mode", "form")
        kind = f"a {str(mode)[:20]}-mode elicitation" if method == "elicitation/create" else \
            f"a {str(method)[:40]} request"
        return f"{str(key)[:40]!r} ({kind})"
    return None


def answers_for(input_requests: Mapping[str, JSON], supplied: Mapping[str, JSON] | None = None) -> JSONObject:
    """Accept answers that satisfy each input request's requestedSchema (every property filled); a key in
    `supplied` (the author's `--answers`) gets that answer instead."""
    answers: JSONObject = {}
    for key, request in (input_requests or {}).items():
        if supplied and key in supplied:
            answers[key] = _supplied(supplied[key], request)
            continue
        schema = question_of(request)["params"].get("requestedSchema")
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        content: JSONObject = {name: _value_for(prop) for name, prop in props.items()} if isinstance(props, dict) \
            else {}
        answers[key] = {"action": "accept", "content": content}
    return answers


def answers_of(kind: str, input_requests: Mapping[str, JSON], supplied: Mapping[str, JSON] | None = None
               ) -> JSONObject | None:
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
    changed: JSONObject = {}
    for key, answer in accepted.items():
        schema = as_object(question_of(input_requests.get(key))["params"].get("requestedSchema"))
        given = as_object(answer).get("content")
        if not isinstance(given, dict):  # an answer the author supplied without content: nothing in it to change
            changed[key] = answer
            continue
        content = dict(given)
        if kind == "wrong-type":
            props = as_object(schema.get("properties"))
            content = {name: _wrong_type(as_object(props.get(name))) for name in content}
        else:  # missing-key
            required = [r for r in as_list(schema.get("required")) if isinstance(r, str)]
            content = {name: value for name, value in content.items() if name not in (required or content)}
        if content != given:
            changed[key] = {"action": "accept", "content": content}
        else:
            changed[key] = answer
    if changed == accepted:
        what = "with the wrong type" if kind == "wrong-type" else "to leave out"
        raise ValueError(f"the questions have no field {what}")
    return changed


def _wrong_type(schema: JSONObject) -> JSON:
    """A value of another JSON type than the field asks for: "yes" for a boolean, a number for text."""
    kind = schema.get("type")
    if kind == "boolean":
        return "yes"
    if kind in ("number", "integer"):
        return "1"
    if kind == "array":
        return "yes"
    return 12345


def _free_text(prop: JSON) -> bool:
    """Whether a schema property is text the checker can only guess (no enum, const, default or format to go by)."""
    schema = as_object(prop)
    return schema.get("type", "string") == "string" and not any(
        k in schema for k in ("enum", "oneOf", "anyOf", "const", "default", "format"))


def guessed_fields(input_requests: Mapping[str, JSON], supplied: Mapping[str, JSON] | None = None) -> list[str]:
    """The fields ("key.field") of form questions the checker answers with guessed free text (`answers_for`'s "yes"
    for "type the environment's name"): a server may fairly take such a guess for a wrong answer and do nothing."""
    found: list[str] = []
    for key, request in (input_requests or {}).items():
        if (supplied and key in supplied) or not _is_form(request):
            continue
        props = as_object(as_object(question_of(request)["params"].get("requestedSchema")).get("properties"))
        found += [f"{str(key)[:40]}.{str(name)[:40]}" for name, prop in props.items() if _free_text(prop)]
    return found
