"""Quiz items answered by doing (issue 32, item 5): the real in-process lab server grades each one.

A chosen move counts when playing it really produces the shown log; a prediction when the server really ends
that way; an order when it is a real retry's trace; a raw retry when the server really deploys. Every test
goes through the quiz's own form posts, with and without htmx, and reads the page like a browser.
"""

from __future__ import annotations

import json
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from mrtr import CHECK_TITLES, CHECKS
from web.quiz.tasks import move_log
from web.site.content import TASK_KINDS, load_course

from .helpers import HX, assert_csp_clean, assert_unique_ids, soup

LESSON = "when-the-server-needs-input"
QUIZ = f"/quiz/{LESSON}"
COURSE = load_course()
TASKS = [q for lesson in COURSE.lessons for q in lesson.questions if q.task is not None]


def task(kind: str):  # noqa: ANN201
    return next(q for q in TASKS if q.task.kind == kind)


def answer(client: FlaskClient, qid: str, data: dict, *, htmx: bool = True):  # noqa: ANN201
    return client.post(f"{QUIZ}/{qid}/answer", data=data, headers=HX if htmx else {})


def verdict(response) -> str:  # noqa: ANN001
    mark = soup(response.data).select_one("p.verdict[data-correct]")
    return "none" if mark is None else mark["data-correct"]


def test_there_is_at_least_one_item_of_each_kind_and_every_move_it_names_exists() -> None:
    assert {q.task.kind for q in TASKS} == set(TASK_KINDS)
    slugs = {m.slug for m in COURSE.moves}
    for q in TASKS:
        assert not q.task.move or q.task.move in slugs, q.id
        if q.task.kind == "which-move":
            assert {c.id for c in q.choices} <= slugs, q.id


def test_the_quiz_page_shows_every_task_without_javascript(app: Flask, client: FlaskClient) -> None:
    response = client.get(QUIZ)
    assert response.status_code == 200
    assert_csp_clean(response.data)
    assert_unique_ids(response.data)
    page = soup(response.data)
    shown = page.find(id=f"q-{task('which-move').id}").select_one("pre.quiz-transcript").get_text()
    with app.test_request_context():
        assert shown.splitlines() == list(move_log(COURSE.move(task("which-move").task.move)))
    selects = page.find(id=f"q-{task('order').id}").select("select[name=order]")
    assert len(selects) == len(CHECKS)
    for select in selects:  # every place offers every check, in an order that gives nothing away
        titles = [o.get_text() for o in select.select("option") if o["value"]]
        assert titles == sorted(CHECK_TITLES.values())
        assert page.find("label", attrs={"for": select["id"]}) is not None
    retry = page.find(id=f"q-{task('raw-retry').id}").select_one("textarea[name=retry]")
    assert json.loads(retry.get_text())["params"]["requestState"].startswith("t1.")
    assert page.find("label", attrs={"for": retry["id"]}) is not None


def test_a_chosen_move_counts_only_when_it_really_produces_the_shown_log(app: Flask, client: FlaskClient) -> None:
    q = task("which-move")
    with app.test_request_context():
        shown = move_log(COURSE.move(q.task.move))
        right = [c.id for c in q.choices if move_log(COURSE.move(c.id)) == shown]
    assert right == [q.answer]  # the data's answer is the server's, and no other choice makes the same log
    for c in q.choices:
        response = answer(client, q.id, {"choice": c.id})
        assert verdict(response) == ("true" if c.id == q.answer else "false"), c.id
        said = soup(response.data).select_one("[data-server-said]").get_text()
        assert "that move's server log" in said


def test_a_prediction_is_graded_by_playing_the_move(client: FlaskClient) -> None:
    q = task("predict")
    for c in q.choices:
        response = answer(client, q.id, {"choice": c.id})
        assert verdict(response) == ("true" if c.id == q.answer else "false"), c.id
        assert "Played on the lab server: the server refused at “Not expired”" in response.text


def test_the_order_of_the_checks_is_graded_against_a_real_trace(client: FlaskClient) -> None:
    q = task("order")
    right = answer(client, q.id, {"order": list(CHECKS)})
    assert verdict(right) == "true"
    assert ", ".join(CHECK_TITLES[c] for c in CHECKS) in right.text
    swapped = [CHECKS[1], CHECKS[0], *CHECKS[2:]]  # principal before signature: a belief, and wrong
    assert verdict(answer(client, q.id, {"order": swapped})) == "false"


@pytest.mark.parametrize("order", [[], list(CHECKS[:5]), [CHECKS[0]] * 6, ["vibes", *CHECKS[1:]]],
                         ids=["none", "five", "repeated", "unknown"])
