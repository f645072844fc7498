"""Adding a move is one entry in moves.toml: a test-only eighth move appears everywhere, with no code change.

The app is pointed at a temporary moves file (MRTR_MOVES_FILE) holding the real moves plus one
more; the playground, the presenter's deck, the lesson's timeline and the engine all pick it up.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from moves.catalog import DEFAULT_PATH, load_moves
from moves.engine import play
from moves.labcodec import LabRing
from moves.target import Outcome
from moves.targets.lab import lab_target
from mrtr import FakeClock
from tests.web.helpers import HX, soup

from .conftest import TEST_KEY

EIGHTH = '''
[[moves]]
slug = "stolen-late"
title = "Alice replays it late"
summary = "alice sends bob's genuine ticket with her own token, three minutes after it was minted."
sender = "other"
at = 180
timing = "past-expiry"
ticket = "as-issued"
answer = "accept"
request = "same"
expect = "refused"
stops_at = "principal"
request_id = 11
'''


@pytest.fixture
def moves_file(tmp_path: Path) -> Path:
    path = tmp_path / "moves.toml"
    path.write_text(DEFAULT_PATH.read_text(encoding="utf-8") + EIGHTH, encoding="utf-8")
    return path


@pytest.fixture
def eight(moves_file: Path) -> Flask:
    return create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory",
                       "MRTR_CLOCK": FakeClock(1_790_000_000.0), "MRTR_MOVES_FILE": str(moves_file)})


def test_the_engine_plays_it(moves_file: Path) -> None:
    moves = load_moves(moves_file)
    assert len(moves) == len(load_moves()) + 1
    result = play(moves[-1], lab_target(LabRing.public("eighth-move-key-0123456789abcdefghijkl"), now=1.79e9))
    assert result.ok and result.outcome == Outcome.REFUSED and result.stopped_at == "principal"


def test_the_playground_shows_and_plays_it(eight: Flask) -> None:
    client: FlaskClient = eight.test_client()
    page = soup(client.get("/playground").data)
    assert [b["data-move"] for b in page.select("[data-move]")][-1] == "stolen-late"
    assert len(page.select("[data-move]")) == len(load_moves()) + 1
    result = soup(client.post("/playground/moves/stolen-late", data={"single_use": "1"}, headers=HX).data)
    assert result.select_one("[data-result]")["data-result"] == "stolen-late"
    assert result.select_one("[data-first-failure]")["data-first-failure"] == "principal"
    assert "Authorization: Bearer alice-token" in result.get_text()


def test_the_demo_and_the_timeline_show_it(eight: Flask) -> None:
    client: FlaskClient = eight.test_client()
    deck = soup(client.get("/demo").data)
    moves_shown = [s["data-key"] for s in deck.select("[data-slide][data-kind=move]")]
    assert moves_shown == [m.slug for m in load_moves()] + ["stolen-late"]
    slide = soup(client.get("/demo/move/stolen-late").data).select_one("#move-stolen-late")
    assert slide.select_one("[data-verdict]")["data-verdict"] == "refused"
    lesson = soup(client.get("/lessons/when-the-server-needs-input").data)
    assert lesson.select_one("[id$='-stolen-late']") is not None
    assert f"{len(load_moves()) + 1} moves against one ticket" in lesson.get_text()
