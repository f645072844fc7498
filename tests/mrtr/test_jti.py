"""An injected ticket-id generator makes minting replayable; without one, ids stay random."""

from __future__ import annotations

import itertools

from mrtr import FakeClock, KeyRing, MemoryStore, Server, TicketCodec
from mrtr_toolsets.lesson import lesson_catalog

RING = KeyRing(["jti-test-key-0123456789abcdefghijklmnop"])


def _sequence():
    counter = itertools.count(1)
    return lambda: f"demo-{next(counter):04d}"


def _claims(codec: TicketCodec) -> dict:
    return codec.claims(now=1_790_000_000, sub="bob", method="tools/call", target="deploy",
                        arguments={"env": "staging"}, work={"env": "staging"}, step="confirm")


def test_default_ids_are_random() -> None:
    codec = TicketCodec(RING)
    assert _claims(codec)["jti"] != _claims(codec)["jti"]


def test_injected_ids_are_used_in_order() -> None:
    codec = TicketCodec(RING, jti=_sequence())
    assert [_claims(codec)["jti"] for _ in range(2)] == ["demo-0001", "demo-0002"]


def test_server_mints_the_same_ticket_twice_with_a_sequence() -> None:
    def ticket() -> str:
        clock = FakeClock(1_790_000_000)
        server = Server(ring=RING, store=MemoryStore(), clock=clock, catalog=lesson_catalog(), jti=_sequence())
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "deploy", "arguments": {"env": "staging"}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}}}
        return server.handle(message, principal="bob").response["result"]["requestState"]

    assert ticket() == ticket()


def test_with_policy_keeps_the_sequence() -> None:
    server = Server(ring=RING, store=MemoryStore(), clock=FakeClock(), catalog=lesson_catalog(), jti=_sequence())
    assert server.with_policy(server.policy).codec.jti is server.codec.jti
