"""Thousands of malformed and hostile requests against /mcp and every page route: never a 5xx,
always the security headers, a clear message when refused, no markup reflected unescaped, and the
server still serves an honest flow afterwards.

The corpus (tests/corpus) goes through Flask's test client in full, and a shorter pass goes over
real HTTP to the app under its production server, together with malformed HTTP that only a socket can send. The
page part is generated from the app's URL map and web.site.inputs.FIELDS (tests/corpus/page_samples.py): each
route x each field its view reads x each hostile value.
"""

from __future__ import annotations

import http.client
import json
import socket
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from flask import Flask
from flask.testing import FlaskClient

from loopback.launchers import Served, production_app
from loopback.loadgen import ACCEPT, Conn, deploy_request, flow_headers, json_body
from tests.corpus.hostile import PAGE_VALUES, Case, corpus, page_cases
from tests.corpus.page_samples import SPEC_5XX, custom_form, page_failure, page_routes
from web.site.content import get_content

ROOT = Path(__file__).resolve().parents[2]
MOVE_SLUGS = [m["slug"] for m in tomllib.loads((ROOT / "moves" / "moves.toml").read_text())["moves"]]
MIN_CASES = 200
MIN_PAGE_CASES = 2000
def quiz_paths(app: Flask) -> list[str]:
    with app.app_context():
        return [f"/quiz/{lesson.slug}/{q.id}/answer" for lesson in get_content().lessons for q in lesson.questions]


def mint_via_client(client: FlaskClient) -> str:
    reply = client.post("/mcp", data=json.dumps(deploy_request(1, "staging")), headers=flow_headers("bob-token"))
    return reply.get_json()["result"]["requestState"]


def honest_flow_via_client(client: FlaskClient) -> str:
    headers = flow_headers("bob-token")
    first = deploy_request(10, "staging")
    result = client.post("/mcp", data=json.dumps(first), headers=headers).get_json()["result"]
    first["params"].update(inputResponses={k: ACCEPT for k in result["inputRequests"]},
                           requestState=result["requestState"])
    done = client.post("/mcp", data=json.dumps(first), headers=headers).get_json()
    return done["result"]["content"][0]["text"]


def test_the_corpus_is_big_and_names_are_unique(app: Flask) -> None:
    cases = corpus("t1.x.y", quiz_paths=quiz_paths(app), move_slugs=MOVE_SLUGS)
    assert len(cases) >= MIN_CASES
    assert len({c.name for c in cases}) == len(cases)


def test_hostile_corpus_through_the_test_client(app: Flask, client: FlaskClient) -> None:
    cases = corpus(mint_via_client(client), quiz_paths=quiz_paths(app), move_slugs=MOVE_SLUGS)
    failures: list[str] = []
    for case in cases:
        body, headers = case.encoded()
        try:
            response = client.open(case.path, method=case.method, data=body, headers=headers)
            response.close()
        except Exception as exc:  # noqa: BLE001 - an exception escaping the app is exactly what we hunt
            failures.append(f"{case.name}: raised {type(exc).__name__}: {exc}")
            continue
        if response.status_code >= 500:
            failures.append(f"{case.name}: HTTP {response.status_code}")
        elif "frame-ancestors" not in response.headers.get("Content-Security-Policy", "") or \
                response.headers.get("X-Content-Type-Options") != "nosniff":
            failures.append(f"{case.name}: security headers missing")
        elif case.path == "/mcp" and response.mimetype == "application/json" and response.status_code != 202:
            reply = response.get_json(silent=True)
            if not isinstance(reply, dict) or reply.get("jsonrpc") != "2.0":
                failures.append(f"{case.name}: not a JSON-RPC reply: {response.data[:80]!r}")
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(failures[:40])
    assert honest_flow_via_client(client) == "deployed to staging"


# -- every page route --------------------------------------------------------------------------------


def honest_pages_via_client(client: FlaskClient) -> None:
    form = custom_form(client)
    page = BeautifulSoup(client.post("/playground/custom", data=form).data, "html.parser")
    verdict = page.select_one("[data-verdict]")
    assert verdict is not None and verdict["data-verdict"] == "completed"
    assert client.get("/").status_code == 200


