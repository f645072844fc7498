"""The "exchange" figure: a short conversation with the lab server, played live and shown as raw JSON-RPC.

A lesson opts in with an `exchanges.toml` beside its meta.toml: one `[[scenes]]` entry per section that shows
the widget "exchange", each a list of steps (a tool call, its answers, which ticket it carries back) and what
each reply must be. Every scene is played on a fresh lab target (web/services.py `new_lab_target`: lab keys
/mcp never accepts, a fake clock, a fresh store), so nothing on the page is canned, and a reply that is not
what the data expects shows as "Unexpected" (tests/web/test_third_lesson.py fails on it). Nothing here reads
a request or renders; the file is read once per directory, and a broken one raises ContentError.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from moves.engine import Call, modern_request, outcome_of
from moves.target import Outcome, Reply
from mrtr import as_object
from web.content import ContentError, Lesson
from web.services import get_services

EXCHANGES_FILE = "exchanges.toml"
#: The lab clock every scene starts on; each step is sent this many seconds after the one before.
EPOCH = 1_790_000_000.0
STEP_SECONDS = 4.0
TICKETS = ("none", "last", "first")
EXPECTS = ("input_required", "complete", "error")
CALL = Call(client_name="mrtr-lab-lesson")


@dataclass(frozen=True)
class StepData:
    note: str
    method: str
    params: dict[str, Any]
    ticket: str  # none | last (the ticket of the last reply that carried one) | first (the first one minted)
    expect: str
    sender: str = "owner"


@dataclass(frozen=True)
class Line:
    direction: str  # "-->" sent, "<--" received
    message: dict[str, Any]
    note: str = ""


@dataclass(frozen=True)
class Scene:
    section: str
    title: str
    lines: tuple[Line, ...]
    ok: bool
    expected: str
    got: str


def _step(raw: Any, where: str) -> StepData:
    if not isinstance(raw, dict):
        raise ContentError(f"{where}: each step is a table")
    method, ticket, expect = raw.get("method", "tools/call"), raw.get("ticket", "none"), raw.get("expect")
    if ticket not in TICKETS or expect not in EXPECTS or not isinstance(raw.get("note"), str):
        raise ContentError(f"{where}: a step needs a note, ticket one of {TICKETS} and expect one of {EXPECTS}")
    params = {k: raw[k] for k in ("name", "arguments", "inputResponses") if k in raw}
    return StepData(raw["note"], str(method), params, ticket, expect, str(raw.get("sender", "owner")))


@cache
def load_exchanges(directory: Path) -> dict[str, tuple[str, str, tuple[StepData, ...]]]:
    """section id -> (title, the scene's last words, its steps), from `directory`/exchanges.toml."""
    path = directory / EXCHANGES_FILE
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ContentError(f"{path}: {exc}") from None
    scenes: dict[str, tuple[str, str, tuple[StepData, ...]]] = {}
    for n, raw in enumerate(data.get("scenes", []), 1):
        where = f"{path}: scene #{n}"
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("section", "title")):
            raise ContentError(f"{where}: needs a section and a title")
        steps = tuple(_step(s, f"{where} step #{i}") for i, s in enumerate(raw.get("steps", []), 1))
        if not steps:
            raise ContentError(f"{where}: needs at least one step")
        scenes[raw["section"]] = (raw["title"], str(raw.get("expected", "")), steps)
    return scenes


def _kind(response: dict[str, Any]) -> str:
    """error (a JSON-RPC error or an isError result), or the result's resultType."""
    if outcome_of(Reply(response=response)) == Outcome.REFUSED:
        return "error"
    return str(as_object(response.get("result")).get("resultType", "complete"))


def play_scene(section: str, title: str, expected: str, steps: tuple[StepData, ...]) -> Scene:
    """Play `steps` on a fresh lab target and keep every message, with a verdict on the replies."""
    target = get_services().new_lab_target(now=EPOCH)
    target.begin()
    lines: list[Line] = []
    tickets: list[str] = []
    ok, got = True, []
    for n, step in enumerate(steps, 1):
        params = dict(step.params)
        if step.ticket != "none" and tickets:
            params["requestState"] = tickets[-1] if step.ticket == "last" else tickets[0]
        message = modern_request(n, step.method, params, CALL)
        target.advance(STEP_SECONDS * (n - 1), past_expiry=False, expires_at=None)
        reply = target.send("other" if step.sender == "other" else "owner", message)
        response = reply.response if isinstance(reply.response, dict) else {}
        ticket = as_object(response.get("result")).get("requestState")
        if isinstance(ticket, str):
            tickets.append(ticket)
        kind = _kind(response)
        got.append(kind)
        ok = ok and kind == step.expect
        lines += [Line("-->", message, step.note), Line("<--", response)]
    return Scene(section, title, tuple(lines), ok, expected, ", ".join(got))


def exchange_data(lesson: Lesson, section: str) -> Scene:
    scenes = load_exchanges(lesson.directory)
    if section not in scenes:
        raise ContentError(f"{lesson.directory / EXCHANGES_FILE}: no scene for section {section!r}")
    title, expected, steps = scenes[section]
    return play_scene(section, title, expected, steps)
