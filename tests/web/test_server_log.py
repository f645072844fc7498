"""The reason a ticket was refused reaches the server's own log (stderr), never the wire."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Runs in a fresh interpreter, as a production server would: nothing has configured logging.
SCRIPT = textwrap.dedent("""
    import json, sys
    from app import create_app
    from moves.engine import client_meta
    app = create_app({"TESTING": True, "MRTR_STORE": "memory",
                      "MRTR_SECRET_KEYS": "server-log-test-key-0123456789abcdef"})
    headers = {"Authorization": "Bearer bob-token", "MCP-Protocol-Version": "2026-07-28",
               "Mcp-Method": "tools/call", "Mcp-Name": "deploy", "Accept": "application/json"}
    def call(i, **extra):
        params = {"name": "deploy", "arguments": {"env": "staging"}, "_meta": client_meta(), **extra}
        body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        return app.test_client().post("/mcp", json=body, headers=headers).get_json()
    ticket = call(1)["result"]["requestState"]
    answer = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    print(json.dumps(call(2, requestState=ticket + "x", inputResponses=answer)))
""")


@pytest.mark.external  # a fresh interpreter, whose logging nothing has configured
def test_a_refused_ticket_is_explained_in_the_server_log_only() -> None:
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode == 0, run.stderr
    wire = json.loads(run.stdout.strip().splitlines()[-1])
    assert wire["error"]["message"] == "Invalid or expired requestState"
    assert "Signature matches" not in run.stdout
    assert "requestState rejected at “Signature matches”" in run.stderr
