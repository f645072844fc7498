"""`python -m mrtr check` end to end: the app's own /mcp over HTTP and `python -m mrtr serve` over stdio
pass every move and probe (exit 0, the JSON exactly as issue 10 specifies); the mutation suite's flawed servers
(tests/mutants/server.py) are caught exactly where they are flawed; bad input always ends in one clear line and
exit 2, never a traceback.

The late move waits on a clock the test moves (the app's MRTR_CLOCK, a mutant server's clock); only
`python -m mrtr serve` over stdio, which reads the system clock, really waits out its 2-second tickets.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from moves.catalog import EXPECTS, load_moves
from moves.check import VERDICTS, MoveRow, ProgressBar, arguments_for, main, other_arguments_for
from moves.invariants import INVARIANTS
from moves.probes import ProbeResult
from moves.schedule import WIDTH
from moves.target import Outcome
from moves.terminal import Terminal
from mrtr import FakeClock
from mrtr.tickets import SIGNED_PREFIX
from tests.check.catalogue import HONEST, caught_by, gated_by
from tests.check.conftest import TOKENS, on_clock
from tests.mutants.harness import SERVER, running

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MOVES = load_moves()
SLUGS = [m.slug for m in MOVES]
LATE = {m.slug for m in MOVES if m.timing != "in-time"}  # the moves that wait (skipped by --skip-late)
PAST = {m.slug for m in MOVES if m.timing == "past-expiry"}  # those that wait past the expiry
#: What a move's `observed` can be: anything read off the wire, never an expectation-only word like not-done.
OBSERVED = {str(o) for o in Outcome} - {str(Outcome.NOT_DONE)}
PROBE_SLUGS = ["capability", "version", "missing-answer", "same-error", "result-type"]
STDIO_ENV = {"MRTR_TICKET_TTL": "2", "MRTR_STORE": "memory",
             "MRTR_SECRET_KEYS": "stdio-check-key-0123456789abcdef0123456789abcdef"}


def check(*argv: str, timeout: float | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err, timeout=timeout)
    return code, out.getvalue(), err.getvalue()


def check_json(*argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = check(*argv, "--json")
    assert "Traceback" not in err
    return code, json.loads(out)


def assert_exact_schema(report: dict[str, Any]) -> None:
    """The JSON contract of docs/checker/reports.md ("The JSON report"): these keys, in this order, these values."""
    stopped = ["stopped"] if "stopped" in report else []
    explored = ["exploration"] if "exploration" in report else []
    assert list(report) == ["checker", "generated", "target", "tool", "arguments", "other_arguments", "other_tool",
                            "rounds", "warnings", "ok", "moves", "probes", *explored, *stopped]
    found = [f for f in report["exploration"]["findings"] if not f["excused"]] if explored else []
    if explored:
        assert list(report["exploration"]) == ["calls", "variations", "rounds", "not_played", "not_judged", "why_not",
                                               "findings"]
        assert all(list(f) == ["invariant", "round", "part", "variation", "detail", "fix", "excused"] for f in found)
        assert all(f["invariant"] in INVARIANTS and f["round"] >= 1 and f["fix"] for f in found)
    assert isinstance(report["target"], str) and isinstance(report["ok"], bool)
    assert report["checker"]["name"] == "mrtr check" and re.fullmatch(r"\d+\.\d+\.\d+.*", report["checker"]["version"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report["generated"])
    assert isinstance(report["tool"], str) and isinstance(report["arguments"], dict)
    assert report["other_arguments"] is None or isinstance(report["other_arguments"], dict)
    assert report["other_tool"] is None or isinstance(report["other_tool"], str)
    assert all(list(r) == ["round", "keys"] for r in report["rounds"])
    assert all(isinstance(w, str) for w in report["warnings"])
    assert [m["move"] for m in report["moves"]] == SLUGS[:len(report["moves"])]
    for move in report["moves"]:
        assert list(move) == ["move", "verdict", "required", "expected", "observed", "ok", "detail"]
        assert move["verdict"] in VERDICTS and isinstance(move["required"], bool)
        assert move["expected"] in {str(e) for e in EXPECTS}
        assert move["observed"] in OBSERVED
        assert isinstance(move["ok"], bool) and isinstance(move["detail"], str)
        assert move["ok"] == (move["verdict"] == "pass")
        assert (move["verdict"] == "not-run") <= (move["observed"] == "not-run")
    # ok follows from the rows: no fail verdict, every probe held, not stopped.
    assert report["ok"] == (not stopped and all(m["verdict"] != "fail" for m in report["moves"])
                            and all(p["ok"] for p in report["probes"]) and not found)
    if not stopped:
        assert [m["move"] for m in report["moves"]] == SLUGS
        assert [p["probe"] for p in report["probes"]] == PROBE_SLUGS
    for probe in report["probes"]:
        assert list(probe) == ["probe", "ok", "detail"]
        assert isinstance(probe["ok"], bool) and isinstance(probe["detail"], str)


def failing(report: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The moves with a fail verdict, and the probes that did not hold."""
    return ({m["move"] for m in report["moves"] if m["verdict"] == "fail"},
            {p["probe"] for p in report["probes"] if not p["ok"]})


