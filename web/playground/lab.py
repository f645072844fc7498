"""Playing on the playground's lab: a move, round one, and the learner's own retry, each on a fresh lab target.

A lab target (`moves.targets.in_process`) is a real server on the lab's own keys, which /mcp never accepts, lab
tokens, a fresh store and a fake clock started at the app's current time, so one learner's plays never touch
another's and no ticket shown here works on /mcp. The custom retry re-mints the page's ticket from its seed and
replays the lab's redeemed ids, carried in the form, so a second send of the same ticket is refused. It never
renders and never reads a request beyond what its callers hand it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from moves.catalog import Move
from moves.engine import MINT_ID, Call, MoveResult, Step, modern_request, outcome_of, play
from moves.target import Outcome, Role
from moves.targets.in_process import LabStore, LabTarget
from mrtr import JSON, JSONObject, as_object
from mrtr.protocol import shape_problem
from mrtr.tickets import b64encode
from web.playground.switches import PlayedTool, PlaygroundInputError, Toggles
from web.playground.views import (
    ANSWERS,
    CheckView,
    CustomForm,
    NoteView,
    Result,
    RoundOne,
    TicketView,
    check_views,
    script_for,
    step_view,
    verdict_line,
)
from web.playground.words import frozen_error, play_note
from web.site.moveviews import pretty_json
from web.site.services import get_services

#: The custom move's latest send time: enough to go well past expiry, no more.
MAX_AT = 3_600
CUSTOM_REQUEST_ID = 7
#: The custom move's lab state: at most this many redeemed ids, each a plain ticket id.
MAX_REDEEMED = 16
_JTI = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
#: What bob's client sends deploy; `call_for` gives the call for the tool a learner picked.
CALL = Call(client_name="mrtr-lab-playground")


def call_for(toggles: Toggles) -> Call:
    """The call the moves make: the picked tool, with its arguments (and another request's, for the moves that
    change them)."""
    tool = toggles.played
    return replace(CALL, tool=tool.name, arguments=dict(tool.arguments), other_arguments=dict(tool.other_arguments),
                   cross_tool=tool.other_tool)


def note_for(move: Move, played: MoveResult, toggles: Toggles) -> NoteView:
    """What this play teaches (`playground_words.play_note`), told in the picked tool's words."""
    text, written = play_note(move, played, toggles.switches, toggles.played.words())
    return NoteView(text, str(played.outcome), played.stopped_at or "", written.stopped_at if written else None,
                    written is not None)


def seeded_jti(seed: str) -> Callable[[], str]:
    """Ticket ids that follow from `seed`, so the custom move re-mints the very ticket the page showed."""
    counter = itertools.count(1)
    return lambda: b64encode(hashlib.sha256(f"mrtr-lab-playground\x00{seed}\x00{next(counter)}".encode()).digest()[:12])


def new_target(toggles: Toggles, now: float, *, jti: Callable[[], str] | None = None,
               store: LabStore | None = None) -> LabTarget:
    """A lab target (lab keys, the app's catalog and ttl) under the switches, on a fresh store and a fake clock."""
    switches = toggles.switches
    return get_services().new_lab_target(now=now, jti=jti, store=store, single_use=switches["single_use"],
                                         sealed=switches["sealed"], verify_signature=switches["verify_signature"])


def _now() -> float:
    return float(get_services().server.clock())


def _token(principal: str) -> str:
    """The lab token shown for `principal`: never a token /mcp was configured with (unless public)."""
    return get_services().lab_token_for(principal)


def _log_lines(minted: Step | None, steps: list[Step]) -> list[tuple[str, str]]:
    lines = [("0", line) for line in minted.reply.log] if minted else []
    for step in steps:
        lines += [(f"{step.at:g}", line) for line in step.reply.log]
    return lines


def _result(target: LabTarget, minted: Step | None, steps: list[Step], principal_of: Callable[[Step], str], kind: str,
            *, move: Move | None = None, script: str = "", note: NoteView | None = None,
            outcome: Outcome | None = None, detail: str = "", holds_note: str = "") -> Result:
    """The page's view of what was played; `outcome` is the engine's verdict on a move (default: the last reply's)."""
    views = [step_view(s, principal_of(s), _token(principal_of(s))) for s in steps]
    checks = check_views(steps[-1])
    earlier = [(v, verdict_line(s, check_views(s))) for v, s in zip(views[:-1], steps[:-1], strict=True)]
    outcome = outcome or outcome_of(steps[-1].reply)
    text = detail if outcome == Outcome.NOT_RUN and detail else verdict_line(steps[-1], checks, outcome)
    return Result(kind, str(outcome), text, views[-1], earlier, checks, _log_lines(minted, steps), script, move,
                  note, holds_note, frozen=frozen_error(steps[-1].reply.response))


