"""The build loop of "Build the ticket checks yourself": its steps, its code, and the pasted report.

A lesson opts in with a `steps.toml` beside its meta.toml and a starter/ and solution/ server.py
marked with "# -- step: <id> --" ... "# -- end of step --" blocks. This module reads those (once
per directory), splices partial solutions for the tests, and grades a pasted
`python -m mrtr check --json` report: a step is done when every move it names has the verdict
pass, and every move it lists under `errors` (a malformed answer) was answered with an error that is
not the frozen ticket refusal: the checker lets a fresh question pass there, the lesson's answer rule
does not. Which moves those are is data (steps.toml, checked against moves/moves.toml); no move is
named here. It never runs a checker, never stores anything, and treats the pasted report as
untrusted text. The widget's context also carries the in-page checker's addresses (web/build/runner.py,
whose files it serves as build.runner.*): the learner's run happens in their browser, never here.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypedDict

from flask import Blueprint, Response, abort, request

from moves.catalog import Move, load_moves
from moves.check import VERDICTS, MoveRow, Report
from moves.probes import PROBES, ProbeResult
from moves.target import Outcome
from mrtr import CHECKS, JSONObject, as_object
from mrtr.errors import FROZEN_TICKET_MESSAGE
from mrtr_grading import HONEST_ROW, RULES, Rule
from web.build import lint as build_lint
from web.build import runner as build_runner
from web.site import htmx
from web.site.content import ContentError, Lesson, get_content

bp = Blueprint("build", __name__)
bp.register_blueprint(build_runner.bp)  # the in-page checker's files: build.runner.*

STEPS_FILE = "steps.toml"
SERVER_FILE = "server.py"
#: The client lesson's file ("Build the client's loop"): its steps name rules of mrtr_grading, not moves.
CLIENT_FILE = "client.py"
#: The most a pasted report may weigh (a real one is a few kilobytes).
MAX_REPORT = 64 * 1024
#: Seconds the lesson suggests for MRTR_TICKET_TTL, so the late move waits only that long.
SUGGESTED_TTL = 3

#: A step block, marked by Python (#) or TypeScript (//) comments.
_BLOCK = re.compile(r"^(?P<c>#|//) -- step: (?P<id>[a-z][a-z-]*) --\n(?P<code>.*?)^(?P=c) -- end of step --\n",
                    re.S | re.M)


@dataclass(frozen=True)
class BuildStep:
    id: str
    n: int
    title: str
    function: str
    moves: tuple[str, ...]  # the checker moves that show this step: done when every one has verdict pass
    task: str
    hints: tuple[str, ...]
    solution: str  # the step's block in solution/server.py
    stub: str  # the same block in starter/server.py
    #: Moves of `moves` whose answer is malformed: the answer rule (lesson 1, "What the spec requires") wants an
    #: error for them that is not the ticket refusal, so a fresh question or the frozen error does not mark them.
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Build:
    steps: tuple[BuildStep, ...]
    starter: str
    solution: str
    #: "server": steps name checker moves (moves/moves.toml); "client": steps name client-checker rules
    #: (mrtr_grading.RULES), graded by web/build_client.py.
    kind: str = "server"

    @property
    def file(self) -> str:
        return CLIENT_FILE if self.kind == "client" else SERVER_FILE

    def step(self, step_id: str) -> BuildStep | None:
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
    kind = "client" if (directory / "starter" / CLIENT_FILE).is_file() else "server"
    code = CLIENT_FILE if kind == "client" else SERVER_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        starter = (directory / "starter" / code).read_text(encoding="utf-8")
        solution = (directory / "solution" / code).read_text(encoding="utf-8")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ContentError(f"{directory}: the build loop cannot be read ({exc})") from None
    stubs, answers = blocks(starter), blocks(solution)
    if list(stubs) != list(answers):
        raise ContentError(f"{directory}: starter and solution mark different steps")
    if _BLOCK.sub("", starter) != _BLOCK.sub("", solution):
        raise ContentError(f"{directory}: starter and solution differ outside their step blocks")
    steps: list[BuildStep] = []
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise ContentError(f"{path}: no [[steps]]")
    # A server lesson's steps name moves; a client lesson's name rules (the same field of BuildStep holds both).
    key, known, home = (("rules", {r.slug for r in RULES}, "mrtr_grading/rules.py") if kind == "client"
                        else ("moves", {m.slug for m in load_moves()}, "moves/moves.toml"))
    for n, raw in enumerate(raw_steps, 1):
        where = f"{path}: step #{n}"
        try:
            sid, title, function, task = (raw[k] for k in ("id", "title", "function", "task"))
            moves, hints = tuple(raw[key]), tuple(raw["hints"])
        except (KeyError, TypeError):
            raise ContentError(f"{where}: needs id, title, function, {key}, task and hints") from None
        if not all(isinstance(v, str) for v in (sid, title, function, task, *moves, *hints)) or len(hints) != 3:
            raise ContentError(f"{where}: text fields must be strings, with exactly three hints")
        if not moves or len(set(moves)) != len(moves):
            raise ContentError(f"{where}: {key} must name at least one, each once")
        unknown = [m for m in moves if m not in known]
        if unknown:
            raise ContentError(f"{where}: {unknown[0]!r} is not a {key[:-1]} of {home}")
        if sid not in answers:
            raise ContentError(f"{where}: there is no '# -- step: {sid} --' block in the {code} files")
        if f"def {function}(" not in answers[sid]:
            raise ContentError(f"{where}: the {sid!r} block does not define {function}")
        errors = raw.get("errors", [])
        if not isinstance(errors, list) or not set(errors) <= set(moves) or not all(isinstance(e, str) for e in errors):
            raise ContentError(f"{where}: errors must list some of the step's own moves")
        steps.append(BuildStep(sid, n, title, function, moves, task, hints, answers[sid], stubs[sid], tuple(errors)))
    claimed = [m for s in steps for m in s.moves]
    if len(set(claimed)) != len(claimed):
        raise ContentError(f"{path}: a {key[:-1]} shows one step only (one is named by two steps)")
    if [s.id for s in steps] != list(answers):
        raise ContentError(f"{path}: the steps must match the step blocks of {code}, in order")
    return Build(tuple(steps), starter, solution, kind)


def build_for(lesson: Lesson) -> Build:
    build = load_build(lesson.directory)
    if build is None:
        abort(404)
    return build


# -- grading a pasted report ------------------------------------------------------------------------


class ReportError(ValueError):
    """The pasted text is not a checker report; the message says what to paste instead."""


@dataclass(frozen=True)
class MoveVerdict:
    """One move as the pasted report shows it: its verdict ("" when the report lacks the move) and detail."""

    slug: str
    shows: str  # the mistake it catches, from moves/moves.toml
    verdict: str
    detail: str
    #: Why a move the checker passed still does not count for its step ("" when it counts).
    short: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass" and not self.short

    @property
    def words(self) -> str:
        return f"{self.verdict or 'not in the report'}{f', but {self.short}' if self.short else ''}"


#: What the lesson's servers (both tracks) print when a check refuses a ticket: "... refused at the expiry check".
_REFUSED_AT = re.compile(r"refused at the ([a-z][a-z-]*) check")


@dataclass(frozen=True)
class Graded:
    """One step as the report shows it. Done only when every move it names held, no honest move it must leave
    alone stopped completing, and the source shows no mistake a move cannot see."""

    step: BuildStep
    moves: tuple[MoveVerdict, ...]
    #: Moves that must complete (the honest retry and its kin) and did not: a check refuses honest callers too.
    broken: tuple[MoveVerdict, ...] = ()
    #: The step whose check the server's log says refused the first broken move (None when the log is silent).
    culprit: BuildStep | None = None
    finding: str = ""  # what the source shows and no move can (web/build/lint.py)
    #: Where the learner reads which check stopped the honest flow (the client lesson: the row's evidence).
    where_to_look: str = "the server's log says which check refused it"
    honest: str = "the honest moves"  # what must still complete, in the lesson's words

    @property
    def done(self) -> bool:
        return all(m.passed for m in self.moves) and not self.broken and not self.finding

    @property
    def detail(self) -> str:
        """Why the step is done or not, naming only moves that ran, with what each sent and got."""
        if self.done:
            held = ", ".join(m.slug for m in self.moves)
            return f"{held} held, and {self.honest} still complete"
        parts = [f"{self.step.function} {self.finding}"] if self.finding else []
        if self.broken:
            parts.append(self._broken_words())
        for m in self.moves:
            if m.passed:
                continue
            if m.verdict == "not-run":
                parts.append(f"{m.slug} was not run, so it shows nothing yet: {m.detail}")
            elif not m.verdict:
                parts.append(f"{m.slug} is not in the report")
            else:
                parts.append(f"{m.slug}: {m.words}{f'. {m.detail}' if m.detail else ''}")
        return "; ".join(parts)

    def _broken_words(self) -> str:
        first = self.broken[0]
        what = f"{first.slug} did not complete: {first.detail}"
        if self.culprit is None:
            return (f"the honest flow no longer completes, so no step counts until it does ({what}); "
                    f"{self.where_to_look}")
        if self.culprit.id == self.step.id:
            return f"this step's check refuses honest callers too ({what})"
        when = "an earlier" if self.culprit.n < self.step.n else "a later"
        return (f"{when} step, step {self.culprit.n} ({self.culprit.function}), broke the honest flow: its check "
                f"refuses honest callers too, so no step counts until it is fixed ({what})")


@dataclass(frozen=True)
class Grading:
    steps: tuple[Graded, ...]
    #: Moves no step names (the honest retry, junk, sequences) that did not pass: shown beside the steps, so
    #: "6 of 6 steps done" never hides a move that still fails.
    others: tuple[MoveVerdict, ...]
    ok: bool  # the report's own verdict on the whole run
    #: Every move that did not hold, with why: the run's "10 of 24 moves held" says which and why.
    not_held: tuple[MoveVerdict, ...] = ()

    @property
    def done(self) -> int:
        return sum(g.done for g in self.steps)


def _rows(report: JSONObject, key: str, name: str) -> dict[str, JSONObject]:
    rows = report.get(key)
    if not isinstance(rows, list):
        raise ReportError(f"the report has no {key} list: paste the whole output of --json")
    return {slug: r for r in rows if isinstance(r, dict) and isinstance(slug := r.get(name), str)}


def _verdict(row: JSONObject | None) -> str:
    """A row's verdict, "" when the report lacks the move."""
    if row is None:
        return ""
    verdict = row.get("verdict")  # the checker's JSON contract, nothing else
    return verdict if isinstance(verdict, str) and verdict in VERDICTS else "unknown"


