"""The typed boundary of the core: a request's envelope, checked once, and what an exchange gives back,
read without digging through dicts."""

from __future__ import annotations

import pytest

from mrtr import ProtocolError, Server
from mrtr.errors import INVALID_PARAMS, INVALID_REQUEST
from mrtr.messages import Request, error_of, input_required_of, listed_tools
from mrtr.protocol import parse_request

from .helpers import ACCEPT, deploy


def test_a_request_envelope_is_parsed_once_into_a_typed_request() -> None:
    assert parse_request({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"a": 1}}) == \
        Request(7, "tools/list", {"a": 1})
    note = parse_request({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert note.is_notification and note.params is None


@pytest.mark.parametrize(("message", "code", "words"), [
    ({"jsonrpc": "1.0", "id": 1, "method": "x"}, INVALID_REQUEST, '"jsonrpc" member must be exactly "2.0"'),
    ({"jsonrpc": "2.0", "id": 1, "method": ""}, INVALID_REQUEST, '"method" member must be a non-empty string'),
    ({"jsonrpc": "2.0", "id": True, "method": "x"}, INVALID_REQUEST, "id must be a string or an integer"),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "x"}, INVALID_REQUEST, "id must be a string or an integer"),
    ({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}, INVALID_PARAMS, "params must be an object"),
])
def test_a_bad_envelope_names_what_is_wrong(message, code, words) -> None:
    with pytest.raises(ProtocolError) as raised:
        parse_request(message)
    assert raised.value.code == code and words in raised.value.message and raised.value.http_status == 400


def test_an_exchange_gives_its_input_required_typed(server: Server) -> None:
    asked = server.handle(deploy(), principal="bob").input_required
    assert asked is not None and asked["resultType"] == "input_required"
    assert list(asked["inputRequests"]) == ["confirm"] and asked["requestState"].startswith("t1.")
    done = server.handle(deploy(id=2, inputResponses=ACCEPT, requestState=asked["requestState"]), principal="bob")
    assert done.input_required is None and done.error is None
    assert done.result is not None and done.result["resultType"] == "complete"


def test_an_exchange_gives_its_error_typed(server: Server) -> None:
    refused = server.handle(deploy(id=3, inputResponses=ACCEPT, requestState="t1.AAAA.AAAA"), principal="bob")
    assert refused.result is None and refused.input_required is None
    assert refused.error == {"code": INVALID_PARAMS, "message": "Invalid or expired requestState",
                             "data": {"reason": "invalid_request_state"}}


def test_error_of_refuses_what_is_not_a_well_formed_error() -> None:
    assert error_of({"error": {"code": "x", "message": "m"}}) is None
    assert error_of({"error": {"code": True, "message": "m"}}) is None
    assert error_of({"result": {}}) is None
    assert error_of({"error": {"code": -1, "message": "m"}}) == {"code": -1, "message": "m"}


def test_input_required_of_reads_a_peer_s_result_without_trusting_its_members() -> None:
    peer = {"jsonrpc": "2.0", "id": 2, "result": {"resultType": "input_required", "requestState": 7,
                                                   "inputRequests": {"a": {"method": "roots/list"}, "b": "text"}}}
    # A ticket that is no string is left out; a question that is no object reads as an empty one.
    assert input_required_of(peer) == {"resultType": "input_required",
                                       "inputRequests": {"a": {"method": "roots/list"}, "b": {}}}
    assert input_required_of({"result": {"resultType": "complete"}}) is None
    assert input_required_of({"result": ["input_required"]}) is None
    assert input_required_of({"error": {"code": -1, "message": "m"}}) is None


def test_listed_tools_keeps_each_named_object_in_order_with_the_server_s_own_members() -> None:
    deploy_tool = {"name": "deploy", "inputSchema": {"type": "object"}, "x-extra": [1]}
    result = {"tools": [deploy_tool, {"name": 5}, "status", {"title": "nameless"}, {"name": "status"}]}
    assert listed_tools(result) == [deploy_tool, {"name": "status"}]
    assert listed_tools({"tools": {"name": "deploy"}}) == [] and listed_tools(None) == []