def verdicts(report: dict[str, Any], verdict: str) -> set[str]:
    return {m["move"] for m in report["moves"] if m["verdict"] == verdict}


# -- sound servers -------------------------------------------------------------------------------------


def test_the_apps_own_mcp_passes_every_move_and_probe(mcp_url: str, app_clock: FakeClock, tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    with on_clock(app_clock):
        code, report = check_json(mcp_url, *TOKENS, "--junit", str(junit))
    assert code == 0, report
    assert_exact_schema(report)
    assert report["target"] == mcp_url and report["ok"] is True
    assert failing(report) == (set(), set()) and verdicts(report, "pass") == set(SLUGS)
    # Every move got the plain answer a sound server gives, none that holds only with a note.
    assert all(m.holds(Outcome(row["observed"])) == (True, "") for m, row in zip(MOVES, report["moves"], strict=True))
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == str(len(SLUGS) + len(PROBE_SLUGS) + len(INVARIANTS))
    assert suite.get("failures") == "0" and suite.get("errors") == "0" and suite.get("skipped") == "0"
    assert "bob-token" not in junit.read_text() and "alice-token" not in json.dumps(report)


@pytest.mark.external  # `python -m mrtr serve` as a process
def test_mrtr_serve_over_stdio_passes_every_move_and_probe() -> None:
    run = subprocess.run([sys.executable, "-m", "mrtr", "check", "--stdio", f"{sys.executable} -m mrtr serve",
                          "--json"], cwd=ROOT, env={**os.environ, **STDIO_ENV}, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert_exact_schema(report)
    assert report["ok"] and failing(report) == (set(), set())
    assert "late move: waiting" in run.stderr and "Traceback" not in run.stderr


def test_the_table_and_summary_line(mcp_url: str) -> None:
    code, out, err = check(mcp_url, *TOKENS, "--skip-late")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"Target: {mcp_url}"
    assert lines[1] == ('Tool:   deploy {"env": "staging"} (other request: {"env": "prod"}; '
                        'other tool that asks: provision)')
    assert "MOVE" in lines[3] and "EXPECTED" in lines[3] and "SERVER DID" in lines[3] and "VERDICT" in lines[3]
    rows = {line.split()[0]: line.split() for line in lines[4:4 + len(SLUGS)]}
    assert list(rows) == SLUGS
    for move in MOVES:
        if move.slug in LATE:
            assert rows[move.slug][1:] == [str(move.expect), "not-run", "NOT-RUN"]
            assert f"{move.slug} (not-run): skipped (--skip-late)" in out
        else:
            assert rows[move.slug][1] == str(move.expect) and rows[move.slug][3] == "PASS"
    held = len(SLUGS) - len(LATE)
    assert lines[-1] == (f"PASS: {held} of {len(SLUGS)} moves and {len(PROBE_SLUGS)} of {len(PROBE_SLUGS)} probes "
                         f"held ({len(LATE)} not run)")
    assert "late move: waiting" not in err


# -- flawed servers: the mutation suite's, each with one flaw ---------------------------------------------


@pytest.mark.parametrize(("mutant", "moves", "probes"), [
    ("no-principal", caught_by("principal"), set()),
    ("no-single-use", caught_by("single-use") - LATE, set()),
    ("reveals-check", set(), {"same-error"}),
    ("asks-without-capability", set(), {"capability"}),
    ("any-version", set(), {"version"}),
    ("no-result-type", set(), {"result-type"}),
    ("missing-answer-is-an-error", caught_by("answer"), {"missing-answer"}),
])
def test_a_flawed_server_is_caught_exactly_where_it_is_flawed(mutant: str, moves: set[str], probes: set[str]) -> None:
    with running(mutant) as (url, _server):
        code, report = check_json(url, *TOKENS, "--skip-late")
    assert_exact_schema(report)
    assert failing(report) == (moves, probes)
    # A move that needs a failed one to go first is not shown, never failed; --skip-late skips the late ones.
    assert verdicts(report, "not-run") == LATE | (gated_by(moves) - LATE)
    assert code == 1 and report["ok"] is False


def test_a_revealing_server_is_told_which_failures_its_error_gives_away() -> None:
    with running("reveals-check") as (url, _server):
        _, report = check_json(url, *TOKENS, "--skip-late")
    detail = next(p["detail"] for p in report["probes"] if p["probe"] == "same-error")
    assert detail.startswith("the error gives away which check failed for ")
    for check in ("signature", "principal", "request", "single-use"):
        assert f"the {check} check failed" in detail


def test_the_late_move_waits_past_a_readable_expiry() -> None:
    with running("sound") as (url, server), on_clock(server.clock):
        code, report = check_json(url, *TOKENS)
    assert code == 0 and failing(report) == (set(), set())
    assert all("past the ticket's exp" in m["detail"] for m in report["moves"] if m["move"] in PAST)


def test_the_late_move_reads_exp_from_a_ticket_shape_that_is_not_the_labs() -> None:
    with running("sound") as (url, server), on_clock(server.clock):
        assert server.mint("bob", {"env": "staging"}).split(".")[0] != SIGNED_PREFIX
        code, out, err = check(url, *TOKENS)
    assert code == 0, out + err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[4:4 + len(SLUGS)]}
    assert "late move: waiting" in err and all(rows[slug] == ["refused", "refused", "PASS"] for slug in LATE)


def test_allow_replay_turns_a_missing_redeemed_store_into_a_warning() -> None:
    with running("no-single-use") as (url, _server):
        code, out, _ = check(url, *TOKENS, "--skip-late", "--allow-replay")
        strict, _, _ = check(url, *TOKENS, "--skip-late")
    assert code == 0 and strict == 1
    replayed = caught_by("single-use") - LATE  # a replay that waits is skipped by --skip-late
    lines = {line.split(" (")[0].strip(): line for line in out.splitlines() if " (warn): " in line}
    for slug in replayed:
        assert f"{slug} (warn): allowed by --allow-replay: " in lines[slug] and "deployed to staging" in lines[slug]
    assert out.splitlines()[-1].endswith(f"({len(replayed)} warnings, {len(LATE)} not run)")


@pytest.mark.external  # the mutant server as a stdio process
def test_a_flawed_server_over_stdio_is_caught_too() -> None:
    code, report = check_json("--stdio", f"{sys.executable} {SERVER} no-principal", "--skip-late")
    assert code == 1 and failing(report) == (caught_by("principal"), set())
    assert verdicts(report, "not-run") == LATE


def test_junit_marks_failures_and_skips(tmp_path: Path) -> None:
    junit = tmp_path / "flawed.xml"
    with running("no-principal") as (url, _server):
        check(url, *TOKENS, "--skip-late", "--junit", str(junit))
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert all(cases[slug].find("failure") is not None for slug in caught_by("principal"))
    assert all(cases[slug].find("skipped") is not None for slug in LATE)
    # Each move that fails, and the one invariant the exploration found broken (a ticket bound to its principal).
    assert cases["bound"].find("failure") is not None and "round 1" in (cases["bound"].find("failure").text or "")
    assert cases[HONEST.slug].find("failure") is None and suite.get("failures") == str(len(caught_by("principal")) + 1)
    assert suite.get("skipped") == str(len(LATE)) and suite.get("errors") == "0"
    assert all(c.get("time") is not None for c in cases.values())


# -- bad input -----------------------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("argv", "words"), [
    ([], "give either TARGET"),
    (["http://127.0.0.1:9/mcp", "--stdio", "x"], "not both or neither"),
    (["http://127.0.0.1:9/mcp"], "--token NAME=TOKEN, given twice"),
    (["http://127.0.0.1:9/mcp", "--token", "bob"], "--token looks like NAME=TOKEN"),
    (["ftp://127.0.0.1/mcp", *TOKENS], "http:// or https://"),
    (["http://127.0.0.1:9/mcp", *TOKENS, "--args", "{oops"], "--args is not valid JSON"),
    (["http://127.0.0.1:9/mcp", *TOKENS, "--other-args", "[1]"], "--other-args must be a JSON object"),
    (["http://127.0.0.1:9/mcp", *TOKENS, "--late-after", "-3"], "--late-after must be"),
    (["http://127.0.0.1:9/mcp", *TOKENS, "--budget", "-1"], "--budget must be a whole number of calls"),
    (["http://127.0.0.1:9/mcp", *TOKENS, "--late-after", "soon"], "invalid float value"),
    (["http://127.0.0.1:9/mcp", *TOKENS, "--bogus"], "unrecognized arguments: --bogus"),
    (["--stdio", "'unclosed"], "cannot be split"),
    (["--stdio", "x", "--token", "a=1"], "given twice"),
    pytest.param(["--stdio", "/nonexistent/server"], "could not start '/nonexistent/server': no such command",
                 marks=pytest.mark.external),  # tries to start a process
])
def test_usage_errors_exit_2_with_one_clear_line(argv: list[str], words: str) -> None:
    code, out, err = check(*argv)
    assert code == 2 and out == ""
    assert err.startswith("mrtr check: error: ") and words in err and err.count("\n") == 1, err


