"""A measured test-wise reader (issue 43, "Done when"): one who sees only what the quiz page shows, and never opened
a lesson, cannot score more than about half of any lesson's quiz weight.

The reader works from each quiz page as a visitor gets it: the prompts and the option words as rendered, in the
order shown, never a form value or an id (tests/web/test_quiz_guessing.py holds the item rules: near chance per
strategy, beliefs recorded, no item stating another's answer; this module extends it with weights, the rendered
page and the drawn items). Each strategy picks among an item's options (a tie splits the credit); a fixed item is
graded on its answer, a drawn item over many draws played on the lab server (its options are the same for every
draw, so a strategy's pick earns how often the server makes it right), and an item answered in its own form (an
order to build, a retry to write) earns the reader nothing, there being nothing to pick. The weighted expected score
of every strategy must stay at or below HALF of each lesson's weight.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from bs4 import BeautifulSoup
from flask import Flask

from tests.web.test_quiz_guessing import words
from web.quiz import draws as quiz_draws
from web.site.content import Lesson, Question, load_course

COURSE = load_course()
#: The most of a lesson's weight any one test-wise strategy may expect to score.
HALF = 0.5
#: Draws played per drawn item (the same seeds every run: the measure does not move between runs).
DRAWS = 150
_HEDGES = re.compile(r"\b(may|might|can|could|usually|often|some|sometimes|unless|likely|probably|depends|"
                     r"until|only if|at most|at least)\b", re.I)
_SPECIFIC = re.compile(r"[\w./-]*[\d_./:][\w./:-]*|\"[^\"]+\"|“[^”]+”|-\d+")


@dataclass(frozen=True)
class Shown:
    """One item as the page shows it; `values` and `weight` grade the pick and are never read by a strategy."""

    qid: str
    prompt: str
    options: tuple[str, ...]  # the option words, in the order shown
    values: tuple[str, ...]
    weight: int


def shown_quiz(app: Flask, lesson: Lesson) -> list[Shown]:
    """The lesson's quiz as its page renders it."""
    page = BeautifulSoup(app.test_client().get(f"/quiz/{lesson.slug}").data, "html.parser")
    items = []
    for li in page.select("li.question"):
        qid = str(li["id"]).removeprefix("q-")
        question = lesson.question(qid)
        assert question is not None, qid
        radios = li.select('input[type="radio"]')
        labels = [" ".join(li.select_one(f'label[for="{r["id"]}"]').get_text().split()) for r in radios]
        items.append(Shown(qid, " ".join(li.legend.get_text().split()), tuple(labels),
                           tuple(str(r["value"]) for r in radios), question.weight))
    assert [s.qid for s in items] == [q.id for q in lesson.questions]  # every item is on the page
    return items


#: A strategy: (the item, the lesson's other items as shown) -> a score per option; it picks the top ones.
Strategy = Callable[[Shown, list[Shown]], list[float]]


def _odd(item: Shown, _: list[Shown]) -> list[float]:
    sets = [words(o) for o in item.options]
    return [1 - sum(len(a & b) / len(a | b) if a | b else 1.0 for b in sets if b is not a) / max(1, len(sets) - 1)
            for a in sets]


def _echo_of_others(item: Shown, others: list[Shown]) -> list[float]:
    """Words the option shares with what the rest of the page says (other prompts and options): a reader who
    takes the phrasing that recurs across the quiz for the course's line."""
    said = [w for other in others if other is not item for text in (other.prompt, *other.options) for w in words(text)]
    return [sum(said.count(w) for w in words(o)) for o in item.options]


STRATEGIES: dict[str, Strategy] = {
    "longest": lambda item, _: [len(o) for o in item.options],
    "shortest": lambda item, _: [-len(o) for o in item.options],
    "most specific (numbers, names, code)": lambda item, _: [len(_SPECIFIC.findall(o)) for o in item.options],
    "most hedged": lambda item, _: [len(_HEDGES.findall(o)) for o in item.options],
    "least hedged": lambda item, _: [-len(_HEDGES.findall(o)) for o in item.options],
    "most words shared with the prompt": lambda item, _: [len(words(o) & words(item.prompt)) for o in item.options],
    "repeats the rest of the quiz": _echo_of_others,
    "odd one out": _odd,
    "first": lambda item, _: [-i for i in range(len(item.options))],
    "last": lambda item, _: list(range(len(item.options))),
    "second": lambda item, _: [float(i == 1) for i in range(len(item.options))],
}


