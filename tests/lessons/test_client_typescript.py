"""The client lesson's TypeScript track, on the official TypeScript SDK's low-level client in its manual
input_required mode: it type-checks, and `mrtr check-client` grades it (solution: every rule holds, and the
client says so, with a non-zero status, when it stopped or refused a call; starter: each step's rules fail;
each step's stub put back alone into the solution breaks a rule of that step, so no step is graded by another's
code); it declares only what it can answer and passes the user's choice through.

Each source is type-stripped with the TypeScript compiler pinned in tests/js (as the build lesson's TypeScript
tests do), its bare import pointed at tests/js's package, and run with node against the grading server.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from mrtr_cli.check_client import check, run_command
from mrtr_grading import RULES, ClientReport, Recording
from tests.peers import launch
from web.build.routes import blocks, same_outside_blocks, splice
from web.site.content import DEFAULT_ROOT

TRACK = DEFAULT_ROOT / "build-the-client" / "typescript"
STARTER = (TRACK / "starter" / "client.ts").read_text(encoding="utf-8")
SOLUTION = (TRACK / "solution" / "client.ts").read_text(encoding="utf-8")

#: The rules that show each step (issue 46's rule families), the ones a step's stub must break.
STEP_RULES = {
    "retry": {"ticket-echo", "new-id", "same-request"},
    "answers": {"multi-round", "typed-answers"},
    "carry": {"multi-round", "no-ticket-no-state", "nothing-carried"},
    "rounds": {"bounded-rounds", "state-only-no-answers", "state-only-paced"},
    "url": {"url-mode"},
    "refuse": {"refuse-unknown-result", "refuse-empty-input-required", "url-mode"},
}
#: The environment under which a step's stub shows: the refuse step's stub shows on a client that declared form
#: only (the SDK itself refuses an unknown resultType and an empty input_required, so only an undeclared mode is
#: left for the learner's code to refuse among today's rules).
STEP_ENV = {"refuse": {"MRTR_DECLARE": "form"}}

TRANSPILE = """
import { readFileSync, writeFileSync } from 'node:fs';
import ts from 'typescript';
const [src, out] = process.argv.slice(1);
let js = ts.transpileModule(readFileSync(src, 'utf8'), {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
js = js.replaceAll("'@modelcontextprotocol/client'", `'${import.meta.resolve('@modelcontextprotocol/client')}'`);
writeFileSync(out, js);
"""


def compiled(source: str, tmp_path: Path) -> Path:
    ts_file, js_file = tmp_path / "client.ts", tmp_path / "client.mjs"
    ts_file.write_text(source, encoding="utf-8")
    done = subprocess.run([launch.node(), "--input-type=module", "-e", TRANSPILE, str(ts_file), str(js_file)],
                          cwd=launch.JS, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return js_file


def graded(source: str, tmp_path: Path, env: dict[str, str] | None = None,
           recording: Recording | None = None) -> ClientReport:
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    command = f"{'env ' + prefix + ' ' if prefix else ''}{shlex.quote(launch.node())} " \
              f"{shlex.quote(str(compiled(source, tmp_path)))}"
    return check(run_command(command, 90), command, recording, choices_known=True)


def verdicts(report: ClientReport) -> dict[str, str]:
    return report.verdicts()


def test_the_starter_and_solution_differ_only_in_the_steps() -> None:
    assert list(blocks(SOLUTION)) == list(STEP_RULES)
    assert same_outside_blocks(STARTER, SOLUTION)
    assert all("TODO" in code for code in blocks(STARTER).values())
    assert all("TODO" not in code for code in blocks(SOLUTION).values())
    assert set().union(*STEP_RULES.values()) <= {r.slug for r in RULES}


@pytest.mark.slow
def test_starter_and_solution_type_check_against_the_sdk_types() -> None:
    tsc = launch.JS / "node_modules" / "typescript" / "bin" / "tsc"
    done = subprocess.run([launch.node(), str(tsc), "-p", str(launch.JS / "tsconfig.client-lesson.json")],
                          capture_output=True, text=True, timeout=600, cwd=launch.JS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_solution_passes_every_rule_and_says_where_it_stopped_or_refused(tmp_path: Path) -> None:
    report = graded(SOLUTION, tmp_path)
    assert set(verdicts(report).values()) == {"pass"}, report.table()
    lines = dict(line.split(": ", 1) for line in report.output.splitlines() if ": " in line)
    assert lines["grade_endless"].startswith("stopped: the server still asked after 10 rounds")
    assert lines["grade_unknown_result"].startswith("refused: ")
    assert lines["grade_empty_input_required"].startswith("refused: ")
    assert lines["grade_ticket_echo"] == "complete: echoed"
    assert report.exit_code == 1  # a call was stopped and two refused: the client's own verdict says so


def test_the_starter_breaks_a_rule_of_every_step(tmp_path: Path) -> None:
    report = graded(STARTER, tmp_path)
    failing = {rule for rule, verdict in verdicts(report).items() if verdict == "fail"}
    assert report.graded, report.table()
    for step, rules in STEP_RULES.items():
        if step != "refuse":  # the SDK refuses the two results itself; the undeclared mode shows below
            assert failing & rules, f"the starter passes every rule of step {step}"
    assert "ticket-echo" in failing and "bounded-rounds" in failing and "url-mode" in failing


@pytest.mark.parametrize("step", list(STEP_RULES))
def test_each_steps_stub_alone_breaks_a_rule_of_that_step(step: str, tmp_path: Path) -> None:
    """The solution with one step put back to its stub: that step's rules show it, whatever the others do."""
    report = graded(splice(SOLUTION, STARTER, {step}), tmp_path, STEP_ENV.get(step))
    failing = {rule for rule, verdict in verdicts(report).items() if verdict == "fail"}
    assert failing & STEP_RULES[step], report.table()


def test_a_client_that_declared_form_only_leaves_the_page_unanswered(tmp_path: Path) -> None:
    recording = Recording()
    report = graded(SOLUTION, tmp_path, {"MRTR_DECLARE": "form"}, recording)
    assert set(verdicts(report).values()) == {"pass"}, report.table()
    calls = recording.of("grade_url_mode")
    assert len(calls) == 1 and calls[0].capabilities == {"elicitation": {"form": {}}}
    assert "grade_url_mode: refused: 'page' asks in url mode, which this client did not declare" in report.output


@pytest.mark.parametrize("choice", ["decline", "cancel"])
def test_the_users_choice_goes_back_as_it_was_made(choice: str, tmp_path: Path) -> None:
    recording = Recording()
    report = graded(SOLUTION, tmp_path, {"MRTR_USER_SAYS": choice}, recording)
    for tool, key in (("grade_url_mode", "page"), ("grade_typed_answers", "settings")):
        retry = recording.of(tool)[1].params
        assert retry["inputResponses"] == {key: {"action": choice}}  # no content, whatever the mode
    assert verdicts(report)["url-mode"] == "pass"
    assert verdicts(report)["typed-answers"] == "not-run"  # nothing was accepted, so no value to grade


def test_the_learners_package_pins_the_versions_the_tests_use() -> None:
    learner = json.loads((TRACK / "package.json").read_text())
    tested = json.loads((launch.JS / "package.json").read_text())["dependencies"]
    pinned = {**learner["dependencies"], **learner["devDependencies"]}
    assert pinned == {name: tested[name] for name in pinned}