@pytest.mark.parametrize(("path", "words"), [
    ("/html", "HTML page ('502 Bad Gateway')"),
    ("/notjson", "is not JSON"),
    ("/notrpc", "not JSON-RPC 2.0"),
    ("/silent", "no complete answer within 0.5 s"),
    ("/huge", "larger than 4096 KiB"),
    ("/endless-json", "did not answer tools/list"),
    ("/endless-sse", "did not answer tools/list"),
])
def test_a_target_that_is_not_a_working_mcp_server_exits_2(bad_server: str, path: str, words: str) -> None:
    code, out, err = check(bad_server + path, *TOKENS, timeout=0.5 if path == "/silent" else 30)
    assert code == 2 and out == "" and words in err and "Traceback" not in err, err


def test_an_unreachable_target_and_a_wrong_token_exit_2(mcp_url: str) -> None:
    code, _, err = check(f"http://127.0.0.1:{_closed_port()}/mcp", *TOKENS)
    assert code == 2 and "connection refused" in err
    code, _, err = check(mcp_url, "--token", "bob=bob-token", "--token", "alice=stolen-guess")
    assert code == 2 and "refused the bearer token of alice" in err and "stolen-guess" not in err


@pytest.mark.external  # stdio server processes (tests/check/fake_stdio.py)
@pytest.mark.parametrize(("mode", "timeout", "words"), [
    ("garbage", 30, "is not JSON"), ("silent", 0.5, "no answer within 0.5 s"),
    ("flood", 30, "without answering"), ("exit", 30, "exited with code 3"),
])
def test_a_stdio_command_that_misbehaves_exits_2(mode: str, timeout: float, words: str) -> None:
    code, out, err = check("--stdio", f"{sys.executable} {HERE / 'fake_stdio.py'} {mode}", timeout=timeout)
    assert code == 2 and out == "" and words in err and "Traceback" not in err, err


