"""The official MCP conformance suite's 2026-07-28 client scenarios against `mrtr call --every-tool --answer-by-schema`.

scripts/conformance-client.sh runs each of the seven scored client scenarios on its own with no baseline; the suite
fails a client run on any FAILURE or WARNING and on a non-zero exit the scenario does not allow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = 7

pytestmark = pytest.mark.external  # the conformance suite, through npx and Node 22


@pytest.mark.slow
def test_the_official_client_scenarios_pass_with_no_baseline(tmp_path: Path) -> None:
    run = subprocess.run(["bash", str(ROOT / "scripts/conformance-client.sh"), str(tmp_path)], capture_output=True,
                         text=True, timeout=900, cwd=ROOT, env={**os.environ, "MRTR_PYTHON": sys.executable})
    report = f"exit {run.returncode}\n{run.stdout}\n{run.stderr[-4000:]}"
    assert run.returncode == 0, report
    assert "RESULT: PASS" in run.stdout and run.stdout.count("  PASS  ") == SCENARIOS, report

