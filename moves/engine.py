"""The move engine: play one `Move` against any `Target` and return a typed `MoveResult`.

Round one: the owner calls the tool and must get `input_required` with a `requestState`. Then the
engine builds the retry the move describes (ticket edit, junk or none, arguments, answers built from each
input request's schema), lets the target's time pass, sends it as the move's sender (its `before` move's
retry first) and classifies what came back from the wire alone (`outcome_of`). Verdicts need evidence
(`play`): controls tell "ended" from "did the work" (a complete result compared with an accepted call's,
ids and numbers masked) and "bound to its principal" from "bound to its process" (the owner from a second
process or connection). Nothing here knows a target's internals or imports Flask.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from mrtr import JSONObject, as_object

from .answers import (
    UNASKED,
    answers_for,
    answers_of,
    cross_tool_call,
    guessed_fields,
    supplied_answers,
    unanswerable,
)
from .calls import (
    MINT_ID,
    RETRY_ID,
    Call,
    MoveResult,
    Step,
    client_meta,
    modern_request,
    outcome_of,
    reply_text,
    work_of,
)
from .catalog import JUNK_SHAPES, NEAR_EXPIRY, NOT_A_YES, YES_ANSWERS, Move
from .flow import MAX_ROUNDS, _walk, asked_of, mint_round
from .forgery import edit_ticket, edits_of, flip_one_character, readable_claims, readable_expiry, unsigned_of
from .target import Outcome, Progress, Reply, Role, Target

#: What a server refusing a tampered ticket with an isError result changes (the official suite's scenario
#: accepts only a JSON-RPC error).
TAMPERED_FIX = ("refuse a ticket that fails verification with a JSON-RPC error, not an isError tool result: the "
                "frozen -32602 \"Invalid or expired requestState\" (raise it where the tool runs, or verify the "
                "ticket before the tool does); the official conformance suite's input-required-result-tampered-state "
                "scenario accepts only a JSON-RPC error.")

#: What other modules import from here (the engine's parts live in moves.calls, .answers, .forgery and .flow).
__all__ = ["MAX_ROUNDS", "MINT_ID", "RETRY_ID", "UNASKED", "Call", "MoveResult", "Step", "answers_for", "answers_of",
           "client_meta", "edit_ticket", "mint_round", "modern_request", "needs_completed_flow", "outcome_of", "play",
           "readable_claims", "readable_expiry", "supplied_answers", "unanswerable", "work_of"]


def _tickets_of(move: Move, ticket: str, owner: str = "", other: str = "") -> list[tuple[str, str | None, Role]]:
    """(label, ticket, sender) for each retry the move sends; None: no requestState at all."""
    if move.ticket == "edit-each":
        return [(label, edited, role) for label, edited, role in edits_of(ticket, owner, other)]
    if move.ticket == "unsigned":
        return [(label, shape, move.sender) for label, shape in unsigned_of(ticket)]
    return [(label, sent, move.sender) for label, sent in _plain_tickets_of(move, ticket)]


def _plain_tickets_of(move: Move, ticket: str) -> list[tuple[str, str | None]]:
    if move.ticket == "absent":
        return [("retry without a ticket", None)]
    if move.ticket == "edit-work":
        return [("retry", edit_ticket(ticket, move))]
    if move.ticket == "junk":
        prefix = ticket.partition(".")[0][:16]
        return [(f"junk ticket ({name})", shape.replace("{prefix}", prefix)) for name, shape in JUNK_SHAPES]
    return [("retry", ticket)]


@dataclass
class Sent:
    """A move's own retries: every step sent, the reply each one's flow ended on, and why the checker stopped."""

    steps: list[Step]
    finals: list[Step]
    stuck: str = ""
    #: The rounds each retry's flow went on to (after the move's own round).
    rounds: list[JSONObject] = field(default_factory=list)


def _retries(move: Move, target: Target, call: Call, ticket: str, requests: JSONObject,
             round_n: int = 1, seen: set[str] | None = None) -> Sent:
    """Send the move's own retry (one per junk shape); an accepted answer's flow is followed to its end. Raises
    ValueError when the move cannot be built against this tool (no other arguments, no field to answer wrongly)."""
    if move.request == "other-tool":
        call, requests = cross_tool_call(call, requests)
    arguments = call.arguments
    if move.request == "other":
        if call.other_arguments is None:
            raise ValueError("the tool has no argument to change for another request; pass --other-args")
        arguments = call.other_arguments
    supplied = supplied_answers(call, round_n)
    # A move judged by an accepted call completing (or, in a burst, by one of them doing the work) cannot be judged
    # on a question the checker cannot answer: a URL-mode page is finished outside MCP, and an accept alone is not it.
    judged_by_work = move.answer in YES_ANSWERS and (move.expect == Outcome.COMPLETED or move.copies > 1)
    why = unanswerable(requests, supplied) if judged_by_work else None
    if why is not None:
        raise ValueError(f"round {round_n} asks {why}, which the checker cannot answer by itself")
    answers = answers_of(move.answer, requests, supplied)
    request_id = move.request_id if move.request_id is not None else RETRY_ID
    sent = Sent([], [])
    for label, message, role, reply in _send(move, target, call, arguments, answers, ticket, request_id):
        step = Step(role, move.at, message, reply, label)
        sent.steps.append(step)
        if move.answer not in YES_ANSWERS:
            sent.finals.append(step)
            continue
        walk = _walk(target, call, role, step, seen=seen or set(requests), round_n=round_n,
                     arguments=arguments, label=f"{label}, then ")
        sent.steps += walk.steps
        sent.finals.append(walk.last)
        if len(walk.rounds) > len(sent.rounds):
            sent.rounds = walk.rounds
        if walk.stuck and not sent.stuck:
            sent.stuck = walk.stuck
        if move.copies == 1 and not move.holds(outcome_of(walk.last.reply))[0]:
            break  # one shape that went through is the evidence; the last step is the one judged
    return sent


def _send(move: Move, target: Target, call: Call, arguments: JSONObject, answers: JSONObject | None,
          ticket: str, request_id: int) -> Iterable[tuple[str, JSONObject, Role, Reply]]:
    """Build and send the move's retries: one per ticket shape, or `copies` identical ones at once (a target's
    `send_burst`: separate connections, or lines written before any answer is read; one after another on a target
    that has none). Returns (label, message, sender, reply) for each."""
    messages: list[tuple[str, JSONObject, Role]] = []
    for label, sent_ticket, role in _tickets_of(move, ticket, target.owner, target.other):
        params: JSONObject = {"name": call.tool, "arguments": arguments}
        if sent_ticket is not None:
            params["requestState"] = sent_ticket
        if answers is not None:
            params["inputResponses"] = copy.deepcopy(answers)
        messages.append((label, modern_request(request_id, "tools/call", params, call), role))
    if move.copies == 1:  # sent one by one as the caller reads them: it stops at the first that does not hold
        return ((label, message, role, target.send(role, message)) for label, message, role in messages)
    label, message, _role = messages[0]
    copies = [(f"copy {n} of {move.copies}", {**copy.deepcopy(message), "id": request_id if move.copy_ids == "same"
                                               else request_id * 100 + n}) for n in range(1, move.copies + 1)]
    burst = getattr(target, "send_burst", None)
    sent = [m for _, m in copies]
    replies = burst(move.sender, sent) if burst is not None else [target.send(move.sender, m) for m in sent]
    return [(label, m, move.sender, reply) for (label, m), reply in zip(copies, replies, strict=True)]


def _burst_judged(move: Move, finals: list[Step]) -> tuple[Outcome, Step, bool, str]:
    """Copies sent at once: exactly one may do the work, and every other must get what the move expects."""
    done = [s for s in finals if outcome_of(s.reply) == Outcome.COMPLETED]
    ids = "the same id" if move.copy_ids == "same" else "ids of their own"
    if len(done) > 1:
        return Outcome.COMPLETED, done[1], False, f"{len(done)} of the {len(finals)} identical retries sent at once " \
            f"under {ids} did the work: {reply_text(done[-1].reply, Outcome.COMPLETED)}"
    if not done:
        return outcome_of(finals[0].reply), finals[0], False, (
            f"none of the {len(finals)} identical honest retries sent at once under {ids} did the work (one should): "
            f"{reply_text(finals[0].reply, outcome_of(finals[0].reply))}")
    others = [s for s in finals if s is not done[0]]
    outcome, step, ok, note = _judged(move, others)
    if not ok:
        return outcome, step, False, f"one of the {len(finals)} copies did the work, and another got " \
            f"{reply_text(step.reply, outcome)}"
    detail = (f"one of the {len(finals)} identical retries sent at once under {ids} did the work; the other "
              f"{len(others)} got {reply_text(step.reply, outcome)}")
    return outcome, step, True, detail + (f"; {note}" if note else "")


def _judged(move: Move, steps: list[Step]) -> tuple[Outcome, Step, bool, str]:
    """The move's outcome over its own steps: the first that does not hold, else the one with a note, else
    the last. Returns (outcome, that step, holds, note)."""
    judged = [(outcome_of(s.reply), s) for s in steps]
    verdicts = [(move.holds(o), o, s) for o, s in judged]
    chosen = next((v for v in verdicts if not v[0][0]), None) or next((v for v in verdicts if v[0][1]), verdicts[-1])
    (ok, note), outcome, step = chosen
    return outcome, step, ok, note


def _control(target: Target, call: Call, at: float, role: Role, label: str,
             round_n: int = 1) -> tuple[list[Step], Step | None, str]:
    """An honest call of the same request, start to finish: a new ticket as the owner, answered yes (from round
    `round_n` on, sent by `role`). Returns the steps, the completed retry (None when it did not complete) and what
    went wrong."""
    minted = mint_round(target, call, at, f"{label}: round one", round_n)
    if minted.ticket is None:
        return [minted.first, *minted.hops], None, minted.why
    params: JSONObject = {"name": call.tool, "arguments": call.arguments, "requestState": minted.ticket,
                          "inputResponses": answers_for(minted.requests, supplied_answers(call, round_n))}
    message = modern_request(RETRY_ID, "tools/call", params, call)
    step = Step(role, at, message, target.send(role, message), f"{label}: retry")
    walk = _walk(target, call, role, step, seen=minted.seen, round_n=round_n, arguments=call.arguments,
                 label=f"{label}: ")
    steps = [minted.first, *minted.hops, step, *walk.steps]
    outcome = outcome_of(walk.last.reply)
    if walk.stuck:
        return steps, None, walk.stuck
    if outcome != Outcome.COMPLETED:
        return steps, None, walk.last.reply.transport_error or reply_text(walk.last.reply, outcome)
    return steps, walk.last, ""


def _not_run(move: Move, detail: str, minted: Step | None, steps: list[Step], ticket: str | None,
             controls: list[Step] | None = None) -> MoveResult:
    return MoveResult(move, Outcome.NOT_RUN, False, detail, minted, steps, ticket, controls=controls or [])


def _refusal(reply: Reply) -> str | None:
    """A refusal as a client sees it (the error or isError result, without the id), or None."""
    response = reply.response or {}
    if isinstance(response.get("error"), dict):
        return json.dumps(response["error"], sort_keys=True, default=str)
    result = as_object(response.get("result"))
    if result.get("isError") is True:
        return json.dumps({k: v for k, v in result.items() if k != "_meta"}, sort_keys=True, default=str)
    return None


def _like_a_bad_ticket(target: Target, call: Call, move: Move, ticket: str, requests: JSONObject,
                       reply: Reply) -> tuple[list[Step], bool]:
    """Whether `reply`'s refusal is the one a bad ticket gets: the same retry, answered yes, on a ticket with one
    character flipped, is sent to learn it."""
    params: JSONObject = {"name": call.tool, "arguments": call.arguments,
                          "requestState": flip_one_character(ticket),
                          "inputResponses": answers_for(requests, supplied_answers(call, move.round))}
    message = modern_request(RETRY_ID, "tools/call", params, call)
    step = Step(move.sender, move.at, message, target.send(move.sender, message), "a bad ticket, to compare")
    theirs, mine = _refusal(step.reply), _refusal(reply)
    return [step], theirs is not None and theirs == mine


def needs_completed_flow(move: Move) -> bool:
    """Whether the move can only show its check on a flow the checker can finish: it expects the work, one of its
    copies must do it, or a retry that does the work goes first."""
    return move.expect == Outcome.COMPLETED or move.copies > 1 or (move.before is not None and (
        move.before.expect == Outcome.COMPLETED or move.before_ticket == "new"))


@dataclass
class _Playing:
    """One move being played: what it plays against, the round's ticket and questions, and the steps so far."""

    move: Move
    target: Target
    call: Call
    minted: Step
    ticket: str
    requests: JSONObject
    seen: set[str]
    steps: list[Step]
    rounds: list[JSONObject] = field(default_factory=list)
    controls: list[Step] = field(default_factory=list)

    def result(self, outcome: Outcome, ok: bool, detail: str, *, note: str = "", warn: bool = False,
               fix: str = "") -> MoveResult:
        return MoveResult(self.move, outcome, ok, detail, self.minted, self.steps, self.ticket, note=note,
                          controls=self.controls, rounds=self.rounds, warn=warn, fix=fix)

    def not_run(self, detail: str) -> MoveResult:
        return _not_run(self.move, detail, self.minted, self.steps, self.ticket, self.controls)


