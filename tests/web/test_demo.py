"""Presenter mode through the Flask client: every slide is a page, and every replay is identical."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest
from bs4 import BeautifulSoup
from flask.testing import FlaskClient

from app import create_app
from moves.catalog import holds, load_moves
from moves.target import Outcome
from mrtr import FakeClock, TicketCodec
from tests.conftest import APP_CONFIG
from tests.web.helpers import assert_csp_clean, assert_unique_ids, soup, stopped_move
from web.demo.routes import DEMO_RING, SWITCHES

MOVES = load_moves()
MOVE_SLUGS = [m.slug for m in MOVES]
SWITCH_SLUGS = [key for key, *_ in SWITCHES]
SLIDES = 6 + len(MOVES) + len(SWITCH_SLUGS)
STOLEN = stopped_move("principal")
REPLAY = stopped_move("single-use")

STEP_URLS = [f"/demo/step/{n}" for n in range(1, 7)]
MOVE_URLS = [f"/demo/move/{slug}" for slug in MOVE_SLUGS]
SWITCH_URLS = [f"/demo/switch/{slug}" for slug in SWITCH_SLUGS]
ALL = ["/demo", "/demo/notes", *STEP_URLS, *MOVE_URLS, *SWITCH_URLS,
       *(u.replace("/demo/", "/demo/notes/") for u in STEP_URLS + MOVE_URLS + SWITCH_URLS)]


#: A deck page, fetched and parsed: `deck_page(url)`.
DeckPage = Callable[[str], BeautifulSoup]


@pytest.fixture(scope="module")
def deck_page(tmp_path_factory: pytest.TempPathFactory) -> DeckPage:
    """Each deck page fetched (status 200) and parsed once for this module's tests that only read it. The deck is
    replayed on the demo's own key and clock and reads no app state, so every fetch of a URL gives the same bytes
    (test_the_same_slide_replays_byte_for_byte and test_replay_does_not_depend_on_the_apps_key_or_clock fetch for
    themselves and hold that); and every page carries every slide (some 400 KB), which costs more to parse than to
    render. Module-scoped, so it builds its app as make_app does, from tests/conftest.py's APP_CONFIG."""
    app = create_app({**APP_CONFIG, "MRTR_CLOCK": FakeClock(1_790_000_000.0),
                      "MRTR_STATE_DIR": str(tmp_path_factory.mktemp("state"))})
    client = app.test_client()

    @cache
    def page(url: str) -> BeautifulSoup:
        response = client.get(url)
        assert response.status_code == 200, url
        return soup(response.data)

    return page


def _current(html: bytes | BeautifulSoup):
    slides = [s for s in (html if isinstance(html, BeautifulSoup) else soup(html)).select("[data-slide]")
              if not s.has_attr("hidden")]
    assert len(slides) == 1, "exactly one slide is shown without JavaScript"
    return slides[0]


@pytest.mark.parametrize("url", ALL)
def test_every_slide_and_note_is_a_page(deck_page: DeckPage, url: str) -> None:
    page = deck_page(url)  # answered 200; every slide is on the page
    assert_csp_clean(page)
    assert_unique_ids(page)
    assert len(page.select("[data-slide]")) == SLIDES


@pytest.mark.parametrize(("url", "anchor"), [("/demo", "step-1"), ("/demo/step/3", "step-3"),
                                             (f"/demo/move/{STOLEN.slug}", f"move-{STOLEN.slug}"),
                                             (f"/demo/notes/move/{REPLAY.slug}", f"move-{REPLAY.slug}")])
def test_deep_links_pick_the_slide(deck_page: DeckPage, url: str, anchor: str) -> None:
    assert _current(deck_page(url))["id"] == anchor


def test_prev_and_next_links_walk_the_deck_without_js(deck_page: DeckPage) -> None:
    url, seen = "/demo/step/1", []
    for _ in range(SLIDES):
        slide = _current(deck_page(url))
        seen.append(slide["id"])
        url = slide.select_one("a[rel=next]")["href"] if slide.select_one("a[rel=next]") else None
        if url is None:
            break
    assert seen == ([f"step-{n}" for n in range(1, 7)] + [f"move-{s}" for s in MOVE_SLUGS]
                    + [f"switch-{s}" for s in SWITCH_SLUGS])
    back = _current(deck_page(f"/demo/move/{MOVE_SLUGS[1]}")).select_one("a[rel=prev]")["href"]
    assert back == f"/demo/move/{MOVE_SLUGS[0]}"


@pytest.mark.parametrize("url", ["/demo/step/0", "/demo/step/7", "/demo/move/nope", "/demo/notes/step/9"])
def test_unknown_slides_are_404(client: FlaskClient, url: str) -> None:
    assert client.get(url).status_code == 404


