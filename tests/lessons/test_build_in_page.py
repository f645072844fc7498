"""The in-page checker (moves.targets.module, what the lesson's Web Worker runs on Pyodide) gives the verdicts the
stdio checker gives: on the starter, on each step written alone, and on the solution, move by move and probe by
probe. Plus what only the in-page target has to get right: two principals are two instances, the late move moves
the server's clock instead of waiting, and a broken server ends with a sentence, never a traceback.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from moves.check import Report, check_source
from moves.targets.module import ModuleTarget, MovableClock
from tests.lessons.buildkit import BUILD, CATALOGUE, check

SOURCES = {"starter": BUILD.starter, **{f"only-{s.id}": BUILD.partial({s.id}) for s in BUILD.steps},
           "solution": BUILD.solution}


def _cli_rows(report: Report) -> tuple[dict[str, tuple[str, str, str]], dict[str, bool]]:
    return ({r.move: (r.verdict, r.expected, r.observed) for r in report.moves}, {p.probe: p.ok for p in report.probes})


def _page_rows(report: dict) -> tuple[dict[str, tuple[str, str, str]], dict[str, bool]]:
    return ({r["move"]: (r["verdict"], r["expected"], r["observed"]) for r in report["moves"]},
            {p["probe"]: p["ok"] for p in report["probes"]})


@pytest.mark.parametrize("name", SOURCES)
def test_in_page_verdicts_equal_the_cli_verdicts(name: str, tmp_path: Path) -> None:
    cli = check(SOURCES[name], tmp_path)
    rows: list[str] = []
    page = check_source(SOURCES[name], moves=CATALOGUE, on_move=lambda row: rows.append(row["move"]))
    assert page["error"] == ""
    assert _page_rows(page["report"]) == _cli_rows(cli)
    assert page["report"]["ok"] is cli.ok and page["summary"] == cli.summary()
    assert rows == [m.slug for m in CATALOGUE]  # each move reported as it finished, in the catalogue's order


def test_the_late_move_moves_the_servers_clock_instead_of_waiting() -> None:
    started = time.monotonic()
    report = check_source(BUILD.solution, moves=CATALOGUE)["report"]
    assert time.monotonic() - started < 2  # the stdio run waits out a real ticket lifetime for the same verdict
    late = next(r for r in report["moves"] if r["move"] == "late")
    assert late["verdict"] == "pass" and "clock was moved" in late["detail"]


def test_each_principal_is_its_own_instance_reading_the_one_clock() -> None:
    source = "import os, time\nWHO = os.environ['MRTR_PRINCIPAL']\ndef respond(line):\n    return None\n"
    clock = MovableClock(base=lambda: 1000.0)
    target = ModuleTarget(source, clock=clock)
    owner, other = target.load("owner"), target.load("other")
    assert (owner.WHO, other.WHO) == ("bob", "alice")
    assert owner.time.time() == 1000.0
    clock.move_to(1500.0)
    assert owner.time.time() == other.time.time() == 1500.0
    clock.move_to(1200.0)  # never back
    assert owner.time.time() == 1500.0


@pytest.mark.parametrize(("source", "said"), [
    ("def respond(line:\n    pass\n", "SyntaxError at line 1"),
    ("import json\nraise RuntimeError('boom')\n", "RuntimeError at line 2"),
    ("X = 1\n", "no respond(line) function"),
])
def test_a_server_that_cannot_start_says_why(source: str, said: str) -> None:
    result = check_source(source, moves=CATALOGUE)
    assert result["report"] is None and said in result["error"]


def test_a_crash_in_respond_ends_that_instance_with_the_learners_line() -> None:
    source = BUILD.solution.replace("    said = \"yes\"\n", "    said = \"yes\"\n    1 / 0\n", 1)
    assert source != BUILD.solution
    report = check_source(source, moves=CATALOGUE)["report"]
    # The server's own `except Exception` turns the crash into an internal error: the moves that read an answer fail.
    assert {r["move"]: r["verdict"] for r in report["moves"]}["honest"] == "fail"
    crashing = "def respond(line):\n    raise SystemExit(3)\n"
    result = check_source(crashing, moves=CATALOGUE)
    assert result["report"] is None and "your server crashed: SystemExit at line 2" in result["error"]


def test_what_the_server_prints_goes_to_the_log_not_to_the_checkers_streams(capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    check_source(BUILD.starter, moves=CATALOGUE, on_log=lines.extend)
    out = capsys.readouterr()
    assert out.out == out.err == ""
    assert "[server] ticket refused at the signature check" not in lines  # the starter checks no signature
    lines.clear()
    check_source(BUILD.solution, moves=CATALOGUE, on_log=lines.extend)
    assert "[server] ticket refused at the signature check" in lines
