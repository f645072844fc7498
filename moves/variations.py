"""What the exploration varies in a retry: every part of it (the ticket's bytes and type, the sender, the tool, the
arguments, `_meta`'s identity and capabilities, each answer's key, value, action and content), each a `Change`
applied to the honest retry of one round, and the `VARIATIONS` built from them, each judged by one invariant
(moves/invariants.py) in one `Judge` way.

Adding a part to vary is one entry of `VARIATIONS` (its changes are small functions here). Pure functions: nothing
here sends a request (moves/explore.py plays them).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from mrtr import JSON, JSONObject, as_object
from mrtr.protocol import META_VERSION

from .answers import UNASKED, answers_for, question_of
from .forgery import edits_of, readable_claims, unsigned_of
from .target import Role

#: The marker of a retry sent without any requestState (`Retry.state`).
ABSENT = object()


@dataclass
class Retry:
    """One retry as the exploration builds it: who sends it, what it calls, its ticket and answers, its `_meta`."""

    role: Role
    tool: str
    arguments: JSONObject
    state: object  # a JSON value, or ABSENT
    responses: JSONObject | None
    capabilities: JSONObject
    meta: JSONObject = field(default_factory=dict)  # extra _meta members
    #: The JSON-RPC id to send it under (an id the honest flow used), or None for a fresh one.
    request_id: int | None = None


@dataclass(frozen=True)
class Context:
    """What a change may read: the honest flow's rounds (their questions and answers), the round varied, the
    principals, and the other request and tool to spend the ticket on."""

    round: int  # 0-based hop of the honest flow
    questions: tuple[JSONObject, ...]  # each hop's questions
    answers: tuple[JSONObject | None, ...]  # each hop's honest answers
    owner: str
    other: str
    other_arguments: JSONObject | None
    other_tool: str | None
    other_tool_answers: JSONObject
    #: Tickets minted elsewhere, by what they are ("the previous round's ticket", "alice's ticket ...").
    foreign: dict[str, str] = field(default_factory=dict)
    #: The JSON-RPC ids of the fresh honest flow's requests in order: the first call, then each round's retry.
    ids: tuple[int | None, ...] = ()


#: A change: the retry it makes of an honest one, or None when it does not apply here (nothing to change).
Apply = Callable[[Retry, Context], Retry | None]


@dataclass(frozen=True)
class Change:
    label: str
    apply: Apply
    #: False for a change that alone is an honest retry (an identity claim beside the owner's own credentials):
    #: shrinking never leaves only such changes.
    attack: bool = True


class Judge(enum.StrEnum):
    REFUSE = "refuse"  # must be refused (an error or isError result): no work, no fresh question
    NO_PROGRESS = "no-progress"  # must neither do the work nor move the flow on
    SAME_RESULT = "same-result"  # must end exactly as the honest flow did (extras ignored)
    URL_ACCEPT = "url-accept"  # a URL-mode question asked when declared, accepted without visiting: no progress
    #: Only what every reply is held to (nothing asked that the request did not declare): the work itself may
    #: follow, since a last round needs no input.
    DECLARED = "declared"


class Phase(enum.StrEnum):
    FRESH = "fresh"  # on an unspent ticket of a fresh honest flow
    SPENT = "spent"  # after a fresh honest flow went through that round (the ticket used)
    BURST = "burst"  # several identical copies of the honest retry at once
    LATE = "late"  # the honest retry, sent after the ticket expired


@dataclass(frozen=True)
class Variation:
    part: str
    invariant: str
    judge: Judge
    phase: Phase
    changes: tuple[Change, ...]

    @property
    def label(self) -> str:
        return " + ".join(c.label for c in self.changes) or "the honest retry"


# -- the ticket's bytes -------------------------------------------------------------------------------

_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _flip(text: str) -> str:
    """One character in the middle of `text` changed to another base64url character (never the last, whose low
    bits a decoder may drop)."""
    if not text:
        return "A"
    at = (len(text) - 1) // 2
    new = "B" if text[at] != "B" else "C"
    return text[:at] + new + text[at + 1:]


def _part_edited(index: int) -> Apply:
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        if not isinstance(retry.state, str):
            return None
        parts = retry.state.split(".")
        if index >= len(parts) or not parts[index]:
            return None
        parts[index] = _flip(parts[index])
        return replace(retry, state=".".join(parts))
    return apply


def part_name(index: int, count: int) -> str:
    if count == 1:
        return "the ticket"
    return "header" if index == 0 else "signature" if index == count - 1 else f"part {index + 1}"


def _state(value: Callable[[str], JSON]) -> Apply:
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        return replace(retry, state=value(retry.state)) if isinstance(retry.state, str) else None
    return apply


def _null(ticket: str) -> JSON:
    return None


def _as_object(ticket: str) -> JSON:
    """The ticket's own readable claims as an object (what a server trusting a JSON state would take), else the
    ticket wrapped in one."""
    return readable_claims(ticket) or {"requestState": ticket}


def padded(ticket: str) -> str | None:
    """Each part padded to a multiple of four with "=" (a lenient base64 decoder reads the same bytes)."""
    parts = ticket.split(".")
    made = ".".join(p + "=" * (-len(p) % 4) for p in parts)
    return made if made != ticket else None


def unpadded(ticket: str) -> str | None:
    made = ".".join(p.rstrip("=") for p in ticket.split("."))
    return made if made != ticket else None


def other_alphabet(ticket: str) -> str | None:
    """base64url's "-" and "_" written as standard base64's "+" and "/" (decoders that accept both read the same)."""
    made = ticket.replace("-", "+").replace("_", "/")
    return made if made != ticket else None


def skipped_characters(ticket: str) -> str | None:
    """A newline inserted in the middle of the longest part (many base64 decoders skip whitespace)."""
    parts = ticket.split(".")
    longest = max(range(len(parts)), key=lambda i: len(parts[i]))
    text = parts[longest]
    if len(text) < 8:
        return None
    parts[longest] = text[: len(text) // 2] + "\n" + text[len(text) // 2:]
    return ".".join(parts)


def _reencoded(how: Callable[[str], str | None]) -> Apply:
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        made = how(retry.state) if isinstance(retry.state, str) else None
        return replace(retry, state=made) if made is not None else None
    return apply


# -- the request's other parts ------------------------------------------------------------------------


def _sender_other(retry: Retry, ctx: Context) -> Retry | None:
    return replace(retry, role="other")


def _identity_claimed(retry: Retry, ctx: Context) -> Retry | None:
    """The owner named as the caller in _meta and in the arguments (never the transport's credentials)."""
    claim = {"user": ctx.owner, "principal": ctx.owner, "sub": ctx.owner}
    return replace(retry, meta={**retry.meta, **claim}, arguments={**retry.arguments, "user": ctx.owner})


def _identity_in_meta(retry: Retry, ctx: Context) -> Retry | None:
    return replace(retry, meta={**retry.meta, "user": ctx.owner, "principal": ctx.owner, "sub": ctx.owner})


def _other_arguments(retry: Retry, ctx: Context) -> Retry | None:
    return replace(retry, arguments=dict(ctx.other_arguments)) if ctx.other_arguments is not None else None


def _other_tool(retry: Retry, ctx: Context) -> Retry | None:
    if not ctx.other_tool:
        return None
    return replace(retry, tool=ctx.other_tool, responses={**ctx.other_tool_answers, **(retry.responses or {})})


def _version(retry: Retry, ctx: Context) -> Retry | None:
    return replace(retry, meta={**retry.meta, META_VERSION: "1900-01-01"})


def _capabilities(caps: JSONObject) -> Apply:
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        return None if caps == retry.capabilities else replace(retry, capabilities=copy.deepcopy(caps))
    return apply


def _id_of_request(at: Callable[[Context], int]) -> Apply:
    """The retry sent under the id of one of the fresh honest flow's own requests (`at`: its index in `ids`). The
    new-id rule binds the client; a server may answer a reused id or refuse it, never do the work twice for it."""
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        index = at(ctx)
        if not 0 <= index < len(ctx.ids) or ctx.ids[index] is None:
            return None
        return replace(retry, request_id=ctx.ids[index])
    return apply


#: Indexes into `Context.ids`: the request that handed out this round's ticket, round one's first call (when that
#: is another request), and the retry that spent this round's ticket (after a full flow).
_HANDED_OUT = _id_of_request(lambda ctx: ctx.round)
_FIRST_CALL = _id_of_request(lambda ctx: 0 if ctx.round > 0 else -1)
_SPENDING = _id_of_request(lambda ctx: ctx.round + 1)


# -- the answers --------------------------------------------------------------------------------------


def _no_answers(retry: Retry, ctx: Context) -> Retry | None:
    return replace(retry, responses=None) if retry.responses else None


def _no_state(retry: Retry, ctx: Context) -> Retry | None:
    return replace(retry, state=ABSENT)


def _round_answers(offset: int, *, only_last: bool = False) -> Apply:
    """Another round's honest answers in place of this round's: the one before (`offset` -1), the next, or the
    last (a round skipped)."""
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        at = len(ctx.answers) - 1 if only_last else ctx.round + offset
        if at == ctx.round or not 0 <= at < len(ctx.answers) or not ctx.answers[at]:
            return None
        return replace(retry, responses=copy.deepcopy(ctx.answers[at]))
    return apply


def _action(action: str) -> Apply:
    """Every answer of this round given `action` (decline or cancel), without content."""
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        if not retry.responses:
            return None
        return replace(retry, responses={k: {"action": action} for k in retry.responses})
    return apply


def _content_kept(retry: Retry, ctx: Context) -> Retry | None:
    """The honest answers' content put back into each answer, whatever its action."""
    honest = ctx.answers[ctx.round] or {}
    if not retry.responses:
        return None
    return replace(retry, responses={k: {**as_object(v), **{n: w for n, w in as_object(honest.get(k)).items()
                                                             if n == "content"}}
                                     for k, v in retry.responses.items()})


def _other_value(value: JSON, schema: JSONObject) -> JSON:
    options = schema.get("enum")
    if isinstance(options, list) and len(options) > 1:
        return next(o for o in options if o != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return f"{value}-other" if isinstance(value, str) else value


def _earlier_resent_other(retry: Retry, ctx: Context) -> Retry | None:
    """Every earlier round's answers resent beside this round's, each value changed (a server takes what earlier
    rounds decided from its ticket, so they change nothing)."""
    earlier: JSONObject = {}
    for at in range(ctx.round):
        for key, answer in (ctx.answers[at] or {}).items():
            props = as_object(as_object(question_of(ctx.questions[at].get(key))["params"].get("requestedSchema"))
                              .get("properties"))
            content = as_object(as_object(answer).get("content"))
            earlier[key] = {"action": "accept", "content": {
                name: _other_value(v, as_object(props.get(name))) for name, v in content.items()}}
    if not earlier or not retry.responses:
        return None
    return replace(retry, responses={**earlier, **retry.responses})


def _not_objects(retry: Retry, ctx: Context) -> Retry | None:
    """Every answer of this round a number instead of a result object (the official suite's validate-input
    scenario sends `12345`): no answer at all, so neither the work nor the next round may follow."""
    if not retry.responses:
        return None
    return replace(retry, responses={k: 12345 for k in retry.responses})


def _wrong_keys(retry: Retry, ctx: Context) -> Retry | None:
    """This round's answers under keys it never asked (the asked keys left out)."""
    if not retry.responses:
        return None
    return replace(retry, responses={f"{k}-{UNASKED}": v for k, v in retry.responses.items()})


def _foreign(name: str) -> Apply:
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        return replace(retry, state=ctx.foreign[name]) if name in ctx.foreign else None
    return apply


#: The names of the foreign tickets moves/explore.py mints for a round (`Context.foreign`).
EARLIER, OTHERS, OTHER_TOOLS = "the previous round's ticket", "the other principal's own ticket", \
    "a ticket of another tool"


def _same(retry: Retry, ctx: Context) -> Retry | None:
    return retry


def honest_answers(questions: JSONObject, supplied: JSONObject) -> JSONObject:
    return answers_for(questions, supplied)


# -- the variations, each part once -------------------------------------------------------------------

FORM_ONLY: JSONObject = {"elicitation": {"form": {}}}
WITH_URL: JSONObject = {"elicitation": {"form": {}, "url": {}}}

_C = Change
V, J, P = Variation, Judge, Phase

#: Every variation played on each round of the honest flow, in the order played (the smallest first). A ticket's
#: parts are added per ticket (`ticket_parts`), as many as it has.
VARIATIONS: tuple[Variation, ...] = (
    V("requestState", "verified", J.NO_PROGRESS, P.FRESH, (_C("requestState null", _state(_null)),)),
    V("requestState", "verified", J.NO_PROGRESS, P.FRESH, (_C("requestState a number", _state(lambda t: 1)),)),
    V("requestState", "verified", J.NO_PROGRESS, P.FRESH, (_C("requestState an array", _state(lambda t: [t])),)),
    V("requestState", "verified", J.NO_PROGRESS, P.FRESH,
      (_C("requestState an object (the ticket's own claims)", _state(_as_object)),)),
    V("requestState", "answers", J.NO_PROGRESS, P.FRESH, (_C("no requestState", _no_state),)),
    V("requestState", "verified", J.NO_PROGRESS, P.FRESH, (_C(EARLIER, _foreign(EARLIER)),)),
    V("requestState", "bound", J.REFUSE, P.FRESH, (_C(OTHERS, _foreign(OTHERS)),)),
    V("requestState", "bound", J.REFUSE, P.FRESH, (_C(OTHER_TOOLS, _foreign(OTHER_TOOLS)),)),
    V("sender", "bound", J.REFUSE, P.FRESH, (_C("sent by the other principal", _sender_other),)),
    V("_meta", "bound", J.REFUSE, P.FRESH, (_C("sent by the other principal", _sender_other),
                                             _C("the owner named in _meta and the arguments", _identity_claimed,
                                                attack=False))),
    V("_meta", "bound", J.REFUSE, P.FRESH, (_C("sent by the other principal", _sender_other),
                                             _C("the owner named in _meta", _identity_in_meta, attack=False))),
    V("arguments", "bound", J.REFUSE, P.FRESH, (_C("other arguments", _other_arguments),)),
    V("tool", "bound", J.REFUSE, P.FRESH, (_C("another tool that asks", _other_tool),)),
    V("inputResponses", "answers", J.NO_PROGRESS, P.FRESH, (_C("no inputResponses", _no_answers),)),
    V("inputResponses", "answers", J.NO_PROGRESS, P.FRESH, (_C("the answers under keys never asked", _wrong_keys),)),
    V("inputResponses", "answers", J.NO_PROGRESS, P.FRESH, (_C("each answer a number, not a result", _not_objects),)),
    V("inputResponses", "answers", J.NO_PROGRESS, P.FRESH,
      (_C("the previous round's answers instead", _round_answers(-1)),)),
    V("inputResponses", "answers", J.NO_PROGRESS, P.FRESH,
      (_C("the next round's answers instead", _round_answers(1)),)),
    V("inputResponses", "answers", J.NO_PROGRESS, P.FRESH,
      (_C("the last round's answers instead (a round skipped)", _round_answers(0, only_last=True)),)),
    V("inputResponses", "answers", J.SAME_RESULT, P.FRESH,
      (_C("earlier rounds' answers resent beside, other values", _earlier_resent_other),)),
    V("inputResponses", "no-means-no", J.NO_PROGRESS, P.FRESH,
      (_C("decline", _action("decline")), _C("content kept", _content_kept, attack=False))),
    V("inputResponses", "no-means-no", J.NO_PROGRESS, P.FRESH,
      (_C("cancel", _action("cancel")), _C("content kept", _content_kept, attack=False))),
    V("_meta", "declared", J.DECLARED, P.FRESH, (_C("capabilities {}", _capabilities({})),)),
    V("_meta", "version", J.REFUSE, P.FRESH, (_C("protocol version 1900-01-01", _version),)),
    V("_meta", "declared", J.URL_ACCEPT, P.FRESH, (_C("url mode declared", _capabilities(WITH_URL), attack=False),)),
    V("id", "bound", J.SAME_RESULT, P.FRESH, (_C("under the id of the request that handed out this ticket",
                                                _HANDED_OUT),)),
    V("id", "bound", J.SAME_RESULT, P.FRESH, (_C("under the id of round one's first call", _FIRST_CALL),)),
    V("replay", "once", J.NO_PROGRESS, P.SPENT, (_C("sent again", _same),)),
    V("id", "once", J.NO_PROGRESS, P.SPENT, (_C("sent again under the id that spent it", _SPENDING),)),
    V("id", "private", J.NO_PROGRESS, P.SPENT, (_C("sent again by the other principal", _sender_other),
                                                _C("under the id that spent it", _SPENDING, attack=False))),
    V("replay", "once", J.NO_PROGRESS, P.SPENT, (_C("re-encoded: padding added", _reencoded(padded)),)),
    V("replay", "once", J.NO_PROGRESS, P.SPENT, (_C("re-encoded: padding removed", _reencoded(unpadded)),)),
    V("replay", "once", J.NO_PROGRESS, P.SPENT, (_C("re-encoded: the other base64 alphabet",
                                                    _reencoded(other_alphabet)),)),
    V("replay", "once", J.NO_PROGRESS, P.SPENT, (_C("re-encoded: a newline a decoder skips",
                                                    _reencoded(skipped_characters)),)),
    V("replay", "private", J.NO_PROGRESS, P.SPENT, (_C("sent again by the other principal", _sender_other),)),
    V("concurrency", "once", J.NO_PROGRESS, P.BURST, (_C("4 identical copies at once", _same),)),
    V("expiry", "expiry", J.NO_PROGRESS, P.LATE, (_C("sent past the ticket's expiry", _same),)),
)


def ticket_parts(ticket: str, owner: str = "", other: str = "") -> tuple[Variation, ...]:
    """The variations of this ticket's own bytes: each dot-separated part (its header too) edited in one character,
    each field of a readable payload edited under the old signature, and the signature emptied or dropped. The edits
    of a field are made on this ticket and replayed on a fresh one's place (the same shape: what a thief sends)."""
    parts = ticket.split(".")[:8]
    edited = tuple(V("requestState", "verified", J.REFUSE, P.FRESH,
                     (_C(f"requestState {part_name(i, len(parts))} edited", _part_edited(i)),))
                   for i, text in enumerate(parts) if text)
    fields = tuple(V("requestState", "verified", J.REFUSE, P.FRESH, (_C(f"requestState payload: {label}",
                                                                      _field_edit(label, owner, other)),))
                   for label, _t, _r in edits_of(ticket, owner, other) if label.startswith("edited "))
    unsigned = tuple(V("requestState", "verified", J.REFUSE, P.FRESH, (_C(f"requestState {label}",
                                                                        _unsigned(label)),))
                     for label, _t in unsigned_of(ticket) if len(parts) > 1)
    return edited + fields + unsigned


def _field_edit(label: str, owner: str, other: str) -> Apply:
    """The same field edited in the fresh ticket of the round played (its sender the other principal when the edit
    names them)."""
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        if not isinstance(retry.state, str):
            return None
        found = [(t, r) for lbl, t, r in edits_of(retry.state, owner, other) if lbl == label]
        return replace(retry, state=found[0][0], role=found[0][1]) if found else None
    return apply


def _unsigned(label: str) -> Apply:
    def apply(retry: Retry, ctx: Context) -> Retry | None:
        if not isinstance(retry.state, str):
            return None
        found = [t for lbl, t in unsigned_of(retry.state) if lbl == label]
        return replace(retry, state=found[0]) if found else None
    return apply