def test_the_same_slide_replays_byte_for_byte(client: FlaskClient) -> None:
    for url in ("/demo/step/2", "/demo/step/5", *MOVE_URLS):
        first, second = client.get(url), client.get(url)
        assert first.status_code == second.status_code == 200
        assert b"data-slide" in first.data
        assert first.data == second.data


def test_replay_does_not_depend_on_the_apps_key_or_clock(client: FlaskClient) -> None:
    other = create_app({"TESTING": True, "MRTR_SECRET_KEYS": "another-key-" + "9" * 40, "MRTR_STORE": "memory"})
    theirs = other.test_client().get("/demo/step/2")
    ours = client.get("/demo/step/2")
    assert ours.status_code == theirs.status_code == 200
    assert ours.data == theirs.data


def test_tickets_are_real_and_on_the_demo_key_not_the_apps(client: FlaskClient, app) -> None:
    slide = _current(client.get("/demo/step/2").data)
    text = "".join(pre.get_text() for pre in slide.select("pre.json"))
    ticket = next(word.strip('",') for word in text.split() if word.startswith('"t1.'))
    from mrtr import Trace

    claims = TicketCodec(DEMO_RING).open(ticket, Trace())  # verifies the signature
    assert claims["sub"] == "bob" and claims["iat"] == 1_790_000_000
    services_codec = TicketCodec(app.extensions["mrtr"].ring)
    with pytest.raises(Exception):  # noqa: B017 - any rejection: the app's key did not sign it
        services_codec.open(ticket, Trace())


@pytest.mark.parametrize("move", MOVES, ids=MOVE_SLUGS)
def test_moves_show_the_real_verdicts(deck_page: DeckPage, move) -> None:
    slide = _current(deck_page(f"/demo/move/{move.slug}"))
    verdict = Outcome(slide.select_one("[data-verdict]")["data-verdict"])
    assert holds(move.expect, verdict)[0] and verdict not in (Outcome.NOT_DONE, Outcome.NOT_RUN)
    stopped = slide.select_one(".stopped")
    assert (stopped is not None) == (verdict in (Outcome.REFUSED, Outcome.ASKED_AGAIN))
    labels = [h.get_text(" ", strip=True) for h in slide.select(".raw-label")]
    if move.before is not None:  # the retry sent first is on the slide, before the move's own
        assert any(f"“{move.before.title}”" in label for label in labels), labels
    sent = [label for label in labels if ", sent by " in label]
    assert len(sent) >= len(move.chain)


def test_notes_carry_the_teaching_notes_and_captions(deck_page: DeckPage, app) -> None:
    with app.app_context():
        from web.site.content import get_content

        lesson = get_content().lessons[0]
        note = STOLEN.note_for(STOLEN.expect, STOLEN.stops_at).text
        caption = lesson.roundtrip_steps[2].caption
    assert note in _current(deck_page(f"/demo/notes/move/{STOLEN.slug}")).get_text()
    assert caption in _current(deck_page("/demo/notes/step/3")).get_text()


def test_the_kicker_counts_the_moves(deck_page: DeckPage) -> None:
    kicker = _current(deck_page(f"/demo/move/{MOVE_SLUGS[-1]}")).select_one(".kicker").get_text(" ", strip=True)
    assert f"move {len(MOVES)} of {len(MOVES)}" in kicker


def test_autoplay_is_validated(client: FlaskClient) -> None:
    deck = soup(client.get("/demo?autoplay=8").data).select_one("[data-deck]")
    assert deck["data-autoplay"] == "8"
    assert soup(client.get("/demo?autoplay=1").data).select_one("[data-deck]")["data-autoplay"] == "2"
    assert not soup(client.get("/demo?autoplay=x").data).select_one("[data-deck]").has_attr("data-autoplay")


def test_urls_never_carry_a_ticket(client: FlaskClient) -> None:
    tree = soup(client.get("/demo/step/4").data)
    assert all("t1." not in (a.get("href") or "") for a in tree.find_all("a"))


def test_the_deck_refuses_framing(client: FlaskClient) -> None:
    response = client.get("/demo")
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize(("slug", "check"), [(key, check) for key, check, *_ in SWITCHES])
def test_a_switched_off_protection_lets_the_misuse_through(deck_page: DeckPage, slug: str, check: str) -> None:
    move = stopped_move(check)
    slide = _current(deck_page(f"/demo/switch/{slug}"))
    assert slide.select_one("[data-verdict]")["data-verdict"] == "completed"
    assert not slide.select('.big-checks [data-outcome="fail"]')
    assert [li["data-check"] for li in slide.select('.big-checks [data-outcome="skipped"]')] == [check]
    deployed_to = move.edit_value if move.ticket == "edit-work" else "staging"
    assert f"deployed to {deployed_to}" in slide.get_text()
    assert move.note_for(Outcome.COMPLETED).text in _current(deck_page(f"/demo/notes/switch/{slug}")).get_text()
