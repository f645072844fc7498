"""Scripted experiments on a real server: mint bob's ticket, then play one move against it.

This is the engine behind the playground, the lesson's timeline and the presenter. A move is a
plain record (see `lessons/moves.toml`); `play` builds the retry the move describes, hands it to
the server at the move's time on an injected clock, and returns everything a learner should see:
what was sent, the checks, the raw answer and the server log. Nothing here is canned text.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .clock import FakeClock
from .server import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION, MODERN_VERSION, Exchange, Server
from .tickets import SEALED_PREFIX, SIGNED_PREFIX, b64decode_strict, b64encode, canonical_json

ACCEPT = {"confirm": {"action": "accept", "content": {"confirm": True}}}
TICKET_KINDS = ("as-issued", "edit-env")
ANSWER_KINDS = ("confirm", "none")
EXPECTS = ("deployed", "refused", "asked-again")


@dataclass(frozen=True)
class Move:
    slug: str
    title: str
    actor: str
    at: float
    request_id: int
    arguments: dict[str, Any]
    ticket: str
    answer: str
    repeat: bool
    expect: str
    stops_at: str
    summary: str
    edit_to: str = "prod"

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Move:
        move = cls(**{k: copy.deepcopy(v) for k, v in raw.items()})
        if move.ticket not in TICKET_KINDS or move.answer not in ANSWER_KINDS or move.expect not in EXPECTS:
            raise ValueError(f"move {move.slug!r}: unknown ticket, answer or expect value")
        return move


def client_meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        META_VERSION: MODERN_VERSION,
        META_CAPABILITIES: {"elicitation": {"form": {}}} if capabilities is None else capabilities,
        META_CLIENT_INFO: {"name": "mrtr-lab-playground", "version": "1.0"},
    }


def deploy_call(request_id: int | str, env: Any, *, ticket: str | None = None,
                answers: dict[str, Any] | None = None, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "deploy", "arguments": arguments if arguments is not None else {"env": env},
                              "_meta": client_meta()}
    if answers is not None:
        params["inputResponses"] = answers
    if ticket is not None:
        params["requestState"] = ticket
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def edit_env(token: str, new_env: str) -> str:
    """What an attacker does to a readable ticket: change the work, keep the old signature.

    A sealed ticket cannot be read, so the attacker can only flip a character of the blob.
    """
    prefix, _, rest = token.partition(".")
    if prefix == SIGNED_PREFIX:
        payload, _, sig = rest.rpartition(".")
        claims = json.loads(b64decode_strict(payload))
        claims["work"] = {**claims.get("work", {}), "env": new_env}
        return f"{SIGNED_PREFIX}.{b64encode(canonical_json(claims))}.{sig}"
    if prefix == SEALED_PREFIX:
        middle = len(rest) // 2
        flipped = "B" if rest[middle] != "B" else "C"
        return f"{prefix}.{rest[:middle]}{flipped}{rest[middle + 1:]}"
    return token + "x"


@dataclass
class Step:
    """One message sent and what it produced."""

    principal: str
    at: float
    sent: dict[str, Any]
    exchange: Exchange

    @property
    def response(self) -> dict[str, Any] | None:
        return self.exchange.response


@dataclass
class Play:
    minted: Step
    steps: list[Step] = field(default_factory=list)

    @property
    def last(self) -> Step:
        return self.steps[-1]

    @property
    def ticket(self) -> str:
        return self.minted.response["result"]["requestState"]  # type: ignore[index]

    @property
    def verdict(self) -> str:
        """deployed, refused, asked-again, declined or error, read off the real response."""
        return verdict_of(self.last.response)


def verdict_of(response: dict[str, Any] | None) -> str:
    if not response:
        return "error"
    if "error" in response:
        return "refused" if response["error"].get("code") == -32602 else "error"
    result = response.get("result", {})
    if result.get("resultType") == "input_required":
        return "asked-again"
    text = " ".join(c.get("text", "") for c in result.get("content", []) if isinstance(c, dict))
    return "deployed" if text.startswith("deployed to") else "declined"


def mint(server: Server, clock: FakeClock, *, principal: str = "bob", env: str = "staging",
         request_id: int = 2) -> Step:
    """Round one: bob calls deploy and the server answers input_required with a fresh ticket."""
    sent = deploy_call(request_id, env)
    return Step(principal, clock(), sent, server.handle(sent, principal=principal))


def send(server: Server, clock: FakeClock, t0: float, *, principal: str, at: float,
         message: dict[str, Any]) -> Step:
    clock.set(t0 + at)
    return Step(principal, at, message, server.handle(message, principal=principal))


def play(server: Server, move: Move, *, clock: FakeClock, env: str = "staging") -> Play:
    """Mint bob's ticket at the clock's current time, then play `move` against it."""
    t0 = clock()
    result = Play(mint(server, clock, env=env))
    ticket = result.ticket
    answers = ACCEPT if move.answer == "confirm" else None
    if move.repeat:
        first = deploy_call(move.request_id, None, ticket=ticket, answers=copy.deepcopy(ACCEPT),
                            arguments=dict(move.arguments))
        result.steps.append(send(server, clock, t0, principal="bob", at=8, message=first))
    sent_ticket = edit_env(ticket, move.edit_to) if move.ticket == "edit-env" else ticket
    message = deploy_call(move.request_id, None, ticket=sent_ticket, answers=copy.deepcopy(answers),
                          arguments=dict(move.arguments))
    result.steps.append(send(server, clock, t0, principal=move.actor, at=move.at, message=message))
    clock.set(t0)
    return result


def play_custom(server: Server, clock: FakeClock, *, principal: str, at: float, arguments: Any,
                request_state: str | None, input_responses: Any, request_id: int | str = 7,
                env: str = "staging") -> Play:
    """Mint bob's ticket, then send whatever retry the learner wrote, at the time they chose."""
    t0 = clock()
    result = Play(mint(server, clock, env=env))
    params: dict[str, Any] = {"name": "deploy", "arguments": arguments, "_meta": client_meta()}
    if input_responses is not None:
        params["inputResponses"] = input_responses
    if request_state is not None:
        params["requestState"] = request_state
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    result.steps.append(send(server, clock, t0, principal=principal, at=at, message=message))
    clock.set(t0)
    return result
