"""The answer rule's verdicts (issue 31, item 6): a malformed answer's own error is a pass, asking again is a
warning (the spec's SHOULD skipped, nothing done), the work a failure, and an error that is the frozen bad-ticket
error a failure (a client could not tell the two apart); a refusal of the ticket itself shows nothing."""

from __future__ import annotations

from moves.catalog import load_moves
from tests.mutants.harness import check_http

MALFORMED = {m.slug for m in load_moves() if m.distinct_error}


def test_the_catalogue_has_malformed_answer_moves() -> None:
    assert MALFORMED and all(m.warn for m in load_moves() if m.slug in MALFORMED)


def test_a_malformed_answer_asked_again_is_a_warning_and_the_report_still_passes() -> None:
    report = check_http("malformed-asks-again")
    rows = {r.move: r for r in report.moves}
    assert report.ok, report.table()
    for slug in MALFORMED:
        assert rows[slug].verdict == "warn" and rows[slug].observed == "asked-again", rows[slug]
        assert "SHOULD answer this with a JSON-RPC error" in rows[slug].detail
    assert "warning" in report.summary()


def test_a_malformed_answer_refused_with_the_ticket_error_fails_and_says_why() -> None:
    rows = {r.move: r for r in check_http("answer-error-is-ticket-error").moves}
    for slug in MALFORMED:
        assert rows[slug].verdict == "fail" and "the very error a bad ticket gets" in rows[slug].detail, rows[slug]


def test_the_sound_servers_own_error_passes() -> None:
    rows = {r.move: r for r in check_http("sound").moves}
    assert all(rows[slug].verdict == "pass" and "Invalid inputResponses" in rows[slug].detail for slug in MALFORMED)
