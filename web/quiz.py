"""The quick check: one form per question, instant feedback, and a running score with no cookies.

Answers and explanations never reach the page before the learner answers: the page renders only
prompts and choices, and each POST returns the verdict for that one question. The score travels
in a hidden field, signed with the services key ring, so a learner cannot inflate it and the
server keeps nothing between requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, abort, render_template, request
from itsdangerous import BadData, URLSafeSerializer

from web import htmx
from web.content import Lesson, Question, get_content
from web.services import get_services

bp = Blueprint("quiz", __name__)

SALT = "mrtr.quiz-progress"


@dataclass(frozen=True)
class Feedback:
    question: Question
    chosen: str | None  # the choice id the learner sent, when it is one of the choices
    correct: bool

    @property
    def missing(self) -> bool:
        return self.chosen is None


def _serializer() -> URLSafeSerializer:
    # itsdangerous signs with the last key of its list; the ring's first key is the newest.
    return URLSafeSerializer(list(reversed(get_services().ring.keys)), salt=SALT)


def read_progress(lesson: Lesson, token: str | None) -> dict[str, bool]:
    """The answers so far (question id -> answered correctly), or nothing for a bad or foreign token."""
    if not token:
        return {}
    try:
        data = _serializer().loads(token)
    except BadData:
        return {}
    if not isinstance(data, dict) or data.get("lesson") != lesson.slug or not isinstance(data.get("answers"), dict):
        return {}
    known = {q.id for q in lesson.questions}
    return {qid: ok for qid, ok in data["answers"].items() if qid in known and isinstance(ok, bool)}


def write_progress(lesson: Lesson, answers: dict[str, bool]) -> str:
    return _serializer().dumps({"lesson": lesson.slug, "answers": answers})


def quiz_context(lesson: Lesson, token: str | None, feedback: Feedback | None = None) -> dict[str, Any]:
    answers = read_progress(lesson, token)
    return {
        "lesson": lesson,
        "questions": lesson.questions,
        "progress": write_progress(lesson, answers),
        "score": {"correct": sum(answers.values()), "answered": len(answers), "total": len(lesson.questions)},
        "feedback": feedback,
    }


def _lesson_or_404(slug: str) -> Lesson:
    lesson = get_content().lesson(slug)
    if lesson is None:
        abort(404)
    return lesson


@bp.get("/quiz/<slug>")
def quiz_page(slug: str) -> str:
    lesson = _lesson_or_404(slug)
    return render_template("quiz/quiz.html", lesson=lesson, quiz=quiz_context(lesson, request.args.get("progress")))


def check(lesson: Lesson, question: Question, form: Mapping[str, str]) -> tuple[Feedback, dict[str, Any]]:
    """Check one posted answer against the signed progress; the embeddable quiz (web/embed.py) reuses this."""
    answers = read_progress(lesson, form.get("progress"))
    chosen = question.choice(form.get("choice"))
    if chosen is not None:
        answers[question.id] = chosen.id == question.answer
    feedback = Feedback(question, chosen.id if chosen else None, chosen is not None and chosen.id == question.answer)
    return feedback, quiz_context(lesson, write_progress(lesson, answers), feedback)


@bp.post("/quiz/<slug>/<qid>/answer")
def answer(slug: str, qid: str) -> Response:
    """Check one answer: the feedback fragment for htmx, the whole quiz page without JavaScript."""
    lesson = _lesson_or_404(slug)
    question = lesson.question(qid)
    if question is None:
        abort(404)
    feedback, quiz = check(lesson, question, request.form)
    return htmx.render("quiz/quiz.html", "quiz/_feedback.html", lesson=lesson, quiz=quiz, question=question,
                       feedback=feedback, oob=True)
