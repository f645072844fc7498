"""The budget of a full check: on a fast sound server it stays within the ticket's lifetime plus 10 s, however many
rounds the flow has, because every wait past an expiry (the catalogue's late moves and the exploration's, one for
every round's ticket) overlaps the others and the in-time moves; and the report says how many calls it made.

Time is the server's movable clock (tests/mutants/harness.py): a wait moves it instead of sleeping, and the real
seconds the requests take count too, so "elapsed" is what the check would take against a real server.
"""

from __future__ import annotations

import os
import sys
from contextlib import closing
from pathlib import Path

import pytest

from moves.check import CheckOptions, Report, run_check
from moves.findings import summary_of
from moves.targets.http import HttpTarget
from moves.targets.stdio import StdioTarget
from tests.mutants.harness import SERVER, TOKENS, running, timing_on
from tests.mutants.server import TTL, Clock

#: The bound of the issue's "Done when": the ticket's lifetime plus 10 s.
BOUND = TTL + 10


def over_http(name: str, options: CheckOptions) -> tuple[Report, float]:
    with running(name) as (url, server), \
            closing(HttpTarget(url, TOKENS, timeout=10, timing=timing_on(server.clock))) as target:
        began = server.clock.now()
        report = run_check(target, options)
        return report, server.clock.now() - began


def over_stdio(name: str, tmp_path: Path, options: CheckOptions) -> tuple[Report, float]:
    clock = Clock.at_zero(tmp_path / f"{name}.clock")
    env = {**os.environ, "MRTR_PEER_CLOCK_FILE": str(clock.path)}
    with closing(StdioTarget([sys.executable, str(SERVER), name], [("bob", "bob"), ("alice", "alice")], env=env,
                             timing=timing_on(clock), timeout=20)) as target:
        began = clock.now()
        report = run_check(target, options)
        return report, clock.now() - began


def assert_within_budget(report: Report, elapsed: float, rounds: int) -> None:
    explored = report.explored
    assert explored is not None and report.ok, report.table()
    assert elapsed <= BOUND, f"the check took {elapsed:.1f} s, over the {TTL} s lifetime plus 10 s"
    # Every round's ticket really was sent past its expiry (judged), in that one overlapping wait.
    assert explored.rounds == rounds and explored.judged.get("expiry") == rounds, explored
    late = [r for r in report.moves if r.move == "late"]
    assert late and late[0].verdict == "pass", late
    assert f"in {explored.calls} calls" in summary_of(explored) and explored.calls > 20


@pytest.mark.parametrize(("name", "rounds"), [("sound", 1), ("two-rounds", 2), ("three-rounds", 3)])
def test_a_full_check_of_a_fast_sound_server_fits_its_ticket_lifetime_plus_10_s_over_http(name: str,
                                                                                          rounds: int) -> None:
    assert_within_budget(*over_http(name, CheckOptions()), rounds)


@pytest.mark.external  # the server as stdio processes
def test_a_full_check_of_a_three_round_server_fits_its_ticket_lifetime_plus_10_s_over_stdio(tmp_path: Path) -> None:
    assert_within_budget(*over_stdio("three-rounds", tmp_path, CheckOptions()), 3)

