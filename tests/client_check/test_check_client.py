"""`mrtr check-client` grades: the project's client passes every rule, the small sound client too, and each
flawed client is flagged by its own rule and no other. Clients run in this process against the grading server's
real socket; the state-only pacing is read from a fake clock the small clients advance, so nothing waits."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from mrtr.clock import FakeClock
from mrtr_cli import call
from mrtr_cli.check_client import check
from mrtr_cli.grading_server import GradingServer
from mrtr_grading import CHOICES, RULES, ClientReport, Recording

from .flawed_clients import Flaws, SmallClient

ALL_RULES = [r.slug for r in RULES]


def grade_small(flaws: Flaws, *, stdio: bool = False) -> ClientReport:
    clock = FakeClock()
    return check(lambda target: SmallClient(target, flaws, clock.sleep, stdio=stdio, choices=CHOICES).run(),
                 "small", Recording(clock=clock), stdio=stdio, choices_known=True)


#: `mrtr call --answers`: the user's answer to every question the flows ask, the decline-and-cancel ones as
#: MRTR_CHECK_CLIENT_CHOICES says (mrtr call cannot yet mix --answer-by-schema with the user's choices). The same
#: file the official clients' page grades the project's client with.
ANSWERS_FILE = Path(__file__).resolve().parents[2] / "docs/client/check-client-answers.json"
USER_ANSWERS: dict[str, object] = json.loads(ANSWERS_FILE.read_text(encoding="utf-8"))


def test_the_answers_file_holds_the_users_choices() -> None:
    assert {k: USER_ANSWERS[k] for k in CHOICES} == {k: {"action": a} for k, a in CHOICES.items()}


def project_client(*answering: str, stdio: bool = False) -> Callable[[str], tuple[int, str]]:
    def run(target: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        where = ["--stdio", target] if stdio else [target]
        code = call.main(["--every-tool", *answering, "--timeout", "10", *where], stdout=out, stderr=err,
                         environ={})
        return code, out.getvalue() + err.getvalue()
    return run


def test_the_projects_client_passes_every_rule() -> None:
    report = check(project_client("--answers", json.dumps(USER_ANSWERS)), "mrtr call --every-tool --answers ...",
                   choices_known=True)
    assert report.verdicts() == dict.fromkeys(ALL_RULES, "pass"), report.table()
    assert report.ok and f"PASS: {len(RULES)} of {len(RULES)} rules held" in report.table()


def test_answering_by_schema_leaves_the_users_choice_unknown() -> None:
    report = check(project_client("--answer-by-schema"), "mrtr call --every-tool --answer-by-schema")
    assert report.verdicts() == {**dict.fromkeys(ALL_RULES, "pass"), "decline-cancel": "not-run"}, report.table()
    row = next(r for r in report.rows if r.rule == "decline-cancel")
    assert "--user-choices" in row.evidence and report.ok


def test_the_small_sound_client_passes_every_rule() -> None:
    report = grade_small(Flaws())
    assert report.verdicts() == dict.fromkeys(ALL_RULES, "pass"), report.table()



#: Each flawed client with the one rule it breaks.
FLAWED = [
    ("reserialise_ticket", "ticket-echo"),
    ("reuse_id", "new-id"),
    ("resend_old_answers", "multi-round"),
    ("no_bound", "bounded-rounds"),
    ("no_pacing", "state-only-paced"),
    ("leak_ticket", "nothing-carried"),
    ("answer_yes", "typed-answers"),
    ("change_arguments", "same-request"),
    ("empty_ticket", "no-ticket-no-state"),
    ("answer_state_only", "state-only-no-answers"),
    ("answer_url", "url-mode"),
    ("retry_unknown", "refuse-unknown-result"),
    ("retry_empty", "refuse-empty-input-required"),
    ("stale_ticket", "multi-round"),
    ("retry_malformed", "refuse-malformed-result"),
    ("answer_undeclared", "refuse-undeclared-kind"),
    ("decline_to_accept", "decline-cancel"),
    ("silent_bound", "bounded-rounds-reported"),
    ("no_name_header", "http-headers"),
    ("no_capabilities", "meta-every-request"),
    ("swallow_version_error", "version-retry"),
]


def assert_flagged_by_only(report: ClientReport, rule: str, not_run: list[str]) -> None:
    failed = [r.rule for r in report.rows if r.verdict == "fail"]
    assert failed == [rule], report.table()
    assert [r.rule for r in report.rows if r.verdict == "not-run"] == not_run
    row = next(r for r in report.rows if r.rule == rule)
    assert row.evidence and row.fix
    assert not report.ok and f"{rule} (fail)" in report.table() and "Fix: " in report.table()


@pytest.mark.parametrize(("flaw", "rule"), FLAWED)
def test_each_flawed_client_is_flagged_by_its_rule_only(flaw: str, rule: str) -> None:
    assert_flagged_by_only(grade_small(Flaws(**{flaw: True})), rule, [])


def test_a_client_that_never_connects_reaches_no_rule_and_passes_none() -> None:
    report = check(lambda url: (1, "Traceback\nImportError: no module named client"), "nothing")
    assert report.verdicts() == dict.fromkeys(ALL_RULES, "not-run")
    assert not report.graded and report.summary() == f"NOT GRADED: the client reached none of the {len(RULES)} rules"
    assert "ImportError: no module named client" in report.table()


def test_the_grading_server_answers_bad_input_with_a_clear_error() -> None:
    with GradingServer() as server:
        def post(body: bytes) -> tuple[int, bytes]:
            request = urllib.request.Request(server.url, data=body, headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, response.read()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read()
        status, body = post(b"{not json")
        assert status == 400 and json.loads(body)["error"]["code"] == -32700
        assert post(b'{"jsonrpc": "2.0", "method": "notifications/x"}') == (202, b"")
        status, body = post(b'{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}')
        assert status == 200 and json.loads(body)["error"]["code"] == -32601
    assert [c.method for c in server.recording.calls] == ["resources/list"]


def test_the_evidence_shows_what_the_server_sent_and_what_came_back() -> None:
    row = next(r for r in grade_small(Flaws(reserialise_ticket=True)).rows if r.rule == "ticket-echo")
    assert row.evidence.startswith("server sent a 4078-char requestState, client sent back 4105 chars")
    assert 'first difference is at char 0: sent " {\\"grader\\"' in row.evidence, row.evidence
    yes = next(r for r in grade_small(Flaws(answer_yes=True)).rows if r.rule == "typed-answers")
    assert 'agree is "yes", not a boolean' in yes.evidence and "count is" in yes.evidence


def test_json_and_junit_carry_every_rule() -> None:
    report = grade_small(Flaws(reuse_id=True))
    data = json.loads(json.dumps(report.to_json()))
    assert data["ok"] is False and [r["rule"] for r in data["rules"]] == ALL_RULES
    suite = ET.fromstring(report.junit()).find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("tests") == str(len(ALL_RULES))
    failure = suite.find("testcase[@name='new-id']/failure")
    assert failure is not None and "Fix:" in (failure.text or "")
