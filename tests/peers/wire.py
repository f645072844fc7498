"""Plain JSON-RPC by hand, for the ground-truth tests: no checker, no SDK client, nothing of ours in between.

`play(peer, move)` sends one move of moves/moves.toml the long way (mint as bob, its `before` move's retry,
then its own: every answer kind, ticket edit and junk shape written out here by hand) and returns the outcome
read off the wire: "completed", "ended" (a complete result without the work, for an answer that is no yes),
"refused" (a JSON-RPC error or an isError result), "asked-again" (input_required once more), or "not-run" where
the checker could not show the move either. Owns the wire only; expectations live in expectations.toml.
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

from moves.catalog import JUNK_SHAPES, NEAR_EXPIRY, Move, holds, load_moves
from moves.target import Outcome
from tests.peers.launch import OTHER, OWNER, HttpPeer, StdioPeer, stop

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
         answers: dict[str, Any] | None = None, tool: str = "deploy") -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments, "_meta": META}
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


#: The `answer` kinds of moves/moves.toml, written out by hand for deploy's one question (confirm: boolean),
#: sent under the key the peer chose for it ("confirm", or the Python SDK's resolver name).
ANSWERS: dict[str, dict[str, Any] | None] = {
    "accept": ACCEPT["confirm"],
    "none": None,
    "decline": {"action": "decline"},
    "cancel": {"action": "cancel"},
    "wrong-type": {"action": "accept", "content": {"confirm": "yes"}},
    "missing-key": {"action": "accept", "content": {}},
}


def answers(kind: str, keys: list[str]) -> dict[str, Any] | None:
    if kind == "wrong-key":  # the yes under keys never asked
        return {f"{key}-never-asked": ANSWERS["accept"] for key in keys}
    if kind == "extra-key":  # an unknown key first, then the yes
        return {"never-asked": {"action": "accept", "content": {}}, **{key: ANSWERS["accept"] for key in keys}}
    answer = ANSWERS[kind]
    return None if answer is None else {key: answer for key in keys}
NOT_A_YES = ("decline", "cancel", "wrong-type", "missing-key")
#: How every peer here begins its answer when it does the work (the by-hand stand-in for comparing with an
#: accepted call); the mutation suite's servers go on with the deploy's number and id.
WORK = "deployed to staging"


def read(reply: dict[str, Any], answer: str) -> str:
    """The outcome of one reply, by hand; for an answer that is no yes, a complete result is "completed" only
    when it is the work itself, else "ended"."""
    seen = outcome(reply)
    if seen == "completed" and answer in NOT_A_YES:
        texts = [c.get("text") for c in reply["result"].get("content", []) if isinstance(c, dict)]
        return "completed" if len(texts) == 1 and str(texts[0]).startswith(WORK) else "ended"
    return seen


def _mint(hand: Hand, peer: HttpPeer | StdioPeer) -> tuple[dict[str, Any], str]:
    minted = hand.send(peer.owner, call(1, ARGS))
    assert minted.get("result", {}).get("resultType") == "input_required", minted
    return minted, minted["result"]["requestState"]


def _second_tool(hand: Hand, peer: HttpPeer | StdioPeer) -> str | None:
    """Another listed tool taking {env} that asks for input when bob calls it with deploy's arguments, or None."""
    listed = hand.send(peer.owner, {"jsonrpc": "2.0", "id": 40, "method": "tools/list", "params": {"_meta": META}})
    for tool in listed.get("result", {}).get("tools", []):
        required = tool.get("inputSchema", {}).get("required", [])
        if tool.get("name") == "deploy" or set(required) - set(ARGS) or "env" not in tool.get("inputSchema", {}).get(
                "properties", {}):
            continue
        asked = hand.send(peer.owner, call(41, ARGS, tool=tool["name"])).get("result", {})
        if asked.get("resultType") == "input_required" and asked.get("requestState"):
            return str(tool["name"])
    return None


def _keys(minted: dict[str, Any]) -> list[str]:
    return list(minted["result"].get("inputRequests") or {"confirm": None})


def _edited_each(ticket: str) -> list[tuple[str, bool]]:
    """Each top-level field of a readable payload changed in turn, old signature kept: (ticket, sent by the other
    principal). Numbers an hour on, the owner's name turned into the other's, other text with its last character
    changed, an object's first text field; an unreadable ticket gets one flipped character."""
    parts = ticket.split(".")
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))) if len(parts) == 3 \
            else None
    except ValueError:
        claims = None
    if not isinstance(claims, dict):
        return [(edited(ticket), False)]

    def changed(value: Any) -> tuple[Any, bool] | None:
        if isinstance(value, bool):
            return not value, False
        if isinstance(value, int | float):
            return value + 3600, False
        if isinstance(value, str):
            if value == OWNER:
                return OTHER, True
            return (value[:-1] + ("B" if value[-1:] == "A" else "A")) if value[-1:].isalnum() else value + "A", False
        if isinstance(value, dict):
            inner = next(((k, v) for k, v in value.items() if isinstance(v, str)), None)
            return ({**value, inner[0]: changed(inner[1])[0]}, False) if inner else None  # type: ignore[index]
        return None

    out = []
    for name, value in claims.items():
        edit = changed(value)
        if edit is not None:
            body = base64.urlsafe_b64encode(json.dumps({**claims, name: edit[0]}).encode()).rstrip(b"=").decode()
            out.append((f"{parts[0]}.{body}.{parts[2]}", edit[1]))
    return out


