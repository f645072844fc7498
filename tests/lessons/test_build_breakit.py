"""Break it, by hand: every experiment in lessons/build-the-checks/break-it-by-hand.toml, done for real.

Each removes its lines from the solution, runs the checker, and must get exactly the verdict row and
summary line the lesson prints, with only its own move turning red.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from moves.check import CheckOptions, run_check
from moves.targets.stdio import StdioTarget
from web.build import load_breakit, load_build
from web.content import DEFAULT_ROOT

LESSON = DEFAULT_ROOT / "build-the-checks"
SOLUTION = load_build(LESSON).solution


@pytest.mark.parametrize("experiment", load_breakit(LESSON), ids=lambda e: e.check)
def test_removing_the_lines_gives_the_verdict_the_lesson_prints(experiment, tmp_path: Path) -> None:  # noqa: ANN001
    server = tmp_path / "server.py"
    server.write_text(SOLUTION.replace(experiment.remove + "\n", "", 1), encoding="utf-8")
    assert server.read_text() != SOLUTION
    env = {"PATH": "/usr/bin:/bin", "MRTR_TICKET_TTL": "2"}
    with StdioTarget([sys.executable, str(server)], env=env, timeout=10) as target:
        report = run_check(target, CheckOptions())
    assert {r.move for r in report.moves if not r.ok} == {experiment.move}
    lines = report.table().splitlines()
    assert experiment.verdict in lines
    assert lines[-1] == experiment.summary
