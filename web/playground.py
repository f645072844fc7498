"""The "Misuse the ticket" playground: pick a move, and the real server judges it.

Every experiment is played by the move engine (`moves.engine.play`) on a lab target
(`moves.targets.in_process`): a real server on the lab's own keys, which /mcp never accepts, lab tokens,
a fresh store and a fake clock started at the app's current time, so one learner's plays never
touch another's, every play is reproducible, and no ticket shown here works on /mcp. No configured
token or key reaches the page: the "run it yourself" scripts mint their own ticket on /mcp with
`$BOB_TOKEN`-style variables. Nothing on the page is canned: the sent messages, the checks, the
answers and the log all come from the engine's `MoveResult` and the target's `Reply`.

The switches travel as query parameters (GET) or hidden inputs (POST), so every state has a URL and
the whole widget works without JavaScript. "Write your own retry" carries its lab server's state
(the ticket-id seed and the redeemed ids) in hidden inputs, so a second send of the same ticket is
refused. The lesson page embeds the same widget through `playground_context(args)`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import secrets
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from flask import Blueprint, abort, redirect, request
from flask.typing import ResponseReturnValue
from werkzeug.datastructures import MultiDict

from moves import labcodec
from moves.catalog import Move
from moves.engine import MINT_ID, Call, MoveResult, Step, modern_request, outcome_of, play, readable_claims
from moves.script import TICKET_MARK, ScriptStep, replay_script
from moves.target import Outcome, Role
from moves.targets.in_process import LabStore, LabTarget
from mrtr import CHECK_TITLES, CHECKS, as_object
from mrtr.protocol import shape_problem
from mrtr.tickets import SEALED_PREFIX, b64encode
from web import htmx
from web.content import get_content
from web.moveviews import grouped, pretty_json, step_words
from web.services import LAB_PRINCIPALS, get_services
from web.templating import OUTCOME_LABELS

bp = Blueprint("playground", __name__)

PAGE = "playground/show.html"
WIDGET = "playground/_playground.html"
RESULT = "playground/_result.html"
ERROR = "playground/_error.html"

MAX_OFFSET = 600
#: The custom move's latest send time: enough to go well past expiry, no more.
MAX_AT = 3_600
ANSWERS = ("accept", "decline", "cancel", "none", "raw")
ANSWER_BODIES: dict[str, Any] = {
    "accept": {"confirm": {"action": "accept", "content": {"confirm": True}}},
    "decline": {"confirm": {"action": "decline"}},
    "cancel": {"confirm": {"action": "cancel"}},
}
DEFAULT_ARGUMENTS = '{"env": "staging"}'
CUSTOM_REQUEST_ID = 7
#: The custom move's lab state: at most this many redeemed ids, each a plain ticket id.
MAX_REDEEMED = 16
_JTI = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
CALL = Call(client_name="mrtr-lab-playground")


class PlaygroundInputError(ValueError):
    """The playground form itself is malformed (not the experiment): answered with HTTP 400."""


# -- the switches ----------------------------------------------------------------------------------


def _last(args: Mapping[str, Any], name: str) -> str | None:
    """The last value sent for `name`: a checkbox's value follows its hidden "0" fallback."""
    if isinstance(args, MultiDict):
        values = args.getlist(name)
        return values[-1] if values else None
    value = args.get(name)
    return None if value is None else str(value)


def _flag(args: Mapping[str, Any], name: str, default: bool) -> bool:
    value = _last(args, name)
    if value is None or value == "":
        return default
    if value in ("1", "on", "true"):
        return True
    if value in ("0", "off", "false"):
        return False
    raise PlaygroundInputError(f"{name} must be 1 or 0, got {value[:40]!r}")


