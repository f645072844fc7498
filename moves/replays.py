"""One home for the judgement "a kept result served again is not a second piece of work": a server may keep the
result of a retry and, when the same principal replays that retry, answer with that result byte for byte instead
of refusing it. Masked (ids and numbers hidden, `work_of`) such a reply looks like the work; unmasked it carries
the first use's own evidence of work (its deploy number, its id), so no new work was done. A reply that is the
earlier result with any of that evidence changed (a new number: the cache counted as work) stays work.

Used by the exploration (moves/explore.py) and by the catalogue's moves (`kept_result`, applied where a move's
result is turned into a row). Pure functions over recorded steps: nothing here sends a request.
"""

from __future__ import annotations

import json
from dataclasses import replace

from mrtr import as_object

from .calls import MoveResult, Step, outcome_of
from .target import Outcome, Reply


def served_again(reply: Reply, first: Reply) -> bool:
    """Whether `reply` is, byte for byte, the complete result `first` got, and that result has something that
    differs between two works (a digit: a counter, an id), so that an equal one cannot be new work."""
    mine = as_object((reply.response or {}).get("result"))
    theirs = as_object((first.response or {}).get("result"))
    if not mine or outcome_of(reply) != Outcome.COMPLETED or outcome_of(first) != Outcome.COMPLETED:
        return False
    raw = json.dumps(mine.get("content"), sort_keys=True)
    same = raw == json.dumps(theirs.get("content"), sort_keys=True) and \
        mine.get("structuredContent") == theirs.get("structuredContent")
    return same and any(c.isdigit() for c in raw)


NOTE = ("the same principal got the first use's own result again, byte for byte (its counter and id unchanged): "
        "a kept result, not a second piece of work")


def kept_result(result: MoveResult) -> MoveResult:
    """A move that failed only because the same principal's replay (or a copy of a burst) was answered with the
    earlier use's own result, unchanged: it holds, with a note saying so. Any other result is returned as it is."""
    move = result.move
    if result.ok or result.warn or result.outcome != Outcome.COMPLETED or not result.steps:
        return result
    if move.copies > 1:
        return _burst_kept(result)
    first = move.before
    if first is None or move.before_ticket != "same" or first.expect != Outcome.COMPLETED or \
            first.sender != move.sender:
        return result
    earlier = [s for s in result.steps if s.label.startswith(f"{first.slug}: ")
               and outcome_of(s.reply) == Outcome.COMPLETED and s.role == move.sender]
    mine = result.steps[-1]
    if earlier and mine not in earlier and served_again(mine.reply, earlier[-1].reply):
        return replace(result, ok=True, note=NOTE)
    return result


def _burst_kept(result: MoveResult) -> MoveResult:
    """Copies sent at once: one did the work and every other copy that completed got that very result again,
    while those that did not complete got what the move expects."""
    move = result.move
    copies = [s for s in result.steps if s.label.startswith("copy ")]
    done = [s for s in copies if outcome_of(s.reply) == Outcome.COMPLETED]
    others = [s for s in copies if s not in done]
    if len(done) < 2 or not all(served_again(s.reply, done[0].reply) for s in done[1:]):
        return result
    if not all(move.holds(outcome_of(s.reply))[0] for s in others):
        return result
    return replace(result, ok=True, note="a kept result, not a second piece of work",
                   detail=f"one of the {len(copies)} identical retries sent at once did the work; {len(done) - 1} "
                          "more got its result again, byte for byte (its counter and id unchanged)")


def cached_step(step: Step, first: Step | None) -> bool:
    """`served_again` over steps, when there is a first one (the exploration's spent-ticket replays)."""
    return first is not None and step.role == first.role and served_again(step.reply, first.reply)
