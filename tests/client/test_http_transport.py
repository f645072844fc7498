"""`mrtr_client.HttpTransport` when the other end is not a well-behaved MCP server: every failure is one
`TransportError` sentence naming what came back, never a traceback."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mrtr import Client
from mrtr.client_errors import TransportError
from mrtr_client import HttpTransport

from .terminal import run


@contextmanager
def answering(status: int, ctype: str, body: bytes, headers: dict[str, str] | None = None) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize(("status", "ctype", "body", "words"), [
    (401, "application/json", b"{}", "HTTP 401: the server refused the request's credentials (give a bearer token"),
    (200, "text/html", b"<html><title>Hi</title></html>", "HTTP 200 with text/html and no JSON-RPC message"),
    (200, "application/json", b"{not json", "the HTTP 200 body is not JSON"),
    (302, "text/plain", b"", "HTTP 302 redirect to http://elsewhere/: give the final URL"),
])
def test_a_reply_that_is_no_json_rpc_is_one_transport_error(status: int, ctype: str, body: bytes, words: str) -> None:
    with answering(status, ctype, body, {"Location": "http://elsewhere/"}) as url:
        transport = HttpTransport(url, timeout=5)
        with pytest.raises(TransportError, match=words.replace("(", r"\(")):
            transport.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})


def test_nothing_listening_is_a_transport_error_and_mrtr_call_says_so_in_one_line() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    with pytest.raises(TransportError, match="connection refused"):
        Client(HttpTransport(url)).request("tools/list", {})
    code, _out, err = run([url, "--legacy"])
    assert code == 1 and err == f"error: could not POST to {url}: connection refused (is the server running?)\n"


def test_an_event_stream_that_ends_without_the_response_is_no_answer() -> None:
    note = b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
    with answering(200, "text/event-stream", note) as url:
        client = Client(HttpTransport(url), timeout=5)
        with pytest.raises(TransportError, match="no response to tools/list"):
            client.request("tools/list", {})
    assert [line.message.get("method") for line in client.transcript] == ["tools/list", "notifications/progress"]