@dataclass(frozen=True)
class Toggles:
    single_use: bool = True
    sealed: bool = False
    no_signature: bool = False
    offset: int = 0

    @classmethod
    def parse(cls, args: Mapping[str, Any]) -> Toggles:
        """Read the switches; raises PlaygroundInputError on a value that is not one of theirs."""
        raw = _last(args, "offset")
        offset = 0
        if raw not in (None, ""):
            try:
                offset = int(raw)
            except ValueError:
                raise PlaygroundInputError(
                    f"offset must be a whole number of seconds from 0 to {MAX_OFFSET}, got {raw[:40]!r}"
                ) from None
            if not 0 <= offset <= MAX_OFFSET:
                raise PlaygroundInputError(f"offset must be between 0 and {MAX_OFFSET} seconds, got {offset}")
        return cls(_flag(args, "single_use", True), _flag(args, "sealed", False),
                   _flag(args, "no_signature", False), offset)

    @property
    def switches(self) -> dict[str, bool]:
        return {"single_use": self.single_use, "sealed": self.sealed, "verify_signature": not self.no_signature}

    @property
    def params(self) -> dict[str, str]:
        return {"single_use": "1" if self.single_use else "0", "sealed": "1" if self.sealed else "0",
                "no_signature": "1" if self.no_signature else "0", "offset": str(self.offset)}

    @property
    def is_default(self) -> bool:
        return self == Toggles()

    @property
    def query(self) -> str:
        return urllib.parse.urlencode(self.params)

    def url(self, move: str | None = None) -> str:
        params = dict(self.params)
        if move:
            params["move"] = move
        return "/playground?" + urllib.parse.urlencode(params)


# -- what the templates show -----------------------------------------------------------------------




@dataclass
class CheckView:
    name: str
    title: str
    outcome: str
    detail: str
    why: str = ""  # for skipped checks: not-reached, not-needed or switched-off
    asked_again: bool = False  # the reply was a fresh question, not an error

    @property
    def label(self) -> str:
        if self.outcome == "pass":
            return "passed"
        if self.outcome == "fail":
            # the answer rule: a missing answer is asked again (no refusal); a malformed one gets an error
            return "asked again" if self.name == "answer" and self.asked_again else "failed"
        return OUTCOME_LABELS.get(self.why, OUTCOME_LABELS["not-reached"]).lower()

    @property
    def note(self) -> str:
        return self.detail


def check_views(step: Step) -> list[CheckView]:
    recorded = {c["check"]: c for c in step.reply.trace or []}
    if not recorded:
        sent = as_object(step.sent.get("params"))
        detail = ("the request was refused before its ticket was opened"
                  if "requestState" in sent else "the retry carried no requestState to check")
        return [CheckView(name, CHECK_TITLES[name], "skipped", detail, "not-reached") for name in CHECKS]
    asked = outcome_of(step.reply) == Outcome.ASKED_AGAIN
    return [CheckView(name, CHECK_TITLES[name], recorded[name]["outcome"], recorded[name]["detail"],
                      recorded[name].get("why", ""), asked)
            if name in recorded else CheckView(name, CHECK_TITLES[name], "skipped", "", "not-reached")
            for name in CHECKS]


def _result_text(response: dict[str, Any] | None) -> str:
    result = (response or {}).get("result") or {}
    return " ".join(c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)).strip()


def verdict_line(step: Step, checks: list[CheckView], outcome: Outcome | None = None) -> str:
    """The one line a learner reads first: "deployed to staging", "refused at Principal is the caller", ...

    `outcome` is the engine's verdict when it knows more than the wire (a complete result that ended the call
    without the work); by default the step's own reply is read.
    """
    response = step.reply.response
    outcome = outcome or outcome_of(step.reply)
    failed = next((c for c in checks if c.outcome == "fail"), None)
    if outcome in (Outcome.COMPLETED, Outcome.ENDED):
        return _result_text(response) or str(outcome)
    if outcome == Outcome.ASKED_AGAIN and step.label.endswith("round one"):
        return "input_required, with a ticket of its own"
    if outcome == Outcome.ASKED_AGAIN:
        return "asked again"
    if outcome == Outcome.REFUSED and failed is not None:
        return f"refused at {CHECK_TITLES[failed.name]}"
    error = (response or {}).get("error") or {}
    return f"{'refused' if outcome == Outcome.REFUSED else 'error'}: {error.get('message', 'no answer')}"


@dataclass
class TicketView:
    token: str
    sealed: bool
    payload: str | None  # pretty JSON of the decoded (unverified) claims, signed tickets only
    problem: str | None = None  # why a payload could not be shown

    @classmethod
    def of(cls, token: Any) -> TicketView | None:
        if not isinstance(token, str):
            return None
        peeked = labcodec.peek(token)
        return cls(token, token.startswith(SEALED_PREFIX + "."), peeked.text, peeked.problem)


