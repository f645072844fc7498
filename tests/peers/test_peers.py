"""Ground truth for the checker: every move sent BY HAND (plain JSON-RPC) to every peer, against expectations.toml.

If a peer's real behaviour changes (an SDK upgrade, an edit to the lesson's snippet), the table is wrong
and these tests say so, before any checker report is compared with it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from moves.catalog import holds, load_moves
from moves.engine import readable_claims
from moves.target import Outcome
from tests.check.catalogue import HONEST, PLAIN_REFUSALS, STOLEN, caught_by, gated_by, one
from tests.peers import launch
from tests.peers.truth import failing_moves, lacks
from tests.peers.wire import edited, play, probes

HERE = Path(__file__).resolve().parent
EXPECTED: dict[str, dict[str, Any]] = tomllib.loads((HERE / "expectations.toml").read_text())
#: What the mutation suite says of each of its servers (tests/mutants/expectations.toml).
MUTANT_TABLE: dict[str, Any] = tomllib.loads((HERE.parent / "mutants" / "expectations.toml").read_text())
MUTANT_PEERS = {name: entry for name, entry in EXPECTED.items() if "mutant" in entry}
MOVES = load_moves()
SLUGS = [m.slug for m in MOVES]
OUTCOMES = {"completed", "ended", "refused", "asked-again", "not-run"}
CHECKS = ("signature", "principal", "expiry", "request", "answer", "single-use")


PROBES = ("capability", "version", "uniform-refusals", "result-type")
#: The checker's probe that each hand-sent probe stands for (the mutation suite's table names those).
CHECKER_PROBE = {"capability": "capability", "version": "version", "uniform-refusals": "same-error",
                 "result-type": "result-type"}


def deviations(outcomes: dict[str, str]) -> dict[str, str]:
    """The moves that did not hold, with what the peer did: the table's vocabulary."""
    return {slug: seen for slug, seen in outcomes.items() if seen == "not-run" or not plain(slug, seen)}


def plain(slug: str, seen: str) -> bool:
    """Whether a move's outcome holds without a warning (an outcome the move only warns about is listed too)."""
    move = next(m for m in MOVES if m.slug == slug)
    return holds(move.expect, Outcome(seen))[0] and Outcome(seen) not in move.warn


def observe(peer: launch.HttpPeer | launch.StdioPeer) -> dict[str, dict[str, Any]]:
    """What the peer does with every move and every probe, all sent by hand."""
    played = {move.slug: play(peer, move) for move in MOVES}
    return {"moves": deviations({slug: move.outcome for slug, move in played.items()}),
            "probes": probes(peer, played)}


def expected(name: str) -> dict[str, dict[str, Any]]:
    return {"moves": failing_moves(EXPECTED[name]), "probes": EXPECTED[name]["probes"]}


def test_the_table_lists_only_catalogue_moves_that_do_not_hold() -> None:
    assert EXPECTED
    for name, entry in EXPECTED.items():
        assert set(entry["moves"]) <= set(SLUGS), name
        assert set(lacks(entry)) <= set(CHECKS), name
        assert set(failing_moves(entry).values()) <= OUTCOMES, name
        for slug, seen in failing_moves(entry).items():
            assert seen == "not-run" or not plain(slug, seen), (name, slug)
        assert tuple(entry["probes"]) == PROBES, name


def test_a_mutant_peer_fails_only_what_its_missing_check_stops() -> None:
    """A mutant peer's failures are derived from the one check it lacks, never listed by hand: the by-hand runs
    below then prove the catalogue's `stops_at` and `requires` right, for every check."""
    assert failing_moves(EXPECTED["mutant-sound"]) == {}
    for name, entry in MUTANT_PEERS.items():
        assert entry["moves"] == {} and "kinds" not in entry and len(lacks(entry)) <= 1, name
    for check in CHECKS:
        entry = next(e for e in MUTANT_PEERS.values() if lacks(e) == [check] and e["fixture"] == "mutant_http_with")
        assert set(failing_moves(entry)) == caught_by(check) | gated_by(caught_by(check))


def test_each_protocol_flaw_fails_exactly_one_probe() -> None:
    control = EXPECTED["mutant-sound"]["probes"]
    flawed = [entry for entry in MUTANT_PEERS.values() if not lacks(entry) and entry["mutant"] != "sound"]
    assert {CHECKER_PROBE[p] for entry in flawed for p in PROBES if entry["probes"][p] != control[p]} == set(
        CHECKER_PROBE.values())
    for entry in flawed:
        assert failing_moves(entry) == {}, entry["mutant"]
        assert sum(entry["probes"][probe] != control[probe] for probe in PROBES) == 1, entry["mutant"]


