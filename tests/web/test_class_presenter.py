"""The presenter's own page and what their browser remembers (web/classroom/presenter.py): the control link is never
on the class screen, is folded away on the presenter's page, comes back after a reload or a lost tab, and a
refused start says when the next class can open and offers the classes still open for a rehearsal."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from mrtr import FakeClock
from web.classroom.presenter import COOKIE
from web.classroom.services import START_LIMIT, START_WINDOW


@pytest.fixture
def app_config() -> dict[str, Any]:
    return {"MRTR_CLASS_STREAM_SECONDS": 0}


def start(host: FlaskClient) -> tuple[str, str]:
    response = host.post("/class/start")
    assert response.status_code == 201
    html = response.get_data(as_text=True)
    code = re.search(r'data-join-code="(\w+)"', html).group(1)  # type: ignore[union-attr]
    link = re.search(r"data-control-link>([^<]+)<", html).group(1)  # type: ignore[union-attr]
    return code, link


def test_the_link_is_folded_away_never_on_the_class_screen_and_comes_back(app: Flask) -> None:
    host = app.test_client()
    code, link = start(host)
    page = host.post("/class/start")  # another class: the first stays reachable
    assert page.status_code == 201
    first = host.get(f"/class/{code}/presenter")
    html = first.get_data(as_text=True)
    assert first.status_code == 200 and link in html
    assert re.search(r"<details class=\"once\" data-control-reveal>\s*<summary>", html)  # closed until asked
    screen = host.get(f"/class/{code}/host").get_data(as_text=True)
    assert "/control/" not in screen and link.rsplit("/", 1)[-1] not in screen
    # Nobody else gets it: the page needs this class's host cookie, and answers like a code that opens nothing.
    other = app.test_client().get(f"/class/{code}/presenter")
    assert other.status_code == 404 and link not in other.get_data(as_text=True)


def test_demo_names_this_browsers_open_classes_and_a_forged_list_opens_nothing(app: Flask) -> None:
    host = app.test_client()
    code, _ = start(host)
    demo = host.get("/demo").get_data(as_text=True)
    assert f'data-presenting="{code}"' in demo and f"/class/{code}/presenter" in demo
    stranger = app.test_client()
    stranger.set_cookie(COOKIE, host.get_cookie(COOKIE).value)  # type: ignore[union-attr]
    assert stranger.get(f"/class/{code}/presenter").status_code == 404  # the list holds no key
    forged = app.test_client()
    forged.set_cookie(COOKIE, '[["' + code + '", 1]]')
    assert "data-presenting" not in forged.get("/demo").get_data(as_text=True)
    host.post(f"/class/{code}/host/end")
    assert f'data-presenting="{code}"' not in host.get("/demo").get_data(as_text=True)  # an ended class is gone


def test_a_refused_start_says_when_and_offers_the_open_classes(app: Flask, clock: FakeClock) -> None:
    host = app.test_client()
    codes = []
    for _ in range(START_LIMIT):
        codes.append(start(host)[0])
        clock.advance(600)
    refused = host.post("/class/start")
    assert refused.status_code == 429
    # The oldest of the three opened 30 minutes ago: the next one can open in 30 minutes (and a second).
    minutes = -(-int(START_WINDOW - 3 * 600 + 1) // 60)
    text = refused.get_data(as_text=True)
    assert f'data-start-wait="{minutes}"' in text and f"in <strong>{minutes} minutes</strong>" in text
    assert int(refused.headers["Retry-After"]) == START_WINDOW - 3 * 600 + 1
    for code in codes:
        assert f"/class/{code}/presenter" in text
    clock.advance(START_WINDOW - 3 * 600 + 1)
    start(host)
