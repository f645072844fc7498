"""One wire rule for a malformed answer across the course (issue 42, item 3).

The lab's server, the build lesson's Python solution, its TypeScript solution and lesson 1's TypeScript snippet each
get the same malformed answer (a string where an elicitation answer belongs) on a genuine ticket, and each must answer
with the same JSON-RPC error: -32602, a message "Invalid inputResponses: 'confirm': <why>", and data
{"reason": "invalid_input_response", "key": "confirm"}. None may ask again (the answer is there, only malformed), and
none may spend the ticket: the honest answer on the same ticket still deploys.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from moves.labcodec import LabRing
from moves.targets.in_process import lab_target
from tests.lessons.buildkit import META, converse
from tests.lessons.test_build_typescript import SOLUTION as TS_SOLUTION
from tests.lessons.test_build_typescript import compiled
from tests.peers import launch
from tests.peers.wire import Hand, call

PY_SOLUTION = launch.ROOT / "lessons" / "build-the-checks" / "solution" / "server.py"
ARGS = {"env": "staging"}
MALFORMED = {"confirm": "yes"}
HONEST = {"confirm": {"action": "accept", "content": {"confirm": True}}}
Send = Callable[[dict[str, Any]], dict[str, Any]]


def _tools_call(rid: int, *, state: str | None = None, answers: dict[str, Any] | None = None) -> dict[str, Any]:
    message = call(rid, ARGS, state=state, answers=answers)
    message["params"]["_meta"] = {**message["params"]["_meta"], **META}
    return message


def _play(send: Send) -> tuple[dict[str, Any], dict[str, Any]]:
    """Round one, the malformed retry, then the honest retry on the same ticket: (malformed reply, honest reply)."""
    ticket = send(_tools_call(1))["result"]["requestState"]
    bad = send(_tools_call(2, state=ticket, answers=MALFORMED))
    return bad, send(_tools_call(3, state=ticket, answers=HONEST))


def _assert_the_rule(bad: dict[str, Any], honest: dict[str, Any]) -> None:
    assert "error" in bad, f"a malformed answer got no JSON-RPC error: {bad}"
    error = bad["error"]
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid inputResponses: 'confirm': "), error["message"]
    assert error["data"] == {"reason": "invalid_input_response", "key": "confirm"}
    assert honest["result"]["content"][0]["text"] == "deployed to staging", honest


def test_the_lab() -> None:
    target = lab_target(LabRing.public(b"k" * 32), now=1_000_000.0)
    target.begin()
    _assert_the_rule(*_play(lambda message: target.send("owner", message).response or {}))


def _stdio(argv: list[str]) -> Send:
    """Each message to a fresh process: the tickets verify across processes (one default key), and a malformed
    answer spends nothing, so nothing is lost between them."""
    return lambda message: converse(argv, [message])[0]


def test_the_python_build_solution() -> None:
    _assert_the_rule(*_play(_stdio([sys.executable, str(PY_SOLUTION)])))


@pytest.mark.slow
def test_the_typescript_build_solution(tmp_path: Path) -> None:
    _assert_the_rule(*_play(_stdio([launch.node(), str(compiled(TS_SOLUTION, tmp_path))])))


def test_the_lesson_one_snippet(sdk_ts_lesson_http: launch.HttpPeer) -> None:
    hand = Hand(sdk_ts_lesson_http)
    try:
        _assert_the_rule(*_play(lambda message: hand.send("bob", message)))
    finally:
        hand.close()
