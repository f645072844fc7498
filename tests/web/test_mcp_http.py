"""POST /mcp through the Flask test client: status codes, headers, auth, origins, limits, sessions.

Each test names where its expectation comes from: the 2026-07-28 Streamable HTTP transport
(spec), the 2025-11-25 session rules (legacy spec), or this app's own choices (app).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from app import create_app
from moves.engine import client_meta
from mrtr import FakeClock
from mrtr_toolsets.lesson import lesson_catalog

from .conftest import TEST_KEY
from .helpers import ACCEPT_BOTH, MODERN, post

CONFIRM = {"confirm": {"action": "accept", "content": {"confirm": True}}}


def rpc(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    request_id: Any = 1,
    meta: bool = True,
    caps: dict[str, Any] | None = None,
) -> dict[str, Any]:
    params = dict(params or {})
    if meta:
        params["_meta"] = client_meta(caps)
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def deploy(
    env: str = "staging",
    *,
    request_id: Any = 2,
    ticket: str | None = None,
    answers: dict[str, Any] | None = None,
    caps: dict[str, Any] | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "deploy", "arguments": {"env": env}}
    if answers is not None:
        params["inputResponses"] = answers
    if ticket is not None:
        params["requestState"] = ticket
    return rpc("tools/call", params, request_id=request_id, caps=caps)


def error_of(response) -> dict[str, Any]:
    body = response.get_json()
    assert body is not None, response.get_data(as_text=True)
    return body["error"]


# -- results ------------------------------------------------------------------------------------


def test_input_required_and_the_honest_retry_are_200(client):
    """Spec: every result, input_required included, is HTTP 200 with resultType."""
    first = post(client, deploy())
    assert first.status_code == 200 and first.mimetype == "application/json"
    result = first.get_json()["result"]
    assert result["resultType"] == "input_required"
    second = post(client, deploy(request_id=3, ticket=result["requestState"], answers=CONFIRM))
    assert second.status_code == 200
    assert second.get_json()["result"]["content"][0]["text"] == "deployed to staging"


def test_a_ticket_refusal_is_in_band_with_200(client):
    """Spec (SDK convention): a requestState failure is -32602 in a 200 response."""
    response = post(client, deploy(ticket="t1.not-a-ticket.sig", answers=CONFIRM))
    assert response.status_code == 200
    assert error_of(response)["code"] == -32602


def test_discover_lists_both_eras(client):
    response = post(client, rpc("server/discover"))
    assert response.status_code == 200
    assert response.get_json()["result"]["supportedVersions"] == [MODERN, "2025-11-25"]


def test_lesson_tool_list_has_no_fixtures_unless_asked(client):
    """App: the conformance fixtures appear only with MRTR_CONFORMANCE_FIXTURES."""
    names = [t["name"] for t in post(client, rpc("tools/list")).get_json()["result"]["tools"]]
    assert names == ["deploy", "provision", "release", "report", "connect"]  # the lessons' tools, no fixture


def test_a_notification_gets_202_and_no_body(client):
    """Spec: a notification POST is answered 202 Accepted."""
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "_meta": client_meta()},
    }
    response = post(client, message)
    assert response.status_code == 202 and response.get_data() == b""


def test_sse_only_clients_get_an_event_stream(client):
    """Spec: the server answers with JSON or SSE, as Accept allows."""
    response = post(client, rpc("tools/list"), Accept="text/event-stream")
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    data = [line[5:].strip() for line in response.get_data(as_text=True).splitlines() if line.startswith("data:")]
    assert json.loads(data[-1])["result"]["tools"][0]["name"] == "deploy"


# -- the core's error statuses ------------------------------------------------------------------


def test_missing_capability_is_400_with_32021(client):
    response = post(client, deploy(caps={}))
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == -32021 and error["data"]["requiredCapabilities"] == {"elicitation": {}}


def test_unsupported_version_is_400_with_32022(client):
    message = rpc("server/discover")
    message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01"
    response = post(client, message, **{"MCP-Protocol-Version": "1900-01-01"})
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == -32022 and error["data"]["requested"] == "1900-01-01"


def test_missing_meta_is_400(client):
    response = post(client, rpc("server/discover", meta=False))
    assert response.status_code == 400 and error_of(response)["code"] == -32602


@pytest.mark.parametrize("method", ["unknown/method", "initialize", "ping", "logging/setLevel"])
def test_unknown_and_removed_methods_are_404_with_32601(client, method):
    response = post(client, rpc(method))
    assert response.status_code == 404 and error_of(response)["code"] == -32601
    assert response.get_json()["id"] == 1


def test_invalid_json_is_400_with_32700(client):
    response = post(client, None, raw=b'{"jsonrpc": "2.0", ', **{"Mcp-Method": "tools/list"})
    assert response.status_code == 400 and error_of(response)["code"] == -32700


def test_batches_are_refused(client):
    response = post(client, [rpc("tools/list"), rpc("tools/list", request_id=2)])
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == -32600 and "batch" in error["message"]


# -- header checks (-32020) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"Mcp-Method": "prompts/list"},
        {"Mcp-Method": None},
        {"Mcp-Method": "TOOLS/CALL"},
        {"Mcp-Name": "Deploy"},
        {"Mcp-Name": None},
        {"Mcp-Name": "=?base64?ZGVwbG95?"},
        {"Mcp-Name": "=?base64?ZGVwbG9!?="},
        {"MCP-Protocol-Version": "2025-11-25"},
        {"MCP-Protocol-Version": None},
    ],
    ids=lambda e: f"{next(iter(e))}={next(iter(e.values()))}",
)
def test_headers_that_do_not_mirror_the_body_are_400_with_32020(client, extra):
    """Spec (SEP-2243): a missing or mismatched standard header is HeaderMismatch, HTTP 400."""
    response = post(client, deploy(request_id="r-7"), **extra)
    assert response.status_code == 400
    assert error_of(response)["code"] == -32020
    assert response.get_json()["id"] == "r-7"


@pytest.mark.parametrize(
    "extra",
    [
        {"mcp-method": "tools/call", "mcp-name": "deploy"},
        {"Mcp-Name": "  deploy  "},
        {"Mcp-Name": "=?base64?" + base64.b64encode(b"deploy").decode() + "?="},
    ],
    ids=["lowercase-names", "whitespace", "base64-sentinel"],
)
def test_header_names_any_case_whitespace_and_base64_are_accepted(client, extra):
    """Spec: names are case-insensitive, values exact after trimming, the sentinel form decoded."""
    response = post(client, deploy(), **extra)
    assert response.status_code == 200
    assert response.get_json()["result"]["resultType"] == "input_required"


# -- auth and origin ------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "nobody-token", ""])
def test_requests_without_a_valid_token_are_401(client, token):
    """Spec (authorization): 401 with a WWW-Authenticate Bearer challenge."""
    extra = {"Authorization": "Basic Ym9iOmJvYg=="} if token == "" else {}
    response = post(client, rpc("tools/list"), token=token, **extra)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")
    assert error_of(response)["code"] == -32600


def test_the_token_names_the_principal_the_ticket_binds(client):
    """App: alice's token cannot redeem bob's ticket (the principal check)."""
    ticket = post(client, deploy()).get_json()["result"]["requestState"]
    stolen = post(client, deploy(request_id=9, ticket=ticket, answers=CONFIRM), token="alice-token")
    assert stolen.status_code == 200 and error_of(stolen)["code"] == -32602


def test_configured_tokens_replace_the_defaults(clock):
    app = create_app(
        {
            "TESTING": True,
            "MRTR_SECRET_KEYS": TEST_KEY,
            "MRTR_STORE": "memory",
            "MRTR_CLOCK": clock,
            "MRTR_TOKENS": "s3cret=carol",
        }
    )
    client = app.test_client()
    assert post(client, rpc("tools/list"), token="bob-token").status_code == 401
    assert post(client, rpc("tools/list"), token="s3cret").status_code == 200


def test_the_anonymous_principal_is_opt_in_and_never_overrides_a_bad_token(clock):
    """App: MRTR_ANONYMOUS_PRINCIPAL serves requests that carry no Authorization at all."""
    app = create_app(
        {
            "TESTING": True,
            "MRTR_SECRET_KEYS": TEST_KEY,
            "MRTR_STORE": "memory",
            "MRTR_CLOCK": clock,
            "MRTR_ANONYMOUS_PRINCIPAL": "guest",
        }
    )
    client = app.test_client()
    assert post(client, rpc("tools/list"), token=None).status_code == 200
    assert post(client, rpc("tools/list"), token="forged").status_code == 401


@pytest.mark.parametrize(
    "origin,status",
    [
        ("http://evil.example.com", 403),
        ("null", 403),
        ("http://localhost.evil.example.com", 403),
        ("http://localhost", 200),
        ("http://localhost/", 200),
    ],
)
def test_origin_is_validated(client, origin, status):
    """Spec: servers MUST validate Origin; the app's own loopback origin is allowed."""
    response = post(client, rpc("tools/list"), Origin=origin)
    assert response.status_code == status
    if status == 403:
        assert error_of(response)["code"] == -32600


