"""A drawn question in the live class: each phone gets its own draw (kept by the class store), each answer is graded
against the learner's own draw by the lab server's play, and the presenter sees the split and how many were right."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from markupsafe import escape

from tests.web.test_classroom import TOKENS, join, start
from web.classroom.services import is_drawn, live_questions
from web.quiz import draws as quiz_draws
from web.site.content import load_course

COURSE = load_course()
LESSON = COURSE.lessons[0]
LIVE = live_questions(LESSON)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "classroom.sqlite3"


@pytest.fixture
def app_config(db_path: Path) -> dict[str, Any]:
    return {"MRTR_TOKENS": TOKENS, "MRTR_CLASS_DB": str(db_path), "MRTR_CLASS_STREAM_SECONDS": 0}


def push_until_drawn(host: FlaskClient, code: str, ask: str = "outcome") -> str:
    """Push questions until the first drawn one asking `ask` is on the phones; its id."""
    for question in LIVE:
        assert host.post(f"/class/{code}/host/question").status_code == 303
        if is_drawn(question) and question.task is not None and question.task.ask == ask:
            return question.id
    raise AssertionError(f"the first lesson has no drawn {ask} question for the room")


def right_of(app: Flask, db_path: Path, nickname: str, question: str, ask: str = "outcome") -> str:
    """The option the lab server's own play of this learner's kept draw makes right."""
    with sqlite3.connect(db_path) as db:
        kept = db.execute("SELECT d.draw FROM draws d JOIN learners l ON l.id = d.learner_id WHERE l.nickname = ? "
                          "AND d.question_id = ?", (nickname, question)).fetchone()[0]
    with app.app_context():
        return quiz_draws.right_option(quiz_draws.play(quiz_draws.room_situation(kept)), ask)


def payload(page: str) -> str:
    return re.search(r'aria-label="The ticket\'s readable payload"><code>(.*?)</code>', page, re.S)[1]  # type: ignore[index]


def test_drawn_items_are_live_questions() -> None:
    for lesson in COURSE.lessons:
        drawn = [q.id for q in lesson.questions if is_drawn(q)]
        assert drawn and [q.id for q in live_questions(lesson) if is_drawn(q)] == drawn


@pytest.mark.parametrize("ask", ["outcome", "spent"])
def test_each_phone_gets_its_own_draw_and_is_graded_on_it(app: Flask, db_path: Path, ask: str) -> None:
    host = app.test_client()
    code = start(host)[0]
    ann, bo = join(app, code, "Ann"), join(app, code, "Bo")
    qid = push_until_drawn(host, code, ask)
    ann_page, bo_page = (c.get(f"/class/{code}/me").get_data(as_text=True) for c in (ann, bo))
    assert "data-draw" in ann_page and "data-draw" in bo_page
    assert payload(ann_page) != payload(bo_page)  # each phone its own situation (its own ticket id at least)
    assert payload(ann.get(f"/class/{code}/me").get_data(as_text=True)) == payload(ann_page)  # kept, not redrawn
    options = [o for o, _ in quiz_draws.ASKS[ask]]
    assert re.findall(r'name="option" value="([\w-]+)" data-option', ann_page) == options
    ann_right, bo_right = right_of(app, db_path, "Ann", qid, ask), right_of(app, db_path, "Bo", qid, ask)
    bo_wrong = next(o for o in options if o != bo_right)
    assert ann.post(f"/class/{code}/answer", data={"option": ann_right}).status_code == 200
    assert bo.post(f"/class/{code}/answer", data={"option": bo_wrong}).status_code == 200
    assert bo.post(f"/class/{code}/answer", data={"option": "a"}).status_code == 400  # not one of this item's options
    before = host.get(f"/class/{code}/host").get_data(as_text=True)
    assert 'data-answered="2"' in before and "<li data-option" in before
    assert not re.search(r"<li data-option=\"[\w-]+\" data-count", before) and "data-right=" not in before
    # Nothing on a phone says whether its answer is right before the reveal.
    assert "data-right" not in ann.get(f"/class/{code}/me").get_data(as_text=True)
    host.post(f"/class/{code}/host/reveal")
    after = host.get(f"/class/{code}/host").get_data(as_text=True)
    split = {m[0]: int(m[1]) for m in re.findall(r'<li data-option="([\w-]+)" data-count="(\d+)"', after)}
    assert list(split) == options and sum(split.values()) == 2
    assert split[ann_right] >= 1 and split[bo_wrong] >= 1
    assert 'data-right="1"' in after and "1 right" in after and "data-correct" not in after
    ann_after = ann.get(f"/class/{code}/me").get_data(as_text=True)
    bo_after = bo.get(f"/class/{code}/me").get_data(as_text=True)
    assert f'data-right="{ann_right}"' in ann_after and "✓ right" in ann_after
    assert f'data-right="{bo_right}"' in bo_after and "✗ not this time" in bo_after
    question = LESSON.question(qid)
    assert question is not None and str(escape(question.explanation)) in ann_after
    csv = host.get(f"/class/{code}/host/results.csv").get_data(as_text=True)
    assert f"answer,Ann,{qid},{ann_right},right," in csv and f"answer,Bo,{qid},{bo_wrong},wrong," in csv


def test_a_drawn_answer_from_a_terminal_is_graded_too(app: Flask, db_path: Path) -> None:
    host = app.test_client()
    code = start(host)[0]
    ann = join(app, code, "Ann")
    qid = push_until_drawn(host, code)
    # Answered before the page was ever shown: the draw is made (and kept) at the answer, and graded on it.
    reply = ann.post(f"/class/{code}/answer", data={"option": "completed"}, headers={"Accept": "application/json"})
    assert reply.status_code == 200 and reply.get_json() == {"question": qid, "option": "completed"}
    right = right_of(app, db_path, "Ann", qid)
    host.post(f"/class/{code}/host/reveal")
    after = host.get(f"/class/{code}/host").get_data(as_text=True)
    assert f'data-right="{int(right == "completed")}"' in after