def _detail(row: JSONObject | None) -> str:
    detail = row.get("detail") if row else None
    return detail[:600] if isinstance(detail, str) else ""


def answer_rule_gap(row: JSONObject | None) -> str:
    """What a passing malformed-answer move lacks under the answer rule: "" when the server answered it with an
    error that is not the ticket refusal, else why not (a fresh question, an ending, or the frozen error)."""
    observed = row.get("observed") if row else None
    detail = _detail(row)
    if observed == Outcome.ASKED_AGAIN.value:
        return "it was asked again: a malformed answer gets an error, a missing one is asked again"
    if observed != Outcome.REFUSED.value:
        return "it ended without an error: a malformed answer gets an error of its own"
    if FROZEN_TICKET_MESSAGE in detail:
        return "it got the ticket refusal: the ticket was fine, so the error must say the answer is malformed"
    return ""


def grade(build: Build, text: str, catalogue: tuple[Move, ...], source: str = "") -> Grading:
    """Which steps the pasted `python -m mrtr check --json` output shows as done: a step is done when every
    move it names has the verdict pass (a move that was not run, or is missing from the report, is not), every
    move that must complete did (a check that refuses everyone is no check), and neither the report's
    `findings` (the in-page run's) nor `source` show a mistake no move can see (web/build/lint.py). A client
    lesson's report is graded by its rules instead (`grade_client`), wherever it is posted (the LTI page too)."""
    if build.kind == "client":
        return grade_client(build, text)
    report = _parse(text)
    rows = _rows(report, "moves", "move")
    _rows(report, "probes", "probe")
    if rows and not any("verdict" in row for row in rows.values()):
        raise ReportError("that report has no verdicts: it comes from an older checker, so run "
                          "python -m mrtr check --json again from a current checkout")
    shows = {m.slug: m.shows or m.title for m in catalogue}

    def seen(slug: str, *, needs_error: bool = False) -> MoveVerdict:
        row = rows.get(slug)
        verdict = _verdict(row)
        short = answer_rule_gap(row) if needs_error and verdict == "pass" else ""
        return MoveVerdict(slug, shows.get(slug, ""), verdict, _detail(row), short)

    owned = {slug for step in build.steps for slug in step.moves}
    honest = [m.slug for m in catalogue if m.expect == Outcome.COMPLETED and m.slug not in owned
              and not m.needs_other_tool]
    broken = tuple(v for v in (seen(slug) for slug in honest) if v.verdict in ("fail", "warn"))
    culprit = _culprit(build, rows.get(broken[0].slug)) if broken else None
    found = _findings(report, source)
    graded = tuple(Graded(step, tuple(seen(slug, needs_error=slug in step.errors) for slug in step.moves),
                          broken, culprit, found.get(_same_name(step.function), "")) for step in build.steps)
    # Only catalogue moves are shown: the report is untrusted text, and its names are just keys here.
    others = tuple(v for v in (seen(m.slug) for m in catalogue if m.slug not in owned) if v.verdict and not v.passed)
    not_held = tuple(v for v in (seen(m.slug) for m in catalogue) if v.verdict and v.verdict != "pass")
    return Grading(graded, others, report.get("ok") is True, not_held)


