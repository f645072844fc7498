"""Run every benchmark, print one report and write it to bench/RESULTS.md.

    .venv/bin/python -m bench            # or: bash bench/run.sh
    .venv/bin/python -m bench --quick    # shorter runs, for a smoke check
    .venv/bin/python -m bench --cluster  # only the deployment comparison below; writes its own section
    .venv/bin/python -m bench --cluster --quick --clients 8,32 --no-write   # the same, bounded: about a minute

Sections: ticket micro-benchmarks; the deploy flow over HTTP on our app (under granian, the
production server, and under gunicorn) and on the official SDK's server in the configurations its
docs give (one uvicorn process as `MCPServer.run("streamable-http")` starts it; the same with the
JSON responses and stateless mode the docs advise for scale; and that with several uvicorn
workers), all driven by the same load generator, interleaved level by level and round by round,
at 1, 8 and 32 clients; the weight of every page. Each target is checked and reported.

`--pyodide` times instead the build lesson's in-page checker in headless Chromium: a cold first Run, a revisit,
a Run after the preload, and warm re-runs (bench/pyodide.py), and writes its own section of RESULTS.md.

`--checker` times instead `mrtr check` on a slow sound server, its moves one at a time and several at a time, over HTTP
and stdio (bench/checker_speed.py), and writes its own section of RESULTS.md.

`--cluster` runs instead the comparison of deployments (bench/cluster.py): our app as
scripts/cluster.sh runs it (nginx, two replicas, Redis), one replica direct, the official SDK's
best configuration behind the same nginx, the floor (bench/floor.py, two canned answers) alone
and behind the same nginx, and the floor plus single use in Redis (bench/floor_single_use.py) alone, with the
same load generator. It writes its own section of RESULTS.md, which a full run carries over.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import signal
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench import checker_speed, cluster, compared_servers, micro, page_weight, pyodide, recorded
from loopback import loadgen

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
#: Hand-written findings (why the old SDK figure was low, the profile, the lean /mcp design),
#: appended to every generated RESULTS.md so a rerun never loses them.
ANALYSIS = Path(__file__).resolve().parent / "analysis.md"
TARGET_VERIFY_RATIO = 10.0
TARGET_SPEEDUP = 2.5
TARGET_P99_MS = {8: 20.0, 32: 40.0}
TARGET_PAGE_BYTES = 100 * 1024
OURS = "ours-granian"


@dataclass(frozen=True)
class Config:
    name: str
    describe: str
    start: Callable[[], compared_servers.Served]
    sdk: bool


def configs(args: argparse.Namespace, env: dict[str, str]) -> list[Config]:
    w, t = args.workers, args.threads
    out = [
        Config(OURS, f"our app under granian, `scripts/production.sh` with WORKERS={w} THREADS={t}",
               lambda: compared_servers.granian_app(workers=w, threads=t, env=env, name=OURS), False),
        Config("ours-gunicorn", f"our app under `gunicorn -w {w} -k gthread --threads {args.gunicorn_threads}`",
               lambda: compared_servers.gunicorn_app(workers=w, threads=args.gunicorn_threads, env=env,
                                                     name="ours-gunicorn"),
               False),
    ]
    if args.lean:
        out.append(Config("ours-flask-view", f"our app with /mcp through the Flask view (the lean WSGI entry "
                          f"removed) under granian, {w} x {t}",
                          lambda: compared_servers.flask_view_granian_app(workers=w, threads=t, env=env,
                                                                 name="ours-flask-view"), False))
    out += [
        Config("sdk-1", "SDK, one uvicorn process with `MCPServer.run(\"streamable-http\")`'s defaults (SSE allowed)",
               lambda: compared_servers.sdk_app(workers=1, name="sdk-1"), True),
        Config("sdk-1-json", "SDK, one uvicorn process, `json_response=True, stateless_http=True`",
               lambda: compared_servers.sdk_app(workers=1, json_response=True, stateless=True, name="sdk-1-json"),
               True),
        Config(f"sdk-{w}-json", f"SDK, `uvicorn --workers {w}` sharing one `requestState` key, JSON, stateless",
               lambda: compared_servers.sdk_app(workers=w, json_response=True, stateless=True,
                                                name=f"sdk-{w}-json"), True),
    ]
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


@dataclass
class Summary:
    """One configuration at one level, over every round: medians of rate, p50, p99 and CPU per flow."""

    rate: float
    p50: float
    p99: float
    errors: int
    cpu_ms: float | None
    rates: list[float]
    steal: float | None


def summarize(results: list[loadgen.RunResult]) -> Summary:
    cpus = [r.server_cpu_ms_per_flow for r in results if r.server_cpu_ms_per_flow is not None]
    steals = [r.steal_pct for r in results if r.steal_pct is not None]
    return Summary(statistics.median(r.rate for r in results), statistics.median(r.pct(50) for r in results),
                   statistics.median(r.pct(99) for r in results), sum(r.errors for r in results),
                   statistics.median(cpus) if cpus else None, [r.rate for r in results],
                   statistics.median(steals) if steals else None)


def cpu_jiffies() -> tuple[int, int] | None:
    """(steal, total) CPU time of the whole machine so far, from /proc/stat; None where unreadable.

    Steal is time a virtual machine's vCPUs were ready to run but the hypervisor ran something
    else. On a shared host it comes and goes; while it is high every figure here is slower and
    noisier for reasons outside the code, so the report shows it beside each measurement.
    """
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_between(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


class Target(Protocol):
    """What the load generator is pointed at: a `compared_servers.Served`, or a `cluster.Stack` of several."""

    name: str

    @property
    def port(self) -> int: ...

    def cpu_seconds(self) -> float: ...


def run_http(targets: Sequence[Target], levels: list[int], rounds: int, seconds: float, warmup: float
             ) -> dict[str, dict[int, list[loadgen.RunResult]]]:
    """Round by round, level by level, each server in turn, so background load hits all alike."""
    out: dict[str, dict[int, list[loadgen.RunResult]]] = {t.name: {c: [] for c in levels} for t in targets}
    for n in range(rounds):
        for clients in levels:
            order = targets if n % 2 == 0 else list(reversed(targets))  # nobody always goes first
            for served in order:
                before = cpu_jiffies()
                result = loadgen.run_flows("127.0.0.1", served.port, clients=clients, seconds=seconds,
                                           warmup=warmup, cpu_probe=served.cpu_seconds)
                result.steal_pct = steal_between(before, cpu_jiffies())
                print(f"  round {n + 1} {served.name:>14} {clients:>3} clients: {result.rate:7.1f} flows/s"
                      f"  p50 {result.pct(50):6.2f} ms  p99 {result.pct(99):6.2f} ms"
                      f"  cpu {result.server_cpu_ms_per_flow or 0:5.2f} ms/flow  steal {result.steal_pct or 0:4.1f}%"
                      f"  errors {result.errors}", flush=True)
                if result.first_errors:
                    print("       first errors:", result.first_errors[:2], flush=True)
                out[served.name][clients].append(result)
    return out


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def cell(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per level, server and round")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each of those")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the report gives medians")
    p.add_argument("--clients", default="1,8,32", help="comma-separated concurrency levels")
    p.add_argument("--workers", type=int, default=2, help="server processes (ours, and the multi-worker SDK)")
    p.add_argument("--threads", type=int, default=compared_servers.production_threads(),
                   help="granian blocking threads per worker (ours; default: scripts/production.sh's)")
    p.add_argument("--gunicorn-threads", type=int, default=4, help="gunicorn gthread threads per worker (ours)")
    p.add_argument("--store", choices=["sqlite", "redis"], default="sqlite", help="our redeemed store")
    p.add_argument("--lean", action="store_true",
                   help="also run the app with /mcp through the Flask view instead of the lean WSGI entry, "
                   "to measure what the lean path saves")
    p.add_argument("--only", default="", help="comma-separated configuration names to run (default: all)")
    p.add_argument("--note", default="", help="what else was running on the machine, for the report")
    p.add_argument("--quick", action="store_true", help="1 s per level and one round: a smoke run, not the record")
    p.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    p.add_argument("--cluster", action="store_true",
                   help="run only the deployment comparison (nginx + replicas, one replica direct, the SDK behind "
                   "nginx, the floor) and write its section of RESULTS.md, leaving the rest as it is; --store, "
                   "--lean and --gunicorn-threads do not apply (the replicas share Redis, as scripts/cluster.sh's do)")
    p.add_argument("--replicas", type=int, default=cluster.cluster_replicas(),
                   help="replicas behind nginx with --cluster (default: scripts/cluster.sh's REPLICAS)")
    p.add_argument("--pyodide", action="store_true",
                   help="only the build lesson's in-page checker, cold and warm in headless Chromium "
                   "(bench/pyodide.py); writes its own section")
    p.add_argument("--checker", action="store_true",
                   help="only `mrtr check` on a slow sound server, moves one at a time and several at a time, over "
                   "HTTP and stdio (bench/checker_speed.py); writes its own section")
    args = p.parse_args(argv)
    if args.checker:
        return checker_speed.run(RESULTS, analysis_heading(), write=not args.no_write, quick=args.quick,
                                 note=args.note)
    if args.pyodide:
        return pyodide.run(RESULTS, analysis_heading(), write=not args.no_write, quick=args.quick, note=args.note)
    if args.quick:
        args.seconds, args.warmup, args.rounds = 1.0, 0.3, 1
    levels = [int(x) for x in args.clients.split(",") if x.strip()]
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    if args.cluster:
        return run_cluster(args, levels, command.strip(), started)

    print("== ticket micro-benchmarks ==", flush=True)
    timings = micro.ticket_timings(number=300 if args.quick else 1000)
    by_name = {t.name: t.us for t in timings}
    bare = by_name["bare HMAC-SHA256 of the signed ticket"]
    micro_rows = []
    for t in timings:
        ratio = f"{t.us / bare:.1f}x" if t.name.startswith("verify") else ""
        micro_rows.append([t.name, f"{t.us:.1f}", ratio])
        print(f"  {t.name:<40} {t.us:8.1f} µs {ratio}", flush=True)

    print(f"== deploy flow over HTTP ({args.rounds} rounds of {args.seconds:g} s per level, "
          f"{args.warmup:g} s warm-up) ==", flush=True)
    load_before = loadavg()
    redis = None
    env: dict[str, str] = {}
    if args.store == "redis":
        from loopback.redis_server import RedisServer

        redis = RedisServer().start()
        env = {"MRTR_REDIS_URL": redis.url}
    chosen = configs(args, env)
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        chosen = [c for c in chosen if c.name in wanted or c.name == OURS]
    started_servers: list[compared_servers.Served] = []
    try:
        for config in chosen:
            started_servers.append(config.start())
        results = run_http(started_servers, levels, args.rounds, args.seconds, args.warmup)
        print("== page weight ==", flush=True)
        ours_served = next(s for s in started_servers if s.name == OURS)
        weights = page_weight.weigh("127.0.0.1", ours_served.port)
        for w in weights:
            print(f"  {w.path:<40} {w.bytes / 1024:7.1f} KiB {w.requests:3d} requests (HTTP {w.status})")
    finally:
        for served in started_servers:
            served.stop()
        if redis is not None:
            redis.stop()
    load_after = loadavg()
    summary = {c.name: {lvl: summarize(results[c.name][lvl]) for lvl in levels} for c in chosen}
    sdk_names = [c.name for c in chosen if c.sdk]

    all_steals = [r.steal_pct for by_level in results.values() for rs in by_level.values() for r in rs
                  if r.steal_pct is not None]
    steal_median = statistics.median(all_steals) if all_steals else None
    steal_text = ("not readable here" if steal_median is None else
                  f"median {steal_median:.1f}% of the CPU time per run, highest {max(all_steals):.1f}%")

    http_rows = []
    for lvl in levels:
        for c in chosen:
            m = summary[c.name][lvl]
            http_rows.append([str(lvl), f"`{c.name}`", f"{m.rate:.0f}", " / ".join(f"{r:.0f}" for r in m.rates),
                              f"{m.p50:.2f}", f"{m.p99:.2f}", cell(m.cpu_ms), cell(m.steal, 1), str(m.errors)])
    page_rows = [[w.path, str(w.status), f"{w.bytes:,}", f"{w.bytes / 1024:.1f}", str(w.requests),
                  f"{w.plain_bytes / 1024:.1f}"] for w in weights]

    # -- targets ---------------------------------------------------------------------------------
    checks: list[tuple[str, bool, str]] = []
    for kind in ("signed", "sealed"):
        ratio = by_name[f"verify ({kind})"] / bare
        checks.append((f"verify ({kind}) within {TARGET_VERIFY_RATIO:g}x of a bare HMAC", ratio <= TARGET_VERIFY_RATIO,
                       f"{ratio:.1f}x"))
    ours = summary[OURS]
    if 8 in levels and sdk_names:
        best = max(sdk_names, key=lambda n: summary[n][8].rate)
        ratio = ours[8].rate / summary[best][8].rate if summary[best][8].rate else float("inf")
        checks.append((f"/mcp at least {TARGET_SPEEDUP:g}x the best SDK configuration's flows/s at 8 clients",
                       ratio >= TARGET_SPEEDUP, f"{ratio:.2f}x ({ours[8].rate:.0f} vs `{best}` "
                                                f"{summary[best][8].rate:.0f})"))
        cpu_best = min((n for n in sdk_names if summary[n][8].cpu_ms), key=lambda n: summary[n][8].cpu_ms or 0.0,
                       default=None)
        if cpu_best and ours[8].cpu_ms:
            cpu_ratio = (summary[cpu_best][8].cpu_ms or 0.0) / ours[8].cpu_ms
            checks.append(("(context) server CPU per flow at 8 clients, the SDK's leanest over ours", True,
                           f"{cpu_ratio:.2f}x ({summary[cpu_best][8].cpu_ms:.2f} ms `{cpu_best}` vs "
                           f"{ours[8].cpu_ms:.2f} ms)"))
    for lvl, limit in TARGET_P99_MS.items():
        if lvl in levels:
            checks.append((f"p99 at most {limit:g} ms at {lvl} clients (ours)", ours[lvl].p99 <= limit,
                           f"{ours[lvl].p99:.1f} ms"))
    heaviest = max(weights, key=lambda w: w.bytes) if weights else None
    if heaviest:
        checks.append((f"every page under {TARGET_PAGE_BYTES // 1024} KB transferred",
                       heaviest.bytes < TARGET_PAGE_BYTES,
                       f"heaviest {heaviest.path}: {heaviest.bytes / 1024:.1f} KiB"))
    errors = sum(summary[c.name][lvl].errors for c in chosen for lvl in levels)
    checks.append(("no failed flow on any server", errors == 0, f"{errors} errors"))

    client_cpu = {c: statistics.median(r.client_cpu_s for r in results[OURS][c]) / (args.seconds + args.warmup)
                  for c in levels}
    config_lines = "\n".join(f"* `{c.name}`: {c.describe}." for c in chosen)
    report = f"""# Benchmark results

