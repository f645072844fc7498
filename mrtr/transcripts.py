"""Live transcripts for the lesson: the round trip across replicas, the ticket's anatomy, the lab.

Every line here is produced by a real exchange with a real server at the moment it is asked for,
so the lesson can never show what the server does not do. The key ring is the caller's; clocks
and redeemed stores are private to each run, so runs are independent and repeatable.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .client import Client, ClientError, InMemoryTransport, Line, Transport
from .clock import FakeClock
from .keys import KeyRing
from .replicas import cluster
from .scenario import ACCEPT, deploy_call, edit_env
from .server import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION, Server
from .store import MemoryStore
from .tickets import SIGNED_PREFIX, TicketCodec

__all__ = ["Line", "RoundTripStep", "Scene", "anatomy", "lab_scenes", "roundtrip", "run_lab", "tamper_one_char"]

#: A fixed instant for figures, so the same ring always draws the same times.
FIGURE_EPOCH = 1_790_000_000.0


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
    call = deploy_call(2, env)
    first = lb.handle(call, principal="bob")  # round robin: replica A
    answer = first.exchange.response or {}
    ticket = answer.get("result", {}).get("requestState", "")
    question = answer.get("result", {}).get("inputRequests", {}).get("confirm", {})
    clock.advance(8)
    retry = deploy_call(3, env, ticket=ticket, answers=copy.deepcopy(ACCEPT))
    second = lb.handle(retry, principal="bob")  # round robin: replica B
    forged = deploy_call(4, env, ticket=edit_env(ticket, "prod"), answers=copy.deepcopy(ACCEPT))
    third = lb.handle(forged, principal="bob", replica="B")

    def checks(exchange: Any) -> list[dict[str, str]] | None:
        return exchange.trace.as_dicts() if exchange.trace and exchange.trace.checks else None

    return [
        RoundTripStep(1, "The client calls deploy", first.replica, [Line("-->", call, "through the load balancer")],
                      None, "sent"),
        RoundTripStep(2, "Replica A answers input_required and forgets", first.replica,
                      [Line("<--", answer, "the question, and the work sealed in a ticket")], None, "input_required"),
        RoundTripStep(3, "The host asks the user", None,
                      [Line("<--", question, "what the user is shown"),
                       Line("-->", ACCEPT["confirm"], "what the user answered")], None, "answered"),
        RoundTripStep(4, "The client retries with a new id", second.replica,
                      [Line("-->", retry, "new id, the answer, the ticket byte for byte")], None, "sent"),
        RoundTripStep(5, "Replica B checks the ticket and finishes", second.replica,
                      [Line("<--", second.exchange.response or {}, "B had never seen this deploy")],
                      checks(second.exchange), "complete"),
        RoundTripStep(6, "The other ending: an edited ticket", third.replica,
                      [Line("-->", forged, "staging edited to prod in the payload"),
                       Line("<--", third.exchange.response or {}, "the signature no longer matches")],
                      checks(third.exchange), "refused"),
    ]


def anatomy(ring: KeyRing, *, env: str = "staging") -> dict[str, Any]:
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


@dataclass
class Scene:
    key: str
    title: str
    lines: list[Line]
    ok: bool
    expected: str


def tamper_one_char(token: str) -> str:
    """Change one character in the middle of a ticket to another valid base64url character."""
    middle = len(token) // 2
    while token[middle] == ".":
        middle += 1
    replacement = "A" if token[middle] != "A" else "B"
    return token[:middle] + replacement + token[middle + 1:]


def _modern(client: Client) -> bool:
    client.connect()
    result = client.call_tool("deploy", {"env": "staging"})
    return client.era == "modern" and result.get("content", [{}])[0].get("text") == "deployed to staging"


def _legacy(client: Client) -> bool:
    client.connect(prefer="legacy")
    result = client.call_tool("deploy", {"env": "staging"})
    asked = any(line.message.get("method") == "elicitation/create" for line in client.transcript)
    return asked and result.get("content", [{}])[0].get("text") == "deployed to staging"


def _version(client: Client) -> bool:
    meta = {META_VERSION: "1900-01-01", META_CAPABILITIES: {}, META_CLIENT_INFO: client.client_info}
    response = client.request("tools/list", {"_meta": meta})
    error = response.get("error", {})
    return error.get("code") == -32022 and "2026-07-28" in error.get("data", {}).get("supported", [])


def _tampered(client: Client) -> bool:
    params = {"name": "deploy", "arguments": {"env": "staging"}, "_meta": client.meta()}
    first = client.request("tools/call", params)
    ticket = first.get("result", {}).get("requestState", "")
    retry = {**params, "inputResponses": copy.deepcopy(ACCEPT), "requestState": tamper_one_char(ticket)}
    second = client.request("tools/call", retry, note="one character of the ticket changed")
    return bool(ticket) and second.get("error", {}).get("code") == -32602


SCENES: tuple[tuple[str, str, str, Callable[[Client], bool]], ...] = (
    ("modern", "Modern (2026-07-28): probe, call, input_required, retry, complete",
     "deployed to staging", _modern),
    ("legacy", "Legacy (2025-11-25): initialize, call, the server asks, the answer, the result",
     "deployed to staging, asked through elicitation/create", _legacy),
    ("version", "An unsupported protocol version (1900-01-01)", "-32022 listing the supported versions", _version),
    ("tampered", "A ticket with one character changed", "-32602 Invalid or expired requestState", _tampered),
)


def run_lab(transport_for: Callable[[str], Transport], *, close: Callable[[Transport], None] | None = None
            ) -> list[Scene]:
    """Play the four lab scenes, each on a fresh transport from `transport_for(scene_key)`."""
    scenes = []
    for key, title, expected, body in SCENES:
        transport = transport_for(key)
        client = Client(transport, timeout=10.0)
        try:
            ok = body(client)
        except ClientError:
            ok = False
        finally:
            if close:
                close(transport)
        scenes.append(Scene(key, title, client.transcript, ok, expected))
    return scenes


def lab_scenes(ring: KeyRing | None = None) -> list[Scene]:
    """The lab played in process against a real server (fixed demo key unless a ring is given)."""
    ring = ring or KeyRing(["mrtr-lab-demo-key-not-a-secret-0000000000"])
    server = Server(ring=ring, store=MemoryStore(), clock=FakeClock(FIGURE_EPOCH))
    return run_lab(lambda key: InMemoryTransport(server.connect("bob")))


def dumps(message: Any) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)