def play(move: Move, target: Target, call: Call | None = None, *, on_progress: Progress | None = None
         ) -> MoveResult:
    """Mint a ticket as the owner, carry the flow honestly to the move's round, then play `move` against that
    round's ticket on `target` (its `before` move first).

    A move is only judged when it really exercised what it shows: its `before` move must have got what a
    sound server gives it, a not-a-yes answer's complete result is compared with an accepted call's, and a
    refusal of the other principal counts only when the owner's ticket works from a second process of the
    owner. A flow the checker cannot finish (a question it cannot answer, the round bound) leaves the move not
    run, saying which round and which key. Otherwise the result is NOT_RUN, with the reason in its detail.
    """
    call = call or Call()
    target.begin()
    start = mint_round(target, call, 0.0, "round one", move.round)
    if start.ticket is None:
        if start.stuck:
            result = _not_run(move, f"not shown: {start.why}", start.first, list(start.hops), None)
            result.rounds = start.rounds
            result.stuck = start.why if start.walk_stuck else ""
            return result
        return MoveResult(move, Outcome.ERROR, False, start.why, start.first, list(start.hops), None)
    now = _Playing(move, target, call, start.first, start.ticket, start.requests, start.seen, list(start.hops))
    expires_at = readable_expiry(start.ticket)
    try:
        early = _play_before(now, expires_at, on_progress)
        if early is not None:
            return early
        if not _wait(now, expires_at, on_progress):
            return now.not_run("skipped: the move waits past the ticket's expiry")
        mine = _retries(move, target, call, now.ticket, now.requests, move.round, now.seen)
    except ValueError as exc:
        return now.not_run(f"not shown: {exc}")
    now.steps += mine.steps
    now.rounds = [*start.rounds, *mine.rounds]
    if mine.stuck:
        result = now.not_run(f"not shown: {mine.stuck}")
        result.stuck, result.rounds = mine.stuck, now.rounds
        return result
    if move.copies > 1:
        outcome, _step, ok, detail = _burst_judged(move, mine.finals)
        return now.result(outcome, ok, detail)
    return _verdict(now, mine)