def _parse(text: str) -> JSONObject:
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
    return report


def _culprit(build: Build, row: JSONObject | None) -> BuildStep | None:
    """The step whose check the server's log (the in-page run keeps it with each row) says refused this move."""
    log = row.get("log") if row else None
    lines = [line for line in log if isinstance(line, str)] if isinstance(log, list) else []
    named = [m[1] for line in lines if (m := _REFUSED_AT.search(line))]
    return build.step(named[-1]) if named else None


def _findings(report: JSONObject, source: str) -> dict[str, str]:
    """What the source shows that no move can: the in-page run's findings, and the pasted source's own."""
    raw = report.get("findings")
    found = {k: v[:400] for k, v in raw.items() if isinstance(v, str)} if isinstance(raw, dict) else {}
    found.update(build_lint.findings(source[:MAX_REPORT]) if source else {})
    return {_same_name(k): v for k, v in found.items()}


def _same_name(function: str) -> str:
    """check_signature and checkSignature (the TypeScript track's spelling) are one function."""
    return function.replace("_", "").lower()


# -- grading a client lesson's run ------------------------------------------------------------------
# "Build the client's loop": a step is done when every rule it names has the verdict pass AND the honest flows
# still complete (web/build/client_run.py adds that row to the report the page posts): a client that refuses everything
# passes every refusal rule, so refusing counts only while the flows a sound client finishes still finish.

