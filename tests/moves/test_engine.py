"""The move engine and the catalog, played on the in-process lab target (no Flask)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from moves.catalog import DEFAULT_PATH, JUNK_SHAPES, Move, load_moves
from moves.engine import (
    Call,
    answers_for,
    edit_ticket,
    edits_of,
    modern_request,
    outcome_of,
    play,
    readable_claims,
    unsigned_of,
)
from moves.labcodec import LabRing
from moves.target import Outcome, Reply
from moves.targets.in_process import LabTarget, lab_target
from mrtr import CHECKS
from tests.check.catalogue import EDITED, HONEST, REPLAY

RING = LabRing.public("engine-test-key-0123456789abcdefghijklmn")
NOW = 1_790_000_000.0
MOVES = load_moves()


def _lab_ticket() -> str:
    first = modern_request(2, "tools/call", {"name": "deploy", "arguments": {"env": "staging"}}, Call())
    return lab_target(RING, now=NOW).send("owner", first).response["result"]["requestState"]


#: One retry per field of the lab's ticket (edit-each), one per unsigned shape (unsigned).
SHAPES = {"junk": len(JUNK_SHAPES), "edit-each": len(edits_of(_lab_ticket(), "bob", "alice")),
          "unsigned": len(unsigned_of(_lab_ticket()))}


def messages_sent(move: Move) -> int:
    """The retries (and second round ones) a move sends, from its catalogue entry and the lab ticket's shape."""
    own = SHAPES.get(move.ticket, move.copies)
    if move.before is None:
        return own
    return own + messages_sent(move.before) + (1 if move.before_ticket == "new" else 0)


def target(**switches: Any) -> LabTarget:
    return lab_target(RING, now=NOW, **switches)


@pytest.mark.parametrize("move", MOVES, ids=[m.slug for m in MOVES])
def test_every_move_gets_its_expected_outcome_and_stops_where_it_says(move) -> None:
    result = play(move, target())
    # The lab server gives each move a plain holding answer: never one that only holds with a note.
    assert result.ok and move.holds(result.outcome) == (True, ""), result.detail
    assert result.stopped_at == (move.stops_at or None)
    trace = result.steps[-1].reply.trace
    assert [c["check"] for c in trace] == list(CHECKS)
    assert result.ticket and result.minted is not None and len(result.steps) == messages_sent(move)
    if move.expect == Outcome.REFUSED:
        assert result.steps[-1].reply.response["error"]["code"] == -32602


def test_switches_change_exactly_what_they_remove() -> None:
    edited, replay, honest = EDITED, REPLAY, HONEST
    assert play(edited, target(verify_signature=False)).outcome == Outcome.COMPLETED
    assert play(replay, target(single_use=False)).outcome == Outcome.COMPLETED
    sealed = play(edited, target(sealed=True))
    assert sealed.ticket.startswith("s1.") and sealed.outcome == Outcome.REFUSED and sealed.stopped_at == "signature"
    late = dataclasses.replace(honest, at=honest.at + 150)
    assert play(late, target()).stopped_at == "expiry"


def test_the_edited_ticket_keeps_the_signature_and_changes_the_work() -> None:
    move = next(m for m in MOVES if m.ticket == "edit-work")
    ticket = play(move, target()).ticket
    edited = edit_ticket(ticket, move)
    assert edited.rsplit(".", 1)[1] == ticket.rsplit(".", 1)[1]
    assert readable_claims(edited)["work"] == {"env": "prod"}
    fallback = edit_ticket(ticket, dataclasses.replace(move, edit_path="no.such.path", edit_value="x"))
    assert readable_claims(fallback)["work"] == {"env": "x"}
    assert edit_ticket("s1.AAAABBBB", move) != "s1.AAAABBBB"


