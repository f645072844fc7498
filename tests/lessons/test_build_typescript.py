"""The build lesson's TypeScript track, on the official TypeScript SDK: it type-checks, and the checker
grades it as it grades the Python track (starter: no step done, every move a step names fails; each
step's partial: exactly its moves turn green; solution: everything holds), and it behaves as the lesson
says (every refused ticket the frozen JSON-RPC error, a malformed answer the course's error of its own, both
through its own tools/call although McpServer makes a tool's throws isError results; the SDK's discovery and
caching fields).

Each source is type-stripped with the TypeScript compiler pinned in tests/js (as tests/js/sdk_server.mjs
does for the first lesson's snippet), its bare imports pointed at tests/js's packages, and run with node.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from moves.check import CheckOptions, Report, run_check
from moves.targets.stdio import StdioTarget
from mrtr.errors import FROZEN_TICKET_MESSAGE
from tests.lessons.buildkit import BUILD, CATALOGUE, META, OWNED, SHOWABLE, TTL, converse, passing
from tests.peers import launch
from web.build.routes import blocks, grade, same_outside_blocks, splice
from web.site.content import DEFAULT_ROOT

TRACK = DEFAULT_ROOT / "build-the-checks" / "typescript"
STARTER = (TRACK / "starter" / "server.ts").read_text(encoding="utf-8")
SOLUTION = (TRACK / "solution" / "server.ts").read_text(encoding="utf-8")

TRANSPILE = """
import { readFileSync, writeFileSync } from 'node:fs';
import ts from 'typescript';
const [src, out] = process.argv.slice(1);
let js = ts.transpileModule(readFileSync(src, 'utf8'), {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
for (const name of ['@modelcontextprotocol/server/stdio', '@modelcontextprotocol/server', 'zod']) {
  js = js.replaceAll(`'${name}'`, `'${import.meta.resolve(name)}'`);
}
writeFileSync(out, js);
"""


def compiled(source: str, tmp_path: Path) -> Path:
    ts_file, js_file = tmp_path / "server.ts", tmp_path / "server.mjs"
    ts_file.write_text(source, encoding="utf-8")
    done = subprocess.run([launch.node(), "--input-type=module", "-e", TRANSPILE, str(ts_file), str(js_file)],
                          cwd=launch.JS, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return js_file


def run(source: str, tmp_path: Path) -> Report:
    env = {"PATH": "/usr/bin:/bin", "MRTR_TICKET_TTL": TTL}
    with StdioTarget([launch.node(), str(compiled(source, tmp_path))], env=env, timeout=20) as target:
        return run_check(target, CheckOptions())


def done_steps(report: Report) -> set[str]:
    return {g.step.id for g in grade(BUILD, json.dumps(report.to_json()), CATALOGUE).steps if g.done}


def test_the_typescript_track_marks_the_same_steps_as_the_python_one() -> None:
    python = (DEFAULT_ROOT / "build-the-checks" / "solution" / "server.py").read_text(encoding="utf-8")
    assert list(blocks(SOLUTION)) == list(blocks(python))
    assert same_outside_blocks(STARTER, SOLUTION)
    assert all("TODO" in code for code in blocks(STARTER).values())
    assert all("TODO" not in code for code in blocks(SOLUTION).values())


@pytest.mark.slow
def test_starter_and_solution_type_check_against_the_sdk_types() -> None:
    tsc = launch.JS / "node_modules" / "typescript" / "bin" / "tsc"
    done = subprocess.run([launch.node(), str(tsc), "-p", str(launch.JS / "tsconfig.build-lesson.json")],
                          capture_output=True, text=True, timeout=600, cwd=launch.JS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_typescript_starter_marks_no_step(tmp_path: Path) -> None:
    report = run(STARTER, tmp_path)
    assert done_steps(report) == set()
    assert passing(report) & OWNED == set()
    assert "honest" in passing(report)


@pytest.mark.parametrize("step", BUILD.steps, ids=lambda s: s.id)
def test_each_typescript_step_turns_exactly_its_moves_green(step, tmp_path: Path) -> None:  # noqa: ANN001
    report = run(splice(STARTER, SOLUTION, {step.id}), tmp_path)
    assert passing(report) & OWNED == set(step.moves)
    assert done_steps(report) == {step.id}


def test_the_typescript_solution_passes_everything(tmp_path: Path) -> None:
    assert splice(STARTER, SOLUTION, set(blocks(SOLUTION))) == SOLUTION
    report = run(SOLUTION, tmp_path)
    assert passing(report) == SHOWABLE
    assert all(p.ok for p in report.probes) and report.ok


def _exchange(source: str, tmp_path: Path, messages: list[dict]) -> list[dict]:
    return converse([launch.node(), str(compiled(source, tmp_path))], messages)


def test_the_typescript_solution_answers_a_malformed_answer_with_the_courses_error_and_spends_nothing(
        tmp_path: Path) -> None:
    """The one wire rule of the course: the malformed answer gets -32602 "Invalid inputResponses: 'confirm': ..."
    with data {reason, key}, although McpServer makes other throws isError results; the ticket still works."""
    call = {"_meta": META, "name": "deploy", "arguments": {"env": "staging"}}
    first = _exchange(SOLUTION, tmp_path, [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}])[0]
    ticket = first["result"]["requestState"]  # every process signs with the same default key
    malformed = [{"action": "accept", "content": {"confirm": "yes"}}, {"action": "accept", "content": {}}]
    messages = [{"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
                 "params": {**call, "requestState": ticket, "inputResponses": {"confirm": answer}}}
                for i, answer in enumerate([*malformed, {"action": "accept", "content": {"confirm": True}}])]
    answers = _exchange(SOLUTION, tmp_path, messages)
    for answer in answers[:-1]:
        assert answer["error"]["code"] == -32602
        assert answer["error"]["message"].startswith("Invalid inputResponses: 'confirm': ")
        assert answer["error"]["data"] == {"reason": "invalid_input_response", "key": "confirm"}
    assert answers[-1]["result"]["content"][0]["text"] == "deployed to staging"


def test_the_typescript_solution_refuses_every_bad_ticket_with_the_frozen_json_rpc_error(tmp_path: Path) -> None:
    """The official suite's tampered-state scenario accepts only a JSON-RPC error, and the checker is as strict:
    a tampered, a junk and a spent ticket all get the Python lab's frozen error, the reason on stderr only."""
    call = {"_meta": META, "name": "deploy", "arguments": {"env": "staging"}}
    first = _exchange(SOLUTION, tmp_path, [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}])[0]
    ticket = first["result"]["requestState"]
    prefix, payload, mac = ticket.split(".")
    tampered = f"{prefix}.{payload[:-1]}{'A' if payload[-1] != 'A' else 'B'}.{mac}"
    yes = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    states = [tampered, "junk", ticket, ticket]  # the honest yes spends it; the copy after it is refused
    messages = [{"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
                 "params": {**call, "requestState": state, "inputResponses": yes}} for i, state in enumerate(states)]
    bad, junk, honest, spent = _exchange(SOLUTION, tmp_path, messages)
    assert honest["result"]["content"][0]["text"] == "deployed to staging"
    for refusal in (bad, junk, spent):
        assert "result" not in refusal
        assert refusal["error"] == {"code": -32602, "message": FROZEN_TICKET_MESSAGE,
                                    "data": {"reason": "invalid_request_state"}}


def test_the_sdk_gives_discovery_and_listings_their_cache_fields_and_needs_meta(tmp_path: Path) -> None:
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
                {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": META}},
                {"jsonrpc": "2.0", "id": 3, "method": "server/discover"}]
    listed, discovered, bare = _exchange(SOLUTION, tmp_path, messages)
    for result in (listed["result"], discovered["result"]):
        assert result["resultType"] == "complete"
        assert isinstance(result["ttlMs"], int) and result["cacheScope"] in ("public", "private")
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "build-the-checks-ts"
    assert bare["error"]["code"] == -32602


def test_the_learners_package_pins_the_versions_the_tests_use() -> None:
    learner = json.loads((TRACK / "package.json").read_text())
    tested = json.loads((launch.JS / "package.json").read_text())["dependencies"]
    pinned = {**learner["dependencies"], **learner["devDependencies"]}
    assert pinned == {name: tested[name] for name in pinned}
