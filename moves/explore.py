"""The exploration: beside the catalogue's moves (one more job of their schedule, moves/playing.py) or after them,
the checker records one honest flow (every round's request, ticket and answers), then plays every variation of
moves/variations.py on EACH round of it, on fresh flows, and judges each reply by the invariants of
moves/invariants.py. A variation that breaks one is shrunk to the fewest changes
that still break it, and reported as a `Finding` with its exchange and the invariant's "Fix:".

"Progress" is what a variation must not get: the honest flow's work (its complete result, ids and numbers
masked), or the honest flow's next round (a fresh ticket with the next round's questions). When the honest
flow's answers were guesses and its result cannot be told from a no's, the work cannot be judged: such
variations are counted as not judged, with the `--answers` hint, never a finding.

Every round's ticket for the expiry variation is minted as it starts, and one wait past the latest expiry at the
end covers them all. The number of calls is bounded (`budget`) and reported. Nothing here renders a report or
imports Flask.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from mrtr import JSONObject, as_object

from . import variations
from .answers import answers_for, guessed_fields, question_of, supplied_answers, unanswerable
from .calls import Call, Step, modern_request, outcome_of, reply_text, work_of
from .declared import undeclared
from .flow import asked_of
from .forgery import readable_expiry
from .invariants import INVARIANTS
from .replays import cached_step
from .target import Outcome, Reply, Role, Target
from .variations import (
    ABSENT,
    EARLIER,
    OTHER_TOOLS,
    OTHERS,
    Change,
    Context,
    Judge,
    Phase,
    Retry,
    Variation,
    ticket_parts,
)

#: The calls an exploration makes at most, unless `--budget` says otherwise.
DEFAULT_BUDGET = 600
#: The most hops of an honest flow explored, and the copies of a burst.
MAX_HOPS, COPIES = 8, 4
_FIRST_ID = 700


@dataclass
class Hop:
    """One round of the honest flow: the ticket handed out, the questions asked with it, the answers sent back."""

    ticket: str
    questions: JSONObject
    answers: JSONObject | None


@dataclass
class Flow:
    hops: list[Hop]
    steps: list[Step]
    final: Step | None
    why: str = ""  # why the flow could not be recorded or finished ("" when it could)
    #: The honest work, masked (None when it cannot be told from a no's result: the answers were guesses).
    work: str | None = None
    guess: str = ""  # where the honest answers were guesses, in words


@dataclass
class Finding:
    invariant: str
    round: int  # 1-based round of the honest flow
    part: str
    variation: str  # the smallest set of changes that broke the invariant
    detail: str  # what the server did
    steps: list[Step] = field(default_factory=list)
    #: True when an option excuses the invariant (--allow-replay: `once`): a warning, not a failure.
    excused: bool = False

    @property
    def rule(self) -> str:
        return INVARIANTS[self.invariant].rule

    @property
    def fix(self) -> str:
        return INVARIANTS[self.invariant].fix


@dataclass
class Exploration:
    findings: list[Finding] = field(default_factory=list)
    calls: int = 0
    played: int = 0  # variations played
    rounds: int = 0
    not_judged: list[str] = field(default_factory=list)  # why some variations could not be judged
    over_budget: int = 0  # variations not played for the budget
    why_not: str = ""  # why nothing was explored ("" when it was)
    #: Variations judged, by invariant slug: an invariant no variation was judged by is not shown to hold.
    judged: dict[str, int] = field(default_factory=dict)

    def count(self, invariant: str) -> None:
        self.judged[invariant] = self.judged.get(invariant, 0) + 1

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if not f.excused]


class _OverBudget(Exception):
    pass


class _Stopped(Exception):
    """The exploration stops: a request of its own was not answered in time, or the check stopped elsewhere."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _never() -> bool:
    return False