def test_a_tool_that_never_asks_or_does_not_exist_exits_2(mcp_url: str) -> None:
    code, _, err = check(mcp_url, *TOKENS, "--tool", "nope")
    assert code == 2 and "no tool named 'nope'" in err and "deploy" in err
    code, _, err = check(mcp_url, *TOKENS, "--args", '{"env": 5}')
    assert code == 2 and "tools/call deploy answered" in err and "--tool" in err


def test_help_exits_0() -> None:
    code, out, _ = check("--help")
    assert code == 0 and "usage: mrtr check" in out and "--allow-replay" in out


# -- pieces --------------------------------------------------------------------------------------------


def test_arguments_are_built_from_the_schema_and_one_string_changed() -> None:
    schema = {"type": "object", "properties": {"env": {"type": "string"}, "count": {"type": "integer", "minimum": 2},
                                               "region": {"type": "string", "enum": ["eu", "us"]},
                                               "note": {"type": "string"}},
              "required": ["env", "count", "region"]}
    args = arguments_for(schema)
    assert args == {"env": "staging", "count": 2, "region": "eu"}
    assert other_arguments_for(args, schema) == {"env": "prod", "count": 2, "region": "eu"}
    odd = {"properties": {"n": {"type": "integer", "minimum": "3"}, "s": {"type": "string", "minLength": "4"},
                          "h": {"type": ["string", "null"], "formats": 1}, "e": {"enum": "xyz"}},
           "required": ["n", "s", "h", "e", 7]}
    assert arguments_for(odd) == {"n": 1, "s": "mrtr-check", "h": "mrtr-check", "e": "mrtr-check"}
    assert other_arguments_for({"region": "eu"}, schema) == {"region": "us"}
    assert other_arguments_for({"name": "svc"}) == {"name": "svc-other"}
    assert other_arguments_for({"n": 1}) == {"n": 2} and other_arguments_for({}) is None


