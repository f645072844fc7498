"""`mrtr.Client` over `mrtr_client.HttpTransport` against the scripted server: what it must do on every round, and
each thing it must refuse (with its own error, and without sending another request)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mrtr import Client, FakeClock
from mrtr.client import declared_capabilities
from mrtr.client_errors import (
    BadAnswer,
    EmptyInputRequired,
    InvalidTool,
    RoundsExceeded,
    UndeclaredRequest,
    UnknownResultType,
)
from mrtr_client import HttpTransport

from .scripted import TICKET_1, TICKET_2, Scripted, scripted_server


@pytest.fixture(params=["json", "sse"])
def server(request: pytest.FixtureRequest) -> Iterator[Scripted]:
    with scripted_server(sse=request.param == "sse") as script:
        yield script


def client_for(script: Scripted, **options: Any) -> Client:
    return Client(HttpTransport(script.url, timeout=10), sleep=FakeClock().sleep, **options)


def test_each_retry_has_a_new_id_the_newest_ticket_byte_for_byte_and_only_this_rounds_answers(server: Scripted) -> None:
    client = client_for(server)
    result = client.call_tool("multi", {"x": 1})
    assert result["content"][0]["text"] == "multi done with ['second']"
    first, second, third = server.calls("multi")
    assert "requestState" not in first["params"] and "inputResponses" not in first["params"]
    assert second["params"]["requestState"] == TICKET_1 and list(second["params"]["inputResponses"]) == ["first"]
    assert third["params"]["requestState"] == TICKET_2 and list(third["params"]["inputResponses"]) == ["second"]
    assert len({first["id"], second["id"], third["id"]}) == 3
    assert all(c["params"]["arguments"] == {"x": 1} and c["params"]["_meta"] for c in (first, second, third))
    client.call_tool("plain", {})
    assert not {"requestState", "inputResponses"} & set(server.calls("plain")[0]["params"])  # nothing carried over


def test_the_echo_is_byte_exact_on_the_wire(server: Scripted) -> None:
    client_for(server).call_tool("multi", {})
    raw = server.calls("multi")[1]["params"]["requestState"]
    assert raw == TICKET_1 and raw.startswith("  ") and raw.endswith("  ") and "é" in raw


def test_no_ticket_is_sent_when_the_server_gave_none(server: Scripted) -> None:
    client_for(server).call_tool("nostate", {})
    assert "requestState" not in server.calls("nostate")[1]["params"]


def test_state_only_rounds_back_off_and_send_no_input_responses(server: Scripted) -> None:
    clock = FakeClock()
    client = Client(HttpTransport(server.url), sleep=clock.sleep)
    assert client.call_tool("state_only", {})["content"][0]["text"] == "state-only done"
    assert clock.slept == [0.05, 0.1, 0.2]
    retries = server.calls("state_only")[1:]
    assert [c["params"]["requestState"] for c in retries] == ["s1", "s2", "s3"]
    assert all("inputResponses" not in c["params"] for c in retries)


def test_the_default_answers_by_the_schema(server: Scripted) -> None:
    text = client_for(server).call_tool("form", {})["content"][0]["text"]
    content = {"count": 3, "name": "example", "ok": True, "size": "small"}
    assert json.loads(text) == {"f": {"action": "accept", "content": content}}


def test_rounds_are_bounded_with_an_error_naming_the_limit(server: Scripted) -> None:
    with pytest.raises(RoundsExceeded, match=r"after 3 retries.*max_rounds=3"):
        client_for(server, max_rounds=3).call_tool("loop", {})
    assert len(server.calls("loop")) == 4


@pytest.mark.parametrize(("tool", "error", "words"), [
    ("bogus", UnknownResultType, "resultType 'bogus'"),
    ("empty", EmptyInputRequired, "neither inputRequests nor requestState"),
    ("url", UndeclaredRequest, "url-mode elicitation, which this client did not declare"),
    ("sampling", UndeclaredRequest, "sampling/createMessage, which this client did not declare"),
    ("foo", UndeclaredRequest, "'foo/bar', which is not an embedded request"),
])
def test_a_strict_refusal_is_its_own_error_and_nothing_is_retried(server: Scripted, tool: str, error: type[Exception],
                                                                  words: str) -> None:
    with pytest.raises(error, match=words):
        client_for(server).call_tool(tool, {})
    assert len(server.calls(tool)) == 1


def test_url_mode_declared_is_declined_by_the_default_never_accepted(server: Scripted) -> None:
    client = client_for(server, capabilities=declared_capabilities(url_mode=True))
    assert client.call_tool("url", {})["content"][0]["text"] == '{"page": {"action": "decline"}}'


def test_an_answer_that_does_not_fit_the_form_is_not_sent(server: Scripted) -> None:
    with pytest.raises(BadAnswer, match="size must be one of"):
        client_for(server, on_elicit=lambda q: {"action": "accept", "content": {"size": "huge", "ok": True}}).call_tool(
            "form", {})
    with pytest.raises(BadAnswer, match="action 'yes'"):
        client_for(server, on_elicit=lambda q: {"action": "yes"}).call_tool("form", {})


def test_tools_list_judges_every_definition_and_an_invalid_tool_is_never_called(server: Scripted) -> None:
    client = client_for(server)
    tools = {t.name: t for t in client.list_tools()}
    assert tools["headers"].valid and tools["headers"].headers == {"region": "Region", "count": "Count", "flag": "Flag"}
    assert "only for string, integer or boolean" in tools["bad_header"].problems[0]
    assert tools["no_schema"].problems == ("inputSchema is missing or not an object",)
    with pytest.raises(InvalidTool, match="'bad_header' is not called"):
        client.call_tool("bad_header", {"score": 1.5})
    assert server.calls("bad_header") == []


def test_the_headers_mirror_the_body_and_the_marked_arguments(server: Scripted) -> None:
    client = client_for(server)
    client.list_tools()
    client.call_tool("headers", {"region": " us west ", "count": 42, "flag": False, "note": "n"})
    client.call_tool("headers", {"region": "eu", "flag": None})
    first, second = server.headers_of("headers")
    assert first["mcp-protocol-version"] == "2026-07-28" and first["mcp-method"] == "tools/call"
    assert first["mcp-name"] == "headers" and first["mcp-param-count"] == "42" and first["mcp-param-flag"] == "false"
    assert first["mcp-param-region"] == "=?base64?IHVzIHdlc3Qg?=" and "mcp-param-note" not in first
    assert second["mcp-param-region"] == "eu" and "mcp-param-flag" not in second and "mcp-param-count" not in second
    assert all(h["accept"] == "application/json, text/event-stream" for _m, h in server.seen)


def test_minus_32022_on_discover_is_retried_with_a_supported_version_not_the_old_handshake() -> None:
    with scripted_server(reject_first_discover=True) as script:
        client = client_for(script)
        assert client.connect() == "modern"
    assert [m["method"] for m, _h in script.seen] == ["server/discover", "server/discover"]


def test_a_server_that_does_not_know_discover_gets_the_2025_handshake() -> None:
    with scripted_server(legacy=True) as script:
        client = client_for(script)
        assert client.connect() == "legacy"
        assert client.call_tool("plain", {})["content"][0]["text"] == "plain ok"
    methods = [m.get("method") for m, _h in script.seen]
    assert methods == ["server/discover", "initialize", "notifications/initialized", "tools/call"]
    assert script.seen[-1][1]["mcp-protocol-version"] == "2025-11-25" and "_meta" not in script.seen[-1][0]["params"]