@dataclass
class _Run:
    target: Target
    call: Call
    budget: int
    out: Exploration
    next_id: int = _FIRST_ID
    #: Whether the check stopped elsewhere (a time-out in a move played beside the exploration).
    stopped: Callable[[], bool] = _never

    def _go(self, calls: int) -> None:
        if self.stopped():
            raise _Stopped("the check stopped (a request elsewhere was not answered in time)")
        if self.out.calls + calls > self.budget:
            raise _OverBudget

    def send(self, retry: Retry, label: str) -> Step:
        self._go(1)
        self.out.calls += 1
        self.next_id += 1
        # A variation of the id sends its own (an id of the honest flow); every other call a fresh one.
        message = message_of(self.call, retry, self.next_id if retry.request_id is None else retry.request_id)
        reply = self.target.send(retry.role, message)
        if reply.timed_out:  # one time-out is enough: never hundreds of calls waiting for a server that is gone
            raise _Stopped(f"a request was not answered in time ({reply.transport_error or 'no answer'})")
        return Step(retry.role, 0.0, message, reply, label)

    def burst(self, retry: Retry, copies: int) -> list[Step]:
        self._go(copies)
        self.out.calls += copies
        messages = [message_of(self.call, retry, self.next_id + n) for n in range(1, copies + 1)]
        self.next_id += copies
        send_burst: Callable[[Role, list[JSONObject]], list[Reply]] | None = getattr(self.target, "send_burst", None)
        replies = send_burst(retry.role, messages) if send_burst else [self.target.send(retry.role, m)
                                                                       for m in messages]
        return [Step(retry.role, 0.0, m, r, f"copy {n + 1} of {copies}") for n, (m, r) in
                enumerate(zip(messages, replies, strict=True))]


def message_of(call: Call, retry: Retry, request_id: int) -> JSONObject:
    """The JSON-RPC request a retry is: `tools/call` with its ticket and answers, and `_meta` with its
    capabilities (and any extra members a variation adds)."""
    params: JSONObject = {"name": retry.tool, "arguments": copy.deepcopy(retry.arguments)}
    if retry.state is not ABSENT:
        params["requestState"] = copy.deepcopy(retry.state)  # type: ignore[assignment]
    if retry.responses is not None:
        params["inputResponses"] = copy.deepcopy(retry.responses)
    message = modern_request(request_id, "tools/call", params, replace(call, capabilities=retry.capabilities))
    as_object(message["params"])["_meta"] = {**as_object(as_object(message["params"]).get("_meta")), **retry.meta}
    return message


# -- the honest flow ------------------------------------------------------------------------------------------


def _honest(call: Call, role: Role = "owner", tool: str | None = None) -> Retry:
    return Retry(role, tool or call.tool, dict(call.arguments), ABSENT, None, copy.deepcopy(call.capabilities))


def play_flow(run: _Run, role: Role = "owner", until: int | None = None, tool: str | None = None,
              hops_known: list[Hop] | None = None) -> Flow:
    """An honest flow as `role`: the first call, then each round answered (the author's answers, else from the
    schema), to its end or to hop `until` (its ticket handed out, not yet answered)."""
    retry = _honest(run.call, role, tool)
    step = run.send(retry, "honest: first call")
    flow = Flow([], [step], None)
    asked: set[str] = set()
    round_n = 0
    for _hop in range(MAX_HOPS + 1):
        why = undeclared(retry.capabilities, step.reply)
        got = asked_of(step.reply)
        if why or got is None or got[0] is None:
            flow.final, flow.why = step, why
            return flow
        ticket: str = got[0]
        questions = got[1]
        if questions and set(map(str, questions)) <= asked:
            flow.why = f"round {round_n} asks {', '.join(map(str, questions))} again after the checker's answers"
            return flow
        if questions:
            round_n += 1
            asked |= set(map(str, questions))
        supplied = supplied_answers(run.call, round_n)
        if questions and unanswerable(questions, supplied):
            flow.hops.append(Hop(ticket, questions, None))
            flow.why = f"round {round_n} asks {unanswerable(questions, supplied)}, which the checker cannot answer"
            return flow
        answers = answers_for(questions, supplied) if questions else None
        flow.hops.append(Hop(ticket, questions, answers))
        guessed = guessed_fields(questions, supplied) if questions else []
        if guessed and not flow.guess:
            flow.guess = f"round {round_n} asks for free text ({guessed[0]!r}), which the checker could only guess"
        if until is not None and len(flow.hops) > until:
            return flow
        retry = replace(retry, state=ticket, responses=answers)
        step = run.send(retry, f"honest: round {round_n} answered")
        flow.steps.append(step)
    flow.why = f"the flow went on past {MAX_HOPS} rounds"
    return flow