Generated by `{command.strip()}` (see docs/deploy/benchmarks.md) on {started}.

| Machine | |
| --- | --- |
| CPU | {cpu_model()} |
| `nproc` | {os.cpu_count()} |
| Python | {platform.python_version()} ({platform.python_implementation()}) |
| OS | {platform.platform()} |
| Load average (1/5/15 min) before / after the HTTP runs | {load_before} / {load_after} |
| CPU taken by the hypervisor (steal) during the HTTP runs | {steal_text} |
| What else was running | {args.note or "not recorded (pass --note)"} |

## Ticket mint and verify (µs per operation, best of 15 batches)

mint = `TicketCodec.claims` + `encode`; verify = `TicketCodec.open` + `mrtr.tickets.check_binding`;
bare = `hmac.new(key, token_bytes, sha256).digest()` over the same signed ticket's bytes.

{table(["operation", "µs", "vs bare HMAC"], micro_rows)}

## The deploy flow over HTTP: ours vs the official Python SDK

One flow = `tools/call deploy` → `input_required` → retry with the answer and `requestState` →
`deployed to staging`, two HTTP requests on a keep-alive connection. Each client is a thread with
its own connection (threads {loadgen.CLIENTS_PER_PROCESS} to a forked process, so the clients do not
queue for one GIL), playing flows back to back (closed loop) for {args.seconds:g} s after a
{args.warmup:g} s warm-up. The same client code drives every server; the runs are interleaved
(each level on each server in turn, {args.rounds} rounds, the order reversed every other round),
and the table gives the median of the rounds, with each round's flows/s beside it. Latency is per
flow (both round trips). "CPU ms/flow" is the server's own CPU time (all its processes, from
/proc) in the measured window divided by the flows completed in it: other work on the machine
disturbs it far less than flows/s.

