"""Shared by the build lesson's tests (import as ``tests.lessons.buildkit``): the lesson's build loop, the
move catalogue, a real checker run against a Python server source, and checker reports made from the
catalogue, so no test names a set or a count of moves that a new move would change.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from moves.catalog import Move
from moves.check import CheckOptions, Report, moves_from_env, run_check
from moves.probes import PROBES
from moves.targets.remote import Timing
from moves.targets.stdio import StdioTarget
from web.build.routes import Build, load_build
from web.site.content import DEFAULT_ROOT

LESSON = DEFAULT_ROOT / "build-the-checks"
BUILD: Build = load_build(LESSON)  # type: ignore[assignment]  # the lesson has a steps.toml
#: The moves the checker plays (MRTR_MOVES_FILE when set, as the checker reads it, else moves/moves.toml).
CATALOGUE: tuple[Move, ...] = moves_from_env()
#: Moves some step names; the others (the honest retry, junk, sequences) belong to no one step.
OWNED: frozenset[str] = frozenset(slug for step in BUILD.steps for slug in step.moves)
#: Moves whose answer is malformed: a step is done only when each got an error that is not the ticket refusal.
MALFORMED: frozenset[str] = frozenset(slug for step in BUILD.steps for slug in step.errors)
#: The moves the lesson's server can show: it serves deploy alone, so a move that needs a second tool that asks
#: (a ticket spent on another tool) is not run there, never passed.
SHOWABLE: frozenset[str] = frozenset(m.slug for m in CATALOGUE if not m.needs_other_tool)
#: Tickets live this long in checker runs, so the late move waits about a second longer, for real.
TTL = "2"


def check(source: str, tmp_path: Path, *, skip_late: bool = False, name: str = "server.py") -> Report:
    """Run the real checker against a Python server `source` over stdio and return its report."""
    server = tmp_path / name
    server.write_text(source, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "MRTR_TICKET_TTL": TTL}
    with StdioTarget([sys.executable, str(server)], env=env, timeout=10, timing=Timing(skip_late=skip_late)) as target:
        return run_check(target, CheckOptions(skip_late=skip_late))


def verdicts(report: Report) -> dict[str, str]:
    return {row.move: row.verdict for row in report.moves}


def passing(report: Report) -> set[str]:
    return {row.move for row in report.moves if row.verdict == "pass"}


def report_json(verdicts: Mapping[str, str] = {}, probes_failing: Iterable[str] = ()) -> str:  # noqa: B006 - read only
    """A `--json` report of every catalogue move and probe: each move passes unless `verdicts` says otherwise."""
    failing = set(probes_failing)
    rows = []
    for move in CATALOGUE:
        verdict = verdicts.get(move.slug, "pass")
        observed, detail = move.expect.value, ""
        if move.slug in MALFORMED:  # the answer rule: an error of its own, as the solution sends
            observed, detail = "refused", "error -32602: Invalid inputResponses: 'confirm': the answer does not fit"
        rows.append({"move": move.slug, "verdict": verdict, "required": True, "expected": move.expect.value,
                     "observed": observed if verdict == "pass" else "completed", "ok": verdict == "pass",
                     "detail": detail})
    probes = [{"probe": p, "ok": p not in failing, "detail": ""} for p in PROBES]
    ok = all(r["verdict"] != "fail" for r in rows) and not failing
    return json.dumps({"target": "python server.py", "ok": ok, "moves": rows, "probes": probes})


def report_with_steps_done(done: Iterable[str]) -> str:
    """A report in which exactly the steps `done` are green: every move of every other step fails."""
    done = set(done)
    return report_json({slug: "fail" for step in BUILD.steps if step.id not in done for slug in step.moves})


#: The `_meta` every 2026-07-28 request carries (form elicitation declared).
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}


def converse(argv: list[str], messages: list[dict], env: Mapping[str, str] | None = None) -> list[dict]:
    """Send `messages` to one stdio server process, each only once the one before it is answered, and return
    the answers in order (one process: its redeemed store lasts the whole conversation)."""
    answers: list[dict] = []
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          env={"PATH": "/usr/bin:/bin", **(env or {})}) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            for message in messages:
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
                answers.append(json.loads(process.stdout.readline()))
                assert answers[-1].get("id") == message.get("id")
        finally:
            process.stdin.close()
            process.wait(timeout=30)
    return answers
