"""The one guard for what visitors send to the pages: the path, every query parameter and form field.

It runs before every view except `/mcp` (web/mcp/routes.py reads and checks its own JSON-RPC bodies) and
answers a clear 400 with the site's error page or fragment (`InputRefused`, rendered by
web/errors/pages.py) instead of letting a value reach a view that could choke on it:

* bytes that are not UTF-8, raw lone surrogates (`%ED%A0%80`) included, in the path, names and values;
* lone surrogates written as JSON escapes (`\\ud800`) in any field, and control characters (NUL, ESC...);
* too many fields, field names or values longer than their field allows, forms not URL-encoded or
  sent in chunks (Werkzeug would cut a chunked body at the size limit and serve the rest);
* in JSON fields: nesting deeper than the server accepts, NaN/Infinity, numbers no double can hold;
* in ticket fields: a signed ticket whose (unverified) payload would trip any of the above;
* in count fields (`?autoplay=`, `?maxwidth=`): anything but a few ASCII characters;
* in URL fields (`?url=`): text that `urllib` cannot split into a URL.

`FIELDS` declares, per endpoint, the fields the views read and what kind each is; a field nobody
declared still gets the generic checks. This module never changes a value, never decides what a
field means (the views still say "offset must be between 0 and 600"), and never reads `/mcp`.
The text helpers (`text_problem`, `json_text_problem`) are plain functions any other module may
reuse; the UTF-8 and lone-surrogate checks themselves live once, in `mrtr.wire`, which /mcp's body
reader uses too.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote_to_bytes, urlsplit

from flask import Flask, request
from werkzeug.exceptions import BadRequest

from mrtr.protocol import MAX_JSON_DEPTH
from mrtr.tickets import SIGNED_PREFIX, b64decode_strict
from mrtr.wire import has_lone_surrogate, lone_surrogate_escape, utf8_problem

#: At most this many fields in a query string, and (separately) in a form body, repeats included.
MAX_FIELDS = 64
#: A field name longer than this is no field of ours.
MAX_NAME_CHARS = 64
#: A field nobody declared may still be sent (a course site's tracking parameter), up to this long.
DEFAULT_MAX_CHARS = 1024
#: A query string longer than this is refused with 414 before it is parsed.
MAX_QUERY_BYTES = 16_384
#: A number literal in a JSON field longer than this is refused, whatever its value.
MAX_NUMBER_CHARS = 100

Kind = Literal["text", "json", "ticket", "count", "url"]


@dataclass(frozen=True)
class Field:
    kind: Kind = "text"
    max_chars: int = DEFAULT_MAX_CHARS
    #: JSON fields: the deepest nesting accepted, or None when the view parses and judges depth itself.
    max_depth: int | None = MAX_JSON_DEPTH


class InputRefused(BadRequest):
    """A visitor's input the pages will not use: rendered as a 400 page/fragment with `description`."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(description=message)
        self.code = code
        self.title = {411: "That form could not be read", 414: "That address is too long",
                      415: "That form could not be read"}.get(code, "That input could not be used")


# -- what each endpoint reads ------------------------------------------------------------------------

_SWITCHES: dict[str, Field] = {
    "single_use": Field(max_chars=8),
    "sealed": Field(max_chars=8),
    "no_signature": Field(max_chars=8),
    "offset": Field(max_chars=16),
    "move": Field(max_chars=64),
    "embedded": Field(max_chars=8),
    "tool": Field(max_chars=32),
}
_PROGRESS = Field(max_chars=4096)
_ORIGIN = Field(max_chars=512)
_CUSTOM: dict[str, Field] = {
    "ticket": Field("ticket", 8192),
    # The playground parses these two itself and answers deep nesting with its own message in place.
    "arguments": Field("json", 16_384, max_depth=None),
    "token_choice": Field(max_chars=256),
    "token_other": Field(max_chars=256),
    "at": Field(max_chars=32),
    "answer": Field(max_chars=16),
    "answer_raw": Field("json", 16_384, max_depth=None),
    "minted_at": Field(max_chars=32),
    # The custom retry's lab state, carried between sends (web/playground/lab.py validates both).
    "seed": Field(max_chars=64),
    "redeemed": Field(max_chars=4096),
}
_AUTOPLAY = {"autoplay": Field("count", 6)}
#: A quiz item answered by doing (web/quiz/tasks.py reads and checks these, with its own messages).
_TASK: dict[str, Field] = {
    "retry": Field("json", 16_384, max_depth=None),
    "seed": Field(max_chars=64),
    "minted_at": Field(max_chars=32),
    "order": Field(max_chars=32),
    # a drawn item (web/quiz/draws.py): its signed draw and the option picked
    "draw": Field(max_chars=512),
    "predict": Field(max_chars=32),
}