def test_the_page_corpus_covers_every_route_and_field(app: Flask, client: FlaskClient) -> None:
    routes = page_routes(app, client)
    cases = page_cases(routes)
    assert len(cases) >= MIN_PAGE_CASES
    assert len({c.name for c in cases}) == len(cases)
    endpoints = {r.endpoint for r in routes}
    assert {"playground.play_custom_move", "quiz.answer", "embed.answer", "embed.oembed", "demo.deck"} <= endpoints
    custom = next(r for r in routes if r.endpoint == "playground.play_custom_move")
    assert {"ticket", "arguments", "token_choice", "token_other", "at", "answer", "answer_raw", "minted_at",
            "single_use", "sealed", "no_signature", "offset"} <= set(custom.fields)
    assert custom.base["ticket"].startswith("t1.")


#: The page corpus is played in this many shards, each case in one of them, so the fast tier's workers share it
#: (played whole, it was the suite's longest test by far, and one worker ran it while the other sat idle).
PAGE_SHARDS = 4


@pytest.mark.parametrize("shard", range(PAGE_SHARDS))
def test_page_corpus_through_the_test_client(app: Flask, client: FlaskClient, shard: int) -> None:
    cases = page_cases(page_routes(app, client))[shard::PAGE_SHARDS]
    failures: list[str] = []
    refused = 0
    for case in cases:
        body, headers = case.encoded()
        try:
            response = client.open(case.path, method=case.method, data=body, headers=headers)
            status, content_type, data = response.status_code, response.content_type or "", response.data
            response.close()
        except Exception as exc:  # noqa: BLE001 - an exception escaping the app is exactly what we hunt
            failures.append(f"{case.name}: raised {type(exc).__name__}: {str(exc)[:120]}")
            continue
        refused += 400 <= status < 500
        problem = page_failure(case, status, content_type, data)
        if problem:
            failures.append(f"{case.name}: {problem}")
        elif "frame-ancestors" not in response.headers.get("Content-Security-Policy", ""):
            failures.append(f"{case.name}: security headers missing")
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(failures[:40])
    assert refused > len(cases) // 3  # the guard is doing the refusing, not silently passing everything
    honest_pages_via_client(client)


@pytest.mark.parametrize(("field", "value_name", "status"), [
    ("ticket", "ticket-deep", 400),  # was a RecursionError in the codec's peek
    ("ticket", "ticket-surrogate-sub", 400),  # was a UnicodeEncodeError while rendering the payload
    ("arguments", "surrogate-escape-json", 400),
    ("arguments", "raw-surrogate-bytes", 400),
    ("token_other", "non-utf8-ff", 400),
    ("arguments", "huge-int-json", 400),
    ("arguments", "huge-float-json", 400),
    ("at", "huge-int", 400),
    ("minted_at", "nul", 400),
    ("answer_raw", "ten-mb", 413),
])
def test_the_custom_moves_hostile_fields_get_a_page_saying_why(client: FlaskClient, field: str, value_name: str,
                                                                 status: int) -> None:
    form = {**custom_form(client), "answer": "raw" if field == "answer_raw" else "accept",
            field: PAGE_VALUES[value_name]}
    response = client.post("/playground/custom", data=form)
    assert response.status_code == status
    message = BeautifulSoup(response.data, "html.parser").select_one(".error-page")
    assert message is not None
    assert (f"“{field}”" if status == 400 else "too large") in message.get_text()


# -- over real HTTP ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(production_server: str) -> Iterator[Served]:
    with production_app(production_server, workers=1, threads=4, env={"MRTR_STORE": "memory"}) as server:
        yield server


def send(port: int, case: Case) -> int:
    body, headers = case.encoded()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.putrequest(case.method, case.path, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value.encode("utf-8"))
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def honest_flow_over_http(port: int) -> str:
    conn = Conn("127.0.0.1", port, "/mcp", flow_headers("bob-token"))
    try:
        first = deploy_request(10, "staging")
        status, body = conn.post(json.dumps(first).encode())
        result = json_body(body)["result"]
        first["params"].update(inputResponses={k: ACCEPT for k in result["inputRequests"]},
                               requestState=result["requestState"])
        status, body = conn.post(json.dumps(first).encode())
        return json_body(body)["result"]["content"][0]["text"]
    finally:
        conn.close()


