"""Break it, by hand: every experiment in lessons/build-the-checks/break-it-by-hand.toml, done for real.

Each removes its lines from the solution and runs the checker. What the page prints for it (the moves
that turn red, those that cannot be shown any more, the summary line) is worked out from the move
catalogue by web.build.routes.outcomes; the real checker must report exactly that, so a new move changes the
page and this test together, with no count written anywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lessons.buildkit import BUILD, CATALOGUE, LESSON, check
from web.build.routes import load_breakit, outcomes


@pytest.mark.parametrize("experiment", load_breakit(LESSON), ids=lambda e: e.check)
def test_removing_the_lines_gives_the_verdict_the_lesson_prints(experiment, tmp_path: Path) -> None:  # noqa: ANN001
    broken = BUILD.solution.replace(experiment.remove + "\n", "", 1)
    assert broken != BUILD.solution
    report = check(broken, tmp_path)
    expected = outcomes(experiment, CATALOGUE)
    assert expected.red, "removing a check must turn some move red"
    assert {r.move for r in report.moves if r.verdict == "fail"} == {m.slug for m in expected.red}
    assert {r.move for r in report.moves if r.verdict == "not-run"} == {m.slug for m in expected.not_run}
    assert all(p.ok for p in report.probes)
    assert report.table().splitlines()[-1] == expected.summary


def test_the_experiments_cover_every_check_but_the_answer() -> None:
    """The answer step is read, not refused: removing its call changes what the tool does, not one check."""
    assert {e.check for e in load_breakit(LESSON)} == {s.id for s in BUILD.steps} - {"answer"}
