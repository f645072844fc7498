"""Playing a check's moves concurrently: at most `width` moves at a time, the timed waits in parallel with the rest.

`Schedule` runs one job per move, each in a thread of its own, and hands the results back in catalogue order, so a
report reads the same however the moves interleaved. Moves start in the order given (longest first, say) as slots
free up; the first few may play before all others (the honest move). A move that waits out real time (the late move
past its ticket's expiry, the replay near it) gives its slot back while it waits.

`Slots` is how those waits take turns. A wait begins only when no move is playing or queued and it has the earliest
deadline of those waiting; the deadlines are absolute, so on a real clock the waits still end when they would have
(all of them overlap the in-time moves), and on a movable clock (tests, the mutation suite) moving time for one wait
never ages another move's ticket midway. Nothing here sends a message, reads a target or knows what a move is.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

#: Moves played at once by default: enough to hide a slow server's latency (at 4, a sound server answering in 0.8 s
#: took 19.5 s with --skip-late, too near the 20 s target: bench/RESULTS.md), few enough for a server's limits.
WIDTH = 6
#: How often a blocked wait reports its progress (seconds of the real clock).
TICK = 0.1

T = TypeVar("T")
R = TypeVar("R")


class Stopped(Exception):
    """The schedule stopped (a time-out elsewhere): a move waiting for its turn gives up."""


@dataclass
class Slots:
    """Turns for timed waits and slots for moves, under one lock (see the module)."""

    width: int = WIDTH
    #: Moves holding a slot (playing, not waiting).
    running: int = 0
    #: Moves that want a slot, by their rank in the start order: the lowest gets the next one.
    queued: list[int] = field(default_factory=list)
    #: Waits that want their turn: (deadline, catalogue index).
    waiting: list[tuple[float, int]] = field(default_factory=list)
    stopped: bool = False
    lock: threading.Condition = field(default_factory=threading.Condition)
    #: The most moves ever playing at once (what the tests read to see the schedule was concurrent).
    peak: int = 0
    #: Ranks from this one on wait until the jobs that go first have ended (None: nothing waits).
    barrier: int | None = None

    def enqueue(self, indices: Sequence[int]) -> None:
        """Every move of the schedule wants a slot, before any thread starts (so none sees an empty queue)."""
        with self.lock:
            self.queued = sorted({*self.queued, *indices})

    def acquire(self, index: int) -> None:
        """Wait for a slot (`enqueue`d first); moves get theirs in the order of their ranks. Raises Stopped when the
        schedule stopped."""
        with self.lock:
            if index not in self.queued:
                heapq.heappush(self.queued, index)
            while not self.stopped and (self.running >= self.width or self.queued[0] != index
                                        or (self.barrier is not None and index >= self.barrier)):
                self.lock.wait()
            self.queued.remove(index)
            heapq.heapify(self.queued)
            self.lock.notify_all()
            if self.stopped:
                raise Stopped
            self.running += 1
            self.peak = max(self.peak, self.running)

    def release(self) -> None:
        with self.lock:
            self.running -= 1
            self.lock.notify_all()

    def open(self) -> None:
        """Let every job start (the ones that go first have ended)."""
        with self.lock:
            self.barrier = None
            self.lock.notify_all()

    def turn(self, until: float, index: int, tick: Callable[[], object] = lambda: None) -> bool:
        """Give the slot back and block until this wait's turn (nothing playing or queued, earliest deadline), then
        take a slot again. `tick` is called about every TICK seconds meanwhile. False when the schedule stopped."""
        entry = (until, index)
        with self.lock:
            self.running -= 1
            heapq.heappush(self.waiting, entry)
            self.lock.notify_all()
            while not self.stopped and (self.running or self.queued or self.waiting[0] != entry):
                self.lock.wait(TICK)
                self.lock.release()  # the progress callback may write to a terminal or a store: never under the lock
                try:
                    tick()
                finally:
                    self.lock.acquire()
            self.waiting.remove(entry)
            heapq.heapify(self.waiting)
            self.running += 1
            self.lock.notify_all()
            return not self.stopped

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.lock.notify_all()


@dataclass
class Schedule(Generic[T, R]):
    """Run `job(item, index)` for every item, `width` at a time on a `Slots`; `results` in item order.

    A job that raises stops the schedule: moves not yet started never start, waits give up, and `run` re-raises the
    first exception (in item order) once every started job has ended. `done(index, result)` is called as each job
    ends, from its thread, one call at a time.
    """

    job: Callable[[T, int], R]
    gate: Slots = field(default_factory=Slots)
    done: Callable[[int, R], None] = lambda index, result: None

    def run(self, items: Sequence[T], first: Sequence[SupportsRichComparison] | None = None, alone: int = 0,
            beside: Sequence[int] = ()) -> list[R | None]:
        """`first`: a key per item, lowest starts first (ties in item order); default, item order. The first `alone`
        items play before any other starts, but for those in `beside` (which may play alongside them)."""
        keys = list(first) if first is not None else [0] * len(items)
        early = [*range(alone), *(i for i in beside if i >= alone)]
        order = [*early, *sorted((i for i in range(len(items)) if i not in early), key=lambda i: (keys[i], i))]
        rank = {index: n for n, index in enumerate(order)}
        alone_left = [alone]
        if alone:
            self.gate.barrier = len(early)
        results: list[R | None] = [None] * len(items)
        failures: dict[int, BaseException] = {}
        report = threading.Lock()

        def one(index: int) -> None:
            try:
                self.gate.acquire(rank[index])
            except Stopped:
                return
            try:
                result = self.job(items[index], index)
            except BaseException as exc:  # noqa: BLE001 (handed to `run`'s caller, in item order)
                failures[index] = exc
                self.gate.stop()
                return
            finally:
                self.gate.release()
                if index < alone:
                    with report:
                        alone_left[0] -= 1
                        if not alone_left[0]:
                            self.gate.open()
            results[index] = result
            with report:
                self.done(index, result)

        self.gate.enqueue(range(len(items)))
        threads = [threading.Thread(target=one, args=(i,), name=f"move-{i}", daemon=True) for i in range(len(items))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[min(failures)]
        return results


class Countdown:
    """The timed waits of concurrent moves as one: `(waited, total)` reports from each wait (by move index) become
    one report to `report`, of the wait that ends last, so one bar or countdown covers them all."""

    def __init__(self, report: Callable[[float, float], None]) -> None:
        self.report = report
        self.lock = threading.Lock()
        self.waits: dict[int, tuple[float, float]] = {}

    def for_move(self, index: int) -> Callable[[float, float], None]:
        def progress(waited: float, total: float) -> None:
            with self.lock:
                self.waits[index] = (waited, total)
                longest = max(t for _, t in self.waits.values())
                left = max(t - w for w, t in self.waits.values())
                self.report(max(longest - left, 0.0), longest)

        return progress
