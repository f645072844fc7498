"""web/site/admission.py and its use by /mcp: at most N legacy calls per process held open for their client.

The counter is tested with threads and no server; its place in /mcp over the test client (what a
refused call gets and leaves behind, and that every way a held call ends gives its slot back); and
over real HTTP the production way (two threads, one held call), where a second held call would
take the last thread and stall every other request until its client answered.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import EnvironBuilder

from loopback.launchers import granian_app
from loopback.loadgen import Conn, flow_headers, one_flow
from mrtr_settings.environment import DEFAULT_HELD_STREAMS, ConfigError
from web.mcp.routes import SESSIONS_KEY
from web.mcp.wire import RETRY_AFTER
from web.site.admission import HELD_KEY, HeldSlots

from .helpers import (
    CONFIRM,
    DEADLINE_S,
    INITIALIZE,
    answer,
    legacy_call,
    legacy_headers,
    open_session,
    raw_request,
    sse_data,
    start_call,
)

# -- the counter -------------------------------------------------------------------------------------


def test_a_cap_of_zero_holds_nothing_and_a_negative_one_is_a_bug():
    assert HeldSlots(0).take() is None
    with pytest.raises(ValueError, match="cannot be negative"):
        HeldSlots(-1)


def test_slots_are_given_until_none_is_left_and_giving_one_back_twice_frees_it_once():
    slots = HeldSlots(2)
    first, second = slots.take(), slots.take()
    assert first is not None and second is not None
    assert slots.take() is None and slots.held == 2
    first()
    first()  # a second give-back (a stream that ends twice) must not free someone else's slot
    assert slots.held == 1
    third = slots.take()
    assert third is not None and slots.take() is None
    second()
    third()
    assert slots.held == 0


def test_threads_racing_for_slots_never_hold_more_than_the_cap():
    slots = HeldSlots(3)
    most = 0
    lock = threading.Lock()
    start = threading.Barrier(8)

    def racer() -> None:
        nonlocal most
        start.wait(DEADLINE_S)
        for _ in range(2000):
            give_back = slots.take()
            if give_back is not None:
                with lock:
                    most = max(most, slots.held)
                give_back()

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
    assert 1 <= most <= 3 and slots.held == 0


# -- the setting -------------------------------------------------------------------------------------


def test_the_cap_has_its_default_and_the_setting_changes_it(make_app: Callable[..., Flask]):
    assert make_app().extensions[HELD_KEY].limit == DEFAULT_HELD_STREAMS == 1
    assert make_app(MRTR_HELD_STREAMS="7").extensions[HELD_KEY].limit == 7


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_cap_stops_the_app_with_its_name(make_app: Callable[..., Flask], value):
    with pytest.raises(ConfigError, match="MRTR_HELD_STREAMS"):
        make_app(MRTR_HELD_STREAMS=value)


# -- /mcp over the test client, with the default cap of one ------------------------------------------


@pytest.fixture
def capped(app: Flask, client: FlaskClient) -> tuple[Flask, FlaskClient]:
    """tests/conftest.py's app, with no setting of the cap, and its test client."""
    return app, client


def test_a_call_past_the_cap_is_refused_at_once_and_leaves_nothing_behind(capped):
    app, client = capped
    sid = open_session(client)
    held, stream, asked = start_call(client, sid, 5)
    other = open_session(client, "alice-token")  # another client: the cap is the process's, not the session's

    refused = client.post("/mcp", data=json.dumps(legacy_call(6)), headers=legacy_headers("alice-token", other))
    assert refused.status_code == 503 and refused.headers["Retry-After"] == str(RETRY_AFTER)
    body = refused.get_json()
    assert body["id"] == 6 and "already holds 1 calls open" in body["error"]["message"]
    session = app.extensions[SESSIONS_KEY].get(other, "alice")
    assert session is not None and session.streams == {} and session.conn.waiting_on() == set()

    # A call that asks nothing holds nothing, and is served meanwhile.
    listed = client.post("/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
                         headers=legacy_headers("alice-token", other))
    assert listed.status_code == 200 and listed.get_json()["result"]["tools"]

    # The held call finishes when answered, and its slot is free again.
    assert answer(client, sid, asked) == 202
    final = sse_data(b"".join(stream).decode())
    assert final[-1]["result"]["content"][0]["text"] == "deployed to prod"
    held.close()
    assert app.extensions[HELD_KEY].held == 0
    again, _, _ = start_call(client, other, 8, "alice-token")
    again.close()
    assert app.extensions[HELD_KEY].held == 0


