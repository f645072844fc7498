"""/mcp's two callers answer alike: the WSGI entry app.py installs (the lean path) and the Flask view.

Two apps share one fake clock and count their ticket ids and session ids from the same start, so
the same requests must get byte-identical answers from both. `TwinClient` sends every /mcp request
to both (the lean app as built by create_app, and a twin whose `wsgi_app` is Flask's own) and
asserts identical status, headers (but Date) and body, SSE streams frame by frame; it returns the
lean app's answer. Through it run: the hostile corpus's /mcp cases, and every test of
tests/web/test_mcp_http.py that uses the `client` fixture (imported below, so pytest collects them
here too with this module's `client`).
"""

from __future__ import annotations

import http.client
import io
import itertools
import json
import select
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask, request_started
from flask.testing import FlaskClient

from app import create_app
from loopback.launchers import production_app
from loopback.loadgen import deploy_request, flow_headers
from mrtr import FakeClock
from tests.corpus.hostile import corpus
from tests.web import helpers
from tests.web.conftest import TEST_KEY
from tests.web.test_mcp_http import *  # noqa: F403 - the MCP HTTP tests, run again through the twin client
from web.mcp import routes as mcp
from web.mcp import sessions as mcp_sessions
from web.site import security
from web.site.deployment import without_lean_mcp

KEEP_ALIVE = b": keep-alive\n\n"


def deterministic(app: Flask) -> Flask:
    """Ticket ids and session ids from counters, so two apps fed the same requests say the same bytes."""
    jti = (f"jti-{n}" for n in itertools.count())
    sids = (f"session-{n:040d}" for n in itertools.count())
    server = app.extensions["mrtr"].server
    server.jti = server.codec.jti = lambda: next(jti)
    app.extensions[mcp.SESSIONS_KEY] = mcp_sessions.Sessions(new_id=lambda: next(sids))
    return app


def flask_only(app: Flask) -> Flask:
    """The app with /mcp served by the Flask view: the WSGI entry removed from in front of Flask."""
    assert isinstance(app.wsgi_app.app, mcp.WsgiEntry)  # type: ignore[attr-defined]
    without_lean_mcp(app)
    return app


def make_twins(clock: FakeClock, **config: Any) -> tuple[Flask, Flask]:
    settings = {"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory", "MRTR_CLOCK": clock, **config}
    return deterministic(create_app(settings)), flask_only(deterministic(create_app(settings)))


def comparable_headers(response: Any) -> list[tuple[str, str]]:
    return [(k, v) for k, v in response.headers.to_wsgi_list() if k.lower() != "date"]


class TwinStream:
    """The lean app's SSE frames, each checked against the Flask app's next frame (keep-alives aside:
    how many a wait writes depends on real time)."""

    def __init__(self, lean: Any, other: Any) -> None:
        self.lean, self.lean_frames, self.other = lean, lean.response, other
        self.other_frames = iter(other.response)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.lean_frames:
            if chunk != KEEP_ALIVE:
                theirs = next(f for f in self.other_frames if f != KEEP_ALIVE)
                assert chunk == theirs, f"SSE frames differ: lean {chunk!r}, Flask {theirs!r}"
            yield chunk

    def close(self) -> None:
        for closable in (self.lean_frames, self.other):
            closable.close()


class TwinClient(FlaskClient):
    """A test client of the lean app that sends each /mcp request to the Flask-view twin as well."""

    twin: FlaskClient
    compared = 0

    def open(self, *args: Any, **kwargs: Any) -> Any:
        lean = super().open(*args, **kwargs)
        path = args[0] if args and isinstance(args[0], str) else kwargs.get("path", "/")
        if path.split("?")[0] != "/mcp":
            return lean
        other = self.twin.open(*args, **kwargs)
        assert (lean.status, comparable_headers(lean)) == (other.status, comparable_headers(other))
        TwinClient.compared += 1
        if lean.mimetype == "text/event-stream":
            lean.response = TwinStream(lean, other)
            return lean
        assert lean.get_data() == other.get_data()
        other.close()
        return lean


@pytest.fixture
def twins(clock: FakeClock) -> tuple[Flask, Flask]:
    return make_twins(clock)


@pytest.fixture
def app(twins: tuple[Flask, Flask]) -> Flask:
    return twins[0]


@pytest.fixture
def client(twins: tuple[Flask, Flask]) -> FlaskClient:
    lean, flask = twins
    lean.test_client_class = TwinClient
    twin_client = lean.test_client()
    assert isinstance(twin_client, TwinClient)
    twin_client.twin = flask.test_client()
    return twin_client


# -- the corpus ------------------------------------------------------------------------------------


def test_the_hostile_corpus_gets_identical_answers_from_both_callers(client: FlaskClient) -> None:
    reply = client.post("/mcp", data=json.dumps(deploy_request(1, "staging")), headers=flow_headers("bob-token"))
    cases = [c for c in corpus(reply.get_json()["result"]["requestState"], quiz_paths=[], move_slugs=[])
             if c.path == "/mcp"]
    assert len(cases) >= 150
    before = TwinClient.compared
    for case in cases:
        body, headers = case.encoded()
        client.open(case.path, method=case.method, data=body, headers=headers).close()
    assert TwinClient.compared - before == len(cases)


