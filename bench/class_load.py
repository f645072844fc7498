"""Load test of a live class: N learners join and answer one question against the production server.

    .venv/bin/python -m bench.class_load                 # 200 learners, 2 granian workers; prints a report
    .venv/bin/python -m bench.class_load --write         # ... and writes bench/classroom_RESULTS.md
    .venv/bin/python -m bench.class_load --learners 50 --redis   # through a real redis-server
    .venv/bin/python -m bench.class_load --hall           # 500 phones, both servers (bench/hall.py): its section

The server is our app the production way (`bench.compared_servers.granian_app`, scripts/production.sh; SQLite in a temp
state dir). A presenter starts the class, pushes the first question and keeps its live screen (the
SSE stream) open. Then every learner is a thread with its own keep-alive connection: it joins
(`POST /join`), waits for all the others at a barrier, then answers after its own think time: a
seeded random offset spread evenly over `--spread` seconds (5 s by default: a room of 200 answering
within five seconds, 40 answers a second). A second run with `--spread 0` is the worst case, every
learner answering at the same instant; on 2 cores that burst queues behind itself, and the report
shows it beside the target run. Each answer's latency is measured from send to the last byte. At
the end the presenter's page must show a tally of exactly N. `run()` is what the test suite calls
with a small N (tests/web/test_classroom_load.py): no timing is asserted there.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import random
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from bench import hall
from bench.compared_servers import Served, granian_app, production_threads
from bench.recorded import RecordedSection
from loopback.class_driver import cookie_of, form_request, host_tally, start_class

RESULTS = Path(__file__).resolve().parent / "classroom_RESULTS.md"
TARGET_P99_MS = 300.0


@dataclass
class ClassRun:
    learners: int
    workers: int
    spread: float = 0.0
    joined: int = 0
    answered: int = 0
    errors: int = 0
    tally: int = -1
    join_ms: list[float] = field(default_factory=list)
    answer_ms: list[float] = field(default_factory=list)
    first_errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @staticmethod
    def pct(values: list[float], p: float) -> float:
        xs = sorted(values)
        if not xs:
            return float("nan")
        return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def watch(port: int, code: str, cookie: str, stop: threading.Event) -> None:
    """The presenter's live screen: an open SSE stream, read until the run ends."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", f"/class/{code}/host/events", headers={"Cookie": cookie, "Accept": "text/event-stream"})
        response = conn.getresponse()
        while not stop.is_set():
            try:
                if not response.readline():
                    break
            except TimeoutError:
                continue
    except OSError:
        pass
    finally:
        conn.close()


