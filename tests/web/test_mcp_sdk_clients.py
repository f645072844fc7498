"""The official SDK clients against POST /mcp over real HTTP on 127.0.0.1, in both protocol eras.

The app runs under its production server (one worker, several threads: a legacy answer arrives
on another request while the tools/call's SSE stream waits); the Python SDK client (mcp==2.3.0) and
the TypeScript SDK client (@modelcontextprotocol/client 2.4.0) run as subprocesses through their
drivers, so nothing of ours sits between them and the endpoint. "auto" negotiates 2026-07-28
(MRTR retries with the ticket); "legacy" initializes a 2025-11-25 session, where the core's shim
asks through elicitation/create on the SSE stream of the tools/call.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopback.launchers import Served, production_app

from .conftest import TEST_KEY

ROOT = Path(__file__).resolve().parents[2]
ERA = {"auto": "2026-07-28", "legacy": "2025-11-25"}


@pytest.fixture(scope="module")
def live(production_server: str) -> Iterator[Served]:
    env = {"MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory"}
    with production_app(production_server, workers=1, threads=4, env=env) as server:
        yield server


def python_driver() -> list[str]:
    return [sys.executable, str(ROOT / "tests/sdk/py_client.py")]


def node_driver() -> list[str]:
    node = shutil.which("node")
    assert node and (ROOT / "tests/js/node_modules").is_dir(), "run npm ci in tests/js (scripts/test.sh does)"
    return [node, str(ROOT / "tests/js/deploy_client.mjs")]


DRIVERS = {"python": python_driver, "typescript": node_driver}


def drive(live: Served, client: str, *args: str) -> dict:
    argv = [*DRIVERS[client](), "--url", f"{live.url}/mcp", "--timeout", "20", *args]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
    lines = run.stdout.strip().splitlines()
    assert lines, f"no output (exit {run.returncode}); stderr:\n{run.stderr[-3000:]}"
    out = json.loads(lines[-1])
    out["_stderr"] = run.stderr[-3000:]
    out["_exit"] = run.returncode
    return out


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("client", ["python", "typescript"])
def test_an_official_client_deploys_after_confirming(live, client, mode):
    out = drive(live, client, "--mode", mode, "--answer", "accept", "--token", "bob-token", "--env", "prod")
    assert out["ok"] and out["_exit"] == 0, out
    assert out["text"] == "deployed to prod" and not out["isError"]
    assert out["elicitations"] == ["Deploy to prod?"]
    assert out["protocolVersion"] == ERA[mode]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("client", ["python", "typescript"])
def test_an_official_client_that_declines_deploys_nothing(live, client, mode):
    out = drive(live, client, "--mode", mode, "--answer", "decline", "--token", "alice-token")
    assert out["ok"] and out["_exit"] == 0, out
    assert out["text"].startswith("nothing was deployed"), out


@pytest.mark.parametrize("client", ["python", "typescript"])
def test_an_official_client_without_a_valid_token_is_refused(live, client):
    out = drive(live, client, "--mode", "auto", "--token", "stolen-token")
    assert not out["ok"] and out["_exit"] == 1
    # Each SDK words it its own way: the status, or our error's message.
    assert any(word in out["error"] for word in ("401", "nauthorized", "bearer token is not valid")), out
