"""web/admission.py and its use by /mcp: at most N requests at work per process, in arrival order.

The gate itself is tested with threads and no server; its place in /mcp over real HTTP under the
production server, where it matters that neither a body still arriving nor a legacy stream waiting
for its client's answer holds a turn (with one turn, either would stop every other request).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from app import create_app
from bench.loadgen import Conn, flow_headers, one_flow
from bench.servers import granian_app
from mrtr.config import DEFAULT_MCP_CONCURRENCY, ConfigError
from web.admission import FifoGate
from web.mcp import GATE_KEY

from .conftest import TEST_KEY

DEADLINE_S = 20.0
LEGACY = "2025-11-25"


def wait_until(predicate: Callable[[], Any], what: str) -> Any:
    """Poll a condition another thread brings about, failing after DEADLINE_S (never a fixed sleep)."""
    deadline = time.monotonic() + DEADLINE_S
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE_S:g} s: {what}")
        time.sleep(0.005)
    return value


# -- the gate ----------------------------------------------------------------------------------------


def test_a_gate_needs_a_slot():
    with pytest.raises(ValueError, match="at least one slot"):
        FifoGate(0)


def test_slots_are_taken_at_once_until_none_is_free():
    gate = FifoGate(2)
    gate.acquire()
    gate.acquire()
    assert (gate.free, gate.waiting) == (0, 0)
    entered = threading.Event()

    def third() -> None:
        with gate:
            entered.set()

    t = threading.Thread(target=third, daemon=True)
    t.start()
    wait_until(lambda: gate.waiting == 1, "the third thread queued")
    assert not entered.is_set()
    gate.release()
    t.join(DEADLINE_S)
    assert entered.is_set() and (gate.free, gate.waiting) == (1, 0)
    gate.release()
    assert gate.free == 2


def test_waiters_get_in_strictly_in_arrival_order_and_a_newcomer_never_jumps_the_queue():
    gate = FifoGate(1)
    gate.acquire()
    order: list[int] = []
    threads = []
    for n in range(6):
        def waiter(n: int = n) -> None:
            with gate:
                order.append(n)

        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        wait_until(lambda n=n: gate.waiting == n + 1, f"waiter {n} queued")  # so arrival order is known
        threads.append(t)
    gate.release()  # the slot goes to waiter 0, never back to "free" where a newcomer could take it
    assert gate.free == 0
    for t in threads:
        t.join(DEADLINE_S)
    assert order == list(range(6))
    assert (gate.free, gate.waiting) == (1, 0)


def test_an_exception_inside_gives_the_slot_back():
    gate = FifoGate(1)
    with pytest.raises(KeyError):
        with gate:
            raise KeyError("boom")
    assert gate.free == 1


def test_releasing_more_than_acquired_is_a_bug_and_says_so():
    gate = FifoGate(1)
    with pytest.raises(RuntimeError, match="more often than acquired"):
        gate.release()


# -- the setting -------------------------------------------------------------------------------------


def make_app(**settings: str):
    return create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory", **settings})


def test_mcp_has_a_gate_of_the_default_size_and_the_setting_changes_or_removes_it():
    assert make_app().extensions[GATE_KEY].slots == DEFAULT_MCP_CONCURRENCY == 1
    assert make_app(MRTR_MCP_CONCURRENCY="5").extensions[GATE_KEY].slots == 5
    assert GATE_KEY not in make_app(MRTR_MCP_CONCURRENCY="0").extensions


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_concurrency_setting_stops_the_app_with_its_name(value):
    with pytest.raises(ConfigError, match="MRTR_MCP_CONCURRENCY"):
        make_app(MRTR_MCP_CONCURRENCY=value)


def test_every_request_gives_its_turn_back_whatever_the_answer():
    app = make_app(MRTR_MCP_CONCURRENCY="1")
    client = app.test_client()
    for body in (b"{not json", b"[]", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "nope"}).encode()):
        client.post("/mcp", data=body, headers=flow_headers("bob-token"))
    assert app.extensions[GATE_KEY].free == 1


# -- over real HTTP, one turn: what must not hold it ---------------------------------------------------


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {"elicitation": {"form": {}}},
                         "clientInfo": {"name": "test", "version": "1"}}}


def raw_post(port: int, headers: dict[str, str], body: bytes, length: int | None = None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in headers.items()),
             f"Content-Length: {len(body) if length is None else length}"]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    return sock


def legacy_headers(sid: str | None = None) -> dict[str, str]:
    headers = {"Authorization": "Bearer bob-token", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": LEGACY, "Content-Type": "application/json"}
    return {**headers, "Mcp-Session-Id": sid} if sid else headers


def read_until(sock: socket.socket, needle: bytes) -> bytes:
    seen = b""
    while needle not in seen:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before {needle!r}: {seen[-300:]!r}"
        seen += chunk
    return seen


def test_neither_a_body_still_arriving_nor_a_waiting_legacy_stream_holds_the_one_turn():
    with granian_app(workers=1, threads=6, env={"MRTR_MCP_CONCURRENCY": "1"}) as served:
        port = served.port
        # A client that sends half its body and stalls.
        slow = raw_post(port, flow_headers("bob-token"), b'{"jsonrpc": "2.0", ', length=4096)
        # A legacy session with two calls waiting on their streams for the client's answer.
        opened = raw_post(port, legacy_headers(), json.dumps(INITIALIZE).encode())
        head = read_until(opened, b"\r\n\r\n").decode("latin-1")
        sid = next(line.split(":", 1)[1].strip() for line in head.split("\r\n")
                   if line.lower().startswith("mcp-session-id:"))
        waiting = []
        for request_id in (7, 8):
            call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                    "params": {"name": "deploy", "arguments": {"env": "prod"}}}
            sock = raw_post(port, legacy_headers(sid), json.dumps(call).encode())
            read_until(sock, b"elicitation/create")
            waiting.append(sock)

        # With one turn, any of those holding it would stall this flow until the client gave up.
        conn = Conn("127.0.0.1", port, "/mcp", flow_headers("bob-token"), timeout=DEADLINE_S)
        try:
            for n in range(5):
                one_flow(conn, 100 + 2 * n)
        finally:
            conn.close()
        for sock in (slow, opened, *waiting):
            sock.close()
