"""The course loader: the real lessons load, and each kind of broken lesson fails create_app()."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from app import create_app
from moves.catalog import DEFAULT_PATH, load_moves
from moves.engine import play
from moves.labcodec import LabRing
from moves.targets.in_process import lab_target
from web.site.content import DEFAULT_ROOT, WIDGETS, ContentError, load_course

from .conftest import TEST_KEY

LESSON = "when-the-server-needs-input"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A private copy of lessons/ to break, with a copy of the moves file (package data of `moves`) in it."""
    root = tmp_path / "lessons"
    shutil.copytree(DEFAULT_ROOT, root)
    (root / MOVES_TOML).write_text(DEFAULT_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    return root


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def test_the_real_course_loads_and_is_frozen() -> None:
    course = load_course()
    lesson = course.lesson(LESSON)
    assert lesson is not None
    assert course.moves == load_moves()
    assert len(lesson.sections) == 13 and all(s.html for s in lesson.sections)
    assert {s.widget for s in lesson.sections if s.widget} == WIDGETS - {"build", "exchange"}  # other lessons'
    assert [c.n for c in lesson.roundtrip_steps] == [1, 2, 3, 4, 5, 6]
    assert all(q.correct_choice.id == q.answer for q in lesson.questions)
    with pytest.raises(AttributeError):
        lesson.title = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        course.moves[0].notes[0].text = "changed"  # type: ignore[misc]


def test_every_move_has_a_note_for_what_a_sound_server_does_with_it() -> None:
    """Each page shows the note written for what the move really got: played on the lab's own server (a sound
    one), every move gets an outcome its note covers."""
    for move in load_course().moves:
        played = play(move, lab_target(LabRing.public("content-test-key-0123456789abcdefghij"), now=1.79e9))
        assert played.ok, (move.slug, played.detail)
        assert move.note_for(played.outcome, played.stopped_at) is not None, move.slug


def test_the_app_loads_the_course_once(app) -> None:
    from flask import Flask

    assert isinstance(app, Flask)
    assert app.extensions["content"].lesson(LESSON) is not None


def test_apps_on_unchanged_files_share_one_course_and_an_edit_is_read_again(tree: Path) -> None:
    def app_on(root: Path):
        return create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory",
                           "MRTR_CONTENT_DIR": str(root), "MRTR_MOVES_FILE": str(root / MOVES_TOML)})

    first, second = app_on(tree), app_on(tree)
    assert first.extensions["content"] is second.extensions["content"]  # read and validated once
    edit(tree / "course.toml", 'title = "', 'title = "Edited: ')
    edited = app_on(tree).extensions["content"]
    assert edited is not first.extensions["content"] and edited.title.startswith("Edited: ")
    edit(tree / QUIZ, "[[questions]]", "[[questions")  # a broken file is caught as it always was
    with pytest.raises(ContentError, match="not valid TOML"):
        app_on(tree)


def test_markdown_headings_get_section_prefixed_anchors() -> None:
    lesson = load_course().lesson(LESSON)
    assert 'id="round-trip--one-deploy-two-replicas"' in lesson.section("round-trip").html


META = f"{LESSON}/meta.toml"
QUIZ = f"{LESSON}/quiz.toml"
MOVES_TOML = "moves.toml"

