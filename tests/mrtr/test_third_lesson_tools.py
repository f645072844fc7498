"""The tools of "Beyond one question" (mrtr_toolsets/lesson.py) on the core server: a second round on a new ticket
(the first spent), several questions in one round, and a result that carries only a requestState.

Each expectation names its source: the 2026-07-28 MRTR page (spec) or the answer rule the course teaches (app).
"""

from __future__ import annotations

from typing import Any

import pytest

from mrtr import Server
from mrtr.errors import INVALID_INPUT_RESPONSE

from .helpers import assert_frozen_rejection, request


def call(tool: str, arguments: dict[str, Any], *, id: Any = 1, **extra: Any) -> dict[str, Any]:  # noqa: A002
    return request("tools/call", {"name": tool, "arguments": arguments, **extra}, id=id)


def send(server: Server, message: dict[str, Any], principal: str = "bob") -> dict[str, Any]:
    return server.handle(message, principal=principal).response


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def test_provision_asks_twice_each_round_on_a_ticket_of_its_own(server: Server) -> None:
    """Spec: a server MAY return input_required repeatedly; each round's requestState is the server's to mint."""
    first = send(server, call("provision", {"env": "staging"}))["result"]
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["region"]
    region = {"region": accept(region="eu-west")}
    second = send(server, call("provision", {"env": "staging"}, id=2, inputResponses=region,
                               requestState=first["requestState"]))["result"]
    assert second["resultType"] == "input_required" and list(second["inputRequests"]) == ["size"]
    assert second["requestState"] != first["requestState"]
    assert "eu-west" in second["inputRequests"]["size"]["params"]["message"]
    # The first ticket was spent when its answer was read: sending it again is refused.
    assert_frozen_rejection(send(server, call("provision", {"env": "staging"}, id=3, inputResponses=region,
                                              requestState=first["requestState"])))
    done = send(server, call("provision", {"env": "staging"}, id=4, inputResponses={"size": accept(size="small")},
                             requestState=second["requestState"]))["result"]
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == "provisioned a small staging database in eu-west"


def test_provision_refuses_a_region_the_question_never_offered(server: Server) -> None:
    """App (the answer rule): a value outside the question's enum is malformed, an error that spends nothing."""
    first = send(server, call("provision", {"env": "staging"}))["result"]
    bad = send(server, call("provision", {"env": "staging"}, id=2, inputResponses={"region": accept(region="moon")},
                            requestState=first["requestState"]))
    assert bad["error"]["data"] == {"reason": INVALID_INPUT_RESPONSE, "key": "region"}
    good = send(server, call("provision", {"env": "staging"}, id=3, inputResponses={"region": accept(region="us-east")},
                             requestState=first["requestState"]))["result"]
    assert good["resultType"] == "input_required"  # round two: the ticket was not spent by the bad answer


def test_release_asks_several_questions_in_one_round_and_again_when_one_is_missing(server: Server) -> None:
    """Spec: inputRequests is a map; each answer comes back under its own key. A missing one is asked again."""
    first = send(server, call("release", {"version": "1.4.0"}))["result"]
    assert set(first["inputRequests"]) == {"notes", "notify"}
    half = send(server, call("release", {"version": "1.4.0"}, id=2, inputResponses={"notes": accept(notes="fixes")},
                             requestState=first["requestState"]))["result"]
    assert half["resultType"] == "input_required" and set(half["inputRequests"]) == {"notes", "notify"}
    both = {"notes": accept(notes="fixes"), "notify": accept(notify=True)}
    done = send(server, call("release", {"version": "1.4.0"}, id=3, inputResponses=both,
                             requestState=half["requestState"]))["result"]
    assert done["content"][0]["text"] == "released 1.4.0 (5 characters of notes; the team was told)"


def test_report_hands_its_work_on_with_a_request_state_and_nothing_to_ask(server: Server,
                                                                         make_server: Any) -> None:
    """Spec: a result with only requestState is legal (load shedding); the client MAY retry at once, and any
    replica that shares the key finishes it. Spent once, like any ticket."""
    first = send(server, call("report", {"period": "this week"}))["result"]
    assert first["resultType"] == "input_required" and "inputRequests" not in first and first["requestState"]
    other_replica = make_server()
    other_replica.store = server.store  # the replicas share the key (one ring) and the redeemed store
    done = send(other_replica, call("report", {"period": "this week"}, id=2, requestState=first["requestState"]))
    assert done["result"]["content"][0]["text"] == "report for this week: ready"
    assert_frozen_rejection(send(server, call("report", {"period": "this week"}, id=3,
                                              requestState=first["requestState"])))


def test_a_round_one_answer_without_a_ticket_does_nothing_but_ask(server: Server) -> None:
    """App: nothing is done on answers sent before anything was asked (no ticket, nothing verified)."""
    release_answers = {"notes": accept(notes="x"), "notify": accept(notify=True)}
    for tool, args, answers in (("provision", {"env": "prod"}, {"region": accept(region="eu-west")}),
                                ("release", {"version": "2"}, release_answers)):
        result = send(server, call(tool, args, inputResponses=answers))["result"]
        assert result["resultType"] == "input_required", tool


def _pick_first(request_: dict[str, Any]) -> dict[str, Any]:
    """A user who picks the first offered value of every field (True for a checkbox)."""
    props = request_["params"]["requestedSchema"]["properties"]
    return {"action": "accept", "content": {k: p["enum"][0] if "enum" in p else True if p["type"] == "boolean"
                                            else "notes" for k, p in props.items()}}


@pytest.mark.external  # `python -m mrtr serve` as a process
def test_the_stdio_server_serves_every_tool_of_the_third_lesson() -> None:
    from mrtr.client import Client
    from mrtr_cli.stdio_server import serve_process

    from .conftest import KEY, ROOT

    env = {"MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "memory", "MRTR_PRINCIPAL": "bob", "PYTHONPATH": str(ROOT)}
    transport = serve_process(env)
    try:
        client = Client(transport, on_elicit=_pick_first)
        assert client.connect() == "modern"
        texts = [client.call_tool(name, args)["content"][0]["text"] for name, args in
                 (("provision", {"env": "qa"}), ("release", {"version": "2.0"}), ("report", {"period": "May"}))]
    finally:
        transport.close()
    assert texts == ["provisioned a small qa database in eu-west",
                     "released 2.0 (5 characters of notes; the team was told)", "report for May: ready"]
