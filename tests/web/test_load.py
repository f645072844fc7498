"""A bounded load test: simulated learners play moves and deploy flows against a gunicorn-served app.

Each learner is a thread that, until the time is up, alternates a playground move (the htmx POST
a button sends) and a full MRTR deploy flow over /mcp. Tickets live 2 s (`MRTR_TICKET_TTL=2`), so
the redeemed store must evict spent ids as fast as they expire: its size and the server's RSS
are sampled while the load runs and must stay bounded. Zero errors are allowed.

By default this runs 20 learners for 5 s. `MRTR_LOAD_FULL=1` runs the full 200 learners for 60 s.
All traffic stays on 127.0.0.1 and every loop is bounded in count and time.
"""

from __future__ import annotations

import http.client
import os
import random
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.loadgen import Conn, HTTPError, flow_headers, one_flow
from bench.servers import Served, gunicorn_app
from mrtr import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
MOVE_SLUGS = [m["slug"] for m in tomllib.loads((ROOT / "lessons" / "moves.toml").read_text())["moves"]]
FULL = os.environ.get("MRTR_LOAD_FULL") == "1"
LEARNERS = 200 if FULL else 20
SECONDS = 60.0 if FULL else 5.0
# Tickets expire at int(now) + TTL, so they live TTL-1 to TTL seconds. 2 s exercises eviction hard;
# under 200 learners on 2 cores a flow's two rounds can be seconds apart, so the full run uses 5 s.
TTL = 5 if FULL else 2
MAX_ACTIONS_PER_LEARNER = 100_000


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    moves: int = 0
    flows: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, moves: int, flows: int, errors: list[str]) -> None:
        with self.lock:
            self.moves += moves
            self.flows += flows
            self.errors.extend(errors)


@pytest.fixture(scope="module")
def store_path() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mrtr-load-") as tmp:
        yield Path(tmp) / "redeemed.sqlite3"


@pytest.fixture(scope="module")
def served(store_path: Path) -> Iterator[Served]:
    env = {"MRTR_TICKET_TTL": str(TTL), "MRTR_STORE": "sqlite", "MRTR_STORE_PATH": str(store_path)}
    # gunicorn closes idle keep-alive connections after 2 s by default; a learner's page connection
    # idles while it plays a flow, and a request racing that close is reset. Browsers retry there;
    # this client does not, so keep connections open as a reverse proxy in front would.
    with gunicorn_app(workers=2, threads=8, env=env, extra_args=("--keep-alive", "75")) as server:
        yield server


def learner(port: int, deadline: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    mcp = Conn("127.0.0.1", port, "/mcp", flow_headers("bob-token"))
    page = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    moves = flows = 0
    errors: list[str] = []
    rid = seed * 1_000_000
    try:
        for _ in range(MAX_ACTIONS_PER_LEARNER):
            if time.monotonic() >= deadline or len(errors) >= 5:
                break
            slug = rng.choice(MOVE_SLUGS)
            try:
                page.request("POST", f"/playground/moves/{slug}", body=b"",
                             headers={"HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded"})
                response = page.getresponse()
                body = response.read()
                if response.status != 200 or b"<" not in body:
                    errors.append(f"move {slug}: HTTP {response.status}")
                moves += 1
                rid += 2
                one_flow(mcp, rid)
                flows += 1
            except (OSError, HTTPError, http.client.HTTPException, ValueError, KeyError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                mcp.close()
                page.close()
    finally:
        mcp.close()
        page.close()
        tally.add(moves, flows, errors)


def test_learners_under_load_get_no_errors_and_memory_stays_flat(served: Served, store_path: Path) -> None:
    store = SqliteStore(store_path)
    tally = Tally()
    start = time.monotonic()
    deadline = start + SECONDS
    threads = [threading.Thread(target=learner, args=(served.port, deadline, i, tally), daemon=True)
               for i in range(LEARNERS)]
    for t in threads:
        t.start()
    samples: list[tuple[float, int, int]] = []  # (t, rss KiB, store size)
    for _ in range(int(SECONDS * 4) + 40):  # bounded sampling, 4 a second
        if time.monotonic() >= deadline:
            break
        time.sleep(0.25)
        samples.append((time.monotonic() - start, served.rss_kib(), len(store)))
    for t in threads:
        t.join(timeout=SECONDS + 60)
    elapsed = time.monotonic() - start
    assert not any(t.is_alive() for t in threads)
    assert not tally.errors, f"{len(tally.errors)} errors, first: {tally.errors[:5]}"
    assert tally.flows > LEARNERS and tally.moves > LEARNERS

    rate = tally.flows / elapsed
    # Spent ids live TTL seconds, and each worker sweeps every 64 redeems: the store holds about
    # rate x TTL ids, never the run's total.
    bound = rate * (TTL + 2) + 2 * 64 + 50
    peak = max(size for _, _, size in samples)
    assert peak <= bound, f"store peaked at {peak} ids; bound {bound:.0f} at {rate:.0f} flows/s"
    if tally.flows > 4 * bound:
        assert peak < tally.flows / 2  # eviction demonstrably happened

    # Memory: after the warm-up third of the run, RSS may wobble but not climb with traffic.
    warm = [rss for t, rss, _ in samples if t >= SECONDS / 3]
    assert warm, samples
    assert max(warm) <= warm[0] * 1.25 + 16 * 1024, f"RSS grew from {warm[0]} to {max(warm)} KiB"

    # Once everything has expired, a few more redeems sweep the store down to what they added.
    time.sleep(TTL + 1)
    conn = Conn("127.0.0.1", served.port, "/mcp", flow_headers("bob-token"))
    try:
        for i in range(300):
            one_flow(conn, 10**9 + 2 * i)
    finally:
        conn.close()
    assert len(store) <= 300 + 2 * 64
    print(f"\nload: {LEARNERS} learners x {SECONDS:g} s: {tally.flows} flows ({rate:.0f}/s), {tally.moves} moves, "
          f"store peak {peak} ids, RSS {warm[0]} -> {max(warm)} KiB")
