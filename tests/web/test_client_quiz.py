"""Lesson 4's quiz (lessons/build-the-client/quiz.toml) held to the course's quiz rules: it is read by the course's
own loader and given, for this lesson alone, the checks tests/web/test_quiz_guessing.py, test_quiz.py and
test_quiz_draws.py give the whole course (guessing strategies near chance; no item's key phrase in another item;
no shown id naming its answer; a belief and a why for every wrong option; a drawn item; at least half the weight
from doing).
"""

from __future__ import annotations

import re

import pytest

from tests.web.test_quiz_guessing import (
    LESSON_MARGIN,
    LOW_TAIL,
    MARGIN,
    STRATEGIES,
    _grams,
    _key_phrases,
    low_tail,
    words,
)
from web.site.content import DEFAULT_ROOT, Course, Question, load_course

SLUG = "build-the-client"


@pytest.fixture(scope="module")
def course() -> Course:
    return load_course(DEFAULT_ROOT)


def chosen(questions: list[Question]) -> list[Question]:
    return [q for q in questions if len(q.choices) > 1]


def ours(course: Course) -> list[Question]:
    lesson = course.lesson(SLUG)
    assert lesson is not None
    return list(lesson.questions)


def test_the_quiz_has_a_drawn_item_and_half_its_weight_is_doing(course: Course) -> None:
    questions = ours(course)
    assert any(q.task is not None and q.task.kind == "draw" for q in questions)
    doing = sum(q.weight for q in questions if q.task is not None)
    assert 2 * doing >= sum(q.weight for q in questions)


@pytest.mark.parametrize("name", STRATEGIES)
def test_each_guessing_strategy_scores_near_chance_here_and_in_the_course(name: str, course: Course) -> None:
    strategy = STRATEGIES[name]
    every = chosen([q for lesson in course.lessons for q in lesson.questions])
    for questions, margin in ((chosen(ours(course)), LESSON_MARGIN), (every, MARGIN)):
        got = sum((q.answer in strategy(q)) / len(strategy(q)) for q in questions) / len(questions)
        chance = sum(1 / len(q.choices) for q in questions) / len(questions)
        assert got <= chance + margin, f"{name}: {got:.0%} against {chance:.0%}"
        assert low_tail(strategy, questions) >= LOW_TAIL, f"{name}: {got:.0%} against {chance:.0%}"


def test_no_item_states_another_items_right_option(course: Course) -> None:
    questions = ours(course)
    leaks = [f"{q.id} in {other.id}" for q in chosen(questions) for other in questions if other is not q
             for text in [other.prompt, *(c.text for c in other.choices)] if _key_phrases(q) & _grams(text)]
    assert leaks == []


def test_every_wrong_option_names_a_belief_and_no_option_or_id_gives_the_answer(course: Course) -> None:
    questions = chosen(ours(course))
    for q in questions:
        for c in q.choices:
            assert (not c.belief) if c.id == q.answer else (len(c.belief) >= 20 and c.why), (q.id, c.id)
            assert not re.search(r"\b(because|since|so that)\b", c.text, re.I), (q.id, c.text)
        given = {w for w in q.id.split("-") if len(w) > 3} & words(q.correct_choice.text) - words(q.prompt)
        assert not given, f"{q.id} names {sorted(given)} from its answer"
    longest = [q.id for q in questions if len(q.correct_choice.text) >= max(len(c.text) for c in q.choices)]
    shortest = [q.id for q in questions if len(q.correct_choice.text) <= min(len(c.text) for c in q.choices)]
    assert len(longest) <= len(questions) / 3 and len(shortest) <= len(questions) / 3
