"""The 2026-07-28 server: envelope, methods, errors, results, and bad input."""

from __future__ import annotations

import json

import pytest

from mrtr import Catalog, Connection, KeyRing, MemoryStore, Prompt, Resource, Server, Tool, elicit_form
from mrtr._methods import MODERN_METHODS
from mrtr.errors import (
    FROZEN_TICKET_MESSAGE,
    INTERNAL_ERROR,
    INVALID_INPUT_RESPONSE,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_VERSION,
)
from mrtr.protocol import INPUT_REQUIRED_METHODS, MAX_MESSAGE_BYTES

from .helpers import ACCEPT, META, assert_frozen_rejection, deploy, request


def handle(server, message, principal="bob"):
    return server.handle(message, principal=principal)


def raw(server, text):
    return Connection(server, "bob", channel=False, stateless=True).receive_text(text)


def error_of(exchange):
    return exchange.response["error"]


def test_discover_lists_versions_capabilities_and_cache_hints(server):
    """Spec-mandated (server/discover): supportedVersions, capabilities, ttlMs, cacheScope, serverInfo."""
    result = handle(server, request("server/discover")).response["result"]
    assert result["supportedVersions"][0] == "2026-07-28"
    assert set(result["capabilities"]) >= {"tools", "prompts", "resources"}
    assert result["resultType"] == "complete"
    assert isinstance(result["ttlMs"], int) and result["cacheScope"] in ("public", "private")
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mrtr-lab"


@pytest.mark.parametrize("method", ["tools/list", "prompts/list", "resources/list", "resources/templates/list"])
def test_list_results_carry_result_type_and_cache_hints(server, method):
    result = handle(server, request(method)).response["result"]
    assert result["resultType"] == "complete" and result["ttlMs"] >= 0 and result["cacheScope"] == "public"


def test_the_lesson_catalog_is_clean(server):
    names = [t["name"] for t in handle(server, request("tools/list")).response["result"]["tools"]]
    assert names == ["deploy", "provision", "release", "report"]


