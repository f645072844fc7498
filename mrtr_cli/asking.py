"""How `mrtr call` answers a server's questions: a person at the terminal, a script of answers, or the schemas.

`TerminalAsker` asks field by field by the form's schema (type, choices, default, required), re-asks a value that
does not fit, and offers decline and cancel; for a URL-mode question it shows the address and waits for the
person to say they finished the page (only the person can). `ScriptedAnswers` answers from `--answers` (keyed by
the question's key; a list is used in order, its last answer repeated) and still waits for the person on a
URL-mode accept. `ask_arguments` asks a tool's missing required arguments the same way. Each is an
`mrtr.KeyedAnswerer`; what leaves them is checked again by `mrtr.Client` before it is sent.
"""

from __future__ import annotations

import json
from typing import TextIO

from mrtr import JSON, ClientError, JSONObject, as_object
from mrtr.client_errors import BadAnswer
from mrtr.forms import FormField, answer_by_schema, fields_of, parse_value, value_problem

DECLINE, CANCEL = "decline", "cancel"


class Cancelled(ClientError):
    """The person ended the question (typed cancel, or the terminal closed)."""

    def __init__(self) -> None:
        super().__init__("cancelled: the terminal closed before an answer")


def describe_field(field: FormField) -> str:
    """`name (type, required, one of a|b, default x): title` as the prompt and the tool list show it."""
    notes = [field.type or "any value"]
    if field.required:
        notes.append("required")
    if field.choices:
        notes.append("one of " + " | ".join(_shown(c) for c in field.choices))
    if field.item_choices:
        notes.append("some of " + " | ".join(_shown(c) for c in field.item_choices))
    if field.has_default:
        notes.append(f"default {_shown(field.default)}")
    title = f": {field.title}" if field.title else ""
    return f"{field.name} ({', '.join(notes)}){title}"


def _shown(value: JSON) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value if isinstance(value, str) else json.dumps(value)


class TerminalAsker:
    """Asks a person, one line at a time, on `stdin`/`stdout` (a terminal, a pseudo-terminal or a pipe)."""

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin = stdin
        self.stdout = stdout

    def line(self, prompt: str) -> str:
        self.stdout.write(prompt)
        self.stdout.flush()
        text = self.stdin.readline()
        if not text:
            raise Cancelled
        return text.rstrip("\r\n")

    def __call__(self, key: str, request: JSONObject) -> JSONObject:
        params = as_object(request.get("params"))
        message = params.get("message")
        self.stdout.write(f"\nThe server asks ({key}): {message if isinstance(message, str) else ''}\n")
        try:
            if params.get("mode") == "url":
                return self.url_page(params)
            choice = self.line("  accept, decline or cancel? [accept]: ").strip().lower()
            if choice in ("d", DECLINE, "c", CANCEL):
                return {"action": DECLINE if choice.startswith("d") else CANCEL}
            return {"action": "accept", "content": self.form(fields_of(params.get("requestedSchema")))}
        except Cancelled:
            return {"action": CANCEL}

    def url_page(self, params: JSONObject) -> JSONObject:
        url = params.get("url")
        self.stdout.write(f"  Open this address in a browser and finish the page there:\n  {url}\n")
        reply = self.line("  Press Enter once you have finished the page, or type decline or cancel: ")
        word = reply.strip().lower()
        if word in ("d", DECLINE, "c", CANCEL):
            return {"action": DECLINE if word.startswith("d") else CANCEL}
        return {"action": "accept"}

    def form(self, fields: list[FormField]) -> JSONObject:
        content: JSONObject = {}
        for field in fields:
            value = self.field(field)
            if value is not _OMITTED:
                content[field.name] = value  # type: ignore[assignment]
        return content

    def field(self, field: FormField) -> JSON | object:
        """One field's value, asked until it fits; `_OMITTED` for an optional field left empty."""
        hint = " [y/n]" if field.type == "boolean" else ""
        while True:
            text = self.line(f"  {describe_field(field)}{hint}: ")
            if not text.strip():
                if field.has_default:
                    return field.default
                if not field.required:
                    return _OMITTED
                self.stdout.write("  ! a value is required\n")
                continue
            try:
                value = self._by_number(field, text)
            except ValueError as exc:
                self.stdout.write(f"  ! {exc}\n")
                continue
            problem = value_problem(field, value)
            if problem is None:
                return value
            self.stdout.write(f"  ! {problem}\n")

    @staticmethod
    def _by_number(field: FormField, text: str) -> JSON:
        """A choice may be typed as itself or as its position (1, 2, ...)."""
        if field.choices and text.strip().isdigit() and text.strip() not in [str(c) for c in field.choices]:
            index = int(text.strip()) - 1
            if 0 <= index < len(field.choices):
                return field.choices[index]
        if field.choices and field.type == "string":
            return text
        return parse_value(field, text)


_OMITTED = object()


class ScriptedAnswers:
    """Answers from `--answers`: `{"key": answer}` or `{"key": [answer, answer, ...]}`, where an answer is an
    elicitation result (`{"action": ...}`) or, as a shorthand, the content of an accepted form."""

    def __init__(self, script: JSONObject, asker: TerminalAsker) -> None:
        self.script = script
        self.asker = asker
        self.used: dict[str, int] = {}

    def __call__(self, key: str, request: JSONObject) -> JSONObject:
        if key not in self.script:
            raise BadAnswer(f"--answers has no answer for the question {key!r}")
        entry = self.script[key]
        if isinstance(entry, list):
            if not entry:
                raise BadAnswer(f"--answers has an empty list for {key!r}")
            index = min(self.used.get(key, 0), len(entry) - 1)
            self.used[key] = index + 1
            entry = entry[index]
        answer = as_object(entry)
        if "action" not in answer:
            answer = {"action": "accept", "content": answer}
        params = as_object(request.get("params"))
        if params.get("mode") == "url" and answer.get("action") == "accept":
            self.asker.stdout.write(f"\nThe server asks ({key}): {params.get('message')}\n")
            try:
                return self.asker.url_page(params)
            except Cancelled:
                return dict(answer)
        return dict(answer)


def by_schema(key: str, request: JSONObject) -> JSONObject:
    """`--answer-by-schema`: every form field by its schema; a URL-mode question declined (nobody saw the page)."""
    return answer_by_schema(request)


def ask_arguments(asker: TerminalAsker, schema: JSONObject, given: JSONObject) -> JSONObject:
    """`given`, with each missing required argument asked for."""
    missing = [f for f in fields_of(schema) if f.required and f.name not in given]
    if missing:
        asker.stdout.write("The tool needs these arguments:\n")
    arguments = dict(given)
    for field in missing:
        value = asker.field(field)
        if value is not _OMITTED:
            arguments[field.name] = value  # type: ignore[assignment]
    return arguments