#: endpoint -> the query parameters and form fields its view reads (GET and POST alike).
FIELDS: dict[str, dict[str, Field]] = {
    "lessons.home": {},
    "lessons.lesson_page": {**_SWITCHES, "progress": _PROGRESS, "stores": Field(max_chars=16)},
    "lessons.figure": {},
    "quiz.quiz_page": {"progress": _PROGRESS, "embed": Field(max_chars=64)},
    "quiz.answer": {"choice": Field(max_chars=64), "progress": _PROGRESS, **_TASK},
    "playground.show": dict(_SWITCHES),
    "playground.play_move": dict(_SWITCHES),
    "playground.play_custom_move": {**_SWITCHES, **_CUSTOM},
    "playground.move_page": dict(_SWITCHES),
    "playground.custom_page": {},
    # The API key of a URL-mode page: the page checks it (8 to 200 characters) and drops it.
    "out_of_band.page": {"key": Field(max_chars=256)},
    "demo.deck": _AUTOPLAY,
    "demo.step": _AUTOPLAY,
    "demo.move": _AUTOPLAY,
    "demo.notes": {},
    "demo.notes_step": {},
    "demo.notes_move": {},
    "embed.quiz": {"progress": _PROGRESS, "origin": _ORIGIN},
    "embed.question": {"progress": _PROGRESS, "origin": _ORIGIN},
    "embed.answer": {"single": Field(max_chars=8), "origin": _ORIGIN, "choice": Field(max_chars=64),
                     "progress": _PROGRESS, **_TASK},
    # /check answers over-long fields with its own panel (web/check/limits.py MAX_FIELD = 4096), so the guard's
    # limit sits above it: the guard stops only what the page itself could not handle.
    "check.check_page": {},
    "check.start_check": {name: Field(max_chars=8192) for name in ("url", "tool", "args", "owner_token",
                                                                   "other_token", "skip_late", "allow_replay")},
    "check.run_page": {},
    # /check-client (web/check_client/routes.py): the output form's own limit (32 KiB) answers in the page's words
    "check_client.start_page": {},
    "check_client.start_run": {},
    "check_client.run_page": {},
    "check_client.note_output": {"output": Field(max_chars=70_000), "exit_code": Field(max_chars=16),
                                 "choices": Field(max_chars=8)},
    "embed.oembed": {"url": Field("url", 2048), "format": Field(max_chars=16), "maxwidth": Field("count", 6),
                     "maxheight": Field("count", 6)},
    # the live class (web/classroom/routes.py); nicknames get their own rules there, codes are normalised there
    "demo.switch": _AUTOPLAY,
    "demo.notes_switch": {},
    "classroom.start": {"token": Field(max_chars=256)},
    "classroom.claim": {},
    "classroom.host": {},
    "classroom.presenter": {},
    "classroom.host_events": {},
    "classroom.push_question": {},
    "classroom.reveal": {},
    "classroom.round_switch": {"open": Field(max_chars=8)},
    "classroom.single_use": {"on": Field(max_chars=8)},
    "classroom.lock": {"locked": Field(max_chars=8)},
    "classroom.remove": {"learner": Field("count", 12)},
    "classroom.end": {},
    "classroom.results": {},
    "classroom.short": {},
    "classroom.join": {"code": Field(max_chars=64)},
    "classroom.join_post": {"code": Field(max_chars=64), "nickname": Field(max_chars=200)},
    "classroom.me": {},
    "classroom.me_live": {"stage": Field("count", 12)},
    "classroom.answer": {"option": Field(max_chars=64)},
    "classroom.play": {"move": Field(max_chars=64)},
    # the build lesson's pasted checker report (web/build/routes.py refuses more than 64 KiB with its own words)
    "build.report": {"report": Field(max_chars=70_000, max_depth=None), "code": Field(max_chars=70_000)},
    # the in-page checker's files (web/build/runner.py): addressed by path alone, no fields
    "build.runner.pyodide": {},
    "build.runner.wheel": {},
    "build.runner.checker": {},
    "build.runner.worker": {},
}
#: Endpoints the guard leaves alone: the protocol endpoints (/mcp, a grading run's) check their own bodies; static
#: files read nothing.
UNGUARDED = frozenset({"mcp.endpoint", "check_client.mcp", "static"})


