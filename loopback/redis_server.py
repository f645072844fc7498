"""A throwaway `redis-server` on a free loopback port, for tests that need a real Redis.

No persistence (`--save ''`, `--appendonly no`), no config file, loopback only. `start()` waits
for PING with a bounded retry loop and `stop()` kills the process; use it as a context manager.
Importing this module does not import `redis`; `url` is all a caller needs.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from loopback.ports import free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
START_TIMEOUT_S = 10.0
START_ATTEMPTS = 3


def ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    def __init__(self) -> None:
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        if not Path(REDIS_SERVER).exists():
            raise RuntimeError("redis-server not found: bash scripts/test.sh installs it with apt-get")
        self._dir = tempfile.TemporaryDirectory(prefix="mrtr-redis-")
        for _attempt in range(START_ATTEMPTS):  # another process may take the port between probe and bind
            self.port = free_port()
            self.proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", self._dir.name, "--protected-mode", "yes", "--loglevel", "warning"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline and self.proc.poll() is None:
                if ping(self.port):
                    return self
                time.sleep(0.05)
            self._kill()
        raise RuntimeError(f"redis-server did not answer PING after {START_ATTEMPTS} attempts")

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def stop(self) -> None:
        self._kill()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
