"""Quiz items where the learner builds the retry (task kind "draw", ask "build"): a situation drawn per learner
from the lab server (a real ticket, minted at a drawn time for a drawn env with a drawn lifetime) and a drawn goal,
to complete or to be stopped by one named check. The learner builds the retry from its parts (which ticket, who
sends it, which env, which answer, when) in a plain form; the real in-process lab server plays what was built, and
its own outcome grades it. The draw travels in the signed draw token of web/quiz/draws.py (bound to the lesson
and question), so the attempt is graded on the situation the learner saw; nothing is stored. Never renders.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, replace

from mrtr import CHECK_TITLES, CHECKS
from web.quiz import draws as quiz_draws
from web.quiz.draws import Situation
from web.site.moveviews import pretty_json

#: The goals a draw may set: complete, or be refused by each check in turn (every earlier check passing).
GOALS: tuple[str, ...] = ("completed", *(f"refused-{check}" for check in CHECKS))
#: The parts of a retry, each (form value, words). The same for every draw but `env` and `when`.
TICKETS: tuple[tuple[str, str], ...] = (
    ("as-minted", "The ticket as the server minted it"),
    ("edited", "The ticket with its payload's env rewritten, its signature left as it was"),
    ("spent", "The ticket after bob's own retry of it was answered"),
)
SENDERS: tuple[tuple[str, str], ...] = (("bob", "bob's client"), ("alice", "alice's client"))
ANSWERS: tuple[tuple[str, str], ...] = (
    ("yes", 'Accept, with confirm true'),
    ("no", "Accept, with confirm false"),
    ("decline", "Decline the question"),
    ("missing", "No inputResponses at all"),
    ("malformed", 'Accept, with confirm the text "yes"'),
)
PARTS = ("ticket", "sender", "env", "answer", "when")


def goal_words(goal: str) -> str:
    if goal == "completed":
        return "a retry the server completes: the deploy is done"
    check = goal.removeprefix("refused-")
    return f"a retry the server refuses at the {check} check (“{CHECK_TITLES.get(check, check)}”)"


def goal_of(situation: Situation) -> str:
    return random.Random(f"goal\x00{situation.seed}").choice(GOALS)


def times(situation: Situation) -> tuple[tuple[str, int], ...]:
    """The two moments the retry may be sent, on the server's clock: before the ticket expires, and after."""
    rng = random.Random(f"when\x00{situation.seed}")
    early = situation.minted_at + rng.randrange(2, situation.lifetime - 5)
    late = situation.minted_at + situation.lifetime + rng.randrange(5, 600)
    return (("early", early), ("late", late))


def build(situation: Situation, form: Mapping[str, str]) -> Situation | None:
    """The situation the learner built from the drawn one; None when a part is missing or not one offered."""
    picked = {part: str(form.get(part, "")) for part in PARTS}
    if picked["ticket"] not in dict(TICKETS) or picked["sender"] not in dict(SENDERS) \
            or picked["env"] not in quiz_draws.ENVS or picked["answer"] not in dict(ANSWERS) \
            or picked["when"] not in dict(times(situation)):
        return None
    at = dict(times(situation))[picked["when"]] - situation.minted_at
    return replace(situation, faults=(), sender=picked["sender"], sent_env=picked["env"], answer=picked["answer"],
                   at=at, tampered=picked["ticket"] == "edited", spent=picked["ticket"] == "spent")


@dataclass(frozen=True)
class BuildView:
    """What a build item shows: the ticket's payload, the goal, and the parts to choose from."""

    token: str
    payload: str
    minted_at: int
    goal: str  # in words
    tickets: tuple[tuple[str, str], ...]
    senders: tuple[tuple[str, str], ...]
    envs: tuple[str, ...]
    answers: tuple[tuple[str, str], ...]
    times: tuple[tuple[str, int], ...]


def view(lesson: str, question: str) -> BuildView:
    token, situation = quiz_draws.new_token(lesson, question)
    minted = quiz_draws.play(situation)
    return BuildView(token, pretty_json(minted.claims), situation.minted_at, goal_words(goal_of(situation)),
                     TICKETS, SENDERS, quiz_draws.ENVS, ANSWERS, times(situation))


def grade(lesson: str, question: str, form: Mapping[str, str]) -> tuple[bool, str] | None:
    """(right, what the server did) for a posted build; None when a part was not chosen.

    Raises:
        quiz_draws.DrawError: the draw cannot be read back.
    """
    situation = quiz_draws.read_token(lesson, question, str(form.get("draw", "")))
    built = build(situation, form)
    if built is None:
        return None
    played = quiz_draws.play(built)
    goal = goal_of(situation)
    words = dict(quiz_draws.OUTCOMES)[played.outcome]
    return (played.outcome == goal,
            f"the server played the retry you built: {words.lower()} ({played.said}); the goal was {goal_words(goal)}")
