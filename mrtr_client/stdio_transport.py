"""The client's stdio transport: spawn the server's command, one JSON-RPC message per line each way.

`StdioTransport` is an `mrtr.Transport` over a child process's stdin and stdout. A line that is not a JSON object
is a `TransportError` naming it; a server that exits or says nothing in time makes `receive` return None. The
child's stderr goes where this process's goes (its diagnostics stay visible) unless the caller asks for a pipe: then
`StderrTail` reads it to its end on a thread of its own, keeping only its last bytes, so a child that writes a lot
there never blocks on a full pipe (the checker's stdio target, moves.targets.stdio, drains its processes with it
too). `close` ends stdin, waits a moment, then kills the child it started.
"""

from __future__ import annotations

import collections
import json
import os
import selectors
import shlex
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import IO

from mrtr import JSONObject
from mrtr.client_errors import TransportError

MAX_LINE = 4 * 1024 * 1024
#: Bytes of a child's stderr a `StderrTail` keeps (the end, where a dying server says why).
STDERR_KEEP = 8192

#: Reads up to n bytes from a file descriptor (os.read; a test holds a reader back with its own).
Read = Callable[[int, int], bytes]


class StderrTail:
    """A child's stderr read to its end on a thread of its own, keeping only the last `keep` bytes.

    `ended` is set once the end of the pipe is reached (or reading failed), and then `on_end` is called."""

    def __init__(self, stream: IO[bytes], *, keep: int = STDERR_KEEP, read: Read = os.read,
                 on_end: Callable[[], None] | None = None) -> None:
        self.keep = keep
        self.ended = threading.Event()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._lock = threading.Lock()
        self._on_end = on_end
        self._thread = threading.Thread(target=self._drain, args=(stream, read), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes], read: Read) -> None:
        try:
            while chunk := read(stream.fileno(), 65536):
                with self._lock:
                    self._chunks.append(chunk)
                    self._size += len(chunk)
                    while self._size - len(self._chunks[0]) >= self.keep and len(self._chunks) > 1:
                        self._size -= len(self._chunks.popleft())
        except (OSError, ValueError):
            return
        finally:
            self.ended.set()
            if self._on_end is not None:
                self._on_end()

    def tail(self) -> bytes:
        """The last `keep` bytes read so far."""
        with self._lock:
            return b"".join(self._chunks)[-self.keep:]

    def join(self, timeout: float) -> None:
        self._thread.join(timeout=timeout)


class StdioTransport:
    """Messages to and from a server process started from `command` (a shell-style string or an argv list).

    `stderr` is where the child's stderr goes, as `subprocess.Popen` takes it; `subprocess.PIPE` means "keep its
    tail" (`stderr_tail`), read as it comes."""

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
        self._stderr = StderrTail(self.process.stderr) if self.process.stderr is not None else None
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

    def stderr_tail(self) -> str:
        """The end of what the child wrote on stderr so far ("" unless it was asked for with `stderr=PIPE`)."""
        return self._stderr.tail().decode("utf-8", "replace") if self._stderr is not None else ""

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
            if self._stderr is not None and self.process.stderr is not None:
                self._stderr.join(min(timeout, 2.0))  # longer only if a grandchild holds the pipe
                self.process.stderr.close()
