""""Build the client's loop" (lessons/build-the-client/): the steps are graded by the client checker's rules plus
the honest-grading rule, in-process (what the page's Web Worker runs, web/build/client_run.py) and over the network
(`mrtr check-client --command "python client.py"`, with the same grading of steps): the starter passes no step,
the solution every step, and each plausible wrong answer, written as a small edit of the solution, is not done
with the rule's own reason.
"""

from __future__ import annotations

import io
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from flask.testing import FlaskClient

from mrtr_cli.check_client import main
from mrtr_grading import HONEST_ROW, RULES
from web.build.client_run import run_source
from web.build.routes import Build, ReportError, grade_client, load_build
from web.site.content import DEFAULT_ROOT

LESSON = DEFAULT_ROOT / "build-the-client"
BUILD: Build = load_build(LESSON)  # type: ignore[assignment]  # the lesson has a steps.toml
STEP_OF = {slug: step.id for step in BUILD.steps for slug in step.moves}


@dataclass(frozen=True)
class Wrong:
    """A plausible wrong answer: `edits` (old, new) applied to the solution; `step` is then not done because
    `rule` fails, and the grade's words for the step carry `reason` (from the rule's evidence)."""

    name: str
    edits: tuple[tuple[str, str], ...]
    rule: str
    reason: str
    #: Other steps the same mistake breaks, by a rule of their own (old answers also answer a state-only round).
    also: tuple[str, ...] = ()


WRONG = (
    Wrong("re-serialises the ticket", ((
        '    return {"jsonrpc": "2.0", "id": new_id(), "method": "tools/call", "params": {**call, **fields}}\n',
        '    if "requestState" in fields:\n'
        '        fields = {**fields, "requestState": json.dumps(json.loads(fields["requestState"]))\n'
        '                  if fields["requestState"].lstrip().startswith("{") else fields["requestState"]}\n'
        '    return {"jsonrpc": "2.0", "id": new_id(), "method": "tools/call", "params": {**call, **fields}}\n'),),
        "ticket-echo", "the first difference is at char 0"),
    Wrong("reuses the id", (('"id": new_id(), "method": "tools/call"', '"id": call["name"], "method": "tools/call"'),),
          "new-id", "retried with an id it had used before"),
    Wrong("resends old answers", (("    answers: dict[str, Any] = {}\n    for key, question",
                                   "    answers = EVERY_ANSWER\n    for key, question"),
                                  ("def pick_answers(", "EVERY_ANSWER: dict[str, Any] = {}\n\n\ndef pick_answers(")),
          "multi-round", "server asked ['first'] this round; client answered ['first', 'ok']", ("rounds",)),
    Wrong("has no bound", (("    if rounds > MAX_ROUNDS:\n        raise GaveUp",
                            "    if False:\n        raise GaveUp"),),
          "bounded-rounds", "the server had to stop it with an error"),
    Wrong("does not pace", (("        sleep(min(0.05 * 2 ** (rounds - 1), 0.25))\n", "        pass\n"),),
          "state-only-paced", "0 ms, 0 ms apart"),
    Wrong("answers URL mode undeclared", (
        ('CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}',
         'CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}}}'),
        ('    if "url" not in CAPABILITIES.get("elicitation", {}):\n        raise Refused(',
         '    if False:\n        raise Refused(')),
          "url-mode", "declared form elicitation only, yet answered"),
    Wrong("answers URL mode with content", (
        ('return {"action": "accept" if user_opens', 'return {"content": {}, "action": "accept" if user_opens'),),
          "url-mode", "an action and no content expected"),
    Wrong("answers every field yes", (('content[name] = prop["default"]', 'content[name] = "yes"'),),
          "typed-answers", "not an integer from 2 to 5"),
    Wrong("sends null for a missing ticket", (
        ('    if result is not None and "requestState" in result:\n'
         '        fields["requestState"] = result["requestState"]',
         '    if result is not None:\n        fields["requestState"] = result.get("requestState")'),),
          "no-ticket-no-state", "the retry carried null"),
    Wrong("keeps the last ticket for the next call", (
        ('    fields: dict[str, Any] = {}\n    if result is not None and "requestState" in result:\n'
         '        fields["requestState"] = result["requestState"]',
         '    fields: dict[str, Any] = dict(getattr(carry, "last", {}))\n'
         '    if result is not None and "requestState" in result:\n'
         '        fields["requestState"] = carry.last = {"requestState": result["requestState"]}\n'
         '        fields["requestState"] = result["requestState"]'),),
          "nothing-carried", "a fresh call to grade_plain carried requestState"),
)


