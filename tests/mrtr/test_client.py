"""The dual-era client's duties: new ids, byte-exact echo, no invented state, bounded rounds."""

from __future__ import annotations

import pytest

from moves.transcripts import SCENES, lab_scenes
from mrtr import Catalog, Client, ClientError, InMemoryTransport, Tool, elicit_form


def client_for(server, **kwargs) -> Client:
    return Client(InMemoryTransport(server.connect("bob")), **kwargs)


def sent(client, method):
    return [line.message for line in client.transcript
            if line.direction == "-->" and line.message.get("method") == method]


def test_the_client_probes_discover_and_finishes_a_modern_deploy(server):
    client = client_for(server)
    assert client.connect() == "modern"
    assert client.call_tool("deploy", {"env": "staging"})["content"][0]["text"] == "deployed to staging"
    first, retry = sent(client, "tools/call")
    assert retry["id"] != first["id"]
    received = [line.message for line in client.transcript if line.direction == "<--"]
    ticket = next(m["result"]["requestState"] for m in received if m.get("result", {}).get("requestState"))
    assert retry["params"]["requestState"] == ticket
    assert "requestState" not in first["params"]


def test_the_client_falls_back_to_initialize_for_a_legacy_only_server(server):
    class LegacyOnly(InMemoryTransport):
        def send(self, message):
            if message.get("method") == "server/discover":
                self._inbox.append({"jsonrpc": "2.0", "id": message["id"],
                                    "error": {"code": -32601, "message": "Method not found"}})
            else:
                super().send(message)

    client = Client(LegacyOnly(server.connect("bob")))
    assert client.connect() == "legacy"
    assert client.call_tool("deploy", {"env": "qa"})["content"][0]["text"] == "deployed to qa"


def test_no_request_state_is_sent_when_the_server_gave_none(server):
    def state_free(ctx):
        question = {"name": elicit_form("Name?", {"type": "object", "properties": {"name": {"type": "string"}},
                                                  "required": ["name"]})}
        got = ctx.answers(question)
        if got is None:
            from mrtr import InputRequired

            return InputRequired(question, None)
        return {"content": [{"type": "text", "text": f"hi {got['name']['content']['name']}"}]}

    server.catalog = Catalog(tools={"hello": Tool("hello", "", state_free)})
    client = client_for(server)
    assert client.call_tool("hello", {})["content"][0]["text"] == "hi example"  # answered by its schema
    assert all("requestState" not in m["params"] for m in sent(client, "tools/call"))


def test_the_client_gives_up_after_a_bounded_number_of_rounds(server):
    def forever(ctx):
        return ctx.ask({"q": elicit_form("Again?", {"type": "object", "properties": {}})}, work={}, step="loop")

    server.catalog = Catalog(tools={"loop": Tool("loop", "", forever)})
    client = client_for(server, max_rounds=3)
    with pytest.raises(ClientError, match="after 3 retries; the client stops at max_rounds=3"):
        client.call_tool("loop", {})
    assert len(sent(client, "tools/call")) == 4  # the call and three retries, as the official SDKs count


def test_the_in_process_lab_scenes_all_pass():
    scenes = lab_scenes()
    assert [(s.key, s.ok) for s in scenes] == [(key, True) for key, *_ in SCENES]
    assert [s.key for s in scenes] == ["modern", "legacy", "version", "one-char-changed"]
