"""The official SDK clients graded now match docs/client/official-clients.md: the page is regenerated into a
temporary file by its own script (scripts/grade_official_clients.py, which runs all three clients under
`mrtr check-client`) and its tables compared with the committed page's, so the page cannot drift from what the
clients do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mrtr_grading import RULES

pytestmark = pytest.mark.external

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts/grade_official_clients.py"
START, END = "<!-- grades:start -->", "<!-- grades:end -->"


def table(page: str) -> str:
    return page[page.index(START):page.index(END)]


def test_the_official_clients_page_matches_what_the_clients_do_now(tmp_path: Path) -> None:
    fresh = tmp_path / "official-clients.md"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(fresh)], capture_output=True, text=True,
                          timeout=400, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    # every client reached every rule: a not-run would mean a driver broke, not a client
    assert done.stdout.count(f"of {len(RULES)} rules held") == 3 and "not run" not in done.stdout, done.stdout
    committed = (ROOT / "docs/client/official-clients.md").read_text(encoding="utf-8")
    assert table(fresh.read_text(encoding="utf-8")) == table(committed), (
        "the clients' grades changed: run .venv/bin/python scripts/grade_official_clients.py and commit the page")


def test_each_official_client_shows_its_own_outcome_for_the_refusal_tools() -> None:
    page = (ROOT / "docs/client/official-clients.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith("| `grade_empty_input_required` |"))
    assert "no outcome printed" not in row and row.count("complete") == 0
