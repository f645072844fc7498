"""`python -m bench --cluster` for real, briefly: every stack starts on loopback, serves the flow, and stops
whole; a run of the option leaves no process of its own behind. Bounded: a fraction of a second per stack."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bench import __main__ as bench_main
from bench import cluster
from loopback import loadgen

pytestmark = [
    pytest.mark.external,  # nginx, redis-server, granian and uvicorn processes
    pytest.mark.skipif(not (Path(cluster.NGINX).exists() and shutil.which(cluster.REDIS_SERVER)),
                       reason="nginx or redis-server is not installed (bash scripts/test.sh installs both)"),
]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _children() -> set[int]:
    """This process's live children, from /proc (the stacks' processes are its children or theirs)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            out.add(int(stat.parent.name))
    return out


def test_our_cluster_serves_the_flow_and_stops_whole() -> None:
    stack = cluster.ours_nginx("t-ours", replicas=2, workers=1, threads=2)
    try:
        pids = [pid for part in stack.parts for pid in part.pids()]
        assert len(stack.parts) == 4  # Redis, two replicas, nginx
        conn = loadgen.Conn("127.0.0.1", stack.port, "/mcp", loadgen.flow_headers("bob-token"))
        for n in range(4):  # round-robin: rounds and retries cross the replicas, the store is shared
            loadgen.one_flow(conn, 2 + 2 * n)
        conn.close()
        assert stack.cpu_seconds() > 0
    finally:
        stack.stop()
    assert not [pid for pid in pids if _alive(pid)]


def test_a_cluster_run_measures_every_stack_and_leaves_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    before = _children()
    code = bench_main.main(["--cluster", "--clients", "1", "--seconds", "0.3", "--warmup", "0.1", "--rounds", "1",
                            "--workers", "1", "--no-write"])
    out = capsys.readouterr().out
    assert code == 0
    for name in ("ours-nginx-2", "ours-direct", "sdk-nginx-2", "floor-nginx-2", "floor-direct",
                 "floor-single-use-direct"):
        assert f"| 1 | `{name}` |" in out
    assert "No failed flow on any stack." in out
    assert _children() <= before
