"""The one HTTP client (`mrtr_client.HttpEndpoint`) against a real local server, and what its two users make of it:
the client's `HttpTransport` (a `TransportError`) and the checker's `HttpTarget` (evidence in a `Reply`). Pinning,
the time and byte budgets and redirects; time is an injected clock, so no test waits."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from moves.targets.http import HttpTarget
from mrtr import JSONObject
from mrtr.client_errors import TransportError
from mrtr_client import HttpEndpoint, HttpTransport, StdioTransport, TooLarge
from mrtr_client.stdio_transport import STDERR_KEEP

TOKENS = [("alice", "token-a"), ("bob", "token-b")]
LIST: JSONObject = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
NOTE = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"x" * 900 + b'"}}\n\n'


class Server(ThreadingHTTPServer):
    daemon_threads = True
    release: threading.Event
    hits: list[str]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up mid-body is what the budget tests are about: not worth a traceback on stderr."""


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, status: int, ctype: str, body: bytes, length: int | None = None, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_POST(self) -> None:  # noqa: N802
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.server.hits.append(self.path)
        if self.path == "/echo":
            seen = {"host": self.headers["Host"], "authorization": self.headers.get("Authorization")}
            self._send(200, "application/json", json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                                            "result": seen}).encode())
        elif self.path == "/big":
            self._send(200, "application/json", b"[" + b" " * 10_000 + b"]")
        elif self.path == "/flood":
            self._send(200, "text/event-stream", NOTE * 12)
        elif self.path == "/hold":  # a first piece of the body, then nothing until the test is over
            self._send(200, "application/json", b'{"jsonrpc":', length=100)
            self.server.release.wait(timeout=30)
        elif self.path == "/moved":
            self._send(302, "text/plain", b"", Location="/echo")


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.release, httpd.hits = threading.Event(), []
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def port(server: Server) -> int:
    return int(server.server_address[1])


class Clock:
    """Monotonic time that moves `step` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


# -- pinning ----------------------------------------------------------------------------------------------------------


def test_a_pinned_endpoint_connects_to_the_vetted_address_and_names_the_urls_host(server: Server) -> None:
    url = f"http://mcp.pinned.invalid:{port(server)}/echo"  # a name no resolver knows: only the pin can reach it
    exchange = HttpEndpoint(url, connect_to="127.0.0.1").exchange(json.dumps(LIST).encode(), {})
    try:
        assert exchange.status == 200 and exchange.content_type == "application/json"
        assert json.loads(exchange.body())["result"]["host"] == f"mcp.pinned.invalid:{port(server)}"
    finally:
        exchange.close()
    reply = HttpTarget(url, TOKENS, connect_to="127.0.0.1").send("other", LIST)
    assert reply.response is not None and reply.http_status == 200
    assert reply.response["result"] == {"host": f"mcp.pinned.invalid:{port(server)}", "authorization": "Bearer token-b"}
    client = HttpTransport(url, connect_to="127.0.0.1")
    client.send(LIST)
    assert client.receive(5) == {"jsonrpc": "2.0", "id": 7,
                                 "result": {"host": f"mcp.pinned.invalid:{port(server)}", "authorization": None}}


# -- the byte budget ------------------------------------------------------------------------------------------------


def test_a_body_past_the_byte_budget_stops_the_read(server: Server) -> None:
    url = f"http://127.0.0.1:{port(server)}/big"
    exchange = HttpEndpoint(url, max_bytes=4096).exchange(b"{}", {})
    with pytest.raises(TooLarge):
        exchange.body()
    exchange.close()
    with pytest.raises(TransportError, match="larger than 4 KiB; stopped reading"):
        HttpTransport(url, max_bytes=4096).send(LIST)
    reply = HttpTarget(url, TOKENS, max_bytes=4096).send("owner", LIST)
    assert reply.response is None and reply.http_status == 200
    assert reply.transport_error == "the response is larger than 4 KiB; the checker stopped reading"


def test_an_event_stream_past_the_byte_budget_stops_the_read_and_keeps_what_came(server: Server) -> None:
    url = f"http://127.0.0.1:{port(server)}/flood"
    note = json.loads(NOTE[6:])
    client = HttpTransport(url, max_bytes=4096)
    client.send(LIST)
    came = []
    with pytest.raises(TransportError, match="event stream passed 4 KiB; stopped reading"):
        for _ in range(12):  # 12 events of ~1 KiB: the budget ends the stream before they are all read
            came.append(client.receive(5))
    assert came == [note] * len(came) and len(came) <= 4
    reply = HttpTarget(url, TOKENS, max_bytes=4096).send("owner", LIST)
    assert reply.response is None and reply.notifications == [note] * len(reply.notifications)
    assert reply.transport_error == ("the event stream passed 4 KiB without answering the request; "
                                     "the checker stopped reading")


# -- the time budget --------------------------------------------------------------------------------------------------


def test_a_body_that_stops_coming_ends_at_the_deadline(server: Server) -> None:
    url = f"http://127.0.0.1:{port(server)}/hold"
    exchange = HttpEndpoint(url, timeout=5, monotonic=Clock(3)).exchange(b"{}", {})  # sent at 3, due at 8
    chunks = exchange.chunks()
    assert next(chunks) == b'{"jsonrpc":'  # read at 6: 2 s left
    with pytest.raises(TimeoutError):
        next(chunks)  # at 9: past the deadline, before any wait
    exchange.close()
    with pytest.raises(TransportError, match="broke off: no answer in time"):
        HttpTransport(url, timeout=5, monotonic=Clock(3)).send(LIST)
    reply = HttpTarget(url, TOKENS, timeout=5, monotonic=Clock(3)).send("owner", LIST)
    assert reply.timed_out and reply.transport_error == "no complete answer within 5 s"


# -- redirects ---------------------------------------------------------------------------------------------------------


def test_a_redirect_is_an_answer_never_followed(server: Server) -> None:
    url = f"http://127.0.0.1:{port(server)}/moved"
    exchange = HttpEndpoint(url).exchange(b"{}", {})
    assert (exchange.status, exchange.header("Location")) == (302, "/echo")
    exchange.close()
    with pytest.raises(TransportError, match="HTTP 302 redirect to /echo: give the final URL"):
        HttpTransport(url).send(LIST)
    reply = HttpTarget(url, TOKENS).send("owner", LIST)
    assert reply.http_status == 302 and reply.transport_error == (
        "HTTP 302 redirect to /echo: the checker does not follow redirects; give it the final URL")
    assert server.hits == ["/moved"] * 3  # nobody went to /echo


# -- a stdio child's stderr -------------------------------------------------------------------------------------------

CHATTY = ("import sys\nsys.stderr.write('noise ' * 200_000)\nsys.stderr.write('the last words\\n')\n"
          "sys.stderr.flush()\nline = sys.stdin.readline()\n"
          "print('{\"jsonrpc\": \"2.0\", \"id\": 1, \"result\": {}}', flush=True)\n")


@pytest.mark.external  # a child process
def test_a_child_that_fills_its_stderr_pipe_still_answers_and_only_the_tail_is_kept() -> None:
    transport = StdioTransport([sys.executable, "-c", CHATTY], stderr=subprocess.PIPE)
    try:
        transport.send(LIST | {"id": 1})
        assert transport.receive(30) == {"jsonrpc": "2.0", "id": 1, "result": {}}  # 1.2 MB went to stderr first
    finally:
        assert transport.close() == 0
    tail = transport.stderr_tail()
    assert tail.endswith("noise the last words\n") and len(tail.encode()) <= STDERR_KEEP
