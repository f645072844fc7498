"""The presenter's side of a live class: opening a class, the presenter's screen (join code, QR code, live tally,
heatmap and roster over server-sent events) and its controls as plain forms, and the results as CSV.

The views are routed by web/classroom/routes.py's route table (endpoints `classroom.<view>`). Only a presenter
(web.classroom.access.host_row) reaches them, but for `start` and the capability link itself.
"""

from __future__ import annotations

import csv
import hmac
import io
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypedDict

import segno
from flask import Response, abort, redirect, render_template, request, stream_with_context, url_for
from markupsafe import Markup
from werkzeug.wrappers import Response as BaseResponse

from moves.catalog import Move
from mrtr_stores.classes import MAX_LEARNERS, ClassRow, Learner
from web.classroom import presenter as class_presenter
from web.classroom.access import class_cookie, client_key, host_row, no_class, slow_down
from web.classroom.round import THROUGH, check_order, is_replay
from web.classroom.services import (
    ALL_START,
    ALL_START_LIMIT,
    ALL_START_WINDOW,
    HOST_COOKIE,
    START_LIMIT,
    START_WINDOW,
    STREAM_BACKOFF,
    Classroom,
    changed,
    classroom,
    is_drawn,
    lesson_of,
    live_questions,
    question_of,
    room_options,
)
from web.site.admission import held_slots
from web.site.content import Lesson, Question, get_content


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


@dataclass(frozen=True)
class HeatCell:
    check: str  # a check's name, or "through" for attempts no check stopped
    count: int
    level: int  # 0 to 4: the cell's shade


@dataclass(frozen=True)
class HeatRow:
    move: Move
    cells: tuple[HeatCell, ...]

    @property
    def total(self) -> int:
        return sum(cell.count for cell in self.cells)


@dataclass(frozen=True)
class Heat:
    """The heatmap on the presenter's screen: attempts per move, by the check that stopped them."""

    columns: tuple[str, ...]
    rows: tuple[HeatRow, ...]
    total: int


@dataclass(frozen=True)
class Tally:
    """The current question and how many answered each option; for a drawn question, whose right option differs
    per learner, how many were right against their own draw."""

    question: Question | None
    counts: dict[str, int]
    total: int
    options: tuple[tuple[str, str], ...] = ()  # (id, words), as the phones offer them
    drawn: bool = False
    right: int = 0  # a drawn question: answers right against the learner's own draw


def _heat(row: ClassRow) -> Heat:
    raw = classroom().store.heat(row.id)
    columns = [*check_order(), THROUGH]
    top = max(raw.values(), default=0)
    rows = tuple(HeatRow(move, tuple(HeatCell(check or "through", n, _heat_level(n, top))
                                     for check in columns for n in [raw.get((move.slug, check), 0)]))
                 for move in get_content().moves)
    return Heat(tuple(c or "through" for c in columns), rows, sum(raw.values()))


def _tally(row: ClassRow) -> Tally:
    question = question_of(row)
    if question is None:
        return Tally(None, {}, 0)
    counts = classroom().store.tally(row.id, question.id)
    drawn = is_drawn(question)
    return Tally(question, counts, sum(counts.values()), room_options(question), drawn,
                 classroom().store.right_count(row.id, question.id) if drawn else 0)


class HostView(TypedDict):
    """What the presenter's page (classroom/host.html) and its live fragments (tally, heatmap, roster) render."""

    row: ClassRow
    lesson: Lesson
    join_url: str
    short_url: str  # the join address without its scheme, as the screen shows it
    qr: Markup
    learners: list[Learner]
    learner_count: int
    tally: Tally
    heat: Heat
    more_questions: bool
    question_total: int
    max_learners: int
    replay_move: Move | None  # the catalogue's replay, whose first success the room hears about


def _host_context(row: ClassRow) -> HostView:
    store = classroom().store
    lesson = lesson_of(row)
    join_url = _join_url(row)
    return {
        "row": row, "lesson": lesson, "join_url": join_url, "short_url": join_url.split("://", 1)[-1],
        "qr": qr_svg(join_url, f"QR code: {join_url}"), "learners": store.learners(row.id),
        "learner_count": store.count_learners(row.id), "tally": _tally(row), "heat": _heat(row),
        "more_questions": row.question_no < len(live_questions(lesson)),
        "question_total": len(live_questions(lesson)),
        "max_learners": MAX_LEARNERS,
        "replay_move": next((m for m in get_content().moves if is_replay(m)), None),
    }



# -- starting a class and the presenter's controls ------------------------------------------------------