# -- text checks any module may reuse ------------------------------------------------------------------


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def text_problem(text: str) -> str | None:
    """Why `text` (already decoded) is not plain Unicode text a page can echo, or None."""
    if has_lone_surrogate(text):
        return "holds a lone UTF-16 surrogate, which is not valid Unicode text"
    if lone_surrogate_escape(text):
        return "holds a lone UTF-16 surrogate escape (such as \\ud800), which is not valid Unicode text"
    control = _CONTROL.search(text)
    if control:
        return f"holds a control character (U+{ord(control.group()):04X}); only text, tabs and line breaks are accepted"
    return None


#: JSON tokens that matter here: strings (an unterminated one runs to the end), brackets, numbers, bare words.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]|-?[0-9][0-9.eE+-]*|[A-Za-z]+', re.S)


def json_text_problem(text: str, limit: int | None = MAX_JSON_DEPTH) -> str | None:
    """Why JSON text would be unsafe to parse and echo (depth, NaN/Infinity, huge numbers), or None.

    One linear scan, no parsing: text that is merely not JSON passes, and its reader says why.
    `limit=None` leaves nesting depth to the reader.
    """
    depth = deepest = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if limit is not None and deepest > limit:
                return f"nests deeper than {limit} levels"
        elif first in "]}":
            depth = max(0, depth - 1)
        elif first in "NI" and token in ("NaN", "Infinity"):
            return f"holds {token}, which is not a JSON number"
        elif first == "-" or first.isdigit():
            if len(token) > MAX_NUMBER_CHARS:
                return f"holds a number {len(token)} characters long; numbers are limited to {MAX_NUMBER_CHARS}"
            try:
                value = float(token)
            except ValueError:
                continue  # not a number at all: the JSON reader will say so
            if math.isinf(value):
                return f"holds the number {token[:20]}, too large for a double"
    return None


def ticket_problem(token: str) -> str | None:
    """Why a signed ticket's payload (read WITHOUT verifying it) would be unsafe to open and show, or None.

    Only the payload's shape is judged; whether the ticket is genuine is the server's business.
    Sealed tickets cannot be read without the key, so their codec checks their plaintext itself.
    """
    prefix, _, rest = token.partition(".")
    payload, sep, _sig = rest.rpartition(".")
    if prefix != SIGNED_PREFIX or not sep or not payload:
        return None
    try:
        body = b64decode_strict(payload)
    except ValueError:
        return None  # not base64url: the codec refuses it, and there is nothing to show
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None  # bytes no server wrote (raw surrogates included): the codec refuses them safely
    problem = text_problem(text) or json_text_problem(text)
    return f"payload {problem}" if problem else None


# -- the guard -------------------------------------------------------------------------------------------


def _pairs(raw: bytes, where: str) -> list[tuple[str, str]]:
    """Split URL-encoded bytes into (name, value) text pairs, refusing anything that is not UTF-8."""
    pairs: list[tuple[str, str]] = []
    for part in raw.split(b"&"):
        if not part:
            continue
        if len(pairs) >= MAX_FIELDS:
            raise InputRefused(f"The {where} has more than {MAX_FIELDS} fields; none of these pages needs that many.")
        name_raw, _, value_raw = part.partition(b"=")
        name_bytes = unquote_to_bytes(name_raw.replace(b"+", b" "))
        value_bytes = unquote_to_bytes(value_raw.replace(b"+", b" "))
        problem = utf8_problem(name_bytes)
        if problem:
            raise InputRefused(f"A field name in the {where} is not UTF-8 text: {problem}.")
        problem = utf8_problem(value_bytes)
        if problem:
            label = name_bytes[:MAX_NAME_CHARS].decode("utf-8", "replace")
            raise InputRefused(f"The field “{label}” in the {where} is not UTF-8 text: {problem}.")
        pairs.append((name_bytes.decode("utf-8"), value_bytes.decode("utf-8")))
    return pairs


