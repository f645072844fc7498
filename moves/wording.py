"""How a move's verdict reads in the checker's reports: what was sent, what came back, and what to fix; and the
warnings a report carries about the ticket itself (a time field in milliseconds).

`explain` turns a played move (`MoveResult`) and the engine's one-line evidence into the detail every report shows
(the table, the JSON, JUnit, the /check page), in words for a server author who never saw the lessons: the
retry in plain terms (who sent it, to which tool, with what ticket and answer, when), the server's answer, and,
for a failure, what a sound server does and the move's own `fix` from moves/moves.toml. A move that could not be
shown keeps its reason as it is ("not shown: ...", "not run: ..."). It never quotes the frozen ticket error's text
(the build lesson reads a detail for it) and reads nothing but the result and the move: no I/O, no Flask.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from mrtr import JSONObject, as_object

from .calls import MoveResult
from .catalog import NEAR_EXPIRY, Move
from .forgery import readable_claims
from .target import Outcome

#: What a sound server does with the move, per expectation, after "a sound server would".
EXPECTED_WORDS: dict[Outcome, str] = {
    Outcome.COMPLETED: "do the work (a complete result)",
    Outcome.REFUSED: "refuse it (a JSON-RPC error, never a fresh question) and do nothing",
    Outcome.ASKED_AGAIN: "ask the question again (a new input_required result)",
    Outcome.ENDED: "end the call without the work",
    Outcome.NOT_DONE: "not do the work (an error, an ending or a fresh question)",
}

#: The ticket a move sends, in a server author's words: (readable payload, sealed or opaque ticket).
TICKET_WORDS: dict[str, tuple[str, str]] = {
    "as-issued": ("the requestState unchanged",) * 2,
    "edit-work": ("the requestState's readable payload edited ({path} set to {value}) under the original signature",
                  "one character of the requestState changed (its payload cannot be read, so cannot be edited)"),
    "junk": ("junk in place of the requestState (a word, an empty string, three dotted parts, a broken body, "
             "5,000 characters)",) * 2,
    "absent": ("no requestState at all",) * 2,
    "edit-each": ("the requestState's payload fields changed one at a time (numbers moved an hour on, strings "
                  "changed, the owner's name replaced) under the original signature",
                  "one character of the requestState changed (its payload cannot be read, so cannot be edited)"),
    "unsigned": ("the requestState's signature part emptied, then removed",) * 2,
}

#: The answers a move sends, in a server author's words.
ANSWER_WORDS: dict[str, str] = {
    "accept": "an accepted answer to every question",
    "none": "no inputResponses",
    "decline": "the answer decline",
    "cancel": "the answer cancel",
    "wrong-type": "an accepted answer whose fields have the wrong JSON type (a boolean sent as the text \"yes\")",
    "missing-key": "an accepted answer with its required fields left out",
    "wrong-key": "an accepted answer under a key the server never asked (the asked key missing)",
    "extra-key": "an accepted answer, plus one under a key the server never asked",
}


def _call_of(move: Move, result: MoveResult) -> tuple[str, str]:
    """The tool and arguments the move's own retry went to, read off the message it sent (else round one's)."""
    steps = [s for s in result.steps if as_object(s.sent).get("id") == move.request_id] or \
        ([result.minted] if result.minted is not None else [])
    params = as_object(as_object(steps[0].sent).get("params")) if steps else {}
    arguments = json.dumps(params.get("arguments", {}), ensure_ascii=False, sort_keys=True)
    return str(params.get("name", "the tool"))[:60], arguments[:200]


def sent_words(move: Move, result: MoveResult, *, owner: str = "the owner", other: str = "the other principal") -> str:
    """The move's retry in plain words: who sent which call, with which ticket and answer, and when."""
    tool, arguments = _call_of(move, result)
    who = f"{other} (not the principal the ticket names)" if move.sender == "other" else \
        f"{owner} (the principal the ticket names)"
    if move.request == "other-tool":
        what = f"{tool} {arguments}, another tool that asks for input, with the ticket the first tool minted"
    elif move.request == "other":
        what = f"{tool} with other arguments than the ticket's, {arguments}, with"
    else:
        what = f"{tool} {arguments} again with"
    readable = readable_claims(result.ticket) is not None if isinstance(result.ticket, str) else True
    ticket = TICKET_WORDS[move.ticket][0 if readable else 1].format(path=move.edit_path,
                                                                     value=json.dumps(move.edit_value))
    joint = " and" if move.request == "other-tool" else ""
    text = f"{who} sent {what}{joint} {ticket} and {ANSWER_WORDS[move.answer]}"
    if move.request == "other-tool":
        text = f"{who} sent {what}, carrying it unchanged and {ANSWER_WORDS[move.answer]}"
    if move.timing == "past-expiry":
        text += ", after the ticket's expiry"
    elif move.timing == "near-expiry":
        text += f", {NEAR_EXPIRY:.0%} of the way through the ticket's life (still in time)"
    if move.round > 1:
        text += f", on round {move.round} of the flow"
    if move.copies > 1:
        ids = "one JSON-RPC id" if move.copy_ids == "same" else "a JSON-RPC id of its own each"
        text += f", as {move.copies} identical copies at once under {ids}"
    if move.before is not None:
        where = "a ticket of its own" if move.before_ticket == "new" else "the same ticket"
        text += f", after a first retry on {where} (\"{move.before.title}\", which got {move.before.expect})"
    return text


