"""Several tools that ask (issue 31, item 2): a move spends one tool's ticket on another asking tool with the same
arguments. The sound servers (two asking tools) refuse it and the arguments-only binding is caught by it alone
(test_mutants.py); here: with one asking tool it is not run, saying why; the second tool is found only among tools
whose schema takes the arguments; and its own questions are answered beside the first tool's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moves.answers import cross_tool_call
from moves.asking import takes, with_cross_tool
from moves.catalog import load_moves
from moves.engine import Call
from moves.target import Reply
from tests.mutants.harness import check_http, check_stdio

CROSS = {m.slug for m in load_moves() if m.request == "other-tool"}


def test_the_catalogue_has_a_move_that_spends_a_ticket_on_another_tool() -> None:
    assert CROSS


@pytest.mark.parametrize("transport", ["http", pytest.param("stdio", marks=pytest.mark.external)])
def test_with_one_asking_tool_the_move_is_not_run_and_says_why(transport: str, tmp_path: Path) -> None:
    report = check_http("one-tool") if transport == "http" else check_stdio("one-tool", tmp_path)
    rows = {r.move: r for r in report.moves}
    assert report.ok and {slug for slug, r in rows.items() if r.verdict != "pass"} == CROSS, report.table()
    for slug in CROSS:
        assert rows[slug].verdict == "not-run", rows[slug]
        assert rows[slug].detail.startswith("not shown: deploy is the only listed tool that asks for input"), \
            rows[slug].detail


def test_the_sound_server_spends_it_on_restart_and_gets_the_frozen_error() -> None:
    report = check_http("sound")
    for row in report.moves:
        if row.move in CROSS:
            assert row.verdict == "pass" and "Invalid or expired requestState" in row.detail, row
    same = next(p for p in report.probes if p.probe == "same-error")
    assert same.ok, same.detail


def test_the_second_tool_must_take_the_arguments() -> None:
    schema = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}
    assert takes(schema, {"env": "staging"})
    assert not takes(schema, {"env": 3})  # wrong type
    assert not takes(schema, {"env": "staging", "force": True})  # an argument it does not list
    assert not takes({"type": "object", "properties": {"version": {"type": "string"}}, "required": ["version"]},
                     {"env": "staging"})
    assert not takes({"properties": {"count": {"type": "integer"}}}, {"count": True})  # a boolean is no integer


def test_the_other_tools_questions_are_answered_beside_the_first_ones() -> None:
    region = {"method": "elicitation/create", "params": {"mode": "form", "requestedSchema": {"type": "object"}}}
    call = Call(cross_tool="provision", cross_questions={"region": region})
    moved, questions = cross_tool_call(call, {"confirm": {"method": "elicitation/create"}})
    assert moved.tool == "provision" and moved.arguments == call.arguments
    assert set(questions) == {"region", "confirm"}
    with pytest.raises(ValueError, match="only listed tool that asks"):
        cross_tool_call(Call(cross_tool=None), {})


class Listing:
    """A target whose tools/call answers input_required for the tools in `asking`, and records what was called."""

    def __init__(self, asking: set[str]) -> None:
        self.asking = asking
        self.called: list[str] = []

    def send(self, role: str, message: dict[str, Any]) -> Reply:
        name = message["params"]["name"]
        self.called.append(name)
        result = {"resultType": "input_required", "requestState": "t", "inputRequests": {"region": {}}} \
            if name in self.asking else {"resultType": "complete", "content": []}
        return Reply({"jsonrpc": "2.0", "id": message["id"], "result": result})


def schema(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}


def test_only_tools_whose_schema_takes_the_arguments_are_called_and_the_first_that_asks_is_kept() -> None:
    tools = [{"name": "deploy", "inputSchema": schema("env")}, {"name": "release", "inputSchema": schema("version")},
             {"name": "status", "inputSchema": schema("env")}, {"name": "provision", "inputSchema": schema("env")},
             {"name": "restart", "inputSchema": schema("env")}]
    target = Listing({"provision", "restart"})
    call = with_cross_tool(target, tools, Call(tool="deploy", arguments={"env": "staging"}), iter(range(100)).__next__)
    assert target.called == ["status", "provision"]  # never release (it takes a version), never deploy itself
    assert call.cross_tool == "provision" and call.cross_questions == {"region": {}}
    none = with_cross_tool(Listing(set()), tools[:3], Call(), iter(range(100)).__next__)
    assert none.cross_tool is None and none.cross_questions == {}