{config_lines}

Ours checks a bearer token, Origin, Accept and the MCP headers, sets security headers, and writes
every redeemed ticket to the `{args.store}` single-use store; the SDK keeps no redeemed store (a
replayed retry succeeds there), so it does strictly less work per flow.

{table(["clients", "server", "flows/s (median)", "each round", "p50 ms", "p99 ms", "CPU ms/flow", "steal %",
        "errors"], http_rows)}

"steal %" is the median share of the machine's CPU time the hypervisor gave to other guests during
that configuration's runs: this machine is a virtual one on a shared host, and while steal is high
every figure is slower and its tail longer for reasons outside the code.

The load generator shares the 2 cores with the servers: it used about
{", ".join(f"{client_cpu[c] * 100:.0f}% of one core at {c}" for c in levels)} clients against ours.

## Page weight (cold cache: page + every asset it references)

{table(["page", "status", "bytes", "KiB", "requests", "KiB uncompressed"], page_rows)}

Bytes are what crossed the wire for a client that accepts gzip, as browsers do (the app gzips
HTML, CSS and JavaScript; `web/site/compress.py`); the last column is the decoded size of the same
responses.

## Targets

{table(["target", "met", "measured"], [[name, "yes" if ok else "**MISSED**", got] for name, ok, got in checks])}

