"""Quiz items the live server draws per learner (web/quiz/draws.py): over many draws, each is solvable (the
server's own play lands on one of the options every draw shows) and graded right (that option, and only it, is
counted right through the quiz's real form); the draw is bound to the attempt by a signed token; and doing and
drawn items carry at least half of each lesson's quiz weight."""

from __future__ import annotations

from collections import Counter

import pytest
from flask import Flask
from flask.testing import FlaskClient

from mrtr import CHECKS
from tests.web.helpers import soup
from web.quiz import draws as quiz_draws
from web.site.content import get_content

DRAWS = 160


def drawn(app: Flask) -> list[tuple[str, str, str]]:
    """Every drawn question that asks for a prediction: (lesson slug, question id, what it asks); a build is tested
    in tests/web/test_quiz_builds.py."""
    with app.app_context():
        return [(lesson.slug, q.id, q.task.ask) for lesson in get_content().lessons for q in lesson.questions
                if q.task is not None and q.task.kind == "draw" and q.task.ask in quiz_draws.ASKS]


def test_every_lesson_has_a_drawn_item_and_half_its_weight_is_doing_or_drawn(app: Flask) -> None:
    with app.app_context():
        for lesson in get_content().lessons:
            if not lesson.questions:
                continue
            assert any(q.task is not None and q.task.kind == "draw" for q in lesson.questions), lesson.slug
            doing = sum(q.weight for q in lesson.questions if q.task is not None)
            assert 2 * doing >= sum(q.weight for q in lesson.questions), lesson.slug


def test_many_draws_are_each_solvable_and_cover_every_option(app: Flask) -> None:
    seen: Counter[str] = Counter()
    with app.app_context():
        for n in range(DRAWS):
            played = quiz_draws.play(quiz_draws.draw(f"many-{n}", 1_790_000_000 + n))
            assert played.outcome in dict(quiz_draws.OUTCOMES), played
            seen[played.outcome] += 1
            seen["spent" if played.spent_now else "unspent"] += 1
            # the server's own record agrees with the outcome: only a completed or ended retry spends a ticket
            if not played.situation.spent:
                assert played.spent_now == (played.outcome in ("completed", "ended")), played
    every = {o for o, _ in quiz_draws.OUTCOMES} | {o for o, _ in quiz_draws.SPENT}
    assert set(seen) == every, f"never drawn: {every - set(seen)}"


@pytest.mark.parametrize("n", range(24))
def test_each_draw_is_graded_right_through_the_quiz_form(app: Flask, client: FlaskClient, n: int) -> None:
    lesson, qid, ask = drawn(app)[n % len(drawn(app))]
    page = soup(client.get(f"/quiz/{lesson}").data)
    form = page.select_one(f"#q-{qid} form")
    token = form.select_one("input[name=draw]")["value"]
    options = [r["value"] for r in form.select("input[name=predict]")]
    assert options == [o for o, _ in quiz_draws.ASKS[ask]]  # the same options, whatever was drawn
    with app.app_context():
        right = quiz_draws.right_option(quiz_draws.play(quiz_draws.read_token(lesson, qid, token)), ask)
    progress = form.select_one("input[name=progress]")["value"]
    for option in options:
        response = client.post(f"/quiz/{lesson}/{qid}/answer", data={"draw": token, "predict": option,
                                                                    "progress": progress})
        assert response.status_code == 200
        verdict = soup(response.data).select_one(f"#q-{qid} .verdict")
        assert verdict is not None
        assert ("Correct." in verdict.get_text()) == (option == right), (option, right)


def test_the_page_shows_a_real_ticket_whose_payload_is_readable_and_the_options_name_every_check(
        client: FlaskClient, app: Flask) -> None:
    lesson, qid, _ = drawn(app)[0]
    text = soup(client.get(f"/quiz/{lesson}").data).select_one(f"#q-{qid}").get_text()
    assert '"exp"' in text and '"sub"' in text and '"requestState": "t1.' in text
    for check in CHECKS:
        assert f"at the {check} check" in text


def test_a_forged_or_foreign_draw_is_refused_with_a_reason_and_not_counted(app: Flask, client: FlaskClient) -> None:
    lesson, qid, _ = drawn(app)[0]
    other = next(q for q in get_questions(app, lesson) if q != qid)
    page = soup(client.get(f"/quiz/{lesson}").data)
    token = page.select_one(f"#q-{qid} input[name=draw]")["value"]
    for bad, says in ((token[:-2] + "xx", "not drawn here"), ("", "missing")):
        response = client.post(f"/quiz/{lesson}/{qid}/answer", data={"draw": bad, "predict": "completed"})
        assert response.status_code == 200 and says in response.get_data(as_text=True)
        assert "0 of 0 points answered right" in " ".join(soup(response.data).find(id="quiz-score").get_text().split())
    with app.test_request_context(), pytest.raises(quiz_draws.DrawError, match="another question"):
        quiz_draws.read_token(lesson, other, token)


def get_questions(app: Flask, lesson: str) -> list[str]:
    with app.app_context():
        found = get_content().lesson(lesson)
        assert found is not None
        return [q.id for q in found.questions]


def test_the_same_token_always_gives_the_same_situation(app: Flask) -> None:
    with app.test_request_context():
        token, situation = quiz_draws.new_token("x", "y")
        assert quiz_draws.read_token("x", "y", token) == situation
        first, again = quiz_draws.play(situation), quiz_draws.play(situation)
        assert (first.ticket, first.outcome, first.spent_now) == (again.ticket, again.outcome, again.spent_now)


def test_a_renamed_question_keeps_old_progress_and_old_course_links(app: Flask) -> None:
    """Ids that gave answers away were renamed; a progress token or a course link made before still works."""
    from web.lti.activities import activity
    from web.quiz import routes as quiz

    with app.test_request_context():
        renamed = [(lesson, q) for lesson in get_content().lessons for q in lesson.questions if q.formerly]
        assert renamed
        for lesson, q in renamed:
            old = q.formerly[0]
            assert lesson.question(old) is q
            token = quiz.write_progress(lesson, {old: True}, {old: [q.answer]})
            assert quiz.read_state(lesson, token).answers == {q.id: True}
            found = activity(f"question/{lesson.slug}/{old}")
            assert found is not None and found.question is q