def _play_before(now: _Playing, expires_at: float | None, on_progress: Progress | None) -> MoveResult | None:
    """The move's `before` retry, on this ticket or a fresh one: None when it got what this move needs first (or
    there is none), else the result that says why this move stops there."""
    move, first, target = now.move, now.move.before, now.target
    if first is None:
        return None
    if not target.advance(first.at, past_expiry=False, expires_at=expires_at, on_progress=on_progress):
        return now.not_run("the target skipped the wait")
    on, on_requests, on_seen = now.ticket, now.requests, now.seen
    if move.before_ticket == "new":
        second = mint_round(target, now.call, first.at, f"{first.slug}: round one", move.round)
        now.steps += [second.first, *second.hops]
        if second.ticket is None:
            return now.not_run(f"not shown: a second call could not start ({second.why})")
        on, on_requests, on_seen = second.ticket, second.requests, second.seen
    earlier = _retries(first, target, now.call, on, on_requests, move.round, on_seen)
    for step in earlier.steps:
        step.label = f"{first.slug}: {step.label}"
    now.steps += earlier.steps
    if earlier.stuck:
        return now.not_run(f"not shown: the {first.slug} retry goes first, and {earlier.stuck}")
    outcome, step, ok, _note = _judged(first, earlier.finals)
    if not ok and move.before_ticket == "new" and not move.holds(outcome)[0]:
        # On a ticket of its own, the earlier retry is one of the two calls this move is about (two
        # separate calls of the same request): its refusal is this move's evidence, not a missing
        # precondition. (A server that remembers requests refuses it because an earlier move spent the
        # same request; gating it would hide exactly the mistake the move is there to show.)
        return MoveResult(move, outcome, False, f"the first of the two calls, on a ticket of its own, got "
                                                f"{reply_text(step.reply, outcome)}", now.minted, now.steps, now.ticket)
    if not ok:
        return now.not_run(f"not shown: this move needs the {first.slug} retry to go first and get {first.expect}, "
                           f"but it got {reply_text(step.reply, outcome)}; the {first.slug} move itself shows why")
    return None


