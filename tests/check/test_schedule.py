"""Moves played concurrently (moves.schedule, moves.targets.stdio_mux), shown by structure, never by wall time: jobs
that can only all finish when `width` of them run at once, waits ordered on a movable clock, a stdio process that
answers only once several lines are in and then answers them in reverse."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from moves.schedule import Countdown, Schedule, Slots
from moves.targets.remote import Timing
from moves.targets.stdio import StdioTarget

#: How long a test's barrier waits before it says the jobs were not run together (a guard against a hang, never a
#: measure: a schedule that runs them together passes at once).
GUARD = 20.0


def test_a_schedule_runs_width_jobs_at_once_and_hands_results_back_in_item_order() -> None:
    barrier = threading.Barrier(4, timeout=GUARD)  # broken unless four jobs are in it together
    seen: list[int] = []

    def job(item: str, index: int) -> str:
        if index < 8:
            barrier.wait()
        return item.upper()

    gate = Slots(width=4)
    results = Schedule(job, gate, lambda index, result: seen.append(index)).run([f"m{i}" for i in range(10)])
    assert results == [f"M{i}" for i in range(10)]
    assert gate.peak == 4 and sorted(seen) == list(range(10))


def test_moves_start_in_catalogue_order_as_slots_free_up() -> None:
    started: list[int] = []
    lock = threading.Lock()

    def job(item: int, index: int) -> int:
        with lock:
            started.append(index)
        return item

    Schedule(job, Slots(width=1)).run(list(range(6)))
    assert started == list(range(6))


class MovableClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_waits_take_their_turn_after_every_in_time_move_earliest_deadline_first() -> None:
    """On a movable clock, moving time for one wait never happens while another move plays: the in-time moves all end
    before the first wait moves the clock, and the near-expiry wait (96 s) goes before the late one (121 s)."""
    clock = MovableClock()
    log: list[str] = []
    lock = threading.Lock()
    in_time = threading.Barrier(3, timeout=GUARD)  # the late moves must let the in-time ones run meanwhile

    def job(item: tuple[str, float], index: int) -> None:
        name, after = item
        timing = Timing(clock=clock, sleep=clock.advance).for_move(gate, index)
        timing.begin()
        if after:
            fraction = 0.8 if name == "near" else None
            ok = timing.near_expiry(fraction, expires_at=clock() + 120) if fraction else \
                timing.advance(after, past_expiry=True, expires_at=clock() + 120)
            assert ok
        else:
            in_time.wait()
        with lock:
            log.append(f"{name}@{clock() - 1000:.0f}")

    gate = Slots(width=4)
    Schedule(job, gate).run([("late", 121.0), ("a", 0.0), ("near", 96.0), ("b", 0.0), ("c", 0.0)])
    assert sorted(log[:3]) == ["a@0", "b@0", "c@0"] and log[3:] == ["near@96", "late@121"]


def test_a_stopped_schedule_starts_nothing_more_and_a_wait_gives_up() -> None:
    clock = MovableClock()
    started: list[int] = []
    waits: list[bool] = []
    failed = threading.Event()

    def job(item: str, index: int) -> None:
        started.append(index)
        if item == "late":
            timing = Timing(clock=clock, sleep=clock.advance).for_move(gate, index)
            timing.begin()
            waits.append(timing.advance(121, past_expiry=True, expires_at=clock() + 120))
            assert "the check stopped" in (timing.skip_reason or "")
            return
        if item == "hang":
            raise TimeoutError("no answer")
        failed.wait(GUARD)

    gate = Slots(width=2)
    with pytest.raises(TimeoutError):
        Schedule(job, gate).run(["late", "hang", "later", "later"])
    assert sorted(started) == [0, 1] and waits == [False]


def test_a_countdown_covers_every_wait_with_the_one_that_ends_last() -> None:
    reports: list[tuple[float, float]] = []
    countdown = Countdown(lambda waited, total: reports.append((waited, total)))
    late, near = countdown.for_move(3), countdown.for_move(9)
    late(10, 121)  # both started together: 111 s to go
    near(10, 96)
    late(50, 121)  # the late move has 71 s left, the near one 86 s: the countdown shows 86 s to go
    near(96, 96)
    late(121, 121)
    assert [(round(w), t) for w, t in reports] == [(10, 121), (10, 121), (35, 121), (50, 121), (121, 121)]


# -- stdio: one process, several moves' lines -------------------------------------------------------------------

#: Reads three lines before answering any, then answers them in reverse: replies only reach the right move if the
#: target matches them by id (and only come at all if three moves wrote before any reply was read).
REVERSER = """
import json, os, sys
lines = [json.loads(sys.stdin.readline()) for _ in range(3)]
for message in reversed(lines):
    who = os.environ["MRTR_PRINCIPAL"]
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                 "result": {"echo": message["params"]["n"], "seenId": message["id"], "who": who}})
                     + "\\n")
sys.stdout.flush()
sys.stdin.read()
"""


@pytest.mark.external  # a stdio process
def test_moves_share_a_stdio_process_with_lines_interleaved_and_replies_matched_by_id(tmp_path: Path) -> None:
    script = tmp_path / "reverser.py"
    script.write_text(REVERSER)
    gate = Slots(width=3)
    got: dict[int, Any] = {}
    with StdioTarget([sys.executable, str(script)], timeout=GUARD) as target:

        def job(n: int, index: int) -> None:
            view = target.for_move(gate, index)
            try:
                got[n] = view.send("owner", {"jsonrpc": "2.0", "id": 3, "method": "x", "params": {"n": n}})
            finally:
                view.close()

        Schedule(job, gate).run([10, 20, 30])
    for n, reply in got.items():
        result = reply.response["result"]
        # Every move used id 3; each got its own answer back, under its own id, though the server saw distinct ids.
        assert reply.response["id"] == 3 and result["echo"] == n and result["who"] == "bob"
    assert len({r.response["result"]["seenId"] for r in got.values()}) == 3


def test_the_first_item_plays_before_the_rest_with_only_those_beside_it() -> None:
    """The honest move with the probes beside it (the probe waits for the honest move, so they ran together), then
    the other moves, three together."""
    barrier = threading.Barrier(3, timeout=GUARD)
    honest_done = threading.Event()
    log: list[str] = []

    def job(item: str, index: int) -> str:
        if item == "honest":
            log.append("honest")
            assert probe_started.wait(GUARD)
            honest_done.set()
        elif item == "probe":
            probe_started.set()
            log.append("probe")
        else:
            assert honest_done.is_set()
            barrier.wait()
        return item

    probe_started = threading.Event()
    gate = Slots(width=3)
    Schedule(job, gate).run(["honest", "a", "b", "c", "probe"], first=[0, 0, 0, 0, 9], alone=1, beside=[4])
    assert sorted(log) == ["honest", "probe"] and gate.peak == 3
