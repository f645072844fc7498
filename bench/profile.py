"""Profile the per-request path of POST /mcp in-process: the WSGI app called directly, no server, no socket.

    .venv/bin/python -m bench.profile                 # CPU µs per flow, then cProfile's top functions
    .venv/bin/python -m bench.profile --flows 300 --no-profile
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out .venv/bin/python -m bench.profile \\
        --flows 200 --no-profile          # instruction counts: stable on a busy machine

A flow is the benchmark's: `tools/call deploy` → `input_required` → the retry with the answer and
the ticket, both as WSGI environs built once, exactly as a server would pass them. The app is the
real `create_app()` with the SQLite redeemed store, so the figure is what a worker spends per flow
before the HTTP server's own costs. CPU time comes from `time.process_time`, which a busy machine
disturbs far less than wall-clock time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.compared_servers import BENCH_KEY
from loopback.loadgen import ACCEPT, deploy_request, flow_headers
from web.site.deployment import without_lean_mcp

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


#: The process environment, read once: granian copies it into every environ in Rust, so reading
#: `os.environ` again per request here would count the harness's work as the app's.
_PROCESS_ENV = dict(os.environ)


def environ(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """The environ granian would pass: its WSGI adapter starts every one from a copy of `os.environ`."""
    env: dict[str, Any] = {**_PROCESS_ENV,
        "REQUEST_METHOD": "POST", "SCRIPT_NAME": "", "PATH_INFO": "/mcp", "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
        "wsgi.version": (1, 0), "CONTENT_LENGTH": str(len(body)), "HTTP_HOST": "127.0.0.1:8000",
    }
    for name, value in headers.items():
        key = name.upper().replace("-", "_")
        env[key if key == "CONTENT_TYPE" else f"HTTP_{key}"] = value
    return env


def call(app: WSGIApp, body: bytes, headers: dict[str, str]) -> tuple[str, bytes]:
    seen: list[str] = []

    def start_response(status: str, _headers: list[tuple[str, str]], _exc: Any = None) -> Callable[[bytes], None]:
        seen.append(status)
        return lambda _data: None

    result = app(environ(body, headers), start_response)
    try:
        data = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return seen[0], data


def flow(app: WSGIApp, request_id: int, headers: dict[str, str]) -> None:
    first = deploy_request(request_id, "staging")
    status, data = call(app, json.dumps(first).encode(), headers)
    result = json.loads(data)["result"]
    first["params"].update(inputResponses={k: ACCEPT for k in result["inputRequests"]},
                           requestState=result["requestState"])
    first["id"] = request_id + 1
    status, data = call(app, json.dumps(first).encode(), headers)
    if not status.startswith("200") or b"deployed to staging" not in data:
        raise RuntimeError(f"flow {request_id} failed: {status} {data[:200]!r}")


def build(kind: str, tmp: str, *, store: str = "sqlite") -> WSGIApp:
    if kind == "floor":
        from bench import floor

        return floor.app  # canned answers: what the harness itself costs per flow
    from app import create_app

    config = {"MRTR_SECRET_KEYS": BENCH_KEY, "MRTR_STORE": store,
              "MRTR_STORE_PATH": str(Path(tmp) / "redeemed.sqlite3")}
    app = create_app(config)
    if kind == "lean":
        return app  # as served: /mcp through the WSGI entry app.py installs in front of Flask
    if kind == "flask":
        without_lean_mcp(app)
        return app  # /mcp through the Flask view, for comparison
    raise ValueError(kind)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.splitlines()[0])
    p.add_argument("--flows", type=int, default=1000)
    p.add_argument("--app", choices=["lean", "flask", "floor"], default="lean",
                   help="lean: the app as served (/mcp beside Flask); flask: /mcp through the Flask view; "
                   "floor: bench/floor.py's canned answers (the harness's own cost)")
    p.add_argument("--store", choices=["sqlite", "memory"], default="sqlite", help="the redeemed store")
    p.add_argument("--no-profile", action="store_true", help="only the CPU time per flow")
    p.add_argument("--top", type=int, default=30)
    args = p.parse_args(argv)
    headers = flow_headers("bob-token")
    with tempfile.TemporaryDirectory(prefix="mrtr-profile-") as tmp:
        app = build(args.app, tmp, store=args.store)
        for i in range(50):  # warm-up
            flow(app, 2 * i + 2, headers)
        rid = 10**6
        best = float("inf")
        for _ in range(5):  # best of 5 batches: the least disturbed
            t0 = time.process_time()
            for _ in range(args.flows // 5):
                flow(app, rid, headers)
                rid += 2
            best = min(best, (time.process_time() - t0) / (args.flows // 5))
        print(f"{args.app}: {best * 1e6:.0f} µs CPU per flow (2 requests), best of 5 batches of {args.flows // 5}")
        if args.no_profile:
            return 0
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.flows):
            flow(app, rid, headers)
            rid += 2
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.top)
        print(out.getvalue())
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(args.top)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
