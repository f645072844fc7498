"""`python -m mrtr serve` over stdio, the lab command, and the official SDK clients against it.

These tests start real processes because the process boundary is the thing under test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mrtr import Client
from mrtr_client import StdioTransport

from .conftest import KEY, ROOT

ENV = {"MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "memory", "MRTR_PRINCIPAL": "bob", "PYTHONPATH": str(ROOT)}
SERVE = [sys.executable, "-m", "mrtr", "serve"]


@pytest.fixture
def transport():
    t = StdioTransport(SERVE, env=ENV, stderr=subprocess.PIPE)
    yield t
    t.close()


@pytest.mark.external  # `python -m mrtr serve` as a process
def test_stdio_serves_a_modern_deploy_line_by_line(transport):
    client = Client(transport)
    assert client.connect() == "modern"
    assert client.call_tool("deploy", {"env": "staging"})["content"][0]["text"] == "deployed to staging"


@pytest.mark.external  # `python -m mrtr serve` as a process
def test_stdio_serves_a_legacy_deploy_through_the_shim(transport):
    client = Client(transport)
    assert client.connect(prefer="legacy") == "legacy"
    assert client.call_tool("deploy", {"env": "qa"})["content"][0]["text"] == "deployed to qa"
    asked = [line.message for line in client.transcript if line.message.get("method") == "elicitation/create"]
    assert len(asked) == 1 and asked[0]["params"]["message"] == "Deploy to qa?"


@pytest.mark.external  # `python -m mrtr serve` as a process
def test_stdio_answers_garbage_and_keeps_serving(transport):
    for line in (b"{not json\n", b"[1,2]\n", b"\"x\"\n"):
        assert transport.process.stdin is not None
        transport.process.stdin.write(line)
        transport.process.stdin.flush()
        reply = transport.receive(timeout=10)
        assert reply is not None and reply["id"] is None and reply["error"]["code"] in (-32700, -32600)
    assert Client(transport).connect() == "modern"


@pytest.mark.external  # `python -m mrtr serve` as a process
def test_stdio_exits_cleanly_when_stdin_closes(transport):
    assert transport.close() == 0


@pytest.mark.external  # `python -m mrtr lab`, which starts `mrtr serve`
def test_the_lab_command_runs_all_four_scenes_and_exits_zero():
    run = subprocess.run([sys.executable, "-m", "mrtr", "lab"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert out.count("===") == 8 and "4 of 4 scenes went as expected" in out
    assert '"resultType":"input_required"' in out and '"method":"elicitation/create"' in out
    assert '"code":-32022' in out and '"requested":"1900-01-01"' in out and '"code":-32602' in out
    assert all(line.startswith(("  -->", "  <--", "  ok", "===", "server", "4 of")) or not line.strip()
               for line in out.splitlines())


@pytest.mark.external  # `python -m mrtr` as a process
def test_an_unknown_command_prints_usage():
    run = subprocess.run([sys.executable, "-m", "mrtr", "nope"], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 2 and "usage" in run.stderr


def drive(argv: list[str]) -> dict:
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**os.environ, **ENV}, cwd=ROOT)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, run.stdout + run.stderr
    return json.loads(lines[-1]) | {"_stderr": run.stderr[-2000:]}


@pytest.mark.external  # the SDK's client and `mrtr serve`, processes
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(("answer", "text"), [("accept", "deployed to staging"),
                                              ("decline", "nothing was deployed to staging")])
def test_the_official_python_sdk_client_completes_deploy_over_stdio(mode, answer, text):
    """Interop: mcp==2.3.0's Client (modern MRTR retries, or legacy through our shim)."""
    out = drive([sys.executable, str(ROOT / "tests/sdk/py_client.py"), "--mode", mode, "--answer", answer,
                 "--stdio", "--", *SERVE])
    assert out["ok"], out
    assert out["text"].startswith(text) and out["elicitations"] == ["Deploy to staging?"]
    assert out["protocolVersion"] == ("2026-07-28" if mode == "auto" else "2025-11-25")


@pytest.mark.external  # node
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_official_typescript_sdk_client_completes_deploy_over_stdio(mode):
    """Interop: @modelcontextprotocol/client 2.4.0 (installed by scripts/test.sh with npm ci)."""
    node = shutil.which("node")
    assert node and (ROOT / "tests/js/node_modules").is_dir(), "run npm ci in tests/js (scripts/test.sh does)"
    out = drive([node, str(ROOT / "tests/js/deploy_client.mjs"), "--mode", mode, "--answer", "accept",
                 "--stdio", "--", *SERVE])
    assert out["ok"], out
    assert out["text"] == "deployed to staging"


@pytest.mark.external  # a fresh interpreter
def test_importing_mrtr_loads_no_web_framework():
    """The core is sans-IO: importing it must not pull in Flask (or any socket-level HTTP stack)."""
    code = ("import sys, mrtr, mrtr._server, mrtr.client, mrtr_cli.stdio_server, mrtr_cli.raw_lab, moves.engine,"
            " moves.story;"
            "bad = [m for m in ('flask', 'werkzeug', 'http.client', 'urllib.request', 'requests') if m in sys.modules];"
            "print(bad)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.stdout.strip() == "[]", run.stdout + run.stderr


def test_the_core_never_reads_the_system_clock_itself():
    """Time comes only through the injected clock: no module calls time.time() or datetime.now()."""
    sources = {p.name: p.read_text() for p in Path(ROOT / "mrtr").glob("*.py")}
    offenders = [name for name, text in sources.items()
                 if name not in ("clock.py",) and ("time.time(" in text or "datetime.now(" in text)]
    assert offenders == []
