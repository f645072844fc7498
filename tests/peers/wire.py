"""Plain JSON-RPC by hand, for the ground-truth tests: no checker, no SDK client, nothing of ours in between.

`play(peer, slug)` sends one move the long way (mint as bob, then the move's retry) and returns the
outcome read off the wire: "completed", "refused" (a JSON-RPC error or an isError result) or
"asked-again" (input_required once more). Owns the wire only; expectations live in expectations.toml.
"""

from __future__ import annotations

import base64
import json
import queue
import subprocess
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from tests.peers.launch import HttpPeer, StdioPeer, stop

VERSION = "2026-07-28"
ARGS = {"env": "staging"}
OTHER_ARGS = {"env": "prod"}
ACCEPT = {"confirm": {"action": "accept", "content": {"confirm": True}}}
TIMEOUT = 30.0
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "mrtr-peers-by-hand", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}


def call(rid: int, arguments: dict[str, Any], *, state: str | None = None,
         answers: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "deploy", "arguments": arguments, "_meta": META}
    if state is not None:
        params["requestState"] = state
    if answers is not None:
        params["inputResponses"] = answers
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def http_send(peer: HttpPeer, principal: str, message: dict[str, Any]) -> dict[str, Any]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "Mcp-Method": message["method"],
        "Authorization": f"Bearer {peer.tokens[principal]}",
    }
    if message["method"] == "tools/call":
        headers["Mcp-Name"] = message["params"]["name"]
    request = urllib.request.Request(peer.url, json.dumps(message).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        body = error.read()
    return json.loads(body)


@dataclass
class StdioSession:
    """One peer process for one principal; lines in, lines out."""

    peer: StdioPeer
    principal: str
    proc: subprocess.Popen = field(init=False)
    lines: queue.Queue = field(init=False, default_factory=queue.Queue)
    reader: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self.proc = subprocess.Popen(self.peer.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=self.peer.env(self.principal), text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.lines.get(timeout=TIMEOUT)
            if line is None:
                raise RuntimeError(f"{self.peer.name} closed its stdout")
            reply = json.loads(line)
            if reply.get("id") == message["id"]:
                return reply

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        stop(self.proc)
        self.reader.join(timeout=TIMEOUT)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class Hand:
    """Sends as bob or alice to one peer: one HTTP endpoint, or one stdio process per principal."""

    def __init__(self, peer: HttpPeer | StdioPeer) -> None:
        self.peer = peer
        self.sessions: dict[str, StdioSession] = {}

    def send(self, principal: str, message: dict[str, Any]) -> dict[str, Any]:
        if isinstance(self.peer, HttpPeer):
            return http_send(self.peer, principal, message)
        if principal not in self.sessions:
            self.sessions[principal] = StdioSession(self.peer, principal)
        return self.sessions[principal].send(message)

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()


def outcome(reply: dict[str, Any]) -> str:
    if "error" in reply:
        return "refused"
    result = reply["result"]
    if result.get("resultType") == "input_required":
        return "asked-again"
    return "refused" if result.get("isError") else "completed"


def edited(ticket: str) -> str:
    """The move's ticket edit: a readable payload gets staging -> prod with the old signature; else one flipped char."""
    parts = ticket.split(".")
    if len(parts) == 3:
        try:
            payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)).decode()
        except ValueError:
            payload = ""
        if '"staging"' in payload:
            body = base64.urlsafe_b64encode(payload.replace('"staging"', '"prod"', 1).encode()).rstrip(b"=").decode()
            return f"{parts[0]}.{body}.{parts[2]}"
    middle = len(ticket) // 2
    return ticket[:middle] + ("A" if ticket[middle] != "A" else "B") + ticket[middle + 1:]


@dataclass
class Played:
    outcome: str
    minted: dict[str, Any]
    replies: list[dict[str, Any]]


def play(peer: HttpPeer | StdioPeer, slug: str) -> Played:
    """Mint as bob with deploy {env: staging}, then send the move `slug` by hand."""
    hand = Hand(peer)
    try:
        minted = hand.send(peer.owner, call(1, ARGS))
        assert minted.get("result", {}).get("resultType") == "input_required", minted
        ticket = minted["result"]["requestState"]
        honest = call(2, ARGS, state=ticket, answers=ACCEPT)
        sends: list[tuple[str, dict[str, Any]]]
        if slug == "honest":
            sends = [(peer.owner, honest)]
        elif slug == "tampered":
            sends = [(peer.owner, call(2, ARGS, state=edited(ticket), answers=ACCEPT))]
        elif slug == "stolen":
            sends = [(peer.other, honest)]
        elif slug == "late":
            peer.clock.advance(peer.ttl + 5)
            sends = [(peer.owner, honest)]
        elif slug == "other-request":
            sends = [(peer.owner, call(2, OTHER_ARGS, state=ticket, answers=ACCEPT))]
        elif slug == "no-answer":
            sends = [(peer.owner, call(2, ARGS, state=ticket))]
        elif slug == "twice":
            sends = [(peer.owner, honest), (peer.owner, {**honest, "id": 3})]
        else:
            raise ValueError(f"unknown move {slug!r}")
        replies = [hand.send(principal, message) for principal, message in sends]
        return Played(outcome(replies[-1]), minted, replies)
    finally:
        hand.close()


def probes(peer: HttpPeer | StdioPeer, played: dict[str, Played]) -> dict[str, Any]:
    """The protocol probes, by hand, plus two facts read off the moves already played (`played`, by slug).

    capability        "refused-32021" (with data.requiredCapabilities) | "asked-anyway" | "other"
    version           "refused-32022" (with data.supported) | "served" | "other"
    uniform-refusals  every refused ticket move got the same error object apart from its id
    result-type       every result of every move carried resultType
    """
    hand = Hand(peer)
    try:
        bare = call(91, ARGS)
        bare["params"]["_meta"] = {**META, "io.modelcontextprotocol/clientCapabilities": {}}
        reply = hand.send(peer.owner, bare)
        error = reply.get("error") or {}
        if error.get("code") == -32021 and isinstance((error.get("data") or {}).get("requiredCapabilities"), dict):
            capability = "refused-32021"
        elif reply.get("result", {}).get("resultType") == "input_required":
            capability = "asked-anyway"
        else:
            capability = "other"
        ancient = call(92, ARGS)
        ancient["params"]["_meta"] = {**META, "io.modelcontextprotocol/protocolVersion": "1900-01-01"}
        reply = hand.send(peer.owner, ancient)
        error = reply.get("error") or {}
        if error.get("code") == -32022 and isinstance((error.get("data") or {}).get("supported"), list):
            version = "refused-32022"
        else:
            version = "served" if "result" in reply else "other"
    finally:
        hand.close()
    shapes = set()
    for slug, move in played.items():
        if slug in ("honest", "no-answer") or move.outcome != "refused":
            continue
        last = move.replies[-1]
        shape = {"error": last["error"]} if "error" in last else {"isError": last["result"].get("content")}
        shapes.add(json.dumps(shape, sort_keys=True))
    results = [r["result"] for m in played.values() for r in (m.minted, *m.replies) if "result" in r]
    return {"capability": capability, "version": version, "uniform-refusals": len(shapes) <= 1,
            "result-type": all("resultType" in result for result in results)}