def edited(wrong: Wrong) -> str:
    source = BUILD.solution
    for old, new in wrong.edits:
        assert source.count(old) == 1, f"{wrong.name}: the edit's old text is not in the solution exactly once"
        source = source.replace(old, new)
    return source


Report = dict[str, Any]  # a run's report, as the page posts it (JSON)


def in_page(source: str) -> Report:
    result = run_source(source)
    assert result["error"] == ""
    assert isinstance(result["report"], dict)
    return cast(Report, result["report"])


def over_the_network(source: str, tmp_path: Path) -> Report:
    """`mrtr check-client --command "python client.py" --user-choices --json FILE` on `source`: the JSON a
    learner pastes into the lesson's report form (its honest row included)."""
    path, out = tmp_path / "client.py", tmp_path / "report.json"
    path.write_text(source, encoding="utf-8")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"
    main(["--command", command, "--user-choices", "--json", str(out), "--timeout", "60"], stdout=io.StringIO())
    return cast(Report, json.loads(out.read_text(encoding="utf-8")))


def steps_done(report: Report) -> dict[str, bool]:
    return {g.step.id: g.done for g in grade_client(BUILD, json.dumps(report)).steps}


def test_the_lesson_is_a_client_build_whose_steps_name_rules() -> None:
    assert BUILD.kind == "client" and BUILD.file == "client.py"
    known = {r.slug for r in RULES}
    assert all(set(s.moves) <= known for s in BUILD.steps)
    assert [s.id for s in BUILD.steps] == ["retry", "answers", "carry", "rounds", "url", "refuse"]


def test_in_page_the_solution_passes_every_step_and_the_starter_none() -> None:
    assert all(steps_done(in_page(BUILD.solution)).values())
    starter = in_page(BUILD.starter)
    assert not any(steps_done(starter).values())
    # not merely by a broken flow: each step fails on one of its own rules
    verdicts = {r["rule"]: r["verdict"] for r in starter["rules"]}
    assert starter["honest"]["verdict"] == "pass"
    for step in BUILD.steps:
        assert any(verdicts[slug] != "pass" for slug in step.moves), step.id


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: w.name)
def test_each_wrong_answer_is_not_done_with_the_rules_reason(wrong: Wrong) -> None:
    report = in_page(edited(wrong))
    grading = grade_client(BUILD, json.dumps(report))
    graded = {g.step.id: g for g in grading.steps}
    step = graded[STEP_OF[wrong.rule]]
    assert not step.done
    assert f"{wrong.rule}: fail" in step.detail and wrong.reason in step.detail
    assert report["honest"]["verdict"] == "pass"  # the mistake is the rule's, not a flow that broke
    assert {g.step.id for g in grading.steps if not g.done} == {step.step.id, *wrong.also}


def test_a_client_that_refuses_everything_gets_no_refusal_step() -> None:
    """The honest-grading rule: refusing every result passes the refusal rules, but stops the honest flows."""
    source = BUILD.solution.replace('    if kind == "complete":\n        return result\n',
                                    '    raise Refused("nothing is good enough")\n', 1)
    report = in_page(source)
    verdicts = {r["rule"]: r["verdict"] for r in report["rules"]}
    assert verdicts["refuse-unknown-result"] == verdicts["refuse-empty-input-required"] == "pass"
    graded = {g.step.id: g for g in grade_client(BUILD, json.dumps(report)).steps}
    assert not graded["refuse"].done
    assert "the honest flow no longer completes" in graded["refuse"].detail
    assert "grade_ticket_echo stopped after 1 call(s)" in graded["refuse"].detail