@dataclass
class StepView:
    at: float
    principal: str
    token: str
    sent: str
    answer: str
    ticket: TicketView | None
    what: str = "the retry"  # what this step was, for a sentence ("the retry of “Honest retry”")

    @property
    def at_text(self) -> str:
        return f"{self.at:g}"


def step_view(step: Step, principal: str, token: str) -> StepView:
    params = as_object(step.sent.get("params"))
    return StepView(step.at, principal, token, pretty_json(step.sent), pretty_json(step.reply.response),
                    TicketView.of(params.get("requestState")) if "requestState" in params else None,
                    step_words(step, moves()))


def _with_mark(message: dict[str, Any]) -> dict[str, Any]:
    """`message` with its ticket swapped for the mark the script replaces with a real one."""
    return {**message, "params": {**as_object(message.get("params")), "requestState": TICKET_MARK}}


def _leaves(value: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(value, dict):
        return {k: v for key, inner in value.items() for k, v in _leaves(inner, (*path, str(key))).items()}
    return {path: value}


def payload_edit(minted: str, sent: str) -> tuple[str, Any] | None:
    """The one payload field `sent` changed in the `minted` ticket, as (dotted path, new value); None when the
    two are not one readable payload with one field changed (a sealed ticket, junk, another ticket)."""
    before, after = readable_claims(minted), readable_claims(sent)
    if before is None or after is None:
        return None
    old, new = _leaves(before), _leaves(after)
    changed = [path for path in new if path in old and old[path] != new[path]]
    if len(changed) != 1 or set(old) != set(new):
        return None
    return ".".join(changed[0]), new[changed[0]]


def script_for(minted: Step, steps: list[Step], principal_of: Callable[[Role], str], *, title: str,
               ticket: str | None) -> str:
    """A shell script that replays these steps against /mcp on tickets /mcp mints for the learner now.

    Each lab ticket a step sends is matched to the /mcp ticket minted at the same point of the script: round
    one's, or the one a later round one (a step sending no ticket that got one back) captured. A ticket with
    one payload field edited becomes the same edit of the real ticket; anything else (junk) is sent as typed.
    """
    services = get_services()
    ttl = services.server.ttl
    tickets = {ticket: "TICKET"} if ticket else {}
    script_steps = []
    for step in steps:
        sent = as_object(step.sent.get("params")).get("requestState")
        var = tickets.get(sent) if isinstance(sent, str) else None
        edit = None
        if var is None and isinstance(sent, str):
            edit, var = next(((e, v) for t, v in tickets.items() if (e := payload_edit(t, sent))), (None, None))
        issued = as_object((step.reply.response or {}).get("result")).get("requestState")
        capture = None
        if sent is None and isinstance(issued, str) and issued not in tickets and step is not steps[-1]:
            capture = tickets[issued] = f"TICKET{len(tickets) + 1}"
        script_steps.append(ScriptStep(principal_of(step.role), _with_mark(step.sent) if var else step.sent,
                                       wait=ttl + 1 if step.at >= ttl else 0, edit=edit, ticket_var=var or "TICKET",
                                       capture=capture))
    return replay_script(url=_base_url(), title=title, first=minted.sent, owner=principal_of(minted.role),
                         steps=script_steps, public_tokens=services.public_mcp_tokens())


@dataclass
class NoteView:
    text: str
    outcome: str
    stopped_at: str


@dataclass
class Result:
    kind: str  # "move" or "custom"
    verdict: str  # the Outcome's value: completed, refused, asked-again, error, not-run
    verdict_text: str
    last: StepView
    earlier: list[tuple[StepView, str]]
    checks: list[CheckView]
    log: list[tuple[str, str]]
    script: str = ""
    move: Move | None = None
    note: NoteView | None = None
    #: Why the engine's verdict holds although it is not the plainest answer a sound server gives ("" when it is).
    holds_note: str = ""

    @property
    def first_failure(self) -> CheckView | None:
        return next((c for c in self.checks if c.outcome == "fail"), None)

    @property
    def slug(self) -> str:
        return self.move.slug if self.move else "custom"

    @property
    def got_through(self) -> bool:
        """A move a sound server refuses came through (a replay with single use off, an edit with the signature
        check removed): drawn as the danger it is, never as a success."""
        return (self.move is not None and self.move.expect == Outcome.REFUSED
                and self.verdict == Outcome.COMPLETED.value)


@dataclass
class RoundOne:
    minted_at: int
    token: str
    sent: str
    answer: str
    ticket: TicketView
    script: str
    seed: str


@dataclass
class CustomForm:
    ticket: str
    arguments: str = DEFAULT_ARGUMENTS
    token_choice: str = ""
    token_other: str = ""
    at: str = "8"
    answer: str = "accept"
    answer_raw: str = ""
    minted_at: str = ""
    seed: str = ""
    redeemed: str = ""


@dataclass
class MoveView:
    move: Move
    principal: str


@dataclass
class MoveList:
    """One group of moves on the page (what they vary), each with who sends it."""

    key: str
    title: str
    hint: str
    moves: list[MoveView]


@dataclass
class Playground:
    toggles: Toggles
    moves: list[MoveView]
    groups: list[MoveList]
    round_one: RoundOne
    custom: CustomForm
    tokens: list[str]
    mcp_url: str
    ttl: int
    tokens_public: bool = True
    embedded: bool = False
    result: Result | None = None
    error: str | None = None
    oob: bool = False
    answers: tuple[str, ...] = ANSWERS
    max_offset: int = MAX_OFFSET

    @property
    def h(self) -> int:
        """Heading level of the widget's parts: under the page's h1, or under the lesson's h2."""
        return 3 if self.embedded else 2


# -- running experiments ---------------------------------------------------------------------------


def _course() -> Any:
    return get_content()


def moves() -> tuple[Move, ...]:
    return tuple(_course().moves)


def note_for(move: Move, outcome: Outcome, stopped_at: str | None, sealed: bool) -> NoteView | None:
    """The note written for what this move really got under the current switches, or none at all."""
    note = move.note_for(outcome, stopped_at, sealed=sealed)
    return NoteView(note.text, str(outcome), stopped_at or "") if note else None


def seeded_jti(seed: str) -> Callable[[], str]:
    """Ticket ids that follow from `seed`, so the custom move re-mints the very ticket the page showed."""
    counter = itertools.count(1)
    return lambda: b64encode(hashlib.sha256(f"mrtr-lab-playground\x00{seed}\x00{next(counter)}".encode()).digest()[:12])


def new_target(toggles: Toggles, now: float, *, jti: Callable[[], str] | None = None,
               store: LabStore | None = None) -> LabTarget:
    """A lab target (lab keys, the app's catalog and ttl) under the switches, on a fresh store and a fake clock."""
    return get_services().new_lab_target(now=now, jti=jti, store=store, **toggles.switches)


def _now() -> float:
    return float(get_services().server.clock())


def _token(principal: str) -> str:
    """The lab token shown for `principal`: never a token /mcp was configured with (unless public)."""
    return get_services().lab_token_for(principal)


def _base_url() -> str:
    return request.host_url.rstrip("/") + "/mcp"


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
                  note, holds_note)


