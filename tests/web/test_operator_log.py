"""The operator's log: the pages' lab plays never reach it (their refusals are the lesson, shown on the page),
and a real /mcp refusal does, with its reason."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from app import create_app
from moves.catalog import first_stopped_by, load_moves
from tests.web.helpers import modern, modern_headers

KEY = "operator-log-key-0123456789abcdefghijklmnop"


def rejected(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("requestState rejected")]


EDITED = first_stopped_by(load_moves(), "signature")
assert EDITED is not None


@pytest.mark.parametrize("path", ["/demo", f"/playground?move={EDITED.slug}", "/lessons/when-the-server-needs-input"])
def test_the_pages_lab_plays_stay_out_of_the_operators_log(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                           path: str) -> None:
    caplog.set_level(logging.INFO, logger="mrtr")
    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "memory",
                      "MRTR_CLASS_DB": str(tmp_path / "c.sqlite3")})
    page = app.test_client().get(path)
    assert page.status_code == 200
    assert "Invalid or expired requestState" in page.get_data(as_text=True)  # the page did play refusals
    assert rejected(caplog) == []


def test_a_real_mcp_refusal_reaches_the_operators_log_with_its_reason(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mrtr")
    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "memory",
                      "MRTR_CLASS_DB": str(tmp_path / "c.sqlite3")})
    message = modern("tools/call", {"name": "deploy", "arguments": {"env": "staging"}, "requestState": "junk",
                                    "inputResponses": {}})
    reply = app.test_client().post("/mcp", data=json.dumps(message), headers=modern_headers(message))
    assert reply.get_json()["error"]["message"] == "Invalid or expired requestState"
    [line] = rejected(caplog)
    assert "Signature matches" in line and "unknown ticket format" in line
