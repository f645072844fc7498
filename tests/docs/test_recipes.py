"""Each "How to add ..." recipe in docs/how-to/ is run: its titled code blocks are the code a developer would
write, and this executes them against the real engine, stores, app and content loader, so a recipe that stops
working fails here. A block is found by the title of its fence (```python title="mrtr_toolsets/publishing.py")."""

from __future__ import annotations

import inspect
import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from moves import probes
from moves.catalog import DEFAULT_PATH, load_moves
from moves.check import run_check
from moves.engine import Call, play
from moves.labcodec import LabRing
from moves.target import Outcome
from moves.targets.in_process import lab_target
from mrtr import FakeClock, KeyRing, MemoryStore, Server, StoreUnavailable
from mrtr_toolsets.lesson import lesson_catalog
from tests.stores import test_redeemed
from tests.stores.conftest import spoil
from web.site.content import load_course

ROOT = Path(__file__).resolve().parents[2]
HOW_TO = ROOT / "docs" / "how-to"


def blocks(page: str) -> dict[str, str]:
    """The page's titled code blocks: title -> code."""
    text = (HOW_TO / page).read_text(encoding="utf-8")
    found = re.findall(r'(?ms)^```\w+ title="([^"]+)"\n(.*?)^```$', text)
    assert found, f"{page} has no titled code block"
    assert len({title for title, _ in found}) == len(found), f"{page}: two blocks with one title"
    return dict(found)


def run(code: str, namespace: dict[str, Any], name: str) -> dict[str, Any]:
    exec(compile(code, name, "exec"), namespace)  # noqa: S102 - the recipe's own code, as a developer would run it
    return namespace


def test_the_tool_set_recipe_passes_every_move_and_probe() -> None:
    code = blocks("add-a-toolset.md")
    namespace = run(code["mrtr_toolsets/publishing.py"], {"__name__": "publishing"}, "publishing.py")
    run(code["check the tool set"], namespace, "check")
    report = namespace["report"]
    assert report.tool == "publish" and report.ok
    # One tool asks for input, so the move that spends its ticket on another tool is not shown; the rest pass.
    one_tool = {m.slug for m in load_moves() if m.needs_other_tool}
    assert {m.move for m in report.moves if m.verdict != "pass"} == one_tool and all(p.ok for p in report.probes)
    assert all(m.verdict == "not-run" for m in report.moves if m.move in one_tool)


def test_the_move_recipe_is_one_entry_that_plays_everywhere(tmp_path: Path, make_app: Callable[..., Flask]) -> None:
    entry = blocks("add-a-move.md")["moves/moves.toml"]
    path = tmp_path / "moves.toml"
    path.write_text(DEFAULT_PATH.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + entry, encoding="utf-8")
    moves = load_moves(path)
    added = moves[-1]
    assert len(moves) == len(load_moves()) + 1 and added.slug == "stolen-late"
    result = play(added, lab_target(LabRing.public("recipe-move-key-0123456789abcdefghijkl"), now=1.79e9))
    assert result.ok and result.outcome == Outcome.REFUSED and result.stopped_at == added.stops_at == "principal"
    assert added.note_for(result.outcome, result.stopped_at) is not None
    playground = make_app(MRTR_MOVES_FILE=str(path)).test_client().get("/playground").get_data(as_text=True)
    assert "stolen-late" in playground and added.title.replace("'", "&#39;") in playground


