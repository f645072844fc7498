"""The official MCP conformance suite against the real app on 127.0.0.1.

scripts/conformance.sh runs the 14 input-required-result-* scenarios and server-stateless one by
one with no baseline, then `--suite all --spec-version 2026-07-28` with conformance-baseline.yml.
The suite sends no Authorization header, so this app opts in to an anonymous principal; the
fixtures it calls by name are on because of MRTR_CONFORMANCE_FIXTURES.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app import create_app
from tests.browser.helpers import serve

from .conftest import TEST_KEY

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_official_conformance_suite_passes(tmp_path):
    app = create_app(
        {
            "MRTR_CONFORMANCE_FIXTURES": "1",
            "MRTR_STORE": "memory",
            "MRTR_SECRET_KEYS": TEST_KEY,
            "MRTR_ANONYMOUS_PRINCIPAL": "conformance",
        }
    )
    with serve(app) as live:
        run = subprocess.run(
            ["bash", str(ROOT / "scripts/conformance.sh"), f"{live.url}/mcp", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
        )
    report = f"exit {run.returncode}\n{run.stdout}\n{run.stderr[-4000:]}"
    assert run.returncode == 0, report
    assert "RESULT: PASS" in run.stdout, report
    assert run.stdout.count("  PASS  ") == 15, report