def test_configured_origins_are_allowed(clock):
    app = create_app(
        {
            "TESTING": True,
            "MRTR_SECRET_KEYS": TEST_KEY,
            "MRTR_STORE": "memory",
            "MRTR_CLOCK": clock,
            "MRTR_ALLOWED_ORIGINS": "https://lab.example.org",
        }
    )
    client = app.test_client()
    assert post(client, rpc("tools/list"), Origin="https://lab.example.org").status_code == 200
    assert post(client, rpc("tools/list"), Origin="https://other.example.org").status_code == 403


# -- framing and limits ---------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
def test_get_and_delete_on_modern_traffic_are_405(client, verb):
    response = client.open("/mcp", method=verb, headers={"Authorization": "Bearer bob-token"})
    assert response.status_code == 405
    assert "POST" in response.headers["Allow"]


def test_accept_without_json_or_sse_is_406(client):
    response = post(client, rpc("tools/list"), Accept="text/html")
    assert response.status_code == 406 and error_of(response)["code"] == -32600


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_a_wrong_content_type_is_415(client, content_type):
    response = post(client, rpc("tools/list"), content_type=content_type)
    assert response.status_code == 415 and "application/json" in error_of(response)["message"]


def test_a_body_over_the_limit_is_413_with_a_json_rpc_error(clock):
    app = create_app(
        {
            "TESTING": True,
            "MRTR_SECRET_KEYS": TEST_KEY,
            "MRTR_STORE": "memory",
            "MRTR_CLOCK": clock,
            "MRTR_MAX_BODY": "2048",
        }
    )
    client = app.test_client()
    message = deploy()
    message["params"]["arguments"]["env"] = "x" * 4096
    response = post(client, message)
    assert response.status_code == 413
    assert error_of(response)["code"] == -32600 and "2048" in error_of(response)["message"]


