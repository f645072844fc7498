"""The cluster with its Redis frozen (SIGSTOP) under a flood of redeems, then resumed (SIGCONT): pages that do not
need Redis keep answering within a second, every redeem is answered at once with a retryable 503, and after Redis
wakes the same retry completes exactly once (never twice, never "spent but not done": the old one-step redeem
landed late and refused the honest retry)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis

from loopback.loadgen import deploy_request, flow_headers

from .conftest import Cluster, running_cluster

BOB = "bob-secret-cluster"
#: Redeems in the flood, and how many at once (as many as nginx lets one visitor have open, with room).
FLOOD, AT_ONCE = 120, 24
#: A redeem waits at most Redis's time-out (0.25 s) plus its turn at the gate (0.1 s); with the machine's load, a
#: second is the bound the issue asks for.
WITHIN_S = 1.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("freeze")) as started:
        yield started


def post(cluster: Cluster, message: dict[str, Any], source: str) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=15, source_address=(source, 0))
    try:
        conn.request("POST", "/mcp", body=json.dumps(message), headers=flow_headers(BOB))
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return response.status, json.loads(body) if body.startswith(b"{") else {}, time.monotonic() - started


def get_home(cluster: Cluster) -> float:
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=15, source_address=("127.0.0.60", 0))
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    assert response.status == 200
    return time.monotonic() - started


def retry_of(cluster: Cluster, request_id: int) -> dict[str, Any]:
    status, first, _ = post(cluster, deploy_request(request_id, "staging"), "127.0.0.61")
    assert status == 200 and first["result"]["resultType"] == "input_required"
    message = deploy_request(request_id + 1, "staging")
    message["params"]["requestState"] = first["result"]["requestState"]
    message["params"]["inputResponses"] = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    return message


def completed(reply: dict[str, Any]) -> bool:
    return "result" in reply and reply["result"].get("content", [{}])[0].get("text") == "deployed to staging"


def test_a_frozen_redis_stops_nothing_that_does_not_need_it_and_loses_no_yes(cluster: Cluster) -> None:
    for n in range(4):  # every replica process has run a claim: Redis has the scripts
        assert completed(post(cluster, retry_of(cluster, 10 + 2 * n), "127.0.0.61")[1])
    the_retry = retry_of(cluster, 100)
    others = [retry_of(cluster, 200 + 2 * n) for n in range(6)]
    watcher = redis.Redis(port=cluster.redis_port)
    pid = int(watcher.info("server")["process_id"])
    flood = [the_retry if i % 4 == 0 else others[i % len(others)] for i in range(FLOOD)]
    sources = [f"127.0.0.{70 + i % 8}" for i in range(FLOOD)]
    home: list[float] = []
    os.kill(pid, signal.SIGSTOP)
    try:
        with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
            answers = pool.map(lambda pair: post(cluster, *pair), zip(flood, sources, strict=True))
            for _ in range(5):
                home.append(get_home(cluster))
            results = list(answers)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert max(home) < WITHIN_S, home
    statuses = {status for status, _, _ in results}
    assert statuses == {503}, statuses
    assert all(reply["error"]["data"] == {"retryable": True} for _, reply, _ in results)
    assert max(took for _, _, took in results) < 3 * WITHIN_S, sorted(took for _, _, took in results)[-5:]
    # Redis is back: claims that landed late are released, and the same retry completes, once.
    deadline = time.monotonic() + 15
    while True:
        status, reply, _ = post(cluster, the_retry, "127.0.0.62")
        if status != 503:
            break
        assert time.monotonic() < deadline, "the retry stayed 'try again' after Redis woke"
        time.sleep(0.2)
    assert status == 200 and completed(reply), reply
    copies = [post(cluster, the_retry, "127.0.0.63")[1] for _ in range(3)]
    assert all(c.get("error", {}).get("code") == -32602 for c in copies), copies
    watcher.close()
