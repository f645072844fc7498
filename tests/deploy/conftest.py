"""`scripts/cluster.sh` for real: nginx, two production replicas and Redis on free loopback ports.

The cluster starts once per module and is stopped with SIGTERM at the end; the fixture then checks that
every process it started is gone. Every wait is bounded; nothing leaves loopback.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from loopback.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
TOKENS = "bob-secret-cluster=bob,alice-secret-cluster=alice"
KEYS = "cluster-test-key-0123456789abcdef0123456789abcdef"


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Cluster:
    port: int
    replica_ports: tuple[int, ...]
    redis_port: int
    process: subprocess.Popen[bytes]
    log: Path
    run_parent: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _start(tmp: Path, extra_env: dict[str, str] | None = None) -> Cluster:
    """Start the cluster on free ports; raises AssertionError with the log's tail when it does not come up."""
    port, first, redis_port = free_port(), free_port(2), free_port()  # the replicas take two ports in a row
    replica_ports = (first, first + 1)
    log = tmp / f"cluster-{port}.log"
    # The run folder nginx's workers (user nobody, the script runs as root) write bodies into: under /tmp,
    # not pytest's own folders, which are closed to every other user.
    run_parent = Path(tempfile.mkdtemp(prefix="mrtr-deploy-"))
    run_parent.chmod(0o711)
    env = {**os.environ, "PORT": str(port), "REPLICA_PORT": str(first), "REDIS_PORT": str(redis_port),
           "REPLICAS": "2", "WORKERS": "2", "THREADS": "2", "MRTR_TOKENS": TOKENS, "MRTR_SECRET_KEYS": KEYS,
           "MRTR_STATE_DIR": str(tmp / "state"), "TMPDIR": str(run_parent), **(extra_env or {})}
    with open(log, "wb") as out:
        process = subprocess.Popen(["bash", str(ROOT / "scripts" / "cluster.sh")], cwd=ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    cluster = Cluster(port, replica_ports, redis_port, process, log, run_parent)
    deadline = time.monotonic() + 120
    while not (answers(port) and all(answers(p) for p in replica_ports)):
        if process.poll() is not None or time.monotonic() > deadline:
            try:
                stop(cluster)
                left = ""
            except AssertionError as exc:
                left = f" ({exc})"
            text = log.read_text(errors="replace")
            # A port taken meanwhile shows at the top of a long panic: say so where start_cluster looks.
            taken = " (a port was in use)" if "in use" in text else ""
            raise AssertionError(f"the cluster did not start{taken}{left}:\n{text[-3000:]}")
        time.sleep(0.1)
    return cluster


def stop(cluster: Cluster) -> None:
    """SIGTERM, as an operator would; then check that every process of the cluster is gone."""
    process = cluster.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    try:
        os.killpg(process.pid, 0)
        leftover = True
    except ProcessLookupError:
        leftover = False
    if cluster.run_parent is not None:
        shutil.rmtree(cluster.run_parent, ignore_errors=True)
    assert not leftover, "scripts/cluster.sh left processes behind after SIGTERM"


def start_cluster(tmp: Path, extra_env: dict[str, str] | None = None) -> Cluster:
    """The cluster on free ports, with `extra_env` on top of the tests' settings."""
    try:
        return _start(tmp, extra_env)
    except AssertionError as exc:
        # A free port found a moment ago can be taken by another process before the cluster binds it; that,
        # and only that, earns one more try on other ports.
        if "in use" not in str(exc):
            raise
        return _start(tmp, extra_env)


@contextlib.contextmanager
def running_cluster(tmp: Path, extra_env: dict[str, str] | None = None) -> Iterator[Cluster]:
    """A started cluster, stopped (and every port checked free) when the block ends."""
    started = start_cluster(tmp, extra_env)
    try:
        yield started
    finally:
        stop(started)
    ports = (started.port, *started.replica_ports, started.redis_port)
    assert not any(answers(p) for p in ports), started.log.read_text(errors="replace")[-2000:]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("cluster")) as started:
        yield started