def test_a_held_call_whose_stream_is_closed_gives_its_slot_back_and_is_cancelled(capped):
    app, client = capped
    sid = open_session(client)
    response, _, _ = start_call(client, sid, 5)
    assert app.extensions[HELD_KEY].held == 1
    response.close()  # what the server does when the client has gone
    session = app.extensions[SESSIONS_KEY].get(sid, "bob")
    assert app.extensions[HELD_KEY].held == 0 and session.streams == {} and session.conn.waiting_on() == set()


def test_a_stream_closed_before_its_first_frame_still_gives_its_slot_back_and_cancels(capped):
    """A server may close a response it never started sending (the client went away at once). A
    generator's `finally` does not run then; the body's own close() must end the call all the same."""
    app, client = capped
    sid = open_session(client)
    # Called as a WSGI server calls the app: the test client would ask for the first frame itself.
    environ = EnvironBuilder(path="/mcp", method="POST", data=json.dumps(legacy_call(5)),
                             headers=legacy_headers(sid=sid)).get_environ()
    statuses: list[str] = []
    body = app.wsgi_app(environ, lambda status, headers, exc_info=None: statuses.append(status))
    assert statuses == ["200 OK"] and app.extensions[HELD_KEY].held == 1
    body.close()
    session = app.extensions[SESSIONS_KEY].get(sid, "bob")
    assert app.extensions[HELD_KEY].held == 0 and session.streams == {} and session.conn.waiting_on() == set()
    again, _, _ = start_call(client, sid, 6)
    again.close()


# -- over real HTTP, the production way: two threads, one held call -----------------------------------


def read_until(sock: socket.socket, needle: bytes, seen: bytes = b"") -> bytes:
    while needle not in seen:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before {needle!r}: {seen[-300:]!r}"
        seen += chunk
    return seen


def session_id(head: bytes) -> str:
    return next(line.split(":", 1)[1].strip() for line in head.decode("latin-1").split("\r\n")
                if line.lower().startswith("mcp-session-id:"))


def read_question(sock: socket.socket) -> tuple[bytes, dict[str, Any]]:
    """Read a held call's stream up to the end of its elicitation/create event: (bytes so far, the question)."""
    seen = b""
    while True:
        seen = read_until(sock, b"\n\n", seen) if b"elicitation/create" in seen else read_until(
            sock, b"elicitation/create", seen)
        event = seen.partition(b"elicitation/create")[2]
        if b"\n\n" in event:
            [asked] = [m for m in sse_data(seen.decode()) if m.get("method") == "elicitation/create"]
            return seen, asked
        seen += sock.recv(65536)


@pytest.mark.external  # scripts/production.sh (granian)
def test_with_two_threads_a_held_call_leaves_one_for_its_answer_and_everyone_else():
    with granian_app(workers=1, threads=2, env={"MRTR_HELD_STREAMS": "1"}) as served:
        port = served.port
        opened = raw_request(port, legacy_headers(), json.dumps(INITIALIZE).encode())
        sid = session_id(read_until(opened, b"\r\n\r\n"))
        held = raw_request(port, legacy_headers(sid=sid), json.dumps(legacy_call(7)).encode())
        seen, asked = read_question(held)

        # A second call that would hold the last thread is refused at once, not queued behind the first.
        refused = raw_request(port, legacy_headers(sid=sid), json.dumps(legacy_call(8)).encode())
        refusal = read_until(refused, b'"id":8')
        assert refusal.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in refusal.lower()
        refused.close()

        # 2026-07-28 flows are served meanwhile, on the thread the cap keeps free.
        conn = Conn("127.0.0.1", port, "/mcp", flow_headers("bob-token"), timeout=DEADLINE_S)
        try:
            for n in range(5):
                one_flow(conn, 100 + 2 * n)
        finally:
            conn.close()

        # The answer gets a thread too, and the held call ends with its result.
        reply = {"jsonrpc": "2.0", "id": asked["id"], "result": CONFIRM["confirm"]}
        reply_to = raw_request(port, legacy_headers(sid=sid), json.dumps(reply).encode())
        assert read_until(reply_to, b"\r\n\r\n").startswith(b"HTTP/1.1 202")
        assert b"deployed to prod" in read_until(held, b"deployed to prod", seen)
        for sock in (opened, held, reply_to):
            sock.close()
