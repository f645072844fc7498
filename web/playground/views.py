"""What the playground's templates show: the views of a played move (checks, verdict line, tickets, steps, the
note), the page's own records (round one, the custom form, the move lists) and the replay script for /mcp.

Everything here is read from the move engine's `Step`s and the lab target's replies; nothing is canned. It never
plays a move (web/playground/lab.py does) and never reads a switch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flask import request

from moves import labcodec
from moves.catalog import Move
from moves.engine import Step, outcome_of, readable_claims
from moves.script import TICKET_MARK, ScriptStep, replay_script
from moves.target import Outcome, Role
from mrtr import CHECK_TITLES, CHECKS, JSON, JSONObject, as_object
from mrtr.messages import as_list
from mrtr.tickets import SEALED_PREFIX
from web.playground.switches import MAX_OFFSET, TOOLS, PlayedTool, Toggles
from web.site.content import get_content
from web.site.moveviews import OUTCOME_LABELS, pretty_json, step_words
from web.site.services import get_services

ANSWERS = ("accept", "decline", "cancel", "none", "raw")
DEFAULT_ARGUMENTS = '{"env": "staging"}'


def moves() -> tuple[Move, ...]:
    return tuple(get_content().moves)


def mcp_url() -> str:
    return request.host_url.rstrip("/") + "/mcp"


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


def result_text(response: JSONObject | None) -> str:
    """The text of a result's content blocks, one space between blocks ("" for a block without text)."""
    content = as_list(as_object((response or {}).get("result")).get("content"))
    return " ".join(text for c in content if isinstance(c, dict) and isinstance(text := c.get("text", ""), str)).strip()


def verdict_line(step: Step, checks: list[CheckView], outcome: Outcome | None = None) -> str:
    """The one line a learner reads first: "deployed to staging", "refused at Principal is the caller", ...

    `outcome` is the engine's verdict when it knows more than the wire (a complete result that ended the call
    without the work); by default the step's own reply is read.
    """
    response = step.reply.response
    outcome = outcome or outcome_of(step.reply)
    failed = next((c for c in checks if c.outcome == "fail"), None)
    if outcome in (Outcome.COMPLETED, Outcome.ENDED):
        return result_text(response) or str(outcome)
    if outcome == Outcome.ASKED_AGAIN and step.label.endswith("round one"):
        return "input_required, with a ticket of its own"
    if outcome == Outcome.ASKED_AGAIN:
        return "asked again"
    if outcome == Outcome.REFUSED and failed is not None:
        return f"refused at {CHECK_TITLES[failed.name]}"
    error = as_object((response or {}).get("error"))
    return f"{'refused' if outcome == Outcome.REFUSED else 'error'}: {error.get('message', 'no answer')}"


@dataclass
class TicketView:
    token: str
    sealed: bool
    payload: str | None  # pretty JSON of the decoded (unverified) claims, signed tickets only
    problem: str | None = None  # why a payload could not be shown

    @classmethod
    def of(cls, token: JSON) -> TicketView | None:
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


def _with_mark(message: JSONObject) -> JSONObject:
    """`message` with its ticket swapped for the mark the script replaces with a real one."""
    return {**message, "params": {**as_object(message.get("params")), "requestState": TICKET_MARK}}


def _leaves(value: JSON, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], JSON]:
    if isinstance(value, dict):
        return {k: v for key, inner in value.items() for k, v in _leaves(inner, (*path, str(key))).items()}
    return {path: value}


def payload_edit(minted: str, sent: str) -> tuple[str, JSON] | None:
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
    return replay_script(url=mcp_url(), title=title, first=minted.sent, owner=principal_of(minted.role),
                         steps=script_steps, public_tokens=services.public_mcp_tokens())


@dataclass
class NoteView:
    text: str
    outcome: str
    stopped_at: str  # the check that stopped the play ("" when none did)
    #: The stopping check the shown note was written for (None: it names none, or it was composed from the trace).
    written_for: str | None = None
    written: bool = True  # False: no written note fitted, so the words were composed from the trace


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
    #: Whether the last answer is the frozen error every refused ticket gets (so the page may say so).
    frozen: bool = False

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
    summary: str = ""  # the move's summary in the picked tool's words


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
    tools: tuple[PlayedTool, ...] = tuple(TOOLS.values())

    @property
    def h(self) -> int:
        """Heading level of the widget's parts: under the page's h1, or under the lesson's h2."""
        return 3 if self.embedded else 2
