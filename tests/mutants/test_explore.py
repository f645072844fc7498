"""The exploration (moves/explore.py): each class of mistake no catalogue move names is caught by a variation of
some part of some round, shown as its smallest variation with the exchange; the sound shapes give no finding; a
guessed free-text round is not judged (never a finding); the budget bounds the calls; the invariants and the parts
varied are each stated in one place. The runs go over HTTP in process, on the servers' movable clocks."""

from __future__ import annotations

from contextlib import closing

import pytest

from moves import variations
from moves.engine import Call
from moves.explore import Exploration, explore
from moves.findings import page_record
from moves.invariants import INVARIANTS, Invariant
from moves.targets.http import HttpTarget
from moves.variations import VARIATIONS, Change, Judge, Phase, Variation, ticket_parts
from tests.mutants.harness import TOKENS, check_http, running, timing_on

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
    ("number-is-an-answer", "answers", 1, "each answer a number, not a result"),
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


def test_a_variation_of_several_changes_is_shown_shrunk_with_the_exchange_of_the_smallest() -> None:
    """"decline + content kept" breaks no-means-no on a server that never reads the action; the content is not
    needed, so the finding names the decline alone, and its exchange is the run of that smaller variation: a
    decline that carries no content."""
    played = next(v for v in VARIATIONS if v.label == "decline + content kept")
    assert len(played.changes) == 2
    finding = next(f for f in explored("any-answer-is-yes").findings if f.invariant == "no-means-no")
    assert finding.variation == "decline" and "did the work" in finding.detail
    sent = finding.steps[-1].sent["params"]
    assert isinstance(sent, dict) and isinstance(sent["inputResponses"], dict)
    assert all(answer == {"action": "decline"} for answer in sent["inputResponses"].values()), sent
    # Where both changes matter (a stranger's retry naming the owner in _meta), both stay.
    both = next(f for f in explored("meta-identity").findings if f.invariant == "bound")
    assert both.variation == "sent by the other principal + the owner named in _meta"


def test_a_new_invariant_and_a_new_part_to_vary_are_each_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """One entry in INVARIANTS and one in VARIATIONS, nothing else: the engine plays the new variation on every
    round and judges it, and the report (table, JSON, JUnit, /check's record) shows the new invariant and part."""
    toy = Invariant("toy", "a toy rule: the honest retry never moves on", "nothing to fix: a toy")
    monkeypatch.setitem(INVARIANTS, "toy", toy)
    change = Change("the honest retry, as a toy", lambda retry, ctx: retry)
    monkeypatch.setattr(variations, "VARIATIONS", (*VARIATIONS, Variation("toy part", "toy", Judge.NO_PROGRESS,
                                                                          Phase.FRESH, (change,))))
    report = check_http("two-rounds")
    assert report.explored is not None and not report.ok
    found = [f for f in report.explored.findings if f.invariant == "toy"]
    assert [(f.round, f.part, f.variation) for f in found] == [(1, "toy part", "the honest retry, as a toy")]
    assert "moved on to the next round" in found[0].detail and found[0].fix == toy.fix
    assert "FAIL [toy] round 1, toy part: the honest retry, as a toy" in report.table()
    assert any(f["invariant"] == "toy" for f in report.to_json()["exploration"]["findings"])  # type: ignore[index,union-attr]
    assert '<testcase classname="mrtr.check.invariants" name="toy"' in report.junit()
    record = page_record(report.explored, 600, lambda value: value)
    assert "toy part" in record["parts"]  # type: ignore[operator]
    assert {"slug": "toy", "rule": toy.rule, "verdict": "fail"} in record["invariants"]  # type: ignore[operator]


def test_a_copy_of_a_result_is_no_kept_result_when_two_works_cannot_be_told_apart() -> None:
    """Whether a byte-for-byte copy is a kept result is derived from an independent piece of work (another ticket's
    honest flow), never from the text's look: a server with no single use whose every deploy reads "deployed to
    staging (release 2)" (a digit, but the same for every deploy) is judged as doing the work again, by the
    exploration and by the catalogue's replays; a server whose results differ per deploy and that serves its
    own kept result again is not."""
    counted = [f for f in explored("constant-no-single-use").findings if f.invariant == "once"]
    assert counted and all("did the work" in f.detail or "went through" in f.detail for f in counted), counted
    rows = {r.move: r for r in check_http("constant-no-single-use").moves}
    assert rows["twice"].verdict == "fail" and "kept result" not in rows["twice"].detail, rows["twice"]
    kept = {r.move: r for r in check_http("keeps-results").moves}
    assert kept["twice"].verdict == "pass" and "kept result" in kept["twice"].detail, kept["twice"]


def test_the_exploration_stops_at_its_first_time_out_or_when_the_check_stopped() -> None:
    """Never hundreds of calls each waiting for a server that stopped answering: the first request not answered in
    time ends the exploration, saying so; so does the check stopping elsewhere (a move played beside it)."""
    with running("hangs-on-retry") as (url, server), \
            closing(HttpTarget(url, TOKENS, timeout=0.3, timing=timing_on(server.clock))) as target:
        hung = explore(target, Call(cross_tool="restart"))
        stopped = explore(target, Call(cross_tool="restart"), stopped=lambda: True)
    assert "not answered in time" in hung.why_not and hung.calls == 2 and hung.findings == [], hung
    assert "the check stopped" in stopped.why_not and stopped.calls == 0, stopped