def test_answers_satisfy_the_requested_schema() -> None:
    schema = {"type": "object", "properties": {
        "confirm": {"type": "boolean"}, "name": {"type": "string", "minLength": 5},
        "size": {"type": "integer", "minimum": 3}, "color": {"type": "string", "enum": ["red", "blue"]}}}
    request = {"method": "elicitation/create", "params": {"mode": "form", "requestedSchema": schema}}
    answers = answers_for({"q": request})
    assert answers == {"q": {"action": "accept", "content": {"confirm": True, "name": "yesyy", "size": 3,
                                                               "color": "red"}}}


@pytest.mark.parametrize(("response", "outcome"), [
    (None, Outcome.ERROR),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "x"}}, Outcome.REFUSED),
    ({"jsonrpc": "2.0", "id": 1, "result": {"isError": True, "content": []}}, Outcome.REFUSED),
    ({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required"}}, Outcome.ASKED_AGAIN),
    ({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "content": []}}, Outcome.COMPLETED),
    ({"jsonrpc": "2.0", "id": 1}, Outcome.ERROR),
])
def test_outcome_is_read_off_the_wire(response: Any, outcome: Outcome) -> None:
    assert outcome_of(Reply(response=response)) == outcome


class Skipping(LabTarget):
    def advance(self, seconds: float, **kwargs: Any) -> bool:
        return not kwargs["past_expiry"] and super().advance(seconds, **kwargs)


def test_a_skipped_wait_is_not_run_and_a_bad_first_round_is_an_error() -> None:
    late = next(m for m in MOVES if m.timing == "past-expiry")
    base = target()
    assert play(late, Skipping(base.server, base.clock)).outcome == Outcome.NOT_RUN
    broken = play(MOVES[0], target(), Call(tool="no-such-tool"))
    assert broken.outcome == Outcome.ERROR and not broken.ok and "input_required" in broken.detail


def test_modern_request_carries_meta() -> None:
    message = modern_request(4, "tools/list", {}, Call(client_name="x"))
    assert message["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] == "x"


@pytest.mark.parametrize(("old", "new", "message"), [
    ('sender = "other"', 'sender = "thief"', "move 'stolen': field 'sender' must be one of"),
    ("at = 300", 'at = "late"', "move 'late': field 'at' has the wrong type"),
    ('expect = "completed"', 'expect = "fine"', "move 'honest': field 'expect'"),
    ('stops_at = "request"', 'stops_at = "nope"', "move 'other-request': field 'stops_at'"),
    ('slug = "twice"', 'slug = "honest"', "move 'honest': field 'slug' is used twice"),
    ('title = "Too late"\n', "", "move 'late': field 'title' is missing"),
    ('before = "honest"\nexpect = "refused"', 'before = "honest"\ncolour = 1\nexpect = "refused"',
     "move 'twice': unknown field 'colour'"),
])
def test_a_broken_moves_file_names_file_move_and_field(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = tmp_path / "moves.toml"
    text = DEFAULT_PATH.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError, match=str(path)) as raised:
        load_moves(path)
    assert message in str(raised.value)


def test_a_peer_s_question_is_read_leniently_but_never_taken_for_a_form_it_is_not() -> None:
    from moves.answers import question_of, unanswerable

    form = {"method": "elicitation/create", "params": {"mode": "form", "requestedSchema": {"type": "object"}}}
    assert question_of(form) == form
    # An early draft's shape (the params themselves): read as an elicitation with those params.
    assert question_of({"mode": "url", "url": "https://example.com"}) == {
        "method": "elicitation/create", "params": {"mode": "url", "url": "https://example.com"}}
    # A method that is no string is named as text, so it can never read as elicitation/create.
    assert question_of({"method": ["elicitation/create"], "params": 3}) == {
        "method": "['elicitation/create']", "params": {}}
    assert question_of("text") == {"method": "elicitation/create", "params": {}}
    assert unanswerable({"login": {"mode": "url"}}) == "'login' (a url-mode elicitation)"
    assert unanswerable({"roots": {"method": "roots/list"}}) == "'roots' (a roots/list request)"
    assert unanswerable({"confirm": form}) is None
