"""scripts/production.sh as docs/deploy/single-machine.md runs it (two workers): the official Python SDK
client in the 2025-11-25 era completes 20 calls in a row, whichever worker each of its requests reaches."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .conftest import ROOT, answers, free_port
from .test_cluster import sdk_legacy_call

CALLS = 20


def test_twenty_legacy_sdk_calls_in_a_row_on_two_workers(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PORT": str(port), "WORKERS": "2", "MRTR_STATE_DIR": str(tmp_path),
           "MRTR_TOKENS": "prod-legacy-token=bob", "MRTR_CLASS_DB": str(tmp_path / "class.sqlite3")}
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(["bash", str(ROOT / "scripts/production.sh")], cwd=ROOT, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not answers(port):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-2000:]
            time.sleep(0.1)
        results = [sdk_legacy_call(f"http://127.0.0.1:{port}/mcp", "prod-legacy-token") for _ in range(CALLS)]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    failed = [r for r in results if not r.get("ok")]
    assert not failed, failed[:3]
    assert all(r["text"] == "deployed to staging" for r in results)
