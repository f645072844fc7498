"""The course as data: `lessons/` read once at app start into frozen records, and validated.

Lessons are authored as TOML and Markdown. `load_course` parses all of it, renders the Markdown
(CommonMark with raw HTML switched off, so nothing in a lesson file reaches the page unescaped)
and checks that the pieces fit together. Anything wrong raises `ContentError` from `create_app()`,
so a broken lesson fails the test suite instead of the live demo.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from flask import Flask, current_app
from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.anchors import anchors_plugin

from moves.catalog import DEFAULT_PATH as DEFAULT_MOVES
from moves.catalog import Move, load_moves
from mrtr_settings.environment import Settings
from web.site.services import SETTINGS_KEY

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "lessons"

#: The live figures a section may ask for; each has a template `lessons/_widget_<name>.html`.
WIDGETS = frozenset({"roundtrip", "anatomy", "timeline", "sealed", "shim", "sdk", "lab", "breakit",
                     "playground", "quiz", "build", "exchange"})

_SLUG = re.compile(r"\A[a-z0-9]+(?:-[a-z0-9]+)*\Z")


class ContentError(ValueError):
    """A lesson file is missing, malformed or inconsistent; the message names the file and the fault."""


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    file: str
    html: Markup
    widget: str | None = None


@dataclass(frozen=True)
class RoundTripCaption:
    n: int
    title: str
    caption: str


@dataclass(frozen=True)
class Choice:
    id: str
    text: str
    why: str = ""  # for a wrong choice: why it is wrong (shown when the learner picks it)
    #: For a wrong choice: the belief a learner really holds that it stands for (quiz data only, never shown as
    #: a hint; tests/web/test_quiz_guessing.py requires one for every wrong choice).
    belief: str = ""
    #: For a "predict" task's choice: the outcome and the check it names (the server decides which is right).
    outcome: str = ""
    stopped_at: str = ""


#: Quiz items the learner answers by doing; the real in-process server grades each (web/quiz/tasks.py).
#: which-move: the choices are moves (ids are move slugs), and the chosen move must produce the shown server log;
#: predict: the choices are outcomes of `move` under `switches`, and the server plays it to say which is right;
#: order: the learner puts the checks in order, compared with the trace of a real retry;
#: raw-retry: the learner edits a raw retry until the server completes it;
#: draw: a situation drawn fresh per learner from the real server, whose outcome the learner predicts among options
#: that are the same for every draw (web/quiz/draws.py).
TASK_KINDS: tuple[str, ...] = ("which-move", "predict", "order", "raw-retry", "draw")
#: Tasks answered in a form of their own, not with a choice: right or wrong is recorded as one of these.
FREE_TASKS: frozenset[str] = frozenset({"order", "raw-retry", "draw"})
#: The most a question may weigh in its quiz's score (doing and drawn items weigh more than a fixed one).
MAX_WEIGHT = 10
TASK_RIGHT, TASK_WRONG = "ok", "no"


@dataclass(frozen=True)
class Task:
    kind: str
    move: str = ""  # which-move: the move whose log is shown; predict: the move played
    switches: tuple[tuple[str, str], ...] = ()  # predict: the playground switches, as query pairs
    model: str = ""  # free tasks: the model answer, shown once the answer is revealed
    ask: str = ""  # draw: what the learner predicts, "outcome" (what the server does) or "spent"; or "build" (builds)


@dataclass(frozen=True)
class Question:
    id: str
    section: str
    prompt: str
    choices: tuple[Choice, ...]
    answer: str
    explanation: str
    try_it: str = ""  # a predict-then-run question: the playground URL whose result shows the answer
    transcript: str = ""  # raw lines to read before answering (a debugging question)
    task: Task | None = None  # a question answered by doing, graded by the server
    weight: int = 1  # what a right first answer adds to the score (the quiz's total is the sum)
    #: Ids it had before (renamed so no id gives an answer away): stored progress and course links still find it.
    formerly: tuple[str, ...] = ()

    @property
    def free(self) -> bool:
        """Answered in a form of its own (an order, a raw retry), not by picking a choice."""
        return self.task is not None and self.task.kind in FREE_TASKS

    @property
    def pick_ids(self) -> set[str]:
        """What the signed progress may record as a pick for this question."""
        return {TASK_RIGHT, TASK_WRONG} if self.free else {c.id for c in self.choices}

    def choice(self, choice_id: str | None) -> Choice | None:
        return next((c for c in self.choices if c.id == choice_id), None)

    @property
    def correct_choice(self) -> Choice:
        if self.free:
            return Choice(TASK_RIGHT, self.task.model if self.task else "")
        return next(c for c in self.choices if c.id == self.answer)


@dataclass(frozen=True)
class Lesson:
    slug: str
    title: str
    summary: str
    duration_minutes: int
    objectives: tuple[str, ...]
    sections: tuple[Section, ...]
    roundtrip_steps: tuple[RoundTripCaption, ...]
    questions: tuple[Question, ...]
    directory: Path

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.id == section_id), None)

    def question(self, question_id: str) -> Question | None:
        """The question with this id, or the one that had it before a rename."""
        return next((q for q in self.questions if q.id == question_id), None) or next(
            (q for q in self.questions if question_id in q.formerly), None)


@dataclass(frozen=True)
class Course:
    title: str
    summary: str
    lessons: tuple[Lesson, ...]
    moves: tuple[Move, ...]

    def lesson(self, slug: str) -> Lesson | None:
        return next((lesson for lesson in self.lessons if lesson.slug == slug), None)

    def move(self, slug: str) -> Move | None:
        return next((m for m in self.moves if m.slug == slug), None)


# -- reading ---------------------------------------------------------------------------------------


#: A TOML table as read: its values are whatever the file holds, checked by `_field` and `_tables` as they are read.
Table = Mapping[str, object]
T = TypeVar("T")


def _read_toml(path: Path) -> Table:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ContentError(f"{path}: file is missing") from None
    except tomllib.TOMLDecodeError as exc:
        raise ContentError(f"{path}: not valid TOML ({exc})") from None


def _field(table: Table, key: str, kind: type[T], where: str) -> T:
    if key not in table:
        raise ContentError(f"{where}: missing {key!r}")
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ContentError(f"{where}: {key!r} must be a {kind.__name__}, got {type(value).__name__}")
    if isinstance(value, str) and not value.strip():
        raise ContentError(f"{where}: {key!r} is empty")
    return value


def _tables(data: Table, key: str, where: str) -> list[Table]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ContentError(f"{where}: {key!r} must be an array of tables")
    return value


def _unique(ids: list[str], what: str, where: str) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise ContentError(f"{where}: duplicate {what} {item!r}")
        seen.add(item)


def _markdown(section_id: str) -> MarkdownIt:
    """CommonMark without raw HTML; headings inside a section get ids prefixed by the section's id."""
    md = MarkdownIt("commonmark", {"html": False})

    def slug(title: str) -> str:
        words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        return f"{section_id}--{words}" if words else section_id

    anchors_plugin(md, min_level=2, max_level=4, slug_func=slug)
    md.enable("table")
    # A wide table scrolls inside its own box at 390 px; the box takes focus so a keyboard can scroll it.
    md.add_render_rule("table_open", lambda *_: '<div class="table-wrap" tabindex="0"><table>\n')
    md.add_render_rule("table_close", lambda *_: "</table>\n</div>\n")
    return md


