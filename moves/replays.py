"""One home for the judgement "a kept result served again is not a second piece of work": a server may keep the
result of a retry and, when the same principal replays that retry, answer with that result byte for byte instead
of refusing it. Masked (ids and numbers hidden, `work_of`) such a reply looks like the work; unmasked it carries
the first use's own evidence of work, so no new work was done. A reply that is the earlier result with any of that
evidence changed (a new number: the cache counted as work) stays work.

What counts as "evidence of work" is derived, never guessed from the text: an independent work of the same request
(another ticket's honest flow, done before) must have got a result that differs from the first use's. Then the
server's results differ from one piece of work to the next, and a byte-for-byte copy of one is no new piece. When
two works cannot be told apart (a constant "Deployed." and nothing else), a copy proves nothing, and the replay is
judged as work (docs/checker/what-it-sees.md says what a client cannot see).

Used by the exploration (moves/explore.py) and by the catalogue's moves (`kept_result`, applied where a move's
result is turned into a row, beside the catalogue's first move's result). Pure functions over recorded steps:
nothing here sends a request.
"""

from __future__ import annotations

import json
from dataclasses import replace

from mrtr import as_object

from .calls import MoveResult, Step, outcome_of
from .target import Outcome, Reply


def _raw(reply: Reply | None) -> str | None:
    """A complete result's content, byte for byte (None for anything else)."""
    if reply is None or outcome_of(reply) != Outcome.COMPLETED:
        return None
    result = as_object((reply.response or {}).get("result"))
    if not result:
        return None
    return json.dumps([result.get("content"), result.get("structuredContent")], sort_keys=True)


def served_again(reply: Reply, first: Reply, other_work: Reply | None) -> bool:
    """Whether `reply` is, byte for byte, the complete result `first` got, while `other_work` (an independent
    piece of work of the same request) got another: results differ between two works, so an equal one is no new
    work."""
    mine, theirs, other = _raw(reply), _raw(first), _raw(other_work)
    return mine is not None and mine == theirs and other is not None and other != theirs


NOTE = ("the same principal got the first use's own result again, byte for byte (its counter and id unchanged): "
        "a kept result, not a second piece of work")


def kept_result(result: MoveResult, other_work: Reply | None) -> MoveResult:
    """A move that failed only because the same principal's replay (or a copy of a burst) was answered with the
    earlier use's own result, unchanged: it holds, with a note saying so. Any other result is returned as it is.
    `other_work`: an independent work's result of the same request (the catalogue's first move's), or None."""
    move = result.move
    if result.ok or result.warn or result.outcome != Outcome.COMPLETED or not result.steps:
        return result
    if move.copies > 1:
        return _burst_kept(result, other_work)
    first = move.before
    if first is None or move.before_ticket != "same" or first.expect != Outcome.COMPLETED or \
            first.sender != move.sender:
        return result
    earlier = [s for s in result.steps if s.label.startswith(f"{first.slug}: ")
               and outcome_of(s.reply) == Outcome.COMPLETED and s.role == move.sender]
    mine = result.steps[-1]
    if earlier and mine not in earlier and served_again(mine.reply, earlier[-1].reply, other_work):
        return replace(result, ok=True, note=NOTE)
    return result


def _burst_kept(result: MoveResult, other_work: Reply | None) -> MoveResult:
    """Copies sent at once: one did the work and every other copy that completed got that very result again,
    while those that did not complete got what the move expects."""
    move = result.move
    copies = [s for s in result.steps if s.label.startswith("copy ")]
    done = [s for s in copies if outcome_of(s.reply) == Outcome.COMPLETED]
    others = [s for s in copies if s not in done]
    if len(done) < 2 or not all(served_again(s.reply, done[0].reply, other_work) for s in done[1:]):
        return result
    if not all(move.holds(outcome_of(s.reply))[0] for s in others):
        return result
    return replace(result, ok=True, note="a kept result, not a second piece of work",
                   detail=f"one of the {len(copies)} identical retries sent at once did the work; {len(done) - 1} "
                          "more got its result again, byte for byte (its counter and id unchanged)")


def cached_step(step: Step, first: Step | None, other_work: Step | None) -> bool:
    """`served_again` over steps, when there is a first one (the exploration's spent-ticket replays; `other_work`:
    the honest flow's last step, an independent work)."""
    return first is not None and step.role == first.role and served_again(
        step.reply, first.reply, other_work.reply if other_work is not None else None)
