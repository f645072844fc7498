"""Rounds: the checker follows any MRTR flow to its end (issue 31, item 1).

A sound two-round server and a load-shedding one are controls of the mutation suite (test_mutants.py); here: a
second round no client can answer by itself (URL mode) leaves exactly the moves that need a finished flow not run,
with the round and the key, until the author supplies the answer with --answers; a move may target round 2; a
flow that never ends is cut at the bound; and `--answers` is read strictly.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
from pathlib import Path

import pytest

from moves.catalog import load_moves
from moves.check import CheckOptions, Report, main
from moves.engine import MAX_ROUNDS, needs_completed_flow
from tests.mutants.harness import check_http, check_stdio
from tests.mutants.server import ALL, TwoRounds

MOVES = load_moves()
NEEDS_END = {m.slug for m in MOVES if needs_completed_flow(m)}
LOGIN = CheckOptions(answers={"2": {"login": {"action": "accept"}}})


def test_the_catalogue_has_moves_that_need_a_finished_flow_and_moves_that_do_not() -> None:
    assert NEEDS_END and NEEDS_END != {m.slug for m in MOVES}


@pytest.mark.parametrize("transport", ["http", pytest.param("stdio", marks=pytest.mark.external)])
def test_a_round_the_checker_cannot_answer_leaves_those_moves_not_run_with_round_and_key(
        transport: str, tmp_path: Path) -> None:
    report = check_http("signs-in-second") if transport == "http" else check_stdio("signs-in-second", tmp_path)
    assert_undeclared_url(report)
    assert [r["keys"] for r in report.rounds] == [["confirm"], ["login"]]
    rows = {r.move: r for r in report.moves}
    for slug, row in rows.items():
        if slug in NEEDS_END:
            assert row.verdict == "not-run", row
            assert "round 2" in row.detail and "'login'" in row.detail and "url-mode" in row.detail, row.detail
            assert "--answers" in row.detail
        else:  # a move that needs an accepted call to compare with (or the owner's from elsewhere) says the same
            assert row.verdict == "pass" or (row.verdict == "not-run" and "round 2 asks 'login'" in row.detail), row
    assert any(r.verdict == "pass" for r in report.moves)


@pytest.mark.parametrize("transport", ["http", pytest.param("stdio", marks=pytest.mark.external)])
def test_with_the_authors_answer_every_move_and_probe_holds(transport: str, tmp_path: Path) -> None:
    report = check_http("signs-in-second", LOGIN) if transport == "http" else \
        check_stdio("signs-in-second", tmp_path, LOGIN)
    assert all(r.verdict == "pass" for r in report.moves), report.table()
    assert report.flow_stuck == ""
    assert_undeclared_url(report)


def assert_undeclared_url(report: Report) -> None:
    """The checker declares form elicitation only, so a URL-mode question is a FAIL with evidence (the exploration's
    `declared` invariant), whether or not the author supplied its answer; it is the only failure."""
    assert not report.ok and all(p.ok for p in report.probes) and report.explored is not None, report.table()
    assert [f.invariant for f in report.explored.findings] == ["declared"], report.table()
    finding = report.explored.findings[0]
    assert finding.round == 2 and "url-mode" in finding.detail and "'login'" in finding.detail, finding


def test_a_move_may_target_round_two(monkeypatch: pytest.MonkeyPatch) -> None:
    edited = next(m for m in MOVES if m.ticket == "edit-work" and m.before is None)
    honest = next(m for m in MOVES if m.expect == "completed" and m.before is None and m.answer == "accept")
    late_round = (dataclasses.replace(edited, slug="edited-round-two", round=2),
                  dataclasses.replace(honest, slug="honest-round-two", round=2))
    rows = {r.move: r for r in check_http("two-rounds", moves=late_round).moves}
    assert all(r.verdict == "pass" for r in rows.values()), rows
    # The edit is made to the second round's ticket: a server that checks only round one's signature is caught.
    monkeypatch.setitem(ALL, "two-rounds-unsigned-second", UnsignedSecond)
    rows = {r.move: r for r in check_http("two-rounds-unsigned-second", moves=late_round).moves}
    assert rows["edited-round-two"].verdict == "fail" and rows["honest-round-two"].verdict == "pass", rows
    # On a one-round server there is no round two: not run, saying so, never a failure.
    rows = {r.move: r for r in check_http("sound", moves=late_round).moves}
    assert all(r.verdict == "not-run" and "after 1 round, so there is no round 2" in r.detail
               for r in rows.values()), rows


class UnsignedSecond(TwoRounds):
    """Checks round one's signature only: the second round's ticket is believed as it comes back."""

    def check_signature(self, body: str, mac: str) -> None:
        try:
            claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except ValueError:
            claims = {}
        if not (isinstance(claims, dict) and claims.get("step") == 2):
            super().check_signature(body, mac)


def test_a_flow_that_never_ends_is_cut_at_the_bound_and_fails_nothing_for_it() -> None:
    report = check_http("asks-forever")
    assert len(report.rounds) == MAX_ROUNDS + 1 and f"past {MAX_ROUNDS}" in report.flow_stuck
    rows = {r.move: r for r in report.moves}
    for slug in NEEDS_END:
        assert rows[slug].verdict == "not-run" and f"past {MAX_ROUNDS}" in rows[slug].detail, rows[slug]


@pytest.mark.parametrize(("value", "words"), [
    ("[1]", "--answers must be a JSON object"),
    ("{nope", "--answers is not valid JSON"),
    ('{"9": {"a": {}}}', "round '9' must be a number from 1 to 8"),
    ('{"2": "yes"}', "round '2' must be a number from 1 to 8 and its answers an object"),
])
def test_answers_that_cannot_be_used_are_a_usage_error(value: str, words: str) -> None:
    err = io.StringIO()
    code = main(["--stdio", "true", "--answers", value], stdout=io.StringIO(), stderr=err, timeout=5)
    assert code == 2 and words in err.getvalue(), err.getvalue()