def run_move(move: Move, toggles: Toggles) -> Result:
    target = new_target(toggles, _now())
    played: MoveResult = play(replace(move, at=move.at + toggles.offset), target, CALL)
    if played.minted is None or not played.steps:  # round one failed: show what came back
        steps = [played.minted] if played.minted else []
        return _result(target, played.minted, steps, lambda s: target.principal(s.role), "move", move=move)
    script = script_for(played.minted, played.steps, target.principal, title=move.title, ticket=played.ticket)
    note = note_for(move, played.outcome, played.stopped_at, bool(played.ticket and played.ticket.startswith("s1.")))
    return _result(target, played.minted, played.steps, lambda s: target.principal(s.role), "move", move=move,
                   script=script, note=note, outcome=played.outcome, detail=played.detail,
                   holds_note=played.note)


def _mint(target: LabTarget) -> Step:
    first = modern_request(MINT_ID, "tools/call", {"name": CALL.tool, "arguments": CALL.arguments}, CALL)
    target.begin()
    return Step("owner", 0.0, first, target.send("owner", first))


def round_one(toggles: Toggles) -> RoundOne:
    now = _now()
    seed = secrets.token_urlsafe(9)
    target = new_target(toggles, now, jti=seeded_jti(seed))
    step = _mint(target)
    token = _token(target.owner)
    ticket = TicketView.of(((step.reply.response or {}).get("result") or {}).get("requestState"))
    assert ticket is not None
    return RoundOne(int(now), token, pretty_json(step.sent), pretty_json(step.reply.response), ticket,
                    script_for(step, [], target.principal, title="Round one", ticket=None), seed)


