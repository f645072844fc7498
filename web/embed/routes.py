"""The quick check as an embeddable widget: chrome-less pages other sites may frame, and oEmbed.

* `/embed/quiz/<lesson>` (every question) and `/embed/quiz/<lesson>/<question>` (one question).
  Answers are checked by the quiz's own code (`web.quiz.routes.check`) and the score travels in the same
  signed hidden field, so nothing depends on cookies, third-party or otherwise.
* Framing: these routes, and only these, send `frame-ancestors` with the origins listed in
  `MRTR_EMBED_ORIGINS` (comma-separated); every other page refuses to be framed.
* `static/js/embed.js` talks to the embedding page with versioned `postMessage` messages
  (`mrtr-quiz:ready|resize|answered|completed`, `v: 1`), sent only to the origin named by the
  `?origin=` parameter, and only when that origin is in the allow-list. Never to `*`.
* `/oembed?url=...&format=json` describes any quiz URL as a "rich" oEmbed response.
"""

from __future__ import annotations

import re
from typing import TypedDict
from urllib.parse import parse_qs, urlencode, urlsplit

from flask import Blueprint, Response, abort, current_app, jsonify, render_template, request, url_for
from markupsafe import escape
from werkzeug.exceptions import HTTPException

from web.quiz import routes as quiz
from web.site import htmx
from web.site.content import Lesson, Question, get_content
from web.site.security import allow_framing_by
from web.site.services import get_settings

bp = Blueprint("embed", __name__)

#: An exact origin: scheme, host, optional port. Wildcards can go in frame-ancestors, but the
#: postMessage target must be one exact origin, so only exact entries can be named by `?origin=`.
_EXACT_ORIGIN = re.compile(r"\Ahttps?://[a-z0-9-]+(\.[a-z0-9-]+)*(:[0-9]{1,5})?\Z")
#: The iframe's starting size; embed-parent.js then follows the content's height.
DEFAULT_WIDTH, DEFAULT_HEIGHT = 640, 560
PROVIDER = "MRTR Lab"
QUIZ_ENDPOINTS = frozenset({"quiz.quiz_page", "embed.quiz", "embed.question"})


def embed_origins() -> list[str]:
    """The allow-list from `MRTR_EMBED_ORIGINS`: origins without a trailing slash, in order."""
    raw = get_settings().embed_origins
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return [o.strip().rstrip("/").lower() for o in items if o and o.strip()]


def parent_origin(value: str | None) -> str | None:
    """`value` when it is exactly one of the allowed origins, else None (no messages are sent)."""
    if not value:
        return None
    origin = value.strip().rstrip("/").lower()
    return origin if _EXACT_ORIGIN.match(origin) and origin in embed_origins() else None


@bp.before_request
def _allow_framing() -> None:
    if request.endpoint in ("embed.quiz", "embed.question", "embed.answer"):
        allow_framing_by(embed_origins())


def _lesson_or_404(slug: str) -> Lesson:
    lesson = get_content().lesson(slug)
    if lesson is None:
        abort(404)
    return lesson


def _question_or_404(lesson: Lesson, qid: str) -> Question:
    question = lesson.question(qid)
    if question is None:
        abort(404)
    return question


class EmbedView(quiz.QuizContext):
    """The quiz's view narrowed to the embed's question(s), posting to `answer_endpoint` (the embed's, or LTI's)."""

    summary: bool  # the whole-quiz embed ends with a score summary
    answer_endpoint: str
    answer_args: dict[str, str]
    link_target: str


def embed_context(lesson: Lesson, token: str | None, *, only: Question | None, origin: str | None,
                  feedback: quiz.Feedback | None = None) -> EmbedView:
    """The quiz's own context, narrowed to one question when `only` is given, posting to /embed."""
    context = quiz.quiz_context(lesson, token, feedback)
    questions = (only,) if only else lesson.questions
    answers = quiz.read_progress(lesson, context["progress"])
    scoped = {q.id: answers[q.id] for q in questions if q.id in answers}
    args = {k: v for k, v in (("single", "1" if only else None), ("origin", origin)) if v}
    score = quiz.score_of(questions, scoped)
    return {
        **context,
        "summary": only is None,  # the whole-quiz embed ends with a score summary
        "questions": questions,
        "score": score,
        "answer_endpoint": "embed.answer",
        "answer_args": args,
        "link_target": "_blank",  # the lesson refuses framing: open it beside the host page, not inside it
    }


def _page(lesson: Lesson, only: Question | None, context: EmbedView, origin: str | None) -> str:
    return render_template("embed/quiz.html", lesson=lesson, only=only, quiz=context, parent_origin=origin,
                           exact_origins=[o for o in embed_origins() if _EXACT_ORIGIN.match(o)],
                           share=share(lesson))


@bp.get("/embed/quiz/<slug>", endpoint="quiz")
def quiz_page(slug: str) -> str:
    lesson = _lesson_or_404(slug)
    origin = parent_origin(request.args.get("origin"))
    return _page(lesson, None, embed_context(lesson, request.args.get("progress"), only=None, origin=origin), origin)


@bp.get("/embed/quiz/<slug>/<qid>", endpoint="question")
def question_page(slug: str, qid: str) -> str:
    lesson = _lesson_or_404(slug)
    question = _question_or_404(lesson, qid)
    origin = parent_origin(request.args.get("origin"))
    context = embed_context(lesson, request.args.get("progress"), only=question, origin=origin)
    return _page(lesson, question, context, origin)