RAW_HTTP: dict[str, bytes] = {
    "duplicate-content-length": b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 50\r\n"
                                b"Content-Type: application/json\r\n\r\n{}{}{",
    "cl-and-chunked": b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n"
                      b"Content-Type: application/json\r\n\r\n0\r\n\r\n",
    "bad-chunk-size": b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                      b"Content-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "huge-header": b"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
    "many-headers": b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(300)) + b"\r\n",
    "garbage-request-line": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n",
    "http-0.9": b"GET /\r\n\r\n",
    "negative-content-length": b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    "short-body-then-eof": b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Authorization: Bearer bob-token\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"",
    "absolute-uri-other-host": b"GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    "nul-in-path": b"GET /play\x00ground HTTP/1.1\r\nHost: x\r\n\r\n",
    "raw-non-utf8-in-query": b"GET /playground?offset=\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
    "raw-surrogate-in-path": b"GET /lessons/\xed\xa0\x80 HTTP/1.1\r\nHost: x\r\n\r\n",
    "raw-surrogate-in-form": b"POST /playground/custom HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n"
                             b"Content-Type: application/x-www-form-urlencoded\r\n\r\nticket=\xed\xa0\x80ab",
    "chunked-form-over-limit": b"POST /playground/custom HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                               b"Content-Type: application/x-www-form-urlencoded\r\n\r\n"
                               + b"".join(b"10000\r\n" + b"a" * 0x10000 + b"\r\n" for _ in range(5)) + b"0\r\n\r\n",
}


#: What the page routes must answer to their raw cases (the chunked form was once cut at the limit and served).
PAGE_RAW_HTTP = {"raw-non-utf8-in-query": 400, "raw-surrogate-in-path": 400, "raw-surrogate-in-form": 400,
                 "chunked-form-over-limit": 411}


def raw_status(port: int, payload: bytes, *, half_close: bool = True) -> int | None:
    """Send raw bytes and return the status the server answered with (None: it hung up without one).

    `half_close` ends our side at once, for requests that only end at EOF (a short body). Complete
    requests keep it open until the status line arrives: a server may take a half-closed connection
    for a client that has gone and drop the answer (granian does, when the app is slow under load).
    """
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        try:
            sock.sendall(payload)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            return None
        data = b""
        for _ in range(1000):  # bounded: at most 1000 reads, each under the socket's timeout
            if b"\r\n" in data:
                break
            try:
                chunk = sock.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    if not data.startswith(b"HTTP/"):
        return None
    return int(data.split(b" ", 2)[1])


def test_hostile_corpus_over_real_http(served: Served) -> None:
    port = served.port
    from app import create_app

    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": "k" * 40, "MRTR_STORE": "memory"})
    first = Conn("127.0.0.1", port, "/mcp", flow_headers("bob-token"))
    status, body = first.post(json.dumps(deploy_request(1, "staging")).encode())
    first.close()
    ticket = json_body(body)["result"]["requestState"]
    cases = corpus(ticket, quiz_paths=quiz_paths(app), move_slugs=MOVE_SLUGS)[::3]  # the shorter pass
    failures = []
    for case in cases:
        try:
            status = send(port, case)
        except (OSError, http.client.HTTPException) as exc:
            failures.append(f"{case.name}: {type(exc).__name__}: {exc}")
            continue
        if status >= 500:
            failures.append(f"{case.name}: HTTP {status}")
    for name, payload in RAW_HTTP.items():
        status = raw_status(port, payload, half_close=name not in PAGE_RAW_HTTP)
        if status is not None and status >= 500:
            failures.append(f"raw-http/{name}: HTTP {status}")
        elif name in PAGE_RAW_HTTP and status != PAGE_RAW_HTTP[name]:
            failures.append(f"raw-http/{name}: HTTP {status}, expected {PAGE_RAW_HTTP[name]}")
    assert not failures, "\n".join(failures[:40])
    assert served.proc.poll() is None
    assert honest_flow_over_http(port) == "deployed to staging"


def test_page_corpus_over_real_http(served: Served, app: Flask, client: FlaskClient) -> None:
    """A seventh of the page corpus against gunicorn (10 MB bodies stay in the test-client pass)."""
    cases = [c for c in page_cases(page_routes(app, client)) if not c.name.endswith("/ten-mb")][::7]
    failures = []
    for case in cases:
        try:
            status = send(served.port, case)
        except (OSError, http.client.HTTPException) as exc:
            failures.append(f"{case.name}: {type(exc).__name__}: {exc}")
            continue
        if status >= 500 and (case.path.split("?", 1)[0], status) not in SPEC_5XX:
            failures.append(f"{case.name}: HTTP {status}")
    assert not failures, "\n".join(failures[:40])
    assert served.proc.poll() is None
    assert honest_flow_over_http(served.port) == "deployed to staging"
