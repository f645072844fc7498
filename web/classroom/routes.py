"""A live class: the presenter's screen, learners' phones, a live quiz and an attack round. This module is the
blueprint: the route table, and the learners' side (joining with a nickname, no account; the learner's page,
answering, playing a move in the attack round).

Routes: `POST /class/start` (from /demo) opens a class; `/class/<code>/host` is the presenter's screen
(web/classroom/host.py); `/join` and `/j/<code>` let a learner in; `/class/<code>/me` is the learner's page (polls
for the presenter's next step with htmx, or refreshes without JavaScript). Who may do what is
web/classroom/access.py; the services and limits, web/classroom/services.py.

Learners never see others' answers; the presenter's tally is for the room. The attack round's tickets are signed on
the class's own lab keys (web.classroom.round), never on a key `/mcp` accepts. The live class never writes SQL or
talks to Redis (mrtr_stores.classes) and never touches the protocol except through ClassLab.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import NotRequired, TypedDict

from flask import Blueprint, Response, jsonify, redirect, render_template, request, url_for
from markupsafe import escape
from werkzeug.wrappers import Response as BaseResponse

from moves.catalog import Move
from mrtr import JSONObject
from mrtr_stores.classes import (
    NICKNAME_MAX,
    ClassFull,
    ClassroomError,
    ClassRow,
    ClassStoreUnavailable,
    Learner,
    check_nickname,
    normalize_code,
)
from web.classroom import host as classroom_host
from web.classroom import presenter as class_presenter
from web.classroom.access import class_cookie, client_key, learner_here, learner_of, slow_down, wants_json
from web.classroom.round import Attempt, is_replay
from web.classroom.services import (
    GUESS_WINDOW,
    JOIN_CLASS_WINDOW,
    JOIN_CLIENT_WINDOW,
    LEARNER_COOKIE,
    NO_CLASS,
    PLAY_LIMIT,
    PLAY_WINDOW,
    changed,
    choice_letter,
    classroom,
    is_drawn,
    question_of,
    room_options,
)
from web.errors import pages as error_pages
from web.quiz import draws as quiz_draws
from web.quiz.draws import DrawError, DrawView, PlayedDraw, right_option, room_draw, room_situation, view_of
from web.site import htmx
from web.site.content import Question, get_content
from web.site.moveviews import MoveGroup, grouped
from web.site.services import get_settings

bp = Blueprint("classroom", __name__)
log = logging.getLogger("mrtr.classroom")

#: The presenter's routes (their views: web/classroom/host.py); each endpoint is `classroom.<the view's name>`.
HOST_ROUTES = (
    ("POST", "/class/start", classroom_host.start),
    ("GET", "/class/<code>/presenter", classroom_host.presenter),
    ("GET", "/class/<code>/control/<secret>", classroom_host.claim),
    ("GET", "/class/<code>/host", classroom_host.host),
    ("GET", "/class/<code>/host/events", classroom_host.host_events),
    ("POST", "/class/<code>/host/question", classroom_host.push_question),
    ("POST", "/class/<code>/host/reveal", classroom_host.reveal),
    ("POST", "/class/<code>/host/round", classroom_host.round_switch),
    ("POST", "/class/<code>/host/single-use", classroom_host.single_use),
    ("POST", "/class/<code>/host/lock", classroom_host.lock),
    ("POST", "/class/<code>/host/remove", classroom_host.remove),
    ("POST", "/class/<code>/host/end", classroom_host.end),
    ("GET", "/class/<code>/host/results.csv", classroom_host.results),
)
for _method, _rule, _view in HOST_ROUTES:
    bp.add_url_rule(_rule, view_func=_view, methods=[_method])


@bp.errorhandler(ClassStoreUnavailable)
def _store_away(exc: ClassStoreUnavailable) -> Response:
    log.warning("classroom: the class store is unavailable: %s", exc)
    return error_pages.unavailable("The live class cannot reach its store right now; nothing was changed. "
                              "Try again in a few seconds.")


@bp.app_context_processor
def _start_control() -> dict[str, object]:
    """What /demo's start-class control needs to know: only whether a token is asked for."""
    def presenting() -> list[str]:  # this browser's classes that are still open (web/classroom/presenter.py)
        store = classroom().store
        return [code for code, _ in class_presenter.remembered() if store.by_code(code) is not None]

    return {"class_start_needs_token": lambda: bool(get_settings().instructor_token),
            "presenting_classes": presenting, "choice_letter": choice_letter}


# -- learners -----------------------------------------------------------------------------------------


@bp.get("/j/<code>")
def short(code: str) -> BaseResponse:
    return redirect(url_for("classroom.join", code=normalize_code(code)), 303)


def _join_form(code: str = "", nickname: str = "", error: str | None = None, status: int = 200) -> Response:
    html = render_template("classroom/join.html", code=code, nickname=nickname, error=error,
                           nickname_max=NICKNAME_MAX)
    return Response(html, status)


