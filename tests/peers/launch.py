"""Starting and stopping the peer servers the checker is tested against (import as ``tests.peers.launch``).

Each peer runs as its own process on a free 127.0.0.1 port (HTTP) or is described by the command
that starts one process per principal (stdio). Readiness is a connect poll with a bounded deadline;
processes are always terminated, then killed if they linger. Every peer reads its ticket clock from
a file (MRTR_PEER_CLOCK_FILE) holding seconds to add to real time (`peer.clock`, the mutation suite's
Clock on that file), so tests move past expiry with `advance()` instead of waiting. Owns no assertions
about what a peer does: that is test_peers.py.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from loopback.launchers import free_port, wait_for_port
from tests.mutants.server import TTL as MUTANTS_TTL
from tests.mutants.server import Clock

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "peers"
#: The tests' one flawed server, and how long its tickets live.
MUTANTS_SERVER = ROOT / "tests" / "mutants" / "server.py"
JS = ROOT / "tests" / "js"
TOKENS = {"bob": "bob-token", "alice": "alice-token"}
OWNER, OTHER = "bob", "alice"
PRINCIPAL_ENV = "MRTR_PRINCIPAL"
READY_DEADLINE = 60.0  # seconds; a peer that is not listening by then failed to start


class Principals:
    """Who mints the ticket (the owner) and who tries to spend it (the other), for every peer."""

    owner = OWNER
    other = OTHER


@dataclass
class HttpPeer(Principals):
    """A peer listening on `url` (POST), with a bearer token per principal."""

    name: str
    url: str
    clock: Clock
    ttl: float
    tokens: dict[str, str] = field(default_factory=lambda: dict(TOKENS))
    log: Path | None = None


@dataclass
class StdioPeer(Principals):
    """A peer started once per principal: `command`, with `env(principal)` naming who is calling."""

    name: str
    command: list[str]
    clock: Clock
    ttl: float
    principal_env: str = PRINCIPAL_ENV

    @property
    def command_line(self) -> str:
        """The command as one shell string, for `python -m mrtr check --stdio "..."`."""
        return shlex.join(self.command)

    def env(self, principal: str) -> dict[str, str]:
        return {**os.environ, self.principal_env: principal, "MRTR_PEER_CLOCK_FILE": str(self.clock.path)}


def node() -> str:
    found = shutil.which("node")
    if not found or not (JS / "node_modules" / "@modelcontextprotocol" / "server").is_dir():
        raise RuntimeError("Node and tests/js/node_modules are needed: run npm ci in tests/js (scripts/test.sh does)")
    return found


def wait_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    """loopback's wait for the port, with the end of the peer's log in the error when it never listens."""
    try:
        wait_for_port(port, proc, timeout=READY_DEADLINE)
    except RuntimeError as failed:
        raise RuntimeError(f"peer: {failed}:\n{log.read_text()[-3000:]}") from None


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def run_http(name: str, argv: list[str], workdir: Path, *, ttl: float, port: int) -> Iterator[HttpPeer]:
    """Start `argv` (which must listen on `port`), yield the peer once it listens, always stop it."""
    clock = Clock.at_zero(workdir / f"{name}.clock")
    log = workdir / f"{name}.log"
    env = {**os.environ, "MRTR_PEER_CLOCK_FILE": str(clock.path)}
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                cwd=ROOT)
        try:
            wait_listening(proc, port, log)
            yield HttpPeer(name=name, url=f"http://127.0.0.1:{port}/mcp", clock=clock, ttl=ttl, log=log)
        finally:
            stop(proc)


# -- the peers -------------------------------------------------------------------------------------------


@contextmanager
def sdk_python_http(workdir: Path, ttl: float = 120.0, form: str = "result") -> Iterator[HttpPeer]:
    """form "result": the tool returns InputRequiredResult itself; "resolve": the SDK's Resolve dependency."""
    port = free_port()
    argv = [sys.executable, str(PEERS / "sdk_py_server.py"), "http", "--port", str(port), "--ttl", str(ttl),
            "--form", form]
    name = "sdk-python-http" if form == "result" else f"sdk-python-{form}-http"
    with run_http(name, argv, workdir, ttl=ttl, port=port) as peer:
        yield peer


def sdk_python_stdio(workdir: Path, ttl: float = 120.0, sdk_defaults: bool = False) -> StdioPeer:
    """sdk_defaults: the SDK's own default sealing (a key per process, no principal over stdio) instead of one
    key shared by every process and the principal from MRTR_PRINCIPAL."""
    argv = [sys.executable, str(PEERS / "sdk_py_server.py"), "stdio", "--ttl", str(ttl)]
    name = "sdk-python-stdio-defaults" if sdk_defaults else "sdk-python-stdio"
    return StdioPeer(name, [*argv, "--sdk-defaults"] if sdk_defaults else argv,
                     Clock.at_zero(workdir / f"{name}.clock"), ttl)


@contextmanager
def sdk_typescript_http(workdir: Path, variant: str = "docs", ttl: float = 120.0) -> Iterator[HttpPeer]:
    """variant "docs": the SDK's own example shape (--ttl applies); "lesson": the lesson's snippet (TTL 120 s)."""
    port = free_port()
    argv = [node(), str(JS / "sdk_server.mjs"), "--port", str(port), "--variant", variant, "--ttl", str(ttl)]
    with run_http(f"sdk-typescript-{variant}", argv, workdir, ttl=ttl if variant == "docs" else 120.0,
                  port=port) as peer:
        yield peer


@contextmanager
def mutant_http(workdir: Path, mutant: str = "sound", name: str | None = None) -> Iterator[HttpPeer]:
    """Server `mutant` of the mutation suite (tests/mutants/server.py: the sound one or a mutant with one flaw)
    as a process over HTTP."""
    port = free_port()
    argv = [sys.executable, str(MUTANTS_SERVER), mutant, "--http", str(port)]
    with run_http(name or f"mutant-{mutant}-http", argv, workdir, ttl=MUTANTS_TTL, port=port) as peer:
        yield peer


def mutant_stdio(workdir: Path, mutant: str = "sound", name: str | None = None) -> StdioPeer:
    """The same over stdio, one process per principal."""
    name = name or f"mutant-{mutant}-stdio"
    return StdioPeer(name, [sys.executable, str(MUTANTS_SERVER), mutant], Clock.at_zero(workdir / f"{name}.clock"),
                     MUTANTS_TTL)
