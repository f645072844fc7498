"""The lesson's deployment, run for real: any replica finishes the call, a replay is spent once across all of
them, slow clients cost nginx a socket and never a Python thread, and the doors a bot would hammer say 429."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import resource
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis

from loopback.loadgen import deploy_request, flow_headers
from web.classroom.services import GUESS_LIMIT
from web.site.deployment import REPLICA_HEADER

from .conftest import ROOT, Cluster

BOB = "bob-secret-cluster"
#: Legacy SDK calls in a row through the cluster; with the old per-process sessions most of them failed.
LEGACY_CALLS = 20
#: Per-client limits key on the client's address, so each test that spends an allowance speaks from its own
#: loopback address (all of 127.0.0.0/8 is this machine).
SLOW_CLIENT, BOT_CLIENT, SLOW_MCP_CLIENT, CLASS_CLIENT = "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"
HALF_HEAD_CLIENT = "127.0.0.6"
#: deploy/nginx.conf's burst on the /join door, read from the file itself.
JOIN_BURST = int(re.search(r"location = /join \{[^}]*limit_req zone=joins burst=(\d+)",  # type: ignore[union-attr]
                           (ROOT / "deploy" / "nginx.conf").read_text()).group(1))
#: Open idle connections in the idle test: well past what the replicas' threads could hold, and within this
#: process's file limit.
IDLE_CONNECTIONS = min(1030, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 100)


def post(cluster: Cluster, message: dict[str, Any], *, port: int | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    """One POST /mcp on its own connection: status, the JSON-RPC message and the replica that answered."""
    conn = http.client.HTTPConnection("127.0.0.1", port or cluster.port, timeout=15)
    try:
        conn.request("POST", "/mcp", body=json.dumps(message), headers={**flow_headers(BOB), **(headers or {})})
        response = conn.getresponse()
        body = response.read()
        return response.status, json.loads(body) if body.strip().startswith(b"{") else {}, \
            response.getheader(REPLICA_HEADER) or ""
    finally:
        conn.close()


def retry_of(minted: dict[str, Any], request_id: int) -> dict[str, Any]:
    message = deploy_request(request_id, "staging")
    message["params"]["requestState"] = minted["requestState"]
    message["params"]["inputResponses"] = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    return message


def test_the_two_rounds_are_answered_by_different_replicas(cluster: Cluster) -> None:
    flows = []
    for attempt in range(6):  # round-robin alternates; other traffic could line two rounds up on one replica
        status, first, minted_by = post(cluster, deploy_request(1, "staging"))
        assert status == 200 and first["result"]["resultType"] == "input_required"
        status, second, finished_by = post(cluster, retry_of(first["result"], 2 + attempt))
        assert status == 200 and second["result"]["content"][0]["text"] == "deployed to staging", second
        flows.append((minted_by, finished_by))
    assert {name for flow in flows for name in flow} == {"replica-1", "replica-2"}
    assert any(a != b for a, b in flows), flows


def test_forty_parallel_replays_across_both_replicas_complete_exactly_once(cluster: Cluster) -> None:
    status, first, _ = post(cluster, deploy_request(1, "staging"))
    assert status == 200
    retry = retry_of(first["result"], 2)
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda _: post(cluster, retry), range(40)))
    completed = [r for r in results if "result" in r[1]]
    refused = [r for r in results if r[1].get("error", {}).get("code") == -32602]
    # A copy that arrives while the winner is still at work is told to try again (503), not refused: that attempt
    # could still fail and let go (mrtr_stores/redeemed_redis.py). Tried again now, every copy is refused.
    busy = [r for r in results if r[0] == 503 and r[1].get("error", {}).get("data") == {"retryable": True}]
    assert len(completed) == 1 and len(refused) + len(busy) == 39, [r[:1] for r in results]
    assert {r[2] for r in results} == {"replica-1", "replica-2"}
    again = [post(cluster, retry) for _ in busy]
    assert all(r[1].get("error", {}).get("code") == -32602 for r in again), [r[:2] for r in again]


@contextlib.contextmanager
def held_open(cluster: Cluster, count: int, first_bytes: bytes = b"", source: str = "127.0.0.1") -> Iterator[None]:
    """`count` connections to nginx, each sent `first_bytes` (a request head promising a body that never comes,
    or nothing: an idle connection) and left open while the block runs."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", cluster.port), timeout=5, source_address=(source, 0))
            if first_bytes:
                sock.sendall(first_bytes)
            sockets.append(sock)
        yield
    finally:
        for sock in sockets:
            sock.close()


