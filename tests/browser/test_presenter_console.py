"""The presenter's pages run clean: no console error or warning, no uncaught error, no failed request.

Kept apart from axe on purpose: axe's own probes leave console errors of their own on a page under a strict CSP,
so a page that was checked by axe is never the page checked here.

One presenter walks the deck by keyboard and by its links, opens the speaker notes, starts a live class and
uses every control of its screen (htmx posts) while a learner plays along on a phone, then ends the class.
The class's live stream is made to end and reconnect every half second, as it does every
MRTR_CLASS_STREAM_SECONDS in production, so the test also sees the reconnections the presenter's screen
lives through.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request, Response, WebError, expect

from tests.browser.conftest import BROWSER_TEST_CONFIG
from tests.browser.helpers import LiveServer, serve

PHONE = {"width": 390, "height": 844}
EVENTS = re.compile(r"/class/[A-Z0-9]{6}/host/events$")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    from app import create_app

    with tempfile.TemporaryDirectory(prefix="mrtr-presenter-console-") as tmp:
        config = {**BROWSER_TEST_CONFIG, "MRTR_CLASS_DB": str(Path(tmp) / "classroom.sqlite3"),
                  # every stream ends after half a second and the browser comes back after `retry` (a quarter)
                  "MRTR_CLASS_STREAM_SECONDS": 0.5, "MRTR_CLASS_POLL_SECONDS": 0.25,
                  # each stream is held open (none falls back to one snapshot per reconnect)
                  "MRTR_HELD_STREAMS": 4}
        with serve(create_app(config)) as live:
            yield live


@dataclass
class Problems:
    """Everything that went wrong in one browser context, on any of its pages (popups included)."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)

    def watch(self, context: BrowserContext) -> None:
        context.on("console", self._console)
        context.on("weberror", self._error)
        context.on("requestfailed", self._failed)
        context.on("response", self._response)
        context.on("request", self._request)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self.console.append(f"{message.type}: {message.text} ({message.page.url if message.page else '?'})")

    def _error(self, error: WebError) -> None:
        self.errors.append(str(error.error))

    def _failed(self, request: Request) -> None:
        # The one request allowed to end unfinished: the live class's event stream, which never finishes by
        # itself while the class goes on. The page closes it (classroom.js) when the presenter leaves the page
        # or ends the class, and Chromium reports a response the page stopped reading as net::ERR_ABORTED.
        # Any other failure of the stream (refused, reset, cut mid-event) is not this and still counts.
        if EVENTS.search(request.url) and request.failure == "net::ERR_ABORTED":
            return
        self.failed.append(f"{request.method} {request.url}: {request.failure}")

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.refused.append(f"{response.status} {response.request.method} {response.url}")

    def _request(self, request: Request) -> None:
        if EVENTS.search(request.url):
            self.streams.append(request.url)

    def assert_none(self) -> None:
        assert self.console == [], self.console
        assert self.errors == [], self.errors
        assert self.failed == [], self.failed
        assert self.refused == [], self.refused


@pytest.fixture
def people(browser: Browser, server: LiveServer) -> Iterator[list[tuple[Page, Problems]]]:
    made: list[BrowserContext] = []
    pages: list[tuple[Page, Problems]] = []

    def open_person(**kwargs: object) -> tuple[Page, Problems]:
        context = browser.new_context(base_url=server.url, reduced_motion="reduce", **kwargs)  # type: ignore[arg-type]
        made.append(context)
        problems = Problems()
        problems.watch(context)
        pages.append((context.new_page(), problems))
        return pages[-1]

    yield [open_person(viewport={"width": 1280, "height": 720}), open_person(viewport=PHONE)]
    for context in made:
        context.close()


def shown(page: Page):  # noqa: ANN201
    return page.locator("[data-slide]:not([hidden])")


