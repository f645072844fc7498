"""Verdicts a server author can trust (issue 21, item 3), against small servers of tests/mutants/server.py:
no FAIL without evidence, no PASS for a move that did not exercise its check, the wait's source in the late
move's detail, a time-out ends the run with exit 2 (JUnit still written), tokens never in any output, and the
JSON and JUnit contracts. No real waits: the late move moves the server's clock, a hang is cut by a short
time-out (HANG_CUT, HTTP_HANG_CUT) and released when the test ends.
"""

from __future__ import annotations

import io
import json
import re
import sys
import xml.etree.ElementTree as ET
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from moves.catalog import load_moves
from moves.check import main
from moves.invariants import INVARIANTS
from tests.check.conftest import on_clock
from tests.check.test_cli import PROBE_SLUGS, assert_exact_schema
from tests.mutants.harness import SERVER, check_http, running
from tests.mutants.server import TTL, Sound

MOVES = load_moves()
LATE = [m.slug for m in MOVES if m.timing != "in-time"]  # the moves that wait
PAST = [m.slug for m in MOVES if m.timing == "past-expiry"]  # those that wait past the expiry
#: The late moves only the expiry check refuses (a stolen ticket sent late is refused for being stolen too).
ONLY_LATE = [m.slug for m in MOVES if m.timing == "past-expiry" and m.refused_by == {"expiry"}]
TOKENS = ["--token", "bob=bob-token", "--token", "alice=alice-token"]


def cli(*argv: str, timeout: float = 10.0, server: Sound | None = None) -> tuple[int, str, str]:
    """`python -m mrtr check ARGV`, in process; with `server`, its late move waits on that server's clock (the
    CLI builds its own Timing: this is its only difference from a user's run)."""
    out, err = io.StringIO(), io.StringIO()
    with on_clock(server.clock) if server is not None else nullcontext():
        code = main(list(argv), stdout=out, stderr=err, timeout=timeout)
    return code, out.getvalue(), err.getvalue()


def rows(report: Any) -> dict[str, Any]:
    return {r.move: r for r in report.moves}


# -- the late move: not-run when it cannot know the expiry, and the wait's source --------------------


