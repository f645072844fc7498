"""What a course link can open: each lesson's quiz, each of its questions, and the build lesson, with the score
maximum the platform's line item gets (questions, or build steps). Read from the course content, never stored."""

from __future__ import annotations

from dataclasses import dataclass

from web.build import routes as build
from web.site.content import Lesson, Question, get_content

#: The custom parameter a deep-linked content item carries: which activity the link opens.
ITEM_PARAM = "mrtr_item"


@dataclass(frozen=True)
class Activity:
    item: str  # "quiz/<lesson>", "question/<lesson>/<question>" or "build/<lesson>"
    kind: str
    lesson: Lesson
    question: Question | None
    title: str
    maximum: int  # the line item's scoreMaximum: the questions' weights, or build steps


def activities() -> list[Activity]:
    """Everything an instructor can pick, in course order."""
    found = []
    for lesson in get_content().lessons:
        if lesson.questions:
            found.append(Activity(f"quiz/{lesson.slug}", "quiz", lesson, None, f"Quick check: {lesson.title}",
                                  sum(q.weight for q in lesson.questions)))
            for q in lesson.questions:
                found.append(Activity(f"question/{lesson.slug}/{q.id}", "question", lesson, q,
                                      f"{lesson.title}: {q.prompt}"[:200], q.weight))
        steps = build.load_build(lesson.directory)
        if steps is not None:
            found.append(Activity(f"build/{lesson.slug}", "build", lesson, None, lesson.title, len(steps.steps)))
    return found


def activity(item: object) -> Activity | None:
    """The activity `item` names (a content item's custom parameter, a form field), or None. A course link made
    before a question was renamed names its old id: it opens the question under its new one."""
    if not isinstance(item, str):
        return None
    found = next((a for a in activities() if a.item == item), None)
    kind, _, rest = item.partition("/")
    if found is None and kind == "question":
        slug, _, qid = rest.partition("/")
        lesson = get_content().lesson(slug)
        renamed = lesson.question(qid) if lesson else None
        if renamed is not None:
            return activity(f"question/{slug}/{renamed.id}") if renamed.id != qid else None
    return found