def _wait(now: _Playing, expires_at: float | None, on_progress: Progress | None) -> bool:
    """Let the move's time pass (a remote target's real wait past or near expiry); False when the target skips it."""
    move, target = now.move, now.target
    near = getattr(target, "near_expiry", None) if move.timing == "near-expiry" else None
    if near is not None:
        return bool(near(move.at, NEAR_EXPIRY, expires_at=expires_at, on_progress=on_progress))
    return target.advance(move.at, past_expiry=move.timing == "past-expiry", expires_at=expires_at,
                          on_progress=on_progress)


def _verdict(now: _Playing, mine: Sent) -> MoveResult:
    """The move's own retries judged, with the controls that make the verdict evidence (see `play`)."""
    move = now.move
    outcome, step, ok, note = _judged(move, mine.finals)
    detail = reply_text(step.reply, outcome)
    if len(mine.finals) > 1:
        detail = f"{step.label}: {detail}" if not ok or note else f"all {len(mine.finals)} shapes: {detail}"
    if outcome == Outcome.COMPLETED and move.answer in NOT_A_YES:
        now.controls, accepted, why = _control(now.target, now.call, move.at, "owner", "an accepted call", move.round)
        if accepted is None:
            return now.not_run("not shown: an honest, accepted call of the same request did not complete "
                               f"({why}), so there is nothing to tell the work from")
        guess, hint = _guess_in(now.controls, now.call)
        if work_of(accepted.reply) == work_of(step.reply) and guess:
            theirs = reply_text(accepted.reply, Outcome.COMPLETED)
            return now.not_run(f"not shown: {guess}, so the accepted call's result ({theirs}) cannot be told from "
                               "this move's: the work may never have been done. Pass the answer the server accepts "
                               f"with --answers {hint}")
        if work_of(accepted.reply) != work_of(step.reply):
            outcome = Outcome.ENDED
            ok, note = move.holds(outcome)
            detail = f"ended without the work: {detail} (an accepted call got " \
                     f"{reply_text(accepted.reply, Outcome.COMPLETED)})"
        else:
            detail = f"did the work: {detail}, the same result as an accepted call's"
    if outcome in move.warn:  # before any note: a warning, even where the outcome would hold
        return now.result(outcome, False, f"{detail}; allowed, but the spec says a server SHOULD answer this with a "
                                          f"JSON-RPC error (a client cannot tell {outcome} from a missing answer)",
                          warn=True)
    tool_result = _tool_result_refusal(move, mine.finals) if ok else None
    if tool_result is not None:
        # The spec: state that fails verification MUST be rejected, and the official suite's tampered-state
        # scenario accepts only a JSON-RPC error; an isError result is a tool's answer, so it fails here too
        # (docs/checker/what-it-sees.md lists the overlap: the checker is never less strict there).
        shape = f"{tool_result.label}: " if len(mine.finals) > 1 else ""
        return now.result(Outcome.REFUSED, False, f"{shape}{reply_text(tool_result.reply, Outcome.REFUSED)}: a tool "
                                                  "result, not a rejection; a ticket that fails verification MUST "
                                                  "be rejected with a JSON-RPC error", fix=TAMPERED_FIX)
    if ok and outcome == Outcome.REFUSED and move.distinct_error:
        distinct = _distinct_error(now, step, outcome, detail)
        if distinct is not None:
            return distinct
    if ok and move.sender == "other":
        now.controls, again, why = _control(now.target, now.call, move.at, "owner-again",
                                            "the owner from a second process", move.round)
        if again is None:
            return now.not_run(f"not shown: the owner's own honest retry of a fresh call, sent from a second process "
                               f"or connection, got {why}; tickets here only work where they were minted (or honest "
                               f"retries are refused), so {now.target.other}'s refusal does not show a check of the "
                               "principal")
    return now.result(outcome, ok, detail, note=note)