def playground_context(args: Mapping[str, Any] | None = None, *, strict: bool = False) -> dict[str, Any]:
    """Everything `_playground.html` needs, as `{"pg": ...}`; the lesson page includes it too.

    Lenient by default (a bad switch falls back to its default) so a stray query parameter never
    breaks the lesson page; the playground's own views pass strict=True and answer 400 instead.
    """
    args = args if args is not None else request.args
    try:
        toggles = Toggles.parse(args)
    except PlaygroundInputError:
        if strict:
            raise
        toggles = Toggles()
    services = get_services()
    first = round_one(toggles)
    all_moves = moves()
    views = {m.slug: MoveView(m, LAB_PRINCIPALS[0] if m.sender == "owner" else LAB_PRINCIPALS[1]) for m in all_moves}
    pg = Playground(
        toggles=toggles,
        moves=list(views.values()),
        groups=[MoveList(g.key, g.title, g.hint, [views[m.slug] for m in g.moves]) for g in grouped(all_moves)],
        round_one=first,
        custom=CustomForm(ticket=first.ticket.token, token_choice=first.token, minted_at=str(first.minted_at),
                          seed=first.seed),
        tokens=list(services.lab_tokens),
        mcp_url=_base_url(),
        ttl=services.server.ttl,
        tokens_public=services.tokens_public,
        embedded=request.blueprint != bp.name,
    )
    slug = _last(args, "move")
    if slug:
        move = next((m for m in all_moves if m.slug == slug), None)
        if move is None:
            if strict:
                raise PlaygroundInputError(f"there is no move called {slug[:40]!r}")
        else:
            pg.result = run_move(move, toggles)
    return {"pg": pg}


# -- the custom move -------------------------------------------------------------------------------


def _json_field(text: str, label: str) -> Any:
    try:
        value = json.loads(text)
    except RecursionError:
        raise PlaygroundInputError(f"{label} nests too deeply to be a sensible request") from None
    except ValueError as exc:
        raise PlaygroundInputError(f"{label} is not valid JSON: {exc}") from None
    problem = shape_problem(value)  # the server refuses these too; refuse them before we echo them
    if problem:
        raise PlaygroundInputError(f"{label}: {problem}")
    return value


def parse_custom(form: Mapping[str, Any]) -> tuple[CustomForm, dict[str, Any]]:
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
    return values, _custom_call(values)


def _custom_call(values: CustomForm) -> dict[str, Any]:
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
        answers = ANSWER_BODIES.get(values.answer)
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
    return {"principal": principal, "token": token, "at": at, "arguments": arguments,
            "request_state": values.ticket if values.ticket.strip() else None, "input_responses": answers,
            "minted_at": minted_at, "seed": seed, "redeemed": _redeemed(values.redeemed)}


def _redeemed(text: str) -> list[str]:
    ids = [part for part in text.split(",") if part]
    if len(ids) > MAX_REDEEMED or not all(_JTI.match(i) for i in ids):
        raise PlaygroundInputError("The lab's record of redeemed tickets is malformed; reload the playground")
    return ids


def run_custom(call: dict[str, Any], toggles: Toggles) -> tuple[Result, str]:
    """Re-mint the page's ticket (same seed, same time), replay the lab's redeemed ids, send the retry.

    Returns the result and the redeemed ids after it, for the next send.
    """
    store = LabStore(call["redeemed"], until=call["minted_at"] + MAX_AT + 3600)
    target = new_target(toggles, call["minted_at"], jti=seeded_jti(call["seed"]), store=store)
    minted = _mint(target)
    params: dict[str, Any] = {"name": CALL.tool, "arguments": call["arguments"]}
    if call["input_responses"] is not None:
        params["inputResponses"] = call["input_responses"]
    if call["request_state"] is not None:
        params["requestState"] = call["request_state"]
    message = modern_request(CUSTOM_REQUEST_ID, "tools/call", params, CALL)
    role: Role = "owner" if call["principal"] == target.owner else "other"
    at = call["at"] + toggles.offset  # the clock offset moves this retry too, like every move's own retry
    target.advance(at, past_expiry=False, expires_at=None)
    step = Step(role, at, message, target.send(role, message))
    ticket = ((minted.reply.response or {}).get("result") or {}).get("requestState")
    script = script_for(minted, [step], target.principal, title="Your retry", ticket=ticket)
    note = custom_note(step, check_views(step), outcome_of(step.reply), toggles.offset)
    result = _result(target, minted, [step], lambda s: call["principal"], "custom", script=script, note=note)
    return result, ",".join(store.spent[-MAX_REDEEMED:])


