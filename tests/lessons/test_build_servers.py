"""The checker grades the build lesson's servers: the starter fails exactly the five attacks, each
step's partial solution turns exactly that step's move green, and the full solution passes all.

Partials are spliced from the one source of truth (starter/ and solution/server.py, via
web.build). Tickets live 2 s, so the late move waits about 3 s, for real, per run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from moves.check import CheckOptions, main, run_check
from moves.targets.stdio import StdioTarget
from web.build import load_build
from web.content import DEFAULT_ROOT

LESSON = DEFAULT_ROOT / "build-the-checks"
BUILD = load_build(LESSON)
ATTACKS = {"tampered", "stolen", "late", "other-request", "twice"}
MOVES = {"honest", "no-answer", *ATTACKS}
PROBES = {"capability", "version", "missing-answer", "same-error", "result-type"}
TTL = "2"


def check(source: str, tmp_path: Path) -> tuple[set[str], set[str], bool]:
    """Run the checker against `source`; return (moves that failed, probes that failed, ok)."""
    server = tmp_path / "server.py"
    server.write_text(source, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "MRTR_TICKET_TTL": TTL}
    with StdioTarget([sys.executable, str(server)], env=env, timeout=10) as target:
        report = run_check(target, CheckOptions())
    assert {r.move for r in report.moves} == MOVES
    assert {p.probe for p in report.probes} == PROBES
    return ({r.move for r in report.moves if not r.ok}, {p.probe for p in report.probes if not p.ok}, report.ok)


def test_the_starter_fails_exactly_the_five_attacks(tmp_path: Path) -> None:
    assert BUILD is not None
    failed, probes, ok = check(BUILD.starter, tmp_path)
    assert failed == ATTACKS
    assert probes == set()
    assert not ok


@pytest.mark.parametrize("step", [s for s in BUILD.steps if s.move], ids=lambda s: s.id)
def test_each_step_turns_exactly_its_move_green(step, tmp_path: Path) -> None:  # noqa: ANN001
    failed, probes, _ok = check(BUILD.partial({step.id}), tmp_path)
    assert failed == ATTACKS - {step.move}
    assert probes == set()


def test_the_answer_step_changes_no_verdict_but_asks_again_for_a_malformed_answer(tmp_path: Path) -> None:
    """The answer step has no move of its own (the starter already asks again when the answer is
    absent): its partial keeps the starter's verdicts, and it asks again for a malformed answer."""
    failed, probes, _ok = check(BUILD.partial({"answer"}), tmp_path)
    assert failed == ATTACKS and probes == set()
    assert _malformed_answer_outcome(BUILD.partial({"answer"}), tmp_path) == "input_required"
    assert _malformed_answer_outcome(BUILD.starter, tmp_path) == "complete"


def _malformed_answer_outcome(source: str, tmp_path: Path) -> str:
    server = tmp_path / "malformed.py"
    server.write_text(source, encoding="utf-8")
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    call = {"name": "deploy", "arguments": {"env": "staging"}, "_meta": meta}
    with StdioTarget([sys.executable, str(server)], env={"PATH": "/usr/bin:/bin"}, timeout=10) as target:
        first = target.send("owner", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        ticket = first.response["result"]["requestState"]
        retry = {**call, "requestState": ticket, "inputResponses": {"confirm": {"action": "accept",
                                                                                "content": {"confirm": "yes"}}}}
        reply = target.send("owner", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry})
    return reply.response["result"]["resultType"]


def test_the_full_solution_passes_everything_and_the_cli_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert BUILD.partial({s.id for s in BUILD.steps}) == BUILD.solution
    failed, probes, ok = check(BUILD.solution, tmp_path)
    assert (failed, probes, ok) == (set(), set(), True)
    monkeypatch.setenv("MRTR_TICKET_TTL", TTL)
    code = main(["--json", "--stdio", f"{sys.executable} {LESSON / 'solution' / 'server.py'}"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_starter_and_solution_differ_only_inside_the_step_blocks() -> None:
    assert BUILD is not None
    assert [s.id for s in BUILD.steps] == ["signature", "principal", "expiry", "request", "answer", "single-use"]
    for step in BUILD.steps:
        assert f"def {step.function}(" in step.stub and "TODO" in step.stub and "return True" in step.stub
        assert "TODO" not in step.solution
