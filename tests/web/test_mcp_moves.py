"""Every move of moves/moves.toml, played by the move engine over POST /mcp with bearer tokens.

Same moves as tests/moves/test_engine.py, but through HTTP: the token names the principal, the
injected clock (MRTR_CLOCK) moves the retry in time, and the server log says which check stopped it.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from moves.catalog import load_moves
from moves.engine import play
from moves.target import Outcome, Reply, Role
from mrtr import CHECK_TITLES
from mrtr.errors import FROZEN_TICKET_MESSAGE, INVALID_INPUT_RESPONSE

from .helpers import post

MOVES = load_moves()
#: "owner-again" is the owner from a second connection: over HTTP, the same token on a new request.
TOKENS = {"owner": "bob-token", "other": "alice-token", "owner-again": "bob-token"}


class FlaskTarget:
    """The app's /mcp through Flask's test client, with the app's injected clock."""

    label = "/mcp (test client)"
    owner, other = "bob", "alice"

    def __init__(self, client: Any, clock: Any) -> None:
        self.client, self.clock, self.t0 = client, clock, clock()

    def send(self, role: Role, message: dict[str, Any]) -> Reply:
        response = post(self.client, message, token=TOKENS[role])
        return Reply(response=response.get_json(), http_status=response.status_code)

    def begin(self) -> None:
        self.t0 = self.clock()

    def advance(self, seconds: float, **_: Any) -> bool:
        self.clock.set(self.t0 + seconds)
        return True

    def close(self) -> None:
        pass


@pytest.mark.parametrize("move", MOVES, ids=[m.slug for m in MOVES])
def test_each_move_over_http(app, client, clock, move, caplog):
    """App-defined (moves.toml): every move's outcome, at HTTP 200, stopped by the named check."""
    with caplog.at_level(logging.INFO, logger="mrtr"):
        result = play(move, FlaskTarget(client, clock))
    assert result.ok, result.detail
    last = result.steps[-1].reply
    assert last.http_status == 200
    body = last.response
    if result.outcome == Outcome.REFUSED and move.stops_at == "answer":
        # The answer rule: a malformed answer gets an error of its own, which a client tells from a ticket refusal.
        assert body["error"]["code"] == -32602 and body["error"]["message"] != FROZEN_TICKET_MESSAGE
        assert body["error"]["data"] == {"reason": INVALID_INPUT_RESPONSE, "key": "confirm"}
    elif result.outcome == Outcome.REFUSED:
        assert body["error"] == {
            "code": -32602,
            "message": FROZEN_TICKET_MESSAGE,
            "data": {"reason": "invalid_request_state"},
        }
        title = CHECK_TITLES[move.stops_at]
        assert any(f"rejected at “{title}”" in record.getMessage() for record in caplog.records)
    if result.outcome == Outcome.COMPLETED:
        assert body["result"]["content"][0]["text"] == "deployed to staging"
    if result.outcome == Outcome.ENDED:
        assert body["result"]["content"][0]["text"].startswith("nothing was deployed")
    if result.outcome == Outcome.ASKED_AGAIN:
        assert body["result"]["resultType"] == "input_required"
