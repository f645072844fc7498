"""A client's grade: one row per rule (verdict, evidence, fix, source) and the report's text table, JSON and JUnit.

What this module owns: `ClientReport` and `grade`, which runs every rule of `rules.RULES` over one recording and
adds the honest-flows row. It never sends a request.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from mrtr import JSONObject, __version__

from .honest import honest_row
from .recording import Recording
from .rules import RULES
from .verdicts import GradedRun


@dataclass
class RuleRow:
    rule: str
    title: str
    verdict: str
    evidence: str
    fix: str
    source: str


@dataclass
class ClientReport:
    command: str
    rows: list[RuleRow] = field(default_factory=list)
    exit_code: int | None = None
    output: str = ""
    #: Whether the flows a sound client finishes all completed (`honest.honest_row`): a client that breaks its
    #: loop can dodge a rule, so the client lesson counts a step only beside a passing honest row.
    honest: JSONObject | None = None

    @property
    def ok(self) -> bool:
        """No rule failed (not-run rules never fail a report)."""
        return all(r.verdict != "fail" for r in self.rows)

    def verdicts(self) -> dict[str, str]:
        return {r.rule: r.verdict for r in self.rows}

    @property
    def graded(self) -> bool:
        """Whether the client reached any rule at all (a client that never connected is not a passing one)."""
        return any(r.verdict != "not-run" for r in self.rows)

    def summary(self) -> str:
        v = [r.verdict for r in self.rows]
        if not self.graded:
            return f"NOT GRADED: the client reached none of the {len(v)} rules"
        tail = f" ({v.count('not-run')} not run)" if "not-run" in v else ""
        return f"{'PASS' if self.ok else 'FAIL'}: {v.count('pass')} of {len(v)} rules held{tail}"

    def table(self) -> str:
        width = max(len(r.rule) for r in self.rows) + 2
        lines = [f"Client: {self.command}", f"Client exit status: {self.exit_code}", "",
                 f"{'RULE':<{width}}VERDICT  EVIDENCE"]
        lines += [f"{r.rule:<{width}}{r.verdict.upper():<9}{r.evidence}" for r in self.rows]
        notes = [f"  {r.rule} ({r.verdict}): {r.evidence}\n    Fix: {r.fix}  [{r.source}]"
                 for r in self.rows if r.verdict != "pass"]
        if self.honest is not None:
            lines += ["", f"Honest flows: {str(self.honest.get('verdict')).upper()}: {self.honest.get('evidence')}"]
        if notes:
            lines += ["", "Rules that did not hold or were not reached:", *notes]
        if self.output and all(r.verdict == "not-run" for r in self.rows):  # it never got going: show why
            lines += ["", "The client reached no rule; the end of its output:",
                      *(f"  {line}" for line in self.output.splitlines()[-15:])]
        return "\n".join([*lines, "", self.summary()])

    def to_json(self) -> JSONObject:
        return {"checker": {"name": "mrtr check-client", "version": __version__}, "command": self.command,
                "client_exit": self.exit_code, "ok": self.ok,
                "rules": [{"rule": r.rule, "title": r.title, "verdict": r.verdict, "evidence": r.evidence,
                           "fix": r.fix, "source": r.source} for r in self.rows],
                **({"honest": self.honest} if self.honest is not None else {})}

    def junit(self) -> str:
        v = [r.verdict for r in self.rows]
        suites = ET.Element("testsuites", name="mrtr check-client")
        suite = ET.SubElement(suites, "testsuite", name="mrtr check-client", tests=str(len(v)),
                              failures=str(v.count("fail")), errors="0", skipped=str(v.count("not-run")))
        for r in self.rows:
            case = ET.SubElement(suite, "testcase", classname="mrtr.check_client.rules", name=r.rule)
            if r.verdict == "fail":
                ET.SubElement(case, "failure", message=r.title).text = f"{r.evidence}\nFix: {r.fix}"
            elif r.verdict == "not-run":
                ET.SubElement(case, "skipped", message=r.evidence)
        ET.indent(suites)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def grade(recording: Recording, command: str, *, transport: str = "http", exit_code: int | None = None,
          output: str | None = None, choices_known: bool = False) -> ClientReport:
    """Every rule over one run; `exit_code` and `output` are the client's own (None where no adapter has them)."""
    report = ClientReport(command, exit_code=exit_code, output=output or "", honest=honest_row(recording))
    run = GradedRun(recording, transport, exit_code, output, choices_known)
    for rule in RULES:
        v = rule.grade(run)
        report.rows.append(RuleRow(rule.slug, rule.title, v.verdict, v.evidence, rule.fix, rule.source))
    return report