# -- 2025-11-25 sessions --------------------------------------------------------------------------

LEGACY_HEADERS = {"Accept": ACCEPT_BOTH, "Authorization": "Bearer bob-token", "MCP-Protocol-Version": "2025-11-25"}


def legacy_post(
    client: FlaskClient, message: dict[str, Any], sid: str | None = None, token: str = "bob-token", **kwargs: Any
):
    headers = {**LEGACY_HEADERS, "Authorization": f"Bearer {token}"}
    if sid:
        headers["Mcp-Session-Id"] = sid
    return client.post("/mcp", json=message, headers=headers, **kwargs)


def open_session(client: FlaskClient, token: str = "bob-token") -> str:
    response = legacy_post(
        client,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        token=token,
    )
    assert response.status_code == 200
    assert "resultType" not in response.get_json()["result"]
    sid = response.headers["Mcp-Session-Id"]
    assert len(sid) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in sid)
    done = legacy_post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, token=token)
    assert done.status_code == 202
    return sid


def sse_messages(chunks) -> list[dict[str, Any]]:
    out = []
    for chunk in chunks:
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        out.extend(json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:"))
    return out


def legacy_deploy(client: FlaskClient, sid: str, answer: dict[str, Any] | None):
    """tools/call deploy on a session: read the elicitation off the stream, answer it, read the end."""
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"env": "prod"}},
    }
    response = legacy_post(client, call, sid, buffered=False)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    stream = response.response
    [asked] = sse_messages([next(iter(stream))])
    assert asked["method"] == "elicitation/create" and asked["params"]["message"] == "Deploy to prod?"
    if answer is None:
        return asked, stream
    ack = legacy_post(client, {"jsonrpc": "2.0", "id": asked["id"], "result": answer}, sid)
    assert ack.status_code == 202
    final = sse_messages(stream)
    response.close()
    return asked, final


def test_a_legacy_session_deploys_through_the_shim(client):
    """Legacy spec + app: initialize, elicitation/create on the call's stream, the answer, the result."""
    sid = open_session(client)
    _, final = legacy_deploy(client, sid, {"action": "accept", "content": {"confirm": True}})
    assert final == [
        {
            "jsonrpc": "2.0",
            "id": 5,
            "result": {"content": [{"type": "text", "text": "deployed to prod"}], "isError": False},
        }
    ]


