"""The lesson's story, played for real: replicas behind a balancer, the round trip, a ticket opened.

Replica A mints a ticket and forgets; replica B finishes the work from the ticket alone. Each
replica is a separate `mrtr.Server` sharing only the key ring, the redeemed store and the clock.
`roundtrip` plays the lesson's six steps on such a cluster, `anatomy` takes a real ticket apart.
Pages pass the lab's keys (`moves.labcodec.LabRing`); nothing here reads a real clock or imports Flask.
"""

from __future__ import annotations

import itertools
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from mrtr import (
    DEFAULT_TTL,
    Clock,
    Exchange,
    FakeClock,
    JSONObject,
    KeyRing,
    MemoryStore,
    Policy,
    RedeemedStore,
    Server,
    TicketCodec,
    as_object,
)
from mrtr.client import Line
from mrtr.clock import FIXED_EPOCH
from mrtr.tickets import SIGNED_PREFIX
from mrtr_toolsets.lesson import lesson_catalog

from .catalog import Move
from .engine import Call, answers_for, edit_ticket, modern_request
from .target import Outcome

#: A fixed instant for figures, so the same ring always draws the same times.
FIGURE_EPOCH = FIXED_EPOCH
#: The edit the round trip's last step makes (the same kind as an edit-work move's: work.env to prod).
_EDIT = Move(slug="figure-edit", title="", summary="", sender="owner", at=8, timing="in-time", ticket="edit-work",
             answer="accept", request="same", expect=Outcome.REFUSED, stops_at="signature")


@dataclass(frozen=True)
class Answered:
    replica: str
    exchange: Exchange


class Balancer:
    """Hands each message to the next replica in turn and says which one answered."""

    def __init__(self, replicas: dict[str, Server]) -> None:
        if not replicas:
            raise ValueError("a balancer needs at least one replica")
        self.replicas = replicas
        self._order = itertools.cycle(list(replicas))
        self._lock = threading.Lock()

    def handle(self, message: JSONObject, *, principal: str, replica: str | None = None) -> Answered:
        """Serve `message` on the next replica (or on `replica`, to pin one for a demo)."""
        with self._lock:
            name = replica if replica is not None else next(self._order)
        return Answered(name, self.replicas[name].handle(message, principal=principal))


def cluster(n: int, *, ring: KeyRing, store: RedeemedStore, clock: Clock, policy: Policy | None = None,
            ttl: int = DEFAULT_TTL, jti: Callable[[], str] | None = None) -> Balancer:
    """`n` independent replicas named A, B, C… sharing only `ring`, `store` and `clock`."""
    names = string.ascii_uppercase[:n]
    return Balancer({name: Server(ring=ring, store=store, clock=clock, policy=policy or Policy(), ttl=ttl,
                                  catalog=lesson_catalog(), name=f"mrtr-lab-{name}", jti=jti, operator_log=False)
                     for name in names})


@dataclass
class RoundTripStep:
    n: int
    title: str
    replica: str | None
    lines: list[Line]
    checks: list[dict[str, str]] | None
    verdict: str


def roundtrip(ring: KeyRing, *, env: str = "staging", jti: Callable[[], str] | None = None,
              epoch: float = FIGURE_EPOCH) -> list[RoundTripStep]:
    """The lesson's six steps, played on two real replicas behind a round-robin balancer.

    With a `jti` sequence (and the fixed `epoch`) the same ring replays the same bytes every time.
    """
    clock = FakeClock(epoch)
    lb = cluster(2, ring=ring, store=MemoryStore(), clock=clock, jti=jti)
    call = Call(arguments={"env": env})
    first_call = modern_request(2, "tools/call", {"name": call.tool, "arguments": call.arguments}, call)
    first = lb.handle(first_call, principal="bob")  # round robin: replica A
    asked = first.exchange.input_required
    if asked is None:
        raise RuntimeError(f"deploy did not ask for confirmation: {first.exchange.response}")
    ticket = asked.get("requestState", "")
    questions = asked.get("inputRequests", {})
    answers = answers_for(questions)
    clock.advance(8)

    def retry(request_id: int, sent_ticket: str) -> JSONObject:
        return modern_request(request_id, "tools/call", {"name": call.tool, "arguments": call.arguments,
                                                         "requestState": sent_ticket, "inputResponses": answers}, call)

    second_call = retry(3, ticket)
    second = lb.handle(second_call, principal="bob")  # round robin: replica B
    forged = retry(4, edit_ticket(ticket, _EDIT))
    third = lb.handle(forged, principal="bob", replica="B")

    def checks(exchange: Exchange) -> list[dict[str, str]] | None:
        return exchange.trace.as_dicts() if exchange.trace and exchange.trace.checks else None

    question = questions.get("confirm", next(iter(questions.values()), {}))
    return [
        RoundTripStep(1, "The client calls deploy", first.replica,
                      [Line("-->", first_call, "through the load balancer")], None, "sent"),
        RoundTripStep(2, "Replica A answers input_required and forgets", first.replica,
                      [Line("<--", first.exchange.response or {}, "the question, and the work in a signed ticket")],
                      None, "input_required"),
        RoundTripStep(3, "The host asks the user", None,
                      [Line("<--", question, "what the user is shown"),
                       Line("-->", as_object(answers.get("confirm")), "what the user answered")], None, "answered"),
        RoundTripStep(4, "The client retries with a new id", second.replica,
                      [Line("-->", second_call, "new id, the answer, the ticket byte for byte")], None, "sent"),
        RoundTripStep(5, "Replica B checks the ticket and finishes", second.replica,
                      [Line("<--", second.exchange.response or {}, "B had never seen this deploy")],
                      checks(second.exchange), "complete"),
        RoundTripStep(6, "The other ending: an edited ticket", third.replica,
                      [Line("-->", forged, "staging edited to prod in the payload"),
                       Line("<--", third.exchange.response or {}, "the signature no longer matches")],
                      checks(third.exchange), "refused"),
    ]


class Anatomy(TypedDict):
    """A ticket taken apart (`anatomy`): the token, its three parts, its claims, and the same claims sealed."""

    token: str
    prefix: str
    payload_b64: str
    signature: str
    claims: JSONObject
    sealed_token: str


def anatomy(ring: KeyRing, *, env: str = "staging") -> Anatomy:
    """A real ticket taken apart, and the same claims sealed."""
    codec = TicketCodec(ring)
    claims = codec.claims(now=FIGURE_EPOCH, sub="bob", method="tools/call", target="deploy",
                          arguments={"env": env}, work={"env": env}, step="confirm")
    token = codec.encode(claims)
    _, payload_b64, signature = token.split(".")
    return {
        "token": token,
        "prefix": SIGNED_PREFIX,
        "payload_b64": payload_b64,
        "signature": signature,
        "claims": claims,
        "sealed_token": codec.encode(claims, sealed=True),
    }