def run_move(move: Move, toggles: Toggles) -> Result:
    target = new_target(toggles, _now())
    played: MoveResult = play(replace(move, at=move.at + toggles.offset), target, call_for(toggles))
    if played.minted is None or not played.steps:  # round one failed: show what came back
        steps = [played.minted] if played.minted else []
        not_run = played.outcome == Outcome.NOT_RUN
        return _result(target, played.minted, steps, lambda s: target.principal(s.role), "move", move=move,
                       outcome=played.outcome if not_run else None, detail=played.detail,
                       note=note_for(move, played, toggles) if not_run else None)
    script = script_for(played.minted, played.steps, target.principal, title=move.title, ticket=played.ticket)
    note = note_for(move, played, toggles)
    return _result(target, played.minted, played.steps, lambda s: target.principal(s.role), "move", move=move,
                   script=script, note=note, outcome=played.outcome, detail=played.detail,
                   holds_note=played.note)


def _mint(target: LabTarget, call: Call) -> Step:
    first = modern_request(MINT_ID, "tools/call", {"name": call.tool, "arguments": call.arguments}, call)
    target.begin()
    return Step("owner", 0.0, first, target.send("owner", first))


def round_one(toggles: Toggles) -> RoundOne:
    now = _now()
    seed = secrets.token_urlsafe(9)
    target = new_target(toggles, now, jti=seeded_jti(seed))
    step = _mint(target, call_for(toggles))
    token = _token(target.owner)
    ticket = TicketView.of(_ticket_of(step))
    assert ticket is not None
    return RoundOne(int(now), token, pretty_json(step.sent), pretty_json(step.reply.response), ticket,
                    script_for(step, [], target.principal, title="Round one", ticket=None), seed)



def _ticket_of(step: Step) -> JSON:
    """The requestState a step's reply carried (None when it carried none)."""
    return as_object(as_object(step.reply.response).get("result")).get("requestState")


def _json_field(text: str, label: str) -> JSON:
    try:
        value: JSON = json.loads(text)
    except RecursionError:
        raise PlaygroundInputError(f"{label} nests too deeply to be a sensible request") from None
    except ValueError as exc:
        raise PlaygroundInputError(f"{label} is not valid JSON: {exc}") from None
    problem = shape_problem(value)  # the server refuses these too; refuse them before we echo them
    if problem:
        raise PlaygroundInputError(f"{label}: {problem}")
    return value


@dataclass(frozen=True)
class CustomCall:
    """The learner's retry, checked: who sends it with which token, when, what it carries, and the lab's state
    (the time round one was minted, the ticket-id seed, the redeemed ids) to re-create the page's lab server."""

    principal: str
    token: str
    at: float
    arguments: JSON  # as typed: the server judges a value that is not an object
    request_state: str | None
    input_responses: JSON  # None: the retry carries no inputResponses
    minted_at: float
    seed: str
    redeemed: list[str]


def parse_custom(form: Mapping[str, str], tool: PlayedTool) -> tuple[CustomForm, CustomCall]:
    """The learner's retry as `play_custom` arguments; PlaygroundInputError says what is wrong."""
    values = CustomForm(
        ticket=str(form.get("ticket", "")),
        arguments=str(form.get("arguments", "")),
        token_choice=str(form.get("token_choice", "")),
        token_other=str(form.get("token_other", "")),
        at=str(form.get("at", "")).strip(),
        answer=str(form.get("answer", "accept")),
        answer_raw=str(form.get("answer_raw", "")),
        minted_at=str(form.get("minted_at", "")).strip(),
        seed=str(form.get("seed", "")).strip(),
        redeemed=str(form.get("redeemed", "")).strip(),
    )
    return values, _custom_call(values, tool)


