"""The build loop of "Build the ticket checks yourself": its steps, its code, and the pasted report.

A lesson opts in with a `steps.toml` beside its meta.toml and a starter/ and solution/ server.py
marked with "# -- step: <id> --" ... "# -- end of step --" blocks. This module reads those (once
per directory), splices partial solutions for the tests, and grades a pasted
`python -m mrtr check --json` report: a step is done when its move held (the answer step, which
has no move, when no-answer held and the missing-answer probe passed). It never runs a checker,
never stores anything, and treats the pasted report as untrusted text.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, abort, request

from web import htmx
from web.content import ContentError, Lesson, get_content

bp = Blueprint("build", __name__)

STEPS_FILE = "steps.toml"
SERVER_FILE = "server.py"
#: The most a pasted report may weigh (a real one is a few kilobytes).
MAX_REPORT = 64 * 1024
#: Seconds the lesson suggests for MRTR_TICKET_TTL, so the late move waits only that long.
SUGGESTED_TTL = 3

#: A step block, marked by Python (#) or TypeScript (//) comments.
_BLOCK = re.compile(r"^(?P<c>#|//) -- step: (?P<id>[a-z][a-z-]*) --\n(?P<code>.*?)^(?P=c) -- end of step --\n",
                    re.S | re.M)


@dataclass(frozen=True)
class Step:
    id: str
    n: int
    title: str
    function: str
    move: str  # the checker move this step turns green, "" when none does
    task: str
    hints: tuple[str, ...]
    solution: str  # the step's block in solution/server.py
    stub: str  # the same block in starter/server.py


@dataclass(frozen=True)
class Build:
    steps: tuple[Step, ...]
    starter: str
    solution: str

    def step(self, step_id: str) -> Step | None:
        return next((s for s in self.steps if s.id == step_id), None)

    def partial(self, step_ids: set[str] | frozenset[str]) -> str:
        """The starter with the named steps' blocks taken from the solution."""
        return splice(self.starter, self.solution, step_ids)


def splice(starter: str, solution: str, step_ids: set[str] | frozenset[str]) -> str:
    """`starter` with the named steps' blocks taken from `solution` (any track, Python or TypeScript)."""
    wanted = {k: v for k, v in blocks(solution).items() if k in step_ids}
    return _BLOCK.sub(lambda m: f"{m['c']} -- step: {m['id']} --\n{wanted.get(m['id'], m['code'])}"
                                f"{m['c']} -- end of step --\n", starter)


def same_outside_blocks(starter: str, solution: str) -> bool:
    """True when two files mark the same steps, in order, and differ only inside them."""
    return list(blocks(starter)) == list(blocks(solution)) and _BLOCK.sub("", starter) == _BLOCK.sub("", solution)


def blocks(source: str) -> dict[str, str]:
    return {m["id"]: m["code"] for m in _BLOCK.finditer(source)}


@cache
def load_build(directory: Path) -> Build | None:
    """The build loop under a lesson directory, or None when it has no steps.toml.

    Raises:
        ContentError: the steps, starter and solution do not fit together.
    """
    path = directory / STEPS_FILE
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        starter = (directory / "starter" / SERVER_FILE).read_text(encoding="utf-8")
        solution = (directory / "solution" / SERVER_FILE).read_text(encoding="utf-8")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ContentError(f"{directory}: the build loop cannot be read ({exc})") from None
    stubs, answers = blocks(starter), blocks(solution)
    if list(stubs) != list(answers):
        raise ContentError(f"{directory}: starter and solution mark different steps")
    if _BLOCK.sub("", starter) != _BLOCK.sub("", solution):
        raise ContentError(f"{directory}: starter and solution differ outside their step blocks")
    steps: list[Step] = []
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise ContentError(f"{path}: no [[steps]]")
    for n, raw in enumerate(raw_steps, 1):
        where = f"{path}: step #{n}"
        try:
            sid, title, function, move, task = (raw[k] for k in ("id", "title", "function", "move", "task"))
            hints = tuple(raw["hints"])
        except (KeyError, TypeError):
            raise ContentError(f"{where}: needs id, title, function, move, task and hints") from None
        if not all(isinstance(v, str) for v in (sid, title, function, move, task, *hints)) or len(hints) != 3:
            raise ContentError(f"{where}: text fields must be strings, with exactly three hints")
        if sid not in answers:
            raise ContentError(f"{where}: there is no '# -- step: {sid} --' block in the server files")
        if f"def {function}(" not in answers[sid]:
            raise ContentError(f"{where}: the {sid!r} block does not define {function}")
        steps.append(Step(sid, n, title, function, move, task, hints, answers[sid], stubs[sid]))
    if [s.id for s in steps] != list(answers):
        raise ContentError(f"{path}: the steps must match the server's step blocks, in order")
    return Build(tuple(steps), starter, solution)


def build_for(lesson: Lesson) -> Build:
    build = load_build(lesson.directory)
    if build is None:
        abort(404)
    return build


# -- grading a pasted report ------------------------------------------------------------------------