def picks(strategy: Strategy, item: Shown, others: list[Shown]) -> set[str]:
    scores = strategy(item, others)
    if not scores:
        return set()
    return {v for v, s in zip(item.values, scores, strict=True) if s == max(scores)}


def rights_over_draws(app: Flask, question: Question) -> dict[str, float]:
    """How often each option is the right one over DRAWS draws of a drawn item, as the lab server plays them."""
    ask = question.task.ask if question.task else "outcome"
    counts: dict[str, float] = {}
    with app.app_context():
        for n in range(DRAWS):
            right = quiz_draws.right_option(quiz_draws.play(quiz_draws.draw(f"testwise-{n}", 1_790_000_000)), ask)
            counts[right] = counts.get(right, 0) + 1 / DRAWS
    return counts


def expected(app: Flask, lesson: Lesson, strategy: Strategy, shown: list[Shown]) -> float:
    """The strategy's expected score on the lesson's quiz, in points."""
    got = 0.0
    for item in shown:
        question = lesson.question(item.qid)
        assert question is not None
        picked = picks(strategy, item, shown)
        if not picked:
            continue  # answered in its own form: nothing to pick from
        if question.task is not None and question.task.kind == "draw":
            rights = rights_over_draws(app, question)
            got += item.weight * sum(rights.get(v, 0.0) for v in picked) / len(picked)
        else:
            got += item.weight * (question.answer in picked) / len(picked)
    return got


@pytest.fixture(scope="module")
def module_app() -> Flask:
    from app import create_app
    from tests.conftest import APP_CONFIG

    return create_app(dict(APP_CONFIG))


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.slug)
def test_a_test_wise_reader_scores_at_most_half_of_each_lessons_weight(module_app: Flask, lesson: Lesson) -> None:
    shown = shown_quiz(module_app, lesson)
    total = sum(item.weight for item in shown)
    assert total == sum(q.weight for q in lesson.questions)
    report = {name: expected(module_app, lesson, strategy, shown) for name, strategy in STRATEGIES.items()}
    print(lesson.slug, total, {name: round(points, 2) for name, points in report.items()})  # shown with -s
    over = {name: f"{points:.1f} of {total}" for name, points in report.items() if points > HALF * total}
    assert over == {}, f"{lesson.slug}: a test-wise reader scores over half the weight"


def test_the_reader_would_catch_a_quiz_that_gives_itself_away(module_app: Flask) -> None:
    """The measure can fail: on items whose right option is always the longest, "longest" takes every point."""
    lesson = COURSE.lessons[0]
    fixed = [q for q in lesson.questions if q.task is None and len(q.choices) > 1]
    rigged = [Shown(q.id, q.prompt, tuple(("x" * 200 if c.id == q.answer else c.text) for c in q.choices),
                    tuple(c.id for c in q.choices), q.weight) for q in fixed]
    assert expected(module_app, lesson, STRATEGIES["longest"], rigged) == sum(q.weight for q in fixed)


#: How far above a blind guess (1 in the number of options) a drawn item's most often right option may be.
DRAWN_MARGIN = 0.2


def test_no_option_of_a_drawn_item_is_a_safe_pick(module_app: Flask) -> None:
    """No single option of a drawn item is right so often over the draws that always picking it pays: the two-way
    "spent" item may not lean far to one side, nor may one outcome dominate the nine."""
    for lesson in COURSE.lessons:
        for question in lesson.questions:
            if question.task is not None and question.task.kind == "draw" and question.task.ask in quiz_draws.ASKS:
                options = quiz_draws.ASKS[question.task.ask]
                rights = rights_over_draws(module_app, question)
                assert max(rights.values()) <= 1 / len(options) + DRAWN_MARGIN, (lesson.slug, question.id, rights)
