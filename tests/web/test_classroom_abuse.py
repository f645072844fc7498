"""A live class on the open internet: nobody fills the class list, floods a class with bots, or finds codes by
guessing; the presenter can lock the class and take a learner out. The class clock is injected, so windows
pass without waiting."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from mrtr import FakeClock
from mrtr_stores.classes import MAX_LEARNERS
from web.classroom.services import (
    ALL_START_LIMIT,
    ALL_START_WINDOW,
    GUESS_LIMIT,
    GUESS_WINDOW,
    JOIN_CLASS_LIMIT,
    JOIN_CLIENT_LIMIT,
    START_LIMIT,
    START_WINDOW,
    STREAM_BACKOFF,
    STREAM_CLASS_LIMIT,
)


@pytest.fixture
def app_config() -> dict[str, Any]:
    return {"MRTR_CLASS_STREAM_SECONDS": 0}


def client_at(app: Flask, address: str) -> FlaskClient:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def start(host: FlaskClient) -> str:
    response = host.post("/class/start")
    assert response.status_code == 201, response.status_code
    return re.search(r'data-join-code="(\w+)"', response.get_data(as_text=True)).group(1)  # type: ignore[union-attr]


def join(client: FlaskClient, code: str, nickname: str) -> int:
    return client.post("/join", data={"code": code, "nickname": nickname}).status_code


def test_one_address_opens_a_few_classes_an_hour(app: Flask, clock: FakeClock) -> None:
    host = client_at(app, "198.51.100.1")
    for _ in range(START_LIMIT):
        start(host)
    refused = host.post("/class/start")
    assert refused.status_code == 429 and refused.headers["Retry-After"]
    assert f"{START_LIMIT} classes in the last hour" in refused.get_data(as_text=True)
    start(client_at(app, "198.51.100.2"))  # another address is not affected
    clock.advance(START_WINDOW + 1)
    start(host)


def test_an_instructor_token_lifts_the_per_address_limit(make_app: Callable[..., Flask]) -> None:
    app = make_app(MRTR_CLASS_STREAM_SECONDS=0, MRTR_INSTRUCTOR_TOKEN="instructor-secret")
    host = client_at(app, "198.51.100.1")
    for _ in range(START_LIMIT + 2):
        assert host.post("/class/start", data={"token": "instructor-secret"}).status_code == 201


def test_a_code_that_opens_no_class_answers_alike_whether_or_not_it_exists(app: Flask) -> None:
    host = client_at(app, "198.51.100.1")
    locked_code = start(host)
    assert host.post(f"/class/{locked_code}/host/lock", data={"locked": "1"}).status_code == 303
    missing = "ZZZZZZ" if locked_code != "ZZZZZZ" else "YYYYYY"
    a = client_at(app, "203.0.113.5").post("/join", data={"code": locked_code, "nickname": "Ana"})
    b = client_at(app, "203.0.113.6").post("/join", data={"code": missing, "nickname": "Ana"})
    assert a.status_code == b.status_code == 404
    assert a.get_data(as_text=True).replace(locked_code, "CODE") == b.get_data(as_text=True).replace(missing, "CODE")


def _without_codes(response: Any, *codes: str) -> tuple[int, str, str]:
    text = response.get_data(as_text=True)
    for code in codes:
        text = text.replace(code, "CODE")
    return response.status_code, response.headers.get("Location", "").replace(codes[0], "CODE"), text


CLASS_ROUTES = [("GET", "/class/{}/host"), ("GET", "/class/{}/host/events"), ("GET", "/class/{}/host/results.csv"),
                ("POST", "/class/{}/host/question"), ("POST", "/class/{}/host/reveal"),
                ("POST", "/class/{}/host/round"), ("POST", "/class/{}/host/single-use"),
                ("POST", "/class/{}/host/lock"),
                ("POST", "/class/{}/host/remove"), ("POST", "/class/{}/host/end"), ("GET", "/class/{}/control/x"),
                ("GET", "/class/{}/presenter"),
                ("GET", "/class/{}/me"), ("GET", "/class/{}/me/live"), ("POST", "/class/{}/answer"),
                ("POST", "/class/{}/play")]


@pytest.mark.parametrize(("method", "route"), CLASS_ROUTES)
def test_every_class_route_answers_a_real_code_like_a_made_up_one_and_counts_it(
        app: Flask, method: str, route: str) -> None:
    """Without the presenter's or a learner's credential, a real code cannot be told from a made-up one on any
    class route, and each try spends the visitor's wrong-code allowance: past it, "slow down" for both."""
    code = start(client_at(app, "198.51.100.1"))
    missing = "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY"
    real = client_at(app, "203.0.113.40").open(route.format(code), method=method)
    fake = client_at(app, "203.0.113.41").open(route.format(missing), method=method)
    assert real.status_code in (303, 404, 286)
    assert _without_codes(real, code) == _without_codes(fake, missing)
    prober = client_at(app, "203.0.113.42")
    for _ in range(GUESS_LIMIT):
        assert prober.open(route.format(missing), method=method).status_code != 429
    assert prober.open(route.format(code), method=method).status_code == 429
    assert prober.open(route.format(missing), method=method).status_code == 429