def start() -> Response | str:
    cr = classroom()
    if cr.instructor_token:
        given = request.form.get("token", "")
        if not hmac.compare_digest(given.encode(), cr.instructor_token.encode()):
            return Response(render_template("classroom/denied.html"), 403)
    elif not cr.starts.allow(client_key(), cr.clock()):
        return _start_refused(cr)
    elif not cr.all_starts.allow(ALL_START, cr.clock()):
        return slow_down(f"{ALL_START_LIMIT} classes were opened here in the last {int(ALL_START_WINDOW // 60)} "
                          "minutes, the most this site allows without an instructor token. Try again in a few "
                          "minutes; the site's operator can set MRTR_INSTRUCTOR_TOKEN so presenters always can.",
                          int(ALL_START_WINDOW))
    cr.store.purge()
    if cr.store.count_classes() >= cr.max_classes:
        return slow_down(f"All {cr.max_classes} places for classes are taken. Try again when one ends.",
                          int(START_WINDOW))
    secret = None if cr.instructor_token else secrets.token_urlsafe(24)
    row = cr.store.create(lesson=get_content().lessons[0].slug, host_secret=secret)
    control = url_for("classroom.claim", code=row.code, secret=secret, _external=True) if secret else None
    response = Response(render_template("classroom/started.html", row=row, control_url=control,
                                        join_url=_join_url(row)), 201)
    class_cookie(response, HOST_COOKIE, secret or cr.instructor_token or "", row.code)
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


def presenter(code: str) -> str:
    """The presenter's own page again (the one /class/start answered): the control link, shown on request, is
    rebuilt from this browser's host cookie, so a reload or a lost tab does not lose it."""
    row = host_row(code)
    secret = None if classroom().instructor_token else request.cookies.get(HOST_COOKIE)
    control = url_for("classroom.claim", code=row.code, secret=secret, _external=True) if secret else None
    return render_template("classroom/started.html", row=row, control_url=control, join_url=_join_url(row))


def claim(code: str, secret: str) -> BaseResponse:
    """The capability link: it proves the holder is the presenter, then leaves the address bar."""
    row = classroom().store.by_code(code)
    if row is None or not classroom().store.host_ok(row, secret):
        no_class()
    response = redirect(url_for("classroom.host", code=row.code), 303)
    class_cookie(response, HOST_COOKIE, secret, row.code)
    return response


def host(code: str) -> str:
    row = host_row(code)
    return render_template("classroom/host.html", **_host_context(row))


def host_events(code: str) -> Response:
    """Server-sent events: the tally, heatmap and roster as HTML fragments whenever the class changes."""
    row = host_row(code)
    cr = classroom()
    now = cr.clock()
    if not cr.class_streams.allow(row.id, now) or not cr.client_streams.allow(client_key(), now):
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
        # (web/site/admission.py), send one snapshot and end: the browser reconnects after `retry`.
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



def _back_to_host(row: ClassRow) -> BaseResponse:
    return redirect(url_for("classroom.host", code=row.code), 303)


def push_question(code: str) -> BaseResponse:
    row = host_row(code)
    questions = live_questions(lesson_of(row))
    if row.question_no >= len(questions):
        abort(409)
    classroom().store.set_question(row.id, row.question_no + 1, questions[row.question_no].id)
    changed(row)
    return _back_to_host(row)


def reveal(code: str) -> BaseResponse:
    row = host_row(code)
    if not row.question_id:
        abort(409)
    classroom().store.reveal(row.id)
    changed(row)
    return _back_to_host(row)


def round_switch(code: str) -> BaseResponse:
    row = host_row(code)
    classroom().store.set_round(row.id, request.form.get("open") == "1")
    changed(row)
    return _back_to_host(row)


def single_use(code: str) -> BaseResponse:
    row = host_row(code)
    classroom().store.set_single_use(row.id, request.form.get("on") == "1")
    changed(row)
    return _back_to_host(row)


def lock(code: str) -> BaseResponse:
    """Close the class to new learners, or open it again; those already in stay."""
    row = host_row(code)
    classroom().store.set_locked(row.id, request.form.get("locked") == "1")
    changed(row)
    return _back_to_host(row)


def remove(code: str) -> BaseResponse:
    """Take one learner out, with their answers and attempts; their page then asks them to join again."""
    row = host_row(code)
    raw = (request.form.get("learner") or "").strip()
    if not raw.isdigit() or len(raw) > 12:
        abort(400)
    if not classroom().store.remove_learner(row.id, int(raw)):
        abort(404)
    changed(row)
    return _back_to_host(row)


def end(code: str) -> BaseResponse:
    row = host_row(code)
    classroom().store.delete(row.id)
    changed(row)
    response = redirect(url_for("demo.deck"), 303)
    response.delete_cookie(HOST_COOKIE, path=f"/class/{row.code}")
    return response


def _cell(value: object) -> object:
    """A CSV cell a spreadsheet will not run as a formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def results(code: str) -> Response:
    row = host_row(code)
    out = io.StringIO()
    writer = csv.writer(out)
    # detail: the check that stopped an attempt, or whether a drawn answer was right on the learner's own draw
    writer.writerow(["kind", "nickname", "item", "value", "detail", "utc"])
    for kind, nickname, item, value, detail, at in classroom().store.export_rows(row.id):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
        writer.writerow([_cell(v) for v in (kind, nickname, item, value, detail, stamp)])
    response = Response(out.getvalue(), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="class-{row.code}.csv"'
    return response

