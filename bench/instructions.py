"""Instructions per operation, counted by valgrind's callgrind: the figure a busy machine does not disturb.

    .venv/bin/python -m bench.instructions                 # every operation below
    .venv/bin/python -m bench.instructions flow verify-signed

Each operation runs twice under `valgrind --tool=callgrind`, once `SMALL` times and once `LARGE` times,
after the same set-up and warm-up; the difference of the two totals over the difference of the counts is
what one more operation costs, with start-up, imports and the warm-up cancelled out. Wall-clock figures
on a shared machine move with everyone else's work; these move by a fraction of a percent between runs.

Operations: the ticket micro-benchmarks of bench/micro.py (mint and verify, signed and sealed, and a bare
HMAC-SHA256 of the signed ticket's bytes), and the deploy flow of bench/profile.py (two requests through
the app's WSGI callable, as a server calls it) with each redeemed store the app can run in-process
(`flow` is SQLite, the default; `flow-memory` keeps spent ids in memory, so the difference is what the
single-use write costs; `flow-redis` spends tickets by claim and commit on a throwaway redis-server;
`flow-floor` answers with bench/floor.py's canned bytes, so `flow` minus it is the app's own work per flow,
the harness's JSON and environs taken out), and the single-use step alone in each store (`single-use-sqlite`,
`single-use-redis`: the client's side; the redis-server is another process, not counted).

    .venv/bin/python -m bench.instructions --redis-commands   # Redis round trips per flow, by command
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VALGRIND = "valgrind"


@dataclass(frozen=True)
class Op:
    name: str
    describe: str
    small: int
    large: int


OPS = {op.name: op for op in (
    Op("mint-signed", "`TicketCodec.claims` + `encode`, signed", 200, 2200),
    Op("verify-signed", "`TicketCodec.open` + `check_binding`, signed", 200, 2200),
    Op("mint-sealed", "`TicketCodec.claims` + `encode`, sealed", 200, 2200),
    Op("verify-sealed", "`TicketCodec.open` + `check_binding`, sealed", 200, 2200),
    Op("bare-hmac", "`hmac.new(key, token, sha256).digest()` over the signed ticket", 200, 2200),
    Op("flow", "the deploy flow through the app's WSGI callable, SQLite redeemed store", 100, 300),
    Op("flow-memory", "the same flow, the in-memory redeemed store", 100, 300),
    Op("flow-floor", "the same flow against bench/floor.py's canned answers: the harness's own cost", 100, 300),
    Op("flow-redis", "the same flow, the Redis redeemed store (claim + commit) on a local redis-server", 100, 300),
    Op("single-use-sqlite", "`SqliteStore.redeem` of a new id: the SQLite single-use write alone", 200, 1200),
    Op("single-use-redis", "`RedisStore.claim` + `commit` of a new id on a local redis-server (this process's side)",
       200, 1200),
)}


def _ticket_op(name: str) -> Callable[[], object]:
    import hashlib
    import hmac

    from bench import micro
    from mrtr import KeyRing, TicketCodec, Trace
    from mrtr.tickets import check_binding

    kind = name.rsplit("-", 1)[1]
    codec = TicketCodec(KeyRing([micro.KEY]), sealed=kind == "sealed")

    def mint() -> str:
        claims = codec.claims(now=micro.NOW, sub="bob", method="tools/call", target="deploy", arguments=micro.ARGS,
                              work={"env": "staging"}, step="confirm")
        return codec.encode(claims)

    token = mint()

    def verify() -> None:
        trace = Trace()
        claims = codec.open(token, trace)
        check_binding(claims, trace, principal="bob", now=micro.NOW + 1, method="tools/call", target="deploy",
                      arguments=micro.ARGS)

    if name.startswith("mint"):
        return mint
    if name.startswith("verify"):
        return verify
    key, data = micro.KEY.encode(), token.encode()
    return lambda: hmac.new(key, data, hashlib.sha256).digest()


def _redis_app(tmp: str, url: str) -> Any:
    from app import create_app
    from bench.compared_servers import BENCH_KEY

    return create_app({"MRTR_SECRET_KEYS": BENCH_KEY, "MRTR_STORE": "redis", "MRTR_REDIS_URL": url,
                       "MRTR_STATE_DIR": str(Path(tmp) / "state")})


def _flow_op(name: str, tmp: str, redis_url: str | None) -> Callable[[], object]:
    from bench import profile
    from loopback.loadgen import flow_headers

    if name == "flow-redis":
        assert redis_url is not None
        app = _redis_app(tmp, redis_url)
    else:
        store = "memory" if name == "flow-memory" else "sqlite"
        app = profile.build("floor" if name == "flow-floor" else "lean", tmp, store=store)
    headers = flow_headers("bob-token")
    ids = iter(range(2, 10**9, 2))
    return lambda: profile.flow(app, next(ids), headers)


def _single_use_op(name: str, tmp: str, redis_url: str | None) -> Callable[[], object]:
    """One ticket spent as /mcp spends it, a new id each time, with a ticket's lifetime ahead of it."""
    ids = iter(range(10**9))
    now, exp = 1_790_000_000.0, 1_790_000_300.0
    if name == "single-use-sqlite":
        from mrtr_stores.redeemed_sqlite import SqliteStore

        sqlite = SqliteStore(Path(tmp) / "redeemed.sqlite3")
        return lambda: sqlite.redeem(f"{next(ids):032x}", exp, now)
    from mrtr_stores.redeemed_redis import RedisStore

    assert redis_url is not None
    redis = RedisStore.from_url(redis_url)

    def claim_commit() -> None:
        jti = f"{next(ids):032x}"
        if redis.claim(jti, exp, now, "a") != "claimed":
            raise RuntimeError("a new id was not claimed")
        redis.commit(jti, exp, now, "a")

    return claim_commit


