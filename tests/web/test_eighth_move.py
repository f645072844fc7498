"""Adding a move is one entry in moves.toml: an extra move appears and plays everywhere, with no code change.

The app is pointed at a temporary moves file (MRTR_MOVES_FILE) holding the real moves plus one more: a copy of
an existing move's whole `[[moves]]` entry (its notes included) under a new slug and title, one copy per group
the pages list moves in (what the move varies: the ticket, the answer, a retry sent first). The engine, the
playground (with htmx and without JavaScript), the presenter's deck, the lesson's timeline and the class's
attack round all pick it up and play it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from moves.catalog import DEFAULT_PATH, Move, holds, load_moves
from moves.engine import play
from moves.labcodec import LabRing
from moves.target import Outcome
from moves.targets.in_process import lab_target
from tests.check.catalogue import copy_of
from tests.web.helpers import HX, soup
from web.playground.switches import TOOLS
from web.playground.words import tell
from web.site.moveviews import OUTCOME_TEXT, group_of, grouped

MOVES = load_moves()
#: One move to copy from each group, so every kind of entry is proven (the first of its group).
ORIGINALS = {group.key: group.moves[0] for group in grouped(MOVES)}
#: And one of each kind of request (the same one, other arguments, another tool that asks), when no group's first
#: move already is one: a kind of move added to the vocabulary is proven the same way.
ORIGINALS |= {f"request-{m.request}": m for m in reversed(MOVES)
              if m.request not in {o.request for o in ORIGINALS.values()}}
LESSON = "/lessons/when-the-server-needs-input"

DEPLOY = TOOLS["deploy"].words()  # the default playground, the deck and the figures play deploy


@pytest.fixture(params=sorted(ORIGINALS), ids=lambda key: f"{key}-kind")
def extra(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Move]:
    """A moves file with one more entry, and that entry as the catalogue reads it."""
    slug, _title, entry = copy_of(ORIGINALS[request.param])
    path = tmp_path / "moves.toml"
    path.write_text(DEFAULT_PATH.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + entry, encoding="utf-8")
    added = next(m for m in load_moves(path) if m.slug == slug)
    assert group_of(added) == request.param or request.param == f"request-{added.request}"
    return path, added


@pytest.fixture
def app_config(extra: tuple[Path, Move]) -> dict[str, Any]:
    return {"MRTR_MOVES_FILE": str(extra[0])}


@pytest.fixture
def move(extra: tuple[Path, Move]) -> Move:
    return extra[1]


def test_the_engine_plays_it(extra: tuple[Path, Move]) -> None:
    path, added = extra
    moves = load_moves(path)
    assert len(moves) == len(MOVES) + 1 and moves[-1] == added
    result = play(added, lab_target(LabRing.public("eighth-move-key-0123456789abcdefghijkl"), now=1.79e9))
    assert result.ok, result.detail
    assert added.note_for(result.outcome, result.stopped_at) is not None  # its notes came with the entry


def test_the_playground_lists_it_in_its_group_and_plays_it(app: Flask, move: Move) -> None:
    client: FlaskClient = app.test_client()
    page = soup(client.get("/playground").data)
    assert len(page.select("[data-move]")) == len(MOVES) + 1
    group = page.select_one(f"[data-move-group='{group_of(move)}']")
    assert group.select("[data-move]")[-1]["data-move"] == move.slug  # last of its group, as in the file
    assert page.select_one(f"#{group.select('[data-move]')[-1]['aria-describedby']}").get_text().startswith(
        tell(move.summary, DEPLOY))
    for headers in (HX, {}):  # with htmx: the result fragment; without JavaScript: the whole page
        response = client.post(f"/playground/moves/{move.slug}", data={"single_use": "1"}, headers=headers)
        assert response.status_code == 200
        result = soup(response.data)
        assert (result.select_one("html") is None) == bool(headers)
        outcome = result.select_one("#pg-result [data-result]") or result.select_one("[data-result]")
        assert outcome["data-result"] == move.slug
        assert holds(move.expect, Outcome(outcome["data-verdict"]))[0]
        assert result.select_one(f"[data-note='{move.slug}']") is not None
        if move.before is not None:
            assert f"“{move.before.title}”" in result.select(".pg-earlier")[-1].get_text()
    assert client.get(f"/playground/moves/{move.slug}").status_code == 303


def test_the_deck_gives_it_a_slide(app: Flask, move: Move) -> None:
    client: FlaskClient = app.test_client()
    deck = soup(client.get("/demo").data)
    moves_shown = [s["data-key"] for s in deck.select("[data-slide][data-kind=move]")]
    assert moves_shown == [m.slug for m in MOVES] + [move.slug]
    slide = soup(client.get(f"/demo/move/{move.slug}").data).select_one(f"#move-{move.slug}")
    assert not slide.has_attr("hidden")
    assert holds(move.expect, Outcome(slide.select_one("[data-verdict]")["data-verdict"]))[0]
    assert f"move {len(MOVES) + 1} of {len(MOVES) + 1}" in slide.select_one(".kicker").get_text(" ", strip=True)
    notes = soup(client.get(f"/demo/notes/move/{move.slug}").data)
    assert tell(move.summary, DEPLOY) in notes.get_text()


def test_the_timeline_plays_it(app: Flask, move: Move) -> None:
    lesson = soup(app.test_client().get(LESSON).data)
    figure = lesson.select_one("#checks-and-clock")
    row = figure.select_one(f"tr[id$='-{move.slug}']")
    assert row is not None
    verdict = Outcome(row["data-verdict"])
    assert holds(move.expect, verdict)[0]
    assert row.select_one("td.result").get_text(strip=True) == OUTCOME_TEXT[verdict]
    assert figure.select_one(f"li[data-move='{move.slug}']") is not None
    assert f"{len(MOVES) + 1} moves against one ticket" in figure.get_text()
    # its note (copied with the entry) explains it under the matrix
    note = move.note_for(verdict, next((td["data-check"] for td in row.select("td.cell")
                                        if td["data-outcome"] in ("fail", "asked-again")), None))
    assert note is not None and tell(note.text, DEPLOY) in figure.select_one(".move-notes").get_text()


def test_the_class_round_offers_and_plays_it(app: Flask, move: Move) -> None:
    host = app.test_client()
    started = host.post("/class/start")
    assert started.status_code == 201
    code = re.search(r'data-join-code="(\w+)"', started.get_data(as_text=True)).group(1)  # type: ignore[union-attr]
    learner = app.test_client()
    assert learner.post("/join", data={"code": code, "nickname": "Eight"}).status_code == 303
    host.post(f"/class/{code}/host/round", data={"open": "1"})
    phone = soup(learner.get(f"/class/{code}/me").data)
    assert len(phone.select("button[data-move]")) == len(MOVES) + 1
    assert phone.select_one(f"[data-move-group='{group_of(move)}'] button[data-move='{move.slug}']") is not None
    played = learner.post(f"/class/{code}/play", data={"move": move.slug}, headers={"Accept": "application/json"})
    assert played.status_code == 200
    result = played.get_json()
    assert result["move"] == move.slug and holds(move.expect, Outcome(result["verdict"]))[0]
    heat = soup(host.get(f"/class/{code}/host").data).select_one(f"tr[data-move='{move.slug}']")
    check = result["stopped_at"] or "through"
    assert heat.select_one(f"td[data-check='{check}']")["data-count"] == "1"
    attempt = soup(learner.post(f"/class/{code}/play", data={"move": move.slug}, headers=HX).data)
    assert move.title in attempt.select_one("#attempt-title").get_text()
