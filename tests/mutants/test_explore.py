"""The exploration (moves/explore.py): each class of mistake no catalogue move names is caught by a variation of
some part of some round, shown as its smallest variation with the exchange; the sound shapes give no finding; a
guessed free-text round is not judged (never a finding); the budget bounds the calls; the invariants and the parts
varied are each stated in one place. The runs go over HTTP in process, on the servers' movable clocks."""

from __future__ import annotations

from contextlib import closing

import pytest

from moves.engine import Call
from moves.explore import Exploration, explore
from moves.invariants import INVARIANTS
from moves.targets.http import HttpTarget
from moves.variations import VARIATIONS, Judge, ticket_parts
from tests.mutants.harness import TOKENS, running, timing_on

#: The mutant, the invariant it breaks, the round and the smallest variation the finding names.
CAUGHT = [
    ("second-round-unbound", "bound", 2, "the other principal's own ticket"),
    ("second-round-replayable", "once", 2, "sent again"),
    ("skips-a-round", "answers", 1, "the next round's answers instead"),
    ("rereads-earlier-answers", "answers", 2, "earlier rounds' answers resent beside, other values"),
    ("meta-identity", "bound", 1, "sent by the other principal + the owner named in _meta"),
    ("argument-identity", "bound", 1, "sent by the other principal + the owner named in _meta and the arguments"),
    ("object-state", "verified", 1, "requestState an object (the ticket's own claims)"),
    ("content-is-yes", "no-means-no", 1, "decline + content kept"),
    ("any-answer-is-yes", "no-means-no", 1, "decline"),  # shrunk: the content is not needed
    ("capabilities-from-ticket", "declared", 1, "capabilities {}"),
    ("jws-header-unsigned", "verified", 1, "requestState header edited"),
    ("lenient-exact-store", "once", 1, "re-encoded: "),  # the first re-encoding this ticket has
    ("url-accept-is-done", "declared", 1, "url mode declared"),
    ("cache-for-anyone", "private", 1, "sent again by the other principal"),
    ("pre-answered", "answers", 1, "no requestState"),
    ("cache-counted-as-work", "once", 1, "sent again"),
]


def explored(name: str, budget: int = 600) -> Exploration:
    with running(name) as (url, server), \
            closing(HttpTarget(url, TOKENS, timeout=10, timing=timing_on(server.clock))) as target:
        return explore(target, Call(cross_tool="restart"), budget)


@pytest.mark.parametrize(("name", "invariant", "round_n", "variation"), CAUGHT)
def test_each_class_is_caught_by_its_smallest_variation_with_the_exchange(name: str, invariant: str, round_n: int,
                                                                           variation: str) -> None:
    found = [f for f in explored(name).findings if f.invariant == invariant]
    assert found, name
    first = found[0]
    assert first.round == round_n and (first.variation == variation or variation.endswith(": ") and
                                       first.variation.startswith(variation)), first
    assert first.steps and first.fix == INVARIANTS[invariant].fix and first.detail


@pytest.mark.parametrize("name", ["sound", "two-rounds", "three-rounds", "state-only-first", "per-user-opaque",
                                  "jws", "url-gated", "two-questions", "keeps-results"])
def test_sound_shapes_break_no_invariant(name: str) -> None:
    out = explored(name)
    assert out.findings == [] and not out.why_not and out.played >= 25, out


def test_a_guessed_free_text_round_is_not_judged_and_never_a_finding() -> None:
    out = explored("free-text-second")
    assert out.findings == []
    assert any("free text" in why and "'typed.name'" in why for why in out.not_judged), out.not_judged


def test_the_budget_bounds_the_calls_and_says_what_was_left() -> None:
    full = explored("two-rounds")
    small = explored("two-rounds", budget=40)
    assert small.calls <= 40 < full.calls
    assert small.over_budget > 0 and small.played < full.played


def test_a_bad_ticket_answered_with_a_question_breaks_verification_at_every_part() -> None:
    out = explored("starts-over")
    assert {f.invariant for f in out.findings} == {"verified", "bound"}
    assert all("was not refused: input_required again" in f.detail for f in out.findings)


def test_a_kept_result_served_again_to_its_own_principal_is_not_work_but_a_counted_one_is() -> None:
    kept = explored("keeps-results")
    assert kept.findings == [] and kept.played >= 30, kept
    counted = [f for f in explored("cache-counted-as-work").findings if f.invariant == "once"]
    assert {f.part for f in counted} >= {"replay", "id"}, counted
    assert all("did the work" in f.detail for f in counted if f.part != "concurrency"), counted
    # The replay under the id that spent the ticket really went under that id (the honest retry's, shown before it).
    same_id = next(f for f in counted if f.part == "id")
    assert same_id.steps[-1].sent["id"] == same_id.steps[-2].sent["id"], same_id.steps


def test_the_retry_is_sent_under_ids_of_the_honest_flow_and_never_judged_by_the_id_alone() -> None:
    """The new-id rule binds the client: a sound server that answers a reused id breaks nothing; the variations of
    the id are played under the honest flow's own ids (the call that handed out the ticket, the retry that spent
    it), on every round."""
    out = explored("two-rounds")
    assert out.findings == [], out
    ids = [v for v in VARIATIONS if v.part == "id"]
    assert {v.phase.value for v in ids} == {"fresh", "spent"} and {v.invariant for v in ids} == {"bound", "once",
                                                                                                   "private"}


def test_every_variation_is_judged_by_an_invariant_stated_once() -> None:
    ticket = "eyJhIjoxfQ.eyJzdWIiOiJib2IiLCJleHAiOjF9.c2ln"
    for variation in (*VARIATIONS, *ticket_parts(ticket, "bob", "alice")):
        assert variation.invariant in INVARIANTS and variation.changes, variation
        assert any(c.attack for c in variation.changes) or variation.judge in (Judge.URL_ACCEPT, Judge.DECLARED)
    # Every invariant is judged somewhere: by a variation, or (same-refusal) over all refusals at once.
    judged = {v.invariant for v in VARIATIONS} | {v.invariant for v in ticket_parts(ticket)} | {"same-refusal"}
    assert judged == set(INVARIANTS)
    # A three-part ticket gets its header, payload and signature edited, each field of a readable payload too.
    labels = [v.label for v in ticket_parts(ticket, "bob", "alice")]
    assert labels[:3] == ["requestState header edited", "requestState part 2 edited",
                          "requestState signature edited"]
    assert "requestState payload: edited sub" in labels and "requestState payload: edited exp" in labels
