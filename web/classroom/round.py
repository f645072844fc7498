"""The attack round's lab: each learner's own principal and tickets, and the moves they play with them.

This module is the ONLY place the classroom touches the protocol and the move engine, behind
`ClassLab.mint` and `ClassLab.play`: a move is played by `moves.engine.play` against a
`moves.targets.in_process.LabTarget` whose owner is the learner's principal.

Keys: the lab's keys (`moves.labcodec.LabRing`, derived from the app's ring for the lab alone and
never accepted by `/mcp`), narrowed once more per class (`class_ring`), so a ticket minted in one
class is worthless against `/mcp`, the playground and every other class. Servers come from the
lab's `lab_server`. Spent ticket ids go to a SQLite store shared by every process serving the class. Each attempt mints
a fresh ticket for the learner's principal at the real time, then plays the move on a fake clock
that starts there (a "too late" move jumps past the expiry without waiting). Never imports Flask.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field

from moves.catalog import Move
from moves.engine import MINT_ID, Call, modern_request, play
from moves.labcodec import LabRing
from moves.target import Outcome
from moves.targets.in_process import LabTarget, lab_server
from mrtr import CHECK_TITLES, CHECKS, FakeClock, JSONObject, RedeemedStore, Server, as_object
from web.site.moveviews import step_outcome_words, step_words

#: The principal a stolen ticket is replayed under.
THIEF = "someone-else"
#: What a heatmap column is called when no check stopped the move.
THROUGH = ""


@dataclass(frozen=True)
class Attempt:
    move: str
    verdict: str  # an Outcome value: completed, refused, asked-again, ended, error, not-run
    stopped_at: str  # the first failing check, or "" when none failed
    checks: tuple[dict[str, str], ...]
    ticket: str
    sent: JSONObject
    response: JSONObject | None
    single_use: bool
    log: tuple[str, ...] = field(default_factory=tuple)
    title: str = ""  # the move's title, for the learner's screen
    #: What the move sent before its last message, and what each got ("the retry of “Honest retry”: Deployed").
    earlier: tuple[str, ...] = field(default_factory=tuple)

    @property
    def went_through(self) -> bool:
        return self.verdict == Outcome.COMPLETED

    @property
    def stopped_title(self) -> str:
        return CHECK_TITLES.get(self.stopped_at, "")


def is_replay(move: Move) -> bool:
    """The move only single use stops (a replay of a spent ticket), read from moves.toml's `requires`."""
    return move.is_replay


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

    def __init__(self, ring: LabRing, store: RedeemedStore, *, clock: Callable[[], float]) -> None:
        self.ring = ring
        self.store = store
        self.clock = clock

    def _server(self, clock: FakeClock, single_use: bool) -> Server:
        return lab_server(self.ring, clock=clock, single_use=single_use, store=self.store, name="mrtr-classroom")

    def _target(self, principal: str, single_use: bool) -> LabTarget:
        clock = FakeClock(self.clock())
        return LabTarget(self._server(clock, single_use), clock, owner=principal, other=THIEF)

    def mint(self, principal: str) -> str:
        """A fresh ticket for `principal`: round one of the deploy call."""
        target = self._target(principal, True)
        call = Call()
        reply = target.send("owner", modern_request(MINT_ID, "tools/call",
                                                    {"name": call.tool, "arguments": call.arguments}, call))
        return str(as_object(as_object(reply.response).get("result")).get("requestState", ""))

    def play(self, move: Move, principal: str, *, single_use: bool, moves: tuple[Move, ...] = ()) -> Attempt:
        """Play `move` for `principal`; `moves` (the catalogue) names the moves a step was sent for."""
        result = play(move, self._target(principal, single_use))
        last = result.last
        checks = tuple(last.reply.trace or ()) if last else ()
        earlier = tuple(f"{step_words(step, moves or (move,))}: {step_outcome_words(step)}"
                        for step in result.steps[:-1])
        return Attempt(move=move.slug, verdict=str(result.outcome), stopped_at=result.stopped_at or THROUGH,
                       checks=checks, ticket=result.ticket or "", sent=last.sent if last else {},
                       response=last.reply.response if last else None, single_use=single_use,
                       log=tuple(last.reply.log) if last else (), title=move.title, earlier=earlier)