def _work_known(run: _Run, flow: Flow) -> str | None:
    """The honest flow's work, masked; None when a guessed answer's result matches a no's (a decline on the last
    round), since then the work cannot be told from a refusal."""
    assert flow.final is not None
    work = work_of(flow.final.reply)
    if not flow.guess or work is None:
        return work
    last = len(flow.hops) - 1
    fresh = play_flow(run, until=last)
    if len(fresh.hops) <= last:
        return None
    hop = fresh.hops[last]
    declined: JSONObject = {k: {"action": "decline"} for k in hop.questions}
    step = run.send(replace(_honest(run.call), state=hop.ticket, responses=declined), "a decline, to compare")
    return None if work_of(step.reply) == work else work


# -- judging ------------------------------------------------------------------------------------------------


def _keys(reply: Reply) -> set[str]:
    got = asked_of(reply)
    return set(map(str, got[1])) if got and got[0] else set()


def progress(flow: Flow, hop: int, reply: Reply) -> bool | None:
    """Whether a retry on hop `hop`'s ticket got what only an honest one may: the honest work, or the honest next
    round's questions with a fresh ticket. None when the work cannot be told apart (guessed answers)."""
    outcome = outcome_of(reply)
    if outcome == Outcome.COMPLETED:
        work = work_of(reply)
        if flow.work is None:
            return None
        return work == flow.work
    # A hand-over of state alone (no question on this hop) does no work: the next question after it is no progress.
    if outcome == Outcome.ASKED_AGAIN and hop + 1 < len(flow.hops) and flow.hops[hop].questions:
        later = set(map(str, flow.hops[hop + 1].questions))
        return bool(later) and _keys(reply) == later and later != set(map(str, flow.hops[hop].questions))
    return False


@dataclass
class _Verdict:
    broken: bool | None  # None: cannot be judged
    detail: str
    steps: list[Step]


def _what(step: Step) -> str:
    return reply_text(step.reply, outcome_of(step.reply))


def _context(run: _Run, flow: Flow, fresh: Flow, hop: int, variation: Variation) -> Context:
    """What the changes read for hop `hop`: the recorded rounds, and the foreign tickets this variation uses
    (minted now: another principal's flow to the same round, another tool's first round)."""
    foreign: dict[str, str] = {}
    labels = {c.label for c in variation.changes}
    if EARLIER in labels and hop > 0:
        foreign[EARLIER] = fresh.hops[hop - 1].ticket
    if OTHERS in labels:
        theirs = play_flow(run, role="other", until=hop)
        if len(theirs.hops) > hop:
            foreign[OTHERS] = theirs.hops[hop].ticket
    if OTHER_TOOLS in labels and hop == 0 and run.call.cross_tool:
        tools = play_flow(run, until=0, tool=run.call.cross_tool)
        if tools.hops:
            foreign[OTHER_TOOLS] = tools.hops[0].ticket
    call = run.call
    return Context(hop, tuple(h.questions for h in flow.hops), tuple(h.answers for h in flow.hops),
                   str(getattr(run.target, "owner", "owner")), str(getattr(run.target, "other", "other")),
                   call.other_arguments, call.cross_tool,
                   answers_for(call.cross_questions, supplied_answers(call, hop + 1)), foreign,
                   tuple(_id_of(s) for s in fresh.steps))


def _id_of(step: Step) -> int | None:
    sent = step.sent.get("id")
    return sent if isinstance(sent, int) and not isinstance(sent, bool) else None


def _built(run: _Run, flow: Flow, fresh: Flow, hop: int, variation: Variation,
           changes: tuple[Change, ...]) -> Retry | None:
    h = fresh.hops[hop]
    retry = replace(_honest(run.call), state=h.ticket, responses=copy.deepcopy(h.answers))
    ctx = _context(run, flow, fresh, hop, variation)
    for change in changes:
        made = change.apply(retry, ctx)
        if made is None:
            return None
        retry = made
    return retry


