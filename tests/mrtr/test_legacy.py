"""The 2025-11-25 era and the legacy shim: one handler, asked over real server requests."""

from __future__ import annotations

import json

import pytest

from mrtr import Catalog, Tool, elicit_form
from mrtr.errors import FROZEN_TICKET_MESSAGE, INVALID_INPUT_RESPONSE, INVALID_PARAMS, METHOD_NOT_FOUND

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                   "clientInfo": {"name": "t", "version": "1"}}}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"env": "staging"}}}


def session(server, *, caps=None, channel=True):
    conn = server.connect("bob", channel=channel)
    init = json.loads(json.dumps(INIT))
    if caps is not None:
        init["params"]["capabilities"] = caps
    result = conn.receive(init).response["result"]
    assert result["protocolVersion"] == "2025-11-25" and "resultType" not in result
    assert conn.receive({"jsonrpc": "2.0", "method": "notifications/initialized"}).messages == []
    return conn


def answer(request, result):
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def test_the_shim_asks_over_a_real_server_request_and_finishes_on_the_answer(server):
    conn = session(server)
    asked = conn.receive(CALL)
    [request] = asked.messages
    assert request["method"] == "elicitation/create" and "id" in request and asked.origin == 2
    assert request["params"]["message"] == "Deploy to staging?"
    done = conn.receive(answer(request, {"action": "accept", "content": {"confirm": True}}))
    assert done.origin == 2
    assert done.response == {"jsonrpc": "2.0", "id": 2, "result": {
        "content": [{"type": "text", "text": "deployed to staging"}], "isError": False}}
    assert [c.outcome for c in done.trace.checks] == ["pass"] * 6


def test_the_shim_serves_decline(server):
    conn = session(server)
    [request] = conn.receive(CALL).messages
    done = conn.receive(answer(request, {"action": "decline"}))
    assert done.response["result"]["content"][0]["text"].startswith("nothing was deployed")


def test_a_malformed_legacy_answer_ends_the_call_with_an_error_that_says_so(server):
    """The answer rule holds in both eras: an answer that does not fit its question gets a clear error (spec,
    MRTR "Error Handling": SHOULD), never the frozen ticket refusal, and nothing is deployed."""
    conn = session(server)
    [request] = conn.receive(CALL).messages
    done = conn.receive(answer(request, {"action": "accept", "content": {"confirm": "perhaps"}}))
    error = done.response["error"]
    assert done.response["id"] == 2 and error["code"] == INVALID_PARAMS
    assert error["message"] != FROZEN_TICKET_MESSAGE and "'confirm' should be a boolean" in error["message"]
    assert error["data"] == {"reason": INVALID_INPUT_RESPONSE, "key": "confirm"}


def test_a_tool_that_keeps_asking_is_given_up_on_after_the_shims_round_limit(server):
    def stubborn(ctx):
        question = {"again": elicit_form("Once more?", {"type": "object", "properties": {}})}
        return ctx.ask(question, work={}, step="again")

    server.catalog = Catalog(tools={"stubborn": Tool("stubborn", "", stubborn)})
    conn = session(server)
    out = conn.receive({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "stubborn"}})
    for _ in range(server.shim_max_rounds + 5):
        if out.response:
            break
        [request] = out.messages
        assert request["method"] == "elicitation/create"
        out = conn.receive(answer(request, {"action": "accept", "content": {}}))
    assert out.response["result"]["isError"] is True
    assert f"gave up after {server.shim_max_rounds} rounds" in out.response["result"]["content"][0]["text"]


def test_a_client_error_answer_ends_the_call_cleanly(server):
    conn = session(server)
    [request] = conn.receive(CALL).messages
    done = conn.receive({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": "user closed"}})
    assert done.response["result"]["isError"] is True


def test_a_client_that_never_answers_is_given_up_on_after_the_round_timeout(server, clock):
    conn = session(server)
    conn.receive(CALL)
    assert conn.expire().messages == []
    clock.advance(server.shim_round_timeout + 1)
    timed_out = conn.expire()
    assert timed_out.response["id"] == 2 and "in time" in timed_out.response["result"]["content"][0]["text"]
    assert conn.expire().messages == []


def test_without_a_channel_the_legacy_call_fails_with_a_clear_reason(server):
    conn = session(server, channel=False)
    result = conn.receive(CALL).response["result"]
    assert result["isError"] is True and "no channel" in result["content"][0]["text"]


def test_a_legacy_client_without_elicitation_is_told_why(server):
    conn = session(server, caps={})
    result = conn.receive(CALL).response["result"]
    assert result["isError"] is True and "elicitation" in result["content"][0]["text"]


def test_legacy_capabilities_are_fixed_at_initialize(server):
    """Spec (2025-11-25 lifecycle): capabilities are negotiated once for the session."""
    conn = session(server, caps={})
    call = json.loads(json.dumps(CALL))
    call["params"]["capabilities"] = {"elicitation": {}}
    assert conn.receive(call).response["result"]["isError"] is True


def test_legacy_lists_have_no_modern_fields_and_ping_works(server):
    conn = session(server)
    tools = conn.receive({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).response["result"]
    assert [t["name"] for t in tools["tools"]][0] == "deploy" and not {"resultType", "ttlMs"} & set(tools)
    assert conn.receive({"jsonrpc": "2.0", "id": 6, "method": "ping"}).response["result"] == {}
    error = conn.receive({"jsonrpc": "2.0", "id": 7, "method": "nope"}).response["error"]
    assert error["code"] == METHOD_NOT_FOUND


def test_modern_requests_still_work_on_a_legacy_connection(server):
    from .helpers import request

    conn = session(server)
    assert conn.receive(request("tools/list")).response["result"]["resultType"] == "complete"


def test_a_legacy_request_before_initialize_is_a_clear_error(server):
    conn = server.connect("bob")
    exchange = conn.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert "_meta" in exchange.response["error"]["message"]


def test_an_answer_to_an_unknown_server_request_is_ignored(server):
    conn = session(server)
    assert conn.receive({"jsonrpc": "2.0", "id": 999, "result": {}}).messages == []


@pytest.mark.parametrize("answers", [1, 2, 3])
def test_the_shim_asks_every_question_of_a_multi_question_tool(server, answers):
    questions = {f"q{i}": elicit_form(f"Question {i}?", {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                                           "required": ["ok"]}) for i in range(answers)}

    def survey(ctx):
        if ctx.state is None:
            return ctx.ask(questions, work={}, step="ask")
        got = ctx.answers(questions)
        return {"content": [{"type": "text", "text": f"{len(got)} answers"}]} if got else ctx.ask(
            questions, work={}, step="ask")

    server.catalog = Catalog(tools={"survey": Tool("survey", "", survey)})
    conn = session(server)
    requests = conn.receive({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                             "params": {"name": "survey", "arguments": {}}}).messages
    assert len(requests) == answers
    for i, req in enumerate(requests):
        out = conn.receive(answer(req, {"action": "accept", "content": {"ok": True}}))
        assert (out.response is not None) == (i == answers - 1)
    assert out.response["result"]["content"][0]["text"] == f"{answers} answers"
