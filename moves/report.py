"""The checker's report: `Report` (the table, the JSON for CI, JUnit XML), its `MoveRow`s and their verdicts, the
options a check runs with (`CheckOptions`), the callbacks it reports progress to (`Events`), and the two ways it can
end early (`CheckError`, `CheckStopped`). Types and rendering only: nothing here sends a request or reads a target.
The JSON and JUnit shapes are contracts (docs/checker/reports.md).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from moves.explore import DEFAULT_BUDGET, Exploration
from moves.findings import json_of, junit_cases, summary_of, table_lines
from moves.invariants import INVARIANTS
from moves.probes import ProbeResult
from moves.schedule import WIDTH
from moves.target import Outcome
from moves.wording import timestamp
from mrtr import JSON, JSONObject, __version__
from mrtr.messages import as_list


class CheckError(Exception):
    """The check cannot run at all; the message says why in plain words (exit 2)."""


@dataclass(frozen=True)
class CheckOptions:
    tool: str | None = None  # default: deploy if listed, else the first tool that answers input_required
    arguments: JSONObject | None = None  # default: built from the tool's inputSchema
    other_arguments: JSONObject | None = None  # default: the arguments with one string changed
    allow_replay: bool = False  # a failed single-use move is a warning, not a failure
    skip_late: bool = False  # the past- and near-expiry moves are not run (set the target's Timing too)
    #: Answers the checker cannot make up (`--answers`): by question key, or by round number ("2") then key.
    answers: JSONObject | None = None
    #: Moves played at once over HTTP and stdio (moves.schedule); 1 plays them one after another.
    concurrency: int = WIDTH
    #: The most calls the exploration (moves/explore.py) makes; 0 leaves it out.
    budget: int = DEFAULT_BUDGET


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
    exchange: list[JSONObject] = field(default_factory=list)
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
    #: The late moves' real waits, as one: (seconds waited, seconds in all) of the wait that ends last.
    wait: Callable[[float, float], None] = lambda waited, total: None
    #: How long the check will take, in words, said once the tool is chosen ("about 2 min: ...").
    planned: Callable[[str], None] = lambda text: None


@dataclass
class Report:
    target: str
    tool: str
    arguments: JSONObject
    other_arguments: JSONObject | None
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
    #: The rounds an honest call of the tool went through (`{"round": 1, "keys": [...]}`, each question key
    #: clipped), and why the checker could not finish it ("" when it did).
    rounds: list[JSONObject] = field(default_factory=list)
    flow_stuck: str = ""
    #: The other listed tool that asks with the same arguments (the other-tool moves' target), or None.
    other_tool: str | None = None
    #: When the run started, in seconds since the epoch (the run's injected wall clock), or None.
    generated: float | None = None
    #: What the server does that no move fails but an author should know (an expiry in milliseconds, ...).
    warnings: list[str] = field(default_factory=list)
    #: What the exploration played and found (None when it was left out: --budget 0, or a stopped run).
    explored: Exploration | None = None

    @property
    def ok(self) -> bool:
        """No required move failed, every probe held, no invariant broke in the exploration, and the run was not
        stopped. Warnings and moves that could not be shown (not-run) never fail a report."""
        return not self.stopped and all(r.verdict != "fail" for r in self.moves) and all(
            p.ok for p in self.probes) and not (self.explored and self.explored.failures)

    def redact(self, text: str) -> str:
        return redacted(text, [secret for secret in self.secrets if secret])

    def redact_value(self, value: JSON) -> JSON:
        """A JSON value with every string redacted (arguments built from a server's schema may echo a token)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        if isinstance(value, dict):
            return {self.redact(str(k)): self.redact_value(v) for k, v in value.items()}
        return value

    def to_json(self) -> JSONObject:
        """The report for CI (docs/checker/reports.md, "The JSON report"); never the exchanges."""
        report: JSONObject = {
            "checker": {"name": "mrtr check", "version": __version__},
            "generated": timestamp(self.generated),
            "target": self.redact(self.target),
            "tool": self.redact(self.tool),
            "arguments": self.redact_value(self.arguments),
            "other_arguments": self.redact_value(self.other_arguments),
            "other_tool": self.redact(self.other_tool) if self.other_tool is not None else None,
            "rounds": self.redact_value(list(self.rounds)),
            "warnings": [self.redact(w) for w in self.warnings],
            "ok": self.ok,
            "moves": [{"move": r.move, "verdict": r.verdict, "required": r.required, "expected": r.expected,
                       "observed": r.observed, "ok": r.ok, "detail": self.redact(r.detail)} for r in self.moves],
            "probes": [{"probe": p.probe, "ok": p.ok, "detail": self.redact(p.detail)} for p in self.probes],
        }
        if self.explored is not None:
            report["exploration"] = json_of(self.explored, self.redact)
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
        # Named only when the findings alone fail the report (the moves' own summary stays the one the build lesson
        # works out from the catalogue); the findings are listed above the line either way.
        broken = len(self.explored.failures) if self.explored is not None else 0
        moves_held = not c["failed"] and c["probes_held"] == c["probes"]
        explored = f"; {broken} invariant finding{'s' * (broken != 1)}" if broken and moves_held else ""
        return (f"{'PASS' if self.ok else 'FAIL'}: {c['held']} of {c['moves']} moves and {c['probes_held']} of "
                f"{c['probes']} probes held{tail}{explored}")

    def table(self) -> str:
        args = json.dumps(self.arguments, ensure_ascii=False)
        other = json.dumps(self.other_arguments, ensure_ascii=False) if self.other_arguments is not None else "none"
        also = f"; other tool that asks: {self.other_tool}" if self.other_tool else ""
        lines = [f"Target: {self.target}", f"Tool:   {self.tool} {args} (other request: {other}{also})"]
        if len(self.rounds) > 1 or self.flow_stuck:
            asked = "; ".join(", ".join(str(k) for k in as_list(r.get("keys"))) for r in self.rounds)
            lines.append(f"Rounds: {len(self.rounds)} ({asked})" + (f"; not finished: {self.flow_stuck}"
                                                                    if self.flow_stuck else ""))
        lines += [f"Warning: {w}" for w in self.warnings]
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
        if self.explored is not None:
            lines += table_lines(self.explored, self.redact)
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
        started = timestamp(self.generated)
        if started is not None:
            suite.set("timestamp", started.removesuffix("Z"))
        properties = ET.SubElement(suite, "properties")
        for name, value in (("checker.version", __version__), ("tool", self.tool),
                            ("arguments", json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)),
                            *(("warning", self.redact(w)) for w in self.warnings)):
            ET.SubElement(properties, "property", name=name, value=self.redact(str(value)))
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
        if self.explored is not None:
            added = junit_cases(suite, self.explored, self.redact)
            suite.set("failures", str(failures + added))
            suite.set("tests", str(c["moves"] + c["probes"] + len(INVARIANTS)))
            ET.SubElement(properties, "property", name="explored", value=self.redact(summary_of(self.explored)))
        ET.indent(suites)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"



class CheckStopped(CheckError):
    """The run stopped at a time-out; `report` holds what was played until then (exit 2)."""

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report



#: The shortest token the checker takes: a shorter one would be blanked wherever it happened to stand as a word in
#: a server's answer (a one-letter token "a" once turned "did not answer" into "did not [token]nswer").
MIN_SECRET = 8


def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot be given to the checker (its report could not be kept free of it without mangling
    words), in words that never repeat it; None when it can."""
    if len(secret) < MIN_SECRET:
        return (f"a token must be at least {MIN_SECRET} characters long: a shorter one cannot be blanked from the "
                "report without blanking ordinary words too")
    return None


def redacted(text: str, secrets: Sequence[str]) -> str:
    """`text` with every whole occurrence of each secret replaced by [token]: an occurrence inside a longer run of
    letters and digits is part of another word, not the secret, and is left alone."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        before = r"(?<![A-Za-z0-9])" if secret[0].isalnum() else ""
        after = r"(?![A-Za-z0-9])" if secret[-1].isalnum() else ""
        text = re.sub(before + re.escape(secret) + after, "[token]", text)
    return text