## Notes on the targets

{notes(checks, load_before, steal_median)}

{ANALYSIS.read_text().strip() if ANALYSIS.exists() else ""}
"""
    print()
    print(table(["target", "met", "measured"], [[n, "yes" if ok else "MISSED", g] for n, ok, g in checks]))
    if not args.no_write:
        # The --cluster and --pyodide sections are recorded by their own runs; this one rewrites the rest around them.
        old = RESULTS.read_text() if RESULTS.exists() else ""
        RESULTS.write_text(recorded.carry_over(report, old, before=analysis_heading()))
        print(f"\nwrote {RESULTS}")
    return 0


def analysis_heading() -> str:
    """The first line of the hand-written appendix: sections recorded on their own go just before it."""
    text = ANALYSIS.read_text().strip() if ANALYSIS.exists() else ""
    return text.splitlines()[0] if text else ""


# -- --cluster: deployments side by side -----------------------------------------------------------------

#: What `--cluster` checks (issue 36), at 8 and 32 clients: our app at least half the floor behind the same
#: front, at least 3x the SDK behind the same nginx, no errors, and p99 at 32 clients no further above the
#: floor's than in the record before that work (2026-12-03 11:23 UTC: 47.22 against 17.77 ms behind nginx,
#: 23.38 against 7.95 ms direct).
CLUSTER_FLOOR_SHARE = 0.5
CLUSTER_SDK_RATIO = 3.0
CLUSTER_TARGET_LEVELS = (8, 32)
CLUSTER_BASELINE_P99_RATIO = {"nginx": 47.22 / 17.77, "direct": 23.38 / 7.95}
#: The floor that pays single use as /mcp does (two Redis round trips per flow, bench/floor_single_use.py): the ceiling
#: of any server that keeps the guarantee on this stack; `ours-direct` over it is a proposed form of the target.
FLOOR_SINGLE_USE = "floor-single-use-direct"


@dataclass(frozen=True)
class StackConfig:
    name: str
    describe: str
    start: Callable[[], cluster.Stack]
    floor: str  # the floor measured behind the same front, for the "x of floor" ratio


def stack_configs(args: argparse.Namespace) -> list[StackConfig]:
    w, t, n = args.workers, args.threads, args.replicas
    ours, sdk = f"ours-nginx-{n}", f"sdk-nginx-{n}"
    floor_nginx, floor_direct = f"floor-nginx-{n}", "floor-direct"
    return [
        StackConfig(ours, f"our app as `scripts/cluster.sh` runs it: nginx with `deploy/nginx.conf` in front of {n} "
                    f"replicas (`scripts/production.sh`, WORKERS={w} THREADS={t} each) on one Redis",
                    lambda: cluster.ours_nginx(ours, replicas=n, workers=w, threads=t), floor_nginx),
        StackConfig("ours-direct", f"one of those replicas alone, no nginx: WORKERS={w} THREADS={t}, the same "
                    "environment, a Redis of its own",
                    lambda: cluster.ours_direct("ours-direct", workers=w, threads=t), floor_direct),
        StackConfig(sdk, f"the official SDK in the best configuration the bench runs it in (`uvicorn --workers {w}`, "
                    f"JSON responses, stateless, one shared `requestState` key) as {n} replicas behind the same nginx",
                    lambda: cluster.sdk_nginx(sdk, replicas=n, workers=w), floor_nginx),
        StackConfig(floor_nginx, f"the floor (`bench/floor.py`: two canned answers, no checks) under granian with "
                    f"`scripts/production.sh`'s settings, {n} replicas of WORKERS={w} THREADS={t} behind the same "
                    "nginx", lambda: cluster.floor_nginx(floor_nginx, replicas=n, workers=w, threads=t), floor_nginx),
        StackConfig(floor_direct, f"the floor alone, one granian of WORKERS={w} THREADS={t}, no nginx",
                    lambda: cluster.floor_direct(floor_direct, workers=w, threads=t), floor_direct),
        StackConfig(FLOOR_SINGLE_USE, f"the floor plus single use (`bench/floor_single_use.py`): the same canned "
                    "answers, but each retry first claims and commits a fresh ticket id in Redis through the app's "
                    f"own `RedisStore`, as /mcp does; one granian of WORKERS={w} THREADS={t}, a Redis of its own, "
                    "no nginx", lambda: cluster.floor_single_use_direct(FLOOR_SINGLE_USE, workers=w, threads=t),
                    floor_direct),
    ]


def run_cluster(args: argparse.Namespace, levels: list[int], command: str, started: str) -> int:
    """Start every stack, drive them all with the same load generator, interleaved; print and record."""
    limit = cluster.per_client_connections()
    if max(levels) > limit:
        print(f"deploy/nginx.conf allows {limit} connections per client and every bench client comes from "
              f"127.0.0.1: at most {limit} clients with --cluster", file=sys.stderr)
        return 2
    if args.replicas < 1:
        print("--replicas must be at least 1", file=sys.stderr)
        return 2
    missing = [p for p in (cluster.NGINX, cluster.REDIS_SERVER) if not Path(p).exists()]
    if missing:
        print(f"--cluster needs {' and '.join(missing)}: bash scripts/test.sh installs Debian's nginx and "
              "redis-server", file=sys.stderr)
        return 2
    chosen = stack_configs(args)
    if args.only:  # the named stacks, and the floors their ratios need
        wanted = {n.strip() for n in args.only.split(",") if n.strip()}
        unknown = wanted - {c.name for c in chosen}
        if unknown:
            print(f"--only: no stack named {', '.join(sorted(unknown))}; the stacks are "
                  f"{', '.join(c.name for c in chosen)}", file=sys.stderr)
            return 2
        wanted |= {c.floor for c in chosen if c.name in wanted}
        chosen = [c for c in chosen if c.name in wanted]
    print(f"== the deploy flow through nginx, direct and at the floor ({args.rounds} rounds of {args.seconds:g} s "
          f"per level, {args.warmup:g} s warm-up) ==", flush=True)
    load_before = loadavg()
    stacks: list[cluster.Stack] = []
    try:
        for config in chosen:
            stacks.append(config.start())
        results = run_http(stacks, levels, args.rounds, args.seconds, args.warmup)
    finally:
        for stack in stacks:
            stack.stop()
    load_after = loadavg()
    summary = {c.name: {lvl: summarize(results[c.name][lvl]) for lvl in levels} for c in chosen}
    section = cluster_section(args, chosen, levels, results, summary, command, started, load_before, load_after)
    print()
    print(section)
    if not args.no_write:
        text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
        RESULTS.write_text(recorded.CLUSTER.put(text, section, before=analysis_heading()))
        print(f"\nwrote the --cluster section of {RESULTS}")
    return 0


def cluster_section(args: argparse.Namespace, chosen: list[StackConfig], levels: list[int],
                    results: dict[str, dict[int, list[loadgen.RunResult]]], summary: dict[str, dict[int, Summary]],
                    command: str, started: str, load_before: str, load_after: str) -> str:
    def ratio(name: str, other: str, lvl: int) -> str:
        if name not in summary or other not in summary or not summary[other][lvl].rate:
            return "n/a"
        return f"{summary[name][lvl].rate / summary[other][lvl].rate:.2f}x"

    rows = []
    for lvl in levels:
        for c in chosen:
            m = summary[c.name][lvl]
            rows.append([str(lvl), f"`{c.name}`", f"{m.rate:.0f}", " / ".join(f"{r:.0f}" for r in m.rates),
                         ratio(c.name, c.floor, lvl), f"{m.p50:.2f}", f"{m.p99:.2f}",
                         cell(m.cpu_ms), cell(m.steal, 1), str(m.errors)])
    n = args.replicas
    ours, sdk, floor_nginx = f"ours-nginx-{n}", f"sdk-nginx-{n}", f"floor-nginx-{n}"
    pairs = [(ours, "ours-direct"), (ours, sdk), (ours, floor_nginx), ("ours-direct", "floor-direct"),
             ("ours-direct", FLOOR_SINGLE_USE), (FLOOR_SINGLE_USE, "floor-direct"), (sdk, floor_nginx),
             (floor_nginx, "floor-direct")]
    ratio_rows = [[f"`{a}` / `{b}`", *(ratio(a, b, lvl) for lvl in levels)] for a, b in pairs
                  if a in summary and b in summary]

    target_rows = cluster_targets(summary, levels, n)
    targets_text = ("" if not target_rows else "\n\nTargets (issue 36), each read from this run:\n\n"
                    + table(["target", "clients", "met", "measured"], target_rows))

    steals = [r.steal_pct for by_level in results.values() for rs in by_level.values() for r in rs
              if r.steal_pct is not None]
    steal_median = statistics.median(steals) if steals else None
    steal_text = ("not readable here" if steal_median is None else
                  f"median {steal_median:.1f}% of the CPU time per run, highest {max(steals):.1f}%")
    floor_client = {lvl: statistics.median(r.client_cpu_s for r in results["floor-direct"][lvl])
                    / (args.seconds + args.warmup) for lvl in levels} if "floor-direct" in results else {}
    errors = sum(summary[c.name][lvl].errors for c in chosen for lvl in levels)
    conditions = "\n".join(machine_notes(load_before, steal_median))
    config_lines = "\n".join(f"* `{c.name}`: {c.describe}." for c in chosen)
    rounds_text = "1 round" if args.rounds == 1 else f"{args.rounds} rounds"
    client_line = ("" if not floor_client else
                   "\n\nThe load generator shares the cores with every stack; against `floor-direct` it used\nabout "
                   + ", ".join(f"{floor_client[lvl] * 100:.0f}% of one core at {lvl}" for lvl in levels)
                   + " clients: the floor is the ceiling of this\nstack and this client together on this machine.")
    return f"""{recorded.CLUSTER.begin}