def _judge_reply(flow: Flow, hop: int, variation: Variation, step: Step, before: Step | None) -> _Verdict:
    """One reply held to the variation's judge: REFUSE (refused, nothing else), NO_PROGRESS, SAME_RESULT."""
    moved = progress(flow, hop, step.reply)
    what = _what(step)
    kept = cached_step(step, before, flow.final)
    if variation.phase == Phase.SPENT and moved and variation.invariant == "once" and kept:
        return _Verdict(False, f"the first use's own result, served again: {what}", [step])
    if variation.judge == Judge.SAME_RESULT:
        if outcome_of(step.reply) != Outcome.COMPLETED or flow.work is None:
            return _Verdict(False, what, [step])
        differs = work_of(step.reply) != flow.work and hop == len(flow.hops) - 1
        return _Verdict(differs, f"ended otherwise than the honest flow: {what}", [step])
    if variation.judge == Judge.DECLARED:
        return _Verdict(False, what, [step])  # judged by `undeclared` alone, as every reply is
    if moved is None:
        return _Verdict(None, what, [step])
    if moved:
        ahead = "did the work" if outcome_of(step.reply) == Outcome.COMPLETED else "moved on to the next round"
        return _Verdict(True, f"{ahead}: {what}", [step])
    if variation.judge == Judge.REFUSE and outcome_of(step.reply) != Outcome.REFUSED:
        return _Verdict(True, f"was not refused: {what} (a ticket that fails its checks MUST be rejected)", [step])
    if variation.judge == Judge.REFUSE and variation.invariant == "verified" and "error" not in (step.reply.response
                                                                                                or {}):
        # The official suite's tampered-state scenario accepts only a JSON-RPC error; never less strict than it.
        return _Verdict(True, f"refused with a tool result, not a JSON-RPC error: {what} (a ticket that fails "
                              "verification MUST be rejected with an error)", [step])
    return _Verdict(False, what, [step])


def _url_accept(run: _Run, flow: Flow, hop: int, retry: Retry, first: Step) -> _Verdict:
    """A URL-mode question the server asks once it is declared, accepted without visiting the page: consent, not
    completion, so neither the work nor the next round may follow."""
    got = asked_of(first.reply)
    questions = got[1] if got and got[0] else {}
    urls = [k for k, q in questions.items() if question_of(q)["params"].get("mode") == "url"]
    if not urls:
        return _Verdict(False, "no URL-mode question asked", [first])
    assert got is not None and got[0] is not None
    answers: JSONObject = {**answers_for({k: q for k, q in questions.items() if k not in urls}),
                           **{k: {"action": "accept"} for k in urls}}
    step = run.send(replace(retry, state=got[0], responses=answers), "the URL-mode question accepted, never visited")
    keys = _keys(step.reply)
    if outcome_of(step.reply) == Outcome.COMPLETED:
        done = None if flow.work is None else work_of(step.reply) == flow.work
        return _Verdict(done, f"took the accept for completion: {_what(step)}", [first, step])
    moved = bool(keys) and not keys <= set(urls)
    return _Verdict(moved, f"took the accept for completion and moved on: {_what(step)}", [first, step])


def _play_once(run: _Run, flow: Flow, hop: int, variation: Variation, changes: tuple[Change, ...]
               ) -> _Verdict | None:
    """Play `changes` of `variation` on hop `hop` of a fresh honest flow. None when they do not apply here."""
    full = variation.phase == Phase.SPENT
    fresh = play_flow(run, until=None if full else hop)
    if len(fresh.hops) <= hop or (full and fresh.final is None):
        return _Verdict(None, f"a fresh honest flow did not reach round {hop + 1} again", fresh.steps)
    retry = _built(run, flow, fresh, hop, variation, changes)
    if retry is None:
        return None
    label = f"round {hop + 1}: {' + '.join(c.label for c in changes)}"
    if variation.phase == Phase.BURST:
        copies = run.burst(retry, COPIES)
        moved = [s for s in copies if progress(flow, hop, s.reply)]
        # The first copy's own result served again to the same principal (a cache) is no second work.
        moved = moved[:1] + [s for s in moved[1:] if not cached_step(s, moved[0], flow.final)]
        detail = f"{len(moved)} of {COPIES} identical copies sent at once went through: {_what(moved[-1])}" \
            if len(moved) > 1 else ""
        return _Verdict(len(moved) > 1, detail, copies)
    step = run.send(retry, label)
    if variation.judge == Judge.URL_ACCEPT:
        return _url_accept(run, flow, hop, retry, step)
    before = fresh.final if full else None
    verdict = _judge_reply(flow, hop, variation, step, before)
    verdict.steps = [*fresh.steps[-1:], *verdict.steps]
    return verdict


