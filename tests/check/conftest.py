"""Servers the checker's tests point at: the app's own /mcp served for real, and a misbehaving HTTP server with
one bad answer per path. The flawed MRTR servers are the mutation suite's (`tests.mutants.harness.running`).

All listen on free 127.0.0.1 ports from daemon threads and stop when their fixture ends. No test waits for a
ticket to expire: the app's clock is a FakeClock and a mutant's a `tests.mutants.server.Clock`, and `on_clock`
makes the checker's late move (the CLI's and /check's) wait by moving that clock.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from app import create_app
from moves import check as check_module
from moves.targets.remote import Timing
from mrtr import FakeClock
from tests.browser.helpers import LiveServer, serve
from tests.conftest import APP_CONFIG
from web.check import runner as check_runner

TOKENS = ["--token", "bob=bob-token", "--token", "alice=alice-token"]


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The real app (create_app, on tests/conftest.py's APP_CONFIG), its /mcp and /check answering on a loopback
    port, on a FakeClock that starts at the real time (`app_clock`: run the late move inside `on_clock(app_clock)`).
    Its state (the /check runs among it) is kept in a directory of this module's own, so its runs never count
    against another module's per-visitor limit. A test that needs no server uses the `make_app` fixture."""
    state = tmp_path_factory.mktemp("state")
    config = {**APP_CONFIG, "MRTR_CLOCK": FakeClock(time.time()), "MRTR_STATE_DIR": str(state),
              "MRTR_CHECK_STATE_DIR": str(state / "check-runs")}
    with serve(create_app(config)) as live:
        yield live


@pytest.fixture(scope="module")
def app_clock(app_server: LiveServer) -> FakeClock:
    clock: FakeClock = app_server.app.config["MRTR_CLOCK"]
    return clock


@pytest.fixture(scope="module")
def mcp_url(app_server: LiveServer) -> str:
    return app_server.url + "/mcp"


@contextmanager
def on_clock(clock: Any) -> Iterator[None]:
    """Within: the late move of `python -m mrtr check` and of /check waits on `clock` (the target server's: a
    mutant's Clock, or the app's FakeClock; called for the time, `advance`d to wait), the only difference from a
    user's run."""
    on = functools.partial(Timing, clock=clock, sleep=clock.advance)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(check_module, "Timing", on)
        patch.setattr(check_runner, "Timing", on)
        yield


# -- a server that answers badly, one way per path ---------------------------------------------------


class BadServer(ThreadingHTTPServer):
    daemon_threads = True
    stop = threading.Event()
    seen: list[dict[str, str]] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up mid-answer is what these tests provoke: nothing to report."""


def _response(message: dict[str, Any], result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result}).encode()


class BadHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: BadServer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, ctype: str, body: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, chunk: bytes, ctype: str) -> None:
        """Write `chunk` again and again (chunked) until the client goes away or the test ends."""
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for _ in range(200_000):
                if self.server.stop.is_set():
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            return

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        message = json.loads(body)
        self.server.seen.append(dict(self.headers.items()))
        path = self.path
        if path == "/echo":
            self._send(200, "application/json", _response(message, {"resultType": "complete",
                                                                     "headers": dict(self.headers.items())}))
        elif path == "/sse":
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
            final = json.loads(_response(message, {"resultType": "complete"}))
            frames = f"event: message\r\ndata: {json.dumps(note)}\r\n\r\n: a comment\n\ndata: {json.dumps(final)}\n\n"
            self._send(200, "text/event-stream", frames.encode())
        elif path == "/html":
            page = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
            self._send(502, "text/html", page)
        elif path == "/login":
            self._send(200, "text/html; charset=utf-8", b"<html><title>Sign in</title></html>")
        elif path == "/notjson":
            self._send(200, "application/json", b'{"jsonrpc": "2.0", "id": 1, "result": {')
        elif path == "/notrpc":
            self._send(200, "application/json", b'{"hello": "world"}')
        elif path == "/wrongid":
            self._send(200, "application/json", json.dumps({"jsonrpc": "2.0", "id": 424242, "result": {}}).encode())
        elif path == "/nullid":
            error = {"code": -32700, "message": "Parse error"}
            self._send(400, "application/json", json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode())
        elif path == "/empty":
            self._send(202, "application/json", b"")
        elif path == "/redirect":
            self._send(307, "text/plain", b"", Location="http://127.0.0.1:1/elsewhere")
        elif path == "/huge":
            self._send(200, "application/json", _response(message, {"resultType": "complete", "x": "y" * 5_000_000}))
        elif path == "/endless-json":
            self._stream(b"[" * 1024, "application/json")
        elif path == "/endless-sse":
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
            self._stream(f"data: {json.dumps(note)}\n\n".encode(), "text/event-stream")
        elif path == "/silent":
            self.server.stop.wait(30)
        else:
            self._send(404, "text/plain", b"no such path")


@pytest.fixture(scope="module")
def bad_server() -> Iterator[str]:
    """A misbehaving server; yields its base URL (paths choose the misbehaviour)."""
    httpd = BadServer(("127.0.0.1", 0), BadHandler)
    httpd.stop = threading.Event()
    httpd.seen = []
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
