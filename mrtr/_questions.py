"""Embedded input requests (the questions in `inputRequests`) and the answers a client sends back.

What this module owns: the builders of the three kinds of question (`elicit_form`, `sample`,
`list_roots`), which client capability each needs, and the answer rule (spec, MRTR "Error Handling"):
`answer_problem` says why an answer cannot be used, and `answers_problem` whether the answers to a round's
questions are complete, missing one (the server asks again) or malformed (the server SHOULD answer an error, one
a client can tell from the frozen ticket refusal). It never sees a ticket, a connection or a handler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .messages import JSON, JSONObject, as_list, as_object


def elicit_form(message: str, schema: JSONObject) -> JSONObject:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def sample(text: str, max_tokens: int = 100) -> JSONObject:
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens},
    }


def list_roots() -> JSONObject:
    return {"method": "roots/list", "params": {}}


def required_capability(request: JSONObject) -> JSONObject:
    """The client capability an embedded request needs, in `requiredCapabilities` form."""
    method = request.get("method")
    if method == "elicitation/create":
        mode = as_object(request.get("params")).get("mode", "form")
        return {"elicitation": {"url": {}}} if mode == "url" else {"elicitation": {}}
    if method == "sampling/createMessage":
        return {"sampling": {}}
    return {"roots": {}}


def has_capability(caps: JSONObject, request: JSONObject) -> bool:
    method = request.get("method")
    if method == "elicitation/create":
        elicitation = caps.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        if as_object(request.get("params")).get("mode", "form") == "url":
            return "url" in elicitation
        # A bare {"elicitation": {}} means form; one that lists only url does not.
        return not elicitation or "form" in elicitation
    if method == "sampling/createMessage":
        return isinstance(caps.get("sampling"), dict)
    return isinstance(caps.get("roots"), dict)


# -- answers -------------------------------------------------------------------------------------

_PRIMITIVES: dict[str, Callable[[JSON], bool]] = {
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "array": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
}


def answer_problem(request: JSONObject, answer: JSON) -> str | None:
    """Why `answer` is not a usable reply to the embedded `request`, or None when it is."""
    if not isinstance(answer, dict):
        return f"the answer is {type(answer).__name__}, not an object"
    method = request.get("method")
    if method == "elicitation/create":
        action = answer.get("action")
        if action not in ("accept", "decline", "cancel"):
            return "the answer has no valid action (accept, decline or cancel)"
        params = as_object(request.get("params"))
        if action != "accept" or params.get("mode") == "url":
            return None
        content = answer.get("content")
        if not isinstance(content, dict):
            return "an accepted form answer needs a content object"
        schema = as_object(params.get("requestedSchema"))
        for key in as_list(schema.get("required")):
            if isinstance(key, str) and key not in content:
                return f"the answer is missing the required field {key!r}"
        for key, prop in as_object(schema.get("properties")).items():
            kind = as_object(prop).get("type")
            check = _PRIMITIVES.get(kind) if isinstance(kind, str) else None
            if key in content and check is not None and not check(content[key]):
                return f"the field {key!r} should be a {kind}"
            choices = as_object(prop).get("enum")
            if key in content and isinstance(choices, list) and content[key] not in choices:
                return f"the field {key!r} should be one of {', '.join(map(str, choices))}"
        return None
    if method == "sampling/createMessage":
        if answer.get("role") != "assistant" or not isinstance(answer.get("content"), dict | list):
            return "a sampling answer needs role 'assistant' and content"
        return None
    roots = answer.get("roots")
    if not isinstance(roots, list) or not all(isinstance(r, dict) and isinstance(r.get("uri"), str) for r in roots):
        return "a roots answer needs a list of roots with uris"
    return None


@dataclass(frozen=True)
class AnswerProblem:
    """Why the answers to a round cannot be used: one is `missing` (ask again) or `malformed` (an error)."""

    kind: Literal["missing", "malformed"]
    key: str
    reason: str


def answers_problem(questions: dict[str, JSONObject], responses: JSONObject) -> AnswerProblem | None:
    """The first problem with `responses` as answers to `questions`, or None when every question is answered.

    A key that is absent, or whose answer is null, is missing: the spec says ask again, not an error. An answer
    that is there but does not fit its question (not an elicitation result, an accept without content, a field of
    the wrong type, a required field left out) is malformed: the spec says it SHOULD get a JSON-RPC error. Keys
    that were never asked are ignored, as the spec says.
    """
    for key, request in questions.items():
        reply = responses.get(key)
        if reply is None:
            return AnswerProblem("missing", key, f"no answer for {key!r}")
        problem = answer_problem(request, reply)
        if problem:
            return AnswerProblem("malformed", key, f"{key!r}: {problem}")
    return None
