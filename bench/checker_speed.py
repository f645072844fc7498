"""How long `mrtr check` takes on a slow sound server: moves played one after another, then several at a time.

    .venv/bin/python -m bench --checker          # writes its own section of bench/RESULTS.md
    .venv/bin/python -m bench --checker --quick  # HTTP and stdio with --skip-late only

The server is this app's own, sound, with every request answered after `DELAY` seconds: over HTTP, the app in
process on a loopback port behind a WSGI wrapper that sleeps before each POST; over stdio, `python -m
bench.checker_speed --serve-stdio DELAY`, one process per principal, each line served in a thread of its own after
the delay (the answer itself made one line at a time, under a lock). Each check is timed from the call of `run_check`
to its report, wall clock, and its report must pass: a run that does not is reported as such, never timed as if it
had. Targets (issue 31): with --skip-late, under 20 s at 0.8 s a request; a full check, about the ticket's lifetime
plus a few seconds (a 20 s ticket here, so the run stays short).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from werkzeug.serving import make_server

from bench.recorded import CHECKER
from moves.schedule import WIDTH

DELAY = 0.8
#: The ticket lifetime of the full checks (seconds): short, so a full check's wait stays short too.
TTL = 20
TARGET_SKIP_LATE_S = 20.0
#: A full check may take the ticket's lifetime plus this much (the late move's margin and its own requests).
TARGET_FULL_SLACK_S = 8.0
KEY = "bench-checker-key-0123456789abcdef0123456789"
TOKENS = [("bob", "bob-token"), ("alice", "alice-token")]


@dataclass(frozen=True)
class Timed:
    transport: str
    mode: str
    skip_late: bool
    seconds: float
    requests: int
    summary: str
    ok: bool


class Delayed:
    """A WSGI app whose every POST is answered `delay` seconds late (the latency of a slow server)."""

    def __init__(self, app: Any, delay: float) -> None:
        self.app, self.delay = app, delay
        self.requests = 0
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("REQUEST_METHOD") == "POST":
            with self.lock:
                self.requests += 1
            time.sleep(self.delay)
        return self.app(environ, start_response)


@contextmanager
def http_server(delay: float, ttl: int) -> Iterator[tuple[str, Delayed]]:
    """The app on a free loopback port, each POST `delay` seconds late: its /mcp URL and the wrapper."""
    from app import create_app

    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "memory", "MRTR_TICKET_TTL": ttl})
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    delayed = Delayed(app.wsgi_app, delay)
    app.wsgi_app = delayed  # type: ignore[method-assign]
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/mcp", delayed
    finally:
        server.shutdown()
        server.server_close()


def serve_stdio(delay: float) -> int:
    """This app's lesson server over stdio, each line answered `delay` seconds after it came, lines in parallel."""
    from mrtr_cli.stdio_server import server_from_env
    from mrtr_settings.environment import read_settings

    conn = server_from_env().connect(read_settings().principal, channel=True)
    lock, out = threading.Lock(), threading.Lock()

    def serve(line: bytes) -> None:
        time.sleep(delay)
        with lock:
            messages = conn.receive_text(line).messages
        with out:
            for message in messages:
                sys.stdout.buffer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
            sys.stdout.buffer.flush()

    for line in sys.stdin.buffer:
        if line.strip():
            threading.Thread(target=serve, args=(line,), daemon=True).start()
    return 0


def stdio_target(delay: float, ttl: int, timing: Any) -> Any:
    from moves.targets.stdio import StdioTarget

    env = {**os.environ, "MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "memory", "MRTR_TICKET_TTL": str(ttl),
           "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return StdioTarget([sys.executable, "-m", "bench.checker_speed", "--serve-stdio", str(delay)], env=env,
                       timing=timing, timeout=30)