def inner(name: str, count: int) -> None:
    """Set `name` up, warm it up, then run it `count` times: what runs under valgrind."""
    with tempfile.TemporaryDirectory(prefix="mrtr-instr-") as tmp, contextlib.ExitStack() as stack:
        redis_url = None
        if name.endswith("redis"):
            from loopback.redis_server import RedisServer

            redis_url = stack.enter_context(RedisServer()).url  # its own process: not counted here
        if name.startswith("flow"):
            op = _flow_op(name, tmp, redis_url)
        elif name.startswith("single-use"):
            op = _single_use_op(name, tmp, redis_url)
        else:
            op = _ticket_op(name)
        for _ in range(50):
            op()
        for _ in range(count):
            op()


def redis_commands(flows: int = 200) -> tuple[float, dict[str, float]]:
    """Round trips to Redis per deploy flow with the Redis redeemed store (each time redis-py writes a command, or
    a pipeline, to a socket, counted in this process), and what Redis ran per flow by command (INFO commandstats:
    the commands a script runs count there too, inside its one round trip)."""
    import redis

    from bench import profile
    from loopback.loadgen import flow_headers
    from loopback.redis_server import RedisServer

    sent = 0
    send = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        nonlocal sent
        sent += 1
        send(self, command, check_health)

    with tempfile.TemporaryDirectory(prefix="mrtr-instr-") as tmp, RedisServer() as server:
        app = _redis_app(tmp, server.url)
        headers = flow_headers("bob-token")
        for n in range(20):
            profile.flow(app, 2 * n + 2, headers)
        admin = redis.Redis.from_url(server.url)
        admin.config_resetstat()
        redis.connection.AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
        try:
            for n in range(flows):
                profile.flow(app, 1000 + 2 * n, headers)
        finally:
            redis.connection.AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
        stats = admin.info("commandstats")
        admin.close()
    ran = {name.removeprefix("cmdstat_"): stat["calls"] / flows for name, stat in stats.items()
           if not name.startswith(("cmdstat_config", "cmdstat_info"))}
    return sent / flows, ran


_TOTALS = re.compile(r"^(?:totals|summary):\s*(\d+)", re.MULTILINE)


def total_instructions(name: str, count: int) -> int:
    """Instructions of one whole inner run (`python -m bench.instructions --inner NAME COUNT`)."""
    with tempfile.TemporaryDirectory(prefix="mrtr-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run([VALGRIND, "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
                        "bench.instructions", "--inner", name, str(count)],
                       check=True, capture_output=True, timeout=1800,
                       env={**os.environ, "PYTHONHASHSEED": "0"})
        match = _TOTALS.search(out.read_text())
        if match is None:
            raise RuntimeError(f"callgrind wrote no totals for {name}")
        return int(match.group(1))


def per_op(name: str) -> float:
    op = OPS[name]
    return (total_instructions(name, op.large) - total_instructions(name, op.small)) / (op.large - op.small)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.splitlines()[0])
    p.add_argument("ops", nargs="*", help=f"operations (default: all): {', '.join(OPS)}")
    p.add_argument("--inner", nargs=2, metavar=("NAME", "COUNT"), help=argparse.SUPPRESS)
    p.add_argument("--redis-commands", action="store_true",
                   help="instead: the Redis commands (round trips) per deploy flow with the Redis redeemed store")
    args = p.parse_args(argv)
    if args.inner:
        inner(args.inner[0], int(args.inner[1]))
        return 0
    if args.redis_commands:
        trips, ran = redis_commands()
        print(f"  round trips to Redis: {trips:.2f} per flow")
        for command, calls in sorted(ran.items()):
            print(f"  Redis ran {command:<10} {calls:6.2f} per flow")
        return 0
    unknown = [n for n in args.ops if n not in OPS]
    if unknown:
        p.error(f"unknown operation {', '.join(unknown)}; choose from {', '.join(OPS)}")
    results: dict[str, float] = {}
    for name in args.ops or list(OPS):
        results[name] = per_op(name)
        print(f"  {name:<14} {results[name] / 1000:10.1f} k instructions per op   ({OPS[name].describe})", flush=True)
    if "bare-hmac" in results:
        for name in ("verify-signed", "verify-sealed", "mint-signed", "mint-sealed"):
            if name in results:
                print(f"  {name} / bare-hmac: {results[name] / results['bare-hmac']:.1f}x")
    if "flow" in results and "flow-floor" in results:
        print(f"  the app's own, over the floor: {(results['flow'] - results['flow-floor']) / 1000:.1f} k per flow")
    if "flow" in results and "flow-memory" in results:
        print(f"  the SQLite single-use write: {(results['flow'] - results['flow-memory']) / 1000:.1f} k per flow")
    if "flow-redis" in results and "flow-memory" in results:
        print(f"  the Redis claim and commit: {(results['flow-redis'] - results['flow-memory']) / 1000:.1f} k per flow")
    return 0


if __name__ == "__main__":
    sys.exit(main())
