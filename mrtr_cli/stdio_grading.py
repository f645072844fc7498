"""The checker's end of `mrtr check-client --stdio`: a Unix socket in a private temporary folder that the stdio
grading server (`mrtr_cli.grading_relay`, started by the client under test) connects to, one line per JSON-RPC
message each way, every request answered through the run's `Recording` (and stamped by its clock).

`server_command` is the command the client is given. This module owns the socket side only: bad lines get a clear
JSON-RPC error and the run goes on; the flows, the recording and the rules live in `mrtr_grading`.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
import tempfile
import threading
from pathlib import Path

from mrtr_grading import Recording

#: The longest request line the run reads (the HTTP adapter's body cap, plus its newline).
MAX_LINE = 1_000_001


def reply_to(line: bytes, recording: Recording) -> bytes:
    """The reply line to one request line: a JSON-RPC answer, an error for bad input, or b"\\n" for none."""
    if len(line) >= MAX_LINE:
        return _error(None, -32600, "a line of at most 1 MB")
    try:
        message = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(None, -32700, "the line is not JSON")
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return b"\n"  # a notification or a response: nothing to answer
    return json.dumps(recording.answer(message), ensure_ascii=False).encode() + b"\n"


def _error(id_: object, code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}).encode() + b"\n"


class StdioGradingServer:
    """The socket a stdio grading server relays to; a context manager. `command` is what the client runs."""

    def __init__(self, recording: Recording | None = None) -> None:
        self.recording = recording or Recording()
        self._folder = tempfile.TemporaryDirectory(prefix="mrtr-check-client-")  # 0700: this user's only
        self.path = str(Path(self._folder.name) / "run.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(8)
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, name="mrtr-check-client-stdio", daemon=True)

    @property
    def command(self) -> str:
        return shlex.join([sys.executable, "-m", "mrtr_cli.grading_relay", "--relay", self.path])

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed at the end of the run
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            while line := lines.readline(MAX_LINE):
                try:
                    conn.sendall(reply_to(line, self.recording))
                except OSError:
                    return

    def __enter__(self) -> StdioGradingServer:
        self._accepting.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (close alone may not)
        except OSError:
            pass
        self._sock.close()
        for thread in self._threads:
            thread.join(timeout=1.0)
        self._folder.cleanup()
