"""`python -m mrtr check`: play every move of moves/moves.toml and the protocol probes against one
server (an HTTP URL with two bearer tokens, or a stdio command), and report what held.

Python API (the CLI, the /check page and the tests use it):
    run_check(target, CheckOptions(...), events=Events(...), secrets=[...]) -> Report
        # raises CheckError when it cannot start, CheckStopped (with the report so far) at a time-out
    Report.ok, .to_json(), .table(), .summary(), .junit()
    main(argv, *, stdout=..., stderr=..., timeout=...) -> exit code 0 / 1 / 2

Each report row also keeps its move's messages (`exchange_of`: compact, JSON-safe, tickets shortened) for the
/check page's sequence diagrams; `to_json` never includes them.

Each move row has a verdict (`MoveRow.verdict`): pass, fail, warn (a failure an option excused: --allow-replay)
or not-run (the move could not show its check: skipped, or its `before` move / owner-again control did not
hold; never a failure). Exit codes: 0 no move failed and every probe held; 1 one did not; 2 a usage error
(identical tokens included), a target the checker cannot use (unreachable, not MCP, no tool that asks for
input), or a request not answered in time (the run stops at the first). Nothing here prints a traceback for
a peer's fault, and tokens never reach the output, even when a peer echoes them back.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, TYPE_CHECKING, Any

from moves.catalog import Move, load_moves
from moves.engine import Call, MoveResult, modern_request, play
from moves.probes import (
    ProbeResult,
    Recorder,
    TargetTimedOut,
    counter,
    describe,
    input_required,
    probe_capability,
    probe_missing_answer,
    probe_result_type,
    probe_same_error,
    probe_version,
)
from moves.schedule import WIDTH, Countdown, Gate, Schedule
from moves.target import Outcome, Reply, Role, Target
from moves.targets.http import HttpTarget, TargetConfigError
from moves.targets.module import Clock, ModuleLoadError, ModuleTarget
from moves.targets.remote import DEFAULT_TIMEOUT, Timing, clip
from moves.targets.stdio import PRINCIPAL_ENV, StdioConfigError, StdioTarget
from mrtr import as_object
from mrtr_settings.environment import ConfigError, read_settings

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_TOOL = "deploy"


class CheckError(Exception):
    """The check cannot run at all; the message says why in plain words (exit 2)."""


@dataclass(frozen=True)
class CheckOptions:
    tool: str | None = None  # default: deploy if listed, else the first tool that answers input_required
    arguments: dict[str, Any] | None = None  # default: built from the tool's inputSchema
    other_arguments: dict[str, Any] | None = None  # default: the arguments with one string changed
    allow_replay: bool = False  # a failed single-use move is a warning, not a failure
    skip_late: bool = False  # the past- and near-expiry moves are not run (set the target's Timing too)
    #: Answers the checker cannot make up (`--answers`): by question key, or by round number ("2") then key.
    answers: dict[str, Any] | None = None
    #: Moves played at once over HTTP and stdio (moves.schedule); 1 plays them one after another.
    concurrency: int = WIDTH


#: The verdicts a move row can have, in the JSON and JUnit contracts (docs/checker/reports.md).
VERDICTS = ("pass", "fail", "warn", "not-run")


@dataclass
class MoveRow:
    move: str
    title: str
    expected: str
    observed: str
    ok: bool
    detail: str
    required: bool = True
    stops_at: str = ""
    #: The messages of the move as `exchange_of` keeps them (for the report's diagram; never in `to_json`).
    exchange: list[dict[str, Any]] = field(default_factory=list)
    #: Seconds the move took, real waits included (JUnit's `time`).
    seconds: float = 0.0
    #: True when the run stopped here because the target did not answer in time (JUnit `<error>`).
    timed_out: bool = False

    @property
    def verdict(self) -> str:
        """pass; fail (a required move did not hold); warn (one that is not required did not); not-run (the move
        could not show what it checks, and says why). A not-run row never fails a report."""
        if self.ok:
            return "pass"
        if self.observed in (Outcome.NOT_RUN.value,) and not self.timed_out:
            return "not-run"
        return "fail" if self.required else "warn"


@dataclass
class Events:
    """Callbacks while a check runs (the terminal progress bar, the /check page's live view)."""

    phase: Callable[[str], None] = lambda text: None  # "listing tools", "playing stolen", ...
    move_done: Callable[[MoveRow, int, int], None] = lambda row, index, total: None
    probe_done: Callable[[ProbeResult], None] = lambda probe: None
    wait: Callable[[float, float], None] = lambda waited, total: None  # the late move's real wait


@dataclass
class Report:
    target: str
    tool: str
    arguments: dict[str, Any]
    other_arguments: dict[str, Any] | None
    moves: list[MoveRow] = field(default_factory=list)
    probes: list[ProbeResult] = field(default_factory=list)
    #: Seconds each probe took, by probe slug (JUnit's `time`).
    probe_seconds: dict[str, float] = field(default_factory=dict)
    #: Why the run stopped before the end (a time-out), or "" when it ran to the end.
    stopped: str = ""
    #: The probe the time-out stopped the run in (its case is a JUnit <error>), or "".
    timed_out_probe: str = ""
    #: Values that must never reach any output (the bearer tokens; a server may echo them back).
    secrets: tuple[str, ...] = field(default=(), repr=False)
    #: The rounds an honest call of the tool went through (`Flow.summary`), and why the checker could not finish
    #: it ("" when it did).
    rounds: list[dict[str, Any]] = field(default_factory=list)
    flow_stuck: str = ""

    @property
    def ok(self) -> bool:
        """No required move failed, every probe held, and the run was not stopped. Warnings and moves that
        could not be shown (not-run) never fail a report."""
        return not self.stopped and all(r.verdict != "fail" for r in self.moves) and all(p.ok for p in self.probes)

    def redact(self, text: str) -> str:
        return _redacted(text, [secret for secret in self.secrets if secret])

    def to_json(self) -> dict[str, Any]:
        """The report for CI (docs/checker/reports.md, "The JSON report"); never the exchanges."""
        report: dict[str, Any] = {
            "target": self.redact(self.target),
            "ok": self.ok,
            "moves": [{"move": r.move, "verdict": r.verdict, "required": r.required, "expected": r.expected,
                       "observed": r.observed, "ok": r.ok, "detail": self.redact(r.detail)} for r in self.moves],
            "probes": [{"probe": p.probe, "ok": p.ok, "detail": self.redact(p.detail)} for p in self.probes],
        }
        if self.stopped:
            report["stopped"] = self.redact(self.stopped)
        return report

    def counts(self) -> dict[str, int]:
        verdicts = [r.verdict for r in self.moves]
        return {"moves": len(self.moves), "held": verdicts.count("pass"), "failed": verdicts.count("fail"),
                "warned": verdicts.count("warn"), "not_run": verdicts.count("not-run"), "probes": len(self.probes),
                "probes_held": sum(p.ok for p in self.probes)}

    def summary(self) -> str:
        c = self.counts()
        if self.stopped:  # counts of a partial run would read like a verdict on the whole catalogue
            return (f"STOPPED at a time-out: {c['held']} of the {c['moves']} moves played before it held; "
                    "the rest were not played")
        extra = [f"{c['warned']} warning{'s' * (c['warned'] != 1)}"] if c["warned"] else []
        extra += [f"{c['not_run']} not run"] if c["not_run"] else []
        tail = f" ({', '.join(extra)})" if extra else ""
        return (f"{'PASS' if self.ok else 'FAIL'}: {c['held']} of {c['moves']} moves and {c['probes_held']} of "
                f"{c['probes']} probes held{tail}")

    def table(self) -> str:
        args = json.dumps(self.arguments, ensure_ascii=False)
        other = json.dumps(self.other_arguments, ensure_ascii=False) if self.other_arguments is not None else "none"
        lines = [f"Target: {self.target}", f"Tool:   {self.tool} {args} (other request: {other})"]
        if len(self.rounds) > 1 or self.flow_stuck:
            asked = "; ".join(", ".join(r["keys"]) for r in self.rounds)
            lines.append(f"Rounds: {len(self.rounds)} ({asked})" + (f"; not finished: {self.flow_stuck}"
                                                                    if self.flow_stuck else ""))
        lines.append("")
        width = max([len("move"), *(len(r.move) for r in self.moves)]) + 2
        lines.append(f"{'MOVE':<{width}}{'EXPECTED':<13}{'SERVER DID':<13}VERDICT")
        for r in self.moves:
            lines.append(f"{r.move:<{width}}{r.expected:<13}{r.observed:<13}{r.verdict.upper()}")
        pwidth = max([len("probe"), *(len(p.probe) for p in self.probes)]) + 2
        lines += ["", f"{'PROBE':<{pwidth}}VERDICT  DETAIL"]
        for p in self.probes:
            lines.append(f"{p.probe:<{pwidth}}{'PASS' if p.ok else 'FAIL':<9}{p.detail}")
        notes = [f"  {r.move} ({r.verdict}): {r.detail}" for r in self.moves if r.verdict != "pass"]
        if notes:
            lines += ["", "Moves that did not hold or could not be shown:", *notes]
        lines += ["", self.summary()]
        return self.redact("\n".join(lines))

    def junit(self) -> str:
        """JUnit XML: one case per move and probe, each with its `time`; a failed required move is a
        <failure>, a time-out an <error>, a warning <system-out>, a move that could not be shown <skipped>."""
        c = self.counts()
        timed_out = sum(r.timed_out for r in self.moves) + bool(self.timed_out_probe)
        failures = c["failed"] + (c["probes"] - c["probes_held"]) - timed_out
        errors = timed_out
        total_time = sum(r.seconds for r in self.moves) + sum(self.probe_seconds.values())
        suites = ET.Element("testsuites", name="mrtr check", time=f"{total_time:.3f}")
        suite = ET.SubElement(suites, "testsuite", name=f"mrtr check {self.redact(self.target)}",
                              tests=str(c["moves"] + c["probes"]), failures=str(failures), errors=str(errors),
                              skipped=str(c["not_run"]), time=f"{total_time:.3f}")
        for r in self.moves:
            case = ET.SubElement(suite, "testcase", classname="mrtr.check.moves", name=r.move,
                                 time=f"{r.seconds:.3f}")
            detail = self.redact(r.detail)
            if r.timed_out:
                ET.SubElement(case, "error", message="no answer in time; the run stopped here").text = detail
            elif r.verdict == "fail":
                failure = ET.SubElement(case, "failure", message=f"expected {r.expected}, the server's answer: "
                                                                 f"{r.observed}")
                failure.text = detail
            elif r.verdict == "not-run":
                ET.SubElement(case, "skipped", message=detail)
            elif r.verdict == "warn":
                ET.SubElement(case, "system-out").text = detail
        for p in self.probes:
            case = ET.SubElement(suite, "testcase", classname="mrtr.check.probes", name=p.probe,
                                 time=f"{self.probe_seconds.get(p.probe, 0.0):.3f}")
            if p.probe == self.timed_out_probe:
                ET.SubElement(case, "error", message="no answer in time; the run stopped here").text = \
                    self.redact(p.detail)
            elif not p.ok:
                ET.SubElement(case, "failure", message=p.title).text = self.redact(p.detail)
        ET.indent(suites)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# -- arguments from a tool's schema -----------------------------------------------------------------


def _example(name: str, schema: Any) -> Any:
    schema = schema if isinstance(schema, dict) else {}
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind
    if kind in ("integer", "number"):
        value = schema.get("minimum", 1)
        value = value if isinstance(value, int | float) and not isinstance(value, bool) else 1  # a peer's "5"
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    if name == "env":
        return "staging"
    formats = {"email": "check@example.com", "uri": "https://example.com/", "date": "2026-07-28",
               "date-time": "2026-07-28T00:00:00Z"}
    text = formats.get(schema.get("format"), "mrtr-check")
    length = schema.get("minLength")
    return text.ljust(min(length, 10_000) if isinstance(length, int) and not isinstance(length, bool) else 0, "x")


def arguments_for(input_schema: Any) -> dict[str, Any]:
    """Arguments that satisfy a tool's inputSchema: its required properties, each with an example."""
    schema = input_schema if isinstance(input_schema, dict) else {}
    props = as_object(schema.get("properties"))
    required = [r for r in schema.get("required", []) if isinstance(r, str)] \
        if isinstance(schema.get("required"), list) else []
    return {name: _example(name, props.get(name)) for name in required}


def other_arguments_for(arguments: dict[str, Any], input_schema: Any = None) -> dict[str, Any] | None:
    """The same arguments with one string changed (staging <-> prod, another enum value, or a suffix).

    None when there is no string (or number, or boolean) argument to change.
    """
    schema = input_schema if isinstance(input_schema, dict) else {}
    props = as_object(schema.get("properties"))
    for name, value in arguments.items():
        if not isinstance(value, str):
            continue
        enum = as_object(props.get(name)).get("enum")
        choices = [v for v in enum if isinstance(v, str) and v != value] if isinstance(enum, list) else []
        swaps = {"staging": "prod", "prod": "staging", "production": "staging"}
        changed = choices[0] if choices else swaps.get(value, value + "-other")
        return {**arguments, name: changed}
    for name, value in arguments.items():
        if isinstance(value, bool):
            return {**arguments, name: not value}
        if isinstance(value, int | float):
            return {**arguments, name: value + 1}
    return None


# -- the exchange, kept for the report's diagram -----------------------------------------------------

#: What a kept message may hold: enough to label its arrow (method, id, tool, ticket, outcome), nothing more.
_KEEP_PARAMS = ("name", "requestState")
_KEEP_RESULT = ("resultType", "requestState", "isError")
_TEXT_MAX = 200


def short_ticket(value: str, issued: str | None = None) -> str:
    """A ticket shortened for the page (its first 16 and last 6 characters). An edited ticket whose short form
    would read as the issued one's also shows where it first differs, so the two never look the same."""
    if len(value) <= 40:
        return value
    short = f"{value[:16]}…{value[-6:]}"
    if issued and value != issued and short == short_ticket(issued):
        at = next((i for i, (a, b) in enumerate(zip(value, issued, strict=False)) if a != b), len(issued))
        short = f"{value[:16]}…{value[at:at + 6]}…{value[-6:]}"
    return short


def _kept(message: Any, issued: str | None) -> dict[str, Any] | None:
    """One JSON-RPC message, compact and JSON-safe: method, id, tool name, ticket (shortened), result kind,
    error code and message. Arguments, answers and _meta are left out; no bearer token is ever in a message."""
    if not isinstance(message, dict):
        return None
    kept: dict[str, Any] = {"jsonrpc": "2.0"}
    if isinstance(message.get("id"), str | int) and not isinstance(message.get("id"), bool):
        kept["id"] = message["id"] if isinstance(message["id"], int) else clip(message["id"], 40)
    if isinstance(message.get("method"), str):
        kept["method"] = clip(message["method"], 60)
        params = as_object(message.get("params"))
        kept["params"] = {k: (short_ticket(v, issued) if k == "requestState" else clip(v, 60))
                          for k in _KEEP_PARAMS if isinstance(v := params.get(k), str)}
    if "result" in message:
        result = as_object(message.get("result"))
        kept["result"] = {k: (v if isinstance(v, bool) else short_ticket(v) if k == "requestState" else clip(v, 60))
                          for k in _KEEP_RESULT if isinstance(v := result.get(k), str | bool)}
    if "error" in message:
        error = as_object(message.get("error"))
        code = error.get("code")
        kept["error"] = {"code": code if isinstance(code, int) and not isinstance(code, bool) else "",
                         "message": clip(str(error.get("message", "")), _TEXT_MAX)}
    return kept


def exchange_of(result: MoveResult) -> list[dict[str, Any]]:
    """The move's messages, round one first, as JSON-safe dicts: who sent (owner / other), when (story
    seconds), what was sent and answered (`_kept`), why nothing came back, and the check trace when the
    target exposes one (remote servers do not)."""
    issued = result.ticket
    kept = []
    for step in ([result.minted] if result.minted else []) + list(result.steps):
        trace = None
        if step.reply.trace is not None:
            trace = [{k: clip(str(c.get(k, "")), _TEXT_MAX) for k in ("check", "outcome", "detail")}
                     for c in step.reply.trace if isinstance(c, dict)]
        kept.append({"role": str(step.role), "at": float(step.at), "sent": _kept(step.sent, issued),
                     "response": _kept(step.reply.response, issued),
                     "error": clip(step.reply.transport_error, _TEXT_MAX) if step.reply.transport_error else "",
                     "trace": trace})
    return kept


# -- running ----------------------------------------------------------------------------------------


def _move_row(result: MoveResult, move: Move, options: CheckOptions, target: Any) -> MoveRow:
    observed = Outcome(result.outcome).value
    detail = result.detail
    ok = bool(result.ok)
    required = True
    timing = getattr(target, "timing", None)
    if result.outcome == Outcome.NOT_RUN:
        reason = getattr(timing, "skip_reason", None)
        if move.timing != "in-time" and reason:
            detail = reason
        if move.timing != "in-time" and options.skip_late:
            required = False
    elif result.warn:
        required = False
    elif not ok and options.allow_replay and move.requires == "single-use":
        required = False
        detail = f"allowed by --allow-replay: {detail}"
    if not ok and not result.warn and result.outcome not in (Outcome.NOT_RUN, Outcome.ERROR):
        if move.stops_at:
            detail = f"{detail} (a sound server stops this move at its {move.stops_at} check)"
        elif move.shows:
            detail = f"{detail} (this move checks that {move.shows})"
    if ok and result.note:
        detail = f"{detail}; {result.note}"
    waited = getattr(timing, "waited", None)
    if move.timing != "in-time" and waited and result.outcome != Outcome.NOT_RUN:
        detail = f"{detail} ({waited})"
    return MoveRow(move.slug, move.title, Outcome(move.expect).value, observed, ok, detail, required,
                   move.stops_at, exchange_of(result))


def _tools(target: Target, call: Call, role: Any, next_id: Callable[[], int]) -> list[dict[str, Any]]:
    who = target.owner if role == "owner" else target.other
    reply = target.send(role, modern_request(next_id(), "tools/list", {}, call))
    if reply.response is None:
        raise CheckError(f"{target.label} did not answer tools/list for {who}: {reply.transport_error}")
    if "error" in reply.response:
        raise CheckError(f"{target.label} refused tools/list for {who} with {describe(reply)}")
    tools = reply.response.get("result", {}).get("tools")
    if not isinstance(tools, list):
        raise CheckError(f"{target.label} answered tools/list for {who} without a list of tools")
    return [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]


def _round_one(target: Target, call: Call, next_id: Callable[[], int]) -> tuple[bool, str]:
    reply = target.send("owner", modern_request(next_id(), "tools/call",
                                                {"name": call.tool, "arguments": call.arguments}, call))
    if reply.response is None:
        raise CheckError(f"{target.label} did not answer tools/call {call.tool}: {reply.transport_error}")
    asked = input_required(reply)
    if asked and isinstance(asked.get("requestState"), str):
        return True, ""
    if asked:
        return False, "answered input_required without a requestState ticket"
    return False, f"answered {describe(reply)}"


def _choose(target: Target, tools: list[dict[str, Any]], options: CheckOptions, base: Call,
            next_id: Callable[[], int]) -> Call:
    names = [t["name"] for t in tools]
    by_name = {t["name"]: t for t in tools}
    if options.tool is not None:
        if options.tool not in by_name:
            listed = ", ".join(clip(n, 40) for n in names[:12]) or "none"
            raise CheckError(f"{target.label} lists no tool named {options.tool!r} (it lists: {listed})")
        candidates = [options.tool]
    elif DEFAULT_TOOL in by_name:
        candidates = [DEFAULT_TOOL]
    else:
        candidates = names
    if not candidates:
        raise CheckError(f"{target.label} lists no tools, so there is nothing to check")
    tried: list[str] = []
    for name in candidates:
        schema = by_name[name].get("inputSchema")
        arguments = options.arguments if options.arguments is not None else arguments_for(schema)
        call = replace(base, tool=name, arguments=arguments,
                       other_arguments=options.other_arguments if options.other_arguments is not None
                       else other_arguments_for(arguments, schema), answers=dict(options.answers or {}))
        asks, why = _round_one(target, call, next_id)
        if asks:
            return call
        tried.append(f"{name} {why}")
    if len(candidates) == 1:
        raise CheckError(f"tools/call {tried[0]}: it must ask for input (input_required with a requestState) "
                         "for the moves to be played; choose another tool with --tool, or other --args")
    raise CheckError("no tool answered input_required with a requestState; tried " + "; ".join(tried[:5])
                     + ". Name one with --tool")


@dataclass
class _Played:
    """One move as played: its result (None at a time-out), its row, the exchanges it sent, and why the run stopped
    there ("" when it did not)."""

    result: MoveResult | None
    row: MoveRow
    exchanges: list[Any]
    stopped: str = ""


def _play_one(move: Move, target: Target, call: Call, options: CheckOptions, clock: Callable[[], float],
              on_progress: Callable[[float, float], None]) -> _Played:
    recorder = Recorder(target)
    recorder.context = f"move {move.slug}"
    started = clock()
    try:
        result = play(move, recorder, call, on_progress=on_progress)
    except TargetTimedOut as exc:
        row = MoveRow(move.slug, move.title, Outcome(move.expect).value, Outcome.ERROR.value, False,
                      f"no answer in time ({exc.why}); the run stopped here", True, move.stops_at,
                      seconds=clock() - started, timed_out=True)
        return _Played(None, row, recorder.exchanges,
                       f"{target.label} did not answer in time during {exc.context}: {exc.why}")
    row = _move_row(result, move, options, target)
    row.seconds = clock() - started
    return _Played(result, row, recorder.exchanges)


def _play_moves(target: Target, call: Call, catalog: Sequence[Move], options: CheckOptions, events: Events,
                clock: Callable[[], float]) -> list[_Played | None]:
    """Every move played, in catalogue order: `options.concurrency` at a time on a target that can play several
    (`for_move`: HTTP and stdio; moves.schedule), else one after another. Each row goes to `events.move_done` as its
    move ends; the first time-out stops what has not started (None)."""
    total = len(catalog)
    for_move = getattr(target, "for_move", None)
    if for_move is None or options.concurrency <= 1:
        played: list[_Played | None] = [None] * total
        for index, move in enumerate(catalog):
            events.phase(f"playing {move.slug}")
            played[index] = one = _play_one(move, target, call, options, clock, events.wait)
            events.move_done(one.row, index + 1, total)
            if one.stopped:
                break
        return played
    gate = Gate(width=options.concurrency)
    countdown = Countdown(events.wait)

    def job(move: Move, index: int) -> _Played:
        view = for_move(gate, index)
        try:
            one = _play_one(move, view, call, options, clock, countdown.for_move(index))
        finally:
            view.close()
        if one.stopped:
            gate.stop()
        return one

    stops: list[int] = []

    def done(index: int, one: _Played) -> None:  # after a time-out, only the row of the move that timed out
        if not stops:
            events.move_done(one.row, index + 1, total)
            stops.extend([index] if one.stopped else [])

    events.phase(f"playing the moves, {options.concurrency} at a time")
    return Schedule(job, gate, done).run(catalog)


class CheckStopped(CheckError):
    """The run stopped at a time-out; `report` holds what was played until then (exit 2)."""

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report


def run_check(target: Target, options: CheckOptions = CheckOptions(), *, moves: Sequence[Move] | None = None,
              events: Events | None = None, clock: Callable[[], float] = time.monotonic,
              secrets: Sequence[str] = ()) -> Report:
    """Play every move and probe against `target` and report. Raises CheckError when it cannot start, and
    CheckStopped (with the report so far) at the first request the target does not answer in time.

    The caller owns the target (and closes it). Moves: `moves`, else MRTR_MOVES_FILE, else moves/moves.toml.
    """
    events = events or Events()
    catalog = tuple(moves) if moves is not None else moves_from_env()
    recorder = Recorder(target)
    next_id = counter(1)
    events.phase("listing tools")
    try:
        tools = _tools(recorder, Call(), "owner", next_id)
        _tools(recorder, Call(), "other", next_id)
        events.phase("calling the tool")
        call = _choose(recorder, tools, options, Call(), next_id)
    except TargetTimedOut as exc:
        raise CheckError(f"{target.label} did not answer in time ({exc.context}): {exc.why}") from None
    report = Report(target.label, call.tool, dict(call.arguments),
                    dict(call.other_arguments) if call.other_arguments is not None else None,
                    secrets=tuple(secrets))
    probe_ids = counter(1000)
    results: list[MoveResult] = []
    for played in _play_moves(target, call, catalog, options, events, clock):
        if played is None:  # never started: an earlier time-out stopped the run
            continue
        report.moves.append(played.row)
        recorder.exchanges += played.exchanges
        if played.stopped:
            report.stopped = played.stopped
            raise CheckStopped(report.redact(report.stopped), report)
        result = played.result
        assert result is not None
        results.append(result)
        if len(result.rounds) > len(report.rounds):
            report.rounds = [{"round": n, "keys": [str(k)[:60] for k in list(r)[:20]]}
                             for n, r in enumerate(result.rounds, 1)]
        report.flow_stuck = report.flow_stuck or result.stuck
    for slug, probe in (("capability", probe_capability), ("version", probe_version),
                        ("missing-answer", probe_missing_answer)):
        recorder.context = f"probe {slug}"
        events.phase(f"probing {slug}")
        started = clock()
        try:
            result_probe = probe(recorder, call, probe_ids)
        except TargetTimedOut as exc:
            # The probe gets its row too (a JUnit <error>), so CI shows where the run stopped.
            report.probes.append(ProbeResult(slug, False, f"no answer in time ({exc.why}); the run stopped here"))
            report.probe_seconds[slug] = clock() - started
            report.timed_out_probe = slug
            report.stopped = f"{target.label} did not answer in time during {exc.context}: {exc.why}"
            events.probe_done(report.probes[-1])
            raise CheckStopped(report.redact(report.stopped), report) from None
        report.probe_seconds[slug] = clock() - started
        report.probes.append(result_probe)
        events.probe_done(result_probe)
    for result_probe in (probe_same_error(results), probe_result_type(recorder.exchanges)):
        report.probe_seconds[result_probe.probe] = 0.0
        report.probes.append(result_probe)
        events.probe_done(result_probe)
    return report


def moves_from_env() -> tuple[Move, ...]:
    """The moves the checker plays: `MRTR_MOVES_FILE` when set (as the app reads it), else moves/moves.toml."""
    try:
        return load_moves(read_settings().moves_file)
    except ValueError as exc:  # ConfigError included: a setting that cannot be read
        raise CheckError(str(exc)) from None


# -- the command line -------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    out: IO[str] | None = None

    def error(self, message: str) -> Any:  # usage errors: one clear line and exit 2, never a traceback
        raise CheckError(message)

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            (self.out or file or sys.stdout).write(message)


def _parser(out: IO[str] | None = None) -> argparse.ArgumentParser:
    p = _Parser(prog="mrtr check", description=(
        "Play the MRTR ticket moves and protocol probes against an MCP 2026-07-28 server and report what held."))
    p.add_argument("target", nargs="?", metavar="TARGET", help="the server's MCP endpoint, an http(s) URL")
    p.add_argument("--stdio", metavar="COMMAND", help="run this command instead (one process per principal)")
    p.add_argument("--token", action="append", default=[], metavar="NAME=TOKEN",
                   help="a principal and its bearer token, given twice, the ticket's owner first (over stdio: "
                        "optional, the value the principal variable gets; default bob=bob, alice=alice)")
    p.add_argument("--principal-env", default=PRINCIPAL_ENV, metavar="VAR",
                   help=f"over stdio, the variable that names the principal (default {PRINCIPAL_ENV})")
    p.add_argument("--tool", help="the tool to play against (default: deploy if listed, else the first tool "
                                  "that answers input_required; each tool tried is really called)")
    p.add_argument("--args", metavar="JSON", help="the tool's arguments, a JSON object")
    p.add_argument("--other-args", metavar="JSON", help="the arguments of the other request (default: --args "
                                                        "with one string changed)")
    p.add_argument("--answers", metavar="JSON",
                   help="answers the checker cannot make up, by question key ('{\"code\": {\"code\": \"1234\"}}') "
                        "or by round then key ('{\"2\": {\"login\": {\"action\": \"accept\"}}}'); a form "
                        "question's value is its content, any other is sent as the answer")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    p.add_argument("--allow-replay", action="store_true",
                   help="single use becomes a warning (for tools without side effects)")
    p.add_argument("--skip-late", action="store_true", help="do not wait for the ticket to expire")
    p.add_argument("--late-after", type=float, metavar="SECONDS",
                   help="when the ticket's expiry is unreadable, send the late move this long after minting")
    p.out = out
    return p


def _json_object(text: str | None, flag: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CheckError(f"{flag} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CheckError(f"{flag} must be a JSON object, like '{{\"env\": \"staging\"}}'")
    return value


def _answers(text: str | None) -> dict[str, Any] | None:
    """`--answers`: an object by question key, or by round number then key (each round's an object)."""
    answers = _json_object(text, "--answers")
    for key, value in (answers or {}).items():
        if key.isdigit() and not (1 <= int(key) <= 8 and isinstance(value, dict)):
            raise CheckError(f"--answers: round {key!r} must be a number from 1 to 8 and its answers an object by "
                             "question key")
    return answers


def _tokens(values: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        name, sep, token = value.partition("=")
        if not sep or not name.strip() or not token:
            raise CheckError("--token looks like NAME=TOKEN, for example --token bob=bob-token")
        pairs.append((name.strip(), token))
    if len(pairs) == 2 and pairs[0][1] == pairs[1][1]:
        raise CheckError("the two --token values are the same, so the server cannot tell the principals apart "
                         "and the stolen move would show nothing; give each principal its own token")
    if len(pairs) == 2 and pairs[0][0] == pairs[1][0]:
        raise CheckError("the two --token names are the same; name each principal (owner first)")
    return pairs


def build_target(args: argparse.Namespace, *, timeout: float = DEFAULT_TIMEOUT) -> Target:
    if args.late_after is not None and not (0 < args.late_after <= 3600):
        raise CheckError("--late-after must be a number of seconds between 0 and 3600")
    timing = Timing(late_after=args.late_after, skip_late=args.skip_late)
    tokens = _tokens(args.token)
    if bool(args.target) == bool(args.stdio):
        raise CheckError("give either TARGET (an http(s) URL) or --stdio \"COMMAND\", not both or neither")
    try:
        if args.stdio:
            if tokens and len(tokens) != 2:
                raise CheckError("over stdio, --token NAME=VALUE is optional but, if given, given twice")
            return StdioTarget(args.stdio, tokens or None, principal_env=args.principal_env, timeout=timeout,
                               timing=timing)
        if len(tokens) != 2:
            raise CheckError("an HTTP target needs two principals: --token NAME=TOKEN, given twice")
        return HttpTarget(args.target, tokens, timeout=timeout, timing=timing)
    except (TargetConfigError, StdioConfigError) as exc:
        raise CheckError(str(exc)) from None


def _write_junit(path: str, report: Report) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(report.junit())
    except OSError as exc:
        raise CheckError(f"could not write --junit {path}: {exc.strerror or exc}") from None


def _redacted(text: str, secrets: Sequence[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[token]")
    return text


def _write_report(out: IO[str], report: Report, *, as_json: bool) -> None:
    if as_json:
        out.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(report.table() + "\n")
    out.flush()


class ProgressBar:
    """The late move's wait as a bar on a terminal; one line per phase otherwise."""

    def __init__(self, stream: IO[str], width: int = 30, tty: bool | None = None) -> None:
        self.stream = stream
        self.width = width
        self.tty = stream.isatty() if tty is None else tty
        self._announced = False

    def __call__(self, waited: float, total: float) -> None:
        done = total <= 0 or waited >= total
        if not self.tty:
            if not self._announced:
                self.stream.write(f"late move: waiting {total:.1f} s for the ticket to expire\n")
                self.stream.flush()
                self._announced = True
            if done:
                self._announced = False
            return
        filled = self.width if done else int(self.width * waited / total)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\rlate move: waiting for the ticket to expire [{bar}] {waited:5.1f} / {total:.1f} s")
        if done:
            self.stream.write("\n")
        self.stream.flush()


def main(argv: Sequence[str], *, stdout: IO[str] | None = None, stderr: IO[str] | None = None,
         timeout: float | None = None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    if timeout is None:
        try:
            timeout = read_settings().check_timeout or DEFAULT_TIMEOUT
        except ConfigError as exc:
            print(f"mrtr check: error: {exc}", file=err)
            return EXIT_USAGE
    target: Target | None = None
    # Every token given, known as soon as the arguments are read: a peer may echo one back in an error that ends
    # the run, and that message must not carry it either.
    secrets: list[str] = []
    try:
        args = _parser(out).parse_args(list(argv))
        secrets = [value.partition("=")[2] for value in args.token if value.partition("=")[2]]
        options = CheckOptions(tool=args.tool, arguments=_json_object(args.args, "--args"),
                               other_arguments=_json_object(args.other_args, "--other-args"),
                               allow_replay=args.allow_replay, skip_late=args.skip_late,
                               answers=_answers(args.answers))
        target = build_target(args, timeout=timeout)
        tty = err.isatty()
        events = Events(
            phase=(lambda text: print(f"… {text}", file=err, flush=True)) if tty else (lambda text: None),
            wait=ProgressBar(err),
        )
        try:
            report = run_check(target, options, events=events, secrets=secrets)
        except CheckStopped as stopped:
            # What was played until the time-out still goes out (JUnit with an <error>, the JSON with
            # "stopped", or the table), so CI and people see where it stopped; the exit code stays 2.
            if args.junit:
                _write_junit(args.junit, stopped.report)
            _write_report(out, stopped.report, as_json=args.json)
            raise
        if args.junit:
            _write_junit(args.junit, report)
        _write_report(out, report, as_json=args.json)
        return EXIT_OK if report.ok else EXIT_FAILED
    except CheckError as exc:
        print(f"mrtr check: error: {_redacted(str(exc), secrets)}", file=err)
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        print("mrtr check: interrupted", file=err)
        return 130
    except Exception as exc:  # a bug of ours: still one line, never a traceback
        print(f"mrtr check: internal error: {type(exc).__name__}: {clip(_redacted(str(exc), secrets), 200)}",
              file=err)
        return EXIT_USAGE
    finally:
        if target is not None:
            target.close()


# -- a learner's server module, in this process (the build lesson's in-page checker) -----------------------


def check_source(source: str, *, moves: Sequence[Any] | None = None, filename: str = "server.py",
                 on_move: Callable[[dict[str, Any]], None] = lambda row: None,
                 on_probe: Callable[[dict[str, Any]], None] = lambda probe: None,
                 on_log: Callable[[list[str]], None] = lambda lines: None,
                 clock: Clock | None = None) -> dict[str, Any]:
    """Play every move and probe on the learner's `source`, in this process, as `python -m mrtr check` plays them
    over stdio. Each move and probe is passed to `on_move` / `on_probe` as it finishes (the report's JSON row, with
    the move's title); what the server printed goes to `on_log`. Returns `{"report": <the --json report>,
    "summary": ..., "error": ""}`, or `{"report": None, "summary": "", "error": <why it could not run>}`.
    """
    try:
        target = ModuleTarget(source, filename=filename, clock=clock)
    except ModuleLoadError as exc:
        return {"report": None, "summary": "", "error": f"your server could not start: {exc}"}
    sent = target.send

    def send(role: Role, message: dict[str, Any]) -> Reply:
        reply = sent(role, message)
        if reply.log:
            on_log(reply.log)
        return reply

    target.send = send  # type: ignore[method-assign]  # the log goes to the page as it is written

    def move_done(row: Any, index: int, total: int) -> None:
        on_move({"move": row.move, "title": row.title, "verdict": row.verdict, "expected": row.expected,
                 "observed": row.observed, "detail": row.detail, "index": index, "total": total})

    def probe_done(probe: Any) -> None:
        on_probe({"probe": probe.probe, "title": probe.title, "ok": probe.ok, "detail": probe.detail})

    with target:
        try:
            report = run_check(target, CheckOptions(), moves=moves,
                               events=Events(move_done=move_done, probe_done=probe_done))
        except CheckError as exc:
            return {"report": None, "summary": "", "error": str(exc)}
    return {"report": report.to_json(), "summary": report.summary(), "error": ""}
