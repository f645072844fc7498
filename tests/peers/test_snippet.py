"""The lesson's TypeScript snippet: it type-checks against the SDK's own types, and it does what section 08 says.

The type check runs the TypeScript compiler pinned in tests/js/package.json on tests/js/tsconfig.snippet.json
(strict, no emit) against the installed @modelcontextprotocol/server. The behaviour tests send decline and
cancel by hand to the snippet itself, served by the official SDK (fixture sdk_ts_lesson_http).
"""

from __future__ import annotations

import base64
import json
import subprocess

import pytest

from mrtr import CHECK_TITLES
from tests.peers import launch
from tests.peers.wire import ARGS, Hand, call, play

LESSON = launch.ROOT / "lessons" / "when-the-server-needs-input"
SNIPPET = LESSON / "snippets" / "deploy.ts"


@pytest.mark.slow
def test_the_snippet_type_checks_against_the_sdk_types() -> None:
    tsc = launch.JS / "node_modules" / "typescript" / "bin" / "tsc"
    run = subprocess.run([launch.node(), str(tsc), "-p", str(launch.JS / "tsconfig.snippet.json")],
                         capture_output=True, text=True, timeout=600, cwd=launch.JS)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_type_check_covers_the_snippet() -> None:
    config = (launch.JS / "tsconfig.snippet.json").read_text()
    assert '"strict": true' in config and '"noEmit": true' in config
    assert (launch.JS / "../../lessons/when-the-server-needs-input/snippets/deploy.ts").resolve() == SNIPPET


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_the_snippet_stops_when_the_user_declines_or_cancels(sdk_ts_lesson_http, action: str) -> None:
    hand = Hand(sdk_ts_lesson_http)
    try:
        minted = hand.send("bob", call(1, ARGS))
        ticket = minted["result"]["requestState"]
        reply = hand.send("bob", call(2, ARGS, state=ticket, answers={"confirm": {"action": action}}))
    finally:
        hand.close()
    result = reply["result"]
    assert result["resultType"] == "complete" and not result.get("isError")
    assert result["content"][0]["text"] == f"nothing was deployed to staging: the user chose {action}"


def test_the_snippet_binds_the_caller_and_the_method(sdk_ts_lesson_http) -> None:
    ticket = play(sdk_ts_lesson_http, "honest").minted["result"]["requestState"]
    payload = json.loads(base64.urlsafe_b64decode(ticket.split(".")[1] + "=="))
    assert set(payload) == {"p", "exp", "b"}  # b: the bind tag; the raw caller is not in the ticket
    assert "bob" not in json.dumps(payload) and set(payload["p"]) == {"env", "id"}


def test_the_sdk_section_says_who_runs_each_check() -> None:
    prose = (LESSON / "sections" / "08-sdk-version.md").read_text()
    for title in CHECK_TITLES.values():
        assert f"**{title}**" in prose, title
    code = SNIPPET.read_text()
    assert "bind: (ctx)" in code and "redeemed.has(" in code and "pending.env !== env" in code
    for helper in ("inputResponse(", "acceptedContent(", "inputRequired(", ".mint("):
        assert helper in code and helper.rstrip("(").lstrip(".") in prose, helper


def test_the_snippet_follows_the_answer_rule_for_a_malformed_answer(sdk_ts_lesson_http) -> None:
    """confirm: "yes" gets the course's error for a malformed answer (a JSON-RPC error, not McpServer's isError
    result), and spends nothing; a string where an answer belongs is malformed too, never asked again."""
    hand = Hand(sdk_ts_lesson_http)
    try:
        ticket = hand.send("bob", call(1, ARGS))["result"]["requestState"]
        bad = hand.send("bob", call(2, ARGS, state=ticket,
                                    answers={"confirm": {"action": "accept", "content": {"confirm": "yes"}}}))
        good = hand.send("bob", call(3, ARGS, state=ticket,
                                     answers={"confirm": {"action": "accept", "content": {"confirm": True}}}))
    finally:
        hand.close()
    assert bad["error"]["code"] == -32602 and bad["error"]["message"].startswith("Invalid inputResponses: 'confirm': ")
    assert bad["error"]["data"] == {"reason": "invalid_input_response", "key": "confirm"}
    assert good["result"]["content"][0]["text"] == "deployed to staging"
