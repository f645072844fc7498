"""How the pages put moves into words: their groups, the steps the engine played, their outcomes,
and the messages they sent and got back (`pretty_json`).

Every page that lists or plays moves (the playground, the lesson's timeline, the presenter's deck,
the class's attack round) reads the moves from the catalogue and the results from the engine, and
takes its words from here, so a new `[[moves]]` entry gets the same treatment everywhere without
a page naming it. Nothing here plays a move or imports Flask.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from moves.catalog import GROUPS as GROUP_KEYS
from moves.catalog import Move, find, first_stopped_by
from moves.engine import Step, outcome_of
from moves.target import Outcome

#: The groups a list of moves is shown in, in the engine's order: (key, heading, what the group's moves vary).
GROUPS: tuple[tuple[str, str, str], ...] = (
    ("ticket", "The ticket: who sends it, when, and what it holds",
     "One retry each, with the ticket untouched, edited, replaced, late or in the wrong hands."),
    ("answer", "The answer",
     "One retry each, on a genuine ticket: what comes back in place of bob's yes."),
    ("sequence", "One retry after another",
     "Another retry goes first, then this one: what the first one leaves behind."),
)


def group_of(move: Move) -> str:
    """The group a move is listed under (the engine's `Move.group`)."""
    return move.group


@dataclass(frozen=True)
class MoveGroup:
    key: str
    title: str
    hint: str
    moves: tuple[Move, ...]


assert tuple(key for key, _, _ in GROUPS) == GROUP_KEYS, "a group of moves without its words"


def grouped(moves: Iterable[Move]) -> list[MoveGroup]:
    """The moves in their groups (catalogue order inside each); empty groups are left out."""
    listed = tuple(moves)
    groups = [MoveGroup(key, title, hint, tuple(m for m in listed if group_of(m) == key))
              for key, title, hint in GROUPS]
    return [g for g in groups if g.moves]


def stopped_first_by(moves: Iterable[Move], check: str) -> Move | None:
    """The first move a sound server stops at `check`: `moves.catalog.stopped_by`'s plain move, else the first
    one played after another (a replay is sent after the retry it repeats), never a junk one."""
    return first_stopped_by(tuple(moves), check)


#: What each outcome is called on a page, in the story's words (a deploy): the verdict of a move, or an
#: expectation ("not-done" is never observed: it is what a move expects when any refusal will do).
OUTCOME_TEXT: dict[str, str] = {
    Outcome.COMPLETED: "Deployed",
    Outcome.REFUSED: "Refused",
    Outcome.ASKED_AGAIN: "Asked again",
    Outcome.ENDED: "Ended, nothing deployed",
    Outcome.NOT_DONE: "Nothing deployed",
    Outcome.ERROR: "Error",
    Outcome.NOT_RUN: "Not run",
}

#: The one map of labels for outcomes a page shows: a check's outcome, why it was skipped, a move's verdict.
OUTCOME_LABELS = {
    # a check
    "pass": "Passed", "fail": "Failed", "skipped": "Not reached",
    # why a check was skipped
    "not-reached": "Not reached", "not-needed": "Not needed", "switched-off": "Switched off",
    "unavailable": "Store unavailable",
    # a step's or a move's verdict
    "sent": "Sent", "input_required": "input_required", "answered": "Answered", "complete": "Deployed",
    "deployed": "Deployed", "declined": "Declined",
    # every Outcome a move can get or expect (completed, refused, asked-again, ended, not-done, ...)
    **{str(outcome): text for outcome, text in OUTCOME_TEXT.items()},
}

#: The style class of each outcome (the CSS colours "deployed" as the work done, "ended" and "asked-again" as
#: neither good nor bad news).
OUTCOME_CLASS: dict[str, str] = {
    Outcome.COMPLETED: "deployed", Outcome.REFUSED: "refused", Outcome.ASKED_AGAIN: "asked-again",
    Outcome.ENDED: "ended", Outcome.NOT_DONE: "ended", Outcome.ERROR: "error", Outcome.NOT_RUN: "not-run",
}


def step_words(step: Step, moves: Iterable[Move]) -> str:
    """What one step the engine played was, for a sentence: "the “Honest retry” retry", "a junk ticket (empty)".

    Reads the engine's step label ("retry", "round one", "junk ticket (empty)", "<slug>: retry" for the
    retry of the move sent first); a label it does not know is shown as it is.
    """
    head, sep, rest = step.label.partition(": ")
    earlier = find(tuple(moves), head) if sep else None
    what = rest if earlier is not None else step.label
    if what == "round one":
        words = "round one of a new call"
    elif what == "retry":
        words = "the retry"
    elif what.startswith("junk ticket"):
        words = "a " + what
    else:
        words = what
    if earlier is None:
        return words
    return f"{words}, for “{earlier.title}”" if what == "round one" else f"{words} of “{earlier.title}”"


def step_outcome_words(step: Step) -> str:
    """What one step got, in the story's words: a round one gets its ticket; a retry gets its outcome."""
    if step.label.endswith("round one"):
        return "input_required, with a ticket of its own"
    return OUTCOME_TEXT[outcome_of(step.reply)]


def pretty_json(value: object) -> str:
    """Indented JSON as plain text; the template escapes it like any other string."""
    return json.dumps(value, indent=2, ensure_ascii=False)
