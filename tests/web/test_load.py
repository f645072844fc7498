"""Load and memory, bounded and deterministic: nothing here sleeps, times itself or reads a wall clock.

* The redeemed store stays bounded: thousands of deploy flows through the real app on an injected
  clock that moves 20 ms per flow, with 2 s tickets, keep the SQLite store's spent ids at the flow
  rate times the lifetime (plus one eviction batch), never the total; once every ticket has
  expired, a few more redeems sweep it down.
* Memory stays flat: Python allocations (tracemalloc) after a warm-up do not grow with the next
  400 flows, in the app process itself, so no RSS ratio of another process is involved.
Concurrency over real HTTP (learners on threads against the production server) is bench/test_soak_learners.py;
the long timed run (200 learners for 60 s, RSS sampled) is `python -m bench.soak`, opt-in.
"""

from __future__ import annotations

import gc
import json
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from loopback.loadgen import ACCEPT, deploy_request, flow_headers
from mrtr import FakeClock
from mrtr_stores.redeemed_sqlite import SqliteStore

from .conftest import TEST_KEY

TTL = 2
STEP = 0.02  # simulated seconds per flow: 50 flows/s
EVICT_EVERY = 64  # SqliteStore's default sweep interval
HEADERS = flow_headers("bob-token")


@pytest.fixture
def store_path() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mrtr-load-") as tmp:
        yield Path(tmp) / "redeemed.sqlite3"


@pytest.fixture
def sqlite_app(store_path: Path, clock: FakeClock) -> Flask:
    return create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "sqlite",
                       "MRTR_STORE_PATH": str(store_path), "MRTR_TICKET_TTL": TTL, "MRTR_CLOCK": clock})


def flow(client: FlaskClient, request_id: int) -> None:
    first = deploy_request(request_id, "staging")
    reply = client.post("/mcp", data=json.dumps(first), headers=HEADERS)
    assert reply.status_code == 200, reply.data
    result = reply.get_json()["result"]
    assert result["resultType"] == "input_required"
    first["params"].update(inputResponses={k: ACCEPT for k in result["inputRequests"]},
                           requestState=result["requestState"])
    first["id"] = request_id + 1
    done = client.post("/mcp", data=json.dumps(first), headers=HEADERS)
    assert done.status_code == 200, done.data
    assert done.get_json()["result"]["content"][0]["text"] == "deployed to staging"


def test_the_redeemed_store_holds_rate_times_lifetime_not_every_id_ever_spent(
        sqlite_app: Flask, store_path: Path, clock: FakeClock) -> None:
    client = sqlite_app.test_client()
    store = SqliteStore(store_path)
    flows = 1500
    sizes = []
    for i in range(flows):
        flow(client, 2 * i + 2)
        clock.advance(STEP)
        if i % 50 == 0:
            sizes.append(len(store))
    # Tickets expire at int(now) + TTL: a spent id lives at most TTL seconds, so at 1 / STEP flows
    # a second the store holds about TTL / STEP ids, plus the ones since the last sweep.
    bound = (TTL + 1) / STEP + EVICT_EVERY
    assert max(sizes) <= bound, (max(sizes), bound)
    assert max(sizes) < flows / 5  # eviction demonstrably happened
    assert sizes[-1] >= TTL / STEP / 2  # and the store is in use, not empty

    clock.advance(TTL + 1)  # everything spent so far has expired
    for i in range(EVICT_EVERY):
        flow(client, 10**9 + 2 * i)
    assert len(store) <= EVICT_EVERY


def test_python_memory_does_not_grow_with_traffic(sqlite_app: Flask, clock: FakeClock) -> None:
    client = sqlite_app.test_client()
    rid = 2
    for _ in range(200):  # warm-up: caches, compiled templates, the store's table
        flow(client, rid)
        rid += 2
        clock.advance(STEP)
    tracemalloc.start()
    try:
        sizes = []
        for flows in (200, 400):  # the first window fills the bounded buffers (the server log's ring)
            for _ in range(flows):
                flow(client, rid)
                rid += 2
                clock.advance(STEP)
            gc.collect()
            sizes.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    grown = sizes[1] - sizes[0]
    # A leak of even 100 bytes per flow would show as 40 KB here; steady state retains well under 1 KB.
    assert grown < 20_000, f"{grown} bytes retained by 400 more flows"
