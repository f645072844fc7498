"""A live class: the presenter's screen, learners' phones, a live quiz and an attack round.

Routes: `POST /class/start` (from /demo) opens a class; `/class/<code>/host` is the presenter's
screen (join code, QR code, live tally and heatmap over server-sent events, controls as plain
forms); `/join` and `/j/<code>` let a learner in with a nickname, no account; `/class/<code>/me` is
the learner's page (polls for the presenter's next step with htmx, or refreshes without JavaScript).

Who may do what: the presenter holds a secret capability (shown once, stored hashed, kept in an
HttpOnly, SameSite=Strict cookie scoped to the class) or, when `MRTR_INSTRUCTOR_TOKEN` is set, that
token. A learner holds a per-learner token (cookie, or `Authorization: Bearer` for curl). Learners
never see others' answers; the presenter's tally is for the room. The attack round's tickets are
signed on the class's own lab keys (web.classroom_round), never on a key `/mcp` accepts. This module
never writes SQL or talks to Redis (mrtr_stores.classes) and never touches the protocol except through ClassLab.

Settings (read by `mrtr_settings.environment`; a test config overrides the environment): MRTR_CLASS_DB (default:
classroom.sqlite3 in the state dir), MRTR_CLASS_TTL_HOURS (12), MRTR_INSTRUCTOR_TOKEN, MRTR_REDIS_URL (live updates
across processes), MRTR_CLASS_POLL_SECONDS (2: how often a live stream re-reads the store without a
notice), MRTR_CLASS_STREAM_SECONDS (30: an SSE stream's life before the browser reconnects),
MRTR_MAX_CLASSES (200 open at once), MRTR_CLASS_CLOCK (tests: the clock).
"""

from __future__ import annotations

import csv
import hmac
import io
import logging
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import segno
from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from markupsafe import Markup, escape
from werkzeug.wrappers import Response as BaseResponse

from mrtr import RedeemedStore
from mrtr_settings.stores import open_classes, open_rate_limit
from mrtr_stores.class_notices import LocalBus, make_bus
from mrtr_stores.classes import (
    MAX_LEARNERS,
    NICKNAME_MAX,
    ClassFull,
    ClassroomError,
    ClassRow,
    ClassStore,
    ClassStoreUnavailable,
    Learner,
    LocalRateLimit,
    RateLimit,
    check_nickname,
    normalize_code,
)
from mrtr_stores.redeemed_sqlite import SqliteStore
from web import class_presenter, error_pages, htmx
from web.admission import held_slots
from web.classroom_round import THROUGH, Attempt, ClassLab, check_order, class_ring, is_replay
from web.content import Lesson, Question, get_content
from web.deployment import visitor_key
from web.moveviews import grouped
from web.services import get_services, get_settings

bp = Blueprint("classroom", __name__)


log = logging.getLogger("mrtr.classroom")


@bp.errorhandler(ClassStoreUnavailable)
def _store_away(exc: ClassStoreUnavailable) -> Any:
    log.warning("classroom: the class store is unavailable: %s", exc)
    return error_pages.unavailable("The live class cannot reach its store right now; nothing was changed. "
                              "Try again in a few seconds.")