def test_the_progress_bar_draws_on_a_terminal_and_announces_once_elsewhere() -> None:
    tty = io.StringIO()
    bar = ProgressBar(tty, width=10, tty=True)
    bar(0.0, 2.0)
    bar(1.0, 2.0)
    bar(2.0, 2.0)
    frames = tty.getvalue().split("\r")[1:]
    assert "[-----" in frames[0] and "[#####-----]" in frames[1] and frames[2].startswith(
        "late move: waiting for the ticket to expire [##########]") and frames[2].endswith("\n")
    log = io.StringIO()
    plain = ProgressBar(log, tty=False)
    for waited in (0.0, 1.0, 2.0):
        plain(waited, 2.0)
    assert log.getvalue() == "late move: waiting 2.0 s for the ticket to expire\n"


def test_an_eighth_move_in_the_moves_file_is_played_with_no_code_change(mcp_url: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    eighth = tmp_path / "moves.toml"
    eighth.write_text((ROOT / "moves" / "moves.toml").read_text(encoding="utf-8") + '''
[[moves]]
slug = "stolen-other-request"
title = "Alice spends it on prod"
summary = "alice sends bob's ticket with her own token, on a deploy to prod."
sender = "other"
at = 25
timing = "in-time"
ticket = "as-issued"
answer = "accept"
request = "other"
expect = "refused"
stops_at = "principal"
''', encoding="utf-8")
    monkeypatch.setenv("MRTR_MOVES_FILE", str(eighth))
    code, report = check_json(mcp_url, *TOKENS, "--skip-late")
    assert code == 0 and [m["move"] for m in report["moves"]] == [*SLUGS, "stolen-other-request"]
    assert report["moves"][-1]["observed"] == "refused" and report["moves"][-1]["ok"]
    monkeypatch.setenv("MRTR_MOVES_FILE", str(tmp_path / "missing.toml"))
    code, _, err = check(mcp_url, *TOKENS)
    assert code == 2 and "cannot read the moves file" in err


def test_the_terminal_shows_rows_as_they_end_under_a_countdown_of_the_late_moves() -> None:
    tty = io.StringIO()
    terminal = Terminal(tty, tty=True, secrets=["bob-token"])
    events = terminal.events()
    events.planned("about 2 min: 23 moves and 5 probes, 4 at a time")
    events.wait(10.0, 121.0)
    events.move_done(MoveRow("honest", "Honest retry", "completed", "completed", True, "ok"), 1, 23)
    events.wait(120.0, 121.0)
    events.probe_done(ProbeResult("version", False, "no bob-token here"))
    events.wait(121.0, 121.0)
    screen = tty.getvalue()
    assert screen.startswith("This check takes about 2 min: 23 moves and 5 probes, 4 at a time\n")
    countdown = "late moves: 1:51 left until their tickets expire [#-------------------]"
    # A row is written over the countdown's line, which is drawn again under it; the last frame clears it.
    assert f"\r\x1b[2K{countdown}\r\x1b[2K  PASS    honest  (1 of 23)\n{countdown}" in screen
    assert "late moves: 0:01 left" in screen and screen.endswith("\r\x1b[2K")
    assert "bob-token" not in screen
    log = io.StringIO()
    plain = Terminal(log, tty=False).events()
    plain.planned("about 40 s")
    plain.move_done(MoveRow("honest", "Honest retry", "completed", "completed", True, "ok"), 1, 23)
    for waited in (0.0, 1.0, 2.0):
        plain.wait(waited, 2.0)
    assert log.getvalue() == "This check takes about 40 s\nlate move: waiting 2.0 s for the ticket to expire\n"


def test_the_check_says_how_long_it_will_take_once_the_server_has_answered() -> None:
    with running("sound") as (url, _server):
        code, _out, err = check(url, *TOKENS, "--skip-late")
    assert code == 0
    plan = next(line for line in err.splitlines() if line.startswith("This check takes about "))
    assert f"{len(MOVES)} moves and 5 probes, {WIDTH} at a time; the late moves are skipped" in plan


def test_concurrency_is_a_whole_number_from_1_to_16_and_1_plays_one_move_at_a_time() -> None:
    code, _out, err = check("http://127.0.0.1:9/mcp", *TOKENS, "--concurrency", "0")
    assert code == 2 and "--concurrency must be a whole number from 1 to 16" in err
    with running("sound") as (url, _server):
        code, _out, err = check(url, *TOKENS, "--skip-late", "--concurrency", "1")
    assert code == 0 and "one at a time; the late moves are skipped" in err