BROKEN: dict[str, tuple[Callable[[Path], None], str]] = {
    "missing section file": (lambda r: (r / LESSON / "sections" / "05-spec-rules.md").unlink(), "does not exist"),
    "section file outside sections/": (lambda r: edit(r / META, 'file = "05-spec-rules.md"',
                                                      'file = "../meta.toml"'), "does not exist"),
    "duplicate section id": (lambda r: edit(r / META, 'id = "recap"', 'id = "objectives"'), "duplicate section id"),
    "unknown widget": (lambda r: edit(r / META, 'widget = "sealed"', 'widget = "slideshow"'), "unknown widget"),
    "answer not a choice": (lambda r: edit(r / QUIZ, 'answer = "c"', 'answer = "z"'), "is not one of its choices"),
    "quiz section unknown": (lambda r: edit(r / QUIZ, 'section = "spec-rules"', 'section = "nowhere"'),
                             "is not a section"),
    "duplicate question id": (lambda r: edit(r / QUIZ, 'id = "which-request-cannot-ask"',
                                             'id = "why-sign-the-ticket"'), "duplicate question id"),
    "duplicate choice id": (lambda r: edit(r / QUIZ, '  id = "b"\n', '  id = "a"\n'), "duplicate choice id"),
    "move notes in the lesson": (lambda r: edit(r / META, "[[sections]]", '[[move_notes]]\noutcome = "refused"\n'
                                                "text = \"a note away from its move\"\n\n[[sections]]"),
                                 "move notes live with their moves in moves.toml"),
    "move note for no outcome": (lambda r: edit(r / MOVES_TOML, 'outcome = "asked-again"', 'outcome = "maybe"'),
                                 "field 'outcome' must be one of"),
    "move note for no check": (lambda r: edit(r / MOVES_TOML, 'stopped_at = "request"', 'stopped_at = "vibes"'),
                               "is not a check"),
    "malformed move": (lambda r: edit(r / "moves.toml", 'ticket = "edit-work"', 'ticket = "forged"'),
                       f"move {next(m.slug for m in load_moves() if m.ticket == 'edit-work')!r}: field 'ticket' "
                       "must be one of"),
    "bad TOML": (lambda r: edit(r / QUIZ, "[[questions]]", "[[questions"), "not valid TOML"),
    "missing quiz file": (lambda r: (r / QUIZ).unlink(), "file is missing"),
    "missing prompt": (lambda r: edit(r / QUIZ, 'prompt = "When does', 'promp = "Why does'), "missing 'prompt'"),
    "six captions short": (lambda r: edit(r / META, "[[roundtrip_steps]]\nn = 6", "[[unused_steps]]\nn = 6"),
                           "steps 1 to 6"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_content_fails_create_app(tree: Path, case: str) -> None:
    breaks, message = BROKEN[case]
    breaks(tree)
    with pytest.raises(ContentError, match=re.escape(message)):
        load_course(tree, tree / MOVES_TOML)
    with pytest.raises(ContentError):
        create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory",
                    "MRTR_CONTENT_DIR": str(tree), "MRTR_MOVES_FILE": str(tree / MOVES_TOML)})


def test_raw_html_in_markdown_is_escaped(tree: Path) -> None:
    (tree / LESSON / "sections" / "13-recap.md").write_text(
        'Before <script>alert(1)</script> after.\n\n<img src=x onerror="alert(2)">\n\n'
        "[click](javascript:alert(3))\n", encoding="utf-8")
    html = str(load_course(tree).lesson(LESSON).section("recap").html)
    assert "<script>" not in html and "<img" not in html and 'href="javascript' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


FIGURE_DATA_BROKEN: dict[str, tuple[Callable[[Path], None], str]] = {
    "fields.toml not TOML": (lambda r: edit(r / LESSON / "fields.toml", "[[fields]]", "[[fields"), "not valid TOML"),
    "field without a note": (lambda r: edit(r / LESSON / "fields.toml", 'path = ["jsonrpc"]\nnote',
                                            'path = ["jsonrpc"]\nnotes'), "needs a non-empty path"),
    "breakit.toml not TOML": (lambda r: edit(r / LESSON / "breakit.toml", "[[links]]", "[[links"), "not valid TOML"),
    "break-it link without a label": (lambda r: edit(r / LESSON / "breakit.toml", "label = ", "lable = "),
                                      "needs a label, an href"),
}


@pytest.mark.parametrize("case", sorted(FIGURE_DATA_BROKEN))
def test_broken_figure_data_fails_create_app_not_a_page(tree: Path, case: str) -> None:
    breaks, message = FIGURE_DATA_BROKEN[case]
    breaks(tree)
    with pytest.raises(ContentError, match=re.escape(message)):
        create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory",
                    "MRTR_CONTENT_DIR": str(tree)})