HOST_COOKIE = "mrtr_host"
LEARNER_COOKIE = "mrtr_learner"
#: Per learner: at most this many answers in ANSWER_WINDOW seconds, and plays in PLAY_WINDOW seconds.
ANSWER_LIMIT, ANSWER_WINDOW = 10, 10.0
PLAY_LIMIT, PLAY_WINDOW = 30, 60.0
#: Without an instructor token, one visitor (an IPv4 address, an IPv6 /64) opens at most this many classes an
#: hour, and everyone together at most ALL_START_LIMIT: many addresses then open 30 classes an hour, not the 200
#: places in a second (70 addresses filled them in 0.8 s). A presenter with the instructor token is held by
#: neither: where MRTR_INSTRUCTOR_TOKEN is set, only its holders open classes, so nobody else fills the places.
START_LIMIT, START_WINDOW = 3, 3600.0
ALL_START_LIMIT = 30
#: Joins per client address a minute (a classroom behind one school router still fits), and per class.
JOIN_CLIENT_LIMIT, JOIN_CLIENT_WINDOW = 30, 60.0
JOIN_CLASS_LIMIT, JOIN_CLASS_WINDOW = 60, 60.0
#: Codes that open no class (wrong, ended or locked), per client address, before it must wait. With 31^6
#: possible codes and at most MRTR_MAX_CLASSES (200) open, one guess finds a class with odds 200 in 887.5
#: million; at 10 guesses per 10 minutes a client needs about 8 years on average, and has 1 chance in about
#: 6,000 within a class's 12 hours.
GUESS_LIMIT, GUESS_WINDOW = 10, 600.0
#: Presenter live views (SSE) opened or reopened per class and per visitor a minute. A view reconnects every 30 s
#: (MRTR_CLASS_STREAM_SECONDS), or every 2 s when the process holds its most streams; two screens of one class fit
#: easily. Past it the view is told to come back in STREAM_BACKOFF seconds, at the cost of a few bytes: 500 views
#: of one class had slowed `GET /` to 2 s by reconnecting.
STREAM_CLASS_LIMIT, STREAM_CLIENT_LIMIT, STREAM_WINDOW = 60, 60, 60.0
STREAM_BACKOFF = 30
#: Every limit of the class, by the Classroom field that holds it.
LIMITS: dict[str, tuple[int, float]] = {
    "answers": (ANSWER_LIMIT, ANSWER_WINDOW), "starts": (START_LIMIT, START_WINDOW),
    "all_starts": (ALL_START_LIMIT, START_WINDOW),
    "joins": (JOIN_CLIENT_LIMIT, JOIN_CLIENT_WINDOW), "class_joins": (JOIN_CLASS_LIMIT, JOIN_CLASS_WINDOW),
    "guesses": (GUESS_LIMIT, GUESS_WINDOW),
    "class_streams": (STREAM_CLASS_LIMIT, STREAM_WINDOW), "client_streams": (STREAM_CLIENT_LIMIT, STREAM_WINDOW),
}
NO_CLASS = "No open class has that code. Check the code on the screen."
#: The one key of the site-wide start limit.
ALL_START = "*"


@dataclass
class Classroom:
    store: ClassStore
    bus: LocalBus
    lab_path: Path
    clock: Callable[[], float]
    instructor_token: str | None
    poll_seconds: float
    stream_seconds: float
    max_classes: int
    answers: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["answers"]))
    starts: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["starts"]))
    all_starts: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["all_starts"]))
    joins: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["joins"]))
    class_joins: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["class_joins"]))
    guesses: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["guesses"]))
    class_streams: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["class_streams"]))
    client_streams: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["client_streams"]))
    labs: dict[str, ClassLab] = field(default_factory=dict)
    #: The attack round's redeemed store, opened on first use: SQLite beside the class file, or Redis.
    spent_store: Callable[[], RedeemedStore] | None = None
    _spent: RedeemedStore | None = None

    def lab(self, row: ClassRow) -> ClassLab:
        lab = self.labs.get(row.id)
        if lab is None:
            if len(self.labs) > 1000:
                self.labs.clear()
            if self._spent is None:
                self._spent = self.spent_store() if self.spent_store is not None else SqliteStore(self.lab_path)
            ring = class_ring(get_services().lab_ring, row.id)
            lab = self.labs[row.id] = ClassLab(ring, self._spent, clock=self.clock)
        return lab


_build_lock = threading.Lock()
#: The attack round's spent lab tickets in Redis: apart from /mcp's redeemed tickets.
CLASS_LAB_PREFIX = "mrtr:class-lab:redeemed:"
#: Every limit's windows in Redis, one prefix per limit.
RATE_PREFIX = "mrtr:class:rate:"


def _redis_spent(url: str) -> RedeemedStore:
    from mrtr_stores.redeemed_redis import RedisStore  # only when Redis is configured

    return RedisStore.from_url(url, prefix=CLASS_LAB_PREFIX)


