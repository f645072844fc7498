"""The page routes the hostile corpus attacks, read from the app itself: its URL map and web.site.inputs.FIELDS.

`page_routes(app, client)` returns one `Route` per (rule, method) outside /mcp and /static, with a
real path (sample path arguments below), the fields its view reads, and a valid request's fields
(the custom move's form as the playground pre-fills it, a quiz answer, an oEmbed URL), so each
hostile value is tried with every other field in order. A rule whose path arguments have no sample
here raises: a new route must be added to the corpus, it is never skipped.
"""

from __future__ import annotations

import re
from typing import Any

from bs4 import BeautifulSoup
from flask import Flask
from flask.testing import FlaskClient

from tests.corpus.hostile import Case, Route
from web.site.content import get_content
from web.site.inputs import FIELDS, UNGUARDED

MOVE_ENDPOINTS = frozenset({"playground.play_move", "playground.move_page", "demo.move", "demo.notes_move"})


def path_samples(app: Flask) -> dict[str, dict[str, Any]]:
    """endpoint -> argument -> a sample that routes to a real page."""
    with app.app_context():
        course = get_content()
        lesson = next(lesson for lesson in course.lessons if lesson.questions)
        section = next(s for s in lesson.sections if s.widget and s.widget not in ("playground", "quiz"))
        move = course.moves[0].slug
    samples: dict[str, dict[str, Any]] = {}
    for rule in app.url_map.iter_rules():
        if rule.endpoint in UNGUARDED:
            continue
        values: dict[str, Any] = {}
        for arg in rule.arguments:
            if arg == "slug":
                values[arg] = move if rule.endpoint in MOVE_ENDPOINTS else lesson.slug
            elif arg == "qid":
                values[arg] = lesson.questions[0].id
            elif arg == "section_id":
                values[arg] = section.id
            elif arg == "n":
                values[arg] = 1
            elif arg == "run_id":
                values[arg] = "0" * 22  # a well-formed id of no run: the page answers 404
            elif arg == "code":  # a live class's join code (no class: the routes answer 404)
                values[arg] = "ABC234"
            elif arg == "secret":  # a class's control capability
                values[arg] = "not-a-capability"
            elif arg == "ref":  # a URL-mode page's reference, well formed, that the server never opened: 404
                values[arg] = "A" * 22
            elif arg in ("version", "name", "digest"):  # the in-page checker's files (no such file: 404)
                values[arg] = "0"
            else:
                raise LookupError(f"no sample for <{arg}> in {rule.rule}: add one to tests/corpus/page_samples.py")
        samples[rule.endpoint] = values
    return samples


def custom_form(client: FlaskClient) -> dict[str, str]:
    """The custom move's fields exactly as GET /playground pre-fills them (a freshly minted ticket)."""
    page = BeautifulSoup(client.get("/playground").data, "html.parser")
    form = page.select_one("form.pg-custom-form")
    assert form is not None, "the playground has no custom move form"
    data: dict[str, str] = {}
    for tag in form.select("input, textarea, select"):
        name = tag.get("name")
        if not isinstance(name, str):
            continue
        if tag.name == "textarea":
            data[name] = tag.get_text()
        elif tag.name == "select":
            chosen = tag.select_one("option[selected]") or tag.select_one("option")
            data[name] = str(chosen["value"]) if chosen else ""
        elif tag.get("type") in ("radio", "checkbox"):
            if tag.has_attr("checked"):
                data[name] = str(tag.get("value", "on"))
        else:
            data[name] = str(tag.get("value", ""))
    return data


def base_fields(app: Flask, client: FlaskClient, endpoint: str) -> dict[str, str]:
    """A valid request's fields for `endpoint`, or none when an empty request is already valid."""
    with app.app_context():
        lesson = next(lesson for lesson in get_content().lessons if lesson.questions)
        question = lesson.questions[0]
    if endpoint == "playground.play_custom_move":
        return custom_form(client)
    if endpoint in ("quiz.answer", "embed.answer"):
        return {"choice": question.choices[0].id, "progress": ""}
    if endpoint == "embed.oembed":
        return {"url": f"http://localhost/quiz/{lesson.slug}", "format": "json"}
    return {}


def page_routes(app: Flask, client: FlaskClient) -> list[Route]:
    samples = path_samples(app)
    adapter = app.url_map.bind("localhost")
    routes = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint in UNGUARDED:
            continue
        fields = {name: spec.kind for name, spec in FIELDS[rule.endpoint].items()}
        path = adapter.build(rule.endpoint, samples[rule.endpoint])
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            routes.append(Route(rule.endpoint, method, path, fields, base_fields(app, client, rule.endpoint)))
    return routes


#: oEmbed 1.0 mandates 501 for a format the provider does not serve; every other 5xx is a failure.
SPEC_5XX = {("/oembed", 501)}
#: The site's error page or fragment (web/errors/pages.py), or the playground's own in-place error.
#: The block each page family shows a refusal in: the site's error page (or the embed's), the playground's and
#: the checker's panels.
ERROR_BLOCK = re.compile(
    r'<(div|main) class="[^"]*\b(?:error-page|error-message|pg-error|check-error)\b[^"]*"[^>]*>(.*?)</\1>', re.S)


def page_failure(case: Case, status: int, content_type: str, body: bytes) -> str | None:
    """What is wrong with a page's answer to a hostile case, or None."""
    path = case.path.split("?", 1)[0]
    if status >= 500 and (path, status) not in SPEC_5XX:
        return f"HTTP {status}"
    text = body.decode("utf-8", "replace")
    if case.markup and case.markup in text:
        return f"markup reflected unescaped: {case.markup!r}"
    if 400 <= status < 500 and status not in (404, 405):
        if content_type.startswith("text/html"):
            message = ERROR_BLOCK.search(text)
            if message is None or len(re.sub(r"<[^>]*>|\s+", "", message.group(2))) < 20:
                return f"HTTP {status} without a message saying why"
        elif len(text.strip()) < 10:
            return f"HTTP {status} with an empty body"
    return None
