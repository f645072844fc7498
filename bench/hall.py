"""The lecture hall: 500 phones in one live class, each holding its live updates the way the learner page does.

    .venv/bin/python -m bench.class_load --hall                      # 500 learners, production and run servers
    .venv/bin/python -m bench.class_load --hall --server run --learners 100 --no-write

Per server (`production`: scripts/production.sh, granian, as `bench.compared_servers.granian_app` runs it; `run`:
the command scripts/run.sh ends with, read from the script with the variables it exports):

1. A presenter starts a class and pushes its first question (`loopback.class_driver.start_class`).
2. The room joins. A burst of joins over HTTP from one address, as a hall behind one school router sends them,
   measures what the join limits let through (web/classroom/routes.py: per address and per class a minute); whoever
   they refuse is added straight to the class's SQLite store (MRTR_CLASS_DB, set by the bench), so the rest of
   the run has the whole room. The report says how many got in over HTTP.
3. Every phone loads its page (`GET /class/<code>/me`) and then polls `/class/<code>/me/live?stage=N` every
   POLL_S seconds with `HX-Request`, as `templates/classroom/_live.html`'s `hx-trigger` does (read from it), from
   a random phase: 204 until the stage changes. Each phone answers once, at a seeded offset spread over `--spread`
   seconds, with htmx's `hx-post` (the answer's latency is measured from send to last byte).
4. One second after the last answer the presenter reveals; a phone has seen the reveal when a poll brings the
   panel with `data-revealed`. Its reveal latency is that poll's end minus the moment the reveal was sent.
5. The server's resident memory (every process) is sampled every half second; the presenter's screen must then
   count every answer.

Phones are threads, spread over forked processes (`--procs`) so that they do not queue for one GIL. Nothing here
waits on wall-clock timing in a test: tests run `hall_run` with a small room and assert only counts.
"""

from __future__ import annotations

import http.client
import multiprocessing
import random
import re
import shlex
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.compared_servers import ROOT, VENV_BIN, Served, free_port, granian_app, production_threads, spawn
from loopback.class_driver import FORM, cookie_of, form_request, host_tally, start_class
from loopback.launchers import our_env

RUN_SH = ROOT / "scripts" / "run.sh"
LIVE_TEMPLATE = ROOT / "templates" / "classroom" / "_live.html"


def _poll_seconds() -> float:
    """The learner page's poll interval, read from its template so the bench plays what phones really do."""
    found = re.search(r'hx-trigger="every (\d+(?:\.\d+)?)(ms|s)"', LIVE_TEMPLATE.read_text(encoding="utf-8"))
    if found is None:
        raise RuntimeError(f"no 'every N' hx-trigger in {LIVE_TEMPLATE}")
    return float(found[1]) / (1000 if found[2] == "ms" else 1)


POLL_S = _poll_seconds()
TARGET_ANSWER_P99_MS = 300.0
TARGET_REVEAL_S = 2.0
HTMX = {"HX-Request": "true"}


def run_sh_command(port: int) -> tuple[list[str], dict[str, str]]:
    """scripts/run.sh's serving command (its `exec` line, continuations joined) for `port`, and the variables
    the script exports for it: its `${NAME:-default}`s filled in, `$((NAME - 1))` worked out, the venv's own
    binaries. Read from the script, so the bench serves what the script serves (f34 owns it)."""
    text = RUN_SH.read_text().replace("\\\n", " ")
    # A default may name another variable (MRTR_PUBLIC_URL's names ${PORT}), so `${NAME}` may sit inside it.
    values = dict(re.findall(r'^(?:export )?(\w+)="\$\{\1:-((?:[^}"$]|\$\{\w+\}|\$(?!\{))*)\}"$', text,
                             re.MULTILINE))
    values["PORT"] = str(port)

    def expand(word: str) -> str:
        word = re.sub(r"\$\(\((\w+) - (\d+)\)\)", lambda m: str(int(values[m.group(1)]) - int(m.group(2))), word)
        return re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], word)

    for name, value in list(values.items()):
        values[name] = expand(value)
    exported = {name: values[name] for name in re.findall(r"^export (\w+)=", text, re.MULTILINE)}
    line = next(ln for ln in reversed(text.splitlines()) if ln.startswith("exec "))
    argv = [expand(arg) for arg in shlex.split(line)[1:]]
    if argv[0].startswith(".venv/bin/"):
        argv[0] = str(VENV_BIN / argv[0].removeprefix(".venv/bin/"))
    return argv, exported


def run_sh_workers(argv: list[str]) -> int:
    """How many worker processes the command starts (granian's --workers; 0 for a single-process server)."""
    return int(argv[argv.index("--workers") + 1]) if "--workers" in argv else 0