def custom_note(step: Step, checks: list[CheckView], outcome: Outcome, offset: int) -> NoteView:
    """What the learner's own retry got, in words: the check that stopped it and why, or that all six passed."""
    when = f"at t = {step.at:g} s" + (f" (your time plus the {offset} s clock offset)" if offset else "")
    failed = next((c for c in checks if c.outcome == "fail"), None)
    if failed is not None:
        # The answer rule: a missing answer is asked again, a malformed one gets its own error; only a ticket
        # failure gets the frozen one.
        told = ("the server asked the question again" if outcome == Outcome.ASKED_AGAIN
                else "the client got -32602 Invalid inputResponses, an error about its answer, not the ticket refusal"
                if failed.name == "answer" else "the client saw only the frozen -32602")
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


# -- views -----------------------------------------------------------------------------------------


def _bad_input(exc: PlaygroundInputError, args: Mapping[str, Any],
               custom: CustomForm | None = None) -> ResponseReturnValue:
    context = playground_context(args)
    pg = context["pg"]
    pg.error = str(exc)
    pg.oob = htmx.wants_fragment()
    if custom is not None:
        pg.custom = custom
    return htmx.render(PAGE, ERROR, status=400, **context)


def _embedded(args: Mapping[str, Any]) -> bool:
    return htmx.wants_fragment() and _last(args, "embedded") == "1"


@bp.get("/playground")
def show() -> ResponseReturnValue:
    try:
        context = playground_context(request.args, strict=True)
    except PlaygroundInputError as exc:
        return _bad_input(exc, request.args)
    pg = context["pg"]
    pg.embedded = _embedded(request.args)
    push = None if pg.embedded else pg.toggles.url(pg.result.slug if pg.result else None)
    return htmx.render(PAGE, WIDGET, push_url=push, **context)


@bp.post("/playground/moves/<slug>")
def play_move(slug: str) -> ResponseReturnValue:
    move = next((m for m in moves() if m.slug == slug), None)
    if move is None:
        abort(404)
    try:
        toggles = Toggles.parse(request.form)
    except PlaygroundInputError as exc:
        return _bad_input(exc, request.args)
    context = playground_context(toggles.params)
    pg = context["pg"]
    pg.result = run_move(move, toggles)
    pg.oob = htmx.wants_fragment()
    pg.embedded = _embedded(request.form)
    push = None if pg.embedded else toggles.url(slug)
    return htmx.render(PAGE, RESULT, push_url=push, **context)


@bp.get("/playground/moves/<slug>")
def move_page(slug: str) -> ResponseReturnValue:
    """Re-entering a move's URL (no JavaScript, a bookmark, a reload after POST): show that move's result."""
    if next((m for m in moves() if m.slug == slug), None) is None:
        abort(404)
    try:
        toggles = Toggles.parse(request.args)
    except PlaygroundInputError:
        toggles = Toggles()
    return redirect(toggles.url(slug) + "#pg-result", code=303)


@bp.get("/playground/custom")
def custom_page() -> ResponseReturnValue:
    """Re-entering the custom move's URL shows the playground at the custom form."""
    return redirect("/playground#pg-custom-heading", code=303)


@bp.post("/playground/custom")
def play_custom_move() -> ResponseReturnValue:
    try:
        toggles = Toggles.parse(request.form)
    except PlaygroundInputError as exc:
        return _bad_input(exc, request.args)
    try:
        values, call = parse_custom(request.form)
    except PlaygroundInputError as exc:
        values = CustomForm(**{k: str(request.form.get(k, "")) for k in CustomForm.__dataclass_fields__})
        return _bad_input(exc, toggles.params, values)
    context = playground_context(toggles.params)
    pg = context["pg"]
    pg.custom = values
    pg.result, values.redeemed = run_custom(call, toggles)
    values.seed = call["seed"]
    pg.oob = htmx.wants_fragment()
    pg.embedded = _embedded(request.form)
    return htmx.render(PAGE, RESULT, **context)
