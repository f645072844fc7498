"""The long load run (opt-in, never in the test suite): simulated learners against the production server.

    .venv/bin/python -m bench.soak                       # 200 learners for 60 s, 5 s tickets
    .venv/bin/python -m bench.soak --learners 20 --seconds 10 --server gunicorn

Each learner is a thread that alternates a playground move (the htmx POST a button sends) and a
full MRTR deploy flow over /mcp, until its action count or the deadline runs out. While it runs,
the redeemed store's size and the server's RSS are sampled; the run fails (exit 1) on any error,
on a store that holds more spent ids than the flow rate times the ticket lifetime allows, or on
RSS that keeps climbing after the warm-up third. The suite's bounded, deterministic version of
these checks is tests/web/test_load.py; this is the one to run before a release.
"""

from __future__ import annotations

import argparse
import http.client
import random
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bench.compared_servers import PRODUCTION_SERVER, SERVERS, production_app
from loopback.loadgen import Conn, HTTPError, flow_headers, one_flow
from mrtr_stores.redeemed_sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[1]
MOVE_SLUGS = [m["slug"] for m in tomllib.loads((ROOT / "moves" / "moves.toml").read_text())["moves"]]
MAX_ERRORS_PER_LEARNER = 5


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


def learner(port: int, seed: int, tally: Tally, *, actions: int, deadline: float = float("inf")) -> None:
    """Play up to `actions` move-and-flow pairs (fewer if `deadline`, a monotonic time, passes first)."""
    rng = random.Random(seed)
    mcp = Conn("127.0.0.1", port, "/mcp", flow_headers("bob-token"))
    page = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    moves = flows = 0
    errors: list[str] = []
    rid = seed * 1_000_000
    try:
        for _ in range(actions):
            if time.monotonic() >= deadline or len(errors) >= MAX_ERRORS_PER_LEARNER:
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    p.add_argument("--learners", type=int, default=200)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--ttl", type=int, default=5, help="ticket lifetime in seconds (MRTR_TICKET_TTL)")
    p.add_argument("--server", choices=SERVERS, default=PRODUCTION_SERVER)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=8)
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="mrtr-soak-") as tmp:
        store_path = Path(tmp) / "redeemed.sqlite3"
        env = {"MRTR_TICKET_TTL": str(args.ttl), "MRTR_STORE": "sqlite", "MRTR_STORE_PATH": str(store_path)}
        with production_app(args.server, workers=args.workers, threads=args.threads, env=env) as served:
            store = SqliteStore(store_path)
            tally = Tally()
            start = time.monotonic()
            deadline = start + args.seconds
            threads = [threading.Thread(target=learner, args=(served.port, i, tally),
                                        kwargs={"actions": 10_000_000, "deadline": deadline}, daemon=True)
                       for i in range(args.learners)]
            for t in threads:
                t.start()
            samples: list[tuple[float, int, int]] = []  # (t, rss KiB, store size)
            for _ in range(int(args.seconds * 4) + 40):  # bounded sampling, 4 a second
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.25)
                samples.append((time.monotonic() - start, served.rss_kib(), len(store)))
            for t in threads:
                t.join(timeout=args.seconds + 60)
            elapsed = time.monotonic() - start

    rate = tally.flows / elapsed
    bound = rate * (args.ttl + 2) + 2 * 64 + 50
    peak = max((size for _, _, size in samples), default=0)
    warm = [rss for t, rss, _ in samples if t >= args.seconds / 3] or [0]
    print(f"{args.learners} learners x {args.seconds:g} s on {args.server}: {tally.flows} flows ({rate:.0f}/s), "
          f"{tally.moves} moves, {len(tally.errors)} errors; store peak {peak} ids (bound {bound:.0f}); "
          f"RSS {warm[0]} -> {max(warm)} KiB")
    failed = []
    if tally.errors:
        failed.append(f"errors, first: {tally.errors[:5]}")
    if peak > bound:
        failed.append("the redeemed store outgrew rate x lifetime")
    if max(warm) > warm[0] * 1.25 + 16 * 1024:
        failed.append("RSS kept climbing")
    for reason in failed:
        print("FAILED:", reason)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