def classroom() -> Classroom:
    """The app's classroom services, built on first use (an app that never runs a class opens no file)."""
    found: Classroom | None = current_app.extensions.get("classroom")
    if found is not None:
        return found
    with _build_lock:
        found = current_app.extensions.get("classroom")
        if found is None:
            clock = current_app.config.get("MRTR_CLASS_CLOCK") or time.time
            settings = get_settings()
            if settings.class_db:
                path = settings.class_db
            elif current_app.testing:  # a test app never writes to the user's state dir
                path = Path(tempfile.mkdtemp(prefix="mrtr-class-")) / "classroom.sqlite3"
            else:
                path = settings.state_directory() / "classroom.sqlite3"
            ttl = settings.class_ttl_hours * 3600
            found = Classroom(
                store=open_classes(settings, path=path, clock=clock, ttl_seconds=ttl),
                bus=make_bus(settings.redis_url),
                lab_path=path.with_name(path.stem + "-redeemed.sqlite3"),
                clock=clock,
                instructor_token=settings.instructor_token,
                poll_seconds=settings.class_poll_seconds,
                stream_seconds=settings.class_stream_seconds,
                max_classes=settings.max_classes,
            )
            for name, (limit, window) in LIMITS.items():  # with Redis, one window per limit for every replica
                setattr(found, name, open_rate_limit(settings, found.store, limit, window,
                                                     prefix=f"{RATE_PREFIX}{name}:"))
            if settings.redis_url:  # replicas on several hosts: all a replica needs is in Redis
                url = settings.redis_url
                found.spent_store = lambda: _redis_spent(url)
            current_app.extensions["classroom"] = found
    return found


@bp.app_context_processor
def _start_control() -> dict[str, Any]:
    """What /demo's start-class control needs to know: only whether a token is asked for."""
    def presenting() -> list[str]:  # this browser's classes that are still open (web/class_presenter.py)
        store = classroom().store
        return [code for code, _ in class_presenter.remembered() if store.by_code(code) is not None]

    return {"class_start_needs_token": lambda: bool(get_settings().instructor_token),
            "presenting_classes": presenting}


# -- helpers ------------------------------------------------------------------------------------------


def _lesson(row: ClassRow) -> Lesson:
    course = get_content()
    return course.lesson(row.lesson) or course.lessons[0]


def _question(row: ClassRow) -> Question | None:
    return _lesson(row).question(row.question_id) if row.question_id else None


def _no_class(*, to_join: str | None = None) -> NoReturn:
    """The one answer when a class route's code opens nothing to this visitor: no such class, an ended one, or a
    real class the visitor holds no presenter or learner credential for. Real and made-up codes answer alike (a
    404, or for a learner's page the join form), and every such answer counts toward the visitor's wrong-code
    limit (GUESS_LIMIT per GUESS_WINDOW); past it every answer is "slow down", for real codes too."""
    cr = classroom()
    now = cr.clock()
    if cr.guesses.exhausted(_client(), now):
        abort(_slow_down("Too many codes that open no class from this address. Wait ten minutes, then check the "
                         "code on the screen.", int(GUESS_WINDOW)))
    cr.guesses.allow(_client(), now)
    if to_join is not None:  # the code as given, real or not
        abort(redirect(url_for("classroom.join", code=normalize_code(to_join)), 303))
    abort(404)


def _host(code: str) -> ClassRow:
    cr = classroom()
    row = cr.store.by_code(code)
    secret = request.cookies.get(HOST_COOKIE)
    if row is None:
        ok = False
    elif cr.instructor_token:
        ok = bool(secret) and hmac.compare_digest(str(secret).encode(), cr.instructor_token.encode())
    else:
        ok = cr.store.host_ok(row, secret)
    if row is None or not ok:
        _no_class()
    return row


def _learner_token() -> str | None:
    auth = request.headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return request.cookies.get(LEARNER_COOKIE)


def _learner(row: ClassRow) -> Learner | None:
    return classroom().store.learner(row, _learner_token())


def _wants_json() -> bool:
    return request.accept_mimetypes.best == "application/json" or request.headers.get("Authorization") is not None


def _cookie(response: BaseResponse, name: str, value: str, code: str) -> None:
    ttl = int(classroom().store.ttl)
    response.set_cookie(name, value, max_age=ttl, path=f"/class/{code}", httponly=True, samesite="Strict",
                        secure=request.is_secure)


def _join_url(row: ClassRow) -> str:
    return url_for("classroom.short", code=row.code, _external=True)


