"""The "build the retry" drawn item (web/quiz/builds.py), over many draws: every draw's goal can be reached, the
lab server grades a build that reaches it right, and builds that miss it wrong; it works without JavaScript."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from flask import Flask
from flask.testing import FlaskClient

from mrtr import CHECKS
from web.quiz import builds as quiz_builds
from web.quiz import draws as quiz_draws
from web.site.content import load_course

LESSON = "build-the-checks"
QID = "drawn-retry-build"
DRAWS = 60
#: The honest retry, and the one part to change for a refusal at each check (every earlier check still passes).
HONEST = {"ticket": "as-minted", "sender": "bob", "answer": "yes", "when": "early"}
BREAKS = {"signature": {"ticket": "edited"}, "principal": {"sender": "alice"}, "expiry": {"when": "late"},
          "request": {"env": "other"}, "answer": {"answer": "malformed"}, "single-use": {"ticket": "spent"}}


def solve(situation: quiz_draws.Situation, goal: str) -> dict[str, str]:
    """The build a learner who read the lessons sends for `goal`."""
    build = {**HONEST, "env": situation.env}
    for part, value in BREAKS.get(goal.removeprefix("refused-"), {}).items():
        build[part] = next(e for e in quiz_draws.ENVS if e != situation.env) if value == "other" else value
    return build


def test_the_goals_are_completion_and_each_check() -> None:
    assert quiz_builds.GOALS == ("completed", *(f"refused-{c}" for c in CHECKS)) and set(BREAKS) == set(CHECKS)


def test_every_draw_is_solvable_and_graded_on_what_the_server_does(app: Flask) -> None:
    goals = set()
    with app.app_context():
        for _ in range(DRAWS):
            token, situation = quiz_draws.new_token(LESSON, QID)
            goal = quiz_builds.goal_of(situation)
            goals.add(goal)
            right = solve(situation, goal)
            graded = quiz_builds.grade(LESSON, QID, {"draw": token, **right})
            assert graded is not None and graded[0], (goal, right, graded)
            # A build that reaches another goal (a refusal elsewhere, or completing) misses this one.
            for other in quiz_builds.GOALS:
                if other != goal:
                    wrong = solve(situation, other)
                    missed = quiz_builds.grade(LESSON, QID, {"draw": token, **wrong})
                    assert missed is not None and not missed[0], (goal, wrong, missed)
                    break
            # Breaking two parts at once is stopped by the earlier check: a refusal goal needs its check first.
            if goal == "refused-single-use":
                late = quiz_builds.grade(LESSON, QID, {"draw": token, **right, "when": "late"})
                assert late is not None and not late[0] and "expiry" in late[1]
    assert goals == set(quiz_builds.GOALS)  # every goal came up


def test_a_part_not_offered_or_missing_is_no_answer(app: Flask) -> None:
    with app.app_context():
        token, situation = quiz_draws.new_token(LESSON, QID)
        build = solve(situation, "completed")
        assert quiz_builds.grade(LESSON, QID, {"draw": token, **build, "sender": "mallory"}) is None
        assert quiz_builds.grade(LESSON, QID, {"draw": token, **{k: v for k, v in build.items() if k != "when"}}) \
            is None
        with pytest.raises(quiz_draws.DrawError):
            quiz_builds.grade(LESSON, "drawn-retry-outcome", {"draw": token, **build})  # another question's draw


def test_the_build_item_is_answered_without_javascript(client: FlaskClient) -> None:
    page = BeautifulSoup(client.get(f"/quiz/{LESSON}").data, "html.parser")
    item = page.select_one(f"#q-{QID}")
    assert item is not None and item.select_one("[data-goal]") is not None
    form = {s["name"]: "" for s in item.select("select")}
    assert set(form) == set(quiz_builds.PARTS)
    token = item.select_one('input[name="draw"]')["value"]
    progress = item.select_one('input[name="progress"]')["value"]
    with client.application.app_context():
        situation = quiz_draws.read_token(LESSON, QID, str(token))
    build = solve(situation, quiz_builds.goal_of(situation))
    response = client.post(f"/quiz/{LESSON}/{QID}/answer", data={"draw": token, "progress": progress, **build})
    assert response.status_code == 200
    text = " ".join(BeautifulSoup(response.data, "html.parser").get_text().split())
    weight = next(q.weight for q in load_course().lesson(LESSON).questions if q.id == QID)  # type: ignore[union-attr]
    assert f"{weight} of {weight} points answered right" in text
    assert re.search(r"the server played the retry you built", text)