@bp.get("/join")
def join() -> Response:
    return _join_form(code=normalize_code(request.args.get("code")))


@bp.post("/join")
def join_post() -> BaseResponse:
    """Join a class. Until a join succeeds, a code that opens no class (wrong, ended or locked) answers exactly
    alike, and such codes are limited per client (GUESS_LIMIT), so codes cannot be found by guessing."""
    cr = classroom()
    now = cr.clock()
    code = normalize_code(request.form.get("code"))
    nickname = (request.form.get("nickname") or "")[:200]
    try:
        check_nickname(nickname)  # before the code is looked up: the answer is the same for every code
    except ClassroomError as exc:
        return _join_form(code, nickname, str(exc), 400)
    if cr.guesses.exhausted(client_key(), now):
        return slow_down("Too many codes that open no class from this address. Wait ten minutes, then check "
                          "the code on the screen.", int(GUESS_WINDOW))
    if not cr.joins.allow(client_key(), now):
        return slow_down("Too many joins from this address in a minute; try again shortly.",
                          int(JOIN_CLIENT_WINDOW))
    row = cr.store.by_code(code) if code else None
    if row is None or row.locked:
        cr.guesses.allow(client_key(), now)
        return _join_form(code, nickname, NO_CLASS, 404)
    if not cr.class_joins.allow(row.id, now):
        return slow_down("This class is taking many joins at once; try again in a minute.", int(JOIN_CLASS_WINDOW))
    try:
        learner, token = cr.store.join(row, nickname)
    except ClassFull as exc:
        return _join_form(code, nickname, str(exc), 409)
    except ClassroomError as exc:
        return _join_form(code, nickname, str(exc), 400)
    changed(row)
    response: BaseResponse
    if wants_json():
        response = jsonify({"learner": learner.nickname, "principal": learner.principal, "token": token,
                            "page": url_for("classroom.me", code=row.code, _external=True)})
        response.status_code = 201
    else:
        response = redirect(url_for("classroom.me", code=row.code), 303)
    class_cookie(response, LEARNER_COOKIE, token, row.code)
    return response


class MyDraw(TypedDict):
    """A learner's own draw of the current drawn question, as the lab server played it."""

    view: DrawView
    right: str  # the option the server's play makes right (shown only once revealed)
    said: str  # what the server did, in words (shown only once revealed)


def _my_draw(row: ClassRow, learner: Learner, question: Question) -> PlayedDraw:
    """The learner's draw of a drawn question, kept by the class store (the first page they saw drew it), played
    on the lab server. Raises ClassroomError when the class keeps no more draws, DrawError for an unreadable one."""
    kept = classroom().store.keep_draw(row, learner, question.id, room_draw(int(classroom().clock())))
    return quiz_draws.play(room_situation(kept))


def _draw_view(played: PlayedDraw, question: Question) -> MyDraw:
    ask = question.task.ask if question.task else "outcome"
    right = right_option(played, ask)
    return {"view": view_of("", played, ask), "right": right, "said": played.said}


class LearnerView(TypedDict):
    """What the learner's phone (classroom/learner.html, _live.html, _attempt.html) renders."""

    row: ClassRow
    learner: Learner
    question: Question | None
    mine: str | None  # the learner's answer to the current question
    moves: tuple[Move, ...]
    move_groups: list[MoveGroup]
    play_url: str
    auto_refresh: bool  # without JavaScript, the page refreshes itself while the learner has nothing to do
    options: tuple[tuple[str, str], ...]  # the current question's options (id, words), as the phone offers them
    draw: NotRequired[MyDraw]  # a drawn question: the learner's own draw
    problem: NotRequired[str]  # why the last request was refused
    attempt: NotRequired[Attempt]  # the move just played
    first: NotRequired[bool]  # the first replay through in the room


def _me_context(row: ClassRow, learner: Learner, *, problem: str | None = None, attempt: Attempt | None = None,
                first: bool | None = None) -> LearnerView:
    question = question_of(row)
    mine = classroom().store.my_answer(row, learner, question.id) if question else None
    drawn: MyDraw | None = None
    if question is not None and is_drawn(question):
        try:
            drawn = _draw_view(_my_draw(row, learner, question), question)
        except (ClassroomError, DrawError) as exc:
            problem = problem or str(exc)
    if row.round_open and not learner.ticket:
        # The learner's own ticket, on the class's lab key, for their own principal.
        ticket = classroom().lab(row).mint(learner.principal)
        classroom().store.set_ticket(learner, ticket)
        learner = Learner(learner.id, learner.class_id, learner.nickname, learner.created, ticket)
    # Without JavaScript the page refreshes itself only while the learner has nothing to do.
    waiting = not row.round_open and (question is None or (mine is not None and not row.revealed))
    view: LearnerView = {
        "row": row, "learner": learner, "question": question, "mine": mine, "moves": get_content().moves,
        "move_groups": grouped(get_content().moves),
        "play_url": url_for("classroom.play", code=row.code, _external=True), "auto_refresh": waiting,
        "options": room_options(question) if question else ()}
    if drawn is not None:
        view["draw"] = drawn
    if problem is not None:
        view["problem"] = problem
    if attempt is not None:
        view["attempt"] = attempt
    if first is not None:
        view["first"] = first
    return view