def test_a_legacy_decline_deploys_nothing(client):
    sid = open_session(client)
    _, final = legacy_deploy(client, sid, {"action": "decline"})
    assert "nothing was deployed" in final[-1]["result"]["content"][0]["text"]


def test_delete_ends_the_session_and_later_requests_get_404(client):
    """Legacy spec: DELETE ends the session; a terminated session answers 404."""
    sid = open_session(client)
    assert client.delete("/mcp", headers={**LEGACY_HEADERS, "Mcp-Session-Id": sid}).status_code == 204
    again = legacy_post(client, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
    assert again.status_code == 404 and error_of(again)["code"] == -32600
    assert client.delete("/mcp", headers={**LEGACY_HEADERS, "Mcp-Session-Id": sid}).status_code == 404


def test_a_session_belongs_to_the_principal_that_opened_it(client):
    """App: another principal cannot use (or end) bob's session."""
    sid = open_session(client)
    assert (
        legacy_post(client, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid, token="alice-token").status_code
        == 404
    )
    assert (
        client.delete(
            "/mcp", headers={**LEGACY_HEADERS, "Authorization": "Bearer alice-token", "Mcp-Session-Id": sid}
        ).status_code
        == 404
    )
    assert legacy_post(client, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, sid).status_code == 200


def test_legacy_traffic_without_a_session_is_400_and_says_why(client):
    response = legacy_post(client, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert response.status_code == 400
    assert "initialize" in error_of(response)["message"] and response.get_json()["id"] == 2


def test_a_non_legacy_version_header_is_served_as_modern_even_with_a_session(client):
    """Spec: a modern request ignores Mcp-Session-Id. Without _meta it is malformed (-32602); with
    _meta, its headers do not mirror the body (-32020). A legacy session would have listed tools."""
    sid = open_session(client)
    headers = {**LEGACY_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "1999-01-01"}
    response = client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers)
    assert response.status_code == 400 and error_of(response)["code"] == -32602
    response = client.post("/mcp", json=rpc("tools/list", request_id=3), headers=headers)
    assert response.status_code == 400 and error_of(response)["code"] == -32020


@pytest.fixture
def impatient_client(clock: FakeClock):
    """A client of an app whose legacy streams wait only 10 ms for the client's answer."""
    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory", "MRTR_CLOCK": clock,
                      "MRTR_SHIM_WAIT": "0.01"})
    return app.test_client()


def test_an_unanswered_shim_round_ends_when_the_core_expires_it(clock, impatient_client):
    """App: the stream waits a bounded time, then Connection.expire() gives the round up."""
    client = impatient_client
    sid = open_session(client)
    _, stream = legacy_deploy(client, sid, None)
    clock.advance(301)  # past the core's shim round deadline
    final = sse_messages(stream)
    assert final[-1]["id"] == 5
    assert "did not answer in time" in final[-1]["result"]["content"][0]["text"]


def test_an_unanswered_shim_round_ends_even_if_the_core_clock_stands_still(impatient_client):
    client = impatient_client
    sid = open_session(client)
    asked, stream = legacy_deploy(client, sid, None)
    final = sse_messages(stream)
    assert final[-1]["id"] == 5 and "did not answer" in final[-1]["error"]["message"]
    late = legacy_post(
        client, {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": True}}}, sid
    )
    assert late.status_code == 202  # the round was cancelled: the late answer changes nothing


# -- nothing a client sends is a 500 --------------------------------------------------------------

MALFORMED_BODIES = [
    b"",
    b" ",
    b"{",
    b"null",
    b"true",
    b"1",
    b'"x"',
    b"[]",
    b"[1]",
    b"{}",
    b'{"jsonrpc":"2.0"}',
    b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}',
    b"[" * 5000 + b"]" * 5000,
    b'{"a":' * 100 + b"1" + b"}" * 100,
    b"\xff\xfe\x00",
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list","x":NaN}',
    b'{"jsonrpc":"2.0","id":1e999,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":1,"method":5}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[]}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":'
    b'"2026-07-28","io.modelcontextprotocol/clientCapabilities":"all"},"name":"deploy"}}',
    b'{"jsonrpc":"2.0","id":1,"result":{}}',
    b'{"jsonrpc":"2.0","id":{"x":1},"error":5}',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,"capabilities":[]}}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":[]}}',
]