def check_field(name: str, value: str, spec: Field | None) -> None:
    """Refuse one field's value (InputRefused) when it breaks its own or the generic rules."""
    if len(name) > MAX_NAME_CHARS:
        raise InputRefused(f"A field name is {len(name)} characters long; names are at most {MAX_NAME_CHARS}.")
    problem = text_problem(name)
    if problem:
        raise InputRefused(f"A field name {problem}.")
    spec = spec or Field()
    label = f"The field “{name}”"
    if len(value) > spec.max_chars:
        raise InputRefused(f"{label} is {len(value):,} characters long; it may be at most {spec.max_chars:,}.")
    problem = text_problem(value)
    if problem is None and spec.kind == "json":
        problem = json_text_problem(value, spec.max_depth)
    elif problem is None and spec.kind == "ticket":
        problem = ticket_problem(value.strip())
        if problem:
            problem = "is a ticket whose " + problem
    elif problem is None and spec.kind == "count" and not value.isascii():
        problem = "must be a whole number written with the digits 0-9"
    elif problem is None and spec.kind == "url":
        try:
            urlsplit(value)
        except ValueError as exc:
            problem = f"is not a URL that can be read ({exc})"
    if problem:
        raise InputRefused(f"{label} {problem}.")


def _path_problem(environ: dict[str, object]) -> str | None:
    """Why the request's path is not UTF-8: WSGI hands it over as bytes in latin-1 clothing, and the
    raw request line (when the server keeps it) still has the percent-escapes Werkzeug may have replaced."""
    for key in ("PATH_INFO", "REQUEST_URI", "RAW_URI"):
        value = environ.get(key)
        if not isinstance(value, str):
            continue
        raw = value.encode("latin-1", "replace")
        if key != "PATH_INFO":
            raw = unquote_to_bytes(raw.split(b"?", 1)[0])
        problem = utf8_problem(raw)
        if problem:
            return problem
    return None


def check_request() -> None:
    """The before-request hook: refuse the request (InputRefused) before any view reads it."""
    if request.endpoint in UNGUARDED or request.path == "/mcp" or request.path.startswith("/mcp/"):
        return
    problem = _path_problem(request.environ)
    if problem:
        raise InputRefused(f"The address is not UTF-8 text: {problem}.")
    fields = FIELDS.get(request.endpoint or "", {})
    query = request.query_string
    if len(query) > MAX_QUERY_BYTES:
        raise InputRefused(f"The query string is {len(query):,} bytes long; the limit is {MAX_QUERY_BYTES:,}.", 414)
    sent = _pairs(query, "query string")
    if request.method == "POST" and request.mimetype == "multipart/form-data":
        raise InputRefused("Forms on these pages are sent URL-encoded (application/x-www-form-urlencoded), "
                           "not as multipart/form-data.", 415)
    if "chunked" in request.headers.get("Transfer-Encoding", "").lower():
        # Werkzeug reads a chunked body up to MAX_CONTENT_LENGTH and silently drops the rest; a browser
        # always sends a form with its length, so a chunked one is refused rather than served cut short.
        raise InputRefused("Forms on these pages are sent with a Content-Length, not in chunks.", 411)
    if request.method == "POST" and request.mimetype == "application/x-www-form-urlencoded":
        sent += _pairs(request.get_data(cache=True), "form")  # past MAX_CONTENT_LENGTH: 413, never read
    for name, value in sent:
        check_field(name, value, fields.get(name))


def init_app(app: Flask) -> None:
    """Install the guard (called once, from web/site/security.py)."""
    app.before_request(check_request)


__all__ = ["FIELDS", "Field", "InputRefused", "check_field", "check_request", "init_app",
           "json_text_problem", "text_problem", "ticket_problem"]
