"""Run the checker against one server of tests/mutants/server.py, over HTTP (in process) or stdio, on the
server's movable clock: the late move "waits" by moving that clock, so no test waits for real."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

from moves.catalog import Move
from moves.check import CheckOptions, Report, run_check
from moves.targets.http import HttpTarget
from moves.targets.remote import Timing
from moves.targets.stdio import StdioTarget
from tests.mutants.server import ALL, Clock, Sound, serve_http

SERVER = Path(__file__).resolve().parent / "server.py"
TOKENS = [("bob", "bob-token"), ("alice", "alice-token")]
DEFAULTS = CheckOptions()


def timing_on(clock: Clock) -> Timing:
    """The late move's wait on the server's clock: sleeping moves the server's now instead of the test's."""
    return Timing(clock=clock, sleep=clock.advance)


@contextmanager
def running(name: str) -> Iterator[tuple[str, Sound]]:
    """Server `name` of tests/mutants/server.py over HTTP in a thread: yields its URL and the server."""
    server = ALL[name](Clock())
    httpd = serve_http(server)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp", server
    finally:
        release = getattr(server, "release", None)
        if release is not None:
            release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def check_http(name: str, options: CheckOptions = DEFAULTS, *, timeout: float = 10.0,
               late_after: float | None = None, moves: Sequence[Move] | None = None) -> Report:
    with running(name) as (url, server):
        timing = timing_on(server.clock)
        timing.late_after = late_after
        with closing(HttpTarget(url, TOKENS, timeout=timeout, timing=timing)) as target:
            return run_check(target, options, moves=moves, secrets=[token for _, token in TOKENS])


def check_stdio(name: str, tmp_path: Path, options: CheckOptions = DEFAULTS, *, late_after: float | None = None,
                moves: Sequence[Move] | None = None) -> Report:
    clock = Clock.at_zero(tmp_path / f"{name}.clock")
    env = {**os.environ, "MRTR_PEER_CLOCK_FILE": str(clock.path)}
    timing = timing_on(clock)
    timing.late_after = late_after
    with closing(StdioTarget([sys.executable, str(SERVER), name], [("bob", "bob"), ("alice", "alice")], env=env,
                             timing=timing, timeout=20)) as target:
        return run_check(target, options, moves=moves)
