"""The client's stdio transport: spawn the server's command, one JSON-RPC message per line each way.

`StdioTransport` is an `mrtr.Transport` over a child process's stdin and stdout. A line that is not a JSON object
is a `TransportError` naming it; a server that exits or says nothing in time makes `receive` return None. The
child's stderr goes where this process's goes (its diagnostics stay visible), and `close` ends stdin, waits a
moment, then kills the child it started.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import subprocess
from collections.abc import Mapping
from typing import IO

from mrtr import JSONObject
from mrtr.client_errors import TransportError

MAX_LINE = 4 * 1024 * 1024


class StdioTransport:
    """Messages to and from a server process started from `command` (a shell-style string or an argv list)."""

    def __init__(self, command: str | list[str], *, env: Mapping[str, str] | None = None,
                 stderr: IO[bytes] | int | None = None) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("the stdio command is empty")
        self.argv = argv
        try:
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                            env={**os.environ, **(env or {})})
        except OSError as exc:
            raise TransportError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from None
        assert self.process.stdout is not None and self.process.stdin is not None
        self._stdin, self._stdout = self.process.stdin, self.process.stdout
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ)
        self._buffer = b""

    def send(self, message: JSONObject) -> None:
        try:
            self._stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
            self._stdin.flush()
        except (BrokenPipeError, ValueError):
            raise TransportError(f"the server process ({self.argv[0]}) is gone: "
                                 f"exit status {self.process.poll()}") from None

    def receive(self, timeout: float) -> JSONObject | None:
        while True:
            while b"\n" not in self._buffer:
                if not self._selector.select(timeout=timeout):
                    return None
                chunk = os.read(self._stdout.fileno(), 65536)
                if not chunk:
                    return None
                self._buffer += chunk
                if len(self._buffer) > MAX_LINE:
                    raise TransportError(f"the server wrote a line longer than {MAX_LINE // 1024} KiB")
            line, self._buffer = self._buffer.split(b"\n", 1)
            if line.strip():
                break
        try:
            message = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            message = None
        if not isinstance(message, dict):
            raise TransportError(f"the server wrote a line that is not a JSON-RPC message: {line[:80]!r}")
        return message

    def close(self, timeout: float = 5.0) -> int:
        """End the server: close its stdin, wait up to `timeout`, then kill it. Returns its exit status."""
        try:
            self._stdin.close()
        except OSError:
            pass
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()
        finally:
            self._selector.close()
            self._stdout.close()
