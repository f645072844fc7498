"""The quick check: one form per question, instant feedback, and a running score with no cookies.

Answers and explanations never reach the page before the learner answers: the page renders only
prompts and choices, and each POST returns the verdict for that one question. The score travels
in a hidden field, signed with the services key ring, so a learner cannot inflate it and the
server keeps nothing between requests. The first answer to a question is what the score counts;
a wrong first answer earns a second try before the answer is revealed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from flask import Blueprint, Response, abort, request
from itsdangerous import BadData, URLSafeSerializer

from mrtr import as_object
from web.playground.switches import PlaygroundInputError
from web.quiz import tasks as quiz_tasks
from web.quiz.draws import DrawError
from web.site import htmx
from web.site.content import Choice, Lesson, Question, get_content
from web.site.services import get_services

bp = Blueprint("quiz", __name__)

SALT = "mrtr.quiz-progress"


#: Tries before the answer is revealed: a wrong first answer gets only why it is wrong.
TRIES = 2


@dataclass(frozen=True)
class Feedback:
    question: Question
    chosen: str | None  # the choice id the learner sent, when it is one of the choices
    correct: bool  # this choice is right
    counted: bool = False  # what the score counts for this question: the FIRST answer
    revealed: bool = True  # the answer and the explanation may be shown
    attempt: int = 1
    said: str = ""  # a task graded by the server: what the server really did with this answer
    problem: str = ""  # a task whose form could not be graded: why (nothing is counted)

    @property
    def missing(self) -> bool:
        return self.chosen is None

    @property
    def wrong_choice(self) -> Choice | None:
        chosen = self.question.choice(self.chosen)
        return chosen if chosen is not None and not self.correct else None


@dataclass
class State:
    """What the signed progress token holds: the first answer per question, and the choices tried."""

    answers: dict[str, bool]
    picks: dict[str, list[str]]

    def revealed(self, question: Question) -> bool:
        if question.id not in self.answers:
            return False
        tried = self.picks.get(question.id, [])
        # A token from before picks were recorded: the answer was already shown then.
        return not tried or tried[-1] == question.answer or len(tried) >= TRIES

    def feedback(self, question: Question) -> Feedback | None:
        """The feedback to show again for an answered question (after a reload), or None."""
        if question.id not in self.answers:
            return None
        tried = self.picks.get(question.id, [])
        chosen = tried[-1] if tried else None
        return Feedback(question, chosen, chosen == question.answer, self.answers[question.id],
                        self.revealed(question), max(1, len(tried)))


def answers_serializer() -> URLSafeSerializer:
    # itsdangerous signs with the last key of its list; the ring's first key is the newest.
    return URLSafeSerializer(list(reversed(get_services().ring.keys)), salt=SALT)


def read_state(lesson: Lesson, token: str | None) -> State:
    """The answers so far, or an empty state for a missing, bad or foreign token."""
    if not token:
        return State({}, {})
    try:
        data = answers_serializer().loads(token)
    except BadData:
        return State({}, {})
    if not isinstance(data, dict) or data.get("lesson") != lesson.slug or not isinstance(data.get("answers"), dict):
        return State({}, {})
    # A token from before a question was renamed names it by its old id (Question.formerly).
    questions = {i: q for q in lesson.questions for i in (*q.formerly, q.id)}
    answers = {questions[qid].id: ok for qid, ok in data["answers"].items()
               if qid in questions and isinstance(ok, bool)}
    raw_picks = as_object(data.get("picks"))
    picks = {}
    for qid, tried in raw_picks.items():
        if qid in questions and questions[qid].id in answers and isinstance(tried, list):
            ids = questions[qid].pick_ids
            picks[questions[qid].id] = [c for c in tried if isinstance(c, str) and c in ids][:TRIES]
    return State(answers, picks)


def read_progress(lesson: Lesson, token: str | None) -> dict[str, bool]:
    """The answers so far (question id -> the FIRST answer was correct), or nothing for a bad token."""
    return read_state(lesson, token).answers


def write_progress(lesson: Lesson, answers: dict[str, bool], picks: dict[str, list[str]] | None = None) -> str:
    return answers_serializer().dumps({"lesson": lesson.slug, "answers": answers, "picks": picks or {}})


class Score(TypedDict):
    """Points: each question weighs its `weight` (a drawn or doing item weighs more than a fixed one)."""

    correct: int  # the weight of the first answers that were right
    answered: int  # the weight of the questions answered
    total: int  # the weight of the whole quiz


def score_of(questions: tuple[Question, ...], answers: Mapping[str, bool]) -> Score:
    """The weighted score of `answers` (question id -> the first answer was right) over `questions`."""
    return {"correct": sum(q.weight for q in questions if answers.get(q.id) is True),
            "answered": sum(q.weight for q in questions if q.id in answers),
            "total": sum(q.weight for q in questions)}


class QuizContext(TypedDict):
    """What quiz/_quiz.html and its fragments render (the embed adds its own keys: web/embed/routes.py)."""

    lesson: Lesson
    questions: tuple[Question, ...]
    progress: str  # the signed progress token the next answer posts back
    score: Score
    feedback: Feedback | None  # the answer just checked
    feedbacks: dict[str, Feedback]  # every answered question's feedback, by question id
    tasks: dict[str, quiz_tasks.TaskView | None]  # the "answer by doing" questions' views


def quiz_context(lesson: Lesson, token: str | None, feedback: Feedback | None = None) -> QuizContext:
    """The quiz as the templates need it; every answered question shows its feedback again."""
    state = read_state(lesson, token)
    shown = {q.id: fb for q in lesson.questions if (fb := state.feedback(q)) is not None}
    if feedback is not None:
        shown[feedback.question.id] = feedback
    return {
        "lesson": lesson,
        "questions": lesson.questions,
        "progress": write_progress(lesson, state.answers, state.picks),
        "score": score_of(lesson.questions, state.answers),
        "feedback": feedback,
        "feedbacks": shown,
        "tasks": {q.id: quiz_tasks.task_view(q, lesson.slug) for q in lesson.questions if q.task is not None},
    }


def _lesson_or_404(slug: str) -> Lesson:
    lesson = get_content().lesson(slug)
    if lesson is None:
        abort(404)
    return lesson


@bp.get("/quiz/<slug>")
def quiz_page(slug: str) -> Response:
    """The quick check; an htmx request gets only the quiz (progress.js restores answers after a reload)."""
    lesson = _lesson_or_404(slug)
    quiz = quiz_context(lesson, request.args.get("progress"))
    share_question = lesson.question(request.args.get("embed") or "")  # the snippet's question; unknown: the first
    return htmx.render("quiz/quiz.html", "quiz/_quiz.html", lesson=lesson, quiz=quiz, share_question=share_question)


def check(lesson: Lesson, question: Question, form: Mapping[str, str]) -> tuple[Feedback, QuizContext]:
    """Check one posted answer against the signed progress; the embeddable quiz (web/embed/routes.py) reuses this.

    The first answer is what the score counts. A wrong first answer gets why it is wrong and a second
    try; the right answer and the explanation come with a right answer or after the second try.
    """
    state = read_state(lesson, form.get("progress"))
    said = problem = ""
    if question.task is not None:  # answered by doing: the real server grades it
        try:
            graded = quiz_tasks.grade(question, form, lesson.slug)
        except (quiz_tasks.TaskInputError, PlaygroundInputError, DrawError) as exc:
            graded, problem = None, str(exc)
        chosen_id, correct, said = (graded.chosen, graded.correct, graded.said) if graded else (None, False, "")
    else:
        picked = question.choice(form.get("choice"))
        chosen_id, correct = (picked.id, picked.id == question.answer) if picked else (None, False)
    if chosen_id is None:
        feedback = Feedback(question, None, False, problem=problem)
    else:
        already = state.revealed(question)
        state.answers.setdefault(question.id, correct)
        tried = state.picks.setdefault(question.id, [])
        if not already:
            tried.append(chosen_id)
        feedback = Feedback(question, chosen_id, correct, state.answers[question.id],
                            already or state.revealed(question), len(tried), said)
    return feedback, quiz_context(lesson, write_progress(lesson, state.answers, state.picks), feedback)


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
