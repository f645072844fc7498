"""The new rules' edges, read from hand-made recordings: what they cannot know is not-run with the reason (no
output from an in-page run, no headers from an adapter that kept none, no known user choice), and the evidence
names what the server sent and what came back."""

from __future__ import annotations

from mrtr import JSON, JSONObject
from mrtr.protocol import META_CAPABILITIES, META_VERSION, MODERN_VERSION
from mrtr_grading import CHOICES, Recording, grade
from mrtr_grading.client_rules import bounded_said, decline_cancel, http_headers, version_retry
from mrtr_grading.verdicts import GradedRun

META: JSONObject = {META_VERSION: MODERN_VERSION, META_CAPABILITIES: {"elicitation": {"form": {}}}}


def call(recording: Recording, tool: str, n: int, headers: dict[str, str] | None = None, **params: JSON) -> None:
    recording.answer({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                      "params": {"name": tool, "arguments": {}, "_meta": META, **params}}, headers=headers)


def test_without_the_clients_output_the_rules_that_read_it_are_not_run() -> None:
    recording = Recording()
    for n in range(1, 12):
        call(recording, "grade_endless", n, requestState=f"endless:{n}")
    verdict = bounded_said(GradedRun(recording))
    assert verdict.verdict == "not-run" and "exit status and output were not captured" in verdict.evidence
    report = grade(recording, "in-page")  # the web page's call: no output, no exit status
    assert report.verdicts()["bounded-rounds-reported"] == "not-run"


def test_a_clean_exit_that_says_nothing_fails_and_a_tied_error_passes() -> None:
    recording = Recording()
    for n in range(1, 12):
        call(recording, "grade_endless", n)
    silent = bounded_said(GradedRun(recording, exit_code=0, output="all done\n"))
    assert silent.verdict == "fail" and "exited 0 and printed no error" in silent.evidence
    said = bounded_said(GradedRun(recording, exit_code=0, output="grade_endless: raised RoundsError: 10 rounds\n"))
    assert said.verdict == "pass"
    untied = bounded_said(GradedRun(recording, exit_code=1, output="error: something\n"))
    assert untied.verdict == "not-run" and "cannot be tied" in untied.evidence


def test_headers_not_recorded_or_over_stdio_are_not_run_and_a_mismatch_names_both_sides() -> None:
    recording = Recording()
    call(recording, "grade_headers", 1)
    assert http_headers(GradedRun(recording)).evidence == "this adapter did not record the request headers"
    assert http_headers(GradedRun(recording, "stdio")).verdict == "not-run"
    wrong = Recording()
    call(wrong, "grade_headers", 1, headers={"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/call",
                                             "Mcp-Name": "grade_plain"})
    verdict = http_headers(GradedRun(wrong))
    assert verdict.verdict == "fail"
    assert 'mcp-name is "grade_plain" but the body says "grade_headers"' in verdict.evidence


def test_the_users_choice_is_graded_only_when_known() -> None:
    recording = Recording()
    call(recording, "grade_user_choice", 1)
    accepted: JSONObject = {key: {"action": "accept", "content": {"ok": True}} for key in CHOICES}
    call(recording, "grade_user_choice", 2, requestState="choice:1", inputResponses=accepted)
    assert decline_cancel(GradedRun(recording)).verdict == "not-run"
    known = decline_cancel(GradedRun(recording, choices_known=True))
    assert known.verdict == "fail" and "the user chose decline for 'declined'; the client sent" in known.evidence


def test_a_retry_after_32022_with_an_unsupported_version_fails() -> None:
    recording = Recording()
    call(recording, "grade_version_retry", 1)
    recording.answer({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "grade_version_retry", "arguments": {}, "_meta": {**META, META_VERSION: "2025-11-25"}}})
    verdict = version_retry(GradedRun(recording))
    assert verdict.verdict == "fail" and '"2025-11-25", not one the server supports' in verdict.evidence
    assert '"supported": ["2026-07-28"]' in verdict.evidence
