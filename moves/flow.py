"""Following a flow as an honest client: round one as the owner, each new question answered (from its schema or the
author's `--answers`), a result carrying only requestState retried with it (load shedding), up to the round a move is
played on (`mint_round`) or to the flow's end (`_walk`), bounded by MAX_ROUNDS. Stops, saying why, at a question the
checker cannot answer; never judges a move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mrtr import JSONObject, as_object

from .answers import answers_for, supplied_answers, unanswerable
from .calls import MINT_ID, Call, Step, modern_request, outcome_of, reply_text
from .target import Reply, Role, Target

#: The most round trips one flow may take, state-only retries included (the TypeScript SDK's shim stops at 8,
#: its client and the Python client at 10).
MAX_ROUNDS = 8
#: JSON-RPC ids of the honest retries that carry a flow on to its next round (plus the hop's number).
FOLLOW_ID = 50


def asked_of(reply: Reply) -> tuple[str | None, JSONObject] | None:
    """An input_required result's (requestState or None, inputRequests), or None when the reply is no such result."""
    response = reply.response or {}
    result = as_object(response.get("result"))
    if "error" in response or result.get("resultType") != "input_required":
        return None
    ticket = result.get("requestState")
    return (ticket if isinstance(ticket, str) and ticket else None), as_object(result.get("inputRequests"))




def _keys(requests: JSONObject) -> str:
    return ", ".join(repr(str(k)[:40]) for k in list(requests)[:4]) or "nothing"


@dataclass
class Walk:
    """How far an honest flow went from one reply: the steps sent after it, the last reply, and either the round
    reached (its ticket and questions, when one was asked for), the flow's end, or why the checker stopped."""

    steps: list[Step]
    last: Step
    round: int
    ticket: str | None = None
    requests: JSONObject = field(default_factory=dict)
    #: Each round's questions, round one first.
    rounds: list[JSONObject] = field(default_factory=list)
    #: Every question key asked in the flow so far.
    seen: set[str] = field(default_factory=set)
    #: Why the checker, not the server, stopped the flow (a question it cannot answer, the round bound), or "".
    stuck: str = ""


def _walk(target: Target, call: Call, role: Role, step: Step, *, seen: set[str], round_n: int,
          arguments: JSONObject, until: int | None = None, label: str = "") -> Walk:
    """Carry a flow on from `step`'s reply as an honest client: a question under a key not asked before in this
    flow (`seen`) is the next round, answered from its schema or the author's `--answers`; a result carrying only
    requestState is retried with it and no answers (load shedding). Questions under keys already asked are the
    same questions asked again (a missing answer, or a server starting over), never a new round. Stops at round
    `until` before answering it, at the flow's end (anything but input_required with a ticket), at a question asked
    again, or at the bound."""
    steps: list[Step] = []
    rounds: list[JSONObject] = []
    seen = set(seen)
    honest_sent = False
    for hop in range(MAX_ROUNDS + 1):
        got = asked_of(step.reply)
        if got is None or got[0] is None:
            return Walk(steps, step, round_n, rounds=rounds, seen=seen)
        ticket, requests = got
        if requests and set(map(str, requests)) <= seen:
            stuck = ""
            if honest_sent:
                stuck = (f"round {round_n} asks {_keys(requests)} again after the checker's answers, so the flow "
                         f"cannot go on; pass the answers the server accepts with --answers "
                         f"'{{\"{round_n}\": {{\"{str(next(iter(requests)))[:40]}\": ...}}}}'")
            return Walk(steps, step, round_n, ticket, requests, rounds, seen, stuck)
        if requests:
            round_n += 1
            rounds.append(requests)
            seen |= set(map(str, requests))
            if until is not None and round_n >= until:
                return Walk(steps, step, round_n, ticket, requests, rounds, seen)
            if round_n > MAX_ROUNDS:
                break
        if hop == MAX_ROUNDS:
            break
        answers = None
        if requests:
            supplied = supplied_answers(call, round_n)
            why = unanswerable(requests, supplied)
            if why is not None:
                return Walk(steps, step, round_n, ticket, requests, rounds, seen,
                            f"round {round_n} asks {why}, which the checker cannot answer by itself; pass its answer "
                            f"with --answers '{{\"{round_n}\": {{\"{str(next(iter(requests)))[:40]}\": ...}}}}'")
            answers = answers_for(requests, supplied)
        params: JSONObject = {"name": call.tool, "arguments": arguments, "requestState": ticket}
        if answers is not None:
            params["inputResponses"] = answers
        message = modern_request(FOLLOW_ID + hop, "tools/call", params, call)
        what = f"round {round_n} answered" if answers is not None else "state-only retry"
        step = Step(role, step.at, message, target.send(role, message), f"{label}{what}")
        steps.append(step)
        honest_sent = True
    return Walk(steps, step, round_n, rounds=rounds, seen=seen,
                stuck=f"the flow went on past {MAX_ROUNDS} rounds, so the checker stopped following it")


@dataclass
class Minted:
    """Round one as the owner, carried on honestly to the round a move is played on."""

    first: Step
    #: The round's ticket and questions; None when there is none (then `why` says why).
    ticket: str | None
    requests: JSONObject
    why: str = ""
    #: The steps after the first (honest answers to earlier rounds, state-only retries).
    hops: list[Step] = field(default_factory=list)
    #: True when the checker, not the server, stopped short (a question it cannot answer): not-run, never a fail.
    stuck: bool = False
    #: Every question key asked up to this round.
    seen: set[str] = field(default_factory=set)
    #: The questions of each round up to this one.
    rounds: list[JSONObject] = field(default_factory=list)
    #: True when the checker stopped following the flow (not when the flow simply ended before the round).
    walk_stuck: bool = False


def mint_round(target: Target, call: Call, at: float = 0.0, label: str = "round one", round_n: int = 1) -> Minted:
    """Call the tool as the owner and carry the flow honestly to round `round_n` (state-only retries followed)."""
    first = modern_request(MINT_ID, "tools/call", {"name": call.tool, "arguments": call.arguments}, call)
    step = Step("owner", at, first, target.send("owner", first), label)
    walk = _walk(target, call, "owner", step, seen=set(), round_n=0, arguments=call.arguments, until=round_n,
                 label=f"{label}: ")
    if walk.stuck:
        return Minted(step, None, {}, walk.stuck, walk.steps, True, rounds=walk.rounds, walk_stuck=True)
    if walk.ticket is None or walk.round < round_n:
        if walk.round == 0:
            last = walk.last.reply
            why = last.transport_error or reply_text(last, outcome_of(last))
            return Minted(step, None, {}, f"round one did not answer input_required with a requestState: {why}",
                          walk.steps)
        return Minted(step, None, {}, f"the flow ended after {walk.round} round{'s' * (walk.round != 1)}, so "
                                      f"there is no round {round_n} to play this move on", walk.steps, True,
                      rounds=walk.rounds)
    return Minted(step, walk.ticket, walk.requests, "", walk.steps, False, walk.seen, walk.rounds)
