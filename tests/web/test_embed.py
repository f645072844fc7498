"""The embeddable quiz through the Flask client: framing per route, the origin allow-list, the check."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from web.site.content import load_course

from .conftest import TEST_KEY
from .helpers import HX, answer_form, assert_csp_clean, assert_unique_ids, soup

LESSON = "when-the-server-needs-input"
QUESTIONS = load_course().lesson(LESSON).questions
Q = QUESTIONS[0]
HOST = "http://127.0.0.1:5001"
ORIGINS = f"{HOST}, https://blog.example/"


@pytest.fixture
def app_config() -> dict[str, Any]:
    return {"MRTR_EMBED_ORIGINS": ORIGINS}


def ancestors(response) -> str:  # noqa: ANN001
    csp = response.headers["Content-Security-Policy"]
    return next(d.strip() for d in csp.split(";") if d.strip().startswith("frame-ancestors"))


@pytest.mark.parametrize("url", [f"/embed/quiz/{LESSON}", f"/embed/quiz/{LESSON}/{Q.id}"])
def test_embed_routes_may_be_framed_by_the_allow_list_only(client: FlaskClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 200
    assert ancestors(response) == f"frame-ancestors 'self' {HOST} https://blog.example"
    assert "X-Frame-Options" not in response.headers
    assert "Set-Cookie" not in response.headers


def test_the_no_js_answer_page_may_be_framed_too(client: FlaskClient) -> None:
    response = client.post(f"/embed/quiz/{LESSON}/{Q.id}/answer", data={"choice": Q.answer})
    assert response.status_code == 200
    assert HOST in ancestors(response)


def _get_routes(app: Flask) -> list[str]:
    """One concrete URL for every GET route, with the lesson and a question filled in."""
    urls = []
    for rule in app.url_map.iter_rules():
        if "GET" not in (rule.methods or ()) or rule.endpoint == "static":
            continue
        values = {"slug": LESSON, "qid": Q.id, "section_id": "round-trip", "n": 1, "filename": "css/site.css"}
        if not rule.arguments <= values.keys():
            continue
        urls.append(rule.build({k: values[k] for k in rule.arguments})[1])  # type: ignore[index]
    return urls


def test_every_other_page_refuses_framing(app: Flask, client: FlaskClient) -> None:
    urls = _get_routes(app)
    assert "/" in urls and f"/quiz/{LESSON}" in urls and "/demo" in urls
    for url in urls:
        response = client.get(url)
        if url.startswith("/embed/"):
            continue
        assert ancestors(response) == "frame-ancestors 'none'", url
        assert response.headers.get("X-Frame-Options") == "DENY", url


def test_no_allow_list_means_only_self(client: FlaskClient) -> None:
    bare = create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory"}).test_client()
    assert ancestors(bare.get(f"/embed/quiz/{LESSON}")) == "frame-ancestors 'self'"


@pytest.mark.parametrize(("given", "kept"), [
    (HOST, HOST),
    (HOST + "/", HOST),
    ("https://blog.example", "https://blog.example"),
    ("https://evil.example", None),
    ("*", None),
    ("http://127.0.0.1:5002", None),
    ("javascript:alert(1)", None),
    ("", None),
])
def test_the_parent_origin_must_be_in_the_allow_list(client: FlaskClient, given: str, kept: str | None) -> None:
    tree = soup(client.get(f"/embed/quiz/{LESSON}", query_string={"origin": given}).data)
    root = tree.select_one("[data-embed]")
    assert root.get("data-parent-origin") == kept
    if kept:  # the no-JS form keeps it, so the page after a post still knows its parent
        for form in tree.select("form"):
            assert parse_qs(urlsplit(form["action"]).query)["origin"] == [kept]


def test_embed_page_is_chrome_less_and_clean(client: FlaskClient) -> None:
    response = client.get(f"/embed/quiz/{LESSON}")
    tree = soup(response.data)
    assert tree.select_one(".site-header") is None and tree.select_one(".site-footer") is None
    assert len(tree.select("li.question")) == len(QUESTIONS)
    assert tree.select_one("[data-embed]")["data-lesson"] == LESSON
    assert [s["src"] for s in tree.find_all("script")][-1] == "/static/js/embed.js"
    assert all(a.get("target") == "_blank" for a in tree.select("a[href^='/lessons'], a[href*='/lessons/']"))
    assert_csp_clean(response.data)
    assert_unique_ids(response.data)


def test_single_question_scopes_the_score(client: FlaskClient) -> None:
    tree = soup(client.get(f"/embed/quiz/{LESSON}/{Q.id}").data)
    assert len(tree.select("li.question")) == 1
    assert tree.select_one("#quiz-score")["data-total"] == "1"
    assert tree.select_one("form")["hx-post"] == f"/embed/quiz/{LESSON}/{Q.id}/answer?single=1"


def test_answers_are_checked_by_the_server_and_scored_in_a_signed_token(client: FlaskClient) -> None:
    page = soup(client.get(f"/embed/quiz/{LESSON}/{Q.id}").data)
    assert Q.explanation not in str(page)  # nothing is given away before answering
    progress = page.select_one(f"#progress-{Q.id}")["value"]
    response = client.post(f"/embed/quiz/{LESSON}/{Q.id}/answer?single=1", headers=HX,
                           data={"choice": Q.answer, "progress": progress})
    tree = soup(response.data)
    verdict = tree.select_one("[data-question]")
    assert verdict["data-question"] == Q.id and verdict["data-correct"] == "true"
    score = tree.select_one("#quiz-score")
    assert (score["data-correct"], score["data-answered"], score["data-total"]) == ("1", "1", "1")
    assert score["hx-swap-oob"] == "true"
    forged = client.post(f"/embed/quiz/{LESSON}/{Q.id}/answer?single=1", headers=HX,
                         data={"choice": Q.answer, "progress": progress[:-2] + "xx"})
    assert soup(forged.data).select_one("#quiz-score")["data-answered"] == "1"  # a bad token counts for nothing


def test_wrong_answer_and_unknown_routes(client: FlaskClient) -> None:
    wrong = next(c.id for c in Q.choices if c.id != Q.answer)
    response = client.post(f"/embed/quiz/{LESSON}/{Q.id}/answer", headers=HX, data={"choice": wrong})
    assert soup(response.data).select_one("[data-question]")["data-correct"] == "false"
    assert client.get("/embed/quiz/nope").status_code == 404
    assert client.get(f"/embed/quiz/{LESSON}/nope").status_code == 404
    assert client.post(f"/embed/quiz/{LESSON}/nope/answer").status_code == 404


def test_quiz_page_offers_the_snippet_and_discovery(client: FlaskClient) -> None:
    tree = soup(client.get(f"/quiz/{LESSON}").data)
    link = tree.select_one('link[rel=alternate][type="application/json+oembed"]')
    assert link["href"].startswith("http://localhost/oembed?url=")
    snippet = tree.select_one("#embed-snippet").get_text()
    # One question per embed by default: the first, unless ?embed= picks another.
    assert f'src="http://localhost/embed/quiz/{LESSON}/{Q.id}?origin=http%3A%2F%2F127.0.0.1%3A5001"' in snippet
    assert 'src="http://localhost/static/js/embed-parent.js"' in snippet
    assert "data-mrtr-quiz" in snippet


def test_the_snippet_question_can_be_picked_and_the_whole_quiz_is_offered_too(client: FlaskClient) -> None:
    other = QUESTIONS[5]
    tree = soup(client.get(f"/quiz/{LESSON}", query_string={"embed": other.id}).data)
    assert f"/embed/quiz/{LESSON}/{other.id}?origin=" in tree.select_one("#embed-snippet").get_text()
    assert tree.select_one("#embed-pick option[selected]")["value"] == other.id
    assert f"http://localhost/embed/quiz/{LESSON}" in tree.select_one("#embed-share").get_text()
    junk = soup(client.get(f"/quiz/{LESSON}", query_string={"embed": "<nope>"}).data)
    assert f"/embed/quiz/{LESSON}/{Q.id}?origin=" in junk.select_one("#embed-snippet").get_text()


def test_the_whole_quiz_embed_ends_with_a_score_summary(app: Flask, client: FlaskClient) -> None:
    page = soup(client.get(f"/embed/quiz/{LESSON}").data)
    summary = page.select_one("main > #quiz-summary")
    assert summary is not None and summary.find_previous_sibling("div", class_="quiz") is not None
    assert "0 of" in summary.get_text()
    progress = page.select_one(f"#progress-{Q.id}")["value"]
    for q in QUESTIONS:
        response = client.post(f"/embed/quiz/{LESSON}/{q.id}/answer", headers=HX,
                               data={**answer_form(app, q, right=q is not QUESTIONS[1]), "progress": progress})
        progress = soup(response.data).select_one(f"input#progress-{Q.id}")["value"]
    summary = soup(response.data).select_one("#quiz-summary")
    assert summary["hx-swap-oob"] == "true"
    total = sum(q.weight for q in QUESTIONS)  # points: a drawn or doing item weighs more
    assert f"{total - QUESTIONS[1].weight} of {total}" in summary.get_text()
    # A single-question embed has no summary: its score line says it all.
    single = soup(client.get(f"/embed/quiz/{LESSON}/{Q.id}").data)
    assert single.select_one("#quiz-summary") is None


def test_errors_inside_the_iframe_have_no_site_menu(client: FlaskClient) -> None:
    response = client.get(f"/embed/quiz/{LESSON}/nope")
    assert response.status_code == 404
    tree = soup(response.data)
    assert tree.find("nav") is None and tree.find("header") is None
    assert "Page not found" in tree.h1.get_text()
    assert HOST in ancestors(response)  # it may still be shown inside the host's iframe
    assert_csp_clean(response.data)
    # Everywhere else the error page keeps the site's menu.
    assert soup(client.get("/no/such/page").data).find("nav", attrs={"aria-label": "Site"}) is not None
