"""Quiz items answered by doing (web.site.content.TASK_KINDS): the real in-process lab server grades every one.

Owns what each kind shows before the answer (a server log, a raw retry to edit, the checks to put in order)
and how it is graded: by playing on a fresh lab target (web.playground.lab.new_target: lab keys /mcp never
accepts, lab tokens, a fake clock, a fresh store), never by comparing with text in the quiz data. A chosen
move counts when it really produces the shown log; a prediction when the server really ends that way; an
order when it is the order of a real retry's trace; a raw retry when the server really deploys. It stores
nothing: the raw retry's ticket is minted again from the seed and time the form carries, as the playground's
own retry is. Never reads HX-* headers (web.site.htmx does) and never renders.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace

from moves.catalog import Move
from moves.engine import MINT_ID, MoveResult, Step, modern_request, outcome_of, play
from moves.target import Outcome, Target
from mrtr import CHECK_TITLES, CHECKS, JSONObject, as_object
from mrtr.messages import as_list
from web.playground.lab import CALL, MAX_AT, new_target, seeded_jti
from web.playground.switches import Toggles
from web.quiz import builds as quiz_builds
from web.quiz import draws as quiz_draws
from web.site.content import TASK_RIGHT, TASK_WRONG, Question, get_content
from web.site.moveviews import pretty_json

#: The lab clock every shown log is played on, so the log a chosen move produces can be compared line by line.
LOG_EPOCH = 1_790_000_000.0
LOG_SEED = "quiz-log"
#: The raw retry is sent this long after its ticket was minted: in time.
RETRY_AT = 8.0
#: The most a raw retry may weigh: a real one is under a kilobyte.
MAX_RETRY = 8 * 1024
RETRY_ID = 2


class TaskInputError(ValueError):
    """The form itself is unusable (not JSON, too long, a stale ticket): said to the learner, never counted."""


@dataclass(frozen=True)
class TaskGrade:
    correct: bool
    chosen: str  # the choice id, or TASK_RIGHT / TASK_WRONG for a free task
    said: str  # what the server really did, in words


@dataclass(frozen=True)
class TaskView:
    """What a task shows before it is answered."""

    kind: str
    log: tuple[str, ...] = ()  # which-move: the server log to explain
    retry: str = ""  # raw-retry: the retry to edit, as JSON
    seed: str = ""  # raw-retry: what re-mints its ticket
    minted_at: str = ""
    checks: tuple[tuple[str, str], ...] = ()  # order: (name, title), in alphabetical order of title
    draw: quiz_draws.DrawView | None = None  # draw: the situation drawn for this learner
    build: quiz_builds.BuildView | None = None  # a draw asking for a build: the situation, the goal and the parts


def _move(slug: str) -> Move:
    move = get_content().move(slug)
    if move is None:
        raise LookupError(f"the quiz names a move that is not in moves.toml: {slug!r}")
    return move


def move_log(move: Move) -> tuple[str, ...]:
    """Every line the server logs while `move` is played (its round one included), on the fixed lab clock."""
    played = play(move, new_target(Toggles(), LOG_EPOCH, jti=seeded_jti(LOG_SEED)), CALL)
    steps = ([played.minted] if played.minted else []) + list(played.steps)
    return tuple(line for step in steps for line in step.reply.log)


def _now() -> float:
    from web.site.services import get_services

    return float(get_services().server.clock())


def _mint(target: Target) -> Step:
    first = modern_request(MINT_ID, "tools/call", {"name": CALL.tool, "arguments": CALL.arguments}, CALL)
    target.begin()
    return Step("owner", 0.0, first, target.send("owner", first), "round one")


def broken_retry(ticket: str) -> JSONObject:
    """The raw retry the learner starts from: the right ticket, but a deploy to prod and a "yes" that is text."""
    params: JSONObject = {"name": CALL.tool, "arguments": {"env": "prod"},
                          "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": "yes"}}},
                          "requestState": ticket}
    return modern_request(MINT_ID, "tools/call", params, CALL)


def task_view(question: Question, lesson: str = "") -> TaskView | None:
    """What the task shows before it is answered; a draw is drawn afresh for each page (`lesson` binds it)."""
    task = question.task
    if task is None:
        return None
    if task.kind == "draw" and task.ask == "build":
        return TaskView(task.kind, build=quiz_builds.view(lesson, question.id))
    if task.kind == "draw":
        return TaskView(task.kind, draw=quiz_draws.view(lesson, question.id, task.ask))
    if task.kind == "which-move":
        return TaskView(task.kind, log=move_log(_move(task.move)))
    if task.kind == "order":
        return TaskView(task.kind, checks=tuple(sorted(CHECK_TITLES.items(), key=lambda item: item[1])))
    if task.kind == "raw-retry":
        seed, now = secrets.token_urlsafe(9), _now()
        minted = _mint(new_target(Toggles(), now, jti=seeded_jti(seed)))
        ticket = as_object(as_object(minted.reply.response).get("result")).get("requestState")
        return TaskView(task.kind, retry=pretty_json(broken_retry(str(ticket))), seed=seed, minted_at=f"{now:.0f}")
    return TaskView(task.kind)


def _said(played: MoveResult) -> str:
    failed = next((c["check"] for step in played.steps[-1:] for c in step.reply.trace or []
                   if c.get("outcome") == "fail"), "")
    words = {Outcome.COMPLETED: "completed", Outcome.REFUSED: "refused", Outcome.ASKED_AGAIN: "asked again",
             Outcome.ENDED: "ended the call without the work"}.get(played.outcome, str(played.outcome))
    return f"{words}{f' at “{CHECK_TITLES[failed]}”' if failed else ''}"


def _first_failure(played: MoveResult) -> str:
    last = played.steps[-1] if played.steps else None
    return next((c["check"] for c in (last.reply.trace or []) if c.get("outcome") == "fail"), "") if last else ""


def grade(question: Question, form: Mapping[str, str], lesson: str = "") -> TaskGrade | None:
    """Grade one answer on the real server; None when no answer was given (a choice task with no choice).

    Raises:
        TaskInputError: the form cannot be graded (says why).
        quiz_draws.DrawError: a draw's token cannot be read back (says why).
    """
    task = question.task
    assert task is not None
    if task.kind == "draw":
        drawn = quiz_builds.grade(lesson, question.id, form) if task.ask == "build" \
            else quiz_draws.grade(lesson, question.id, task.ask, form)
        if drawn is None:
            return None
        return TaskGrade(drawn[0], TASK_RIGHT if drawn[0] else TASK_WRONG, drawn[1])
    if task.kind == "which-move":
        chosen = question.choice(form.get("choice"))
        if chosen is None:
            return None
        shown, got = move_log(_move(task.move)), move_log(_move(chosen.id))
        return TaskGrade(got == shown, chosen.id, "that move's server log: " + " / ".join(got))
    if task.kind == "predict":
        chosen = question.choice(form.get("choice"))
        if chosen is None:
            return None
        switches = dict(task.switches)
        toggles = Toggles.parse(switches)
        move = _move(task.move)
        target = new_target(toggles, LOG_EPOCH, jti=seeded_jti(LOG_SEED))
        played = play(replace(move, at=move.at + toggles.offset), target, CALL)
        right = str(played.outcome) == chosen.outcome and _first_failure(played) == chosen.stopped_at
        return TaskGrade(right, chosen.id, f"the server {_said(played)}")
    if task.kind == "order":
        return _grade_order(form)
    return _grade_retry(form)


def _grade_order(form: Mapping[str, str]) -> TaskGrade:
    getlist = getattr(form, "getlist", None)
    sent = [str(v) for v in (getlist("order") if getlist else form.get("order", []))]
    if len(sent) != len(CHECKS) or set(sent) != set(CHECKS):
        raise TaskInputError(f"put each of the {len(CHECKS)} checks in exactly one place")
    honest = next(m for m in get_content().moves if m.expect == Outcome.COMPLETED and m.before is None)
    played = play(honest, new_target(Toggles(), LOG_EPOCH, jti=seeded_jti(LOG_SEED)), CALL)
    ran = [c["check"] for c in played.steps[-1].reply.trace or []]
    said = "the server's trace of an honest retry: " + ", ".join(CHECK_TITLES[c] for c in ran)
    return TaskGrade(sent == ran, TASK_RIGHT if sent == ran else TASK_WRONG, said)


def _grade_retry(form: Mapping[str, str]) -> TaskGrade:
    text = str(form.get("retry", ""))
    if not text.strip():
        raise TaskInputError("the retry is empty: edit the one shown and send it")
    if len(text) > MAX_RETRY:
        raise TaskInputError(f"that is longer than any retry ({MAX_RETRY // 1024} KiB at most)")
    try:
        message = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TaskInputError(f"the retry is not JSON: {str(exc)[:120]}") from None
    try:
        minted_at = float(str(form.get("minted_at", "")))
    except ValueError:
        raise TaskInputError("the ticket's mint time is missing: reload the quiz") from None
    seed = str(form.get("seed", ""))
    if not math.isfinite(minted_at) or abs(_now() - minted_at) > MAX_AT or not seed.replace("-", "").replace(
            "_", "").isalnum() or len(seed) > 64:
        raise TaskInputError("this ticket is from another visit: reload the quiz for a fresh one")
    target = new_target(Toggles(), minted_at, jti=seeded_jti(seed))
    _mint(target)
    target.advance(RETRY_AT, past_expiry=False, expires_at=None)
    reply = target.send("owner", message if isinstance(message, dict) else {"jsonrpc": "2.0", "id": None})
    outcome = outcome_of(reply)
    result = as_object(as_object(reply.response).get("result"))
    texts = " ".join(str(c.get("text", "")) for c in as_list(result.get("content")) if isinstance(c, dict))
    params = as_object(message.get("params")) if isinstance(message, dict) else {}
    deployed = (outcome == Outcome.COMPLETED and isinstance(message, dict) and message.get("method") == "tools/call"
                and params.get("name") == CALL.tool and texts.startswith("deployed"))
    error = as_object(as_object(reply.response).get("error"))
    said = (f"the server answered: {texts}" if texts else
            f"the server answered error {error.get('code')}: {str(error.get('message', ''))[:160]}" if error else
            "the server asked the question again" if outcome == Outcome.ASKED_AGAIN else
            f"the server answered: {pretty_json(reply.response)[:200]}")
    return TaskGrade(deployed, TASK_RIGHT if deployed else TASK_WRONG, said)