def test_chunked_and_oversized_bodies_get_identical_answers(clock: FakeClock) -> None:
    lean, flask = make_twins(clock, MRTR_MAX_BODY=2048)
    message = json.dumps(deploy_request(1, "staging")).encode()
    for body in (message, message + b" " * 4096):
        for chunked in (False, True):
            answers = []
            for app in (lean, flask):
                framing: dict[str, Any] = (
                    {"input_stream": io.BytesIO(body), "environ_overrides": {"wsgi.input_terminated": True},
                     "headers": {**flow_headers("bob-token"), "Transfer-Encoding": "chunked"}}
                    if chunked else {"data": body, "headers": flow_headers("bob-token")})
                response = app.test_client().post("/mcp", **framing)
                answers.append((response.status, comparable_headers(response), response.get_data()))
            assert answers[0] == answers[1]
            assert answers[0][0] == ("200 OK" if len(body) <= 2048 else "413 REQUEST ENTITY TOO LARGE")


# -- which caller serves what ----------------------------------------------------------------------


def test_create_app_serves_mcp_beside_flask_and_everything_else_through_flask(app: Flask) -> None:
    started: list[str] = []

    def record(sender: Flask, **extra: Any) -> None:
        from flask import request

        started.append(f"{request.method} {request.path}")

    request_started.connect(record, app)
    try:
        client = app.test_client()
        assert client.post("/mcp", data=b"{}", headers=flow_headers("bob-token")).status_code == 400
        assert client.get("/mcp", headers={"Authorization": "Bearer bob-token"}).status_code == 405
        assert client.open("/mcp", method="OPTIONS").status_code == 200  # Flask's automatic answer, as before
        assert client.get("/").status_code == 200
    finally:
        request_started.disconnect(record, app)
    assert started == ["OPTIONS /mcp", "GET /"]


def test_mcp_security_headers_are_the_pure_functions_either_way(twins: tuple[Flask, Flask]) -> None:
    expected = security.security_headers()
    for app in twins:
        response = app.test_client().post("/mcp", data=b"[", headers=flow_headers("bob-token"))
        sent = response.headers.to_wsgi_list()
        for name, value in expected:
            assert (name, value) in sent
    page = twins[0].test_client().get("/")
    assert [(n, v) for n, v in page.headers.to_wsgi_list() if n in dict(expected)] == expected


def test_with_security_headers_keeps_a_response_s_own_cache_control() -> None:
    out = security.with_security_headers([("Cache-Control", "max-age=5"), ("X-Frame-Options", "SAMEORIGIN")])
    assert ("Cache-Control", "max-age=5") in out and ("Cache-Control", "no-store") not in out
    assert ("X-Frame-Options", "DENY") in out and ("X-Frame-Options", "SAMEORIGIN") not in out


# -- legacy SSE streams on the lean path, under the production server -----------------------------------


def test_abandoned_legacy_streams_are_cancelled_on_the_lean_path_under_the_production_server(
        production_server: str) -> None:
    """The WSGI entry returns the SSE body itself: the server's close() on a gone client must still
    cancel the call and give its thread back. Three threads, so at most two calls held (the cap,
    test_admission.py): two held, a third refused; all three clients go; a fresh request is served,
    both held calls are cancelled, and two can be held again."""
    threads, held = 3, 2
    with production_app(production_server, workers=1, threads=threads,
                        env={"MRTR_HELD_STREAMS": str(held)}) as served:
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=helpers.DEADLINE_S)
        conn.request("POST", "/mcp", body=json.dumps(helpers.INITIALIZE), headers=helpers.legacy_headers())
        opened = conn.getresponse()
        opened.read()
        sid = opened.getheader("Mcp-Session-Id")  # any case: granian sends header names in lower case
        conn.close()
        assert opened.status == 200 and sid
        assert helpers.request(served, helpers.INITIALIZED, helpers.legacy_headers(sid=sid))[0] == 202
        head = helpers.legacy_headers(sid=sid)

        def hold(first_id: int, count: int) -> list[bytes]:
            """Start `count` calls and read each until it asks (held) or is answered at once (refused)."""
            socks = [helpers.raw_request(served.port, head, json.dumps(helpers.legacy_call(first_id + i)).encode())
                     for i in range(count)]
            seen = {id(s): b"" for s in socks}

            def all_answered_or_asking() -> bool:
                ready, _, _ = select.select(socks, [], [], 0.05)
                for sock in ready:
                    seen[id(sock)] += sock.recv(65536)
                return all(b"elicitation/create" in data or b"HTTP/1.1 503" in data for data in seen.values())

            helpers.wait_until(all_answered_or_asking, f"{count} legacy calls asking or refused")
            for sock in socks:
                sock.close()
            return list(seen.values())

        first = hold(10, held + 1)
        assert sum(b"elicitation/create" in data for data in first) == held
        assert sum(data.startswith(b"HTTP/1.1 503") for data in first) == 1
        status, _, text = helpers.request(served, helpers.TOOLS_LIST, helpers.modern_headers(helpers.TOOLS_LIST))
        assert status == 200 and json.loads(text)["result"]["tools"]
        needle = "the client closed its stream"
        cancelled = helpers.wait_until(lambda: len(helpers.log_lines(served, needle)) >= held
                                      and helpers.log_lines(served, needle), "both abandoned calls cancelled")
        assert len({c[c.index("legacy call"):][:15] for c in cancelled}) == held
        # Their slots came back (just after the log line): two calls can be held again.
        fresh = itertools.count(20, held)
        helpers.wait_until(lambda: sum(b"elicitation/create" in data for data in hold(next(fresh), held)) == held,
                           "two calls held again")
        assert not helpers.log_lines(served, "Traceback")
