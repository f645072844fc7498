"""/check-client's grading runs as every process sees them: the contract (`ClientRunStore`), the run record and
the caps on what one run and everyone together may hold.

A run is started from the page and then fed by the learner's own client, which posts to the run's MCP address;
any worker or replica may take any request. Two backends keep the contract (tests/stores/test_client_runs.py
runs one suite against both): `SqliteClientRuns` (`client_runs_sqlite`: one file, the processes of one machine)
and `RedisClientRuns` (`client_runs_redis`: replicas on several hosts).

Two steps are atomic in either, whoever runs them at once:

* `start`: at most `limit` starts per `window` per visitor, at most `MAX_LIVE` live runs for everyone (runs past
  their lifetime are forgotten first, so only live ones count);
* `record`: one request counted (the n-th call of its tool, its time from the store's clock), checked against
  the run's caps (`MAX_CALLS` requests, `MAX_RUN_BYTES` of bodies) and kept, so two requests at once, on two
  replicas, never both count as the same call.

A run lives `LIFETIME` seconds from its start; after that it reads as no run and is forgotten. What is kept:
the visitor's digest (never an address), the requests as the caller encodes them, and what the learner pasted
(their client's output, capped at `MAX_OUTPUT`). Time comes from the store's injected clock; nothing here
renders, reads a request or grades.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

#: How long one run accepts requests and stays readable (seconds).
LIFETIME = 30 * 60.0
#: Requests one run records; past it each request gets a JSON-RPC error saying so. A sound client sends about 40.
MAX_CALLS = 400
#: Bytes of request bodies one run records, all together.
MAX_RUN_BYTES = 2_000_000
#: Live runs for everyone at once.
MAX_LIVE = 50
#: The most characters of a client's pasted output kept.
MAX_OUTPUT = 32 * 1024
#: A run id: `secrets.token_urlsafe(24)` gives 32 of these characters.
RUN_ID = re.compile(r"[A-Za-z0-9_-]{32}")
#: What a visitor is told when the store cannot be reached.
STORE_AWAY = "The client checker cannot reach its store right now; try again shortly."


def new_run_id() -> str:
    """An unguessable id (192 random bits): knowing it is what lets anyone see or feed the run."""
    return secrets.token_urlsafe(24)


class ClientRunRefused(Exception):
    """A run that may not start now (rate-limited, the site full, the store away); the message is safe to show.
    `busy` is true when the site as a whole is full rather than this visitor over their rate."""

    def __init__(self, message: str, *, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy


class RunGone(Exception):
    """No such run: never started, past its lifetime, or the store away."""


class CallRefused(Exception):
    """A request the run will not record: a cap reached. The message is safe to send back."""


@dataclass(frozen=True)
class ClientRun:
    """One run as every worker sees it."""

    id: str
    visitor: str
    started: float
    expires: float
    calls: int = 0
    bytes: int = 0
    #: What the learner pasted of their client's output ("" when nothing), and its exit status.
    output: str = ""
    exit_code: int | None = None
    #: Whether the learner says their client's user answers as MRTR_CHECK_CLIENT_CHOICES says.
    choices_known: bool = False

    def left(self, now: float) -> float:
        return max(0.0, self.expires - now)


#: The caller's half of `record`: given the request's place among its tool's calls (1 for the first) and the
#: time it arrived, the text to keep for it. Called inside the store's atomic step: it must not block.
Entry = Callable[[int, float], str]


class ClientRunStore(Protocol):
    clock: Callable[[], float]

    def start(self, visitor: str, limit: int, window: float) -> ClientRun:
        """A new run for `visitor`, admitted atomically (see the module); ClientRunRefused says why not."""

    def get(self, run_id: str) -> ClientRun | None:
        """The live run; None for an unknown, expired or malformed id, or a store away."""

    def record(self, run_id: str, tool: str, size: int, entry: Entry) -> str:
        """Count one request of `size` body bytes to `tool` ("" for a request that is no tool call) and keep what
        `entry` makes of it; that text is returned. RunGone or CallRefused when it is not recorded."""

    def calls(self, run_id: str) -> list[str]:
        """The texts kept for the run's requests, in the order they were counted (empty for no run)."""

    def note(self, run_id: str, output: str, exit_code: int | None, choices_known: bool) -> None:
        """Keep what the learner says of their client (output cut at MAX_OUTPUT); RunGone when there is no run."""


def refuse_start(starts: list[float], live: int, *, now: float, limit: int, window: float) -> None:
    """ClientRunRefused when a visitor whose starts in the window are `starts` may not start one more, with `live` runs
    live for everyone. The caller holds the store's atomic step."""
    if live >= MAX_LIVE:
        raise ClientRunRefused(f"The client checker is grading {MAX_LIVE} runs already, the most it keeps at once; "
                         f"try again in a few minutes.", busy=True)
    recent = sorted(s for s in starts if now - s < window)
    if len(recent) >= limit:
        wait = max(1, math.ceil(window - (now - recent[-limit])))
        raise ClientRunRefused(f"You have started {limit} grading runs recently; try again in {wait} s.")


def call_problem(run: ClientRun, size: int) -> str | None:
    """Why the run records no more requests, or None."""
    if run.calls >= MAX_CALLS:
        return f"this grading run has recorded its {MAX_CALLS} requests, the most one run takes; start a new run"
    if run.bytes + size > MAX_RUN_BYTES:
        return f"this grading run has recorded {MAX_RUN_BYTES // 1000} kB of requests, the most one run takes"
    return None
