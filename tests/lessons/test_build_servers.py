"""The checker grades the build lesson's servers honestly: the untouched starter marks no step (every move a
step names fails on it), each step written alone on the starter turns exactly its own moves green and
marks exactly that step done, and the full solution passes everything.

Partials are spliced from the one source of truth (starter/ and solution/server.py, via web.build.routes), and
every set of moves comes from steps.toml and moves/moves.toml. Tickets live 2 s, so the late move
waits about 3 s, for real, per run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from moves.check import Report, main
from tests.lessons.buildkit import BUILD, CATALOGUE, LESSON, OWNED, SHOWABLE, TTL, check, passing, verdicts
from web.build.routes import grade


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return check(BUILD.starter, tmp_path_factory.mktemp("starter"))


def graded_done(report: Report) -> set[str]:
    """The steps the lesson's page marks done for this report, as the learner would paste it."""
    grading = grade(BUILD, json.dumps(report.to_json()), CATALOGUE)
    return {g.step.id for g in grading.steps if g.done}


def test_the_untouched_starter_marks_no_step(starter: Report) -> None:
    assert graded_done(starter) == set()
    seen = verdicts(starter)
    assert set(seen) == {m.slug for m in CATALOGUE}
    for step in BUILD.steps:
        assert all(seen[slug] != "pass" for slug in step.moves), (step.id, {s: seen[s] for s in step.moves})
    # What the starter gets right it gets right without any check: the honest retry, and every probe of
    # the given protocol code (the missing-answer probe waits for step 5).
    assert seen["honest"] == "pass"
    assert {p.probe for p in starter.probes if not p.ok} <= {"missing-answer"}


@pytest.mark.parametrize("step", BUILD.steps, ids=lambda s: s.id)
def test_each_step_alone_turns_exactly_its_moves_green(step, starter: Report, tmp_path: Path) -> None:  # noqa: ANN001
    report = check(BUILD.partial({step.id}), tmp_path)
    green = passing(report)
    assert green & OWNED == set(step.moves)
    assert passing(starter) <= green  # writing a step never breaks what already held
    assert graded_done(report) == {step.id}


def test_the_full_solution_passes_everything_and_the_cli_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert BUILD.partial({s.id for s in BUILD.steps}) == BUILD.solution
    report = check(BUILD.solution, tmp_path)
    assert passing(report) == SHOWABLE
    assert {slug for slug, verdict in verdicts(report).items() if verdict == "not-run"} == \
        {m.slug for m in CATALOGUE} - SHOWABLE
    assert all(p.ok for p in report.probes) and report.ok
    assert graded_done(report) == {s.id for s in BUILD.steps}
    others = grade(BUILD, json.dumps(report.to_json()), CATALOGUE).others
    assert {o.slug for o in others} == {m.slug for m in CATALOGUE} - SHOWABLE  # listed as not shown
    monkeypatch.setenv("MRTR_TICKET_TTL", TTL)
    code = main(["--json", "--stdio", f"{sys.executable} {LESSON / 'solution' / 'server.py'}"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_starter_and_solution_differ_only_inside_the_step_blocks() -> None:
    assert [s.id for s in BUILD.steps] == ["signature", "principal", "expiry", "request", "answer", "single-use"]
    for step in BUILD.steps:
        assert f"def {step.function}(" in step.stub and "TODO" in step.stub
        assert f"def {step.function}(" in step.solution and "TODO" not in step.solution


def test_every_move_a_step_names_is_in_the_catalogue_and_shows_one_step_only() -> None:
    named = [slug for step in BUILD.steps for slug in step.moves]
    assert len(named) == len(set(named))
    assert set(named) <= {m.slug for m in CATALOGUE}


MALFORMED = ("wrong-type", "missing-key")


@pytest.mark.parametrize(("old", "new", "verdict"), [
    ('raise BadAnswer(', 'return "missing" or (', "warn"),  # asks again on a malformed answer
    ('raise RpcError(-32602, f"Invalid inputResponses: {exc}", data)',
     'raise RpcError(-32602, TICKET_REFUSED["message"])',
     "fail"),
], ids=["asks-again", "ticket-refusal"])
def test_step_5_is_not_done_when_a_malformed_answer_gets_no_error_of_its_own(old: str, new: str, verdict: str,
                                                                             tmp_path: Path) -> None:
    """The checker warns when a malformed answer is asked again (the spec's SHOULD is an error) and fails the
    frozen ticket error for it (a client cannot tell the two apart); either way step 5, whose rule is an error
    that is not the ticket refusal, stays open while the step's other moves still hold."""
    assert old in BUILD.solution
    report = check(BUILD.solution.replace(old, new), tmp_path)
    answer = next(s for s in BUILD.steps if s.id == "answer")
    assert {slug: verdicts(report)[slug] for slug in answer.moves} == {
        slug: verdict if slug in MALFORMED else "pass" for slug in answer.moves}
    assert graded_done(report) == {s.id for s in BUILD.steps} - {"answer"}
