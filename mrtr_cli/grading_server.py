"""The grading server `mrtr check-client` points a client at: the flows of `mrtr_grading` served as a 2026-07-28
stateless Streamable HTTP MCP server on a free 127.0.0.1 port, every request answered through one `Recording`.

This module owns the HTTP adapter only: bodies in, JSON out, bad input answered with a clear error. The flows, the
recording and the rules live in `mrtr_grading`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mrtr_grading import Recording

MAX_BODY = 1_000_000


class _Handler(BaseHTTPRequestHandler):
    server: GradingServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """Quiet: the recording is the log."""

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._send(405, b"", "text/plain")  # stateless: no standalone event stream

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = self.headers.get("Content-Length") or "0"
        size = int(length) if length.isdigit() else -1
        if not 0 <= size <= MAX_BODY:
            self._send(413 if size > MAX_BODY else 400, b"a body of at most 1 MB with its Content-Length",
                       "text/plain")
            return
        try:
            message = json.loads(self.rfile.read(size))
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._send(400, json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32700, "message": "the body is not JSON"}}).encode())
            return
        if not isinstance(message, dict) or "id" not in message:
            self._send(202, b"", "text/plain")  # a notification or a response: nothing to answer
            return
        reply = self.server.recording.answer(message, headers=dict(self.headers.items()))
        self._send(200, json.dumps(reply, ensure_ascii=False).encode())


class GradingServer(ThreadingHTTPServer):
    """The grading server on a free 127.0.0.1 port; `url` is its MCP endpoint. Use as a context manager."""

    daemon_threads = True

    def __init__(self, recording: Recording | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.recording = recording or Recording()
        # a short poll so that shutting down (after every run) takes a twentieth of a second, not half a second
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), name="mrtr-check-client",
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mcp"

    def __enter__(self) -> GradingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
