"""Which requests may keep one of a server process's threads while they wait: at most N at once.

Why: under the production server a worker has a fixed pool of threads (granian's blocking threads,
`THREADS` in scripts/production.sh). Two kinds of response hold their thread while they wait: a
2025-11-25 call that asked its client a question (until the client answers, up to the shim's round
timeout; the answer arrives on another request, which needs a thread of its own), and a presenter's
live view of a class (an SSE stream of up to `MRTR_CLASS_STREAM_SECONDS`). Uncapped, a few of
them, which any visitor can open, would take every thread and stall the process. With at most
`THREADS - 1` held (`MRTR_HELD_STREAMS`), one thread always remains for everything else.

What it must never do: make anyone wait. Past the cap a legacy call is refused at once (503) and a
presenter's view falls back to a snapshot per reconnect; nothing is queued.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from flask import Flask, current_app

#: The process's one HeldSlots, in `app.extensions`.
HELD_KEY = "mrtr.held_streams"


def init_app(app: Flask, limit: int) -> None:
    app.extensions[HELD_KEY] = HeldSlots(limit)


def held_slots() -> HeldSlots:
    """The current app's cap (inside a request)."""
    slots: HeldSlots = current_app.extensions[HELD_KEY]
    return slots


class HeldSlots:
    """At most `limit` holders at once (0: none); `take` says no rather than wait."""

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"a cap of held streams cannot be negative; got {limit}")
        self.limit = limit
        self._held = 0
        self._lock = threading.Lock()

    def take(self) -> Callable[[], None] | None:
        """A slot, as the function that gives it back (calling it again does nothing), or None if all are held."""
        with self._lock:
            if self._held >= self.limit:
                return None
            self._held += 1
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            with self._lock:
                if not given_back:
                    given_back = True
                    self._held -= 1

        return give_back

    @property
    def held(self) -> int:
        with self._lock:
            return self._held