## The deploy flow through nginx: {n} replicas, one direct, the SDK, and the floor

A section of its own, recorded at another time than the rest: `python -m bench --cluster` rewrites it,
a full `python -m bench` keeps it as it is. The machine is the one above.

| This run | |
| --- | --- |
| Generated by | `{command}` on {started} |
| Load average (1/5/15 min) before / after | {load_before} / {load_after} |
| CPU taken by the hypervisor (steal) | {steal_text} |
| What else was running | {args.note or "not recorded (pass --note)"} |

{config_lines}

The same load generator as above (`bench/loadgen.py`, the same flow and client code, {args.seconds:g} s
measured after {args.warmup:g} s of warm-up) drives every stack at the same levels, interleaved level by
level and stack by stack, {rounds_text}, the order reversed every other round; medians of the
rounds, each round's flows/s beside them. "CPU ms/flow" is the whole stack's CPU time per flow: nginx,
every replica's processes and Redis. Through nginx a flow's two requests are spread round-robin, so
its round one and its retry usually reach different replicas, and the retry is checked against the
ticket store they share.

**The floor is a ceiling, not a competitor.** It answers every request with one of two canned byte
strings (round one: a fixed `input_required` with a fixed fake `requestState`; the retry: a fixed
complete result), chosen by one byte search for `"requestState"` in the body. It authenticates
nobody, parses nothing, mints and checks no ticket, stores nothing. "x of floor" is a stack's flows/s
over the floor's behind the same front (nginx with {n} replicas, or nothing): the share of what
this server, proxy and machine can carry at all that the application leaves.

