"""The quizzes measure understanding, not test-wiseness (issue 32, item 5).

A reader who never opened a lesson still has strategies: pick the longest option, the shortest, the one that
shares most words with the prompt, or the one unlike the others. Each strategy is run over every question of
every lesson's quiz.toml, and each must score near chance: not far above it (the strategy finds the answer) and
not far below it (the strategy finds a wrong option, which a guesser then strikes out: "the shortest is never
right" is as much a giveaway as "the longest always is"). The data rules behind that are checked too: every
wrong option names the learner belief it stands for, and no option argues for itself ("because ...").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction

import pytest

from web.site.content import Choice, Question, load_course

COURSE = load_course()
QUESTIONS: list[tuple[str, Question]] = [(lesson.slug, q) for lesson in COURSE.lessons for q in lesson.questions
                                         if len(q.choices) > 1]
#: Words too common to count as an echo of the prompt.
STOP = frozenset("""a an and are as at be but by can do does for from has have how if in is it its not of on or
so that the their then there this to was what when where which who why will with you your""".split())
#: A strategy may beat chance by this much, over the whole course, before it counts as a giveaway.
MARGIN = 0.12
LESSON_MARGIN = 0.2
#: The lower bound is a tail probability, not a margin, because with 5 or 8 items a fixed margin is either too
#: tight or cannot see "never right". A strategy fails when a quiz whose answers were placed blind to it (each
#: option equally likely to be the answer, independently per question) would score this low or lower with
#: probability under LOW_TAIL. 0.15 is about the one-sided tail the upper margin allows on a short lesson, made a
#: little stricter so that an 8-item lesson where a strategy is never right fails (0.75 ** 8 = 0.10); a 5-item
#: lesson alone cannot show it (0.75 ** 5 = 0.24), so the same bound is also applied to the whole course.
LOW_TAIL = 0.15


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_/.-]+", text.lower()) if w not in STOP and len(w) > 1}


def _pick(scores: Callable[[Question, Choice], float]) -> Callable[[Question], set[str]]:
    """The choice ids a strategy picks for a question: those with the top score (a tie splits the credit)."""

    def pick(q: Question) -> set[str]:
        best = max(scores(q, c) for c in q.choices)
        return {c.id for c in q.choices if scores(q, c) == best}

    return pick


def _oddness(q: Question, c: Choice) -> float:
    """How unlike the other options `c` is: 1 minus its mean word overlap (Jaccard) with them."""
    mine = words(c.text)
    others = [words(o.text) for o in q.choices if o.id != c.id]
    overlap = [len(mine & o) / len(mine | o) if mine | o else 1.0 for o in others]
    return 1 - sum(overlap) / len(overlap)


STRATEGIES: dict[str, Callable[[Question], set[str]]] = {
    "longest": _pick(lambda q, c: len(c.text)),
    "shortest": _pick(lambda q, c: -len(c.text)),
    "most words shared with the prompt": _pick(lambda q, c: len(words(c.text) & words(q.prompt))),
    "odd one out": _pick(_oddness),
    "fewest absolutes (never, always, only, every, nothing)": _pick(
        lambda q, c: -len(re.findall(r"\b(never|always|only|every|all|nothing|none|any)\b", c.text, re.I))),
    "first": _pick(lambda q, c: -q.choices.index(c)),
    "last": _pick(lambda q, c: q.choices.index(c)),
}


def of(lesson: str | None = None) -> list[Question]:
    """The questions of one lesson, or of the whole course."""
    return [q for slug, q in QUESTIONS if lesson in (None, slug)]


def low_tail(strategy: Callable[[Question], set[str]], questions: list[Question]) -> float:
    """P(a blind placement of the answers scores at most what the strategy scores on the real ones).

    Under blind placement a question where the strategy ties `k` of `n` options earns 1/k with probability k/n,
    else 0 (a Poisson-binomial with fractional credit); the exact distribution is built by convolution, in
    Fractions so that comparing it with the real score is exact."""
    dist = {Fraction(0): Fraction(1)}
    real = Fraction(0)
    for q in questions:
        picked = strategy(q)
        k, hit = len(picked), Fraction(len(picked), len(q.choices))
        nxt: dict[Fraction, Fraction] = {}
        for s, p in dist.items():
            nxt[s] = nxt.get(s, Fraction(0)) + p * (1 - hit)
            nxt[s + Fraction(1, k)] = nxt.get(s + Fraction(1, k), Fraction(0)) + p * hit
        dist = nxt
        real += Fraction(int(q.answer in picked), k)
    return float(sum(p for s, p in dist.items() if s <= real))


def score(strategy: Callable[[Question], set[str]], lesson: str | None = None) -> tuple[float, float]:
    """(expected score of the strategy, expected score of a blind guess), both as a fraction of the questions
    (of one lesson's, when `lesson` is given)."""
    got = chance = 0.0
    questions = [q for slug, q in QUESTIONS if lesson in (None, slug)]
    for q in questions:
        picked = strategy(q)
        got += (q.answer in picked) / len(picked)
        chance += 1 / len(q.choices)
    return got / len(questions), chance / len(questions)


@pytest.mark.parametrize("name", STRATEGIES)
def test_each_guessing_strategy_scores_near_chance(name: str) -> None:
    got, chance = score(STRATEGIES[name])
    assert got <= chance + MARGIN, f"{name}: {got:.0%} against {chance:.0%} by chance"
    for lesson in COURSE.lessons:  # a short quiz is noisier, so each lesson gets a wider margin
        if lesson.questions:
            got, chance = score(STRATEGIES[name], lesson.slug)
            assert got <= chance + LESSON_MARGIN, f"{lesson.slug}, {name}: {got:.0%} against {chance:.0%}"


@pytest.mark.parametrize("name", STRATEGIES)
def test_no_guessing_strategy_scores_far_below_chance(name: str) -> None:
    """A strategy that is (almost) never right tells the guesser which option to strike out."""
    for lesson in [None, *(lesson.slug for lesson in COURSE.lessons if lesson.questions)]:
        tail = low_tail(STRATEGIES[name], of(lesson))
        got, chance = score(STRATEGIES[name], lesson)
        assert tail >= LOW_TAIL, f"{lesson or 'course'}, {name}: {got:.0%} against {chance:.0%} (tail {tail:.3f})"


def test_the_strategies_catch_a_giveaway() -> None:
    """The test can fail: on a quiz whose right answer is always the longest, "longest" scores 100%."""
    rigged = Question("rigged", "s", "Which one?", (Choice("a", "short"), Choice("b", "a much longer option")), "b", "")
    assert STRATEGIES["longest"](rigged) == {"b"}
    assert STRATEGIES["most words shared with the prompt"](
        Question("x", "s", "Which ticket check runs first?", (Choice("a", "the ticket check that runs first"),
                                                              Choice("b", "signature")), "a", "")) == {"a"}


def test_the_low_bound_catches_a_never_right_rule() -> None:
    """Eight four-option items where "shortest" is never right fail the bound; right once in eight passes."""
    options = (Choice("a", "x"), Choice("b", "yy"), Choice("c", "zzz"), Choice("d", "wwww"))
    never = [Question(f"q{i}", "s", "Which?", options, "b", "") for i in range(8)]
    assert low_tail(STRATEGIES["shortest"], never) < LOW_TAIL
    once = [Question("q", "s", "Which?", options, "a", ""), *never[1:]]
    assert low_tail(STRATEGIES["shortest"], once) >= LOW_TAIL


def test_every_wrong_option_names_the_belief_it_stands_for() -> None:
    for slug, q in QUESTIONS:
        for c in q.choices:
            if c.id == q.answer:
                assert not c.belief, (slug, q.id, "the right answer holds no misconception")
            else:
                assert len(c.belief) >= 20 and c.why, (slug, q.id, c.id, "a wrong option needs a belief and a why")


def test_no_option_argues_for_itself() -> None:
    """An option that carries its own reason ("..., because ...") reads as the right one."""
    for slug, q in QUESTIONS:
        for c in q.choices:
            assert not re.search(r"\b(because|since|so that)\b", c.text, re.I), (slug, q.id, c.text)


#: The course's shared vocabulary: the names of the checks, the frozen ticket error and the outcomes a retry can
#: have. Items offer these as their options the way a drawn item does (the same options whatever the answer), so
#: one item's right outcome showing up as another item's option says nothing about either answer.
SHARED = ({title.lower() for title in __import__("mrtr").CHECK_TITLES.values()}
          | {"invalid or expired requeststate", "a fresh input_required", "the same question again"})


def _grams(text: str, n: int = 4) -> set[str]:
    """The phrases of `text`: runs of `n` words with at least two that are not stop words."""
    ws = re.findall(r"[a-z0-9_/.-]+", text.lower())
    return {" ".join(ws[i:i + n]) for i in range(len(ws) - n + 1) if sum(w not in STOP for w in ws[i:i + n]) >= 2}


def _key_phrases(q: Question) -> set[str]:
    """The phrases of `q`'s right option that are its own: none runs into the shared vocabulary."""
    pieces = [q.correct_choice.text.lower()]
    for shared in SHARED:
        pieces = [part for piece in pieces for part in piece.split(shared)]
    return {g for piece in pieces for g in _grams(piece)}


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.slug)
def test_no_item_states_another_items_right_option(lesson) -> None:  # noqa: ANN001
    """A prompt or option that carries another item's right option's phrase hands a reader that answer."""
    leaks = []
    for q in lesson.questions:
        if q.free or not q.choices:
            continue
        keys = _key_phrases(q)
        for other in lesson.questions:
            if other is q:
                continue
            for where, text in [("prompt", other.prompt), *((f"option {c.id}", c.text) for c in other.choices)]:
                if found := keys & _grams(text):
                    leaks.append(f"{q.id}'s answer in {other.id} {where}: {sorted(found)}")
    assert leaks == []


def test_no_shown_id_names_an_answer() -> None:
    """Ids are shown (anchors, embed links, course links): none may carry a word of its item's right option that
    the prompt does not already say."""
    for _, q in QUESTIONS:
        told = words(q.prompt)
        given = {w for w in q.id.split("-") if len(w) > 3} & words(q.correct_choice.text) - told
        assert not given, f"{q.id} names {sorted(given)} from its answer"
