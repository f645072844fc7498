"""`mrtr check-client --stdio`: the same flows and rules over the stdio grading server a client starts (a relay
process back to the checker's socket, so the run's fake clock still stamps every request). The project's client
(`mrtr call --stdio`, on mrtr_client's StdioTransport) and the small sound client pass every rule but the
HTTP-only one, which is not-run with its reason; each flawed client is flagged by its own rule only."""

from __future__ import annotations

import json
import socket

import pytest

from mrtr_cli.check_client import check
from mrtr_cli.stdio_grading import StdioGradingServer, reply_to
from mrtr_grading import RULES, Recording

from .flawed_clients import Flaws
from .test_check_client import FLAWED, USER_ANSWERS, assert_flagged_by_only, grade_small, project_client

pytestmark = pytest.mark.external

OVER_STDIO = {**dict.fromkeys([r.slug for r in RULES], "pass"), "http-headers": "not-run"}


def test_the_projects_client_passes_every_rule_over_stdio() -> None:
    report = check(project_client("--answers", json.dumps(USER_ANSWERS), stdio=True),
                   "mrtr call --every-tool --answers ... --stdio", stdio=True, choices_known=True)
    assert report.verdicts() == OVER_STDIO, report.table()
    row = next(r for r in report.rows if r.rule == "http-headers")
    assert row.evidence.startswith("over stdio a request has no HTTP headers")


def test_the_small_sound_client_passes_every_rule_over_stdio() -> None:
    report = grade_small(Flaws(), stdio=True)
    assert report.verdicts() == OVER_STDIO, report.table()


@pytest.mark.parametrize(("flaw", "rule"), [(f, r) for f, r in FLAWED if r != "http-headers"])
def test_each_flawed_client_is_flagged_by_its_rule_only_over_stdio(flaw: str, rule: str) -> None:
    assert_flagged_by_only(grade_small(Flaws(**{flaw: True}), stdio=True), rule, ["http-headers"])


def test_bad_lines_get_a_clear_error_and_the_run_goes_on() -> None:
    recording = Recording()
    assert json.loads(reply_to(b"{not json\n", recording))["error"]["code"] == -32700
    assert reply_to(b'{"jsonrpc": "2.0", "method": "notifications/x"}\n', recording) == b"\n"
    assert json.loads(reply_to(b"x" * 1_000_001, recording))["error"]["code"] == -32600
    reply = json.loads(reply_to(b'{"jsonrpc": "2.0", "id": 7, "method": "resources/list"}\n', recording))
    assert reply["id"] == 7 and reply["error"]["code"] == -32601
    assert [c.method for c in recording.calls] == ["resources/list"]


def test_the_socket_lives_in_a_private_folder_and_goes_with_the_run() -> None:
    with StdioGradingServer() as server:
        path = server.path
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)
            sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}\n')
            assert json.loads(sock.makefile("rb").readline())["result"]["tools"]
        assert path in server.command and "mrtr_cli.grading_relay" in server.command
    with pytest.raises(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as late:
        late.connect(path)
