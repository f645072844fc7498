"""The quick check: no answers before answering, instant feedback, a signed running score."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient
from itsdangerous import URLSafeSerializer
from markupsafe import escape

from mrtr import CHECK_TITLES
from web.site.content import DEFAULT_ROOT, load_course

from .helpers import HX, assert_csp_clean, assert_unique_ids, play_under, rendered, soup

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
        assert [r["value"] for r in form.select("input[type=radio][name=choice]")] == [c.id for c in q.choices]
        feedback = tree.find(id=f"feedback-{q.id}")
        assert feedback["role"] == "status" and feedback["aria-live"] == "polite"
        assert feedback.get_text(strip=True) == ""
    assert "0 of 0 points answered right" in score_text(response.data)
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
    assert score["hx-swap-oob"] == "true" and "1 of 1 point answered right" in score_text(response.data)
    tokens = {i["value"] for i in tree.select("input[hx-swap-oob][name=progress]")}
    assert len(tree.select("input[hx-swap-oob][name=progress]")) == len(QUESTIONS) and len(tokens) == 1
    assert "Set-Cookie" not in response.headers


def test_a_wrong_first_answer_gets_why_and_a_second_try_without_the_answer(client: FlaskClient) -> None:
    q = QUESTIONS[1]
    chosen = wrong_choice(q)
    first = client.post(answer_url(q.id), data={"choice": chosen}, headers=HX)
    assert "Not quite." in first.text and esc(q.choice(chosen).text) in first.text
    assert esc(q.choice(chosen).why) in first.text
    assert "Try once more" in first.text
    assert esc(q.explanation) not in first.text and "The answer:" not in first.text
    verdict = soup(first.data).select_one(".verdict")
    assert (verdict["data-correct"], verdict["data-revealed"], verdict["data-attempt"]) == ("false", "false", "1")
    assert "0 of 1 point answered right" in score_text(first.data)
    # The second try reveals the answer and the explanation, right or wrong.
    second = client.post(answer_url(q.id), data={"choice": q.answer, "progress": progress_of(first.data, q.id)},
                         headers=HX)
    assert "Correct." in second.text and "The score counts your first answer" in second.text
    assert esc(q.correct_choice.text) in second.text and esc(q.explanation) in second.text
    verdict = soup(second.data).select_one(".verdict")
    assert (verdict["data-correct"], verdict["data-revealed"], verdict["data-attempt"]) == ("false", "true", "2")
    assert "0 of 1 point answered right" in score_text(second.data)  # the first answer counts


def test_two_wrong_tries_reveal_the_answer(client: FlaskClient) -> None:
    q = QUESTIONS[4]
    wrongs = [c.id for c in q.choices if c.id != q.answer]
    first = client.post(answer_url(q.id), data={"choice": wrongs[0]}, headers=HX)
    second = client.post(answer_url(q.id), data={"choice": wrongs[1], "progress": progress_of(first.data, q.id)},
                         headers=HX)
    assert esc(q.choice(wrongs[1]).why) in second.text
    assert esc(q.correct_choice.text) in second.text and esc(q.explanation) in second.text


def test_score_runs_across_answers_and_the_first_answer_counts(client: FlaskClient) -> None:
    progress = progress_of(client.get(QUIZ).data, QUESTIONS[0].id)
    plan = [(QUESTIONS[0], True), (QUESTIONS[1], False), (QUESTIONS[2], True)]
    for q, right in plan:
        response = client.post(answer_url(q.id), headers=HX,
                               data={"choice": q.answer if right else wrong_choice(q), "progress": progress})
        progress = soup(response.data).select_one(f"input#progress-{QUESTIONS[-1].id}")["value"]
    assert "2 of 3 points answered right" in score_text(response.data)
    # Answering again never changes what a question counts for.
    for q, choice in ((QUESTIONS[1], QUESTIONS[1].answer), (QUESTIONS[0], wrong_choice(QUESTIONS[0]))):
        response = client.post(answer_url(q.id), headers=HX, data={"choice": choice, "progress": progress})
        progress = soup(response.data).select_one(f"input#progress-{QUESTIONS[-1].id}")["value"]
        assert "2 of 3 points answered right" in score_text(response.data)


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
    assert "1 of 1 point answered right" in score_text(response.data)
    assert not tree.select("[hx-swap-oob]")
    progress = {i["value"] for i in tree.select("input[name=progress]")}
    assert len(progress) == 1
    assert_unique_ids(response.data)


def test_a_forged_or_foreign_progress_token_counts_for_nothing(app: Flask, client: FlaskClient) -> None:
    q = QUESTIONS[0]
    forged = URLSafeSerializer("not-the-key-" * 4, salt="mrtr.quiz-progress").dumps(
        {"lesson": LESSON, "answers": {x.id: True for x in QUESTIONS}})
    response = client.post(answer_url(q.id), data={"choice": wrong_choice(q), "progress": forged}, headers=HX)
    assert "0 of 1 point answered right" in score_text(response.data)
    with app.app_context():
        from web.quiz.routes import answers_serializer

        other_lesson = answers_serializer().dumps({"lesson": "another", "answers": {QUESTIONS[1].id: True}})
        junk = answers_serializer().dumps(["not", "a", "dict"])
    for token in (other_lesson, junk, "garbage", ""):
        response = client.post(answer_url(q.id), data={"choice": q.answer, "progress": token}, headers=HX)
        assert "1 of 1 point answered right" in score_text(response.data)


def test_missing_or_unknown_choice_asks_for_an_answer_without_revealing_it(client: FlaskClient) -> None:
    q = QUESTIONS[0]
    for data in ({}, {"choice": "zz"}, {"choice": "<script>"}):
        response = client.post(answer_url(q.id), data=data, headers=HX)
        assert response.status_code == 200
        assert "Choose one of the answers first" in response.text
        assert esc(q.explanation) not in response.text and esc(q.correct_choice.text) not in response.text
        assert "<script>" not in response.text
        assert "0 of 0 points answered right" in score_text(response.data)


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
    assert "1 of 1 point answered right" in score_text(page.data)
    # The answered question shows its feedback again (a reload restores it); the others show nothing.
    assert esc(QUESTIONS[0].explanation) in soup(page.data).find(id=f"feedback-{QUESTIONS[0].id}").get_text()
    assert all(esc(q.explanation) not in page.text for q in QUESTIONS[1:])


def test_htmx_get_of_the_quiz_returns_only_the_quiz_for_restoring(app: Flask, client: FlaskClient) -> None:
    q = QUESTIONS[2]
    first = client.post(answer_url(q.id), data={"choice": wrong_choice(q)}, headers=HX)
    with rendered(app) as names:
        response = client.get(QUIZ, query_string={"progress": progress_of(first.data, q.id)}, headers=HX)
    assert names == ["quiz/_quiz.html"] and "<main" not in response.text
    feedback = soup(response.data).find(id=f"feedback-{q.id}")
    assert "Try once more" in feedback.get_text() and esc(q.explanation) not in response.text
    assert soup(response.data).find(id=f"q-{q.id}-{wrong_choice(q)}").has_attr("checked")


# -- the quiz's content: balanced, explained, and tied to what the lesson teaches -------------------

ALL_QUIZZES = sorted(DEFAULT_ROOT.glob("*/quiz.toml"))


def _lesson_questions():  # noqa: ANN202
    return [q for lesson in load_course().lessons for q in lesson.questions]


@pytest.mark.parametrize("lesson", load_course().lessons, ids=lambda lesson: lesson.slug)
def test_the_right_answer_is_rarely_the_longest_or_the_shortest(lesson) -> None:  # noqa: ANN001
    assert ALL_QUIZZES and all(path.parent.name for path in ALL_QUIZZES)
    chosen = [q for q in lesson.questions if not q.free]  # an order or a raw retry has no options to compare
    longest = [q.id for q in chosen if len(q.correct_choice.text) >= max(len(c.text) for c in q.choices)]
    shortest = [q.id for q in chosen if len(q.correct_choice.text) <= min(len(c.text) for c in q.choices)]
    limit = len(chosen) / 3
    assert len(longest) <= limit, f"the right answer is the longest in {longest}"
    assert len(shortest) <= limit, f"the right answer is the shortest in {shortest}"


@pytest.mark.parametrize("question", _lesson_questions(), ids=lambda q: q.id)
def test_every_wrong_choice_says_why_it_is_wrong(question) -> None:  # noqa: ANN001
    for choice in question.choices:
        if choice.id != question.answer:
            assert len(choice.why) > 20, f"{question.id} choice {choice.id} has no 'why'"


def test_the_quiz_covers_the_shim_the_sdk_snippet_and_a_raw_transcript() -> None:
    by_section: dict[str, list] = {}
    for q in QUESTIONS:
        by_section.setdefault(q.section, []).append(q)
    assert len(by_section.get("old-clients", [])) >= 2
    assert len(by_section.get("sdk-version", [])) >= 2
    assert len([q for q in QUESTIONS if q.transcript]) >= 2
    assert all(q.section == "run-it-raw" for q in QUESTIONS if q.transcript)


PREDICTIONS = {
    # question id -> (the verdict the linked playground state ends with, the check that fails first)
    "predict-no-signature": ("deployed", None),
    "predict-late-theft": ("refused", "principal"),
}


@pytest.mark.parametrize("qid", sorted(PREDICTIONS))
def test_predict_then_run_links_to_the_playground_state_that_shows_the_answer(qid: str) -> None:
    from urllib.parse import parse_qs, urlsplit

    q = next(q for q in QUESTIONS if q.id == qid)
    url = urlsplit(q.try_it)
    assert url.path == "/playground"
    args = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert set(args) == {"single_use", "sealed", "no_signature", "offset", "move"}
    move = load_course().move(args["move"])
    played = play_under(move, single_use=args["single_use"] == "1", sealed=args["sealed"] == "1",
                        no_signature=args["no_signature"] == "1", offset=int(args["offset"]))
    verdict, check = PREDICTIONS[qid]
    assert played == (verdict, check)
    answer = q.correct_choice.text
    assert ("prod" in answer) if verdict == "deployed" else (CHECK_TITLES[check] in answer)


def test_why_texts_and_playground_links_stay_off_the_page_until_answered(client: FlaskClient) -> None:
    for url in (QUIZ, f"/lessons/{LESSON}"):
        html = client.get(url).text
        for q in QUESTIONS:
            assert all(esc(c.why) not in html for c in q.choices if c.why), q.id
            assert not q.try_it or esc(q.try_it) not in html.split('id="quick-check"')[-1]


def test_a_predict_question_links_to_the_playground_once_answered(client: FlaskClient) -> None:
    q = next(q for q in QUESTIONS if q.try_it)
    response = client.post(answer_url(q.id), data={"choice": q.answer}, headers=HX)
    link = soup(response.data).select_one(".try-it a")
    assert link["href"] == q.try_it and "playground" in link.get_text()


def test_a_transcript_question_shows_its_transcript_before_answering(client: FlaskClient) -> None:
    q = next(q for q in QUESTIONS if q.transcript)
    item = soup(client.get(QUIZ).data).find(id=f"q-{q.id}")
    assert item.select_one("pre.quiz-transcript").get_text() == q.transcript