def test_an_unusable_order_is_said_and_not_counted(client: FlaskClient, order: list[str]) -> None:
    response = answer(client, task("order").id, {"order": order})
    assert response.status_code == 200 and verdict(response) == "none"
    assert "exactly one place" in soup(response.data).select_one("[data-task-problem]").get_text()


def _retry_form(client: FlaskClient) -> tuple[dict, dict[str, str]]:
    item = soup(client.get(QUIZ).data).find(id=f"q-{task('raw-retry').id}")
    fields = {i["name"]: i["value"] for i in item.select("input[type=hidden]") if i["name"] in ("seed", "minted_at")}
    return json.loads(item.select_one("textarea").get_text()), fields


def test_the_raw_retry_as_shown_is_not_deployed_and_the_server_says_why(client: FlaskClient) -> None:
    retry, fields = _retry_form(client)
    response = answer(client, task("raw-retry").id, {**fields, "retry": json.dumps(retry)})
    assert verdict(response) == "false"
    assert "error -32602" in soup(response.data).select_one("[data-server-said]").get_text()


def test_the_fixed_raw_retry_deploys_staging_and_counts(client: FlaskClient) -> None:
    retry, fields = _retry_form(client)
    retry["id"] = 2
    retry["params"]["arguments"] = {"env": "staging"}
    retry["params"]["inputResponses"]["confirm"]["content"]["confirm"] = True
    response = answer(client, task("raw-retry").id, {**fields, "retry": json.dumps(retry)}, htmx=False)
    assert response.status_code == 200 and verdict(response) == "true"
    assert "deployed to staging" in response.text
    assert_csp_clean(response.data)


@pytest.mark.parametrize("change", ["ticket", "answer-only", "discover", "no-ticket"])
def test_a_raw_retry_the_server_does_not_deploy_does_not_count(client: FlaskClient, change: str) -> None:
    retry, fields = _retry_form(client)
    retry["params"]["arguments"] = {"env": "staging"}
    if change == "ticket":  # the answer fixed, one character of the ticket changed
        retry["params"]["inputResponses"]["confirm"]["content"]["confirm"] = True
        ticket = retry["params"]["requestState"]
        retry["params"]["requestState"] = ticket[:-2] + ("A" if ticket[-2] != "A" else "B") + ticket[-1]
    elif change == "discover":  # a complete result that is not the deploy
        retry = {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": retry["params"]["_meta"]}}
    elif change == "no-ticket":
        retry["params"]["inputResponses"]["confirm"]["content"]["confirm"] = True
        del retry["params"]["requestState"]
    assert verdict(answer(client, task("raw-retry").id, {**fields, "retry": json.dumps(retry)})) == "false"


@pytest.mark.parametrize(("fields", "says"), [
    ({"retry": "{not json"}, "not JSON"),
    ({"retry": " "}, "empty"),
    ({"retry": "[" * 9000}, "longer than any retry"),
    ({"retry": "{}", "minted_at": "1"}, "another visit"),
    ({"retry": "{}", "seed": "../../etc"}, "another visit"),
], ids=["not-json", "empty", "huge", "stale", "bad-seed"])
def test_an_unusable_raw_retry_gets_a_clear_reason_and_counts_for_nothing(client: FlaskClient, fields: dict,
                                                                          says: str) -> None:
    _, hidden = _retry_form(client)
    response = answer(client, task("raw-retry").id, {**hidden, **fields})
    assert response.status_code == 200 and verdict(response) == "none"
    assert says in soup(response.data).select_one("[data-task-problem]").get_text()


def test_a_task_answer_survives_a_reload_through_the_signed_progress(client: FlaskClient) -> None:
    q = task("order")
    response = answer(client, q.id, {"order": list(CHECKS)})
    token = soup(response.data).select_one("[data-progress]")["data-progress"]
    page = client.get(QUIZ, query_string={"progress": token})
    said = f"{q.weight} of {q.weight} points answered right"  # a doing item weighs its weight
    assert said in " ".join(soup(page.data).find(id="quiz-score").get_text().split())
    assert re.search(r"The answer:\s*Signature matches, Principal", soup(page.data).find(id=f"q-{q.id}").get_text())


def test_the_lesson_page_links_to_the_quiz_page_that_holds_the_tasks(app: Flask, client: FlaskClient) -> None:
    """The first lesson's 26 items (tasks included) live on the quiz's own page, which the lesson links to: embedded,
    they were pages of scrolling on a phone."""
    page = soup(client.get(f"/lessons/{LESSON}").data)
    assert page.find(id=f"q-{task('raw-retry').id}") is None
    assert page.select_one("#quick-check a.button")["href"] == f"/quiz/{LESSON}"
    quiz = soup(client.get(f"/quiz/{LESSON}").data)
    assert quiz.find(id=f"q-{task('raw-retry').id}").select_one("textarea[name=retry]") is not None
