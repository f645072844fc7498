"""Start and stop the servers under test on free 127.0.0.1 ports, with bounded waits.

`production_app` serves OUR app the production way, under the server `scripts/production.sh` uses
(`PRODUCTION_SERVER`, granian's WSGI interface) or under gunicorn's gthread workers, the previous
choice, kept so the same tests and benchmarks can run under both (`granian_app`, `gunicorn_app`).
All are plain child processes in their own process group, so `stop()` ends exactly what was started;
`spawn` starts any other server the same way (the benchmark's SDK server and floor, in bench/compared_servers.py).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loopback.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
PRODUCTION_SH = ROOT / "scripts" / "production.sh"
BENCH_KEY = "bench-key-0123456789abcdef0123456789abcdef"
START_TIMEOUT_S = 30.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: A server counts as started once its processes have been idle this long: every worker has then
#: loaded the app. Idle means under IDLE_SHARE of one core, so the odd tick of housekeeping passes.
SETTLE_S = 0.3
IDLE_SHARE = 0.05
#: The production server (scripts/production.sh); the other one in SERVERS stays runnable for comparison.
PRODUCTION_SERVER = "granian"
SERVERS = ("granian", "gunicorn")


def production_threads() -> int:
    """scripts/production.sh's default THREADS, read from the script so it is written down once."""
    match = re.search(r'^THREADS="\$\{THREADS:-(\d+)\}"$', PRODUCTION_SH.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no THREADS default found in {PRODUCTION_SH}")
    return int(match.group(1))


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout:.0f} s")


@dataclass
class Served:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    tmp: tempfile.TemporaryDirectory[str] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pids(self) -> list[int]:
        """The server's own pid and its children's (gunicorn workers), read from /proc."""
        pids = [self.proc.pid]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                pids.append(int(stat.parent.name))
        return pids

    def rss_kib(self) -> int:
        """Total resident memory of the server and its workers, in KiB."""
        total = 0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                continue
        return total

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server and its workers have used so far."""
        ticks = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])
        return ticks / CLOCK_TICKS

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_until_settled(served: Served, children: int, timeout: float = START_TIMEOUT_S) -> None:
    """Wait until `served` has `children` worker processes and all its processes are idle.

    The port accepts connections as soon as the main process listens, while the workers may still
    be importing the app: connections made then all land on the first worker ready, and keep-alive
    keeps them there, so a run started at that moment measures one worker, not the server.
    """
    deadline = time.monotonic() + timeout
    samples: list[tuple[float, float]] = []
    while time.monotonic() < deadline:
        if served.proc.poll() is not None:
            raise RuntimeError(f"server exited with code {served.proc.returncode} while starting")
        now, cpu = time.monotonic(), served.cpu_seconds()
        if len(served.pids()) - 1 < children:
            samples.clear()
        else:
            samples.append((now, cpu))
            old = [c for t, c in samples if now - t >= SETTLE_S]
            if old and cpu - old[-1] <= IDLE_SHARE * SETTLE_S:
                return
        time.sleep(0.05)
    raise RuntimeError(f"workers not all started and idle within {timeout:.0f} s")


def spawn(name: str, argv: list[str], env: Mapping[str, str], port: int,
           tmp: tempfile.TemporaryDirectory[str], children: int) -> Served:
    log_path = Path(tmp.name) / f"{name}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    served = Served(name, port, proc, log_path, tmp, dict(env))
    try:
        wait_for_port(port, proc)
        wait_until_settled(served, children)
    except RuntimeError as exc:
        text = log_path.read_text(errors="replace")[-2000:]
        served.stop()
        raise RuntimeError(f"{name}: {exc}\n{text}") from None
    except BaseException:  # Ctrl-C or SIGTERM while it starts: the caller never gets it to stop, so stop it here
        served.stop()
        raise
    return served


def our_env(tmp: tempfile.TemporaryDirectory[str], env: Mapping[str, str] | None) -> dict[str, str]:
    base = {
        "MRTR_SECRET_KEYS": BENCH_KEY,
        "MRTR_STATE_DIR": tmp.name,
        "MRTR_STORE_PATH": str(Path(tmp.name) / "redeemed.sqlite3"),
    }
    return {**base, **(env or {})}


def gunicorn_app(*, workers: int = 2, threads: int = 8, env: Mapping[str, str] | None = None,
                 port: int | None = None, tmp: tempfile.TemporaryDirectory[str] | None = None,
                 extra_args: tuple[str, ...] = (), name: str = "ours") -> Served:
    """Our app under gunicorn's gthread worker, with a SQLite redeemed store in a temp dir by default.

    Keep-alive is 75 s, as behind a reverse proxy: gunicorn's default 2 s closes a client's idle
    connection while it may be sending on it, and a plain HTTP client does not retry that.
    """
    tmp = tmp or tempfile.TemporaryDirectory(prefix="mrtr-bench-")
    port = port or free_port()
    argv = [str(VENV_BIN / "gunicorn"), "-w", str(workers), "-k", "gthread", "--threads", str(threads),
            "-b", f"127.0.0.1:{port}", "--no-control-socket", "--graceful-timeout", "5", "--keep-alive", "75",
            *extra_args, "app:create_app()"]
    return spawn(name, argv, our_env(tmp, env), port, tmp, children=workers)


def granian_app(*, workers: int = 2, threads: int | None = None, env: Mapping[str, str] | None = None,
                port: int | None = None, tmp: tempfile.TemporaryDirectory[str] | None = None,
                extra_args: tuple[str, ...] = (), name: str = "ours") -> Served:
    """Our app under granian's WSGI interface: `workers` processes of `threads` blocking threads each
    (None: the script's default).

    It runs scripts/production.sh itself, so what is tested is what is deployed, including its
    checks (`threads` at least 2, and above `MRTR_HELD_STREAMS`).
    """
    tmp = tmp or tempfile.TemporaryDirectory(prefix="mrtr-bench-")
    port = port or free_port()
    argv = ["bash", str(PRODUCTION_SH), *extra_args]
    settings = {"PORT": str(port), "WORKERS": str(workers)}
    if threads is not None:
        settings["THREADS"] = str(threads)
    return spawn(name, argv, {**our_env(tmp, env), **settings}, port, tmp, children=workers)


def production_app(server: str = PRODUCTION_SERVER, **kwargs: object) -> Served:
    """Our app under `server` ("granian" or "gunicorn"), with the same keyword arguments as either."""
    if server == "granian":
        return granian_app(**kwargs)  # type: ignore[arg-type]
    if server == "gunicorn":
        return gunicorn_app(**kwargs)  # type: ignore[arg-type]
    raise ValueError(f"unknown server {server!r}; choose from {SERVERS}")
