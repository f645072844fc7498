"""scripts/production.sh: serves the app on 127.0.0.1 at PORT with WORKERS processes, and stops cleanly.

The script ends with `exec`, so the pid we start is the server's own: SIGTERM goes straight to
granian, which ends its workers and exits 0. Every wait is bounded.

The test waits for every worker to have started before it sends SIGTERM: granian's worker that is
still importing the app when the stop arrives is only ended by `--workers-kill-timeout` (10 s).
"""

from __future__ import annotations

import http.client
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from loopback.launchers import PRODUCTION_SH, ROOT, Served, free_port, granian_app, wait_for_port, wait_until_settled
from loopback.loadgen import Conn, flow_headers, one_flow, run_flows

KEY = "production-key-0123456789abcdef0123456789abcdef"


def start(tmp: str, *extra: str, **settings: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "sqlite",
           "MRTR_STORE_PATH": str(Path(tmp) / "redeemed.sqlite3"), **settings}
    with open(Path(tmp) / "server.log", "wb") as log:
        return subprocess.Popen(["bash", str(PRODUCTION_SH), *extra], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_log(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if text in path.read_text(errors="replace"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not logged within {timeout:g} s:\n{path.read_text(errors='replace')}")


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Clean-up only: whatever is left of the group the test started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def test_it_serves_on_port_with_the_workers_asked_for_and_exits_cleanly_on_sigterm() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="mrtr-production-") as tmp:
        proc = start(tmp, "--log-level", "info", PORT=str(port), WORKERS="2", THREADS="4")
        try:
            wait_for_port(port, proc)
            for n in (1, 2):
                wait_for_log(Path(tmp) / "server.log", f"Started worker-{n}\n", proc)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
            conn.request("GET", "/")
            page = conn.getresponse()
            assert page.status == 200 and b"<" in page.read()
            conn.close()
            flow = Conn("127.0.0.1", port, "/mcp", flow_headers("bob-token"))
            one_flow(flow, 2)  # the MCP endpoint answers the whole deploy flow
            flow.close()

            served = Served("production", port, proc, Path(tmp) / "server.log")
            assert Path(f"/proc/{proc.pid}/comm").read_text().strip() != "bash"  # exec replaced the shell
            workers = served.pids()[1:]
            assert len(workers) == 2  # WORKERS worker processes under the server

            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
            log = (Path(tmp) / "server.log").read_text(errors="replace")
            assert "Traceback" not in log, log
            assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]  # no worker outlived it
        finally:
            if proc.poll() is None:
                stop_group(proc)
        with_no_server = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            with_no_server.request("GET", "/")
            refused = False
        except OSError:
            refused = True
        assert refused


@pytest.mark.parametrize(("settings", "message"), [
    ({"THREADS": "1"}, "THREADS must be at least 2"),
    ({"THREADS": "two"}, "THREADS must be a whole number"),
    ({"THREADS": "4", "MRTR_HELD_STREAMS": "4"}, "MRTR_HELD_STREAMS (4) must be below THREADS (4)"),
    ({"THREADS": "4", "MRTR_HELD_STREAMS": "-1"}, "MRTR_HELD_STREAMS must be a whole number"),
])
def test_it_refuses_threads_that_a_held_legacy_call_could_use_up(settings: dict[str, str], message: str) -> None:
    with tempfile.TemporaryDirectory(prefix="mrtr-production-") as tmp:
        proc = start(tmp, PORT=str(free_port()), **settings)
        try:
            assert proc.wait(timeout=30) == 2
            assert message in (Path(tmp) / "server.log").read_text()
        finally:
            if proc.poll() is None:
                stop_group(proc)


def test_a_bench_server_is_handed_over_only_once_every_worker_has_loaded_the_app() -> None:
    """The port answers as soon as granian's main process listens; a run started before the second
    worker has imported the app puts every connection on the first (bench.compared_servers.wait_until_settled)."""
    with granian_app(workers=2, threads=2, extra_args=("--log-level", "info")) as served:
        log = served.log_path.read_text(errors="replace")
    assert "Started worker-1" in log and "Started worker-2" in log, log


def settling(tmp: Path, *, children: int, busy_s: float) -> tuple[Served, Path]:
    """A stand-in server: a shell whose `children` children each spin the CPU for `busy_s` (importing
    an app, as far as the wait can tell), then touch a file and sleep."""
    done = tmp / "done"
    child = (f"import pathlib, time\nend = time.monotonic() + {busy_s}\nwhile time.monotonic() < end: pass\n"
             f"pathlib.Path({str(done)!r}).touch()\ntime.sleep(60)")
    script = " & ".join([f"exec {sys.executable} -c {shlex.quote(child)}"] * children) + " & wait"
    proc = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    return Served("stand-in", 0, proc, tmp / "log"), done


def test_the_wait_for_a_started_server_returns_after_its_workers_go_idle(tmp_path: Path) -> None:
    served, done = settling(tmp_path, children=1, busy_s=0.8)
    try:
        wait_until_settled(served, children=1, timeout=20)
        assert done.exists()  # not while the worker was still busy
    finally:
        stop_group(served.proc)


def test_the_wait_for_a_started_server_gives_up_on_missing_workers_and_on_an_exit(tmp_path: Path) -> None:
    served, _ = settling(tmp_path, children=1, busy_s=0.0)
    try:
        with pytest.raises(RuntimeError, match="not all started"):
            wait_until_settled(served, children=2, timeout=1.0)
    finally:
        stop_group(served.proc)
    with pytest.raises(RuntimeError, match="exited with code 3"):
        wait_until_settled(Served("gone", 0, subprocess.Popen(["bash", "-c", "exit 3"]), tmp_path / "log"),
                           children=0, timeout=20)


def test_the_load_generator_spreads_its_clients_over_processes_and_counts_each_flow_once() -> None:
    """bench's run_flows: 5 clients, 2 to a process, so three forked processes, each result merged."""
    with granian_app(workers=1, threads=2) as served:
        result = run_flows("127.0.0.1", served.port, clients=5, seconds=1.0, warmup=0.2, per_process=2,
                           cpu_probe=served.cpu_seconds)
    assert result.errors == 0, result.first_errors
    assert result.flows == len(result.latencies_ms) > 0
    assert all(ms > 0 for ms in result.latencies_ms)
    assert result.client_cpu_s > 0  # the children's CPU reaches the parent's count
    assert result.server_cpu_ms_per_flow is not None and result.server_cpu_ms_per_flow > 0


def test_the_load_generator_reports_a_server_that_refuses_as_errors() -> None:
    with granian_app(workers=1, threads=2) as served:
        result = run_flows("127.0.0.1", served.port, clients=3, seconds=10.0, warmup=0.0, per_process=2,
                           token="not-a-token", max_flows_per_client=3)
    assert result.flows == 0
    assert result.errors == 9
    assert result.first_errors and all("HTTP 401" in e for e in result.first_errors)