def test_the_deck_and_the_live_class_screen_log_no_error(people: list[tuple[Page, Problems]]) -> None:
    (presenter, seen), (phone, phone_seen) = people

    # The deck: every slide by keyboard, back by its link, the raw JSON, the index, the speaker notes.
    presenter.goto("/demo")
    count = int(presenter.locator("[data-deck]").get_attribute("data-count") or "0")
    assert count > 10
    for n in range(2, count + 1):
        presenter.keyboard.press("ArrowRight")
        expect(shown(presenter).locator(".position")).to_have_text(f"{n} / {count}")
    shown(presenter).locator("a.prev").click()
    expect(shown(presenter).locator(".position")).to_have_text(f"{count - 1} / {count}")
    presenter.keyboard.press("j")
    expect(shown(presenter).locator("details[data-raw]")).to_have_attribute("open", "")
    presenter.keyboard.press("Escape")
    expect(shown(presenter).locator("details[data-raw]")).not_to_have_attribute("open", "")
    presenter.locator(".all-slides summary").click()
    presenter.locator(".slide-index a").nth(4).click()
    expect(shown(presenter).locator(".position")).to_have_text(f"5 / {count}")
    with presenter.context.expect_page() as opened:
        presenter.keyboard.press("s")
    notes = opened.value
    expect(notes.locator("[data-slide]:not([hidden])")).to_have_count(1)
    presenter.bring_to_front()
    presenter.keyboard.press("ArrowRight")  # the notes window follows the deck
    expect(notes.locator("[data-slide]:not([hidden])")).to_have_attribute("data-slide", "5")
    notes.close()
    presenter.keyboard.press("Home")
    expect(shown(presenter).locator(".position")).to_have_text(f"1 / {count}")

    # The live class, from the deck's bar.
    presenter.locator('[data-action="start-class"]').click()
    code = presenter.locator("[data-join-code]").first.get_attribute("data-join-code") or ""
    presenter.locator('[data-action="open-host"]').click()
    expect(presenter).to_have_url(f"/class/{code}/host")  # the presenter page left behind has a join code too
    expect(presenter.locator("[data-join-code]")).to_have_text(code)
    phone.goto(f"/j/{code}")
    phone.locator('input[name="nickname"]').fill("Ada")
    phone.locator('[data-action="join"]').click()
    expect(presenter.locator("[data-learner-count]")).to_have_text("1")

    presenter.locator('[data-action="push-question"]').click()
    phone.locator('button[data-option="a"]').click()
    expect(presenter.locator("[data-answered]")).to_have_attribute("data-answered", "1")
    presenter.locator('[data-action="reveal"]').click()
    expect(presenter.locator('[data-tally] [data-correct="true"]')).to_have_count(1)
    expect(phone.locator("[data-revealed]")).to_be_visible()
    presenter.locator('[data-action="push-question"]').click()
    expect(presenter.locator("#tally-panel .q-number")).to_have_text("Question 2")
    presenter.locator('[data-action="open-round"]').click()
    phone.locator("button[data-move]").first.click()
    expect(presenter.locator("[data-heatmap]")).to_have_attribute("data-total", "1")
    presenter.locator('[data-action="single-use-off"]').click()
    expect(presenter.locator("#single-use-state")).to_contain_text("off")
    presenter.locator('[data-action="single-use-on"]').click()
    expect(presenter.locator("#single-use-state")).to_contain_text("on")
    presenter.locator('[data-action="close-round"]').click()
    expect(presenter.locator('[data-action="open-round"]')).to_be_visible()
    phone_seen.assert_none()
    phone.context.close()  # the learner leaves before being removed below

    # The live view lived through streams ending and coming back, and still follows the class.
    connected = len(seen.streams)
    with presenter.expect_request(EVENTS):
        pass
    with presenter.expect_request(EVENTS):
        pass
    assert len(seen.streams) >= connected + 2 >= 3
    presenter.locator("#manage summary").click()
    presenter.locator('[data-action="lock-class"]').click()
    presenter.locator('[data-action="unlock-class"]').click()
    expect(presenter.locator("#lock-state")).to_contain_text("open")
    presenter.locator('[data-action="remove-learner"]').click()
    expect(presenter.locator("#manage-body")).to_contain_text("Nobody has joined yet")
    expect(presenter.locator("[data-learner-count]")).to_have_text("0")  # pushed over the stream
    with presenter.expect_download() as download:
        presenter.get_by_text("Export results (CSV)").click()
    assert download.value.suggested_filename == f"class-{code}.csv"

    presenter.locator('[data-action="end-class"]').click()
    expect(presenter).to_have_url(re.compile(r"/demo$"))
    expect(shown(presenter)).to_have_count(1)
    seen.assert_none()