def _shrunk(run: _Run, flow: Flow, hop: int, variation: Variation, verdict: _Verdict) -> tuple[
        tuple[Change, ...], _Verdict]:
    """The fewest changes of `variation` that still break its invariant (never leaving only changes that alone are
    an honest retry), and that smallest run's verdict."""
    changes = variation.changes
    shrinking = True
    while shrinking and len(changes) > 1:
        shrinking = False
        for drop in changes:
            smaller = tuple(c for c in changes if c is not drop)
            if not any(c.attack for c in smaller):
                continue
            again = _play_once(run, flow, hop, variation, smaller)
            if again is not None and again.broken:
                changes, verdict, shrinking = smaller, again, True
                break
    return changes, verdict


def _declared_finding(hop: int, variation: Variation, steps: list[Step]) -> Finding | None:
    """Any step of a variation whose reply asked for a kind or mode its own request did not declare."""
    for step in steps:
        why = undeclared(as_object(as_object(as_object(step.sent.get("params")).get("_meta")).get(
            "io.modelcontextprotocol/clientCapabilities")), step.reply)
        if why:
            return Finding("declared", hop + 1, variation.part, variation.label, why, [step])
    return None


def _play(run: _Run, flow: Flow, hop: int, variation: Variation, refused: list[tuple[int, Variation, Step]]) -> None:
    verdict = _play_once(run, flow, hop, variation, variation.changes)
    if verdict is None:
        return
    run.out.played += 1
    last = verdict.steps[-1] if verdict.steps else None
    ticket_refusal = variation.judge == Judge.REFUSE and variation.invariant in ("bound", "verified")
    if ticket_refusal and last is not None and outcome_of(last.reply) == Outcome.REFUSED:
        refused.append((hop, variation, last))
    declared = _declared_finding(hop, variation, verdict.steps)
    if declared is not None and not any(f.invariant == "declared" for f in run.out.findings):
        run.out.findings.append(declared)
    if verdict.broken is None:
        if flow.guess and flow.guess not in run.out.not_judged:
            run.out.not_judged.append(flow.guess)
        return
    run.out.count(variation.invariant)
    if not verdict.broken:
        return
    changes, verdict = _shrunk(run, flow, hop, variation, verdict)
    run.out.findings.append(Finding(variation.invariant, hop + 1, variation.part,
                                    " + ".join(c.label for c in changes), verdict.detail, verdict.steps))


def _refusal_of(step: Step) -> str | None:
    response = step.reply.response or {}
    if isinstance(response.get("error"), dict):
        return json.dumps(response["error"], sort_keys=True)
    result = as_object(response.get("result"))
    if result.get("isError") is True:
        return json.dumps({k: v for k, v in result.items() if k != "_meta"}, sort_keys=True)
    return None


def _same_refusal(run: _Run, refused: list[tuple[int, Variation, Step]]) -> None:
    """Every ticket the exploration had refused must have got the one frozen refusal."""
    seen: dict[str, tuple[int, Variation, Step]] = {}
    for hop, variation, step in refused:
        key = _refusal_of(step)
        if key is not None:
            if seen:  # a second refusal: compared with the first
                run.out.count("same-refusal")
            seen.setdefault(key, (hop, variation, step))
    if len(seen) > 1:
        (h1, v1, s1), (h2, v2, s2) = list(seen.values())[:2]
        run.out.findings.append(Finding("same-refusal", h2 + 1, v2.part, v2.label,
                                        f"round {h1 + 1} {v1.label} got {_what(s1)}, but round {h2 + 1} {v2.label} "
                                        f"got {_what(s2)}: the refusal tells which check failed", [s1, s2]))


def premint(target: Target, call: Call) -> list[Hop]:
    """Round one's ticket for the expiry variation, minted before the catalogue's moves are played (a first call
    only: nothing answered, nothing done), so that its expiry passes during their late moves' wait when the
    exploration plays after them (moves one after another)."""
    run = _Run(target, call, 2, Exploration())
    try:
        target.begin()
        return play_flow(run, until=0).hops[:1]
    except (_OverBudget, _Stopped):
        return []


def _mint_late(run: _Run, flow: Flow, early: list[Hop]) -> list[tuple[int, Hop]]:
    """Every round's ticket for the expiry variation, minted now on fresh flows (round one's possibly `premint`ed),
    before any other variation: its wait at the end then overlaps the whole exploration (and, played beside the
    catalogue's moves, their late waits), one wait for every round's ticket."""
    if len(early) < len(flow.hops):
        run.target.begin()
    fresh = [Flow(early, [], None) if hop < len(early) else play_flow(run, until=hop)
             for hop in range(len(flow.hops))]
    return [(hop, f.hops[hop]) for hop, f in enumerate(fresh) if len(f.hops) > hop]