def test_only_three_methods_may_ever_answer_input_required(clock):
    """Spec-mandated (MRTR "Supported Requests"): served by a catalog whose every handler asks a question,
    exactly tools/call, prompts/get and resources/read answer input_required; every other method the
    server answers completes (or refuses) without asking."""
    def asks(ctx):
        return ctx.ask({"confirm": elicit_form("Sure?", {"type": "object", "properties": {}})}, work={}, step="ask")

    catalog = Catalog(tools={"t": Tool(name="t", description="asks", input_schema={"type": "object"}, handler=asks)},
                      prompts={"p": Prompt(name="p", description="asks", handler=asks)},
                      resources={"r://x": Resource(uri="r://x", name="x", description="asks", handler=asks)})
    server = Server(ring=KeyRing(["server-test-key-" + "0" * 32]), store=MemoryStore(), clock=clock, catalog=catalog)
    params = {"tools/call": {"name": "t"}, "prompts/get": {"name": "p"}, "resources/read": {"uri": "r://x"},
              "completion/complete": {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a"}}}
    asked = set()
    for method in MODERN_METHODS:
        reply = handle(server, request(method, params.get(method, {}))).response
        if reply.get("result", {}).get("resultType") == "input_required":
            asked.add(method)
    assert asked == {"tools/call", "prompts/get", "resources/read"} == INPUT_REQUIRED_METHODS


@pytest.mark.parametrize(("meta", "code", "status"), [
    (None, INVALID_PARAMS, 400),
    ({}, INVALID_PARAMS, 400),
    ({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, INVALID_PARAMS, 400),
    ({"io.modelcontextprotocol/clientCapabilities": {}}, INVALID_PARAMS, 400),
    ({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": "all"}, INVALID_PARAMS, 400),
    ({"io.modelcontextprotocol/protocolVersion": "1900-01-01",
      "io.modelcontextprotocol/clientCapabilities": {}}, UNSUPPORTED_VERSION, 400),
])
def test_a_bad_meta_envelope_is_refused(server, meta, code, status):
    exchange = handle(server, request("tools/list", meta=meta))
    assert error_of(exchange)["code"] == code and exchange.http_status == status


def test_an_unsupported_version_lists_what_is_supported(server):
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "1900-01-01"}
    error = error_of(handle(server, request("tools/list", meta=meta)))
    assert error["data"] == {"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"}


def test_client_info_is_optional(server):
    assert "result" in handle(server, request("tools/list")).response


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "nope/never"])
def test_removed_and_unknown_methods_are_not_found(server, method):
    exchange = handle(server, request(method))
    assert error_of(exchange)["code"] == METHOD_NOT_FOUND and exchange.http_status == 404


def test_deploy_without_the_elicitation_capability_is_refused_with_what_is_missing(server):
    """Spec-mandated: never ask for an undeclared input kind; answer -32021 instead."""
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
    exchange = handle(server, request("tools/call", {"name": "deploy", "arguments": {"env": "staging"}}, meta=meta))
    assert error_of(exchange)["code"] == MISSING_CAPABILITY
    assert error_of(exchange)["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert exchange.http_status == 400


def test_round_one_asks_to_confirm_with_a_boolean_form(server):
    result = handle(server, deploy()).response["result"]
    assert result["resultType"] == "input_required"
    question = result["inputRequests"]["confirm"]
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "Deploy to staging?"
    assert question["params"]["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"
    assert isinstance(result["requestState"], str) and "ttlMs" not in result


def test_a_yes_sent_on_round_one_without_a_ticket_is_not_enough(server):
    """App-defined: a pre-answered first call still has to be confirmed through a minted ticket."""
    result = handle(server, deploy(inputResponses=ACCEPT)).response["result"]
    assert result["resultType"] == "input_required"


def _retry(server, clock, answer, **extra):
    ticket = handle(server, deploy()).response["result"]["requestState"]
    clock.advance(5)
    return handle(server, deploy(id=2, requestState=ticket, inputResponses=answer, **extra))


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_complete_without_deploying(server, clock, action):
    result = _retry(server, clock, {"confirm": {"action": action}}).response["result"]
    assert result["resultType"] == "complete"
    assert result["content"][0]["text"].startswith("nothing was deployed to staging")


def test_accepting_with_the_box_unticked_deploys_nothing(server, clock):
    answer = {"confirm": {"action": "accept", "content": {"confirm": False}}}
    assert "nothing was deployed" in _retry(server, clock, answer).response["result"]["content"][0]["text"]


@pytest.mark.parametrize("answer", [{}, {"other": {"action": "accept"}}, {"confirm": None}], ids=repr)
def test_a_missing_answer_is_asked_again_and_spends_nothing(server, clock, answer):
    """Spec SHOULD (MRTR "Error Handling"): a missing required answer gets a new input_required, not an error."""
    exchange = _retry(server, clock, answer)
    assert exchange.response["result"]["resultType"] == "input_required"
    assert exchange.trace.outcome_of("answer") == "fail"
    assert "the server asks again" in json.dumps(exchange.trace.as_dicts())


@pytest.mark.parametrize(("answer", "why"), [
    ({"confirm": 12345}, "not an object"), ({"confirm": {"action": "maybe"}}, "no valid action"),
    ({"confirm": {"action": "accept"}}, "content object"),
    ({"confirm": {"action": "accept", "content": {"confirm": "yes"}}}, "'confirm' should be a boolean"),
    ({"confirm": {"action": "accept", "content": {}}}, "missing the required field 'confirm'"),
], ids=repr)
def test_a_malformed_answer_gets_an_error_of_its_own_and_spends_nothing(server, clock, answer, why):
    """Spec SHOULD (MRTR "Error Handling"): malformed input gets a JSON-RPC error. It must not be the frozen ticket
    refusal, or a client could not tell "fix your answer" from "your requestState was refused"; and the ticket is
    not spent, so the same ticket with a good answer still deploys."""
    first = handle(server, deploy())
    ticket = first.response["result"]["requestState"]
    exchange = handle(server, deploy(id=2, requestState=ticket, inputResponses=answer))
    error = error_of(exchange)
    assert error["code"] == INVALID_PARAMS and error["message"] != FROZEN_TICKET_MESSAGE and why in error["message"]
    assert error["data"] == {"reason": INVALID_INPUT_RESPONSE, "key": "confirm"}
    assert exchange.http_status == 200 and exchange.trace.outcome_of("answer") == "fail"
    again = handle(server, deploy(id=3, requestState=ticket, inputResponses=ACCEPT))
    assert again.response["result"]["content"][0]["text"] == "deployed to staging"


def test_unknown_extra_answers_are_ignored(server, clock):
    answer = {**ACCEPT, "unexpected": {"action": "accept", "content": {"x": 1}}}
    assert _retry(server, clock, answer).response["result"]["content"][0]["text"] == "deployed to staging"


@pytest.mark.parametrize("responses", [None, [], "yes", 12345], ids=repr)
def test_input_responses_that_are_not_an_object_are_invalid_params(server, clock, responses):
    exchange = _retry(server, clock, responses)
    assert error_of(exchange)["code"] == INVALID_PARAMS
    assert "inputResponses" in error_of(exchange)["message"]


@pytest.mark.parametrize("ticket", [42, None, [], {"a": 1}, "t1." + "A" * 1_000_000], ids=lambda t: repr(t)[:20])
def test_a_ticket_of_the_wrong_type_or_size_is_the_frozen_rejection(server, ticket):
    exchange = handle(server, deploy(requestState=ticket, inputResponses=ACCEPT))
    assert_frozen_rejection(exchange.response)
    assert exchange.http_status == 200


@pytest.mark.parametrize(("params", "fragment"), [
    ({"name": "nope"}, "Unknown tool"),
    ({"name": 7}, "params.name"),
    ({"name": "deploy", "arguments": []}, "arguments"),
    ({"name": "deploy", "arguments": {}}, "env"),
    ({"name": "deploy", "arguments": {"env": 3}}, "env"),
    ({"name": "deploy", "arguments": {"env": "x" * 201}}, "longer"),
])
def test_bad_tool_params_are_invalid_params_with_a_specific_message(server, params, fragment):
    error = error_of(handle(server, request("tools/call", params)))
    assert error["code"] == INVALID_PARAMS and fragment in error["message"]


@pytest.mark.parametrize(("text", "code"), [
    ("{", PARSE_ERROR),
    ("not json", PARSE_ERROR),
    (b"\xff\xfe", PARSE_ERROR),
    ("[]", INVALID_REQUEST),
    ('[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', INVALID_REQUEST),
    ("42", INVALID_REQUEST),
    ('"hello"', INVALID_REQUEST),
    ('{"id":1,"method":"tools/list"}', INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":null,"method":"tools/list"}', INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":true,"method":"tools/list"}', INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":1,"method":5}', INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}', INVALID_PARAMS),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}', INVALID_PARAMS),
    ("[" * 100_000 + "]" * 100_000, PARSE_ERROR),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + '{"a":' * 40 + "1" + "}" * 41, INVALID_REQUEST),
], ids=lambda v: repr(v)[:40])
def test_bad_input_gets_the_right_json_rpc_error_and_the_server_keeps_serving(server, text, code):
    exchange = raw(server, text)
    assert error_of(exchange)["code"] == code
    assert "Traceback" not in json.dumps(exchange.messages)
    assert "result" in handle(server, request("tools/list")).response


@pytest.mark.parametrize("text", [
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"\\udfff"}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"\\ud800":1}}',
])
def test_lone_surrogates_are_refused_before_they_reach_a_digest_or_a_log(server, text):
    exchange = raw(server, text)
    assert error_of(exchange)["code"] == INVALID_REQUEST and "surrogate" in error_of(exchange)["message"]
    assert "result" in handle(server, request("tools/list")).response