def explain(move: Move, result: MoveResult, evidence: str, verdict: str, *, owner: str = "the owner",
            other: str = "the other principal") -> str:
    """The detail of a move's row: `evidence` (what came back, the engine's words) with what was sent, and for a
    failure what a sound server does and what to fix. A move not shown keeps its reason unchanged."""
    if verdict == "not-run" or Outcome(result.outcome) == Outcome.NOT_RUN:
        return evidence
    text = f"{sent_words(move, result, owner=owner, other=other)}. The server answered: {evidence}"
    text = text.rstrip(".") + "."
    if verdict == "pass":
        return f"{text} As it should: {move.shows}." if move.shows else text
    if verdict == "fail" and result.fix:  # the right outcome in the wrong form: the detail said what was expected
        return f"{text} Fix: {result.fix}"
    if verdict == "fail":
        first = f" (its {move.stops_at} check stops it first)" if move.stops_at else ""
        why = f", because {move.shows}" if move.shows else ""
        text += f" A sound server would {EXPECTED_WORDS[Outcome(move.expect)]}{first}{why}."
    return f"{text} Fix: {move.fix}" if move.fix else text


#: A time field above this many seconds since the epoch (the year 5138) is taken for milliseconds.
MILLISECONDS_ABOVE = 1e11
#: Payload fields that hold a time, by name (a JWT's exp, iat, nbf, and names like expires_at).
_TIME_FIELDS = ("exp", "iat", "nbf")


def _is_time_field(name: str) -> bool:
    """exp, iat, nbf, anything naming an expiry, and names like expires_at or createdAt."""
    return name.lower() in _TIME_FIELDS or "expir" in name.lower() or name.endswith(("_at", "At"))


def ticket_warnings(ticket: str | None) -> list[str]:
    """What a readable ticket's payload gets wrong that no move fails: a time field that, read as seconds since the
    epoch, lies absurdly far in the future (milliseconds written where seconds belong), naming the field."""
    claims = readable_claims(ticket) if isinstance(ticket, str) else None
    found: list[str] = []
    for path, value in _numbers(claims or {}, ""):
        name = path.rpartition(".")[2]
        if _is_time_field(name) and value > MILLISECONDS_ABOVE:
            when = timestamp(min(value / 1000, 253402300799))
            found.append(f"the ticket's {path} is {value:.0f}: as seconds since the epoch, the way a JWT's exp, iat "
                         f"and nbf count (RFC 7519), that is thousands of years away; it reads as milliseconds "
                         f"({when}). " + ("The checker timed its late moves on it as milliseconds, but a client or "
                                          "library that reads it as seconds takes this ticket as never expiring. "
                                          if name == "exp" or "expir" in name.lower() else "")
                         + f"Write {path} in seconds")
    return found[:4]


def _numbers(value: JSONObject, prefix: str) -> list[tuple[str, float]]:
    """(dotted path, number) for the numbers of a payload, two levels deep."""
    found: list[tuple[str, float]] = []
    for key, inner in list(value.items())[:32]:
        path = f"{prefix}{key}"
        if isinstance(inner, int | float) and not isinstance(inner, bool):
            found.append((path, float(inner)))
        elif isinstance(inner, dict) and not prefix:
            found += _numbers(inner, f"{path}.")
    return found


def timestamp(seconds: float | None) -> str | None:
    """An instant as ISO 8601 in UTC ("2026-12-04T21:30:00Z"), or None."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