@bp.get("/class/<code>/me")
def me(code: str) -> str:
    row, learner = learner_here(code, to_join=True)
    return render_template("classroom/learner.html", **_me_context(row, learner))


@bp.get("/class/<code>/me/live")
def me_live(code: str) -> Response:
    """The learner's live panel for htmx polling: 204 (nothing to swap) until the presenter moves on."""
    cr = classroom()
    row = cr.store.by_code(code)
    learner = learner_of(row) if row is not None else None
    if row is None or learner is None:
        # The class ended, the presenter removed this learner, or it never was: one answer for all (counted as
        # a wrong code), and 286 tells htmx to stop polling.
        now = cr.clock()
        if cr.guesses.exhausted(client_key(), now):
            return slow_down("Too many codes that open no class from this address.", int(GUESS_WINDOW))
        cr.guesses.allow(client_key(), now)
        return Response('<div id="live" class="live"><p data-ended>You are not in an open class with this code: it '
                        f'has ended, or you were removed. <a href="{escape(url_for("classroom.join"))}">Join a '
                        "class</a> if the presenter lets you.</p></div>", status=286)
    if request.args.get("stage") == str(row.stage):
        return Response(status=204)
    return Response(render_template("classroom/_live.html", **_me_context(row, learner)))


@bp.post("/class/<code>/answer")
def answer(code: str) -> Response:
    row, learner = learner_here(code)
    question = question_of(row)
    option = request.form.get("option", "")
    if question is None or row.revealed:
        return _refuse(row, learner, 409, "That question is closed.")
    if option not in dict(room_options(question)):
        return _refuse(row, learner, 400, "Choose one of the options.")
    if not classroom().answers.allow((row.id, learner.id), classroom().clock()):
        return _refuse(row, learner, 429, "Slow down: too many answers in a few seconds.")
    right = None
    if is_drawn(question) and question.task is not None:  # graded against this learner's own draw
        try:
            right = option == right_option(_my_draw(row, learner, question), question.task.ask)
        except (ClassroomError, DrawError) as exc:
            return _refuse(row, learner, 409, str(exc))
    classroom().store.answer(row, learner, question.id, option, right=right)
    changed(row)
    if wants_json():
        return jsonify({"question": question.id, "option": option})
    return htmx.render("classroom/learner.html", "classroom/_live.html", _me_context(row, learner))


def _refuse(row: ClassRow, learner: Learner, status: int, message: str) -> Response:
    response: BaseResponse
    if wants_json():
        response = jsonify({"error": message})
        response.status_code = status
        return response
    return htmx.render("classroom/learner.html", "classroom/_live.html", _me_context(row, learner, problem=message),
                       status=status)


def _attempt_json(attempt: Attempt, first: bool) -> JSONObject:
    """The attempt as the play endpoint's JSON answer (for a client that asked for JSON, not the fragment)."""
    return {"move": attempt.move, "verdict": attempt.verdict, "stopped_at": attempt.stopped_at or None,
            "single_use": attempt.single_use, "checks": [dict(c) for c in attempt.checks],
            "first_replay_through": first, "ticket": attempt.ticket, "sent": attempt.sent,
            "response": attempt.response}


@bp.post("/class/<code>/play")
def play(code: str) -> Response:
    row, learner = learner_here(code)
    move = get_content().move(request.form.get("move", ""))
    if not row.round_open:
        return _refuse(row, learner, 409, "The attack round is not open.")
    if move is None:
        return _refuse(row, learner, 400, "Choose one of the moves.")
    cr = classroom()
    if cr.store.recent_attempts(learner, cr.clock() - PLAY_WINDOW) >= PLAY_LIMIT:
        return _refuse(row, learner, 429, f"Slow down: at most {PLAY_LIMIT} moves a minute.")
    attempt = cr.lab(row).play(move, learner.principal, single_use=row.single_use, moves=get_content().moves)
    cr.store.set_ticket(learner, attempt.ticket)
    learner = replace(learner, ticket=attempt.ticket)
    replay_through = is_replay(move) and attempt.went_through
    first = cr.store.record_attempt(row, learner, move=move.slug, outcome=attempt.verdict,
                                    stopped_at=attempt.stopped_at, single_use=row.single_use,
                                    replay_through=replay_through)
    changed(row)
    if wants_json():
        return jsonify(_attempt_json(attempt, first))
    context = _me_context(row, learner, attempt=attempt, first=first)
    return htmx.render("classroom/learner.html", "classroom/_attempt.html", context)
