"""Hardening through HTTP: security headers on every route and every status, and the size, depth,
ticket-length and shim-round limits as a client meets them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from loopback.loadgen import ACCEPT, deploy_request, flow_headers
from mrtr.protocol import MAX_JSON_DEPTH
from mrtr.tickets import MAX_TICKET_LENGTH
from web.site import security
from web.site.content import get_content

H = flow_headers("bob-token")
LEGACY = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
          "Authorization": "Bearer bob-token"}


#: Blueprints whose every route may be framed (by `security.allow_framing_by`); all others refuse.
FRAMABLE_BLUEPRINTS = ("embed.",)


def sample_requests(app: Flask) -> list[tuple[str, str, dict[str, Any], bool]]:
    """Every rule of the URL map with every method it serves, plus error statuses and htmx variants.

    Rule variables are filled from the course where the name is known; other names get a
    placeholder (a 404 still has to carry the headers). New routes are covered without edits here.
    """
    with app.app_context():
        lesson = get_content().lessons[0]
    known = {
        "slug": lesson.slug,
        "qid": lesson.questions[0].id,
        "section_id": next(s.id for s in lesson.sections if s.widget and s.widget not in ("playground", "quiz")),
        "filename": "css/site.css",
    }
    mcp = json.dumps(deploy_request(1, "staging"))
    out: list[tuple[str, str, dict[str, Any], bool]] = []
    for rule in app.url_map.iter_rules():
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", lambda m: known.get(m.group(1), "1"), rule.rule)
        framable = rule.endpoint.startswith(FRAMABLE_BLUEPRINTS)
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            kwargs: dict[str, Any] = {"data": mcp, "headers": H} if rule.endpoint == "mcp.endpoint" else {}
            out.append((method, path, kwargs, framable))
            out.append((method, path, {**kwargs, "headers": {**kwargs.get("headers", {}), "HX-Request": "true"}},
                        framable))
    out += [(method, path, kwargs, False) for method, path, kwargs in [
        ("POST", "/playground/moves/honest", {"data": {}}),
        ("POST", "/playground/moves/no-such-move", {"data": {}}),
        ("POST", "/playground/custom", {"data": {"arguments": "{}", "token_choice": "bob-token"}}),
        ("GET", "/playground?sealed=banana", {}),
        ("GET", "/static/vendor/htmx-2.0.11.min.js", {}),
        ("POST", "/mcp", {"data": mcp, "headers": {**H, "Authorization": "Bearer nobody"}}),
        ("POST", "/mcp", {"data": "x" * (300 * 1024), "headers": H}),
        ("PUT", "/mcp", {"headers": H}),
        ("GET", "/no/such/page", {}),
        ("POST", "/", {}),
    ]]
    return out


def assert_security_headers(headers: Any, *, framable: bool = False) -> None:
    csp = headers.get("Content-Security-Policy", "")
    directives = dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";") if d.strip())
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp, csp
    assert directives.get("default-src") == "'self'", csp
    assert directives.get("script-src") == "'self'", csp
    assert directives.get("object-src") == "'none'", csp
    assert directives.get("base-uri") == "'none'", csp
    if framable:
        assert directives["frame-ancestors"].startswith("'self'"), csp
        assert "X-Frame-Options" not in headers
    else:
        assert directives.get("frame-ancestors") == "'none'", csp
        assert headers.get("X-Frame-Options") == "DENY"
    assert headers.get("X-Content-Type-Options") == "nosniff"
    assert headers.get("Referrer-Policy") == "no-referrer"


def test_security_headers_on_every_route_and_status(app: Flask, client: FlaskClient) -> None:
    statuses = set()
    for method, path, kwargs, framable in sample_requests(app):
        response = client.open(path, method=method, **kwargs)
        response.close()  # static files stream from an open file
        statuses.add(response.status_code)
        assert response.status_code < 500, (method, path, response.status_code)
        assert_security_headers(response.headers, framable=framable and response.status_code < 400)
    assert {200, 400, 401, 404, 405, 413} <= statuses, statuses


def test_security_headers_on_an_unhandled_error() -> None:
    app = create_app({"TESTING": False, "MRTR_SECRET_KEYS": "k" * 40, "MRTR_STORE": "memory"})

    @app.get("/__boom")
    def boom() -> str:
        raise RuntimeError("a bug")

    response = app.test_client().get("/__boom")
    assert response.status_code == 500
    assert b"a bug" not in response.data
    assert_security_headers(response.headers)


def test_frame_ancestors_is_per_route_and_only_takes_well_formed_origins() -> None:
    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": "k" * 40, "MRTR_STORE": "memory"})

    @app.get("/__embed")
    def embed() -> str:
        security.allow_framing_by(["https://course.example", "https://*.school.example:8443/",
                                   "https://evil.example; script-src *", "'unsafe-inline'", "javascript:x",
                                   "https://a.example https://b.example"])
        return "embedded"

    client = app.test_client()
    framed = client.get("/__embed")
    assert_security_headers(framed.headers, framable=True)
    csp = framed.headers["Content-Security-Policy"]
    assert csp.endswith("frame-ancestors 'self' https://course.example https://*.school.example:8443")
    assert csp.count("script-src") == 1 and "evil" not in csp and "b.example" not in csp
    # the next request, on another route, is not framable: the allowance lived in that request only
    assert_security_headers(client.get("/").headers)


# -- limits ----------------------------------------------------------------------------------------


def post(client: FlaskClient, message: Any, headers: dict[str, str] = H) -> tuple[int, dict[str, Any]]:
    body = message if isinstance(message, str | bytes) else json.dumps(message)
    response = client.post("/mcp", data=body, headers=headers)
    return response.status_code, response.get_json()


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_body_size_limit_is_enforced_before_parsing(app: Flask, client: FlaskClient) -> None:
    limit = app.config["MAX_CONTENT_LENGTH"]
    message = deploy_request(1, "staging")
    message["params"]["arguments"]["padding"] = "x" * limit
    status, reply = post(client, message)
    assert status == 413
    assert reply["error"]["code"] == -32600
    # just under the limit is parsed normally (and refused for its content, not its size)
    message["params"]["arguments"]["padding"] = "x" * (limit - 1000)
    status, reply = post(client, message)
    assert status != 413


def test_json_depth_limit(client: FlaskClient) -> None:
    ok = deploy_request(1, "staging")
    ok["params"]["arguments"]["deep"] = nested(MAX_JSON_DEPTH - 5)
    status, reply = post(client, ok)
    assert status == 200 and "result" in reply
    deep = deploy_request(2, "staging")
    deep["params"]["arguments"]["deep"] = nested(MAX_JSON_DEPTH + 5)
    status, reply = post(client, deep)
    assert status == 400 and reply["error"]["code"] == -32600 and reply["id"] == 2
    for bomb in ("[" * 100_000, '{"a":' * 50_000):
        status, reply = post(client, bomb)
        assert status == 400 and reply["error"]["code"] == -32700


def test_ticket_length_limit(client: FlaskClient) -> None:
    status, reply = post(client, deploy_request(1, "staging"))
    ticket = reply["result"]["requestState"]
    for state in (ticket + "A" * (MAX_TICKET_LENGTH + 1 - len(ticket)), "t1." + "A" * 100_000):
        message = deploy_request(2, "staging")
        message["params"].update(requestState=state, inputResponses={"confirm": ACCEPT})
        status, reply = post(client, message)
        assert status == 200
        assert reply["error"]["code"] == -32602
    # the real ticket still works: the refusals spent nothing
    message = deploy_request(3, "staging")
    message["params"].update(requestState=ticket, inputResponses={"confirm": ACCEPT})
    status, reply = post(client, message)
    assert reply["result"]["content"][0]["text"] == "deployed to staging"


def sse_messages(response: Any, limit: int) -> Any:
    """Yield JSON-RPC messages from a streamed SSE response, at most `limit` of them."""
    buffer = b""
    count = 0
    for chunk in response.response:
        buffer += chunk if isinstance(chunk, bytes) else chunk.encode()
        while b"\n\n" in buffer and count < limit:
            event, buffer = buffer.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    count += 1
                    yield json.loads(line[5:])
        if count >= limit:
            return


def test_shim_ends_a_call_whose_answer_does_not_fit_with_a_clear_error(app: Flask, client: FlaskClient) -> None:
    """A 2025-11-25 client that gives a useless answer is not asked forever: the answer rule (a malformed answer
    gets an error of its own, never the frozen ticket refusal) ends the call at once. The shim's round limit for
    tools that keep asking is tested in tests/mrtr/test_legacy.py."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                       "clientInfo": {"name": "stubborn", "version": "1"}}}
    response = client.post("/mcp", data=json.dumps(init), headers=LEGACY)
    sid = response.headers["Mcp-Session-Id"]
    session = {**LEGACY, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    client.post("/mcp", data=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers=session)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "deploy", "arguments": {"env": "x"}}}
    stream = client.post("/mcp", data=json.dumps(call), headers=session, buffered=False)
    asked = 0
    final = None
    for message in sse_messages(stream, limit=5):
        if "method" in message:  # a server request: answer it uselessly (accept without the box)
            asked += 1
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": {}}}
            assert client.post("/mcp", data=json.dumps(answer), headers=session).status_code in (200, 202)
        else:
            final = message
            break
    stream.close()
    assert final is not None and final["id"] == 2 and asked == 1
    assert final["error"]["message"] != "Invalid or expired requestState"
    assert "missing the required field 'confirm'" in final["error"]["message"]


@pytest.mark.parametrize("size", [1, 64 * 1024])
def test_form_posts_are_bounded_too(client: FlaskClient, app: Flask, size: int) -> None:
    big = "x" * (app.config["MAX_CONTENT_LENGTH"] + size)
    for path in ("/playground/custom", "/playground/moves/honest"):
        response = client.post(path, data={"arguments": big})
        assert response.status_code == 413
        assert_security_headers(response.headers)
