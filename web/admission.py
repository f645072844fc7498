"""Admission to /mcp's CPU-bound work: at most N requests of one process at a time, first come first served.

Why: a worker process runs Python one thread at a time (the GIL). When many of its threads each
hold part of a request, the GIL passes between them in no fair order, so under load some requests
wait behind several others again and again: the mean latency stays the same while the tail grows
(measured in bench/analysis.md). Letting a few requests run and queueing the rest strictly in
arrival order keeps the tail close to the median.

What it must never do: be held while a thread waits on anything a client controls. /mcp takes a
slot only after the body has been read and gives it back before a legacy SSE stream starts waiting
for the client's answer, so a slow or silent client cannot keep a slot.
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType


class FifoGate:
    """At most `slots` holders at once; everyone else waits and is let in strictly in arrival order.

    `threading.Semaphore` lets a newly arriving thread take a freed slot ahead of one that has been
    waiting; here a released slot is handed straight to the oldest waiter instead.
    """

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"a gate needs at least one slot; got {slots}")
        self.slots = slots
        self._free = slots
        self._lock = threading.Lock()
        self._waiters: deque[threading.Lock] = deque()

    def acquire(self) -> None:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        turn.acquire()  # released by `release`, which hands this thread its slot

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()  # the slot passes on without ever being free
            elif self._free < self.slots:
                self._free += 1
            else:
                raise RuntimeError("FifoGate released more often than acquired")

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._waiters)

    @property
    def free(self) -> int:
        with self._lock:
            return self._free

    def __enter__(self) -> FifoGate:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
