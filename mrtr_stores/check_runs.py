"""/check's runs as every process sees them: the contract (`RunStore`), the run record and the admission rules.

A run goes on in a thread of the process that started it; its progress is saved to the store on each change, so
every worker and replica can draw it. Two backends keep the contract (tests/stores/test_check_runs.py runs one
suite against both): `SqliteRunStore` (`check_runs_sqlite`: one file, the processes of one machine) and
`RedisRunStore` (`check_runs_redis`: replicas on several hosts). Admitting a run is one atomic step in either:
one run at a time per visitor, at most `MAX_ACTIVE` for everyone, at most `limit` starts per `window` per
visitor. A running run not saved for `STALE` seconds reads as failed (its process went away); finished runs
are forgotten after `RUN_TTL` (never sooner than the rate limit's window) and past `MAX_RUNS_KEPT`.

Visitors are kept as the digests the caller passes, never addresses; tokens are never given to a store. Time
comes from the store's injected clock. Nothing here renders or reads a request.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NotRequired, Protocol, TypedDict

from mrtr import JSON, JSONObject

#: Runs going on at once, for everyone.
MAX_ACTIVE = 4
#: Finished runs kept at most; the oldest go first.
MAX_RUNS_KEPT = 200
#: How long a finished run stays readable (seconds).
RUN_TTL = 30 * 60.0
#: A running run not saved for this long is taken as dead (its worker went away).
STALE = 120.0
RUN_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
#: What a visitor is told when the store cannot be reached.
STORE_AWAY = "The checker cannot reach its store right now; try again shortly."


class RunRefused(Exception):
    """A run that may not start now (busy, rate-limited, the store away); the message is safe to show."""


class RunStoreDown(Exception):
    """The store could not be written; the message says which and why (for the log, never a page)."""


class MoveRecord(TypedDict):
    """One move's row as a run keeps it: web/check/runner.py writes it as the move ends, the /check page reads it."""

    move: str
    title: str
    expected: str
    observed: str
    verdict: str
    detail: str
    stops_at: str
    #: The move's messages, tokens redacted, for the diagram drawn once the run is over.
    exchange: NotRequired[list[JSON]]
    #: The move's place in the catalogue (moves end in any order when played concurrently).
    index: NotRequired[int]


class ProbeRecord(TypedDict):
    """One probe's row as a run keeps it."""

    probe: str
    title: str
    ok: bool
    detail: str


@dataclass
class Run:
    """One run as every worker sees it: plain JSON-able fields, saved to the run store on each change."""

    id: str
    visitor: str
    url: str
    started: float
    updated: float = 0.0
    state: str = "running"  # running, done, error
    phase: str = "Starting"
    total: int = 0
    rows: list[MoveRecord] = field(default_factory=list)
    probes: list[ProbeRecord] = field(default_factory=list)
    waited: float = 0.0
    wait_total: float = 0.0
    waiting: bool = False
    #: How long the check will take, in words, once the tool is chosen ("about 2 min: ..."), or "".
    plan: str = ""
    summary: str = ""
    error: str = ""
    finished: float = 0.0
    #: What the exploration played and found (`moves.findings.page_record`, tokens redacted), once it is over.
    exploration: JSONObject | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"


class RunStore(Protocol):
    clock: Callable[[], float]

    def save(self, run: Run) -> None:
        """Keep the run as it is now (its `updated` set to the clock); RunStoreDown when the store fails."""

    def get(self, run_id: str) -> Run | None:
        """The run, failed when its process went away; None for an unknown or malformed id, or a store away."""

    def start(self, visitor: str, url: str, limit: int, window: float) -> Run:
        """A new running run for `visitor`, admitted atomically (see the module); RunRefused says why not."""


def encode(run: Run) -> str:
    return json.dumps(dict(run.__dict__))


def decode(text: str | None, now: float) -> Run | None:
    """The run saved as `text`, read as failed when it is running but has not been saved for STALE seconds."""
    try:
        run = Run(**json.loads(text)) if text is not None else None
    except (ValueError, TypeError):
        return None
    if run is not None and run.running and now - run.updated > STALE:
        run.state, run.error = "error", "The run stopped: the process running it went away."
    return run


def admit(runs: list[Run], forget: Callable[[str], object], *, visitor: str, url: str, now: float, limit: int,
          window: float) -> Run:
    """The new run for `visitor` among every run kept (`runs`), forgetting the ones past their time with `forget`;
    RunRefused when it may not start. The caller holds the store's lock and saves the run."""
    runs = _evict(runs, forget, now, max(RUN_TTL, window))
    if any(r.running and r.visitor == visitor for r in runs):
        raise RunRefused("A check you started is still running: wait for it to finish first.")
    if sum(r.running for r in runs) >= MAX_ACTIVE:
        raise RunRefused("The checker is busy with other people's runs; try again in a minute.")
    starts = sorted(r.started for r in runs if r.visitor == visitor and now - r.started < window)
    if len(starts) >= limit:
        wait = max(1, math.ceil(window - (now - starts[-limit])))
        raise RunRefused(f"You have started {limit} checks recently; try again in {wait} s.")
    return Run(secrets.token_urlsafe(16), visitor, url, now)


def _evict(runs: list[Run], forget: Callable[[str], object], now: float, ttl: float) -> list[Run]:
    """Forget finished runs after `ttl`, and the oldest past MAX_RUNS_KEPT; the runs still kept."""
    keep = []
    finished = sorted((r for r in runs if not r.running), key=lambda r: r.finished)
    excess = max(0, len(runs) - MAX_RUNS_KEPT)
    for run in finished:
        if now - max(run.finished, run.started) > ttl or excess > 0:
            excess -= 1
            forget(run.id)
        else:
            keep.append(run)
    return keep + [r for r in runs if r.running]
