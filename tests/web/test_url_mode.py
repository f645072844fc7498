"""URL-mode elicitation end to end on /mcp: `connect` sends the user to the lab's own page for the API key, and the
retry completes only when the server's completion store says that page was finished, whatever the client says.
The key never comes back: not on the page, not in the log, not over MCP."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from flask.testing import FlaskClient

from mrtr import FakeClock
from mrtr_stores.completions import MAX_PER_OWNER, TTL

from .helpers import post
from .test_mcp_http import rpc

URL_CAPS = {"elicitation": {"form": {}, "url": {}}}
KEY = "sk-lab-5f3a9c0e77d2"


def call(client: FlaskClient, n: int, answers: dict[str, Any] | None = None, ticket: str | None = None,
         caps: dict[str, Any] | None = None) -> Any:
    params: dict[str, Any] = {"name": "connect", "arguments": {"service": "billing"}}
    if answers is not None:
        params["inputResponses"] = answers
    if ticket is not None:
        params["requestState"] = ticket
    return post(client, rpc("tools/call", params, request_id=n, caps=caps or URL_CAPS))


def page_path(result: dict[str, Any]) -> str:
    question = result["inputRequests"]["key"]
    assert question["method"] == "elicitation/create" and question["params"]["mode"] == "url"
    assert "elicitationId" not in question["params"] and "requestedSchema" not in question["params"]
    url = question["params"]["url"]
    assert url.startswith("http://127.0.0.1:5000/out-of-band/")
    return url.removeprefix("http://127.0.0.1:5000")


ACCEPT = {"key": {"action": "accept"}}


def test_accept_before_the_page_is_finished_asks_again_then_the_page_completes_the_call(
        client: FlaskClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    first = call(client, 1).get_json()["result"]
    path = page_path(first)
    early = call(client, 2, ACCEPT, first["requestState"]).get_json()["result"]
    assert early["resultType"] == "input_required" and page_path(early) == path  # "accept" is consent, not done
    assert early["requestState"] != first["requestState"]
    form = client.get(path)
    assert form.status_code == 200 and 'type="password"' in form.text
    assert form.headers["Cache-Control"] == "no-store" and form.headers["Referrer-Policy"] == "no-referrer"
    refused = client.post(path, data={"key": "short"})
    field = refused.text.split('id="oob-key"')[1].split(">")[0]
    assert refused.status_code == 422 and "8 to 200 characters" in refused.text and "value=" not in field
    sent = client.post(path, data={"key": KEY})
    assert sent.status_code == 200 and "The lab has the key" in sent.text and KEY not in sent.text
    done = call(client, 3, ACCEPT, early["requestState"])
    text = done.get_json()["result"]["content"][0]["text"]
    assert done.get_json()["result"].get("isError") is False and text.startswith("connected billing")
    assert KEY not in done.text and KEY not in caplog.text and KEY not in client.get(path).text


def test_a_form_only_client_is_told_url_mode_is_required(client: FlaskClient) -> None:
    response = call(client, 1, caps={"elicitation": {}})
    assert response.status_code == 400  # spec: -32021 on HTTP is 400
    error = response.get_json()["error"]
    assert error["code"] == -32021 and error["data"]["requiredCapabilities"] == {"elicitation": {"url": {}}}


def test_decline_ends_the_call_and_a_page_nobody_opened_is_refused(client: FlaskClient) -> None:
    first = call(client, 1).get_json()["result"]
    declined = call(client, 2, {"key": {"action": "decline"}}, first["requestState"]).get_json()["result"]
    assert declined["isError"] is False and "nothing was connected" in declined["content"][0]["text"]
    made_up = "/out-of-band/" + "A" * 22
    assert client.get(made_up).status_code == 404
    assert client.post(made_up, data={"key": KEY}).status_code == 404
    assert client.get("/out-of-band/" + "x" * 3000).status_code == 404


def test_an_expired_page_gets_a_new_one_on_the_retry(client: FlaskClient, clock: FakeClock) -> None:
    first = call(client, 1).get_json()["result"]
    path = page_path(first)
    clock.advance(TTL + 1)
    assert client.post(path, data={"key": KEY}).status_code == 404
    # The ticket itself has expired too by now: the retry is refused with the frozen ticket error.
    late = call(client, 2, ACCEPT, first["requestState"]).get_json()
    assert late["error"]["code"] == -32602


def test_the_stdio_server_serves_connect_with_links_to_the_public_url(tmp_path: Any) -> None:
    from moves.engine import client_meta
    from mrtr_cli.stdio_server import server_from_env
    from tests.conftest import TEST_KEY

    server = server_from_env({"MRTR_STATE_DIR": str(tmp_path), "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory",
                              "MRTR_PUBLIC_URL": "https://lab.example.org/"})
    conn = server.connect("bob", channel=True)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "connect", "arguments": {"service": "billing"}, "_meta": client_meta(URL_CAPS)}}
    result = conn.receive(call).messages[-1]["result"]
    assert result["inputRequests"]["key"]["params"]["url"].startswith("https://lab.example.org/out-of-band/")


def test_the_checker_plays_connect_and_fails_no_move_of_the_sound_lab_server(app: Any) -> None:
    """Each move either holds, or is not run with the reason (the checker cannot finish a URL-mode page): the
    ticket moves (tampered, late, junk, ...) are still played and refused, and nothing is a failure without evidence."""
    from moves.engine import Call, play
    from moves.target import Outcome
    from web.site.content import get_content
    from web.site.services import get_services

    call = Call(tool="connect", arguments={"service": "billing"}, other_arguments={"service": "payments"},
                capabilities=URL_CAPS)
    with app.test_request_context():
        played = {m.slug: play(m, get_services().new_lab_target(now=1_790_000_000.0), call)
                  for m in get_content().moves}
    assert all(r.ok or r.outcome == Outcome.NOT_RUN for r in played.values()), {
        s: r.detail for s, r in played.items() if not r.ok and r.outcome != Outcome.NOT_RUN}
    assert "url-mode elicitation" in played["honest"].detail and played["honest"].outcome == Outcome.NOT_RUN
    assert played["tampered"].ok and played["tampered"].outcome == Outcome.REFUSED
    assert sum(r.ok for r in played.values()) >= 6


@pytest.mark.parametrize("value", ["ftp://lab.example.org", "lab.example.org", "https://lab example.org"])
def test_a_public_url_that_is_no_web_address_is_refused_at_start_up(value: str) -> None:
    from mrtr_settings.environment import ConfigError, read_settings

    with pytest.raises(ConfigError, match="MRTR_PUBLIC_URL must be an http:// or https:// address"):
        read_settings({"MRTR_PUBLIC_URL": value})
    assert read_settings({"MRTR_PUBLIC_URL": "https://lab.example.org/"}).public_url == "https://lab.example.org"


def test_a_2025_client_is_asked_in_url_mode_with_the_elicitation_id_its_version_requires(client: FlaskClient) -> None:
    """2025-11-25 URL mode needs an elicitationId (2026-07-28 has none): the legacy shim gives the server request
    one, and the page's completion still decides, whatever the answer says."""
    from mrtr import FakeClock, KeyRing, MemoryStore, Server
    from mrtr_stores.completions import MemoryCompletions
    from mrtr_toolsets.lesson import Pages, lesson_catalog
    from tests.conftest import TEST_KEY

    completions = MemoryCompletions()
    server = Server(ring=KeyRing([TEST_KEY]), store=MemoryStore(), clock=FakeClock(),
                    catalog=lesson_catalog(Pages(completions, lambda ref: f"https://lab.example.org/out-of-band/{ref}")))
    conn = server.connect("bob", channel=True)
    conn.receive({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": URL_CAPS, "clientInfo": {"name": "t", "version": "1"}}})
    conn.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    [asked] = conn.receive({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "connect", "arguments": {"service": "billing"}}}).messages
    params = asked["params"]
    assert params["mode"] == "url" and params["elicitationId"] == str(asked["id"])
    ref = params["url"].rsplit("/", 1)[-1]
    assert completions.complete(ref, FakeClock()())
    done = conn.receive({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})
    assert done.response["result"]["content"][0]["text"].startswith("connected billing")


def test_a_store_that_is_away_is_a_503_page_that_says_try_again(app: Any, client: FlaskClient) -> None:
    from mrtr import StoreUnavailable

    class Away:
        def __getattr__(self, name: str) -> Any:
            def refuse(*args: Any) -> None:
                raise StoreUnavailable("the completion store is away")
            return refuse

    app.extensions["mrtr"].completions = Away()
    path = "/out-of-band/" + "A" * 22
    for response in (client.get(path), client.post(path, data={"key": KEY})):
        assert response.status_code == 503 and "try again shortly" in response.text and KEY not in response.text


def test_one_token_holders_flood_of_connect_calls_leaves_another_principals_page_open(client: FlaskClient) -> None:
    """The completion store caps each principal apart (MAX_PER_OWNER; tests/stores holds the caps themselves): here,
    that `connect` opens each page for its caller, so alice's flood past her cap forgets only alice's pages."""
    victim = call(client, 1).get_json()["result"]  # bob's
    path = page_path(victim)
    for n in range(MAX_PER_OWNER + 5):
        assert post(client, rpc("tools/call", {"name": "connect", "arguments": {"service": "billing"}},
                                request_id=100 + n, caps=URL_CAPS), "alice-token").status_code == 200
    assert client.get(path).status_code == 200  # bob's page still waits for his key
