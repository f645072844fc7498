"""The attack round's lab: each learner's own principal and tickets, and the moves they play with them.

This module is the ONLY place the classroom touches the protocol, behind `ClassLab.mint` and
`ClassLab.play`, so switching to the move engine and lab keys that helper "lab" is building
(`moves/`, branch `lab`) is an edit here and nowhere else.

Keys: every class has its own random lab key (stored with the class, never configured, never the
key ring `/mcp` accepts), so a ticket minted here is worthless against `/mcp` and vice versa.
Spent ticket ids go to a SQLite store shared by every process serving the class. Each attempt mints
a fresh ticket for the learner's principal at the real time, then plays the move on a fake clock
that starts there (a "too late" move jumps 300 s ahead without waiting). Never imports Flask.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mrtr import FakeClock, KeyRing, Policy, Server, SqliteStore
from mrtr.scenario import ACCEPT, Move, deploy_call, edit_env, mint, send, verdict_of
from mrtr.tickets import CHECK_TITLES, CHECKS

#: The principal a stolen ticket is replayed under.
THIEF = "someone-else"
#: What a heatmap column is called when no check stopped the move.
THROUGH = ""


@dataclass(frozen=True)
class Attempt:
    move: str
    verdict: str  # deployed, refused, asked-again, declined, error
    stopped_at: str  # the first failing check, or "" when none failed
    checks: tuple[dict[str, str], ...]
    ticket: str
    sent: dict[str, Any]
    response: dict[str, Any] | None
    single_use: bool
    log: tuple[str, ...] = field(default_factory=tuple)

    @property
    def went_through(self) -> bool:
        return self.verdict == "deployed"

    @property
    def stopped_title(self) -> str:
        return CHECK_TITLES.get(self.stopped_at, "")


def check_order() -> tuple[str, ...]:
    """The checks in the order the server runs them (the heatmap's columns)."""
    return tuple(CHECKS)


class ClassLab:
    """One class's lab server: its key, the shared spent-ticket store and the class's switches."""

    def __init__(self, key: str, store_path: str | Path, *, clock: Callable[[], float]) -> None:
        self.ring = KeyRing([key])
        self.store = SqliteStore(store_path)
        self.clock = clock

    def _server(self, clock: FakeClock, single_use: bool) -> Server:
        return Server(ring=self.ring, store=self.store, clock=clock, policy=Policy(single_use=single_use))

    def mint(self, principal: str) -> str:
        """A fresh ticket for `principal`: round one of deploy {env: staging}."""
        clock = FakeClock(self.clock())
        step = mint(self._server(clock, True), clock, principal=principal)
        return str(step.response["result"]["requestState"])  # type: ignore[index]

    def play(self, move: Move, principal: str, *, single_use: bool) -> Attempt:
        clock = FakeClock(self.clock())
        server = self._server(clock, single_use)
        t0 = clock()
        minted = mint(server, clock, principal=principal)
        ticket = str(minted.response["result"]["requestState"])  # type: ignore[index]
        actor = principal if move.actor == "bob" else THIEF
        if move.repeat:
            honest = deploy_call(move.request_id, None, ticket=ticket, answers=copy.deepcopy(ACCEPT),
                                 arguments=dict(move.arguments))
            send(server, clock, t0, principal=principal, at=8, message=honest)
        sent_ticket = edit_env(ticket, move.edit_to) if move.ticket == "edit-env" else ticket
        message = deploy_call(move.request_id, None, ticket=sent_ticket,
                              answers=copy.deepcopy(ACCEPT) if move.answer == "confirm" else None,
                              arguments=dict(move.arguments))
        step = send(server, clock, t0, principal=actor, at=move.at, message=message)
        trace = step.exchange.trace
        checks = tuple(trace.as_dicts()) if trace else ()
        failed = next((c["check"] for c in checks if c["outcome"] == "fail"), THROUGH)
        return Attempt(move=move.slug, verdict=verdict_of(step.response), stopped_at=failed, checks=checks,
                       ticket=ticket, sent=message, response=step.response, single_use=single_use,
                       log=tuple(step.exchange.log))
