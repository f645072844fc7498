"""`mrtr call` against servers built on the official SDKs (Python `mcp` 2.3.0 and TypeScript 2.4.0, the peers of
tests/peers) and against `mrtr serve` over stdio: every tool by schema, and deploy answered in a pseudo-terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.conftest import TEST_KEY
from tests.peers.launch import HttpPeer, sdk_python_http, sdk_typescript_http

from .terminal import MakeTerminal, run

pytestmark = pytest.mark.external  # the SDK servers run as processes (Python, Node), and so does `mrtr serve`

PEERS: dict[str, Callable[[Path], AbstractContextManager[HttpPeer]]] = {
    "sdk-python": sdk_python_http, "sdk-typescript": sdk_typescript_http}


@pytest.fixture(params=sorted(PEERS))
def peer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HttpPeer]:
    with PEERS[request.param](tmp_path) as started:
        yield started


def test_every_tool_of_an_sdk_server_completes_by_schema(peer: HttpPeer) -> None:
    code, out, err = run(["--every-tool", "--answer-by-schema", peer.url, "--token", "bob-token"])
    assert (code, err) == (0, ""), out
    assert "deploy: complete" in out and "deployed" in out


def test_deploy_on_an_sdk_server_with_scripted_answers(peer: HttpPeer) -> None:
    """The same call with `--answers`: the yes comes from the script, and a script without it is refused."""
    code, out, err = run([peer.url, "deploy", "--arg", "env=staging", "--answers", '{"confirm":{"confirm":true}}',
                          "--token", "bob-token"])
    assert (code, err) == (0, ""), out
    assert "deployed" in out
    code, _out, err = run([peer.url, "deploy", "--arg", "env=staging", "--answers", "{}", "--token", "bob-token"])
    assert code == 1 and "no answer for the question 'confirm'" in err


def test_deploy_on_an_sdk_server_answered_in_a_terminal(peer: HttpPeer, terminal: MakeTerminal) -> None:
    term = terminal([peer.url, "deploy", "--arg", "env=staging", "--token", "bob-token"])
    term.expect("accept, decline or cancel? [accept]: ")
    term.type("")
    term.expect("confirm (boolean, required")
    term.type("y")
    assert "deployed" in term.expect("deployed")
    assert term.close() == 0


def test_every_tool_of_mrtr_serve_over_stdio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MRTR_SECRET_KEYS", TEST_KEY)
    monkeypatch.setenv("MRTR_STORE", "memory")
    monkeypatch.setenv("MRTR_PRINCIPAL", "bob")
    code, out, err = run(["--stdio", f"{sys.executable} -m mrtr serve", "--every-tool", "--answer-by-schema"])
    assert (code, err) == (0, ""), out
    assert "deploy: complete: deployed to example" in out and "report: complete: report for example" in out


def test_the_mrtr_command_itself_on_a_pseudo_terminal(tmp_path: Path) -> None:
    """The installed entry point as a process of its own (`python -m mrtr call`), its stdin, stdout and stderr the
    pty's slave end, against `mrtr serve` over stdio."""
    import os
    import pty
    import select
    import subprocess
    import time

    master, slave = pty.openpty()
    env = {**os.environ, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory", "MRTR_PRINCIPAL": "bob"}
    serve = f"{sys.executable} -m mrtr serve"
    proc = subprocess.Popen([sys.executable, "-m", "mrtr", "call", "--stdio", serve, "deploy", "--arg", "env=qa"],
                            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    seen = ""

    def expect(text: str) -> None:
        nonlocal seen
        end = time.monotonic() + 30
        while text not in seen:
            assert time.monotonic() < end, seen
            if select.select([master], [], [], max(end - time.monotonic(), 0))[0]:
                seen += os.read(master, 65536).decode("utf-8", "replace").replace("\r\n", "\n")

    try:
        expect("accept, decline or cancel? [accept]: ")
        os.write(master, b"\n")
        expect("[y/n]: ")
        os.write(master, b"y\n")
        expect("deployed to qa")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