def _tool_result_refusal(move: Move, finals: list[Step]) -> Step | None:
    """The first retry of a move whose ticket fails its signature that was refused with an isError result rather
    than a JSON-RPC error, or None."""
    if "signature" not in move.refused_by:
        return None
    return next((s for s in finals if outcome_of(s.reply) == Outcome.REFUSED and "error" not in (s.reply.response
                                                                                               or {})), None)


def _guess_in(steps: list[Step], call: Call) -> tuple[str, str]:
    """Where an honest flow's answers were guesses (free text the checker made up), in words, and the `--answers`
    shape that replaces them; ("", "") when every answer came from a schema's choices or from the author."""
    round_n, asked = 0, set[str]()
    for step in steps:
        got = asked_of(step.reply)
        requests = got[1] if got is not None else {}
        if not requests or set(map(str, requests)) <= asked:
            continue
        round_n += 1
        asked |= set(map(str, requests))
        fields = guessed_fields(requests, supplied_answers(call, round_n))
        if fields:
            key, _, name = fields[0].partition(".")
            return (f"round {round_n} asks for free text ({fields[0]!r}), which the checker could only guess",
                    f"'{{\"{round_n}\": {{\"{key}\": {{\"{name}\": ...}}}}}}'")
    return "", ""


def _distinct_error(now: _Playing, step: Step, outcome: Outcome, detail: str) -> MoveResult | None:
    """A malformed answer's refusal must not be the very error a bad ticket gets: None when it is not; else the
    result (held when the ticket itself was refused, failed when a yes on it goes through)."""
    move, call = now.move, now.call
    control, same = _like_a_bad_ticket(now.target, call, move, now.ticket, now.requests, step.reply)
    now.controls += control
    if not same:
        return None
    # The ticket itself may have been refused: an honest yes on it tells.
    params: JSONObject = {"name": call.tool, "arguments": call.arguments, "requestState": now.ticket,
                          "inputResponses": answers_for(now.requests, supplied_answers(call, move.round))}
    message = modern_request(RETRY_ID, "tools/call", params, call)
    honest = Step(move.sender, move.at, message, now.target.send(move.sender, message), "a yes on the ticket")
    now.controls.append(honest)
    if outcome_of(honest.reply) != Outcome.COMPLETED:  # nothing was done: it holds, on the ticket's refusal
        note = (f"the ticket itself was refused (an honest yes on it got "
                f"{reply_text(honest.reply, outcome_of(honest.reply))}), so this refusal says nothing about the answer")
        return now.result(outcome, True, detail, note=note)
    return now.result(outcome, False, f"{detail}: the very error a bad ticket gets, so a client cannot tell its "
                                      "malformed answer from a refused ticket; give it an error of its own (-32602 "
                                      "\"Invalid inputResponses: ...\")")