def test_a_mutant_peer_agrees_with_the_mutation_suites_table() -> None:
    """The same server, the same flaw: what this table says it lacks and which probe it fails is what
    tests/mutants/expectations.toml says (there, the checker's probes; `missing-answer` has no hand-sent probe)."""
    control = EXPECTED["mutant-sound"]["probes"]
    for name, entry in MUTANT_PEERS.items():
        mutant = MUTANT_TABLE["mutants"].get(entry["mutant"])
        if mutant is None:
            assert entry["mutant"] in MUTANT_TABLE["controls"] and entry["probes"] == control, name
            continue
        assert lacks(entry) == mutant.get("lacks", []), name
        hand = {CHECKER_PROBE[p] for p in PROBES if entry["probes"][p] != control[p]}
        assert hand == set(mutant.get("probes", [])) - {"missing-answer"}, name


@pytest.mark.parametrize("name", [name for name, entry in EXPECTED.items() if entry["fixture"] != "mutant_http_with"])
def test_a_peer_does_what_the_table_says(request: pytest.FixtureRequest, name: str) -> None:
    peer = request.getfixturevalue(EXPECTED[name]["fixture"])
    assert observe(peer) == expected(name)


@pytest.mark.parametrize("name", [name for name, entry in EXPECTED.items() if entry["fixture"] == "mutant_http_with"])
def test_a_mutant_peer_does_what_the_table_says(mutant_http_with, name: str) -> None:
    with mutant_http_with(EXPECTED[name]["mutant"]) as peer:
        assert observe(peer) == expected(name)


def test_the_python_sdk_refuses_every_bad_ticket_with_one_frozen_error(sdk_py_http) -> None:
    errors = []
    for move in (m for m in PLAIN_REFUSALS if not m.needs_other_tool):  # it serves deploy alone
        reply = play(sdk_py_http, move).replies[-1]
        errors.append({k: v for k, v in reply["error"].items()})
    assert all(error == errors[0] for error in errors)
    assert errors[0]["code"] == -32602 and errors[0]["message"] == "Invalid or expired requestState"


def test_the_python_sdk_deploys_a_replayed_retry_twice(sdk_py_http) -> None:
    for slug in caught_by("single-use"):
        replies = play(sdk_py_http, slug).replies
        assert len(replies) >= 2  # a retry and its replay, or copies sent together
        assert [r["result"]["content"][0]["text"] for r in replies] == ["deployed to staging"] * len(replies)


def test_the_typescript_example_spends_a_ticket_on_another_request_for_the_ticket_env(sdk_ts_http) -> None:
    # Asked to deploy prod with a staging ticket, it deploys staging: the codec binds no arguments.
    other = one("asks for another request", lambda m: m.request == "other" and m.before is None)
    reply = play(sdk_ts_http, other).replies[-1]
    assert reply["result"]["content"][0]["text"] == "deployed to staging"


def test_the_lesson_snippet_refuses_in_its_handler_with_a_tool_error(sdk_ts_lesson_http) -> None:
    # The codec's refusals are -32602 errors; the snippet's own checks (request, single use) are isError results.
    assert "error" in play(sdk_ts_lesson_http, STOLEN).replies[-1]
    one_tool = {m.slug for m in MOVES if m.needs_other_tool}  # it serves deploy alone
    for slug in (caught_by("request") | caught_by("single-use")) - one_tool:
        result = play(sdk_ts_lesson_http, slug).replies[-1]["result"]
        assert result["isError"] is True
        assert result["content"][0]["text"] == "Invalid or expired requestState"


def test_a_mutant_ticket_is_readable_and_the_hand_sent_edit_changes_its_payload(mutant_http_with) -> None:
    with mutant_http_with("sound") as peer:
        ticket = play(peer, HONEST).minted["result"]["requestState"]
    assert ticket.startswith("m1.") and ticket.count(".") == 2
    claims = readable_claims(ticket)
    assert claims is not None and claims["work"] == {"env": "staging"}
    changed = edited(ticket)
    assert readable_claims(changed) == {**claims, "work": {"env": "prod"}}
    assert changed.split(".")[2] == ticket.split(".")[2]