def test_an_oversized_message_is_refused_with_its_size(server):
    exchange = raw(server, " " * (MAX_MESSAGE_BYTES + 1))
    assert error_of(exchange)["code"] == INVALID_REQUEST and exchange.http_status == 413


def test_an_error_keeps_the_request_id(server):
    assert handle(server, request("nope", id="abc")).response["id"] == "abc"
    assert handle(server, request("nope", id=0)).response["id"] == 0


def test_a_crashing_handler_becomes_an_internal_error_without_details(server):
    def boom(ctx):
        raise RuntimeError("secret detail")

    server.catalog.tools["deploy"] = Tool(name="deploy", description="", handler=boom)
    exchange = handle(server, deploy())
    assert error_of(exchange) == {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert "secret" not in json.dumps(exchange.messages)


def test_notifications_get_no_response(server):
    exchange = handle(server, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert exchange.messages == [] and exchange.http_status == 202


def test_prompts_and_resources_work_in_the_modern_era(server):
    prompt = handle(server, request("prompts/get", {"name": "deploy-briefing", "arguments": {"env": "prod"}}))
    assert prompt.response["result"]["messages"][0]["role"] == "user"
    read = handle(server, request("resources/read", {"uri": "mrtr://lab/checks"})).response["result"]
    assert "Signature" in read["contents"][0]["text"] and read["ttlMs"] > 0 and read["resultType"] == "complete"
    missing = error_of(handle(server, request("resources/read", {"uri": "mrtr://nope"})))
    assert missing["code"] == INVALID_PARAMS and missing["data"] == {"uri": "mrtr://nope"}


def test_the_server_log_says_why_while_the_wire_does_not(server, clock):
    ticket = handle(server, deploy()).response["result"]["requestState"]
    clock.advance(500)
    exchange = handle(server, deploy(id=2, requestState=ticket, inputResponses=ACCEPT))
    assert_frozen_rejection(exchange.response)
    assert any("Not expired" in line and "expired" in line for line in exchange.log)
    assert "ago" not in json.dumps(exchange.response) and "expiry" not in json.dumps(exchange.response)