@bp.post("/embed/quiz/<slug>/<qid>/answer", endpoint="answer")
def answer(slug: str, qid: str) -> Response:
    """The quiz's check; the feedback fragment for htmx, the whole embed page without JavaScript."""
    lesson = _lesson_or_404(slug)
    question = _question_or_404(lesson, qid)
    only = question if request.args.get("single") == "1" else None
    origin = parent_origin(request.args.get("origin"))
    feedback, checked = quiz.check(lesson, question, request.form)
    context = embed_context(lesson, checked["progress"], only=only, origin=origin, feedback=feedback)
    return htmx.render("embed/quiz.html", "quiz/_feedback.html", lesson=lesson, only=only, quiz=context,
                       parent_origin=origin, share=share(lesson), question=question, feedback=feedback, oob=True)


# -- sharing: the snippet, the discovery link and oEmbed -------------------------------------------


class ShareView(TypedDict):
    """What embed/_share.html and _discovery.html offer: the page's addresses, the snippets and the allow-list."""

    page_url: str
    oembed_url: str
    snippet: str  # the iframe for one question (the chosen one, else the first)
    question: Question | None
    whole_src: str
    whole_snippet: str  # the iframe for the whole quiz
    origins: list[str]  # the sites allowed to frame the quiz
    enabled: bool  # embedding is on (some site is allowed)


@bp.app_template_global("embed_share")
def share(lesson: Lesson, question: Question | None = None) -> ShareView:
    """What a quiz page needs to offer itself for embedding: URLs, the snippet, the allow-list."""
    origins = embed_origins()
    exact = [o for o in origins if _EXACT_ORIGIN.match(o)]
    if question is None:
        page = url_for("quiz.quiz_page", slug=lesson.slug, _external=True)
        src = url_for("embed.quiz", slug=lesson.slug, _external=True)
    else:
        page = url_for("embed.question", slug=lesson.slug, qid=question.id, _external=True)
        src = page
    origin = exact[0] if exact else None
    # The snippet offered for copying embeds ONE question (the chosen one, else the first): a short,
    # self-contained check fits a blog post; the whole quiz stays one URL away.
    single = question or (lesson.questions[0] if lesson.questions else None)
    single_src = url_for("embed.question", slug=lesson.slug, qid=single.id, _external=True) if single else src
    whole_src = url_for("embed.quiz", slug=lesson.slug, _external=True)
    return {
        "page_url": page,
        "oembed_url": url_for("embed.oembed", url=page, format="json", _external=True),
        "snippet": snippet(single_src, lesson, origin=origin or "https://your-site.example"),
        "question": single,
        "whole_src": whole_src,
        "whole_snippet": snippet(whole_src, lesson, origin=origin or "https://your-site.example"),
        "origins": origins,
        "enabled": bool(origins),
    }


def snippet(src: str, lesson: Lesson, *, origin: str | None, width: int = DEFAULT_WIDTH,
            height: int = DEFAULT_HEIGHT) -> str:
    """The copy-paste HTML: the iframe, then the tiny parent-side script that follows its height."""
    url = f"{src}?{urlencode({'origin': origin})}" if origin else src
    script = url_for("static", filename="js/embed-parent.js", _external=True)
    return (f'<iframe src="{escape(url)}" title="{escape("Quick check: " + lesson.title)}" width="{width}" '
            f'height="{height}" loading="lazy" data-mrtr-quiz></iframe>\n'
            f'<script src="{escape(script)}" async></script>')


def _plain(status: int, message: str) -> Response:
    return Response(message + "\n", status=status, mimetype="text/plain")


def _dimension(name: str, default: int) -> int:
    raw = request.args.get(name, "")
    return max(1, min(default, int(raw))) if raw.isdigit() and int(raw) > 0 else default


@bp.get("/oembed")
def oembed() -> Response:
    """oEmbed 1.0 for quiz URLs: 404 for any other URL, 501 for any format but JSON."""
    fmt = request.args.get("format", "json")
    if fmt != "json":
        return _plain(501, "Only format=json is implemented.")
    url = request.args.get("url", "")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.netloc.lower() != request.host.lower():
        return _plain(404, "Not a quiz on this site.")
    try:
        endpoint, args = current_app.url_map.bind(request.host).match(parts.path, method="GET")
    except HTTPException:
        return _plain(404, "Not a quiz on this site.")
    lesson = get_content().lesson(args.get("slug", "")) if endpoint in QUIZ_ENDPOINTS else None
    if lesson is None:
        return _plain(404, "Not a quiz on this site.")
    question = lesson.question(args["qid"]) if "qid" in args else None
    if "qid" in args and question is None:
        return _plain(404, "Not a quiz on this site.")
    width, height = _dimension("maxwidth", DEFAULT_WIDTH), _dimension("maxheight", DEFAULT_HEIGHT)
    if question is None:
        src = url_for("embed.quiz", slug=lesson.slug, _external=True)
    else:
        src = url_for("embed.question", slug=lesson.slug, qid=question.id, _external=True)
    origin = parent_origin(next(iter(parse_qs(parts.query).get("origin", [])), None))
    exact = [o for o in embed_origins() if _EXACT_ORIGIN.match(o)]
    if origin is None and len(exact) == 1:
        origin = exact[0]  # one site may frame it: name it, so the frame grows to its content there
    title = f"Quick check: {lesson.title}" + (f" ({question.prompt})" if question else "")
    return jsonify({
        "version": "1.0",
        "type": "rich",
        "title": title,
        "provider_name": PROVIDER,
        "provider_url": url_for("lessons.home", _external=True),
        "html": snippet(src, lesson, origin=origin, width=width, height=height),
        "width": width,
        "height": height,
    })
