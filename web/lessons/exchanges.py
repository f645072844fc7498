"""The "exchange" figure: a short conversation with the lab server, played live and shown as raw JSON-RPC.

A lesson opts in with an `exchanges.toml` beside its meta.toml: one `[[scenes]]` entry per section that shows
the widget "exchange", each a list of steps (a tool call, its answers, which ticket it carries back) and what
each reply must be. Every scene is played on a fresh lab target (web/site/services.py `new_lab_target`: lab keys
/mcp never accepts, a fake clock, a fresh store), so nothing on the page is canned, and a reply that is not
what the data expects shows as "Unexpected" (tests/web/test_third_lesson.py fails on it). A step may declare the
client's `capabilities`, and a step with method "page" is the user's browser on the lab's out-of-band page (the
URL-mode question's, web/out_of_band/routes.py): it sends a made-up key through the page's own code to the scene's own
completion store, and its lines show the key only as dots. Nothing here reads a request or renders; the file is
read once per directory, and a broken one raises ContentError.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from moves.engine import Call, modern_request, outcome_of
from moves.target import Outcome, Reply, Target
from mrtr import Catalog, JSONObject, as_object
from mrtr.client import Line
from mrtr_settings.stores import page_url
from mrtr_stores.completions import MemoryCompletions
from mrtr_toolsets.lesson import Pages, connect_tool
from web.out_of_band.routes import receive
from web.site.content import ContentError, Lesson
from web.site.services import get_services, get_settings

EXCHANGES_FILE = "exchanges.toml"
#: The lab clock every scene starts on; each step is sent this many seconds after the one before.
EPOCH = 1_790_000_000.0
STEP_SECONDS = 4.0
TICKETS = ("none", "last", "first")
EXPECTS = ("input_required", "complete", "error", "finished")
#: The made-up key the scenes type on the out-of-band page, and how their lines show it.
LAB_KEY = "sk-lab-0000-made-up"
HIDDEN = "\u2022" * 8
CALL = Call(client_name="mrtr-lab-lesson")


@dataclass(frozen=True)
class StepData:
    note: str
    method: str
    params: JSONObject
    ticket: str  # none | last (the ticket of the last reply that carried one) | first (the first one minted)
    expect: str
    sender: str = "owner"
    capabilities: JSONObject | None = None  # the client's, when not the default (form elicitation only)


@dataclass(frozen=True)
class ExchangeScene:
    """A scene as played (templates/lessons/_widget_exchange.html renders it): its lines, in the core's `Line` (whose
    direction "~~>"/"<~~" here marks the user's browser on the out-of-band page), and the verdict on the replies.
    Unlike the checker's figures' `moves.transcripts.Scene` it knows its section and what the replies were."""

    section: str
    title: str
    lines: tuple[Line, ...]
    ok: bool
    expected: str
    got: str


def _step(raw: object, where: str) -> StepData:
    if not isinstance(raw, dict):
        raise ContentError(f"{where}: each step is a table")
    method, ticket, expect = raw.get("method", "tools/call"), raw.get("ticket", "none"), raw.get("expect")
    if ticket not in TICKETS or expect not in EXPECTS or not isinstance(raw.get("note"), str):
        raise ContentError(f"{where}: a step needs a note, ticket one of {TICKETS} and expect one of {EXPECTS}")
    params = {k: raw[k] for k in ("name", "arguments", "inputResponses") if k in raw}
    caps = raw.get("capabilities")
    if caps is not None and not isinstance(caps, dict):
        raise ContentError(f"{where}: capabilities is a table")
    if (method == "page") != (expect == "finished"):
        raise ContentError(f"{where}: a page step, and only a page step, expects finished")
    return StepData(raw["note"], str(method), params, ticket, expect, str(raw.get("sender", "owner")), caps)


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


def _kind(response: JSONObject) -> str:
    """error (a JSON-RPC error or an isError result), or the result's resultType."""
    if outcome_of(Reply(response=response)) == Outcome.REFUSED:
        return "error"
    return str(as_object(response.get("result")).get("resultType", "complete"))


def _page_url_of(lines: list[Line]) -> str | None:
    """The address of the newest URL-mode question the lab's server asked in this scene."""
    for line in reversed(lines):
        for question in as_object(as_object(line.message.get("result")).get("inputRequests")).values():
            params = as_object(as_object(question).get("params"))
            if params.get("mode") == "url" and isinstance(params.get("url"), str):
                return str(params["url"])
    return None


def _visit_page(completions: MemoryCompletions, lines: list[Line], now: float, note: str) -> tuple[str, list[Line]]:
    """The user's browser sends the made-up key on the newest URL-mode page: the reply's kind, and its two lines."""
    url = _page_url_of(lines)
    problem = "no page was asked for" if url is None else receive(completions, url.rsplit("/", 1)[-1], LAB_KEY, now)
    page: JSONObject = ({"status": 200, "page": "The lab has the key."} if problem is None
                        else {"status": 404, "page": problem})
    return ("finished" if problem is None else "error",
            [Line("~~>", {"POST": url or "", "form": {"key": HIDDEN}}, note), Line("<~~", page)])


def play_scene(section: str, title: str, expected: str, steps: tuple[StepData, ...]) -> ExchangeScene:
    """Play `steps` on a fresh lab target (with its own completion store) and keep every message, with a verdict."""
    completions = MemoryCompletions()
    catalog = get_services().server.catalog.merged(
        Catalog(tools={"connect": connect_tool(Pages(completions, page_url(get_settings())))}))
    target = get_services().new_lab_target(now=EPOCH, catalog=catalog)
    target.begin()
    lines: list[Line] = []
    tickets: list[str] = []
    ok, got = True, []
    for n, step in enumerate(steps, 1):
        now = EPOCH + STEP_SECONDS * (n - 1)
        if step.method == "page":
            kind, more = _visit_page(completions, lines, now, step.note)
        else:
            kind, more = _send(target, n, step, tickets)
        got.append(kind)
        ok = ok and kind == step.expect
        lines += more
    return ExchangeScene(section, title, tuple(lines), ok, expected, ", ".join(got))


def _send(target: Target, n: int, step: StepData, tickets: list[str]) -> tuple[str, list[Line]]:
    """Step `n` as a request to the lab target: the reply's kind and the two lines; a minted ticket joins `tickets`."""
    params = dict(step.params)
    if step.ticket != "none" and tickets:
        params["requestState"] = tickets[-1] if step.ticket == "last" else tickets[0]
    call = CALL if step.capabilities is None else replace(CALL, capabilities=step.capabilities)
    message = modern_request(n, step.method, params, call)
    target.advance(STEP_SECONDS * (n - 1), past_expiry=False, expires_at=None)
    reply = target.send("other" if step.sender == "other" else "owner", message)
    response = reply.response if isinstance(reply.response, dict) else {}
    ticket = as_object(response.get("result")).get("requestState")
    if isinstance(ticket, str):
        tickets.append(ticket)
    return _kind(response), [Line("-->", message, step.note), Line("<--", response)]


def exchange_data(lesson: Lesson, section: str) -> ExchangeScene:
    scenes = load_exchanges(lesson.directory)
    if section not in scenes:
        raise ContentError(f"{lesson.directory / EXCHANGES_FILE}: no scene for section {section!r}")
    title, expected, steps = scenes[section]
    return play_scene(section, title, expected, steps)
