"""The attack round's lab: each learner's own principal and tickets, and the moves they play with them.

This module is the ONLY place the classroom touches the protocol, behind `ClassLab.mint` and
`ClassLab.play`, so switching to the move engine and lab keys that helper "lab" is building
(`moves/`, branch `lab`) is an edit here and nowhere else.

Keys: the lab's keys (`moves.labcodec.LabRing`, derived from the app's ring for the lab alone and
never accepted by `/mcp`), narrowed once more per class (`class_ring`), so a ticket minted in one
class is worthless against `/mcp`, the playground and every other class. Servers come from the
lab's `lab_server`. Spent ticket ids go to a SQLite store shared by every process serving the class. Each attempt mints
a fresh ticket for the learner's principal at the real time, then plays the move on a fake clock
that starts there (a "too late" move jumps 300 s ahead without waiting). Never imports Flask.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moves.labcodec import LabRing
from moves.targets.lab import lab_server
from mrtr import FakeClock, Server, SqliteStore
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


def class_ring(lab: LabRing, class_id: str) -> LabRing:
    """The class's own lab keys: each lab key narrowed by HMAC to this class (nothing stored)."""
    label = b"mrtr-lab classroom v1\x00" + class_id.encode()
    return LabRing([base64.urlsafe_b64encode(hmac.new(key, label, hashlib.sha256).digest()).rstrip(b"=")
                    for key in lab.keys])


class ClassLab:
    """One class's lab server: its keys, the shared spent-ticket store and the class's switches."""

    def __init__(self, ring: LabRing, store: SqliteStore, *, clock: Callable[[], float]) -> None:
        self.ring = ring
        self.store = store
        self.clock = clock

    def _server(self, clock: FakeClock, single_use: bool) -> Server:
        return lab_server(self.ring, clock=clock, single_use=single_use, store=self.store, name="mrtr-classroom")

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