def run(port: int, *, learners: int, workers: int = 0, options: str = "abcd", spread: float = 0.0,
        seed: int = 2026) -> ClassRun:
    """Play one class against a server already listening on `port`; answers spread over `spread` s."""
    result = ClassRun(learners=learners, workers=workers, spread=spread)
    rng = random.Random(seed)
    offsets = [rng.uniform(0, spread) for _ in range(learners)]
    code, host_cookie = start_class(port)
    lock = threading.Lock()
    barrier = threading.Barrier(learners, timeout=120)
    stop = threading.Event()

    def fail(message: str) -> None:
        with lock:
            result.errors += 1
            if len(result.first_errors) < 5:
                result.first_errors.append(message)

    def learner(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            t0 = time.perf_counter()
            response, _ = form_request(conn, "POST", "/join", {"code": code, "nickname": f"learner {n}"})
            joined = time.perf_counter()
            if response.status != 303:
                fail(f"join {n}: HTTP {response.status}")
                barrier.abort()
                return
            cookie = cookie_of(response, "mrtr_learner")
            with lock:
                result.joined += 1
                result.join_ms.append((joined - t0) * 1000)
            barrier.wait()
            if offsets[n]:
                time.sleep(offsets[n])  # this learner's think time
            t1 = time.perf_counter()
            response, body = form_request(conn, "POST", f"/class/{code}/answer", {"option": options[n % len(options)]},
                                      {"Cookie": cookie, "Accept": "application/json"})
            t2 = time.perf_counter()
            if response.status != 200 or b'"option"' not in body:
                fail(f"answer {n}: HTTP {response.status} {body[:80]!r}")
                return
            with lock:
                result.answered += 1
                result.answer_ms.append((t2 - t1) * 1000)
        except (OSError, ValueError, threading.BrokenBarrierError) as exc:
            fail(f"learner {n}: {type(exc).__name__}: {exc}")
        finally:
            conn.close()

    watcher = threading.Thread(target=watch, args=(port, code, host_cookie, stop), daemon=True)
    watcher.start()
    threads = [threading.Thread(target=learner, args=(n,), daemon=True) for n in range(learners)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    result.wall_s = time.perf_counter() - began
    stop.set()
    watcher.join(timeout=10)
    result.tally = host_tally(port, code, host_cookie)
    return result


def serve(workers: int, threads: int, redis: bool, stack: ExitStack) -> Served:
    env: dict[str, str] = {}
    if redis:
        from loopback.redis_server import RedisServer

        env["MRTR_REDIS_URL"] = stack.enter_context(RedisServer()).url
    return stack.enter_context(granian_app(workers=workers, threads=threads, env=env,
                                           extra_args=("--backlog", "512")))


def _row(result: ClassRun) -> str:
    p50, p99, worst = (ClassRun.pct(result.answer_ms, p) for p in (50, 99, 100))
    how = f"spread over {result.spread:g} s" if result.spread else "all at the same instant"
    return (f"| {how} | {result.joined}/{result.learners} | {result.answered} | {result.errors} | {result.tally} |"
            f" {ClassRun.pct(result.join_ms, 99):.1f} | {p50:.1f} | {p99:.1f} | {worst:.1f} |")


def met(result: ClassRun) -> bool:
    return result.errors == 0 and result.tally == result.learners and ClassRun.pct(result.answer_ms, 99) < TARGET_P99_MS


def report(target: ClassRun, burst: ClassRun | None, *, threads: int, redis: bool, note: str) -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = [_row(target)] + ([_row(burst)] if burst else [])
    return "\n".join([
        "# Live class load test",
        "",
        f"Generated by `python -m bench.class_load --write` on {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}"
        f" ({platform.python_implementation()} {platform.python_version()}, `nproc` {os.cpu_count()},"
        f" load average after: {load}; what else was running: {note or 'not recorded'}).",
        "",
        f"{target.learners} learners join one class and answer its first question, against the production"
        f" server (granian via scripts/production.sh, {target.workers} workers x {threads} threads), classes in"
        f" SQLite{', live updates through a real redis-server' if redis else ''}. The presenter's SSE stream stays"
        " open throughout; the load generator runs on the same 2 cores. Latencies in ms.",
        "",
        "| answers sent | joined | answers accepted | errors | tally on screen | join p99 | answer p50 | answer p99"
        " | answer max |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"Target (the first row: a room answering within {target.spread:g} s): zero errors and an answer p99 under"
        f" {TARGET_P99_MS:.0f} ms: **{'met' if met(target) else 'MISSED'}**."
        + (" The second row is the worst case, every phone tapping in the same millisecond: each answer costs"
           " a few ms of CPU, so the last of 200 simultaneous answers waits for the others on 2 cores."
           if burst else ""),
        "",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=production_threads(),
                        help="granian blocking threads per worker (default: scripts/production.sh's)")
    parser.add_argument("--spread", type=float, default=5.0, help="seconds the answers are spread over")
    parser.add_argument("--no-burst", action="store_true", help="skip the every-learner-at-once run")
    parser.add_argument("--redis", action="store_true", help="fan live updates out through a real redis-server")
    parser.add_argument("--write", action="store_true", help=f"write the report to {RESULTS.name}")
    parser.add_argument("--note", default="", help="what else was running on the machine, for the report")
    parser.add_argument("--hall", action="store_true",
                        help="the lecture hall instead (bench/hall.py): 500 phones polling as the learner page does, "
                        "answers spread over --spread s, a reveal; on the production and run.sh servers")
    parser.add_argument("--server", choices=["production", "run", "both"], default="both", help="with --hall")
    parser.add_argument("--procs", type=int, default=4, help="with --hall: forked processes the phones run in")
    parser.add_argument("--no-write", action="store_true", help=f"with --hall: print only, leave {RESULTS.name}")
    args = parser.parse_args()
    if args.hall:
        return hall_main(args)
    with ExitStack() as stack:
        served = serve(args.workers, args.threads, args.redis, stack)
        result = run(served.port, learners=args.learners, workers=args.workers, spread=args.spread)
        burst = None if args.no_burst else run(served.port, learners=args.learners, workers=args.workers)
    text = report(result, burst, threads=args.threads, redis=args.redis, note=args.note)
    print(text)
    for each in (result, burst):
        if each and each.first_errors:
            print("first errors:", *each.first_errors, sep="\n  ")
    if args.write:
        kept = HALL.find(RESULTS.read_text()) if RESULTS.exists() else None  # the hall is recorded on its own
        RESULTS.write_text(HALL.put(text, kept, before="") if kept else text)
    return 0 if met(result) else 1


HALL = RecordedSection("--hall")


def hall_main(args: argparse.Namespace) -> int:
    """The lecture hall on each chosen server, one after the other; the section of classroom_RESULTS.md."""
    learners = args.learners if args.learners != 200 else 500  # 200 is the classic run's default
    kinds = ["production", "run"] if args.server == "both" else [args.server]
    runs: list[hall.HallRun] = []
    for kind in kinds:
        with tempfile.TemporaryDirectory(prefix="mrtr-hall-db-") as tmp:
            class_db = Path(tmp) / "classroom.sqlite3"
            with hall.served(kind, class_db) as served:
                result = hall.hall_run(served, class_db, name=kind, learners=learners, spread=args.spread,
                                       procs=args.procs)
        runs.append(result)
        print(hall.row(result), flush=True)
        for error in result.errors[:5]:
            print("  ", error)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    names = {"production": "`scripts/production.sh` (granian, 2 workers x "
             f"{production_threads()} threads)", "run": "`scripts/run.sh`'s command (" + " ".join(
        Path(a).name if i == 0 else a for i, a in enumerate(hall.run_sh_command(0)[0])) + ")"}
    section = "\n".join([
        HALL.begin,
        f"## The lecture hall: {learners} phones",
        "",
        f"Generated by `python -m bench.class_load --hall` on {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}"
        f" ({platform.python_implementation()} {platform.python_version()}, `nproc` {os.cpu_count()}, load average"
        f" after: {load}; what else was running: {args.note or 'not recorded'}). Servers: "
        + "; ".join(names[k] for k in kinds) + ". How it plays: bench/hall.py's docstring.",
        "",
        f"Each of {learners} phones loads its page, polls its live panel every {hall.POLL_S:g} s as the learner page"
        f" does, answers once (spread over {args.spread:g} s), and must see the reveal. Target: zero errors, answer"
        f" p99 under {hall.TARGET_ANSWER_P99_MS:.0f} ms, every phone seeing the revealed answer within"
        f" {hall.TARGET_REVEAL_S:g} s, the screen counting every answer.",
        "",
        hall.HEADER,
        *(hall.row(r) for r in runs),
        "",
        "Joins: the room first joins over HTTP from one address (a hall behind one router); those the join limits"
        " refuse (web/classroom/services.py: JOIN_CLIENT_LIMIT per address and JOIN_CLASS_LIMIT per class, a minute,"
        " per process) are added through the class store so the measured phases have the whole room.",
        "",
        f"Reveal: a phone polls every {hall.POLL_S:g} s (the learner page's interval), so the last phone sees a reveal"
        f" up to {hall.POLL_S:g} s plus one poll's latency after it is sent.",
        HALL.end,
    ])
    print(section)
    if not args.no_write:
        text = RESULTS.read_text() if RESULTS.exists() else "# Live class load test\n"
        RESULTS.write_text(HALL.put(text, section, before=""))
    return 0 if all(r.met() for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
