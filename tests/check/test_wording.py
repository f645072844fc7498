"""Verdicts in words (issue 31, item 8): every move's detail says what was sent and what came back, for someone who
never saw the lessons, and a failure says what a sound server does and what to fix; a move that could not be shown
keeps its reason."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from contextlib import closing

import pytest

from moves.catalog import ANSWERS, TICKETS, load_moves
from moves.check import CheckOptions, run_check
from moves.targets.http import HttpTarget
from moves.wording import ANSWER_WORDS, EXPECTED_WORDS, TICKET_WORDS
from mrtr import __version__
from mrtr.errors import FROZEN_TICKET_MESSAGE
from tests.mutants.harness import TOKENS, check_http, running, timing_on

MOVES = {m.slug: m for m in load_moves()}


def test_every_kind_of_ticket_answer_and_expectation_has_words() -> None:
    assert set(TICKET_WORDS) == set(TICKETS) and set(ANSWER_WORDS) == set(ANSWERS)
    assert {m.expect for m in MOVES.values()} <= set(EXPECTED_WORDS)


@pytest.mark.parametrize("move", MOVES.values(), ids=lambda m: m.slug)
def test_every_move_says_what_to_fix_without_the_frozen_errors_text(move) -> None:  # noqa: ANN001
    # The build lesson reads a malformed answer's detail for the frozen error: a fix must never quote it.
    assert move.fix and move.shows and FROZEN_TICKET_MESSAGE not in move.fix


def test_a_pass_says_what_was_sent_what_came_back_and_what_holds() -> None:
    report = check_http("sound")
    for row in report.moves:
        move = MOVES[row.move]
        assert row.verdict == "pass", row
        assert row.detail.startswith("bob (the principal the ticket names) sent " if move.sender == "owner"
                                     else "alice (not the principal the ticket names) sent "), row.detail
        assert " The server answered: " in row.detail and row.detail.endswith(f"As it should: {move.shows}.")
        assert "Fix:" not in row.detail


def test_a_failure_says_what_a_sound_server_does_and_what_to_fix() -> None:
    rows = {r.move: r for r in check_http("no-signature").moves}
    tampered = next(r for r in rows.values() if MOVES[r.move].ticket == "edit-work")
    assert tampered.verdict == "fail"
    assert "payload edited (work.env set to \"prod\") under the original signature" in tampered.detail
    assert "The server answered: result: deployed to prod" in tampered.detail
    assert "A sound server would refuse it" in tampered.detail
    assert "its signature check stops it first" in tampered.detail
    assert tampered.detail.endswith(f"Fix: {MOVES[tampered.move].fix}")


def test_the_cross_tool_failure_names_the_tool_it_went_to() -> None:
    rows = {r.move: r for r in check_http("binds-arguments-only").moves}
    for slug, move in MOVES.items():
        if move.needs_other_tool:
            assert rows[slug].verdict == "fail"
            assert rows[slug].detail.startswith('bob (the principal the ticket names) sent restart {"env": "staging"}, '
                                                "another tool that asks for input")
            # restart took deploy's ticket and did the work it carries
            assert "The server answered: result: deployed to staging" in rows[slug].detail
            assert rows[slug].detail.endswith(f"Fix: {move.fix}")


def test_a_warning_keeps_the_specs_words_and_adds_the_fix() -> None:
    rows = {r.move: r for r in check_http("malformed-asks-again").moves}
    for row in rows.values():
        if row.verdict == "warn":
            assert "SHOULD answer this with a JSON-RPC error" in row.detail
            assert row.detail.endswith(f"Fix: {MOVES[row.move].fix}")


def test_a_sealed_ticket_is_said_to_be_changed_not_edited() -> None:
    rows = {r.move: r for r in check_http("sealed", late_after=61).moves}
    edited = next(r for r in rows.values() if MOVES[r.move].ticket == "edit-work")
    assert "one character of the requestState changed (its payload cannot be read" in edited.detail


# -- what the report says about the run and the ticket -------------------------------------------------------


def test_an_expiry_in_milliseconds_is_a_warning_naming_the_field_and_every_move_still_holds() -> None:
    report = check_http("millisecond-exp")
    assert report.ok and all(r.verdict == "pass" for r in report.moves), report.table()
    assert len(report.warnings) == 1 and report.warnings[0].startswith("the ticket's exp is ")
    assert "reads as milliseconds" in report.warnings[0] and "Write exp in seconds" in report.warnings[0]
    assert report.to_json()["warnings"] == report.warnings
    assert f"Warning: {report.warnings[0]}" in report.table()
    assert check_http("sound").warnings == []


def test_the_json_and_junit_reports_carry_the_call_the_rounds_the_version_and_the_time() -> None:
    with running("sound") as (url, server), closing(HttpTarget(url, TOKENS, timing=timing_on(server.clock))) as target:
        report = run_check(target, CheckOptions(skip_late=True), wall_clock=lambda: 1_790_000_000.0)
    data = report.to_json()
    assert data["checker"] == {"name": "mrtr check", "version": __version__}
    assert data["generated"] == "2026-09-21T14:13:20Z"
    assert (data["tool"], data["arguments"], data["other_arguments"]) == ("deploy", {"env": "staging"}, {"env": "prod"})
    assert data["other_tool"] == "restart" and data["rounds"] == [{"round": 1, "keys": ["confirm"]}]
    suite = ET.fromstring(report.junit()).find("testsuite")
    assert suite is not None and suite.get("timestamp") == "2026-09-21T14:13:20"
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    explored = properties.pop("explored")
    assert properties == {"checker.version": __version__, "tool": "deploy", "arguments": '{"env": "staging"}'}
    assert explored is not None and explored.startswith("Explored: ") and explored.endswith("0 broke an invariant")