@contextmanager
def served(kind: str, class_db: Path) -> Iterator[Served]:
    env = {"MRTR_CLASS_DB": str(class_db)}
    if kind == "production":
        with granian_app(workers=2, threads=production_threads(), env=env, extra_args=("--backlog", "1024")) as s:
            yield s
        return
    port = free_port()
    argv, exported = run_sh_command(port)  # before the folder: a script it cannot read leaves nothing behind
    tmp = tempfile.TemporaryDirectory(prefix="mrtr-hall-")
    with spawn("run-sh", argv, our_env(tmp, {**exported, **env}), port, tmp, children=run_sh_workers(argv)) as s:
        yield s


@dataclass
class Phone:
    n: int
    cookie: str
    phase: float  # seconds after the start at which its polling begins
    answer_at: float  # seconds after the start
    option: str


@dataclass
class PhoneResult:
    answer_ms: float | None = None
    poll_ms: list[float] = field(default_factory=list)
    revealed_at: float | None = None  # time.time() when the poll showing the reveal ended
    errors: list[str] = field(default_factory=list)


def _phone(port: int, code: str, phone: Phone, start: float, stop_at: float) -> PhoneResult:
    out = PhoneResult()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Cookie": phone.cookie}
    try:
        response, body = form_request(conn, "GET", f"/class/{code}/me", headers=headers)
        if response.status != 200:
            out.errors.append(f"page {phone.n}: HTTP {response.status}")
            return out
        stage = re.search(rb'data-stage="(\d+)"', body)
        current = stage.group(1).decode() if stage else "0"
        next_poll = start + phone.phase
        answered = False
        while out.revealed_at is None and time.time() < stop_at:
            due_answer = start + phone.answer_at if not answered else float("inf")
            when = min(next_poll, due_answer)
            time.sleep(max(0.0, when - time.time()))
            t0 = time.perf_counter()
            if when == due_answer:
                answered = True
                response, body = form_request(conn, "POST", f"/class/{code}/answer", {"option": phone.option},
                                              {**headers, **HTMX})
                out.answer_ms = (time.perf_counter() - t0) * 1000
                if response.status != 200 or b"data-my-answer" not in body:
                    out.errors.append(f"answer {phone.n}: HTTP {response.status} {body[:60]!r}")
                continue
            next_poll += POLL_S
            response, body = form_request(conn, "GET", f"/class/{code}/me/live?stage={current}", headers={
                **headers, **HTMX})
            out.poll_ms.append((time.perf_counter() - t0) * 1000)
            if response.status == 204:
                continue
            if response.status != 200:
                out.errors.append(f"poll {phone.n}: HTTP {response.status}")
                continue
            stage = re.search(rb'data-stage="(\d+)"', body)
            current = stage.group(1).decode() if stage else current
            if b"data-revealed" in body:
                out.revealed_at = time.time()
    except (OSError, http.client.HTTPException) as exc:
        out.errors.append(f"phone {phone.n}: {type(exc).__name__}: {exc}")
    finally:
        conn.close()
    return out


def _phones(port: int, code: str, phones: list[Phone], start: float, stop_at: float) -> list[PhoneResult]:
    """One forked process's share of the room: a thread per phone."""
    results: list[PhoneResult | None] = [None] * len(phones)

    def one(i: int) -> None:
        results[i] = _phone(port, code, phones[i], start, stop_at)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(phones))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=stop_at - time.time() + 60)
    return [r if r is not None else PhoneResult(errors=["phone thread did not finish"]) for r in results]


def _phones_star(args: tuple[int, str, list[Phone], float, float]) -> list[PhoneResult]:
    return _phones(*args)


@dataclass
class HallRun:
    server: str
    learners: int
    spread: float
    http_joined: int = 0
    http_refused: dict[int, int] = field(default_factory=dict)
    answers_ms: list[float] = field(default_factory=list)
    polls: int = 0
    poll_ms: list[float] = field(default_factory=list)
    reveal_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    tally: int = -1
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0

    @staticmethod
    def pct(values: list[float], p: float) -> float:
        xs = sorted(values)
        return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")

    def met(self) -> bool:
        return (not self.errors and self.tally == self.learners and len(self.answers_ms) == self.learners
                and self.pct(self.answers_ms, 99) < TARGET_ANSWER_P99_MS and len(self.reveal_s) == self.learners
                and max(self.reveal_s) <= TARGET_REVEAL_S)