def qr_svg(text: str, label: str) -> Markup:
    """The QR code of `text` as inline SVG (no script, no style attribute: CSP-safe)."""
    svg = segno.make(text, error="m").svg_inline(scale=6, dark="#000000", light="#ffffff", title=label,
                                                 svgclass="qr", lineclass=None, omitsize=True)
    attrs = f'<svg role="img" aria-label="{Markup.escape(label)!s}" '
    return Markup(svg.replace("<svg ", attrs, 1))  # noqa: S704 - segno's own SVG, the label escaped


def _heat_level(count: int, top: int) -> int:
    if count <= 0 or top <= 0:
        return 0
    return min(4, 1 + (4 * count - 1) // top)


def _heat(row: ClassRow) -> dict[str, Any]:
    raw = classroom().store.heat(row.id)
    columns = [*check_order(), THROUGH]
    top = max(raw.values(), default=0)
    rows = []
    for move in get_content().moves:
        cells: list[dict[str, Any]] = []
        for check in columns:
            n = raw.get((move.slug, check), 0)
            cells.append({"check": check or "through", "count": n, "level": _heat_level(n, top)})
        rows.append({"move": move, "cells": cells, "total": sum(c["count"] for c in cells)})
    return {"columns": [c or "through" for c in columns], "rows": rows, "total": sum(raw.values())}


def _tally(row: ClassRow) -> dict[str, Any]:
    question = _question(row)
    counts = classroom().store.tally(row.id, question.id) if question else {}
    total = sum(counts.values())
    return {"question": question, "counts": counts, "total": total}


def _host_context(row: ClassRow) -> dict[str, Any]:
    store = classroom().store
    lesson = _lesson(row)
    join_url = _join_url(row)
    return {
        "row": row, "lesson": lesson, "join_url": join_url, "short_url": join_url.split("://", 1)[-1],
        "qr": qr_svg(join_url, f"QR code: {join_url}"), "learners": store.learners(row.id),
        "learner_count": store.count_learners(row.id), "tally": _tally(row), "heat": _heat(row),
        "more_questions": row.question_no < len(lesson.questions), "question_total": len(lesson.questions),
        "max_learners": MAX_LEARNERS,
        "replay_move": next((m for m in get_content().moves if is_replay(m)), None),
    }


def _changed(row: ClassRow) -> None:
    classroom().bus.notify(row.id)


# -- starting a class and the presenter's controls ------------------------------------------------------


@bp.post("/class/start")
def start() -> Response | str:
    cr = classroom()
    if cr.instructor_token:
        given = request.form.get("token", "")
        if not hmac.compare_digest(given.encode(), cr.instructor_token.encode()):
            return Response(render_template("classroom/denied.html"), 403)
    elif not cr.starts.allow(_client(), cr.clock()):
        return _start_refused(cr)
    elif not cr.all_starts.allow(ALL_START, cr.clock()):
        return _slow_down(f"{ALL_START_LIMIT} classes were opened here in the last hour, the most this site allows "
                          "without an instructor token. Try again later; the site's operator can set "
                          "MRTR_INSTRUCTOR_TOKEN so presenters always can.", int(START_WINDOW))
    cr.store.purge()
    if cr.store.count_classes() >= cr.max_classes:
        return _slow_down(f"All {cr.max_classes} places for classes are taken. Try again when one ends.",
                          int(START_WINDOW))
    secret = None if cr.instructor_token else secrets.token_urlsafe(24)
    row = cr.store.create(lesson=get_content().lessons[0].slug, host_secret=secret)
    control = url_for("classroom.claim", code=row.code, secret=secret, _external=True) if secret else None
    response = Response(render_template("classroom/started.html", row=row, control_url=control,
                                        join_url=_join_url(row)), 201)
    _cookie(response, HOST_COOKIE, secret or cr.instructor_token or "", row.code)
    class_presenter.remember(response, row.code, cr.clock(), int(cr.store.ttl))
    return response


def _start_refused(cr: Classroom) -> Response:
    """The start limit's answer: when this browser's next class can open (from its own record), and the classes
    it opened that are still open, to rehearse in instead of a new one."""
    now = cr.clock()
    at = class_presenter.next_start([t for _, t in class_presenter.remembered()], START_LIMIT, START_WINDOW, now)
    wait = int(at - now) + 1 if at is not None else int(START_WINDOW)
    open_codes = [c for c, _ in class_presenter.remembered() if cr.store.by_code(c) is not None]
    response = Response(render_template("classroom/start_refused.html", limit=START_LIMIT, minutes=-(-wait // 60),
                                        known=at is not None, open_codes=open_codes), 429)
    response.headers["Retry-After"] = str(wait)
    return response


@bp.get("/class/<code>/presenter")
def presenter(code: str) -> str:
    """The presenter's own page again (the one /class/start answered): the control link, shown on request, is
    rebuilt from this browser's host cookie, so a reload or a lost tab does not lose it."""
    row = _host(code)
    secret = None if classroom().instructor_token else request.cookies.get(HOST_COOKIE)
    control = url_for("classroom.claim", code=row.code, secret=secret, _external=True) if secret else None
    return render_template("classroom/started.html", row=row, control_url=control, join_url=_join_url(row))


@bp.get("/class/<code>/control/<secret>")
def claim(code: str, secret: str) -> BaseResponse:
    """The capability link: it proves the holder is the presenter, then leaves the address bar."""
    row = classroom().store.by_code(code)
    if row is None or not classroom().store.host_ok(row, secret):
        _no_class()
    response = redirect(url_for("classroom.host", code=row.code), 303)
    _cookie(response, HOST_COOKIE, secret, row.code)
    return response


@bp.get("/class/<code>/host")
def host(code: str) -> str:
    row = _host(code)
    return render_template("classroom/host.html", **_host_context(row))


@bp.get("/class/<code>/host/events")
def host_events(code: str) -> Response:
    """Server-sent events: the tally, heatmap and roster as HTML fragments whenever the class changes."""
    row = _host(code)
    cr = classroom()
    now = cr.clock()
    if not cr.class_streams.allow(row.id, now) or not cr.client_streams.allow(_client(), now):
        # Too many views of this class, or from this visitor: nothing rendered, and the browser waits a while.
        response = Response(f"retry: {STREAM_BACKOFF * 1000}\n\n: too many live views; this one waits\n\n",
                            mimetype="text/event-stream")
        response.headers["X-Accel-Buffering"] = "no"
        return response

    def fragments(current: ClassRow) -> Iterator[str]:
        context = _host_context(current)
        for event, template in (("tally", "classroom/_tally.html"), ("heatmap", "classroom/_heatmap.html"),
                                ("roster", "classroom/_roster.html")):
            html = render_template(template, **context)
            yield f"event: {event}\n" + "".join(f"data: {line}\n" for line in html.splitlines()) + "\n"

    slots = held_slots()

    def stream() -> Iterator[str]:
        yield f"retry: {int(cr.poll_seconds * 1000)}\n\n"
        # Waiting for changes keeps this thread; when the process already holds as many as it may
        # (web/admission.py), send one snapshot and end: the browser reconnects after `retry`.
        give_back = slots.take()
        try:
            deadline = time.monotonic() + cr.stream_seconds
            seen_version: int | None = None
            while True:
                tick = cr.bus.tick(row.id)
                version = cr.store.version(row.id)
                if version is None:
                    yield "event: ended\ndata: <p>This class has ended.</p>\n\n"
                    return
                if version != seen_version:
                    seen_version = version
                    current = cr.store.by_id(row.id)
                    if current is None:
                        return
                    yield from fragments(current)
                else:
                    yield ": still here\n\n"
                left = deadline - time.monotonic()
                if left <= 0 or give_back is None:
                    return
                cr.bus.wait(row.id, tick, min(cr.poll_seconds, left))
        finally:
            if give_back is not None:
                give_back()

    response = Response(stream_with_context(stream()), mimetype="text/event-stream")
    response.headers["X-Accel-Buffering"] = "no"
    return response


def _client() -> str:
    """Whom per-client limits count: the visitor's address (behind MRTR_TRUSTED_PROXIES, the real one), an IPv6
    visitor's /64."""
    return visitor_key(request.remote_addr)


def _slow_down(message: str, retry_after: int) -> Response:
    response = Response(render_template("errors/error.html", code=429, title="Slow down", message=message), 429)
    response.headers["Retry-After"] = str(retry_after)
    return response


def _back_to_host(row: ClassRow) -> BaseResponse:
    return redirect(url_for("classroom.host", code=row.code), 303)


@bp.post("/class/<code>/host/question")
def push_question(code: str) -> BaseResponse:
    row = _host(code)
    questions = _lesson(row).questions
    if row.question_no >= len(questions):
        abort(409)
    classroom().store.set_question(row.id, row.question_no + 1, questions[row.question_no].id)
    _changed(row)
    return _back_to_host(row)


@bp.post("/class/<code>/host/reveal")
def reveal(code: str) -> BaseResponse:
    row = _host(code)
    if not row.question_id:
        abort(409)
    classroom().store.reveal(row.id)
    _changed(row)
    return _back_to_host(row)


@bp.post("/class/<code>/host/round")
def round_switch(code: str) -> BaseResponse:
    row = _host(code)
    classroom().store.set_round(row.id, request.form.get("open") == "1")
    _changed(row)
    return _back_to_host(row)


@bp.post("/class/<code>/host/single-use")
def single_use(code: str) -> BaseResponse:
    row = _host(code)
    classroom().store.set_single_use(row.id, request.form.get("on") == "1")
    _changed(row)
    return _back_to_host(row)


@bp.post("/class/<code>/host/lock")
def lock(code: str) -> BaseResponse:
    """Close the class to new learners, or open it again; those already in stay."""
    row = _host(code)
    classroom().store.set_locked(row.id, request.form.get("locked") == "1")
    _changed(row)
    return _back_to_host(row)


@bp.post("/class/<code>/host/remove")
def remove(code: str) -> BaseResponse:
    """Take one learner out, with their answers and attempts; their page then asks them to join again."""
    row = _host(code)
    raw = (request.form.get("learner") or "").strip()
    if not raw.isdigit() or len(raw) > 12:
        abort(400)
    if not classroom().store.remove_learner(row.id, int(raw)):
        abort(404)
    _changed(row)
    return _back_to_host(row)


@bp.post("/class/<code>/host/end")
def end(code: str) -> BaseResponse:
    row = _host(code)
    classroom().store.delete(row.id)
    _changed(row)
    response = redirect(url_for("demo.deck"), 303)
    response.delete_cookie(HOST_COOKIE, path=f"/class/{row.code}")
    return response


def _cell(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run as a formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


@bp.get("/class/<code>/host/results.csv")
def results(code: str) -> Response:
    row = _host(code)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["kind", "nickname", "item", "value", "stopped_at", "utc"])
    for kind, nickname, item, value, detail, at in classroom().store.export_rows(row.id):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
        writer.writerow([_cell(v) for v in (kind, nickname, item, value, detail, stamp)])
    response = Response(out.getvalue(), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="class-{row.code}.csv"'
    return response


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
    if cr.guesses.exhausted(_client(), now):
        return _slow_down("Too many codes that open no class from this address. Wait ten minutes, then check "
                          "the code on the screen.", int(GUESS_WINDOW))
    if not cr.joins.allow(_client(), now):
        return _slow_down("Too many joins from this address in a minute; try again shortly.",
                          int(JOIN_CLIENT_WINDOW))
    row = cr.store.by_code(code) if code else None
    if row is None or row.locked:
        cr.guesses.allow(_client(), now)
        return _join_form(code, nickname, NO_CLASS, 404)
    if not cr.class_joins.allow(row.id, now):
        return _slow_down("This class is taking many joins at once; try again in a minute.", int(JOIN_CLASS_WINDOW))
    try:
        learner, token = cr.store.join(row, nickname)
    except ClassFull as exc:
        return _join_form(code, nickname, str(exc), 409)
    except ClassroomError as exc:
        return _join_form(code, nickname, str(exc), 400)
    _changed(row)
    response: BaseResponse
    if _wants_json():
        response = jsonify({"learner": learner.nickname, "principal": learner.principal, "token": token,
                            "page": url_for("classroom.me", code=row.code, _external=True)})
        response.status_code = 201
    else:
        response = redirect(url_for("classroom.me", code=row.code), 303)
    _cookie(response, LEARNER_COOKIE, token, row.code)
    return response


def _me_context(row: ClassRow, learner: Learner, **extra: Any) -> dict[str, Any]:
    question = _question(row)
    mine = classroom().store.my_answer(row, learner, question.id) if question else None
    if row.round_open and not learner.ticket:
        # The learner's own ticket, on the class's lab key, for their own principal.
        ticket = classroom().lab(row).mint(learner.principal)
        classroom().store.set_ticket(learner, ticket)
        learner = Learner(learner.id, learner.class_id, learner.nickname, learner.created, ticket)
    # Without JavaScript the page refreshes itself only while the learner has nothing to do.
    waiting = not row.round_open and (question is None or (mine is not None and not row.revealed))
    return {"row": row, "learner": learner, "question": question, "mine": mine, "moves": get_content().moves,
            "move_groups": grouped(get_content().moves),
            "play_url": url_for("classroom.play", code=row.code, _external=True), "auto_refresh": waiting,
            **extra}


def _learner_here(code: str, *, to_join: bool = False) -> tuple[ClassRow, Learner]:
    """The class and the visitor's place in it, or the one answer for a code that opens nothing to them."""
    row = classroom().store.by_code(code)
    learner = _learner(row) if row is not None else None
    if row is None or learner is None:
        _no_class(to_join=code if to_join else None)
    return row, learner


@bp.get("/class/<code>/me")
def me(code: str) -> str:
    row, learner = _learner_here(code, to_join=True)
    return render_template("classroom/learner.html", **_me_context(row, learner))


@bp.get("/class/<code>/me/live")
def me_live(code: str) -> Response:
    """The learner's live panel for htmx polling: 204 (nothing to swap) until the presenter moves on."""
    cr = classroom()
    row = cr.store.by_code(code)
    learner = _learner(row) if row is not None else None
    if row is None or learner is None:
        # The class ended, the presenter removed this learner, or it never was: one answer for all (counted as
        # a wrong code), and 286 tells htmx to stop polling.
        now = cr.clock()
        if cr.guesses.exhausted(_client(), now):
            return _slow_down("Too many codes that open no class from this address.", int(GUESS_WINDOW))
        cr.guesses.allow(_client(), now)
        return Response('<div id="live" class="live"><p data-ended>You are not in an open class with this code: it '
                        f'has ended, or you were removed. <a href="{escape(url_for("classroom.join"))}">Join a '
                        "class</a> if the presenter lets you.</p></div>", status=286)
    if request.args.get("stage") == str(row.stage):
        return Response(status=204)
    return Response(render_template("classroom/_live.html", **_me_context(row, learner)))


@bp.post("/class/<code>/answer")
def answer(code: str) -> Response:
    row, learner = _learner_here(code)
    question = _question(row)
    option = request.form.get("option", "")
    if question is None or row.revealed:
        return _refuse(row, learner, 409, "That question is closed.")
    if question.choice(option) is None:
        return _refuse(row, learner, 400, "Choose one of the options.")
    if not classroom().answers.allow((row.id, learner.id), classroom().clock()):
        return _refuse(row, learner, 429, "Slow down: too many answers in a few seconds.")
    classroom().store.answer(row, learner, question.id, option)
    _changed(row)
    if _wants_json():
        return jsonify({"question": question.id, "option": option})
    return htmx.render("classroom/learner.html", "classroom/_live.html", **_me_context(row, learner))


def _refuse(row: ClassRow, learner: Learner, status: int, message: str) -> Response:
    response: BaseResponse
    if _wants_json():
        response = jsonify({"error": message})
        response.status_code = status
        return response
    return htmx.render("classroom/learner.html", "classroom/_live.html", status=status,
                       **_me_context(row, learner, problem=message))


def _attempt_json(attempt: Attempt, first: bool) -> dict[str, Any]:
    return {"move": attempt.move, "verdict": attempt.verdict, "stopped_at": attempt.stopped_at or None,
            "single_use": attempt.single_use, "checks": list(attempt.checks), "first_replay_through": first,
            "ticket": attempt.ticket, "sent": attempt.sent, "response": attempt.response}


@bp.post("/class/<code>/play")
def play(code: str) -> Response:
    row, learner = _learner_here(code)
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
    _changed(row)
    if _wants_json():
        return jsonify(_attempt_json(attempt, first))
    context = _me_context(row, learner, attempt=attempt, first=first)
    return htmx.render("classroom/learner.html", "classroom/_attempt.html", **context)
