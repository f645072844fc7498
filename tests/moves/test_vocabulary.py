"""The engine's vocabulary for the mistakes people make (issue 21): each answer kind's message, every junk shape
sent and judged, a `before` move gating what comes after it, the ENDED / COMPLETED comparison, the owner-again
control, the `holds` table, and the catalogue's checks of the new fields.

Moves are picked from the catalogue by what they do, never by name; the target is a scripted one, so each test
says exactly what the server answers.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from moves.catalog import EXPECTS, JUNK_SHAPES, NOT_A_YES, Move, holds, load_moves
from moves.engine import answers_of, play, work_of
from moves.target import Outcome, Reply, Role

MOVES = load_moves()
QUESTION = {"method": "elicitation/create", "params": {"mode": "form", "message": "Deploy to staging?",
            "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}},
                                "required": ["confirm"]}}}
QUESTIONS = {"confirm": QUESTION}

Script = Callable[[Role, dict[str, Any]], dict[str, Any]]


def result(rid: Any, **fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": fields}


def done(rid: Any, text: str) -> dict[str, Any]:
    return result(rid, resultType="complete", content=[{"type": "text", "text": text}], isError=False)


def refused(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid or expired requestState"}}


class Scripted:
    """A target whose round one always asks (a new ticket each time) and whose retries `answer` decides."""

    label = "scripted"
    owner = "bob"
    other = "alice"

    def __init__(self, answer: Script) -> None:
        self.answer = answer
        self.sent: list[tuple[Role, dict[str, Any]]] = []
        self.minted = 0

    def send(self, role: Role, message: dict[str, Any]) -> Reply:
        self.sent.append((role, message))
        rid = message["id"]
        if "requestState" not in message["params"]:
            self.minted += 1
            return Reply(result(rid, resultType="input_required", inputRequests=QUESTIONS,
                                requestState=f"s1.ticket-{self.minted}"))
        return Reply(self.answer(role, message))

    def begin(self) -> None:
        pass

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None, on_progress: Any = None) -> bool:
        return True

    def close(self) -> None:
        pass

    def retries(self) -> list[dict[str, Any]]:
        return [m["params"] for _, m in self.sent if "requestState" in m["params"]]


def sound(role: Role, message: dict[str, Any]) -> dict[str, Any]:
    """What a sound server answers, as far as these tests need: yes deploys, no ends, no answer asks again, a
    malformed answer gets an error."""
    params = message["params"]
    answer = (params.get("inputResponses") or {}).get("confirm")
    if role == "other" or not params["requestState"].startswith("s1.ticket-"):
        return refused(message["id"])
    if answer is None:
        return result(message["id"], resultType="input_required", inputRequests=QUESTIONS, requestState="s1.again")
    if answer.get("action") == "accept" and answer.get("content", {}).get("confirm") is True:
        return done(message["id"], f"deployed to staging (deploy {len(params['requestState'])}, id 0a1b2c3d4e5f)")
    if answer.get("action") == "accept" and not isinstance(answer.get("content", {}).get("confirm"), bool):
        return {"jsonrpc": "2.0", "id": message["id"], "error": {  # a malformed answer: an error of its own
            "code": -32602, "message": "Invalid inputResponses: confirm must be true or false"}}
    return done(message["id"], "nothing deployed")


def first(predicate: Callable[[Move], bool]) -> Move:
    found = next((m for m in MOVES if predicate(m)), None)
    if found is None:
        pytest.fail("the catalogue has no move of this kind")
    return found


# -- answers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "sent"), [
    ("none", None),
    ("accept", {"confirm": {"action": "accept", "content": {"confirm": True}}}),
    ("decline", {"confirm": {"action": "decline"}}),
    ("cancel", {"confirm": {"action": "cancel"}}),
    ("wrong-type", {"confirm": {"action": "accept", "content": {"confirm": "yes"}}}),
    ("missing-key", {"confirm": {"action": "accept", "content": {}}}),
])
def test_each_answer_kind_sends_its_message(kind: str, sent: Any) -> None:
    assert answers_of(kind, QUESTIONS) == sent


def test_missing_key_leaves_out_only_the_required_fields_and_wrong_type_changes_every_type() -> None:
    schema = {"type": "object", "required": ["confirm"], "properties": {
        "confirm": {"type": "boolean"}, "note": {"type": "string"}, "count": {"type": "integer"}}}
    questions = {"q": {"method": "elicitation/create", "params": {"requestedSchema": schema}}}
    assert answers_of("missing-key", questions)["q"]["content"] == {"note": "yes", "count": 1}
    assert answers_of("wrong-type", questions)["q"]["content"] == {"confirm": "yes", "note": 12345, "count": "1"}


@pytest.mark.parametrize("kind", ["wrong-type", "missing-key"])
def test_a_question_with_no_field_cannot_be_answered_wrongly(kind: str) -> None:
    empty = {"q": {"method": "elicitation/create", "params": {"requestedSchema": {"type": "object"}}}}
    with pytest.raises(ValueError, match="no field"):
        answers_of(kind, empty)


@pytest.mark.parametrize("move", [m for m in MOVES if m.answer in NOT_A_YES], ids=lambda m: m.slug)
def test_each_not_a_yes_move_sends_its_answer_and_holds_on_a_sound_server(move: Move) -> None:
    outcome = play(move, Scripted(sound))
    assert outcome.steps[-1].sent["params"].get("inputResponses") == answers_of(move.answer, QUESTIONS)
    assert outcome.ok and move.holds(outcome.outcome)[0], outcome.detail


# -- junk ------------------------------------------------------------------------------------------------


def test_every_junk_shape_is_sent_and_each_one_judged() -> None:
    move = first(lambda m: m.ticket == "junk")
    target = Scripted(sound)
    outcome = play(move, target)
    shapes = [shape.replace("{prefix}", "s1") for _, shape in JUNK_SHAPES]
    assert [p["requestState"] for p in target.retries()] == shapes
    assert outcome.ok and outcome.detail.startswith(f"all {len(shapes)} shapes: ")
    # One shape let through is enough to fail the move, and the detail names it.
    name, shape = JUNK_SHAPES[1]

    def lets_one_through(role: Role, message: dict[str, Any]) -> dict[str, Any]:
        if message["params"]["requestState"] == shape.replace("{prefix}", "s1"):
            return done(message["id"], "deployed to staging")
        return refused(message["id"])

    failed = play(move, Scripted(lets_one_through))
    assert not failed.ok and failed.outcome == Outcome.COMPLETED
    assert failed.detail.startswith(f"junk ticket ({name}): result: deployed to staging")


# -- no ticket at all -------------------------------------------------------------------------------------


def test_an_absent_ticket_sends_the_answers_without_any_request_state() -> None:
    honest = first(lambda m: m.expect == Outcome.COMPLETED and m.before is None and m.ticket == "as-issued")
    move = dataclasses.replace(honest, slug="no-ticket", ticket="absent", expect=Outcome.NOT_DONE, stops_at="")
    target = Scripted(sound)
    held = play(move, target)
    retry = held.steps[-1].sent["params"]
    assert "requestState" not in retry and retry["inputResponses"] == answers_of("accept", QUESTIONS)
    assert held.ok and held.outcome == Outcome.ASKED_AGAIN  # the scripted round one asks again

    def pre_answered(role: Role, message: dict[str, Any]) -> dict[str, Any]:
        return done(message["id"], "deployed to staging")

    class PreAnswered(Scripted):
        def send(self, role: Role, message: dict[str, Any]) -> Reply:
            if "inputResponses" in message["params"] and "requestState" not in message["params"]:
                self.sent.append((role, message))
                return Reply(pre_answered(role, message))
            return super().send(role, message)

    fooled = play(move, PreAnswered(sound))
    assert not fooled.ok and fooled.outcome == Outcome.COMPLETED


# -- before ----------------------------------------------------------------------------------------------


def test_a_move_whose_before_move_did_not_get_its_expectation_is_not_run() -> None:
    move = first(lambda m: m.before is not None and m.before_ticket == "same")

    def not_what_the_before_move_needs(role: Role, message: dict[str, Any]) -> dict[str, Any]:
        if move.before is not None and move.before.expect == Outcome.COMPLETED:
            return refused(message["id"])
        return done(message["id"], "deployed to staging")

    outcome = play(move, Scripted(not_what_the_before_move_needs))
    assert outcome.outcome == Outcome.NOT_RUN and not outcome.ok
    assert outcome.detail.startswith(f"not shown: this move needs the {move.before.slug} retry to go first")
    assert len(outcome.steps) == 1  # the move's own retry was never sent
    # Otherwise both retries go, on the same ticket, the before move's first, and the move is judged.
    target = Scripted(sound)
    judged = play(move, target)
    assert judged.outcome != Outcome.NOT_RUN and [p["requestState"] for p in target.retries()][:2] == [
        "s1.ticket-1"] * 2
    assert [s.label.split(":")[0] for s in judged.steps] == [move.before.slug, "retry"]


def test_a_before_move_on_a_ticket_of_its_own_is_part_of_the_moves_evidence() -> None:
    move = first(lambda m: m.before is not None and m.before_ticket == "new")
    target = Scripted(sound)
    assert play(move, target).ok
    assert [p["requestState"] for p in target.retries()] == ["s1.ticket-2", "s1.ticket-1"]

    def refuses_the_second_ticket(role: Role, message: dict[str, Any]) -> dict[str, Any]:
        if message["params"]["requestState"] == "s1.ticket-2":
            return refused(message["id"])
        return sound(role, message)

    outcome = play(move, Scripted(refuses_the_second_ticket))
    assert outcome.outcome == Outcome.REFUSED and not outcome.ok
    assert outcome.detail.startswith("the first of the two calls, on a ticket of its own, got error -32602")


# -- ended or completed ------------------------------------------------------------------------------------


def test_work_of_masks_ids_and_numbers_so_two_results_of_the_same_work_compare_equal() -> None:
    one = Reply(done(3, "deployed to staging (deploy 2, id 0a1b2c3d4e5f)"))
    two = Reply(done(4, "deployed to staging (deploy 17, id 9f8e7d6c5b4a)"))
    assert work_of(one) == work_of(two) == "deployed to staging (deploy #, id #)"
    assert work_of(Reply(done(3, "nothing deployed"))) != work_of(one)
    assert work_of(Reply(refused(3))) is None
    assert work_of(Reply(result(3, resultType="input_required"))) is None


def test_a_not_a_yes_answer_that_gets_the_work_done_is_completed_and_one_that_ends_is_ended() -> None:
    move = first(lambda m: m.answer == "decline")
    deploys = Scripted(lambda role, message: done(message["id"], f"deployed to staging (id {message['id']}ab12cd34)"))
    outcome = play(move, deploys)
    assert outcome.outcome == Outcome.COMPLETED and not outcome.ok
    assert outcome.detail.startswith("did the work: ") and outcome.controls  # compared with an accepted call
    ends = play(move, Scripted(sound))
    assert ends.outcome == Outcome.ENDED and ends.ok and "an accepted call got result: deployed" in ends.detail


def test_without_an_accepted_call_to_compare_with_the_move_is_not_run() -> None:
    move = first(lambda m: m.answer == "decline")

    def accepted_fails(role: Role, message: dict[str, Any]) -> dict[str, Any]:
        answer = message["params"]["inputResponses"]["confirm"]
        return refused(message["id"]) if answer["action"] == "accept" else done(message["id"], "ok")

    outcome = play(move, Scripted(accepted_fails))
    assert outcome.outcome == Outcome.NOT_RUN and "nothing to tell the work from" in outcome.detail


# -- the owner-again control -------------------------------------------------------------------------------


def test_a_refusal_of_the_other_principal_counts_only_when_the_owner_can_retry_from_a_second_process() -> None:
    move = first(lambda m: m.sender == "other" and m.expect == Outcome.REFUSED)
    target = Scripted(sound)
    held = play(move, target)
    assert held.ok and [s.role for s in held.controls] == ["owner", "owner-again"]

    def bound_to_the_process(role: Role, message: dict[str, Any]) -> dict[str, Any]:
        return sound(role, message) if role == "owner" else refused(message["id"])

    hidden = play(move, Scripted(bound_to_the_process))
    assert hidden.outcome == Outcome.NOT_RUN and not hidden.ok
    assert hidden.detail.startswith("not shown: ") and "only work where they were minted" in hidden.detail


# -- holds -------------------------------------------------------------------------------------------------


O = Outcome  # noqa: E741 (one letter keeps the table readable)
HOLDS_TABLE: dict[Outcome, dict[Outcome, bool | str]] = {
    # expect: {observed: True (holds), False (does not), "note" (holds with a note)}
    O.COMPLETED: {O.COMPLETED: True, O.REFUSED: False, O.ASKED_AGAIN: False, O.ENDED: False},
    # A bad ticket answered with a fresh question fails: state that fails verification MUST be rejected, and the
    # official suite's tampered-state scenario takes only a JSON-RPC error.
    O.REFUSED: {O.COMPLETED: False, O.REFUSED: True, O.ASKED_AGAIN: False, O.ENDED: False},
    O.ASKED_AGAIN: {O.COMPLETED: False, O.REFUSED: False, O.ASKED_AGAIN: True, O.ENDED: False},
    O.ENDED: {O.COMPLETED: False, O.REFUSED: True, O.ASKED_AGAIN: False, O.ENDED: True},
    O.NOT_DONE: {O.COMPLETED: False, O.REFUSED: True, O.ASKED_AGAIN: True, O.ENDED: True},
}


@pytest.mark.parametrize("expect", list(EXPECTS))
@pytest.mark.parametrize("observed", [O.COMPLETED, O.REFUSED, O.ASKED_AGAIN, O.ENDED, O.ERROR, O.NOT_RUN])
def test_holds_says_which_answers_a_sound_server_may_give(expect: Outcome, observed: Outcome) -> None:
    want = HOLDS_TABLE[expect].get(observed, False)  # an error or a move not run never holds
    ok, note = holds(expect, observed)
    assert ok == bool(want)
    assert bool(note) == (want == "note")


def test_the_holds_table_covers_every_expectation() -> None:
    assert set(HOLDS_TABLE) == set(EXPECTS)


# -- the catalogue's checks of the new fields --------------------------------------------------------------


def move_entry(slug: str, at: float, **fields: Any) -> dict[str, Any]:
    entry = {"slug": slug, "title": slug, "summary": slug, "sender": "owner", "at": at, "timing": "in-time",
             "ticket": "as-issued", "answer": "accept", "request": "same", "expect": "completed"}
    return {**entry, **fields}


def toml_of(moves: list[dict[str, Any]]) -> str:
    blocks = []
    for move in moves:
        lines = ["[[moves]]"] + [f"{key} = {json.dumps(value)}" for key, value in move.items()]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


@pytest.mark.parametrize(("moves", "message"), [
    ([move_entry("a", 1, before="b"), move_entry("b", 2, before="a")], "field 'before' makes a loop (a -> b -> a)"),
    ([move_entry("a", 1, before="a")], "field 'before' makes a loop"),
    ([move_entry("a", 1, before="nope")], "field 'before' names no move ('nope')"),
    ([move_entry("a", 1, before_ticket="new")], "field 'before_ticket' needs 'before'"),
    ([move_entry("a", 1), move_entry("b", 2, before="a", before_ticket="old")], "field 'before_ticket' must be one of"),
    ([move_entry("a", 5), move_entry("b", 2, before="a")], "its 'before' move (a) must be sent earlier than 'at'"),
    ([move_entry("a", 1, timing="past-expiry"), move_entry("b", 2, before="a")], "names a past-expiry move"),
    ([move_entry("a", 1), move_entry("b", 2, before="a"), move_entry("c", 3, before="b")],
     "field 'before' must name a move of one plain retry ('b' has its own 'before'"),
    ([move_entry("a", 1, answer="decline"), move_entry("b", 2, before="a")], "must name a move of one plain retry"),
    ([move_entry("a", 1, ticket="junk"), move_entry("b", 2, before="a")], "must name a move of one plain retry"),
    ([move_entry("a", 1, ticket="junk", answer="decline")], "a junk ticket goes with answer 'accept' or 'none'"),
    ([move_entry("a", 1, ticket="absent", answer="none")], "an absent ticket goes with an answer"),
    ([move_entry("a", 1, ticket="absent"), move_entry("b", 2, before="a")], "a junk or absent ticket"),
    ([move_entry("a", 1, answer="maybe")], "field 'answer' must be one of"),
    ([move_entry("a", 1, expect="done")], "field 'expect' must be one of"),
    ([move_entry("a", 1, before=3)], "field 'before' has the wrong type"),
])
def test_a_broken_new_field_names_the_file_the_move_and_the_field(tmp_path: Path, moves: list[dict[str, Any]],
                                                                  message: str) -> None:
    path = tmp_path / "moves.toml"
    path.write_text(toml_of(moves), encoding="utf-8")
    with pytest.raises(ValueError) as raised:
        load_moves(path)
    assert str(path) in str(raised.value) and message in str(raised.value), raised.value


def test_a_valid_before_chain_resolves_to_moves() -> None:
    for move in MOVES:
        if move.before is not None:
            assert move.chain == (move.before, move) and move.before.before is None
            assert move.before.at < move.at


@pytest.mark.parametrize("prop", [
    {"type": "string", "minLength": "5"}, {"type": "integer", "minimum": "x"}, {"type": "number", "minimum": None},
    {"type": "array", "minItems": "2", "items": {"enum": "abc"}}, {"type": "array", "items": {"anyOf": 3}},
    {"type": "string", "minLength": 10**9}, "not a schema", {"type": ["string", "null"]},
])
def test_a_peers_odd_schema_still_gets_answers_and_never_a_traceback(prop: Any) -> None:
    questions = {"q": {"method": "elicitation/create", "params": {"requestedSchema": {
        "type": "object", "properties": {"field": prop}, "required": ["field"]}}}}
    for kind in ("accept", "decline", "cancel", "wrong-type", "missing-key"):
        sent = answers_of(kind, questions)
        assert sent is not None and set(sent) == {"q"}
        json.dumps(sent)
    assert len(json.dumps(answers_of("accept", questions))) < 20_000