def _join_room(port: int, code: str, learners: int, class_db: Path) -> tuple[list[str], int, dict[int, int]]:
    """Every learner's cookie: joined over HTTP while the limits let them, the rest through the store."""
    from mrtr_stores.classes_sqlite import SqliteClassStore

    cookies: list[str] = []
    refused: dict[int, int] = {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for n in range(learners):
            response, _ = form_request(conn, "POST", "/join", {"code": code, "nickname": f"learner {n}"})
            if response.status == 303:
                cookies.append(cookie_of(response, "mrtr_learner"))
            else:
                refused[response.status] = refused.get(response.status, 0) + 1
    finally:
        conn.close()
    http_joined = len(cookies)
    store = SqliteClassStore(class_db, clock=time.time, ttl_seconds=12 * 3600)
    row = store.by_code(code)
    if row is None:
        raise RuntimeError(f"class {code} is not in {class_db}")
    for n in range(http_joined, learners):
        _, token = store.join(row, f"learner {n}")
        cookies.append(f"mrtr_learner={token}")
    return cookies, http_joined, refused


def _reveal(port: int, code: str, host_cookie: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        response, _ = form_request(conn, "POST", f"/class/{code}/host/reveal", {}, {"Cookie": host_cookie, **FORM})
        if response.status != 303:
            raise RuntimeError(f"reveal: HTTP {response.status}")
    finally:
        conn.close()


def hall_run(server: Served, class_db: Path, *, name: str, learners: int = 500, spread: float = 5.0,
             procs: int = 4, seed: int = 2026) -> HallRun:
    """Play the hall against `server` (which keeps its classes in `class_db`)."""
    result = HallRun(server=name, learners=learners, spread=spread)
    rng = random.Random(seed)
    code, host_cookie = start_class(server.port)
    cookies, result.http_joined, result.http_refused = _join_room(server.port, code, learners, class_db)
    result.rss_before_kib = server.rss_kib()
    cpu0 = server.cpu_seconds()
    settle = 2.0 + learners / 200  # time for every phone to load its page before the first answer
    start = time.time() + 1.0
    phones = [Phone(n, cookies[n], rng.uniform(0, POLL_S), settle + rng.uniform(0, spread), "abcd"[n % 4])
              for n in range(learners)]
    reveal_at = start + settle + spread + 1.0
    stop_at = reveal_at + 10.0
    chunks = [(server.port, code, phones[i::procs], start, stop_at) for i in range(procs)]
    ctx = multiprocessing.get_context("fork")
    began = time.perf_counter()
    with ctx.Pool(procs) as pool:
        pending = pool.map_async(_phones_star, chunks)
        revealed_sent = None
        while not pending.ready():
            result.rss_peak_kib = max(result.rss_peak_kib, server.rss_kib())
            if revealed_sent is None and time.time() >= reveal_at:
                revealed_sent = time.time()
                _reveal(server.port, code, host_cookie)
            pending.wait(0.5)
        shares = pending.get()
    result.wall_s = time.perf_counter() - began
    result.cpu_s = server.cpu_seconds() - cpu0
    for share in shares:
        for phone in share:
            result.errors += phone.errors
            if phone.answer_ms is not None and not phone.errors:
                result.answers_ms.append(phone.answer_ms)
            result.polls += len(phone.poll_ms)
            result.poll_ms += phone.poll_ms
            if phone.revealed_at is not None and revealed_sent is not None:
                result.reveal_s.append(phone.revealed_at - revealed_sent)
    if revealed_sent is None:
        result.errors.append("the run ended before the reveal")
    result.tally = host_tally(server.port, code, host_cookie)
    return result


def row(r: HallRun) -> str:
    refused = ", ".join(f"{n} x HTTP {status}" for status, n in sorted(r.http_refused.items())) or "none"
    reveal = (f"{HallRun.pct(r.reveal_s, 50):.2f} / {HallRun.pct(r.reveal_s, 99):.2f} / {max(r.reveal_s):.2f}"
              if r.reveal_s else "n/a")
    return (f"| {r.server} | {r.http_joined} ({refused}) | {len(r.answers_ms)}/{r.learners} | {len(r.errors)} |"
            f" {r.tally} | {HallRun.pct(r.answers_ms, 50):.1f} | {HallRun.pct(r.answers_ms, 99):.1f} |"
            f" {r.polls} | {HallRun.pct(r.poll_ms, 99):.1f} | {len(r.reveal_s)}/{r.learners} | {reveal} |"
            f" {r.rss_before_kib / 1024:.0f} / {r.rss_peak_kib / 1024:.0f} | {r.cpu_s:.1f} |"
            f" {'met' if r.met() else '**MISSED**'} |")


HEADER = ("| server | joined over HTTP (refused) | answers accepted | errors | tally on screen | answer p50 ms |"
          " answer p99 ms | polls | poll p99 ms | phones that saw the reveal | reveal s p50 / p99 / max |"
          " RSS MiB before / peak | server CPU s | target |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
