"""/mcp serves the tools of "Beyond one question" as it serves deploy: a second round, and a state-only result."""

from __future__ import annotations

from flask.testing import FlaskClient

from .helpers import post
from .test_mcp_http import rpc


def test_mcp_plays_a_second_round_and_a_state_only_result(client: FlaskClient) -> None:
    first = post(client, rpc("tools/call", {"name": "provision", "arguments": {"env": "staging"}}))
    assert first.status_code == 200  # spec: results, input_required included, are 200
    ticket = first.get_json()["result"]["requestState"]
    answers = {"region": {"action": "accept", "content": {"region": "ap-south"}}}
    second = post(client, rpc("tools/call", {"name": "provision", "arguments": {"env": "staging"},
                                             "inputResponses": answers, "requestState": ticket}, request_id=2))
    result = second.get_json()["result"]
    assert result["resultType"] == "input_required" and list(result["inputRequests"]) == ["size"]
    shed = post(client, rpc("tools/call", {"name": "report", "arguments": {"period": "today"}}, request_id=3))
    assert shed.status_code == 200 and set(shed.get_json()["result"]) >= {"resultType", "requestState"}
    assert "inputRequests" not in shed.get_json()["result"]
