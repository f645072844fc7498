"""The seven moves of the lesson, played on the real server with an injected clock."""

from __future__ import annotations

import pytest

from mrtr import CHECKS
from mrtr.scenario import play

from .conftest import MOVES
from .helpers import assert_frozen_rejection


def outcomes(p) -> dict[str, str]:
    return {c.name: c.outcome for c in p.last.exchange.trace.checks}


@pytest.mark.parametrize("move", MOVES, ids=[m.slug for m in MOVES])
def test_each_move_is_stopped_where_the_lesson_says(move, server, clock):
    """App-defined (moves.toml): the verdict and the first failing check of every move."""
    p = play(server, move, clock=clock)
    assert p.verdict == move.expect
    checks = outcomes(p)
    assert list(checks) == list(CHECKS)
    if move.stops_at:
        index = CHECKS.index(move.stops_at)
        assert all(checks[c] == "pass" for c in CHECKS[:index])
        assert checks[move.stops_at] == "fail"
        assert all(checks[c] == "skipped" for c in CHECKS[index + 1:])
    else:
        assert set(checks.values()) == {"pass"}
    if move.expect == "refused":
        assert_frozen_rejection(p.last.response)
        assert any(move.stops_at in line for line in p.last.exchange.log)


def test_only_the_honest_retry_deploys(server, clock):
    verdicts = {m.slug: play(server, m, clock=clock).verdict for m in MOVES}
    assert [slug for slug, v in verdicts.items() if v == "deployed"] == ["honest"]


def test_the_honest_retry_deploys_the_work_from_the_ticket(server, clock):
    p = play(server, MOVES[0], clock=clock)
    assert p.last.response["result"]["content"][0]["text"] == "deployed to staging"
    assert p.last.response["result"]["resultType"] == "complete"


def test_no_answer_is_asked_again_with_a_fresh_ticket(server, clock):
    """Spec SHOULD (MRTR error handling): a missing answer gets a new input_required, not an error."""
    move = next(m for m in MOVES if m.slug == "no-answer")
    p = play(server, move, clock=clock)
    result = p.last.response["result"]
    assert result["resultType"] == "input_required"
    assert "confirm" in result["inputRequests"]
    assert result["requestState"] != p.ticket


def test_every_refusal_is_the_same_frozen_error(server, clock):
    """Spec-aligned: the wire never tells an attacker which check failed."""
    errors = {m.slug: play(server, m, clock=clock).last.response.get("error")
              for m in MOVES if m.expect == "refused"}
    assert len({repr(e) for e in errors.values()}) == 1


def test_single_use_off_lets_the_replay_deploy_again(make_server, clock):
    """Spec MUST where it matters: only server-side memory makes a ticket single-use."""
    twice = next(m for m in MOVES if m.slug == "twice")
    p = play(make_server(single_use=False), twice, clock=clock)
    assert p.verdict == "deployed"
    assert outcomes(p)["single-use"] == "skipped"


def test_removing_the_signature_check_lets_the_edited_ticket_deploy_to_prod(clock):
    from moves.labcodec import LabRing
    from moves.targets.lab import lab_server

    tampered = next(m for m in MOVES if m.slug == "tampered")
    server = lab_server(LabRing.public("lab-test-key-0123456789abcdefghijklmnop"), clock=clock, verify_signature=False)
    p = play(server, tampered, clock=clock)
    assert p.verdict == "deployed"
    assert p.last.response["result"]["content"][0]["text"] == "deployed to prod"
    assert outcomes(p)["signature"] == "skipped"


@pytest.mark.parametrize("move", MOVES, ids=[m.slug for m in MOVES])
def test_sealed_tickets_stop_every_move_at_the_same_check(move, make_server, clock):
    p = play(make_server(sealed=True), move, clock=clock)
    assert p.ticket.startswith("s1.")
    assert p.verdict == move.expect
    failure = p.last.exchange.trace.first_failure
    assert (failure.name if failure else "") == move.stops_at


def test_moves_data_names_exactly_the_seven_moves():
    assert [m.slug for m in MOVES] == ["honest", "tampered", "stolen", "late", "other-request", "no-answer", "twice"]
    assert {m.stops_at for m in MOVES} == set(CHECKS) | {""}