def _load_moves(path: Path | None) -> tuple[Move, ...]:
    try:
        return load_moves(path)
    except ValueError as exc:
        raise ContentError(str(exc)) from None


def _no_move_notes(meta: Table, where: str) -> None:
    """A move's notes live with the move in moves.toml (`Move.note_for`), so a lesson holds none of its own."""
    if "move_notes" in meta:
        raise ContentError(f"{where}: move notes live with their moves in moves.toml ([[moves.notes]])")


def _load_questions(path: Path, section_ids: set[str]) -> tuple[Question, ...]:
    data = _read_toml(path)
    questions: list[Question] = []
    for i, raw in enumerate(_tables(data, "questions", str(path)), 1):
        where = f"{path}: question #{i}"
        qid = _field(raw, "id", str, where)
        where = f"{path}: question {qid!r}"
        if not _SLUG.match(qid):
            raise ContentError(f"{where}: the id must be lower-case words joined by hyphens")
        section = _field(raw, "section", str, where)
        if section not in section_ids:
            raise ContentError(f"{where}: section {section!r} is not a section of this lesson")
        choices = []
        for j, choice in enumerate(_tables(raw, "choices", where), 1):
            why = choice.get("why", "")
            belief = choice.get("belief", "")
            if not isinstance(why, str) or not isinstance(belief, str):
                raise ContentError(f"{where} choice #{j}: 'why' and 'belief' must be strings")
            outcome, stopped = choice.get("outcome", ""), choice.get("stopped_at", "")
            if not isinstance(outcome, str) or not isinstance(stopped, str):
                raise ContentError(f"{where} choice #{j}: 'outcome' and 'stopped_at' must be strings")
            choices.append(Choice(_field(choice, "id", str, f"{where} choice #{j}"),
                                  _field(choice, "text", str, f"{where} choice #{j}"), why.strip(), belief.strip(),
                                  outcome, stopped))
        task = _task(raw.get("task"), where)
        formerly = raw.get("formerly", [])
        if not isinstance(formerly, list) or not all(isinstance(f, str) and _SLUG.match(f) for f in formerly):
            raise ContentError(f"{where}: formerly must list the question's earlier ids")
        weight = raw.get("weight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= MAX_WEIGHT:
            raise ContentError(f"{where}: weight must be a whole number from 1 to {MAX_WEIGHT}")
        if task is not None and task.kind in FREE_TASKS:
            if choices:
                raise ContentError(f"{where}: a {task.kind} task is answered in its own form, without choices")
            questions.append(Question(qid, section, _field(raw, "prompt", str, where), (), TASK_RIGHT,
                                      _field(raw, "explanation", str, where), task=task, weight=weight,
                                      formerly=tuple(formerly)))
            continue
        if len(choices) < 2:
            raise ContentError(f"{where}: needs at least two choices")
        _unique([c.id for c in choices], "choice id", where)
        answer = _field(raw, "answer", str, where)
        if answer not in {c.id for c in choices}:
            raise ContentError(f"{where}: the answer {answer!r} is not one of its choices")
        try_it = raw.get("try_it", "")
        if not isinstance(try_it, str) or (try_it and not try_it.startswith("/playground?")):
            raise ContentError(f"{where}: 'try_it' must be a /playground?... URL")
        transcript = raw.get("transcript", "")
        if not isinstance(transcript, str):
            raise ContentError(f"{where}: 'transcript' must be a string")
        questions.append(Question(qid, section, _field(raw, "prompt", str, where), tuple(choices), answer,
                                  _field(raw, "explanation", str, where), try_it, transcript.strip("\n"), task,
                                  weight, tuple(formerly)))
    _unique([i for q in questions for i in (q.id, *q.formerly)], "question id", str(path))
    return tuple(questions)


def _task(raw: object, where: str) -> Task | None:
    """A question's [questions.task] table, or None; the moves it names are checked against the catalogue by
    tests/web/test_quiz_tasks.py (the catalogue is loaded after the lessons)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("kind") not in TASK_KINDS:
        raise ContentError(f"{where}: task.kind must be one of {', '.join(TASK_KINDS)}")
    switches = raw.get("switches", {})
    if not isinstance(switches, dict) or not all(isinstance(v, str) for v in switches.values()):
        raise ContentError(f"{where}: task.switches must map switch names to strings")
    move, model = raw.get("move", ""), raw.get("model", "")
    if not isinstance(move, str) or not isinstance(model, str):
        raise ContentError(f"{where}: task.move and task.model must be strings")
    if raw["kind"] in FREE_TASKS and not model:
        raise ContentError(f"{where}: a {raw['kind']} task needs a model answer")
    ask = raw.get("ask", "outcome" if raw["kind"] == "draw" else "")
    if ask not in (("outcome", "spent", "build") if raw["kind"] == "draw" else ("",)):
        raise ContentError(f"{where}: task.ask must be outcome, spent or build, and only for a draw")
    return Task(raw["kind"], move, tuple(sorted(switches.items())), model, ask)


def _load_lesson(root: Path, entry: Table) -> Lesson:
    where = f"{root / 'course.toml'}: lesson"
    slug = _field(entry, "slug", str, where)
    if not _SLUG.match(slug):
        raise ContentError(f"{where} {slug!r}: the slug must be lower-case words joined by hyphens")
    directory = root / _field(entry, "dir", str, f"{where} {slug!r}")
    meta_path = directory / "meta.toml"
    meta = _read_toml(meta_path)
    where = str(meta_path)

    sections: list[Section] = []
    for i, raw in enumerate(_tables(meta, "sections", where), 1):
        sid = _field(raw, "id", str, f"{where}: section #{i}")
        swhere = f"{where}: section {sid!r}"
        if not _SLUG.match(sid):
            raise ContentError(f"{swhere}: the id must be lower-case words joined by hyphens")
        widget = raw.get("widget")
        if widget is not None and widget not in WIDGETS:
            raise ContentError(f"{swhere}: unknown widget {widget!r} (known: {', '.join(sorted(WIDGETS))})")
        file = _field(raw, "file", str, swhere)
        path = directory / "sections" / file
        if path.parent != directory / "sections" or not path.is_file():
            raise ContentError(f"{swhere}: section file {path} does not exist")
        html = Markup(_markdown(sid).render(path.read_text(encoding="utf-8")))  # noqa: S704 - raw HTML is off
        sections.append(Section(sid, _field(raw, "title", str, swhere), file, html, widget))
    if not sections:
        raise ContentError(f"{where}: the lesson has no sections")
    _unique([s.id for s in sections], "section id", where)

    steps = tuple(RoundTripCaption(_field(s, "n", int, f"{where}: roundtrip step"),
                                   _field(s, "title", str, f"{where}: roundtrip step"),
                                   _field(s, "caption", str, f"{where}: roundtrip step"))
                  for s in _tables(meta, "roundtrip_steps", where))
    if any(s.widget == "roundtrip" for s in sections) and [s.n for s in steps] != list(range(1, 7)):
        raise ContentError(f"{where}: the roundtrip figure needs captions for steps 1 to 6, in order")

    _no_move_notes(meta, where)

    objectives = meta.get("objectives", [])
    if not isinstance(objectives, list) or not all(isinstance(o, str) and o.strip() for o in objectives):
        raise ContentError(f"{where}: 'objectives' must be a list of non-empty strings")
    duration = _field(meta, "duration_minutes", int, where)

    return Lesson(
        slug=slug,
        title=_field(meta, "title", str, where),
        summary=_field(meta, "summary", str, where),
        duration_minutes=duration,
        objectives=tuple(objectives),
        sections=tuple(sections),
        roundtrip_steps=steps,
        questions=_load_questions(directory / "quiz.toml", {s.id for s in sections}),
        directory=directory,
    )


def load_course(root: Path = DEFAULT_ROOT, moves_file: Path | None = None) -> Course:
    """Read and validate the whole course under `root` (the moves from `moves_file`, default the `moves` package's
    moves.toml: the checker plays the same file, so the moves are not part of a lessons tree).

    Raises:
        ContentError: a file is missing or malformed, or the pieces do not fit together.
    """
    course = _read_toml(root / "course.toml")
    where = str(root / "course.toml")
    moves = _load_moves(moves_file)
    lessons = tuple(_load_lesson(root, entry) for entry in _tables(course, "lessons", where))
    if not lessons:
        raise ContentError(f"{where}: the course has no lessons")
    _unique([lesson.slug for lesson in lessons], "lesson slug", where)
    return Course(_field(course, "title", str, where), _field(course, "summary", str, where), lessons, moves)


def _fingerprint(root: Path, moves_file: Path | None) -> tuple[tuple[str, int, int], ...]:
    """Every file the course is read from, with its size and modification time: a new value when any changes."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    files.append(moves_file if moves_file is not None else Path(str(DEFAULT_MOVES)))
    return tuple((str(p), s.st_mtime_ns, s.st_size) for p in files for s in [p.stat()])


@lru_cache(maxsize=8)
def _course_for(root: Path, moves_file: Path | None, fingerprint: tuple[tuple[str, int, int], ...]) -> Course:
    return load_course(root, moves_file)


def init_app(app: Flask) -> None:
    """Load the course once, at start-up; `MRTR_CONTENT_DIR` points at another tree, `MRTR_MOVES_FILE`
    at another moves file (tests). A process that builds several apps on the same unchanged files (the
    workers of a server, the tests) reads and validates them once: the course is immutable."""
    settings: Settings = app.extensions[SETTINGS_KEY]
    root = settings.content_dir or DEFAULT_ROOT
    try:
        fingerprint = _fingerprint(root, settings.moves_file)
    except OSError:  # a file that vanished while being listed: read for real, which says what is wrong
        app.extensions["content"] = load_course(root, settings.moves_file)
        return
    app.extensions["content"] = _course_for(root, settings.moves_file, fingerprint)


def get_content() -> Course:
    content: Course = current_app.extensions["content"]
    return content
