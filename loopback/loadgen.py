"""The load generator: N clients, each one thread on one keep-alive connection, playing the deploy flow.

One flow is the whole MRTR exchange over HTTP: `tools/call deploy` → `input_required` with a
ticket → the retry with the answer and the ticket echoed → `deployed to …`. The client is the
same for every server it is pointed at: a minimal HTTP/1.1 speaker on a raw socket (requests
built once as bytes, responses read by Content-Length or chunked framing), so that on a 2-core
machine as little CPU as possible goes to the client. The clients are spread over a few forked
processes, so they do not queue for one GIL. Every loop is bounded by count and time.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "mrtr-bench", "version": "1.0"},
}
ACCEPT = {"action": "accept", "content": {"confirm": True}}
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 4 * 1024 * 1024


class HTTPError(Exception):
    pass


class Conn:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1 with fixed request headers."""

    def __init__(self, host: str, port: int, path: str, headers: dict[str, str], timeout: float = 10.0) -> None:
        self.addr = (host, port)
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.buf = b""
        lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: keep-alive"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.head = ("\r\n".join(lines) + "\r\n").encode("latin-1")

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self.addr, timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self.buf = sock, b""
        return sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock = None

    def post(self, body: bytes, extra: bytes = b"") -> tuple[int, bytes]:
        sock = self.sock or self._connect()
        sock.sendall(self.head + extra + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        return self._read()

    def _fill(self) -> None:
        assert self.sock is not None
        chunk = self.sock.recv(65536)
        if not chunk:
            raise HTTPError("connection closed by the server")
        self.buf += chunk

    def _read(self) -> tuple[int, bytes]:
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEADER_BYTES:
                raise HTTPError("response headers too large")
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        status_line, *header_lines = head.split(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        headers = {}
        for line in header_lines:
            k, _, v = line.partition(b":")
            headers[k.strip().lower()] = v.strip()
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            body = self._read_chunked()
        else:
            length = int(headers.get(b"content-length", b"0"))
            if length > MAX_BODY_BYTES:
                raise HTTPError("response body too large")
            while len(self.buf) < length:
                self._fill()
            body, self.buf = self.buf[:length], self.buf[length:]
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()
        return status, body

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            while b"\r\n" not in self.buf:
                self._fill()
            size_line, _, self.buf = self.buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            total += size
            if total > MAX_BODY_BYTES:
                raise HTTPError("response body too large")
            while len(self.buf) < size + 2:
                self._fill()
            parts.append(self.buf[:size])
            self.buf = self.buf[size + 2:]
            if size == 0:
                return b"".join(parts)


def json_body(body: bytes) -> Any:
    """The JSON-RPC message in a response: plain JSON, or the last `data:` event of an SSE stream."""
    text = body.strip()
    if text.startswith(b"{"):
        return json.loads(text)
    data = [line[5:].strip() for line in text.splitlines() if line.startswith(b"data:")]
    if not data:
        raise HTTPError(f"no JSON in response: {body[:80]!r}")
    return json.loads(data[-1])


def flow_headers(token: str | None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "deploy",
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def deploy_request(request_id: int, env: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "deploy", "arguments": {"env": env}, "_meta": META}}


def one_flow(conn: Conn, request_id: int, env: str = "staging") -> None:
    """call → input_required → retry with answer and ticket → complete; raises on anything else."""
    first = deploy_request(request_id, env)
    status, body = conn.post(json.dumps(first).encode())
    if status != 200:
        raise HTTPError(f"round 1: HTTP {status}: {body[:120]!r}")
    result = json_body(body).get("result") or {}
    if result.get("resultType") != "input_required" or not result.get("inputRequests"):
        raise HTTPError(f"round 1 did not ask: {body[:160]!r}")
    params = first["params"]
    params["inputResponses"] = {key: ACCEPT for key in result["inputRequests"]}
    params["requestState"] = result["requestState"]
    first["id"] = request_id + 1
    status, body = conn.post(json.dumps(first).encode())
    if status != 200:
        raise HTTPError(f"round 2: HTTP {status}: {body[:120]!r}")
    done = json_body(body).get("result") or {}
    texts = [c.get("text", "") for c in done.get("content", []) if isinstance(c, dict)]
    if not any(t.startswith("deployed to") for t in texts):
        raise HTTPError(f"round 2 did not deploy: {body[:160]!r}")


@dataclass
class RunResult:
    clients: int
    seconds: float
    flows: int
    errors: int
    latencies_ms: list[float] = field(default_factory=list)
    first_errors: list[str] = field(default_factory=list)
    client_cpu_s: float = 0.0
    server_cpu_s: float | None = None  # the server's CPU seconds within the measured window, if probed
    steal_pct: float | None = None  # the share of the machine's CPU time the hypervisor took meanwhile

    @property
    def server_cpu_ms_per_flow(self) -> float | None:
        if self.server_cpu_s is None or not self.flows:
            return None
        return self.server_cpu_s * 1000 / self.flows

    @property
    def rate(self) -> float:
        return self.flows / self.seconds if self.seconds else 0.0

    def pct(self, p: float) -> float:
        xs = sorted(self.latencies_ms)
        if not xs:
            return float("nan")
        return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


#: Client threads per load-generator process. The client is Python too: with all 32 clients as threads
#: of one process they queue for that process's GIL, and that wait would be counted as the server's
#: latency. Spreading them over processes keeps the client's own share of the tail small.
CLIENTS_PER_PROCESS = 4


@dataclass
class _Share:
    """What one load-generator process measured."""

    latencies_ms: list[float]
    errors: int
    first_errors: list[str]


def _play(host: str, port: int, path: str, headers: dict[str, str], indexes: range, start: float, end: float,
          max_flows_per_client: int) -> _Share:
    """One thread per client index, each on its own connection, flows back to back until `end`;
    latencies of flows that end within [start, end) are kept. Times are `time.perf_counter()`,
    CLOCK_MONOTONIC, which is the same clock in every process of the machine."""
    lock = threading.Lock()
    share = _Share([], 0, [])

    def client(n: int) -> None:
        conn = Conn(host, port, path, headers)
        mine: list[float] = []
        errs = 0
        rid = n * 10_000_000
        try:
            for _ in range(max_flows_per_client):
                t0 = time.perf_counter()
                if t0 >= end:
                    break
                rid += 2
                try:
                    one_flow(conn, rid)
                except (OSError, HTTPError, ValueError, KeyError) as exc:
                    errs += 1
                    conn.close()
                    with lock:
                        if len(share.first_errors) < 5:
                            share.first_errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                t1 = time.perf_counter()
                if start <= t1 < end:
                    mine.append((t1 - t0) * 1000)
        finally:
            conn.close()
            with lock:
                share.latencies_ms.extend(mine)
                share.errors += errs

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in indexes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, end - time.perf_counter()) + 30)
    return share