def test_a_burst_of_starts_holds_honest_presenters_back_for_minutes_not_an_hour(app: Flask, clock: FakeClock) -> None:
    """30 starts from 10 addresses at once fill the site-wide allowance; a presenter at another address waits at
    most ALL_START_WINDOW (it was the whole hour of the per-visitor window)."""
    assert ALL_START_WINDOW <= START_WINDOW / 6
    for n in range(30):
        client_at(app, f"203.0.113.{n % 10 + 150}").post("/class/start")
    honest = client_at(app, "198.51.100.99")
    refused = honest.post("/class/start")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) <= ALL_START_WINDOW
    clock.advance(ALL_START_WINDOW + 1)
    start(honest)
    assert client_at(app, "203.0.113.150").post("/class/start").status_code == 429  # the flooder's own hour


def test_class_creation_without_a_token_is_capped_for_everyone_together(make_app: Any) -> None:
    """Many addresses, three classes each, cannot take every place: the site opens ALL_START_LIMIT a window."""
    app = make_app(MRTR_CLASS_STREAM_SECONDS=0)
    statuses = [client_at(app, f"203.0.113.{n // START_LIMIT + 100}").post("/class/start").status_code
                for n in range(ALL_START_LIMIT + 5)]
    assert statuses == [201] * ALL_START_LIMIT + [429] * 5


def test_a_bad_nickname_gets_the_same_answer_for_any_code(app: Flask) -> None:
    code = start(client_at(app, "198.51.100.1"))
    real = client_at(app, "203.0.113.7").post("/join", data={"code": code, "nickname": "<b>"})
    fake = client_at(app, "203.0.113.8").post("/join", data={"code": "ZZZZZZ", "nickname": "<b>"})
    assert real.status_code == fake.status_code == 400
    assert real.get_data(as_text=True).replace(code, "CODE") == fake.get_data(as_text=True).replace("ZZZZZZ", "CODE")


def test_guessing_codes_runs_out_before_a_real_code_is_found(app: Flask, clock: FakeClock) -> None:
    code = start(client_at(app, "198.51.100.1"))
    guesser = client_at(app, "203.0.113.9")
    for n in range(GUESS_LIMIT):
        assert join(guesser, f"ZZZZZ{'23456789'[n % 8]}", f"Bot{n}") == 404
    # Out of guesses: even the real code now says only "slow down", so a hit cannot be told from a miss.
    assert join(guesser, code, "Bot") == 429
    assert join(client_at(app, "203.0.113.10"), code, "Ana") == 303  # others join as usual
    clock.advance(GUESS_WINDOW + 1)
    assert join(guesser, code, "Bot") == 303