MODERN_DEPLOY_VARIANTS: list[dict[str, Any]] = [
    {"name": 5},
    {"name": "deploy", "arguments": []},
    {"name": "deploy", "arguments": {"env": 7}},
    {"name": "deploy", "arguments": {"env": "x" * 5000}},
    {"name": "nope"},
    {"name": "deploy", "arguments": {"env": "prod"}, "inputResponses": []},
    {"name": "deploy", "arguments": {"env": "prod"}, "inputResponses": None, "requestState": 5},
    {
        "name": "deploy",
        "arguments": {"env": "prod"},
        "inputResponses": {"confirm": 7},
        "requestState": "t1." + "A" * 9000,
    },
    {
        "name": "deploy",
        "arguments": {"env": "prod"},
        "inputResponses": {"confirm": {"action": "accept"}},
        "requestState": "s1.AAAA",
    },
]

ODD_HEADERS = [
    {"Mcp-Name": "=?base64?????=", "Mcp-Method": "=?base64?=?="},
    {"Mcp-Session-Id": "not-a-session"},
    {"Mcp-Session-Id": "x" * 5000},
    {"MCP-Protocol-Version": "\t"},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer  "},
    {"Origin": "http://[::1"},
    {"Origin": "::::"},
    {"Accept": "*/*;q=abc"},
    {"Accept": ",,,"},
    {"Mcp-Param-Region": "=?base64?x?="},
]


def assert_clean(response) -> None:
    assert response.status_code < 500, response.get_data(as_text=True)
    text = response.get_data(as_text=True)
    assert "Traceback" not in text
    if response.mimetype == "application/json" and text:
        body = json.loads(text)
        assert body["jsonrpc"] == "2.0" and ("error" in body or "result" in body)


@pytest.mark.parametrize("body", MALFORMED_BODIES, ids=range(len(MALFORMED_BODIES)))
@pytest.mark.parametrize("version", [MODERN, "2025-11-25"])
def test_no_malformed_body_is_a_500(client, body, version):
    response = client.post(
        "/mcp",
        data=body,
        content_type="application/json",
        headers={
            "Accept": ACCEPT_BOTH,
            "Authorization": "Bearer bob-token",
            "MCP-Protocol-Version": version,
            "Mcp-Method": "tools/list",
        },
    )
    assert_clean(response)
    assert response.status_code in (200, 202, 400, 404)


@pytest.mark.parametrize("params", MODERN_DEPLOY_VARIANTS, ids=range(len(MODERN_DEPLOY_VARIANTS)))
def test_no_malformed_tool_call_is_a_500(client, params):
    response = post(client, rpc("tools/call", params))
    assert_clean(response)
    assert response.status_code in (200, 400)


@pytest.mark.parametrize("extra", ODD_HEADERS, ids=range(len(ODD_HEADERS)))
def test_no_odd_header_is_a_500(client, extra):
    assert_clean(post(client, deploy(), **extra))
    assert_clean(client.delete("/mcp", headers={"Authorization": "Bearer bob-token", **extra}))


def test_no_garbage_in_a_live_session_is_a_500(client):
    sid = open_session(client)
    for body in MALFORMED_BODIES:
        response = client.post(
            "/mcp", data=body, content_type="application/json", headers={**LEGACY_HEADERS, "Mcp-Session-Id": sid}
        )
        assert_clean(response)


def test_idle_legacy_sessions_are_ended_and_a_full_table_ends_no_one_elses():
    """App-defined: sessions live in memory, so idle ones are ended and their number is capped;
    a full table refuses a newcomer rather than end another principal's session."""
    from mrtr import KeyRing, MemoryStore, Server
    from web.mcp.sessions import Sessions, SessionsFull

    now = [0.0]
    sessions = Sessions(limit=2, idle_timeout=60, clock=lambda: now[0])
    server = Server(ring=KeyRing([TEST_KEY]), store=MemoryStore(), clock=FakeClock(), catalog=lesson_catalog())
    first = sessions.open("bob", server.connect("bob"))
    now[0] = 30
    assert sessions.get(first.sid, "bob") is first  # use keeps it alive
    second = sessions.open("bob", server.connect("bob"))
    with pytest.raises(SessionsFull):
        sessions.open("alice", server.connect("alice"))
    assert sessions.get(first.sid, "bob") is first and sessions.get(second.sid, "bob") is second
    third = sessions.open("bob", server.connect("bob"))  # bob makes room from his own: the least recently used
    assert sessions.get(first.sid, "bob") is None and len(sessions) == 2
    now[0] = 30 + 61
    assert sessions.get(second.sid, "bob") is None and sessions.get(third.sid, "bob") is None
    assert len(sessions) == 0
