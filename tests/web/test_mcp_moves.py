"""The seven moves of lessons/moves.toml, played over POST /mcp with bearer tokens.

Same moves as tests/mrtr/test_moves.py, but through HTTP: the token names the principal, the
injected clock (MRTR_CLOCK) moves the retry in time, and the server log says which check stopped it.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest

from mrtr import FROZEN_TICKET_MESSAGE
from mrtr.scenario import ACCEPT, Move, deploy_call, edit_env, verdict_of

from .test_mcp_http import post

ROOT = Path(__file__).resolve().parents[2]
MOVES = [Move.from_dict(m) for m in tomllib.loads((ROOT / "lessons" / "moves.toml").read_text())["moves"]]
TOKENS = {"bob": "bob-token", "alice": "alice-token"}


def play_over_http(client, clock, move: Move) -> tuple[int, dict]:
    t0 = clock()
    first = post(client, deploy_call(2, "staging"), token="bob-token")
    assert first.status_code == 200
    ticket = first.get_json()["result"]["requestState"]
    if move.repeat:
        clock.set(t0 + 8)
        honest = deploy_call(
            move.request_id, None, ticket=ticket, answers=copy.deepcopy(ACCEPT), arguments=dict(move.arguments)
        )
        assert verdict_of(post(client, honest, token="bob-token").get_json()) == "deployed"
    sent = edit_env(ticket, move.edit_to) if move.ticket == "edit-env" else ticket
    answers = copy.deepcopy(ACCEPT) if move.answer == "confirm" else None
    clock.set(t0 + move.at)
    message = deploy_call(move.request_id, None, ticket=sent, answers=answers, arguments=dict(move.arguments))
    response = post(client, message, token=TOKENS[move.actor])
    return response.status_code, response.get_json()


@pytest.mark.parametrize("move", MOVES, ids=[m.slug for m in MOVES])
def test_each_move_over_http(app, client, clock, move):
    """App-defined (moves.toml): every move's verdict, at HTTP 200, stopped by the named check."""
    status, body = play_over_http(client, clock, move)
    assert status == 200
    assert verdict_of(body) == move.expect
    if move.expect == "refused":
        assert body["error"] == {
            "code": -32602,
            "message": FROZEN_TICKET_MESSAGE,
            "data": {"reason": "invalid_request_state"},
        }
        assert any(f"rejected at {move.stops_at}" in line for line in app.extensions["mrtr"].log.tail(5))
    if move.expect == "deployed":
        assert body["result"]["content"][0]["text"] == "deployed to staging"
    if move.expect == "asked-again":
        assert body["result"]["resultType"] == "input_required"


def test_the_moves_cover_the_lesson():
    assert [m.slug for m in MOVES] == ["honest", "tampered", "stolen", "late", "other-request", "no-answer", "twice"]
