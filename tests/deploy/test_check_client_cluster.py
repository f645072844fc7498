"""/check-client in the public cluster, for real: nginx in front of two replicas sharing Redis. A run started through
the balancer is fed by the lesson's client through it (round-robin, so both replicas take its requests, and its
burst of some 40 requests is not cut by the start form's strict limit), and graded as on one process; the start
form itself stays a strict door per visitor; a run's page is reached by its id alone."""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import io
import json
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from bs4 import BeautifulSoup

from mrtr_client.mcp_headers import mirrored_headers
from web.site.deployment import REPLICA_HEADER

from .conftest import ROOT, Cluster, running_cluster

SOLUTION = ROOT / "lessons" / "build-the-client" / "solution" / "client.py"
RUNNER, DOORMAN = "127.0.0.7", "127.0.0.8"
FROM_OUTPUT = {"bounded-rounds-reported", "version-retry", "decline-cancel"}
#: MRTR_CHECK_RUNS's default: the starts one visitor may make in the window, in public.
STARTS = 5


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("cluster"), {"MRTR_PUBLIC": "1"}) as started:
        yield started


def request(cluster: Cluster, method: str, path: str, *, source: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=15, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def start(cluster: Cluster, source: str) -> tuple[int, str]:
    status, _, headers = request(cluster, "POST", "/check-client", source=source,
                                 headers={"Content-Type": "application/x-www-form-urlencoded"}, body=b"")
    return status, headers.get("location", "")


def test_a_client_fed_through_the_balancer_is_graded_across_both_replicas(cluster: Cluster) -> None:
    status, location = start(cluster, RUNNER)
    assert status == 303, status
    page = urllib.parse.urlsplit(location).path
    _, html, _ = request(cluster, "GET", page, source=RUNNER)
    address = BeautifulSoup(html, "html.parser").select_one("#client-mcp-url")
    assert address is not None and address.get_text() == f"{cluster.url}{page}/mcp"  # MRTR_PUBLIC_URL's host
    replicas: set[str] = set()

    def send(message: dict[str, Any]) -> dict[str, Any]:
        status, body, headers = request(
            cluster, "POST", page + "/mcp", source=RUNNER, body=json.dumps(message).encode(),
            headers={"Content-Type": "application/json", **mirrored_headers(message, {})})
        assert status == 200, (status, body[:200])  # never the strict door's 429
        replicas.add(headers.get(REPLICA_HEADER.lower(), ""))
        return dict(json.loads(body))

    spec = importlib.util.spec_from_file_location("cluster_lesson_client", SOLUTION)
    assert spec is not None and spec.loader is not None
    client = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(client)
    with contextlib.redirect_stdout(io.StringIO()):
        client.run(send, time.sleep)
    assert len(replicas) == 2, replicas
    _, html, _ = request(cluster, "GET", page, source=RUNNER)
    rows = BeautifulSoup(html, "html.parser").select("#client-rules tr[data-rule]")
    not_passed = {str(r["data-rule"]) for r in rows if r["data-verdict"] != "pass"}
    assert rows and not_passed == FROM_OUTPUT


def test_the_start_form_is_a_strict_door_per_visitor(cluster: Cluster) -> None:
    statuses = [start(cluster, DOORMAN)[0] for _ in range(STARTS + 4)]
    assert statuses == [303] * STARTS + [429] * 4, statuses
    assert start(cluster, "127.0.0.9")[0] == 303  # another visitor is not held back


def test_a_run_is_reached_by_its_id_alone(cluster: Cluster) -> None:
    for path in ("/check-client/" + "A" * 32, "/check-client/" + "A" * 32 + "/mcp"):
        status, _, _ = request(cluster, "GET", path, source="127.0.0.10")
        assert status == 404
