"""The live class through the Flask client: who may do what, the quiz, the attack round, limits, lifetime."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from moves.catalog import holds
from moves.target import Outcome
from mrtr import FakeClock
from mrtr_stores import classes
from tests.conftest import APP_CONFIG
from tests.web.helpers import honest_move, stopped_move
from web.classroom.services import live_questions
from web.site.admission import HELD_KEY
from web.site.content import load_course

COURSE = load_course()
HONEST = honest_move(COURSE.moves)
STOLEN = stopped_move("principal", COURSE.moves)
REPLAY = stopped_move("single-use", COURSE.moves)
TOKENS = "bob-secret-token=bob,alice-secret-token=alice"
MakeApp = Callable[..., Flask]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "classroom.sqlite3"


@pytest.fixture
def app_config(db_path: Path) -> dict[str, Any]:
    """The class in a file the tests read directly; secret tokens, so no page may show them."""
    return {"MRTR_TOKENS": TOKENS, "MRTR_CLASS_DB": str(db_path), "MRTR_CLASS_STREAM_SECONDS": 0}


@pytest.fixture
def host(app: Flask) -> FlaskClient:
    return app.test_client()


def start(host: FlaskClient) -> tuple[str, str]:
    page = host.get("/demo").get_data(as_text=True)
    assert 'data-action="start-class"' in page
    response = host.post("/class/start")
    assert response.status_code == 201
    html = response.get_data(as_text=True)
    code = re.search(r'data-join-code="(\w+)"', html).group(1)  # type: ignore[union-attr]
    link = re.search(r"data-control-link>([^<]+)<", html)
    return code, link.group(1) if link else ""


@pytest.fixture
def code(host: FlaskClient) -> str:
    return start(host)[0]


def join(app: Flask, code: str, nickname: str) -> FlaskClient:
    learner = app.test_client()
    response = learner.post("/join", data={"code": code, "nickname": nickname})
    assert response.status_code == 303, response.get_data(as_text=True)
    assert response.headers["Location"] == f"/class/{code}/me"
    return learner


def answered(host: FlaskClient, code: str) -> int:
    html = host.get(f"/class/{code}/host").get_data(as_text=True)
    return int(re.search(r'data-answered="(\d+)"', html)[1])


def counts(host: FlaskClient, code: str) -> dict[str, int]:
    html = host.get(f"/class/{code}/host").get_data(as_text=True)
    return {m[0]: int(m[1]) for m in re.findall(r'<li data-option="(\w+)" data-count="(\d+)"', html)}


# -- the presenter ------------------------------------------------------------------------------------


def test_control_link_is_shown_once_and_stored_hashed(app: Flask, host: FlaskClient, db_path: Path) -> None:
    code, link = start(host)
    secret = link.rsplit("/", 1)[1]
    assert len(secret) >= 32
    page = host.get(f"/class/{code}/host")
    assert page.status_code == 200
    assert secret not in page.get_data(as_text=True)  # never shown again
    assert 'data-join-code="' + code in page.get_data(as_text=True)
    with sqlite3.connect(db_path) as db:
        dump = "\n".join(db.iterdump())
    assert secret not in dump and classes.digest(secret) in dump
    # The link works from another device, and leaves the address bar at once.
    other = app.test_client()
    assert other.get(f"/class/{code}/host").status_code == 404  # as if there were no such class
    claimed = other.get(link.replace("http://localhost", ""))
    assert claimed.status_code == 303 and claimed.headers["Location"] == f"/class/{code}/host"
    assert "HttpOnly" in claimed.headers["Set-Cookie"] and "SameSite=Strict" in claimed.headers["Set-Cookie"]
    assert other.get(f"/class/{code}/host").status_code == 200
    assert app.test_client().get(f"/class/{code}/control/not-the-secret").status_code == 404


def test_the_presenter_screen_has_a_qr_code_and_short_url(host: FlaskClient, code: str) -> None:
    html = host.get(f"/class/{code}/host").get_data(as_text=True)
    assert f"localhost/j/{code}" in html
    svg = re.search(r"<svg [^>]*class=\"qr\".*?</svg>", html, re.S)
    assert svg and 'role="img"' in svg.group(0) and "style=" not in svg.group(0) and "<script" not in svg.group(0)
    assert host.get(f"/j/{code.lower()}").headers["Location"] == f"/join?code={code}"


def test_instructor_token_guards_the_start_and_never_shows(make_app: MakeApp, app_config: dict[str, Any]) -> None:
    token = "instructor-secret-0123456789"
    app = make_app(**app_config, MRTR_INSTRUCTOR_TOKEN=token)
    host = app.test_client()
    demo = host.get("/demo").get_data(as_text=True)
    assert 'name="token"' in demo and token not in demo
    assert host.post("/class/start").status_code == 403
    assert host.post("/class/start", data={"token": "wrong"}).status_code == 403
    response = host.post("/class/start", data={"token": token})
    assert response.status_code == 201 and token not in response.get_data(as_text=True)
    assert "data-control-link" not in response.get_data(as_text=True)
    code = re.search(r'data-join-code="(\w+)"', response.get_data(as_text=True)).group(1)  # type: ignore[union-attr]
    page = host.get(f"/class/{code}/host")
    assert page.status_code == 200 and token not in page.get_data(as_text=True)
    assert app.test_client().get(f"/class/{code}/host").status_code == 404


# -- joining ------------------------------------------------------------------------------------------


def test_join_form_has_code_and_nickname(app: Flask, code: str) -> None:
    html = app.test_client().get(f"/join?code={code}").get_data(as_text=True)
    assert 'name="code"' in html and f'value="{code}"' in html and 'name="nickname"' in html


@pytest.mark.parametrize(("nickname", "message"), [
    ("", "Choose a nickname"), ("x" * 25, "at most 24"), ("<script>", "letters, digits"),
    ("-dash", "letters, digits"), ("a\u0000b", "control character"), ("ann", "already uses"), ("ANN", "already uses"),
])
def test_nickname_rules(app: Flask, code: str, nickname: str, message: str) -> None:
    join(app, code, "Ann")
    response = app.test_client().post("/join", data={"code": code, "nickname": nickname})
    assert response.status_code == 400
    assert message in response.get_data(as_text=True)


def test_unknown_code_and_full_class(app: Flask, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert app.test_client().post("/join", data={"code": "ZZZZZZ", "nickname": "Bo"}).status_code == 404
    monkeypatch.setattr(classes, "MAX_LEARNERS", 2)
    join(app, code, "One")
    join(app, code, "Two")
    full = app.test_client().post("/join", data={"code": code, "nickname": "Three"})
    assert full.status_code == 409 and "full" in full.get_data(as_text=True)


def test_at_most_500_learners_by_default() -> None:
    assert classes.MAX_LEARNERS == 500


def test_nicknames_are_escaped_everywhere(app: Flask, host: FlaskClient, code: str) -> None:
    join(app, code, "O'Brien-Co")
    html = host.get(f"/class/{code}/host").get_data(as_text=True)
    assert "O&#39;Brien-Co" in html and "O'Brien-Co" not in html


def test_learner_page_needs_the_learner(app: Flask, code: str) -> None:
    response = app.test_client().get(f"/class/{code}/me")
    assert response.status_code == 303 and response.headers["Location"] == f"/join?code={code}"
    assert app.test_client().post(f"/class/{code}/answer", data={"option": "a"}).status_code == 404
    assert app.test_client().get("/class/NOPE42/me").headers["Location"] == "/join?code=NOPE42"  # alike


# -- the quiz -----------------------------------------------------------------------------------------


def test_quiz_push_answer_tally_reveal(app: Flask, host: FlaskClient, code: str) -> None:
    ann, bo = join(app, code, "Ann"), join(app, code, "Bo")
    assert "data-option" not in ann.get(f"/class/{code}/me").get_data(as_text=True)
    assert host.post(f"/class/{code}/host/question").status_code == 303
    question = COURSE.lessons[0].questions[0]
    page = ann.get(f"/class/{code}/me").get_data(as_text=True)
    assert question.prompt in page
    assert re.findall(r'<button type="submit" name="option" value="(\w+)" data-option', page) == \
        [c.id for c in question.choices]
    assert question.explanation not in page  # not before the reveal
    assert ann.post(f"/class/{code}/answer", data={"option": "c"}).status_code == 200
    assert bo.post(f"/class/{code}/answer", data={"option": "a"}).status_code == 200
    assert bo.post(f"/class/{code}/answer", data={"option": "b"}).status_code == 200  # changed before the reveal
    # The room sees how many answered, never the split before the reveal (nobody follows the crowd).
    assert counts(host, code) == {} and answered(host, code) == 2
    # A learner never sees anyone else's answer before the reveal (nor the tally).
    ann_page = ann.get(f"/class/{code}/me").get_data(as_text=True)
    assert "data-count" not in ann_page and "Bo" not in ann_page
    assert 'data-my-answer="c"' in ann_page
    assert bo.post(f"/class/{code}/answer", data={"option": "zz"}).status_code == 400
    host.post(f"/class/{code}/host/reveal")
    host_page = host.get(f"/class/{code}/host").get_data(as_text=True)
    assert f'data-option="{question.answer}" data-count="1" data-correct="true"' in host_page
    assert counts(host, code) == {"a": 0, "b": 1, "c": 1, "d": 0}
    revealed = ann.get(f"/class/{code}/me").get_data(as_text=True)
    assert "data-revealed" in revealed and question.explanation in revealed
    assert ann.post(f"/class/{code}/answer", data={"option": "a"}).status_code == 409  # closed
    # The next question starts a fresh tally.
    host.post(f"/class/{code}/host/question")
    assert counts(host, code) == {} and answered(host, code) == 0


def test_no_more_questions_than_the_lesson_has(host: FlaskClient, code: str) -> None:
    for _ in live_questions(COURSE.lessons[0]):  # the ones a room can answer by picking an option
        assert host.post(f"/class/{code}/host/question").status_code == 303
    assert host.post(f"/class/{code}/host/question").status_code == 409
    assert 'data-action="push-question" disabled' in host.get(f"/class/{code}/host").get_data(as_text=True)


def test_learner_poll_is_204_until_the_stage_moves(app: Flask, host: FlaskClient, code: str) -> None:
    ann = join(app, code, "Ann")
    stage = re.search(r'data-stage="(\d+)"', ann.get(f"/class/{code}/me").get_data(as_text=True)).group(1)  # type: ignore[union-attr]
    assert ann.get(f"/class/{code}/me/live?stage={stage}").status_code == 204
    join(app, code, "Bo")  # another learner joining is not a new stage
    assert ann.get(f"/class/{code}/me/live?stage={stage}").status_code == 204
    host.post(f"/class/{code}/host/question")
    fresh = ann.get(f"/class/{code}/me/live?stage={stage}")
    assert fresh.status_code == 200 and "data-option" in fresh.get_data(as_text=True)


def test_answers_are_rate_limited_per_learner(app: Flask, host: FlaskClient, code: str) -> None:
    ann, bo = join(app, code, "Ann"), join(app, code, "Bo")
    host.post(f"/class/{code}/host/question")
    statuses = [ann.post(f"/class/{code}/answer", data={"option": "ab"[i % 2]}).status_code for i in range(12)]
    assert statuses[:10] == [200] * 10 and statuses[10:] == [429, 429]
    assert bo.post(f"/class/{code}/answer", data={"option": "a"}).status_code == 200  # others are unaffected


def test_host_events_stream_the_tally(app: Flask, host: FlaskClient, code: str) -> None:
    ann = join(app, code, "Ann")
    host.post(f"/class/{code}/host/question")
    ann.post(f"/class/{code}/answer", data={"option": "c"})
    response = host.get(f"/class/{code}/host/events")
    assert response.mimetype == "text/event-stream"
    body = response.get_data(as_text=True)
    assert "event: tally\n" in body and "event: heatmap\n" in body and "event: roster\n" in body
    assert 'data-answered="1"' in body and '<li data-option="c" data-count' not in body  # the split waits
    host.post(f"/class/{code}/host/reveal")
    body = host.get(f"/class/{code}/host/events").get_data(as_text=True)
    assert 'data: <li data-option="c" data-count="1"' in body.replace("data:   ", "data: ")
    assert app.test_client().get(f"/class/{code}/host/events").status_code == 404


def test_a_presenters_view_holds_a_thread_only_while_the_process_may_spare_one(make_app: MakeApp,
                                                                               app_config: dict[str, Any]) -> None:
    """Waiting for changes keeps a server thread (web/site/admission.py): with a slot free the view holds
    it until closed; with none free it sends one snapshot and ends, and the browser reconnects."""
    app = make_app(**{**app_config, "MRTR_CLASS_STREAM_SECONDS": 3600}, MRTR_HELD_STREAMS="1")
    host = app.test_client()
    code = start(host)[0]
    slots = app.extensions[HELD_KEY]

    live = host.get(f"/class/{code}/host/events", buffered=False)
    chunks = iter(live.response)
    assert next(chunks).startswith(b"retry: ") and b"event: tally" in next(chunks)
    assert slots.held == 1
    live.close()  # what the server does when the presenter's tab goes
    assert slots.held == 0

    give_back = slots.take()  # the process's one slot is held elsewhere (say, a legacy call)
    assert give_back is not None
    result: dict[str, str] = {}
    reader = threading.Thread(target=lambda: result.update(
        body=host.get(f"/class/{code}/host/events").get_data(as_text=True)), daemon=True)
    reader.start()
    reader.join(20.0)
    assert not reader.is_alive(), "the view waited for a thread it may not hold"
    assert result["body"].startswith("retry: ") and "event: tally\n" in result["body"]
    assert slots.held == 1
    give_back()


# -- the attack round ---------------------------------------------------------------------------------


def play(learner: FlaskClient, code: str, move: str) -> dict[str, object]:
    response = learner.post(f"/class/{code}/play", data={"move": move}, headers={"Accept": "application/json"})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_round_moves_stop_where_the_lesson_says(app: Flask, host: FlaskClient, code: str) -> None:
    ann = join(app, code, "Ann")
    assert ann.post(f"/class/{code}/play", data={"move": HONEST.slug}).status_code == 409  # not open yet
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    page = ann.get(f"/class/{code}/me").get_data(as_text=True)
    assert sorted(re.findall(r'data-move="([\w-]+)"', page)) == sorted(m.slug for m in COURSE.moves)
    assert "learner-1" in page and "t1." in page  # her own principal and a real ticket
    stopped = {}
    for move in COURSE.moves:
        result = play(ann, code, move.slug)
        verdict = Outcome(result["verdict"])
        assert holds(move.expect, verdict)[0], (move.slug, result["verdict"])
        stopped[move.slug] = result["stopped_at"] or ""
        if verdict in (Outcome.REFUSED, Outcome.ASKED_AGAIN):
            assert stopped[move.slug] == move.stops_at, move.slug
        else:
            assert stopped[move.slug] == "", move.slug
    assert ann.post(f"/class/{code}/play", data={"move": "nope"}).status_code == 400
    html = host.get(f"/class/{code}/host").get_data(as_text=True)
    for move in COURSE.moves:
        check = stopped[move.slug] or "through"
        assert f'data-move="{move.slug}" data-check="{check}" data-count="1"' in html
    csv = host.get(f"/class/{code}/host/results.csv")
    assert csv.mimetype == "text/csv" and csv.get_data(as_text=True).count("attempt,Ann,") == len(COURSE.moves)


@pytest.mark.parametrize("slug", [m.slug for m in COURSE.moves if m.before is not None])
def test_a_move_sent_after_another_says_so_on_the_phone(app: Flask, host: FlaskClient, code: str, slug: str) -> None:
    ann = join(app, code, "Ann")
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    page = ann.post(f"/class/{code}/play", data={"move": slug}, headers={"HX-Request": "true"})
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    first = COURSE.move(slug).before
    assert f"First, the retry of “{first.title}”: " in html
    assert COURSE.move(slug).title in html


def test_class_tickets_are_worthless_against_mcp(app: Flask, host: FlaskClient, code: str) -> None:
    ann = join(app, code, "Ann")
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    result = play(ann, code, HONEST.slug)
    assert result["verdict"] == "completed"
    sent = dict(result["sent"])  # type: ignore[call-overload]
    response = app.test_client().post("/mcp", json=sent, headers={
        "Authorization": "Bearer bob-secret-token", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28"})
    body = response.get_json()
    assert "error" in body and "deployed" not in response.get_data(as_text=True), body


def test_first_replay_through_with_single_use_off(app: Flask, host: FlaskClient, code: str) -> None:
    ann, bo = join(app, code, "Ann"), join(app, code, "Bo")
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    assert play(ann, code, REPLAY.slug)["stopped_at"] == "single-use"
    assert f"(“{REPLAY.title}”)" not in host.get(f"/class/{code}/host").get_data(as_text=True)  # single use is on
    host.post(f"/class/{code}/host/single-use", data={"on": "0"})
    assert f"who gets a replay (“{REPLAY.title}”) through first?" in host.get(f"/class/{code}/host").get_data(
        as_text=True)
    first = play(bo, code, REPLAY.slug)
    assert first["verdict"] == "completed" and first["first_replay_through"] is True
    assert play(ann, code, REPLAY.slug)["first_replay_through"] is False
    assert 'data-first-replay="Bo"' in host.get(f"/class/{code}/host").get_data(as_text=True)


def test_moves_are_rate_limited_per_learner(app: Flask, host: FlaskClient, code: str) -> None:
    ann = join(app, code, "Ann")
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    for _ in range(30):
        play(ann, code, HONEST.slug)
    assert ann.post(f"/class/{code}/play", data={"move": HONEST.slug}).status_code == 429


def test_curl_can_join_and_play_with_a_bearer_token(app: Flask, host: FlaskClient, code: str) -> None:
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    curl = app.test_client()
    joined = curl.post("/join", data={"code": code, "nickname": "Term"}, headers={"Accept": "application/json"})
    assert joined.status_code == 201
    token = joined.get_json()["token"]
    bare = app.test_client()
    response = bare.post(f"/class/{code}/play", data={"move": STOLEN.slug},
                         headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200 and response.get_json()["stopped_at"] == "principal"
    assert bare.post(f"/class/{code}/play", data={"move": STOLEN.slug},
                     headers={"Authorization": "Bearer wrong"}).status_code == 404


# -- export, lifetime, secrets ------------------------------------------------------------------------


def test_csv_cells_cannot_be_formulas(app: Flask, host: FlaskClient, code: str, db_path: Path) -> None:
    ann = join(app, code, "Ann")
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    play(ann, code, HONEST.slug)
    with sqlite3.connect(db_path) as db:  # as if a nickname had slipped past the rules
        db.execute("UPDATE learners SET nickname = '=HYPERLINK(1)'")
    lines = host.get(f"/class/{code}/host/results.csv").get_data(as_text=True).splitlines()
    assert lines[0] == "kind,nickname,item,value,detail,utc"
    assert lines[1].startswith(f"attempt,'=HYPERLINK(1),{HONEST.slug},completed,,")


def test_a_class_is_deleted_after_its_lifetime(app: Flask, host: FlaskClient, code: str, clock: FakeClock,
                                               db_path: Path) -> None:
    ann = join(app, code, "Ann")
    host.post(f"/class/{code}/host/question")
    ann.post(f"/class/{code}/answer", data={"option": "a"})
    clock.advance(12 * 3600 - 1)
    assert host.get(f"/class/{code}/host").status_code == 200
    clock.advance(2)
    assert host.get(f"/class/{code}/host").status_code == 404
    assert ann.get(f"/class/{code}/me").headers["Location"] == f"/join?code={code}"  # gone: as any code
    with sqlite3.connect(db_path) as db:
        for table in ("classes", "learners", "answers", "attempts"):
            assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table  # noqa: S608


def test_lifetime_is_configurable(make_app: MakeApp, app_config: dict[str, Any], clock: FakeClock) -> None:
    app = make_app(**app_config, MRTR_CLASS_TTL_HOURS="1")
    host = app.test_client()
    code, _ = start(host)
    clock.advance(3601)
    assert host.get(f"/class/{code}/host").status_code == 404


def test_ending_a_class_deletes_it(app: Flask, host: FlaskClient, code: str) -> None:
    ann = join(app, code, "Ann")
    response = host.post(f"/class/{code}/host/end")
    assert response.status_code == 303 and response.headers["Location"] == "/demo"
    assert app.test_client().post("/join", data={"code": code, "nickname": "Bo"}).status_code == 404
    ended = ann.get(f"/class/{code}/me/live?stage=0")
    assert ended.status_code == 286 and "data-ended" in ended.get_data(as_text=True)  # htmx stops polling


def test_no_configured_secret_reaches_any_page(app: Flask, host: FlaskClient, code: str, db_path: Path) -> None:
    ann = join(app, code, "Ann")
    host.post(f"/class/{code}/host/question")
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    play(ann, code, HONEST.slug)
    lab_keys = [k.decode() for k in app.extensions["mrtr"].lab_ring.keys]
    pages = [host.get(f"/class/{code}/host"), host.get(f"/class/{code}/host/events"),
             host.get(f"/class/{code}/host/results.csv"), ann.get(f"/class/{code}/me"),
             ann.post(f"/class/{code}/play", data={"move": REPLAY.slug}), app.test_client().get(f"/join?code={code}")]
    for page in pages:
        text = page.get_data(as_text=True)
        for secret in (APP_CONFIG["MRTR_SECRET_KEYS"], "bob-secret-token", "alice-secret-token", *lab_keys):
            assert secret not in text
        csp = page.headers.get("Content-Security-Policy", "")
        assert "'unsafe-inline'" not in csp
        assert not re.search(r"<script(?![^>]*\bsrc=)", text) and " style=" not in text
        assert not re.search(r" on\w+=", text)


def test_each_class_signs_on_its_own_lab_keys(app: Flask) -> None:
    from moves.labcodec import LabRing
    from web.classroom.round import class_ring

    lab = app.extensions["mrtr"].lab_ring
    one, two = class_ring(lab, "class-one"), class_ring(lab, "class-two")
    assert isinstance(one, LabRing)
    assert not set(one.keys) & set(two.keys)
    assert not set(one.keys) & (set(lab.keys) | set(app.extensions["mrtr"].ring.keys))
