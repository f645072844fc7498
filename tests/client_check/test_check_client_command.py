"""`mrtr check-client --command` as a user runs it: the client a separate process, the URL its last argument,
`MCP_CONFORMANCE_SCENARIO` set, the report on stdout (and as JSON and JUnit), the exit status the verdict."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mrtr_cli.check_client import SCENARIO, TIMED_OUT, run_command
from mrtr_grading import RULES

from .test_check_client import USER_ANSWERS

pytestmark = pytest.mark.external

PYTHON = shlex.quote(sys.executable)


def check_client(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mrtr", "check-client", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def answers_file(tmp_path: Path) -> str:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(USER_ANSWERS), encoding="utf-8")
    return shlex.quote(str(path))


def test_the_projects_client_passes_every_rule_as_a_process(tmp_path: Path) -> None:
    junit = tmp_path / "client.xml"
    done = check_client("--user-choices", "--command",
                        f"{PYTHON} -m mrtr call --every-tool --answers {answers_file(tmp_path)}",
                        "--json", "-", "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"PASS: {len(RULES)} of {len(RULES)} rules held" in done.stdout
    report = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    assert report["ok"] is True and {r["verdict"] for r in report["rules"]} == {"pass"}
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and suite.get("tests") == str(len(RULES))


def test_over_stdio_the_client_gets_the_server_command_last(tmp_path: Path) -> None:
    done = check_client("--stdio", "--user-choices", "--command",
                        f"{PYTHON} -m mrtr call --every-tool --answers {answers_file(tmp_path)} --stdio")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"PASS: {len(RULES) - 1} of {len(RULES)} rules held (1 not run)" in done.stdout
    assert "http-headers (not-run): over stdio a request has no HTTP headers" in done.stdout


def test_a_flawed_client_over_stdio_fails_the_run() -> None:
    script = Path(__file__).with_name("flawed_client_main.py")
    done = check_client("--stdio", "--user-choices", "--command",
                        f"{PYTHON} {shlex.quote(str(script))} decline_to_accept --stdio")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "decline-cancel (fail): the user chose decline for 'declined'; the client sent" in done.stdout


def test_a_client_that_breaks_a_rule_fails_the_run() -> None:
    script = Path(__file__).with_name("flawed_client_main.py")
    done = check_client("--command", f"{PYTHON} {shlex.quote(str(script))} reuse_id")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "new-id (fail)" in done.stdout and "Fix: mint a fresh id" in done.stdout


def test_the_client_gets_the_url_last_and_the_scenario() -> None:
    code, output = run_command(f"{PYTHON} -c 'import os, sys; print(os.environ[\"MCP_CONFORMANCE_SCENARIO\"], "
                               "sys.argv[-1])'", 30)("http://127.0.0.1:9/mcp")
    assert code == 0 and output.split() == [SCENARIO, "http://127.0.0.1:9/mcp"]


def test_a_command_that_cannot_start_is_a_usage_error() -> None:
    done = check_client("--command", "/nonexistent/client")
    assert done.returncode == 2 and "could not run the client" in done.stderr


def test_a_client_that_hangs_is_stopped_at_the_time_out() -> None:
    code, _ = run_command(f"{PYTHON} -c 'import select; select.select([], [], [])'", 0.05)("http://127.0.0.1:9/mcp")
    assert code == TIMED_OUT


def test_a_client_that_reaches_no_rule_is_not_a_pass() -> None:
    done = check_client("--command", f"{PYTHON} -c 'pass'")
    assert done.returncode == 2 and "NOT GRADED" in done.stdout and "reached no rule" in done.stderr


def test_a_stdio_client_that_never_starts_the_server_is_told_what_it_was_given() -> None:
    done = check_client("--stdio", "--command", f"{PYTHON} -c 'pass'")
    assert done.returncode == 2 and "did it take the server command as its last argument?" in done.stderr


def test_a_long_stderr_does_not_push_the_outcome_lines_out() -> None:
    code, output = run_command(f"{PYTHON} -c 'import sys; print(\"grade_endless: refused\"); "
                               "sys.stderr.write(\"warning\\n\" * 20000)'", 30)("http://127.0.0.1:9/mcp")
    assert code == 0 and output.startswith("grade_endless: refused") and output.endswith("warning\n")