def _unsigned(ticket: str) -> list[str]:
    head = ticket.rpartition(".")[0]
    return [f"{head}.", head] if head else [ticket + ".", ticket[: len(ticket) // 2]]


def _senders(move: Move, ticket: str) -> list[bool]:
    """Whether the other principal sends each of the move's retries (an edit of the owner's name is sent by the
    other), in the order of `_retries`."""
    if move.ticket == "edit-each":
        return [other for _, other in _edited_each(ticket)]
    return [move.sender == "other"] * len(_retries(move, ticket, ["confirm"]))


def _retries(move: Move, ticket: str, keys: list[str], tool: str = "deploy") -> list[dict[str, Any]]:
    """The move's retries as plain JSON-RPC: one, one per junk shape, or the move's copies (sent here one after
    another: the by-hand truth is about what a peer does with each, not about a race); to `tool`."""
    arguments = OTHER_ARGS if move.request == "other" else ARGS
    rid = move.request_id if move.request_id is not None else 3
    tickets: list[str | None]
    if move.ticket == "junk":
        tickets = [shape.replace("{prefix}", ticket.partition(".")[0][:16]) for _, shape in JUNK_SHAPES]
    elif move.ticket == "absent":
        tickets = [None]  # answers, and no requestState at all
    elif move.ticket == "edit-each":
        tickets = [edit for edit, _ in _edited_each(ticket)]
    elif move.ticket == "unsigned":
        tickets = list(_unsigned(ticket))
    else:
        tickets = [edited(ticket) if move.ticket == "edit-work" else ticket]
    if move.copies > 1:
        ids = [rid if move.copy_ids == "same" else rid * 100 + n for n in range(1, move.copies + 1)]
        return [call(i, arguments, state=tickets[0], answers=answers(move.answer, keys), tool=tool) for i in ids]
    return [call(rid, arguments, state=sent, answers=answers(move.answer, keys), tool=tool) for sent in tickets]


def _send(hand: Hand, peer: HttpPeer | StdioPeer, move: Move, ticket: str, keys: list[str], tool: str = "deploy"
          ) -> tuple[str, list[dict[str, Any]]]:
    """Send the move's own retries; the outcome is the first that does not hold, else the last."""
    replies = [hand.send(peer.other if other else peer.owner, message)
               for message, other in zip(_retries(move, ticket, keys, tool), _senders(move, ticket), strict=True)]
    seen = [read(reply, move.answer) for reply in replies]
    if move.copies > 1:  # exactly one copy may do the work; the outcome is then the others'
        done = seen.count("completed")
        if done != 1:
            return ("completed" if done else seen[0]), replies
        seen.remove("completed")
    return next((o for o in seen if not holds(move.expect, Outcome(o))[0]), seen[-1]), replies


def play(peer: HttpPeer | StdioPeer, move: Move | str) -> Played:
    """Mint as bob with deploy {env: staging}, then send the move (a catalogue Move, or a slug) by hand, its
    `before` move first. Returns "not-run" where the checker cannot show the move either: the before move did
    not get its expectation, or (for the other principal's move) the owner's own honest retry from a second
    process or connection is refused too."""
    if isinstance(move, str):
        found = next((m for m in load_moves() if m.slug == move), None)
        if found is None:
            raise ValueError(f"unknown move {move!r}")
        move = found
    hand = Hand(peer)
    try:
        minted, ticket = _mint(hand, peer)
        keys = _keys(minted)
        replies: list[dict[str, Any]] = []
        first = move.before
        if first is not None:
            on = _mint(hand, peer)[1] if move.before_ticket == "new" else ticket
            seen, earlier = _send(hand, peer, first, on, keys)
            replies += earlier
            if not holds(first.expect, Outcome(seen))[0]:
                if move.before_ticket == "new" and not holds(move.expect, Outcome(seen))[0]:
                    return Played(seen, minted, replies)
                return Played("not-run", minted, replies)
        if move.timing == "past-expiry":
            peer.clock.advance(peer.ttl + 5)
        elif move.timing == "near-expiry":  # late in the ticket's life, still in time
            peer.clock.advance(peer.ttl * NEAR_EXPIRY)
        tool = "deploy"
        if move.request == "other-tool":  # another tool that asks, with the same arguments; none: not shown
            second = _second_tool(hand, peer)
            if second is None:
                return Played("not-run", minted, replies)
            tool = second
        seen, mine = _send(hand, peer, move, ticket, keys, tool)
        replies += mine
        if move.sender == "other" and holds(move.expect, Outcome(seen))[0] and not _owner_again(peer):
            return Played("not-run", minted, replies)
        return Played(seen, minted, replies)
    finally:
        hand.close()


def _owner_again(peer: HttpPeer | StdioPeer) -> bool:
    """Whether the owner's honest retry of a fresh call works from a second process (stdio) or connection."""
    again = Hand(peer)
    try:
        minted, ticket = _mint(again, peer)
        second = Hand(peer)
        try:
            retry = call(3, ARGS, state=ticket, answers=answers("accept", _keys(minted)))
            return outcome(second.send(peer.owner, retry)) == "completed"
        finally:
            second.close()
    finally:
        again.close()


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
    expects = {m.slug: m for m in load_moves()}
    for slug, move in played.items():
        if expects[slug].expect != Outcome.REFUSED or move.outcome in ("not-run", "completed") \
                or not expects[slug].refused_by:  # a malformed answer's refusal is meant to differ
            continue
        before = expects[slug].before
        own = move.replies[len(_retries(before, "x.y", ["confirm"])) if before else 0:]
        for last in own:
            if "error" in last or last.get("result", {}).get("isError"):
                shape = {"error": {k: v for k, v in last["error"].items()}} if "error" in last \
                    else {"isError": last["result"].get("content")}
                shapes.add(json.dumps(shape, sort_keys=True))
    results = [r["result"] for m in played.values() for r in (m.minted, *m.replies) if "result" in r]
    return {"capability": capability, "version": version, "uniform-refusals": len(shapes) <= 1,
            "result-type": all("resultType" in result for result in results)}
