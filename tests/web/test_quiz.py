"""The quick check: no answers before answering, instant feedback, a signed running score."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient
from itsdangerous import URLSafeSerializer
from markupsafe import escape

from web.content import load_course

from .helpers import HX, assert_csp_clean, assert_unique_ids, rendered, soup

LESSON = "when-the-server-needs-input"
QUIZ = f"/quiz/{LESSON}"
QUESTIONS = load_course().lesson(LESSON).questions


def answer_url(qid: str) -> str:
    return f"{QUIZ}/{qid}/answer"


def progress_of(html: bytes | str, qid: str) -> str:
    return soup(html).find("input", id=f"progress-{qid}")["value"]


def esc(text: str) -> str:
    """How a string appears in the HTML (autoescaped)."""
    return str(escape(text))


def wrong_choice(q) -> str:  # noqa: ANN001
    return next(c.id for c in q.choices if c.id != q.answer)


def score_text(html: bytes | str) -> str:
    return " ".join(soup(html).find(id="quiz-score").get_text().split())


def test_quiz_page_lists_questions_as_forms(app: Flask, client: FlaskClient) -> None:
    with rendered(app) as names:
        response = client.get(QUIZ)
    assert response.status_code == 200 and names == ["quiz/quiz.html"]
    tree = soup(response.data)
    forms = tree.select("li.question form")
    assert len(forms) == len(QUESTIONS)
    for q, form in zip(QUESTIONS, forms, strict=True):
        assert form["method"] == "post" and form["action"] == f"{answer_url(q.id)}#q-{q.id}"
        assert form["hx-post"] == answer_url(q.id) and form["hx-target"] == f"#feedback-{q.id}"
        assert [r["value"] for r in form.select("input[type=radio]")] == [c.id for c in q.choices]
        feedback = tree.find(id=f"feedback-{q.id}")
        assert feedback["role"] == "status" and feedback["aria-live"] == "polite"
        assert feedback.get_text(strip=True) == ""
    assert "0 correct out of 0 answered" in score_text(response.data)
    assert_csp_clean(response.data)
    assert_unique_ids(response.data)


@pytest.mark.parametrize("url", [QUIZ, f"/lessons/{LESSON}"])
def test_no_answer_or_explanation_reaches_the_page_before_answering(client: FlaskClient, url: str) -> None:
    html = client.get(url).text
    for q in QUESTIONS:
        assert esc(q.explanation) not in html
        assert f'value="{q.answer}" checked' not in html
    assert not soup(html).select(".feedback .verdict")


def test_correct_answer_by_htmx_returns_feedback_and_oob_score(app: Flask, client: FlaskClient) -> None:
    q = QUESTIONS[0]
    progress = progress_of(client.get(QUIZ).data, q.id)
    with rendered(app) as names:
        response = client.post(answer_url(q.id), data={"choice": q.answer, "progress": progress}, headers=HX)
    assert response.status_code == 200 and names == ["quiz/_feedback.html"]
    tree = soup(response.data)
    assert "<main" not in response.text
    assert "Correct." in tree.select_one(".verdict").get_text()
    assert esc(q.explanation) in response.text and esc(q.correct_choice.text) in response.text
    score = tree.find(id="quiz-score")
    assert score["hx-swap-oob"] == "true" and "1 correct out of 1 answered" in score_text(response.data)
    tokens = {i["value"] for i in tree.select("input[hx-swap-oob][name=progress]")}
    assert len(tree.select("input[hx-swap-oob][name=progress]")) == len(QUESTIONS) and len(tokens) == 1
    assert "Set-Cookie" not in response.headers


def test_wrong_answer_shows_what_was_chosen_and_the_right_one(client: FlaskClient) -> None:
    q = QUESTIONS[1]
    chosen = wrong_choice(q)
    response = client.post(answer_url(q.id), data={"choice": chosen}, headers=HX)
    assert "Not quite." in response.text
    assert esc(q.choice(chosen).text) in response.text and esc(q.correct_choice.text) in response.text
    assert esc(q.explanation) in response.text
    assert "0 correct out of 1 answered" in score_text(response.data)


def test_score_runs_across_answers_through_the_signed_token(client: FlaskClient) -> None:
    progress = progress_of(client.get(QUIZ).data, QUESTIONS[0].id)
    plan = [(QUESTIONS[0], True), (QUESTIONS[1], False), (QUESTIONS[2], True)]
    for q, right in plan:
        response = client.post(answer_url(q.id), headers=HX,
                               data={"choice": q.answer if right else wrong_choice(q), "progress": progress})
        progress = soup(response.data).select_one(f"input#progress-{QUESTIONS[-1].id}")["value"]
    assert "2 correct out of 3 answered" in score_text(response.data)
    # Answering again replaces that question's result instead of counting it twice.
    response = client.post(answer_url(QUESTIONS[1].id), headers=HX,
                           data={"choice": QUESTIONS[1].answer, "progress": progress})
    assert "3 correct out of 3 answered" in score_text(response.data)


def test_without_javascript_the_post_renders_the_whole_quiz_with_feedback(app: Flask, client: FlaskClient) -> None:
    q = QUESTIONS[3]
    with rendered(app) as names:
        response = client.post(answer_url(q.id), data={"choice": q.answer})
    assert response.status_code == 200 and names == ["quiz/quiz.html"]
    tree = soup(response.data)
    assert tree.find("main") and len(tree.select("li.question")) == len(QUESTIONS)
    assert q.explanation in tree.find(id=f"feedback-{q.id}").get_text()
    assert tree.find(id=f"q-{q.id}-{q.answer}").has_attr("checked")
    others = [other for other in QUESTIONS if other.id != q.id]
    assert all(esc(o.explanation) not in response.text for o in others)
    assert "1 correct out of 1 answered" in score_text(response.data)
    assert not tree.select("[hx-swap-oob]")
    progress = {i["value"] for i in tree.select("input[name=progress]")}
    assert len(progress) == 1
    assert_unique_ids(response.data)


def test_a_forged_or_foreign_progress_token_counts_for_nothing(app: Flask, client: FlaskClient) -> None:
    q = QUESTIONS[0]
    forged = URLSafeSerializer("not-the-key-" * 4, salt="mrtr.quiz-progress").dumps(
        {"lesson": LESSON, "answers": {x.id: True for x in QUESTIONS}})
    response = client.post(answer_url(q.id), data={"choice": wrong_choice(q), "progress": forged}, headers=HX)
    assert "0 correct out of 1 answered" in score_text(response.data)
    with app.app_context():
        from web.quiz import _serializer

        other_lesson = _serializer().dumps({"lesson": "another", "answers": {QUESTIONS[1].id: True}})
        junk = _serializer().dumps(["not", "a", "dict"])
    for token in (other_lesson, junk, "garbage", ""):
        response = client.post(answer_url(q.id), data={"choice": q.answer, "progress": token}, headers=HX)
        assert "1 correct out of 1 answered" in score_text(response.data)


def test_missing_or_unknown_choice_asks_for_an_answer_without_revealing_it(client: FlaskClient) -> None:
    q = QUESTIONS[0]
    for data in ({}, {"choice": "zz"}, {"choice": "<script>"}):
        response = client.post(answer_url(q.id), data=data, headers=HX)
        assert response.status_code == 200
        assert "Choose one of the answers first" in response.text
        assert esc(q.explanation) not in response.text and esc(q.correct_choice.text) not in response.text
        assert "<script>" not in response.text
        assert "0 correct out of 0 answered" in score_text(response.data)


@pytest.mark.parametrize("url", [f"/quiz/nope/{QUESTIONS[0].id}/answer", f"{QUIZ}/nope/answer"])
def test_unknown_lesson_or_question_is_404(client: FlaskClient, url: str) -> None:
    assert client.post(url, data={"choice": "a"}).status_code == 404


def test_unknown_quiz_page_is_404_and_get_on_answer_is_405(client: FlaskClient) -> None:
    assert client.get("/quiz/nope").status_code == 404
    assert client.get(answer_url(QUESTIONS[0].id)).status_code == 405


def test_quiz_page_accepts_a_progress_token_in_the_query(client: FlaskClient) -> None:
    response = client.post(answer_url(QUESTIONS[0].id), data={"choice": QUESTIONS[0].answer}, headers=HX)
    token = soup(response.data).select_one("input[name=progress]")["value"]
    assert re.fullmatch(r"[A-Za-z0-9_.\-]+", token)
    page = client.get(QUIZ, query_string={"progress": token})
    assert "1 correct out of 1 answered" in score_text(page.data)
    assert esc(QUESTIONS[0].explanation) not in page.text