class ReportError(ValueError):
    """The pasted text is not a checker report; the message says what to paste instead."""


@dataclass(frozen=True)
class Graded:
    step: Step
    done: bool
    detail: str


def _rows(report: dict[str, Any], key: str, name: str) -> dict[str, dict[str, Any]]:
    rows = report.get(key)
    if not isinstance(rows, list):
        raise ReportError(f"the report has no {key} list: paste the whole output of --json")
    return {r[name]: r for r in rows if isinstance(r, dict) and isinstance(r.get(name), str)}


def grade(build: Build, text: str) -> list[Graded]:
    """Which steps the pasted `python -m mrtr check --json` output shows as done."""
    if not text.strip():
        raise ReportError("paste the output of python -m mrtr check --json first")
    if len(text) > MAX_REPORT:
        raise ReportError(f"that is longer than any checker report ({MAX_REPORT // 1024} KiB at most)")
    try:
        report = json.loads(text)
    except (ValueError, RecursionError):
        raise ReportError("that is not JSON: run the checker with --json and paste everything it prints") from None
    if not isinstance(report, dict):
        raise ReportError("that is JSON but not a checker report (it should be one object)")
    moves, probes = _rows(report, "moves", "move"), _rows(report, "probes", "probe")
    graded = []
    for step in build.steps:
        if step.move:
            row = moves.get(step.move)
            done = bool(row and row.get("ok") is True)
            detail = f"the {step.move} move {'held' if done else 'did not hold' if row else 'is not in the report'}"
        else:
            held = moves.get("no-answer", {}).get("ok") is True and probes.get("missing-answer", {}).get("ok") is True
            done = held
            detail = f"the no-answer move and the missing-answer probe {'held' if held else 'did not both hold'}"
        graded.append(Graded(step, done, detail))
    return graded


# -- "Break it, by hand": the first lesson's experiments on this lesson's solution -------------------

BREAKIT_FILE = "break-it-by-hand.toml"


@dataclass(frozen=True)
class Experiment:
    check: str
    experiment: int  # the first lesson's Break-it experiment it matches, 0 for an extra one
    title: str
    remove: str  # lines of solution/server.py to delete
    move: str
    verdict: str
    summary: str
    lesson: str


@cache
def load_breakit(directory: Path) -> tuple[Experiment, ...]:
    """The experiments in `directory`/break-it-by-hand.toml (empty when there is none); each `remove` must be in
    the solution exactly once."""
    path = directory / BREAKIT_FILE
    if not path.is_file():
        return ()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        solution = (directory / "solution" / SERVER_FILE).read_text(encoding="utf-8")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ContentError(f"{path}: cannot be read ({exc})") from None
    experiments = []
    fields = ("check", "experiment", "title", "remove", "move", "verdict", "summary", "lesson")
    for n, raw in enumerate(data.get("experiments", []), 1):
        try:
            experiment = Experiment(**{k: raw[k] for k in fields})
        except (KeyError, TypeError):
            raise ContentError(f"{path}: experiment #{n} needs {', '.join(fields)}") from None
        if solution.count(experiment.remove + "\n") != 1:
            raise ContentError(f"{path}: experiment #{n}: its lines are not in the solution exactly once")
        experiments.append(experiment)
    return tuple(experiments)


def breakit_by_hand() -> dict[str, Any] | None:
    """What lessons/_breakit_by_hand.html shows: the first lesson with break-it-by-hand.toml, or None."""
    for lesson in get_content().lessons:
        experiments = load_breakit(lesson.directory)
        if experiments:
            where = f"lessons/{lesson.directory.name}/solution/{SERVER_FILE}"
            return {"lesson": lesson, "experiments": experiments, "path": where,
                    "command": f'MRTR_TICKET_TTL={SUGGESTED_TTL} python -m mrtr check --stdio "python {where}"'}
    return None


@bp.app_context_processor
def _template_globals() -> dict[str, Any]:
    return {"breakit_by_hand": breakit_by_hand}


def widget_context(lesson: Lesson) -> dict[str, Any]:
    return {"build": build_for(lesson), "lesson_dir": f"lessons/{lesson.directory.name}", "ttl": SUGGESTED_TTL}


@bp.post("/lessons/<slug>/build/report")
def report(slug: str) -> Response:
    """Grade a pasted report: the result fragment for htmx, a page of its own without JavaScript."""
    lesson = get_content().lesson(slug)
    if lesson is None:
        abort(404)
    build = build_for(lesson)
    text = request.form.get("report", "")
    try:
        graded, error = grade(build, text), None
    except ReportError as exc:
        graded, error = None, str(exc)
    # A bad paste is a 400 page; under htmx the message is swapped in like any answer (htmx swaps 2xx
    # only), as the quiz does for a missing choice.
    status = 400 if error and not htmx.wants_fragment() else 200
    return htmx.render("lessons/build_report.html", "lessons/_build_report.html", status=status,
                       lesson=lesson, course=get_content(), graded=graded, error=error)
