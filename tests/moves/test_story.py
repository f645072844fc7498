"""Replicas sharing only keys and the store: any of them can finish what another started."""

from __future__ import annotations

import itertools

import pytest

from moves.story import Balancer, cluster, roundtrip
from mrtr import KeyRing, MemoryStore
from tests.mrtr.helpers import ACCEPT, assert_frozen_rejection, deploy


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing(["story-test-key-0123456789abcdefghijklmnop"])


@pytest.fixture
def lb(ring, clock) -> Balancer:
    return cluster(2, ring=ring, store=MemoryStore(), clock=clock)


def test_replica_a_mints_and_forgets_replica_b_finishes(lb, clock):
    first = lb.handle(deploy(), principal="bob")
    assert first.replica == "A"
    clock.advance(8)
    ticket = first.exchange.response["result"]["requestState"]
    second = lb.handle(deploy(id=2, requestState=ticket, inputResponses=ACCEPT), principal="bob")
    assert second.replica == "B"
    assert second.exchange.response["result"]["content"][0]["text"] == "deployed to staging"
    assert lb.replicas["A"] is not lb.replicas["B"]


def test_a_replay_is_refused_on_any_replica_because_the_store_is_shared(lb, clock):
    ticket = lb.handle(deploy(), principal="bob").exchange.response["result"]["requestState"]
    retry = deploy(id=2, requestState=ticket, inputResponses=ACCEPT)
    assert "result" in lb.handle(retry, principal="bob", replica="B").exchange.response
    for name in ("A", "B"):
        assert_frozen_rejection(lb.handle(retry, principal="bob", replica=name).exchange.response)


def test_replicas_with_another_key_cannot_finish(clock):
    a = cluster(1, ring=KeyRing(["a" * 40]), store=MemoryStore(), clock=clock)
    b = cluster(1, ring=KeyRing(["b" * 40]), store=MemoryStore(), clock=clock)
    ticket = a.handle(deploy(), principal="bob").exchange.response["result"]["requestState"]
    assert_frozen_rejection(b.handle(deploy(id=2, requestState=ticket, inputResponses=ACCEPT),
                                     principal="bob").exchange.response)


def test_the_lesson_figure_is_played_for_real(ring):
    steps = roundtrip(ring)
    assert [s.n for s in steps] == [1, 2, 3, 4, 5, 6]
    assert [s.replica for s in steps] == ["A", "A", None, "B", "B", "B"]
    assert steps[1].lines[0].message["result"]["resultType"] == "input_required"
    assert steps[3].lines[0].message["id"] != steps[0].lines[0].message["id"]
    assert steps[4].lines[0].message["result"]["content"][0]["text"] == "deployed to staging"
    assert {c["outcome"] for c in steps[4].checks} == {"pass"}
    assert steps[5].checks[0] == {"check": "signature", "outcome": "fail", "detail": steps[5].checks[0]["detail"],
                                  "why": ""}
    assert_frozen_rejection(steps[5].lines[1].message)


RING = KeyRing(["jti-test-key-0123456789abcdefghijklmnop"])


def _sequence():
    counter = itertools.count(1)
    return lambda: f"demo-{next(counter):04d}"


def test_roundtrip_replays_byte_for_byte() -> None:
    def run() -> list:
        return [(s.n, [line.message for line in s.lines]) for s in roundtrip(RING, jti=_sequence())]

    assert run() == run()
