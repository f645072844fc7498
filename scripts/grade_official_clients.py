"""Grade three MRTR clients with `mrtr check-client` and regenerate docs/client/official-clients.md.

The clients: this project's (`mrtr call --every-tool --answer-by-schema`), the official Python SDK 2.3.0 client
(tests/sdk/grade_py_client.py) and the official TypeScript SDK 2.4.0 client (tests/js/grade_client.mjs, run by the
Node the tests use). Each runs exactly as `mrtr check-client --command CMD` runs it (the same `check` and
`run_command`); the report is kept in-process so that the page can also show what each client made of each tool,
which the wire alone cannot tell (an unknown resultType refused and one taken as complete look the same).

    .venv/bin/python scripts/grade_official_clients.py            # rewrite the page
    .venv/bin/python scripts/grade_official_clients.py --out FILE # write elsewhere (the drift test does)

The verdict tables are deterministic; the evidence lines (ids, milliseconds) are not, so tests compare the tables.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mrtr_cli.check_client import check, run_command  # noqa: E402 - after the path is set
from mrtr_grading import FLOWS, ClientReport  # noqa: E402

PAGE = ROOT / "docs/client/official-clients.md"
#: The project's client answers from a script (`mrtr call --answers`) holding the user's choices too: its
#: `--answer-by-schema` cannot yet take MRTR_CHECK_CLIENT_CHOICES into account.
ANSWERS = ROOT / "docs/client/check-client-answers.json"
TABLE_START, TABLE_END = "<!-- grades:start -->", "<!-- grades:end -->"


HEAD = """# The official clients, graded

`mrtr check-client` run against three MRTR clients: this project's (`mrtr call --every-tool --answer-by-schema`),
the official Python SDK client (`mcp` 2.3.0) and the official TypeScript SDK client (`@modelcontextprotocol/client`
2.4.0). Each SDK client is driven by a small program that lists the tools and calls each once through the SDK's
own automatic `input_required` loop, answering form questions from their schema and URL-mode questions with
accept, except the two questions whose user declines and cancels, as `MRTR_CHECK_CLIENT_CHOICES` says
(`tests/sdk/grade_py_client.py`, `tests/js/grade_client.mjs`; graded as `mrtr check-client --user-choices`).

This page is generated: `.venv/bin/python scripts/grade_official_clients.py` rewrites it, and a test
(`tests/client_check/test_official_clients.py`) fails when what the clients do now no longer matches it.
What each rule means and how it is graded: [Grade a client](check-client.md).

## Rule by rule

A rule's verdict comes from what the client sent on the wire. The second table adds what the client itself
reported for each call, which the wire cannot show: a client that takes an unknown `resultType` as complete and
one that refuses it both send nothing more."""


def clients() -> dict[str, str]:
    py, node = shlex.quote(sys.executable), shutil.which("node")
    if not node or not (ROOT / "tests/js/node_modules/@modelcontextprotocol/client").is_dir():
        raise SystemExit("needs node and tests/js/node_modules (scripts/test.sh installs them)")
    return {
        "`mrtr.Client` (`mrtr call`)": f"{py} -m mrtr call --every-tool --answers {shlex.quote(str(ANSWERS))}",
        "Python SDK 2.3.0": f"{py} {shlex.quote(str(ROOT / 'tests/sdk/grade_py_client.py'))}",
        "TypeScript SDK 2.4.0": f"{shlex.quote(node)} {shlex.quote(str(ROOT / 'tests/js/grade_client.mjs'))}",
    }


def outcome(report: ClientReport, tool: str) -> str:
    """How the client itself ended a tool's call, from the `tool: outcome` line its driver printed."""
    for line in report.output.splitlines():
        if line.startswith(f"{tool}: "):
            said = line[len(tool) + 2:].split(":")[0].split(" ")
            if said[0] == "server":  # `mrtr call`'s "server error: ...": the server's own error, passed on
                return "server error"
            return f"raised `{said[1]}`" if said[0] == "raised" and len(said) > 1 else said[0]
    return "no outcome printed"


def tables(reports: dict[str, ClientReport]) -> str:
    names = list(reports)
    first = next(iter(reports.values()))
    lines = ["| rule | what it checks | " + " | ".join(names) + " | spec source |",
             "|---|---|" + "---|" * len(names) + "---|"]
    for i, row in enumerate(first.rows):
        cells = [reports[n].rows[i].verdict.upper() for n in names]
        cells = [f"**{c}**" if c != "PASS" else c for c in cells]
        lines.append(f"| `{row.rule}` | {row.title} | " + " | ".join(cells) + f" | {row.source} |")
    lines += ["", "What each client itself made of each tool (its own outcome, not the wire):", "",
              "| tool | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    lines += [f"| `{tool}` | " + " | ".join(outcome(reports[n], tool) for n in names) + " |" for tool in FLOWS]
    return "\n".join(lines)


#: The tools a client must refuse, with the rule that says so: a call it reports complete breaks that rule even
#: when the wire looks right.
MUST_REFUSE = {"grade_unknown_result": "refuse-unknown-result",
               "grade_empty_input_required": "refuse-empty-input-required", "grade_endless": "bounded-rounds",
               "grade_malformed_result": "refuse-malformed-result",
               "grade_undeclared_kind": "refuse-undeclared-kind"}


def evidence(reports: dict[str, ClientReport]) -> str:
    notes = [f"- **{name}**, `{r.rule}` ({r.verdict}): {r.evidence}. Source: {r.source}. Fix: {r.fix}."
             for name, report in reports.items() for r in report.rows if r.verdict != "pass"]
    for name, report in reports.items():
        rows = {r.rule: r for r in report.rows if r.verdict != "fail"}  # a failed rule already says so above
        notes += [f"- **{name}**, `{rule}` (held on the wire, broken in the client): the server answered `{tool}` "
                  f"and the client reported the call complete instead of an error. Source: {rows[rule].source}. "
                  f"Fix: {rows[rule].fix}."
                  for tool, rule in MUST_REFUSE.items() if rule in rows and outcome(report, tool) == "complete"]
    return "\n".join(notes) or "Every client held every rule in this run."


#: Rules whose verdict can rest on the client's own output, not the wire alone: their evidence is shown for every
#: client, so a reader sees how each passed (a retry, or a refusal the client reported).
FROM_OUTPUT = ("version-retry", "bounded-rounds-reported", "decline-cancel")


def how_they_passed(reports: dict[str, ClientReport]) -> str:
    return "\n".join(f"- **{name}**, `{r.rule}` ({r.verdict}): {r.evidence}."
                     for rule in FROM_OUTPUT for name, report in reports.items()
                     for r in report.rows if r.rule == rule)


def render(reports: dict[str, ClientReport]) -> str:
    return (f"{HEAD}\n\n{TABLE_START}\n{tables(reports)}\n{TABLE_END}\n\n"
            f"## Evidence for every rule not held\n\n{evidence(reports)}\n\n"
            "## How each client met the rules that read its own answers and output\n\n"
            "After `-32022` the spec says a client SHOULD retry with a shared version, so a clear refusal also "
            "holds; a decline and a cancel are graded against the choices the driver's user was given.\n\n"
            f"{how_they_passed(reports)}\n")


def grade_all() -> dict[str, ClientReport]:
    return {name: check(run_command(cmd, 120), cmd, choices_known=True) for name, cmd in clients().items()}


def table_of(page: str) -> str:
    return page[page.index(TABLE_START):page.index(TABLE_END)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=PAGE)
    args = p.parse_args()
    reports = grade_all()
    for name, report in reports.items():
        print(f"{name}: {report.summary()}")
    args.out.write_text(render(reports), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