HONEST_WORDS = "the honest flows"


def grade_client(build: Build, text: str) -> Grading:
    """Which steps the posted client report shows as done.

    Raises:
        ReportError: the text is not a client report with its honest row.
    """
    report = _parse(text)
    rows = _rows(report, "rules", "rule")
    honest = report.get("honest")
    if not isinstance(honest, dict) or honest.get("rule") != HONEST_ROW:
        raise ReportError("that report does not say whether the honest flows complete: paste the JSON of "
                          "mrtr check-client --json (version 0.1 and later), or run the client in the page")
    titles = {r.slug: r.title for r in RULES}

    def seen(slug: str) -> MoveVerdict:
        row = rows.get(slug)
        return MoveVerdict(slug, titles.get(slug, ""), _verdict(row), _evidence(row))

    flows = MoveVerdict(HONEST_ROW, "the honest flows still complete", _verdict(as_object(honest)),
                        _evidence(as_object(honest)))
    broken = (flows,) if flows.verdict != "pass" else ()
    graded = tuple(Graded(step, tuple(seen(slug) for slug in step.moves), broken,
                          where_to_look="the evidence names each flow that stopped, and the client's output why",
                          honest=HONEST_WORDS) for step in build.steps)
    owned = {slug for step in build.steps for slug in step.moves}
    everything = [seen(r.slug) for r in RULES]
    others = tuple(v for v in everything if v.slug not in owned and v.verdict and not v.passed)
    not_held = tuple(v for v in [*everything, flows] if v.verdict and v.verdict != "pass")
    return Grading(graded, others, report.get("ok") is True and not broken, not_held)


def _evidence(row: JSONObject | None) -> str:
    evidence = row.get("evidence") if row else None
    return evidence[:600] if isinstance(evidence, str) else ""


# -- "Break it, by hand": the first lesson's experiments on this lesson's solution -------------------

BREAKIT_FILE = "break-it-by-hand.toml"


@dataclass(frozen=True)
class Experiment:
    check: str  # the check whose call is removed (a `stops_at` of moves/moves.toml)
    experiment: int  # the first lesson's Break-it experiment it matches, 0 for an extra one
    title: str
    remove: str  # lines of solution/server.py to delete
    lesson: str


@dataclass(frozen=True)
class Outcomes:
    """What the checker reports once an experiment's lines are gone, worked out from the move catalogue."""

    red: tuple[Move, ...]  # the moves that fail
    #: the moves that cannot be shown: a move sent before them now fails, or they need a second asking tool (the
    #: lesson's server has deploy alone)
    not_run: tuple[Move, ...]
    summary: str  # the checker's last line


