"""`scripts/cluster.sh` as a supervisor, for real: a replica's dead worker is respawned and a dead replica
started again while the other serves; Redis restarted keeps every spent ticket (its append-only file lives in a
folder that outlives a stop); SIGTERM under load lets every request nginx holds finish; nginx's logs outlive a
stop. Each destructive test runs its own cluster; every wait is a bounded poll."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from loopback.loadgen import deploy_request, flow_headers
from web.site.deployment import REPLICA_HEADER

from .conftest import Cluster, running_cluster, start_cluster, stop

BOB = "bob-secret-cluster"


def within(seconds: float, condition: Callable[[], bool], what: str) -> None:
    """Poll `condition` until it holds, for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.05)


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def granian_main(port: int) -> int | None:
    """The granian process serving `port` (its workers are its children, with the same command line)."""
    mains = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"--port" in argv and argv[argv.index(b"--port") + 1] == str(port).encode() \
                    and any(a.endswith(b"granian") for a in argv):
                mains.append(int(entry.name))
        except (OSError, IndexError):
            continue
    top = [pid for pid in mains if _ppid(pid) not in mains]
    return top[0] if len(top) == 1 else None


def get(cluster: Cluster, path: str = "/", port: int | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port or cluster.port, timeout=10,
                                      source_address=("127.0.0.60", 0))
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader(REPLICA_HEADER) or ""
    finally:
        conn.close()


def serves(cluster: Cluster, port: int) -> bool:
    """Whether the replica on `port` answers GET / now (one that is still starting may refuse or reset)."""
    try:
        return get(cluster, port=port)[0] == 200
    except (OSError, http.client.HTTPException):
        return False


def mcp(port: int, message: dict[str, Any], source: str = "127.0.0.61") -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15, source_address=(source, 0))
    try:
        conn.request("POST", "/mcp", body=json.dumps(message), headers=flow_headers(BOB))
        response = conn.getresponse()
        body = response.read()
        return response.status, json.loads(body) if body.strip().startswith(b"{") else {}
    finally:
        conn.close()


def retry_of(minted: dict[str, Any], request_id: int) -> dict[str, Any]:
    message = deploy_request(request_id, "staging")
    message["params"]["requestState"] = minted["requestState"]
    message["params"]["inputResponses"] = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    return message


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("supervised")) as started:
        yield started


def test_a_killed_worker_is_respawned_while_the_site_answers(cluster: Cluster) -> None:
    main = granian_main(cluster.replica_ports[0])
    assert main is not None
    within(30, lambda: len(children(main)) == 2, "replica-1 runs its two workers")
    victim = children(main)[0]
    os.kill(victim, signal.SIGKILL)
    assert [get(cluster)[0] for _ in range(20)] == [200] * 20
    within(30, lambda: len(children(main)) == 2 and victim not in children(main), "the worker came back")
    assert get(cluster, port=cluster.replica_ports[0])[0] == 200


def test_a_dead_replica_is_started_again_while_the_other_serves(cluster: Cluster) -> None:
    main = granian_main(cluster.replica_ports[0])
    assert main is not None
    for pid in (*children(main), main):  # the whole replica at once, as the out-of-memory killer would
        os.kill(pid, signal.SIGKILL)
    statuses = [get(cluster) for _ in range(20)]
    assert all(s[0] == 200 for s in statuses), statuses
    within(60, lambda: serves(cluster, cluster.replica_ports[0]), "replica-1 answers again")
    within(30, lambda: "replica-1" in {get(cluster)[1] for _ in range(4)}, "nginx sends to replica-1 again")


def test_spent_tickets_stay_spent_across_a_redis_restart(cluster: Cluster) -> None:
    retries = []
    for n in range(10):
        status, first = mcp(cluster.port, deploy_request(1, "staging"))
        assert status == 200 and first["result"]["resultType"] == "input_required"
        retry = retry_of(first["result"], 100 + n)
        status, done = mcp(cluster.port, retry)
        assert status == 200 and "result" in done, done
        retries.append(retry)
    client = redis.Redis(port=cluster.redis_port)
    before = int(client.info("server")["process_id"])
    client.close()
    os.kill(before, signal.SIGTERM)

    def restarted() -> bool:
        try:
            with redis.Redis(port=cluster.redis_port, socket_timeout=1) as fresh:
                return int(fresh.info("server")["process_id"]) != before
        except redis.RedisError:
            return False

    within(30, restarted, "the supervisor started Redis again")
    replays: list[tuple[int, dict[str, Any]]] = []
    for retry in retries:
        # A replica counts Redis as away for a moment after a failure (a retryable 503): asked again, it answers.
        deadline = time.monotonic() + 15
        while (answer := mcp(cluster.port, retry))[0] == 503 and time.monotonic() < deadline:
            time.sleep(0.1)
        replays.append(answer)
    assert all(a[1].get("error", {}).get("code") == -32602 for a in replays), [a[:2] for a in replays]


@dataclass
class Load:
    """Deploy flows played in a loop by several threads until the site stops taking connections."""

    results: list[tuple[float, float, str]] = field(default_factory=list)  # started, ended, outcome
    lock: threading.Lock = field(default_factory=threading.Lock)

    def play(self, port: int, source: str, deadline: float) -> None:
        n = 0
        while time.monotonic() < deadline:
            n += 1
            # `started` is when the request that gave the outcome was sent: a flow's retry sent after SIGTERM
            # may be turned away before nginx reads it, even though the flow's first call came before.
            started = time.monotonic()
            try:
                status, reply = mcp(port, deploy_request(n, "staging"), source)
                if status == 200 and "result" in reply:
                    started = time.monotonic()
                    status, reply = mcp(port, retry_of(reply["result"], n + 1_000_000), source)
                outcome = str(status)
            except ConnectionRefusedError:
                return  # nginx no longer listens: the stop has begun and this visitor is turned away cleanly
            except (OSError, http.client.HTTPException) as exc:
                outcome = type(exc).__name__
            with self.lock:
                self.results.append((started, time.monotonic(), outcome))


def test_sigterm_under_load_lets_every_request_in_flight_finish_and_keeps_the_logs(tmp_path: Path) -> None:
    started = start_cluster(tmp_path)
    load = Load()
    threads = [threading.Thread(target=load.play, args=(started.port, f"127.0.0.{70 + i}", time.monotonic() + 90))
               for i in range(6)]
    try:
        for thread in threads:
            thread.start()
        within(60, lambda: len(load.results) >= 30, "flows are being played")
        signalled = time.monotonic()
        started.process.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        started.process.wait(timeout=60)
    finally:
        stop(started)
    in_flight = [r for r in load.results if r[0] < signalled < r[1]]
    assert in_flight, "no request was in flight when SIGTERM came"
    # Lost: an answer from a replica that was gone (502, 503, 504), or a request sent before the stop began that
    # got no answer at all. A request sent after it may be turned away before nginx ever read it.
    lost = [r for r in load.results
            if (r[2].isdigit() and r[2] not in ("200", "429")) or (not r[2].isdigit() and r[0] < signalled)]
    assert not lost, lost
    logs = tmp_path / "state" / "cluster" / "logs"
    assert (logs / "access.log").stat().st_size > 0 and (logs / "error.log").exists()
    assert any((tmp_path / "state" / "cluster" / "redis").iterdir())
