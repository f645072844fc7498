"""The benchmark's own servers, beside ours (loopback.launchers, shared with the tests): our app with /mcp
through the Flask view, the official Python SDK's server, and the floor, each under granian or uvicorn on a free
127.0.0.1 port, started and stopped as loopback.launchers starts ours.
"""

from __future__ import annotations

import re
import shlex
import sys
import tempfile
from collections.abc import Mapping

from loopback.launchers import (
    BENCH_KEY,
    PRODUCTION_SERVER,
    PRODUCTION_SH,
    ROOT,
    SERVERS,
    VENV_BIN,
    Served,
    free_port,
    granian_app,
    gunicorn_app,
    our_env,
    production_app,
    production_threads,
    spawn,
)

__all__ = ["BENCH_KEY", "PRODUCTION_SERVER", "PRODUCTION_SH", "ROOT", "SERVERS", "Served", "create_flask_view_app",
           "flask_view_granian_app", "floor_app", "free_port", "granian_app", "gunicorn_app", "production_app",
           "production_granian_argv", "production_threads", "sdk_app", "spawn"]


def create_flask_view_app() -> object:
    """The app with /mcp served by the Flask view (the WSGI entry app.py installs removed): the comparison
    `python -m bench --lean` measures the lean path against. For granian's `--factory` option."""
    from app import create_app
    from web.site.deployment import without_lean_mcp

    app = create_app()
    without_lean_mcp(app)
    return app


def flask_view_granian_app(*, workers: int = 2, threads: int = 8, env: Mapping[str, str] | None = None,
                           name: str = "flask-view") -> Served:
    """`create_flask_view_app` under granian, with scripts/production.sh's options but that factory."""
    tmp = tempfile.TemporaryDirectory(prefix="mrtr-bench-")
    port = free_port()
    argv = [str(VENV_BIN / "granian"), "--interface", "wsgi", "--factory", "--host", "127.0.0.1",
            "--port", str(port), "--workers", str(workers), "--blocking-threads", str(threads), "--no-ws",
            "--workers-kill-timeout", "10", "--log-level", "warning", "bench.compared_servers:create_flask_view_app"]
    return spawn(name, argv, our_env(tmp, env), port, tmp, children=workers)


def sdk_app(*, workers: int = 1, json_response: bool = False, stateless: bool = False,
            port: int | None = None, name: str = "sdk", allowed_hosts: str = "") -> Served:
    """The official SDK's server (bench/sdk_server.py) under uvicorn, `workers` processes sharing a key.

    The defaults are `MCPServer.run("streamable-http")`'s: one uvicorn process, SSE responses
    allowed, sessions for legacy clients. `json_response` and `stateless` are the settings the
    SDK's docs advise for load-balanced deployments. `allowed_hosts` (comma-separated) adds Host
    values its DNS-rebinding check accepts, for a proxy in front that forwards a Host without a port.
    """
    tmp = tempfile.TemporaryDirectory(prefix="mrtr-bench-sdk-")
    port = port or free_port()
    argv = [sys.executable, str(ROOT / "bench" / "sdk_server.py"), "--transport", "http", "--port", str(port),
            "--workers", str(workers)]
    argv += ["--json-response"] if json_response else []
    argv += ["--stateless"] if stateless else []
    argv += ["--allowed-hosts", allowed_hosts] if allowed_hosts else []
    # One uvicorn process serves in-process; with more, its workers are children of the supervisor.
    return spawn(name, argv, {"MRTR_SDK_STATE_KEY": BENCH_KEY}, port, tmp, children=workers if workers > 1 else 0)


def production_granian_argv(*, port: int, workers: int, threads: int, target: str) -> list[str]:
    """granian's command line exactly as scripts/production.sh's `exec` line gives it, serving `target`.

    Read from the script, not copied, so a server measured beside ours (the floor) runs under the
    same settings as long as the script keeps them; anything in that line this cannot fill in is an
    error rather than a silent difference.
    """
    joined = PRODUCTION_SH.read_text().replace("\\\n", " ")  # continuation lines into one
    match = re.search(r'^exec "\$GRANIAN" (.*)$', joined, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no `exec \"$GRANIAN\" ...` line found in {PRODUCTION_SH}")
    *options, _app = shlex.split(match.group(1))
    values = {"$PORT": str(port), "$WORKERS": str(workers), "$THREADS": str(threads)}
    argv = [str(VENV_BIN / "granian")]
    for option in options:
        if option == "$@":  # the script passes its own extra arguments here; the bench passes none
            continue
        if option.startswith("$") and option not in values:
            raise RuntimeError(f"{PRODUCTION_SH.name}'s granian line has {option}, which the bench cannot fill in")
        argv.append(values.get(option, option))
    return [*argv, target]


def floor_app(*, workers: int = 2, threads: int | None = None, port: int | None = None,
              name: str = "floor", redis_url: str | None = None) -> Served:
    """bench/floor.py (canned answers, no checks) under granian with scripts/production.sh's settings; with
    `redis_url`, bench/floor_single_use.py (the same, each retry's ticket spent in that Redis first), its gate
    as wide as production.sh makes the app's (THREADS - 1)."""
    tmp = tempfile.TemporaryDirectory(prefix="mrtr-bench-floor-")
    port = port or free_port()
    threads = threads or production_threads()
    target = "bench.floor_single_use:create_app" if redis_url else "bench.floor:create_app"
    argv = production_granian_argv(port=port, workers=workers, threads=threads, target=target)
    env = {"FLOOR_REDIS_URL": redis_url, "MRTR_REDIS_WAITERS": str(threads - 1)} if redis_url else {}
    return spawn(name, argv, env, port, tmp, children=workers)