def answers_at_once(cluster: Cluster) -> None:
    """GET / through nginx answers 200 within a second."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=5)
    conn.request("GET", "/")
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 200
    assert time.monotonic() - started < 1.0


def test_slow_bodies_do_not_stop_the_site(cluster: Cluster) -> None:
    """Twenty clients that promise a body and trickle it: nginx holds them, the replicas never see them."""
    head = (b"POST /join HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: 1000\r\n\r\ncode=")
    with held_open(cluster, 20, head, SLOW_CLIENT):
        answers_at_once(cluster)


def test_slow_mcp_bodies_with_a_valid_token_do_not_stop_the_site(cluster: Cluster) -> None:
    """Fifty clients with a token that trickle /mcp bodies: nginx buffers them; the replicas never wait."""
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {BOB}\r\n"
            "Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{").encode()
    with held_open(cluster, 50, head, SLOW_MCP_CLIENT):
        started = time.monotonic()
        status, reply, _ = post(cluster, deploy_request(1, "staging"))
        assert status == 200 and reply["result"]["resultType"] == "input_required"
        assert time.monotonic() - started < 1.0


def test_one_address_cannot_open_class_after_class(cluster: Cluster) -> None:
    statuses = []
    for _ in range(5):
        conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=10, source_address=(CLASS_CLIENT, 0))
        conn.request("POST", "/class/start")
        response = conn.getresponse()
        response.read()
        conn.close()
        statuses.append(response.status)
    assert statuses[:3] == [201, 201, 201] and statuses[3:] == [429, 429], statuses


def test_the_join_door_is_rate_limited_per_client(cluster: Cluster) -> None:
    statuses = []
    for _ in range(30):
        conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=5, source_address=(BOT_CLIENT, 0))
        conn.request("POST", "/join", body="code=ABCDEFGH&nickname=bot",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        response = conn.getresponse()
        response.read()
        conn.close()
        statuses.append(response.status)
    # The first tries are answered (a person who mistypes a code is fine); then nginx's burst, or the app's
    # allowance of codes that open no class, whichever ends first, turns the rest into 429.
    first = min(JOIN_BURST + 1, GUESS_LIMIT)
    assert statuses[:first] == [404] * first and set(statuses[first:]) == {429}, statuses


def test_cookies_are_secure_only_when_the_trusted_proxy_says_https(cluster: Cluster) -> None:
    """Through nginx on plain http the class cookie is not Secure; a local process that connects to a replica
    directly and claims to be the proxy saying https is not believed: the replicas trust one hop, and only with
    the secret cluster.sh gave nginx alone."""
    def host_cookie(port: int, headers: dict[str, str]) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/class/start", headers=headers)
        response = conn.getresponse()
        response.read()
        conn.close()
        assert response.status == 201, response.status
        return response.getheader("Set-Cookie") or ""

    assert "Secure" not in host_cookie(cluster.port, {})
    forged = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7", "X-MRTR-Proxy": "a guess"}
    assert "Secure" not in host_cookie(cluster.replica_ports[0], forged)


def test_a_local_process_cannot_pass_as_many_visitors_to_a_replica(cluster: Cluster) -> None:
    """Class starts straight to a replica, each naming a new X-Forwarded-For: counted as one visitor."""
    statuses = []
    for n in range(5):
        conn = http.client.HTTPConnection("127.0.0.1", cluster.replica_ports[1], timeout=10,
                                          source_address=("127.0.0.7", 0))
        conn.request("POST", "/class/start", headers={"X-Forwarded-For": f"198.51.100.{n + 20}"})
        response = conn.getresponse()
        response.read()
        conn.close()
        statuses.append(response.status)
    assert statuses == [201, 201, 201, 429, 429], statuses


def test_gets_to_the_strict_doors_are_rate_limited_per_visitor(cluster: Cluster) -> None:
    """GET /join, /class/start and /check* were outside every per-visitor limit (1,281 a second from one
    address); now past a burst they are 429, and another address is still served."""
    def read(path: str, source: str) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=10, source_address=(source, 0))
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    for n, path in enumerate(("/join", "/class/start", "/check")):
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(read, [path] * 150, [f"127.0.0.{50 + n}"] * 150))
        assert 429 in statuses, (path, statuses)
        assert read(path, "127.0.0.59") != 429


#: Half-sent request heads held open at once: more than the 4,096 connections nginx had room for when 4,300
#: churning heads made real visitors' connections fail, within this process's file limit.
HALF_HEADS = min(5000, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 200)


def test_thousands_of_half_sent_request_heads_leave_room_for_visitors(cluster: Cluster) -> None:
    """No per-address limit applies before a request head is complete: nginx must simply have room for them."""
    assert HALF_HEADS > 4096, "this process may not open enough files for the test to mean anything"
    with held_open(cluster, HALF_HEADS, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ", HALF_HEAD_CLIENT):
        for _ in range(5):
            answers_at_once(cluster)


def test_idle_connections_cost_nginx_not_the_replicas(cluster: Cluster) -> None:
    """Hundreds of open, idle connections from one client (the issue's attack used about a thousand): nginx holds
    them without a request, so no replica thread waits on them, and the site still answers at once."""
    with held_open(cluster, IDLE_CONNECTIONS):
        answers_at_once(cluster)


def sdk_legacy_call(url: str, token: str) -> dict[str, Any]:
    """One deploy by the official Python SDK client (mcp 2.3.0) in the 2025-11-25 era: initialize, the call, the
    server's question on the call's stream, the answer on a new request, the result."""
    run = subprocess.run([sys.executable, str(ROOT / "tests/sdk/py_client.py"), "--mode", "legacy", "--url", url,
                          "--token", token, "--timeout", "20"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    lines = run.stdout.strip().splitlines()
    assert lines, run.stderr[-2000:]
    return dict(json.loads(lines[-1]))


def test_an_official_sdk_client_in_the_2025_era_completes_calls_through_nginx(cluster: Cluster) -> None:
    """Its requests spread over two replicas of two workers each; the session and its answers follow."""
    for _ in range(LEGACY_CALLS):
        out = sdk_legacy_call(f"{cluster.url}/mcp", BOB)
        assert out["ok"] and out["text"] == "deployed to staging" and out["protocolVersion"] == "2025-11-25", out


def _form(port: int, path: str, fields: dict[str, str], cookie: str = "",
          accept: str = "text/html") -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": accept}
    if cookie:
        headers["Cookie"] = cookie
    conn.request("POST", path, body=urllib.parse.urlencode(fields), headers=headers)
    response = conn.getresponse()
    response.body = response.read()  # type: ignore[attr-defined]
    conn.close()
    return response


def _cookie_of(response: http.client.HTTPResponse, name: str) -> str:
    for header in response.headers.get_all("Set-Cookie") or []:
        if header.startswith(name + "="):
            return header.split(";", 1)[0]
    raise AssertionError(f"no {name} cookie")


def test_a_class_started_on_one_replica_is_joined_and_tallied_live_on_the_other(cluster: Cluster) -> None:
    """Everything a second replica needs is in Redis: the class, its roster, the answers, the live push."""
    one, two = cluster.replica_ports
    started = _form(one, "/class/start", {})
    assert started.status == 201
    code = re.search(rb'data-join-code="(\w+)"', started.body).group(1).decode()  # type: ignore[attr-defined,union-attr]
    host = _cookie_of(started, "mrtr_host")
    shared = redis.Redis(port=cluster.redis_port)
    assert shared.exists(f"mrtr:class:code:{code}")  # the class lives in Redis, not in a replica's file
    shared.close()
    assert _form(one, f"/class/{code}/host/question", {}, host).status == 303
    stream = http.client.HTTPConnection("127.0.0.1", one, timeout=20)
    stream.request("GET", f"/class/{code}/host/events", headers={"Cookie": host})
    events = stream.getresponse()
    assert events.status == 200
    joined = _form(two, "/join", {"code": code, "nickname": "Ana"})
    assert joined.status == 303
    learner = _cookie_of(joined, "mrtr_learner")
    answered = _form(two, f"/class/{code}/answer", {"option": "a"}, learner, accept="application/json")
    assert answered.status == 200, answered.body  # type: ignore[attr-defined]
    # The presenter's stream on replica one shows the answer given on replica two: pushed through Redis.
    seen = b""
    while b'data-answered="1"' not in seen:  # how many answered: the split itself waits for the reveal
        line = events.readline()
        assert line, "the stream ended before the tally arrived"
        seen += line
    stream.close()
