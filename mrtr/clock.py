"""Time, injected. The core never calls `time.time()` itself: adapters pass a clock in.

A clock is any zero-argument callable returning seconds since the epoch as a float.
`FakeClock` is the settable one tests, the playground and the presenter use.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]
#: Waits the given seconds: what a client paces its retries with (tests pass one that only records).
Sleep = Callable[[float], None]

system_clock: Clock = time.time
system_sleep: Sleep = time.sleep


#: A fixed instant (2026-09-21T12:53:20Z) for fake clocks, figures and demos, so times never drift.
FIXED_EPOCH = 1_790_000_000.0


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, now: float = FIXED_EPOCH) -> None:
        self.now = float(now)
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def set(self, now: float) -> None:
        self.now = float(now)

    def sleep(self, seconds: float) -> None:
        """A `Sleep` that moves this clock instead of waiting, and keeps every wait in `slept`."""
        self.slept.append(seconds)
        self.advance(seconds)