def timed_check(transport: str, concurrency: int, skip_late: bool, delay: float, ttl: int) -> Timed:
    from moves.check import CheckOptions, run_check
    from moves.targets.http import HttpTarget
    from moves.targets.remote import Timing

    options = CheckOptions(skip_late=skip_late, concurrency=concurrency)
    timing = Timing(skip_late=skip_late)
    mode = "one at a time" if concurrency == 1 else f"{concurrency} at a time"

    def measure(target: Any, requests: Callable[[], int]) -> Timed:
        started = time.perf_counter()
        report = run_check(target, options)
        seconds = time.perf_counter() - started
        return Timed(transport, mode, skip_late, seconds, requests(), report.summary(), report.ok)

    if transport == "http":
        with http_server(delay, ttl) as (url, delayed), closing(HttpTarget(url, TOKENS, timing=timing,
                                                                          timeout=30)) as target:
            return measure(target, lambda: delayed.requests)
    with closing(stdio_target(delay, ttl, timing)) as target:
        return measure(target, lambda: 0)


def section(rows: list[Timed], started: str, note: str, delay: float) -> str:
    by = {(r.transport, r.mode, r.skip_late): r for r in rows}
    lines = [CHECKER.begin, f"## The checker on a slow sound server: moves one at a time, then {WIDTH} at a time", "",
             f"Recorded by `python -m bench --checker` on {started} UTC ({platform.python_version()}, "
             f"`nproc` {os.cpu_count()}){'; ' + note if note else ''}. The app's own sound server, every request "
             f"answered {delay:g} s late; over stdio one process per principal, lines served in parallel. Wall "
             f"clock from `run_check` to its report. Full checks use a {TTL} s ticket. Targets: `--skip-late` under "
             f"{TARGET_SKIP_LATE_S:g} s; a full check within the ticket's lifetime plus {TARGET_FULL_SLACK_S:g} s.",
             "", "| transport | late moves | moves | seconds | requests (HTTP) | report | target |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r.skip_late:
            target = f"under {TARGET_SKIP_LATE_S:g} s" if r.mode == f"{WIDTH} at a time" else ""
            met = r.seconds < TARGET_SKIP_LATE_S
        else:
            target = f"under {TTL + TARGET_FULL_SLACK_S:g} s" if r.mode == f"{WIDTH} at a time" else ""
            met = r.seconds < TTL + TARGET_FULL_SLACK_S
        verdict = f"{target}: {'met' if met else 'MISSED'}" if target else ""
        lines.append(f"| {r.transport} | {'skipped' if r.skip_late else 'played'} | {r.mode} | {r.seconds:.1f} | "
                     f"{r.requests or ''} | {'PASS' if r.ok else 'NOT PASSING: ' + r.summary} | {verdict} |")
    speedups = []
    for transport in ("http", "stdio"):
        for skip in (True, False):
            serial, fast = by.get((transport, "one at a time", skip)), by.get((transport, f"{WIDTH} at a time", skip))
            if serial and fast:
                how = "--skip-late" if skip else "full"
                speedups.append(f"{transport} {how}: {serial.seconds / fast.seconds:.1f}x")
    if speedups:
        lines += ["", f"Speed-up, {WIDTH} at a time over one at a time: " + "; ".join(speedups) + "."]
    lines.append(CHECKER.end)
    return "\n".join(lines)


def run(results: Path, before: str, *, write: bool, quick: bool = False, note: str = "",
        delay: float = DELAY) -> int:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    plan = [(t, c, True) for t in ("http", "stdio") for c in (1, 4, WIDTH)]
    if not quick:
        plan += [(t, c, False) for t in ("http", "stdio") for c in (1, WIDTH)]
    rows = []
    for transport, concurrency, skip in plan:
        row = timed_check(transport, concurrency, skip, delay, TTL)
        print(f"{transport:6} {'--skip-late' if skip else 'full':12} {row.mode:14} {row.seconds:6.1f} s  "
              f"{row.requests or '':>4}  {row.summary}", flush=True)
        rows.append(row)
    report = section(rows, started, note, delay)
    print("\n" + report)
    if write:
        text = results.read_text(encoding="utf-8") if results.exists() else ""
        results.write_text(CHECKER.put(text, report, before), encoding="utf-8")
        print(f"\nwrote the --checker section of {results}")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-stdio"]:
        sys.exit(serve_stdio(float(sys.argv[2])))
    sys.exit(run(Path(__file__).resolve().parent / "RESULTS.md", "", write=False, quick="--quick" in sys.argv))
