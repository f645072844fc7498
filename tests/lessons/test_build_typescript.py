"""The build lesson's TypeScript track, on the official TypeScript SDK: it type-checks, and the checker
grades it as it grades the Python track (starter: exactly the five attacks fail; each step's partial:
exactly its move turns green; solution: everything holds).

Each source is type-stripped with the TypeScript compiler pinned in tests/js (as tests/js/sdk_server.mjs
does for the first lesson's snippet), its bare imports pointed at tests/js's packages, and run with node.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from moves.check import CheckOptions, run_check
from moves.targets.stdio import StdioTarget
from tests.peers import launch
from web.build import blocks, same_outside_blocks, splice
from web.content import DEFAULT_ROOT

TRACK = DEFAULT_ROOT / "build-the-checks" / "typescript"
STARTER = (TRACK / "starter" / "server.ts").read_text(encoding="utf-8")
SOLUTION = (TRACK / "solution" / "server.ts").read_text(encoding="utf-8")
MOVES = {"signature": "tampered", "principal": "stolen", "expiry": "late", "request": "other-request",
         "single-use": "twice"}
ATTACKS = set(MOVES.values())

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


def run(source: str, tmp_path: Path) -> tuple[set[str], set[str], bool]:
    ts_file, js_file = tmp_path / "server.ts", tmp_path / "server.mjs"
    ts_file.write_text(source, encoding="utf-8")
    done = subprocess.run([launch.node(), "--input-type=module", "-e", TRANSPILE, str(ts_file), str(js_file)],
                          cwd=launch.JS, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    env = {"PATH": "/usr/bin:/bin", "MRTR_TICKET_TTL": "2"}
    with StdioTarget([launch.node(), str(js_file)], env=env, timeout=20) as target:
        report = run_check(target, CheckOptions())
    return ({r.move for r in report.moves if not r.ok}, {p.probe for p in report.probes if not p.ok}, report.ok)


def test_the_typescript_track_marks_the_same_steps_as_the_python_one() -> None:
    python = (DEFAULT_ROOT / "build-the-checks" / "solution" / "server.py").read_text(encoding="utf-8")
    assert list(blocks(SOLUTION)) == list(blocks(python))
    assert same_outside_blocks(STARTER, SOLUTION)
    assert all("TODO" in code and "return true;" in code for code in blocks(STARTER).values())


@pytest.mark.slow
def test_starter_and_solution_type_check_against_the_sdk_types() -> None:
    tsc = launch.JS / "node_modules" / "typescript" / "bin" / "tsc"
    done = subprocess.run([launch.node(), str(tsc), "-p", str(launch.JS / "tsconfig.build-lesson.json")],
                          capture_output=True, text=True, timeout=600, cwd=launch.JS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_typescript_starter_fails_exactly_the_five_attacks(tmp_path: Path) -> None:
    assert run(STARTER, tmp_path) == (ATTACKS, set(), False)


@pytest.mark.parametrize("step", sorted(MOVES))
def test_each_typescript_step_turns_exactly_its_move_green(step: str, tmp_path: Path) -> None:
    failed, probes, _ok = run(splice(STARTER, SOLUTION, {step}), tmp_path)
    assert (failed, probes) == (ATTACKS - {MOVES[step]}, set())


def test_the_typescript_answer_step_keeps_every_verdict(tmp_path: Path) -> None:
    assert run(splice(STARTER, SOLUTION, {"answer"}), tmp_path)[:2] == (ATTACKS, set())


def test_the_typescript_solution_passes_everything(tmp_path: Path) -> None:
    assert splice(STARTER, SOLUTION, set(blocks(SOLUTION))) == SOLUTION
    assert run(SOLUTION, tmp_path) == (set(), set(), True)




def test_the_learners_package_pins_the_versions_the_tests_use() -> None:
    import json

    learner = json.loads((TRACK / "package.json").read_text())
    tested = json.loads((launch.JS / "package.json").read_text())["dependencies"]
    pinned = {**learner["dependencies"], **learner["devDependencies"]}
    assert pinned == {name: tested[name] for name in pinned}