The bench's one change to `deploy/nginx.conf`: the per-client request rate of the `pages` zone,
which `/mcp` uses, is raised to {cluster.BENCH_RATE}, because every bench client comes from
127.0.0.1 and the deployed 20 requests a second per client would refuse them within a second. The
zone is still there and counts every request; everything else is the file as deployed.

{table(["clients", "stack", "flows/s (median)", "each round", "x of floor", "p50 ms", "p99 ms", "CPU ms/flow",
        "steal %", "errors"], rows)}

Ratios of flows/s (medians) at each level:

{table(["ratio", *(f"{lvl} client{'' if lvl == 1 else 's'}" for lvl in levels)], ratio_rows)}{targets_text}

"steal %" is the median share of the machine's CPU time the hypervisor gave to other guests during
that stack's runs; while it is high every figure is slower and its tail longer for reasons outside
the code.{client_line}

{"No failed flow on any stack." if not errors else f"**{errors} flows failed**; see the printed first errors."}
{chr(10) + conditions + chr(10) if conditions else ""}{recorded.CLUSTER.end}"""


def cluster_targets(summary: dict[str, dict[int, Summary]], levels: list[int], replicas: int) -> list[list[str]]:
    """One row per target and level at 8 and 32 clients (those of the run): met or MISSED, with the figures."""
    ours, sdk = f"ours-nginx-{replicas}", f"sdk-nginx-{replicas}"
    floor_nginx = f"floor-nginx-{replicas}"
    rows: list[list[str]] = []

    def mark(ok: bool) -> str:
        return "yes" if ok else "**MISSED**"

    for lvl in (x for x in CLUSTER_TARGET_LEVELS if x in levels):
        def have(*names: str, lvl: int = lvl) -> bool:
            return all(name in summary and lvl in summary[name] for name in names)

        for front, a, b in (("direct", "ours-direct", "floor-direct"), ("nginx", ours, floor_nginx)):
            if not have(a, b):
                continue
            share = summary[a][lvl].rate / summary[b][lvl].rate if summary[b][lvl].rate else 0.0
            rows.append([f"`{a}` at least {CLUSTER_FLOOR_SHARE:g}x `{b}` (flows/s)", str(lvl),
                         mark(share >= CLUSTER_FLOOR_SHARE), f"{share:.2f}x"])
            if lvl == 32:
                p99 = summary[a][lvl].p99 / summary[b][lvl].p99 if summary[b][lvl].p99 else float("inf")
                before = CLUSTER_BASELINE_P99_RATIO[front]
                rows.append([f"p99 of `{a}` over `{b}`'s no worse than before issue 36 ({before:.2f}x)", str(lvl),
                             mark(p99 <= before), f"{p99:.2f}x ({summary[a][lvl].p99:.1f} against "
                                                  f"{summary[b][lvl].p99:.1f} ms)"])
        if have("ours-direct", FLOOR_SINGLE_USE):  # the measurable form the closing note proposes for issue 36
            share = (summary["ours-direct"][lvl].rate / summary[FLOOR_SINGLE_USE][lvl].rate
                     if summary[FLOOR_SINGLE_USE][lvl].rate else 0.0)
            rows.append([f"proposed: `ours-direct` at least {CLUSTER_FLOOR_SHARE:g}x `{FLOOR_SINGLE_USE}` (flows/s)",
                         str(lvl), mark(share >= CLUSTER_FLOOR_SHARE), f"{share:.2f}x"])
        if have(ours, sdk):
            ratio = summary[ours][lvl].rate / summary[sdk][lvl].rate if summary[sdk][lvl].rate else float("inf")
            rows.append([f"`{ours}` at least {CLUSTER_SDK_RATIO:g}x `{sdk}` (flows/s)", str(lvl),
                         mark(ratio >= CLUSTER_SDK_RATIO), f"{ratio:.2f}x"])
        errors = sum(summary[name][lvl].errors for name in summary if lvl in summary[name])
        rows.append(["no failed flow on any stack", str(lvl), mark(errors == 0), str(errors)])
    return rows


NOTE_VERIFY = """\
* **Verify vs a bare HMAC.** A bare HMAC-SHA256 of a ~250-byte ticket costs about 2 µs in CPython,
  so 10x leaves ~20 µs for everything else verify does: base64url-decode payload and signature
  strictly (decode, re-encode, compare), parse the JSON claims, recompute the request digest
  (canonical JSON + SHA-256) and record four checks in the trace. The ratio swings with machine
  load (seen from 5.7x to 19x across runs for the signed ticket), because the 2 µs denominator is
  the most easily disturbed number here. Profiled (cProfile, 20,000 verifications of a signed
  ticket): itsdangerous' `Signer.unsign` is ~30% of the time — it re-derives the signing key with
  an extra HMAC on every call and base64-decodes the signature again; `b64decode_strict` ~23%;
  `check_binding` ~27% (`request_digest`'s sorted `json.dumps` and the f-string details);
  `Trace.record` allocations ~8%. Sealed tickets skip itsdangerous (one AES-GCM call) and verify
  faster. Proposed core change (`mrtr/tickets.py`, not this benchmark's to edit): derive the
  itsdangerous key once in `TicketCodec.__init__` and verify with `hmac.new(derived, payload,
  sha256)` + `hmac.compare_digest` instead of `Signer.unsign`; decode the signature once; build
  trace details lazily."""

NOTE_P99 = """\
* **p99 at 8 and 32 clients.** The clients are closed-loop: every one always has a flow in flight,
  so by Little's law the mean flow latency is clients / throughput, and a p99 of 40 ms at 32
  clients needs well over 800 flows/s with a tight spread. On a machine whose cores other work
  also wants, a thread that is descheduled for one time slice adds tens of milliseconds to the
  flow it is serving, which is what the tail measures there; compare the p50, and rerun on an idle
  machine for the record."""

NOTE_RATIO = """\
* **Throughput vs the SDK.** The ratio is taken against the best SDK configuration in the same
  run. flows/s on a shared machine moves with whatever else runs (see each round's figure); the
  server CPU per flow is the steadier comparison of the work each server does per flow."""

NOTE_PAGES = """\
* **Page weight.** The lesson page inlines the playground and every live figure, so its HTML is the
  largest response; with gzip (served by the app itself) it and every other page stay far under
  100 KB. A client that refuses compression gets the larger "uncompressed" figure."""

NOTE_LOAD = """\
* **Busy machine.** The load average before the runs was above half the core count: other work
  was running, so every figure above is pessimistic and noisy; rerun on an idle machine for the
  record."""

#: Above this median steal (%), the report says the host, not the code, set the pace.
STEAL_NOTE_PCT = 5.0
NOTE_STEAL = """\
* **Shared host.** The hypervisor took a median {steal:.1f}% of this machine's CPU time per run
  (steal, from /proc/stat): the vCPUs were ready but other guests ran. That stretches latencies
  and their tail and lowers flows/s for every server alike; rerun when steal is near zero."""


def notes(checks: list[tuple[str, bool, str]], load_before: str, steal: float | None) -> str:
    missed = [name for name, ok, _ in checks if not ok]
    out = []
    if any(name.startswith("verify") for name in missed):
        out.append(NOTE_VERIFY)
    if any("SDK" in name for name in missed):
        out.append(NOTE_RATIO)
    if any(name.startswith("p99") for name in missed):
        out.append(NOTE_P99)
    if any("page" in name for name in missed):
        out.append(NOTE_PAGES)
    out += machine_notes(load_before, steal)
    return "\n".join(out) or "Every target was met in this run."


def machine_notes(load_before: str, steal: float | None) -> list[str]:
    """What the report must say about the machine rather than the code: busy before the runs, or a busy host."""
    out = []
    try:  # the load after the runs is mostly the benchmark's own; the load before is everyone else's
        busy = float(load_before.split()[0]) > (os.cpu_count() or 1) / 2
    except (ValueError, IndexError):
        busy = False
    if busy:
        out.append(NOTE_LOAD)
    if steal is not None and steal > STEAL_NOTE_PCT:
        out.append(NOTE_STEAL.format(steal=steal))
    return out


if __name__ == "__main__":
    # SIGTERM ends a run the way Ctrl-C does, so the `finally` blocks stop every server it started (they
    # run in process groups of their own, and no signal sent to this process reaches them). Only here, so
    # a caller of main() (a test) keeps its own handler.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    sys.exit(main())