def test_one_address_joins_at_most_so_many_a_minute(app: Flask) -> None:
    code = start(client_at(app, "198.51.100.1"))
    router = client_at(app, "203.0.113.20")  # one router: a full lecture hall behind it gets in within the minute
    statuses = [join(router, code, f"Learner {n}") for n in range(JOIN_CLIENT_LIMIT + 1)]
    assert statuses[:JOIN_CLIENT_LIMIT] == [303] * JOIN_CLIENT_LIMIT and statuses[-1] == 429


def test_a_class_takes_at_most_so_many_joins_a_minute(app: Flask, clock: FakeClock) -> None:
    code = start(client_at(app, "198.51.100.1"))
    statuses = [join(client_at(app, f"203.0.{n // 200}.{n % 200 + 1}"), code, f"Bot {n}")
                for n in range(JOIN_CLASS_LIMIT + 1)]
    assert statuses[:JOIN_CLASS_LIMIT] == [303] * JOIN_CLASS_LIMIT and statuses[-1] == 429
    clock.advance(61)
    # A minute on, the speed limit has passed and the class's size is what holds: a full class says so (409).
    assert JOIN_CLASS_LIMIT == MAX_LEARNERS
    assert join(client_at(app, "192.0.2.77"), code, "Late") == 409


def test_the_presenter_locks_the_class_and_removes_a_learner(app: Flask) -> None:
    host = client_at(app, "198.51.100.1")
    code = start(host)
    ana = client_at(app, "203.0.113.30")
    bot = client_at(app, "203.0.113.31")
    assert join(ana, code, "Ana") == 303 and join(bot, code, "Bot") == 303
    assert host.post(f"/class/{code}/host/lock", data={"locked": "1"}).status_code == 303
    page = host.get(f"/class/{code}/host").get_data(as_text=True)
    assert "Joining is <strong>locked</strong>" in page
    assert join(client_at(app, "203.0.113.32"), code, "Late") == 404
    assert ana.get(f"/class/{code}/me").status_code == 200  # those already in stay
    bot_id = re.search(r'name="learner" value="(\d+)">\s*<button[^>]*aria-label="Remove Bot', page)
    assert bot_id is not None
    assert bot.post(f"/class/{code}/host/remove", data={"learner": bot_id.group(1)}).status_code == 404
    assert host.post(f"/class/{code}/host/remove", data={"learner": bot_id.group(1)}).status_code == 303
    assert bot.get(f"/class/{code}/me").status_code == 303  # back to the join page
    polled = bot.get(f"/class/{code}/me/live?stage=0")  # a phone still polling: told once, and told to stop
    assert polled.status_code == 286 and "you were removed" in polled.get_data(as_text=True)
    assert host.post(f"/class/{code}/host/remove", data={"learner": bot_id.group(1)}).status_code == 404
    assert host.post(f"/class/{code}/host/remove", data={"learner": "x"}).status_code == 400
    assert host.post(f"/class/{code}/host/lock", data={"locked": "0"}).status_code == 303
    assert join(client_at(app, "203.0.113.33"), code, "Late") == 303


def test_live_views_per_class_and_per_visitor_are_capped_and_cost_little_past_the_cap(app: Flask) -> None:
    """A presenter who opens view after view of a class: past the cap each is a few bytes telling the browser to
    come back later, nothing rendered; another class and another visitor are not held back."""
    host = client_at(app, "198.51.100.50")
    code = start(host)
    views = [host.get(f"/class/{code}/host/events").get_data(as_text=True) for _ in range(STREAM_CLASS_LIMIT + 1)]
    assert all("event: tally" in v for v in views[:STREAM_CLASS_LIMIT])
    assert views[-1].startswith(f"retry: {STREAM_BACKOFF * 1000}") and "event:" not in views[-1]
    other = client_at(app, "198.51.100.51")
    other_code = start(other)
    assert "event: tally" in other.get(f"/class/{other_code}/host/events").get_data(as_text=True)