def _play_in_child(conn: Any, *args: Any) -> None:
    try:
        conn.send(_play(*args))
    except BaseException as exc:  # the parent reports it; a child must not die silently
        conn.send(_Share([], 1, [f"load-generator process failed: {type(exc).__name__}: {exc}"]))
    finally:
        conn.close()


def run_flows(host: str, port: int, *, clients: int, seconds: float, warmup: float = 1.0,
              token: str | None = "bob-token", path: str = "/mcp", max_flows_per_client: int = 1_000_000,
              cpu_probe: Callable[[], float] | None = None, per_process: int = CLIENTS_PER_PROCESS) -> RunResult:
    """`clients` clients play flows for `warmup + seconds`; only flows ending in the window count.

    The clients are threads, `per_process` to a process (forked, so each has its own GIL).
    `cpu_probe`, if given, returns the server's CPU seconds so far; it is read at the window's
    start and end, so `server_cpu_ms_per_flow` is what the server spent per counted flow, a figure
    other work on the machine disturbs far less than flows per second. `client_cpu_s` counts every
    load-generator process.
    """
    headers = flow_headers(token)
    groups = [range(i, min(i + per_process, clients)) for i in range(0, clients, per_process)]
    cpu0 = os.times()
    now = time.perf_counter()
    start, end = now + warmup, now + warmup + seconds
    context = multiprocessing.get_context("fork")
    children = []
    for indexes in groups:
        receive, send = context.Pipe(duplex=False)
        proc = context.Process(target=_play_in_child, daemon=True,
                               args=(send, host, port, path, headers, indexes, start, end, max_flows_per_client))
        proc.start()
        send.close()
        children.append((proc, receive))
    server_cpu = None
    if cpu_probe is not None:
        time.sleep(max(0.0, start - time.perf_counter()))
        begin = cpu_probe()
        time.sleep(max(0.0, end - time.perf_counter()))
        server_cpu = cpu_probe() - begin
    latencies: list[float] = []
    errors = 0
    first_errors: list[str] = []
    for proc, receive in children:
        if receive.poll(max(0.0, end - time.perf_counter()) + 60):
            share: _Share = receive.recv()
        else:
            share = _Share([], 1, ["a load-generator process sent nothing back"])
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
            proc.join()
        latencies += share.latencies_ms
        errors += share.errors
        first_errors += share.first_errors[: max(0, 5 - len(first_errors))]
    cpu1 = os.times()
    client_cpu = sum(cpu1[i] - cpu0[i] for i in range(4))  # user and system, this process and its children
    return RunResult(clients, seconds, len(latencies), errors, latencies, first_errors, client_cpu, server_cpu)