def test_a_late_move_that_cannot_read_the_expiry_is_not_run_with_how_to_run_it_and_exits_0() -> None:
    with running("opaque") as (url, _server):
        code, out, err = cli(url, *TOKENS, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True, out + err
    assert_exact_schema(report)
    late = [m for m in report["moves"] if m["move"] in LATE]
    assert late and all(m["verdict"] == "not-run" and m["observed"] == "not-run" for m in late)
    for move in late:
        assert "its expiry is unknown" in move["detail"] and "pass --late-after SECONDS" in move["detail"]
    assert {m["verdict"] for m in report["moves"] if m["move"] not in LATE} == {"pass"}


def test_late_after_says_the_wait_came_from_the_flag() -> None:
    report = check_http("opaque", late_after=TTL + 5)
    for slug in PAST:
        row = rows(report)[slug]
        assert row.verdict == "pass" and f"sent {TTL + 5:g} s after minting, the wait --late-after set" in row.detail


def test_a_late_after_shorter_than_the_tickets_life_fails_and_says_so() -> None:
    # The server's tickets live TTL seconds; a wait of half that sends the retry while the ticket is valid. It
    # deploys (that is evidence), and the detail says the wait came from the flag and how to fix it.
    report = check_http("opaque", late_after=TTL / 2)
    assert ONLY_LATE
    for slug in ONLY_LATE:
        row = rows(report)[slug]
        assert row.verdict == "fail" and row.observed == "completed"
        assert "the wait --late-after set" in row.detail and "raise --late-after" in row.detail


def test_a_readable_expiry_is_waited_out_and_the_detail_says_so() -> None:
    report = check_http("sound")
    for slug in PAST:
        assert "past the ticket's exp" in rows(report)[slug].detail
    for slug in set(LATE) - set(PAST):
        assert "80% of the way to the ticket's exp" in rows(report)[slug].detail


# -- usage errors and time-outs: exit 2 --------------------------------------------------------------


def test_the_same_token_for_both_principals_is_a_usage_error() -> None:
    code, out, err = cli("http://127.0.0.1:9/mcp", "--token", "bob=same-secret", "--token", "alice=same-secret")
    assert code == 2 and out == "" and "the two --token values are the same" in err
    assert "same-secret" not in err and err.count("\n") == 1


#: The checker's time-out in the hang tests. Every answer a sound part of the server gives must come well inside
#: it on a loaded CI machine (a stdio server's Python start-up included): at 0.3 s a busy machine cut an honest
#: first call and the run stopped a move early. Each hang costs one such wait.
HANG_CUT = 3.0
#: The same over HTTP to a server in this process, which has no start-up to wait for: an honest answer takes a few
#: milliseconds (tens on a loaded machine), so a second is still a wide margin, and each hang costs 2 s less.
HTTP_HANG_CUT = 1.0


def test_a_server_that_hangs_only_on_retries_stops_the_run_at_the_first_time_out(tmp_path: Path) -> None:
    junit = tmp_path / "hang.xml"
    with running("hangs-on-retry") as (url, _server):
        code, out, err = cli(url, *TOKENS, "--json", "--junit", str(junit), timeout=HTTP_HANG_CUT)
    assert code == 2 and "did not answer in time" in err and "Traceback" not in err, err
    report = json.loads(out)  # the partial report, with why it stopped
    assert_exact_schema(report)
    assert report["ok"] is False and "did not answer in time" in report["stopped"]
    assert [m["move"] for m in report["moves"]] == [MOVES[0].slug] and report["probes"] == []
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"
    case = suite.find("testcase")
    assert case is not None and case.get("name") == MOVES[0].slug and case.find("error") is not None
    assert case.find("failure") is None and case.get("time") is not None
    # Without --json, the table of what was played goes out too, ending in the summary.
    with running("hangs-on-retry") as (url, _server):
        code, table, err = cli(url, *TOKENS, timeout=HTTP_HANG_CUT)
    assert code == 2 and table.startswith(f"Target: {url}")
    assert table.rstrip().splitlines()[-1].startswith("STOPPED at a time-out: 0 of the 1 moves played")
    # (the late moves wait beside the others, so a line may first say how long they will wait)
    errors = [line for line in err.splitlines() if line.startswith("mrtr check: ")]
    assert err.splitlines()[-1].startswith("mrtr check: error: ") and len(errors) == 1


def test_a_hang_in_a_probe_stops_the_run_there_with_an_error_case(tmp_path: Path) -> None:
    junit = tmp_path / "probe.xml"
    with running("hangs-without-capability") as (url, server):
        code, out, err = cli(url, *TOKENS, "--json", "--junit", str(junit), "--skip-late", timeout=HTTP_HANG_CUT,
                             server=server)
    assert code == 2 and "did not answer in time during probe capability" in err, err
    report = json.loads(out)
    assert "stopped" in report and [p["probe"] for p in report["probes"]] == ["capability"]
    assert {m["verdict"] for m in report["moves"]} <= {"pass", "not-run"}
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"
    case = next(c for c in suite.iter("testcase") if c.get("name") == "capability")
    assert case.find("error") is not None and case.find("failure") is None


@pytest.mark.external  # a stdio server process
def test_over_stdio_too_a_hang_on_retries_stops_the_run_with_exit_2() -> None:
    command = f"{sys.executable} {SERVER} hangs-on-retry"
    code, out, err = cli("--stdio", command, "--json", timeout=HANG_CUT)
    assert code == 2 and "did not answer in time during move" in err and "Traceback" not in err, err
    report = json.loads(out)
    assert "stopped" in report and [m["observed"] for m in report["moves"]] == ["error"]


# -- tokens never reach any output -----------------------------------------------------------------


def test_tokens_a_server_echoes_back_never_reach_the_table_the_json_or_the_junit(tmp_path: Path) -> None:
    junit = tmp_path / "echo.xml"
    with running("echoes-token") as (url, server):
        _, table, table_err = cli(url, *TOKENS, server=server)
        _, out, err = cli(url, *TOKENS, "--json", "--junit", str(junit), server=server)
    everything = table + table_err + out + err + junit.read_text()
    assert "bob-token" not in everything and "alice-token" not in everything
    assert "[token]" in table and "[token]" in out  # the server did echo them: redaction is what kept them out


def test_a_token_echoed_in_an_error_that_stops_the_check_is_redacted_too() -> None:
    with running("lists-for-nobody") as (url, _server):
        code, out, err = cli(url, *TOKENS)
    assert code == 2 and out == "" and "refused tools/list" in err and "[token]" in err
    assert "bob-token" not in err and "alice-token" not in err


# -- the JUnit contract ----------------------------------------------------------------------------


def test_junit_has_a_time_on_every_case_and_no_doubled_words(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    with running("no-single-use") as (url, server):
        code, _, _ = cli(url, *TOKENS, "--junit", str(junit), server=server)
    assert code == 1
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None and root.get("time") is not None and suite.get("time") is not None
    cases = list(suite.iter("testcase"))
    assert [c.get("name") for c in cases] == [m.slug for m in MOVES] + PROBE_SLUGS + list(INVARIANTS)
    assert all(re.fullmatch(r"\d+\.\d{3}", c.get("time") or "") for c in cases)
    failures = [c for c in cases if c.find("failure") is not None]
    assert failures and suite.get("failures") == str(len(failures))
    texts = [v for el in root.iter() for v in (el.text or "", *el.attrib.values())]
    doubled = [t for t in texts if re.search(r"\b(\w+) \1\b", t)]
    assert not doubled, doubled


def test_a_not_run_move_is_skipped_in_junit_and_never_a_failure(tmp_path: Path) -> None:
    junit = tmp_path / "opaque.xml"
    with running("opaque") as (url, _server):
        assert cli(url, *TOKENS, "--junit", str(junit))[0] == 0
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    for slug in LATE:
        skipped = cases[slug].find("skipped")
        assert skipped is not None and "--late-after" in (skipped.get("message") or "")
        assert cases[slug].find("failure") is None