def outcomes(experiment: Experiment, catalogue: tuple[Move, ...]) -> Outcomes:
    """Without the removed check, the moves refused by it alone fail, and nothing else does; a move sent after
    one of them (`before`) is not run. The summary is the checker's own (moves.check.Report), so its words
    never drift."""
    red = tuple(m for m in catalogue if m.expect == Outcome.REFUSED and not m.needs_other_tool
                and m.refused_by_checks == {experiment.check})
    not_run = tuple(m for m in catalogue if (m.before is not None and m.before in red) or m.needs_other_tool)
    rows = [MoveRow(m.slug, m.title, m.expect.value,
                    Outcome.COMPLETED.value if m in red else Outcome.NOT_RUN.value if m in not_run else m.expect.value,
                    m not in red and m not in not_run, "") for m in catalogue]
    probes = [ProbeResult(slug, True, "") for slug in PROBES]
    summary = Report("", "", {}, None, moves=rows, probes=probes).summary()
    return Outcomes(red, not_run, summary)


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
    fields = ("check", "experiment", "title", "remove", "lesson")
    for n, raw in enumerate(data.get("experiments", []), 1):
        try:
            experiment = Experiment(**{k: raw[k] for k in fields})
        except (KeyError, TypeError):
            raise ContentError(f"{path}: experiment #{n} needs {', '.join(fields)}") from None
        if experiment.check not in CHECKS:
            raise ContentError(f"{path}: experiment #{n}: {experiment.check!r} is not one of the checks "
                               f"({', '.join(CHECKS)})")
        if solution.count(experiment.remove + "\n") != 1:
            raise ContentError(f"{path}: experiment #{n}: its lines are not in the solution exactly once")
        experiments.append(experiment)
    return tuple(experiments)


class BreakItByHand(TypedDict):
    """What lessons/_breakit_by_hand.html shows: each experiment with what the checker then reports."""

    lesson: Lesson
    experiments: list[tuple[Experiment, Outcomes]]
    path: str  # the solution's server.py, relative to the repository
    command: str  # the checker's command line for it


def breakit_by_hand() -> BreakItByHand | None:
    """What lessons/_breakit_by_hand.html shows: the first lesson with break-it-by-hand.toml, or None."""
    catalogue = get_content().moves
    for lesson in get_content().lessons:
        experiments = load_breakit(lesson.directory)
        if experiments:
            where = f"lessons/{lesson.directory.name}/solution/{SERVER_FILE}"
            return {"lesson": lesson, "experiments": [(e, outcomes(e, catalogue)) for e in experiments],
                    "path": where,
                    "command": f'MRTR_TICKET_TTL={SUGGESTED_TTL} python -m mrtr check --stdio "python {where}"'}
    return None

@bp.app_context_processor
def _template_globals() -> dict[str, Callable[[], BreakItByHand | None]]:
    return {"breakit_by_hand": breakit_by_hand}


class BuildContext(TypedDict):
    """What the build widget (lessons/_widget_build.html and its parts) renders."""

    build: Build
    lesson_dir: str
    ttl: int
    moves: dict[str, Move] | dict[str, Rule]
    catalogue: tuple[Move, ...]
    probes: dict[str, str]  # each probe's title
    runner: build_runner.RunnerContext


def widget_context(lesson: Lesson) -> BuildContext:
    build = build_for(lesson)
    if build.kind == "client":  # the steps name rules: the run's table lists them, and there are no probes
        return {"build": build, "lesson_dir": f"lessons/{lesson.directory.name}", "ttl": SUGGESTED_TTL,
                "moves": {r.slug: r for r in RULES}, "catalogue": (), "probes": {},
                "runner": build_runner.runner_context()}
    return {"build": build, "lesson_dir": f"lessons/{lesson.directory.name}", "ttl": SUGGESTED_TTL,
            "moves": {m.slug: m for m in get_content().moves}, "catalogue": get_content().moves,
            "probes": PROBES, "runner": build_runner.runner_context()}


@bp.post("/lessons/<slug>/build/report")
def report(slug: str) -> Response:
    """Grade a pasted report: the result fragment for htmx, a page of its own without JavaScript."""
    lesson = get_content().lesson(slug)
    if lesson is None:
        abort(404)
    build = build_for(lesson)
    text = request.form.get("report", "")
    try:
        grading, error = grade(build, text, get_content().moves, request.form.get("code", "")), None
    except ReportError as exc:
        grading, error = None, str(exc)
    # A bad paste is a 400 page; under htmx the message is swapped in like any answer (htmx swaps 2xx
    # only), as the quiz does for a missing choice.
    status = 400 if error and not htmx.wants_fragment() else 200
    return htmx.render("lessons/build_report.html", "lessons/_build_report.html", status=status,
                       lesson=lesson, course=get_content(), grading=grading, error=error)