class AnswersAnything:
    """The lab target, except that a method the server does not have gets an empty result instead of -32601."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)

    def send(self, role: Any, message: dict[str, Any]) -> Any:
        reply = self.target.send(role, message)
        if (reply.response or {}).get("error", {}).get("code") == -32601:
            reply.response = {"jsonrpc": "2.0", "id": message["id"], "result": {"resultType": "complete"}}
        return reply


def test_the_probe_recipe_holds_on_a_sound_server_and_catches_one_that_answers_anything() -> None:
    namespace = run(blocks("add-a-probe.md")["moves/probes.py"], dict(vars(probes)), "probes.py")
    probe = namespace["probe_unknown_method"]
    sound = lab_target(LabRing.public("recipe-probe-key-0123456789abcdefghijk"), now=1.79e9)
    held = probe(sound, Call(), probes.counter())
    assert held.ok and held.probe == "unknown-method", held.detail
    caught = probe(AnswersAnything(sound), Call(), probes.counter())
    assert not caught.ok and "not error -32601" in caught.detail


def test_the_store_recipe_keeps_the_redeemed_contract(tmp_path: Path) -> None:
    namespace = run(blocks("add-a-store-backend.md")["mrtr_stores/redeemed_sql.py"], {"__name__": "redeemed_sql"},
                    "redeemed_sql.py")

    def store_at(path: Path) -> Any:
        return namespace["SqlStore"](lambda: sqlite3.connect(path, timeout=30), sqlite3.Error, placeholder="?")

    contract = [test for name, test in sorted(vars(test_redeemed).items())
                if name.startswith("test_") and list(inspect.signature(test).parameters) == ["store"]]
    assert len(contract) >= 2, "the redeemed store's contract tests take one `store`"
    for number, test in enumerate(contract):
        test(store_at(tmp_path / f"redeemed-{number}.sqlite3"))
    path = tmp_path / "spoiled.sqlite3"
    store = store_at(path)
    spoil(path)
    with pytest.raises(StoreUnavailable):
        store.redeem("a", 1.79e9 + 60, 1.79e9)


def test_the_transport_recipe_carries_a_whole_check() -> None:
    code = blocks("add-a-transport.md")
    namespace = run(code["frame adapter"], {"__name__": "frames"}, "frame_adapter.py")
    run(code["frame target"], namespace, "frame_target.py")
    clock = FakeClock(1.79e9)
    server = Server(ring=KeyRing(["recipe-transport-key-0123456789abcdefgh"]), store=MemoryStore(), clock=clock,
                    catalog=lesson_catalog())
    report = run_check(namespace["FrameTarget"](server, clock))
    assert report.ok and {m.verdict for m in report.moves} == {"pass"}, [m.detail for m in report.moves]
    assert [p.probe for p in report.probes if not p.ok] == []


def test_the_lesson_recipe_is_served(tmp_path: Path, make_app: Callable[..., Flask]) -> None:
    tree = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", tree)
    for title, code in blocks("add-a-lesson.md").items():
        path = tmp_path / title
        assert path.is_relative_to(tree), title
        path.parent.mkdir(parents=True, exist_ok=True)
        existing = path.read_text(encoding="utf-8") + "\n" if path.exists() else ""  # course.toml gains an entry
        path.write_text(existing + code, encoding="utf-8")
    course = load_course(tree)
    lesson = next(lesson for lesson in course.lessons if lesson.slug == "sealed-or-signed")
    assert [s.id for s in lesson.sections] == ["what-sealing-adds", "quick-check"] and len(lesson.questions) == 1
    for question in lesson.questions:  # the quiz rules every lesson's quiz keeps (tests/web/test_quiz_guessing.py)
        for choice in question.choices:
            assert not re.search(r"\b(because|since|so that)\b", choice.text, re.I), choice.text
            if choice.id == question.answer:
                assert not choice.belief, "the right answer holds no misconception"
            else:
                assert len(choice.belief) >= 20 and choice.why, "a wrong option needs a belief and a why"
    client = make_app(MRTR_CONTENT_DIR=str(tree)).test_client()
    page = client.get("/lessons/sealed-or-signed")
    assert page.status_code == 200 and "What sealing adds" in page.get_data(as_text=True)
    quiz = client.get("/quiz/sealed-or-signed")
    assert quiz.status_code == 200 and "stolen one" in quiz.get_data(as_text=True)
    assert "/lessons/sealed-or-signed" in client.get("/").get_data(as_text=True)