def test_pacing_in_the_page_reads_the_runs_clock_not_the_wall() -> None:
    report = in_page(BUILD.solution)
    paced = next(r for r in report["rules"] if r["rule"] == "state-only-paced")
    assert paced["evidence"] == "state-only retries came 50 ms, 100 ms apart"  # exactly the client's own sleeps


def test_a_client_that_cannot_load_or_never_ends_is_told_so() -> None:
    assert "SyntaxError at line 1" in str(run_source("def (:\n")["error"])
    assert "no run(send, sleep)" in str(run_source("x = 1\n")["error"])
    spin = "def run(send, sleep):\n    while True:\n        send({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/list'})\n"
    report = in_page(spin)
    assert any("kept sending" in line for line in report["log"])


def test_a_report_without_its_honest_row_is_refused() -> None:
    report = in_page(BUILD.solution)
    del report["honest"]
    with pytest.raises(ReportError, match="honest flows"):
        grade_client(BUILD, json.dumps(report))


@pytest.mark.external  # the client runs as its own process, over HTTP
def test_over_the_network_the_solution_passes_every_step_and_the_starter_none(tmp_path: Path) -> None:
    solution = over_the_network(BUILD.solution, tmp_path)
    assert solution["ok"] is True and all(steps_done(solution).values())
    assert not any(steps_done(over_the_network(BUILD.starter, tmp_path)).values())


@pytest.mark.external  # the client runs as its own process, over HTTP
def test_the_page_grades_the_report_mrtr_check_client_wrote(client: FlaskClient, tmp_path: Path) -> None:
    report = over_the_network(BUILD.solution, tmp_path)
    assert report["honest"]["rule"] == HONEST_ROW and report["honest"]["verdict"] == "pass"
    response = client.post("/lessons/build-the-client/build/report", data={"report": json.dumps(report)})
    assert response.status_code == 200 and "6 of 6 steps done" in response.get_data(as_text=True)


@pytest.mark.external
@pytest.mark.parametrize("wrong", [w for w in WRONG if w.rule in ("ticket-echo", "new-id", "url-mode")][:3],
                         ids=lambda w: w.name)
def test_over_the_network_a_wrong_answer_fails_by_the_same_rule(wrong: Wrong, tmp_path: Path) -> None:
    report = over_the_network(edited(wrong), tmp_path)
    graded = {g.step.id: g for g in grade_client(BUILD, json.dumps(report)).steps}
    assert not graded[STEP_OF[wrong.rule]].done and wrong.reason in graded[STEP_OF[wrong.rule]].detail


def test_the_page_grades_a_run_and_keeps_the_done_steps(client: FlaskClient) -> None:
    response = client.post("/lessons/build-the-client/build/report",
                           data={"report": json.dumps(in_page(BUILD.solution))}, headers={"HX-Request": "true"})
    text = response.get_data(as_text=True)
    assert response.status_code == 200 and "6 of 6 steps done" in text
    assert text.count('data-step-done="true"') == 6 and 'data-lesson="build-the-client"' in text
    refused = client.post("/lessons/build-the-client/build/report", data={"report": "{}"})
    assert refused.status_code == 400 and "Could not read that report" in refused.get_data(as_text=True)


def test_the_lesson_page_shows_the_rules_and_the_network_route(client: FlaskClient) -> None:
    page = client.get("/lessons/build-the-client").get_data(as_text=True)
    assert 'data-entry="run_client"' in page
    for rule in RULES:
        assert f'data-move="{rule.slug}"' in page
    assert f'data-move="{HONEST_ROW}"' in page
    assert "mrtr check-client --command" in page and 'href="/check-client"' in page
    assert "spec-rules--spec-sdks-this-app" in page