def _custom_call(values: CustomForm, tool: PlayedTool) -> CustomCall:
    arguments = _json_field(values.arguments, "Arguments")
    token = values.token_other.strip() or values.token_choice.strip()
    if not token:
        raise PlaygroundInputError("Token is empty: choose a token or type one")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in token):
        raise PlaygroundInputError("Token may not contain control characters such as line breaks")
    principal = get_services().lab_principal_for(token)
    if principal is None:
        raise PlaygroundInputError("That token names nobody on the lab server: a server answers HTTP 401 before "
                                   "looking at the ticket. Pick one of the lab's tokens from the list.")
    try:
        at = float(values.at or "0")
    except ValueError:
        raise PlaygroundInputError(f"Time must be a number of seconds after minting, got {values.at[:40]!r}") from None
    if not math.isfinite(at) or not 0 <= at <= MAX_AT:
        raise PlaygroundInputError(f"Time must be between 0 and {MAX_AT} seconds after minting")
    if values.answer not in ANSWERS:
        raise PlaygroundInputError(f"Answer must be one of {', '.join(ANSWERS)}")
    if values.answer == "raw":
        if not values.answer_raw.strip():
            raise PlaygroundInputError("Answer is set to raw JSON, but the raw inputResponses box is empty")
        answers = _json_field(values.answer_raw, "The raw inputResponses")
    else:
        answers = tool.answer(values.answer) if values.answer != "none" else None
    now = _now()
    minted_at = now
    if values.minted_at:
        try:
            minted_at = float(values.minted_at)
        except ValueError:
            raise PlaygroundInputError("minted_at must be a time in seconds since the epoch") from None
        if not math.isfinite(minted_at) or abs(now - minted_at) > MAX_AT:
            raise PlaygroundInputError("minted_at is more than an hour away from now; reload the playground")
    seed = values.seed or secrets.token_urlsafe(9)
    if not _JTI.match(seed):
        raise PlaygroundInputError("The lab's ticket seed is malformed; reload the playground")
    return CustomCall(principal, token, at, arguments, values.ticket if values.ticket.strip() else None, answers,
                      minted_at, seed, _redeemed(values.redeemed))


def _redeemed(text: str) -> list[str]:
    ids = [part for part in text.split(",") if part]
    if len(ids) > MAX_REDEEMED or not all(_JTI.match(i) for i in ids):
        raise PlaygroundInputError("The lab's record of redeemed tickets is malformed; reload the playground")
    return ids


def run_custom(call: CustomCall, toggles: Toggles) -> tuple[Result, str]:
    """Re-mint the page's ticket (same seed, same time), replay the lab's redeemed ids, send the retry.

    Returns the result and the redeemed ids after it, for the next send.
    """
    store = LabStore(call.redeemed, until=call.minted_at + MAX_AT + 3600)
    target = new_target(toggles, call.minted_at, jti=seeded_jti(call.seed), store=store)
    played = call_for(toggles)
    minted = _mint(target, played)
    params: JSONObject = {"name": played.tool, "arguments": call.arguments}
    if call.input_responses is not None:
        params["inputResponses"] = call.input_responses
    if call.request_state is not None:
        params["requestState"] = call.request_state
    message = modern_request(CUSTOM_REQUEST_ID, "tools/call", params, played)
    role: Role = "owner" if call.principal == target.owner else "other"
    at = call.at + toggles.offset  # the clock offset moves this retry too, like every move's own retry
    target.advance(at, past_expiry=False, expires_at=None)
    step = Step(role, at, message, target.send(role, message))
    ticket = _ticket_of(minted)
    script = script_for(minted, [step], target.principal, title="Your retry",
                        ticket=ticket if isinstance(ticket, str) else None)
    note = custom_note(step, check_views(step), outcome_of(step.reply), toggles.offset)
    result = _result(target, minted, [step], lambda s: call.principal, "custom", script=script, note=note)
    return result, ",".join(store.spent[-MAX_REDEEMED:])


def custom_note(step: Step, checks: list[CheckView], outcome: Outcome, offset: int) -> NoteView:
    """What the learner's own retry got, in words: the check that stopped it and why, or that all six passed."""
    when = f"at t = {step.at:g} s" + (f" (your time plus the {offset} s clock offset)" if offset else "")
    failed = next((c for c in checks if c.outcome == "fail"), None)
    if failed is not None:
        # The answer rule: a missing answer is asked again, a malformed one gets its own error; only a ticket
        # failure gets the frozen one.
        response = step.reply.response
        error = as_object(as_object(response).get("error"))
        told = ("the server asked the question again" if outcome == Outcome.ASKED_AGAIN
                else "the client saw only the frozen error every refused ticket gets" if frozen_error(response)
                else f"the client got an error of its own ({error.get('code')} {error.get('message')!s:.80}), "
                     "not the ticket refusal" if error else "the client got the answer above")
        text = (f"Your retry, sent {when}, stopped at “{failed.title}”: {failed.detail}. The checks run in order, "
                f"so none after it looked at this retry, and {told}.")
        return NoteView(text, str(outcome), failed.name)
    if all(c.outcome == "skipped" for c in checks):
        text = (f"Your retry, sent {when}, never reached the ticket checks: {checks[0].detail}. "
                "The reply above says what the server did instead.")
        return NoteView(text, str(outcome), "")
    text = (f"Your retry, sent {when}, passed every check that ran: to the server it is an honest retry, "
            "and the reply above is what it did with it.")
    return NoteView(text, str(outcome), "")

