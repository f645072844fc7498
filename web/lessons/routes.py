"""The course home, the lesson pages, and each live figure on its own (for htmx and for projectors)."""

from __future__ import annotations

from collections.abc import Mapping

from flask import Blueprint, Flask, Response, abort, render_template, request
from flask.blueprints import BlueprintSetupState

from web.lessons import widgets
from web.playground import routes as playground
from web.quiz import routes as quiz
from web.site import htmx
from web.site.content import Course, Lesson, get_content

bp = Blueprint("lessons", __name__)


@bp.record_once
def _check_figure_data(state: BlueprintSetupState) -> None:
    """The data files the figures read on first use (fields.toml, breakit.toml) are read at start-up too,
    so a broken one fails create_app() with the file and the reason, never a visitor's page."""
    assert isinstance(state.app, Flask)  # the setup state is typed for any Flask-like app; this one is Flask
    with state.app.app_context():
        for lesson in get_content().lessons:
            widgets.field_notes(lesson)
            widgets.breakit_data(lesson)


def _lesson_or_404(slug: str) -> tuple[Course, Lesson]:
    course = get_content()
    lesson = course.lesson(slug)
    if lesson is None:
        abort(404)
    return course, lesson


def playground_context() -> playground.PlaygroundContext:
    """The playground helper's fragment context."""
    return playground.playground_context(request.args)


def widget_context(course: Course, lesson: Lesson, name: str, section: str = "") -> Mapping[str, object]:
    """Everything one widget template needs, computed from the real server."""
    if name == "exchange":  # a section's own conversation with the lab server (web/lessons/exchanges.py)
        from web.lessons import exchanges
        return {"scene": exchanges.exchange_data(lesson, section)}
    if name == "roundtrip":
        stores = request.args.get("stores") or "shared"
        if stores not in widgets.REPLAY_MODES:
            abort(400, description="stores must be shared or own")
        return {"steps": widgets.roundtrip_data(lesson, "rt-note"), "replay": widgets.replay_data(stores),
                "notes_anchor": "rt-note"}
    if name in ("anatomy", "sealed"):
        return {"ticket": widgets.anatomy_data()}
    if name == "timeline":
        return {"timeline": widgets.timeline_data(course, lesson)}
    if name == "shim":
        return {"scene": widgets.shim_data()}
    if name == "lab":
        return {"scenes": widgets.lab_data()}
    if name == "sdk":
        return {"sdk": widgets.sdk_data(lesson)}
    if name == "breakit":
        return {"links": widgets.breakit_data(lesson)}
    if name == "playground":
        return {"playground": playground_context()}
    if name == "build":  # the build loop of "Build the ticket checks yourself" (web/build/routes.py)
        from web.build import routes as build
        return build.widget_context(lesson)
    if name == "quiz":
        return {"quiz": quiz.quiz_context(lesson, request.args.get("progress"))}
    return {}


@bp.get("/")
def home() -> str:
    course = get_content()
    return render_template("lessons/home.html", course=course)


@bp.get("/lessons/<slug>")
def lesson_page(slug: str) -> str:
    course, lesson = _lesson_or_404(slug)
    figures = {s.id: widget_context(course, lesson, s.widget, s.id) for s in lesson.sections if s.widget}
    return render_template("lessons/lesson.html", course=course, lesson=lesson, figures=figures)


@bp.get("/lessons/<slug>/figures/<section_id>")
def figure(slug: str, section_id: str) -> Response:
    """One section's live figure: a fragment for htmx (refresh in place), a page of its own otherwise."""
    course, lesson = _lesson_or_404(slug)
    section = lesson.section(section_id)
    if section is None or not section.widget or section.widget in ("playground", "quiz"):
        abort(404)
    return htmx.render("lessons/figure.html", "lessons/_figure.html", course=course, lesson=lesson,
                       section=section, figure=widget_context(course, lesson, section.widget, section.id))