def _late(run: _Run, flow: Flow, minted: list[tuple[int, Hop]]) -> None:
    """Every round's ticket (`_mint_late`), sent after one wait past the latest expiry."""
    variation = next(v for v in variations.VARIATIONS if v.phase == Phase.LATE)
    expiries = [e for e in (readable_expiry(h.ticket) for _, h in minted) if e is not None]
    if not run.target.advance(300.0, past_expiry=True, expires_at=max(expiries) if expiries else None):
        why = getattr(getattr(run.target, "timing", None), "skip_reason", None) or "the target skipped the wait"
        run.out.not_judged.append(f"past expiry: {why}")
        return
    for hop, h in minted:
        step = run.send(replace(_honest(run.call), state=h.ticket, responses=copy.deepcopy(h.answers)),
                        f"round {hop + 1}: sent past the ticket's expiry")
        run.out.played += 1
        verdict = _judge_reply(flow, hop, variation, step, None)
        run.out.count("expiry")
        if verdict.broken:
            run.out.findings.append(Finding("expiry", hop + 1, "expiry", variation.label, verdict.detail, [step]))
            return


def _principals(target: Target) -> tuple[str, str]:
    return str(getattr(target, "owner", "owner")), str(getattr(target, "other", "other"))


def plan_of(flow: Flow) -> int:
    """How many variations an exploration of `flow` plays (a ticket's parts counted per round)."""
    return sum(len(ticket_parts(h.ticket)) + len(variations.VARIATIONS) for h in flow.hops)


def explore(target: Target, call: Call, budget: int = DEFAULT_BUDGET, excused: frozenset[str] = frozenset(),
            early: list[Hop] | None = None, stopped: Callable[[], bool] = _never) -> Exploration:
    """Record the honest flow, then play every variation on each of its rounds within `budget` calls; findings of
    an `excused` invariant are warnings. `early`: round one's ticket for the expiry variation, minted before
    (`premint`). `stopped`: whether the check stopped elsewhere (then nothing more is sent)."""
    out = _explored(_Run(target, call, budget, Exploration(), stopped=stopped), early or [])
    out.calls += len(early or [])
    for finding in out.findings:
        finding.excused = finding.invariant in excused
    return out


def _explored(run: _Run, early: list[Hop]) -> Exploration:
    out, target = run.out, run.target
    flow = Flow([], [], None)
    try:
        target.begin()
        flow = play_flow(run)
        if flow.why.startswith("asked"):  # the honest flow itself asked for what was not declared
            out.findings.append(Finding("declared", len(flow.hops) + 1, "_meta", "the honest retry", flow.why,
                                        flow.steps[-1:]))
        if flow.final is None or outcome_of(flow.final.reply) != Outcome.COMPLETED:
            out.why_not = flow.why or "the honest flow did not complete: " + (
                _what(flow.final) if flow.final else "no reply")
            return out
        flow.work = _work_known(run, flow)
        out.rounds = len(flow.hops)
        late = _mint_late(run, flow, early)
        refused: list[tuple[int, Variation, Step]] = []
        for hop in range(len(flow.hops)):
            for variation in (*ticket_parts(flow.hops[hop].ticket, *_principals(target)),
                                  *variations.VARIATIONS):
                if variation.phase != Phase.LATE:
                    before = len(out.findings)
                    _play(run, flow, hop, variation, refused)
                    del out.findings[_dedupe(out.findings, before):]
        _same_refusal(run, refused)
        _late(run, flow, late)
    except _OverBudget:
        out.over_budget = max(0, plan_of(flow) - out.played)
    except _Stopped as stop:
        if out.played:
            out.not_judged.append(f"the rest not played: {stop.why}")
        else:
            out.why_not = stop.why
    return out


def _dedupe(findings: list[Finding], before: int) -> int:
    """Keep one finding per invariant and part (the first: the earliest round, the smallest variation)."""
    if len(findings) > before and any((f.invariant, f.part) == (findings[-1].invariant, findings[-1].part)
                                      for f in findings[:before]):
        return before
    return len(findings)
