"""/check's runs in the background: each goes on in a thread of the process that started it, plays
`moves.check.run_check` against the one vetted address (web.check.hosts), and saves its progress to the run store
(`mrtr_stores.check_runs`, opened here for the app) on every event, so every worker and replica can draw it.

Tokens go into the run's target and nowhere else: never logged, never saved (what a server echoes back is
redacted), never kept after the run ends. A late move waits at most `MRTR_CHECK_MAX_WAIT` seconds for a ticket
to expire; each request at most `MRTR_CHECK_TIMEOUT`, and a time-out stops the run. A failure of ours ends the
run with a plain message, never a traceback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import overload

from flask import Flask, current_app

from moves.catalog import Move
from moves.check import CheckError, CheckOptions, CheckStopped, Events, MoveRow, run_check
from moves.findings import page_record
from moves.probes import ProbeResult
from moves.targets.http import HttpTarget
from moves.targets.remote import DEFAULT_TIMEOUT, Timing
from mrtr import JSON, JSONObject
from mrtr_settings.environment import Settings
from mrtr_settings.stores import open_check_runs
from mrtr_stores.check_runs import Run, RunStore, RunStoreDown
from web.site.services import SETTINGS_KEY

log = logging.getLogger("mrtr.check")

RUNS_KEY = "mrtr.check_runs"
#: How often the late wait's progress is saved (seconds).
WAIT_SAVE_EVERY = 0.5
#: What the late move's wait for unreadable expiries is called on the page (the CLI's --late-after).
LATE_AFTER_FIELD = "“Late move after”"
#: What skipping the late moves is called on the page (the CLI's --skip-late).
SKIP_LATE_FIELD = "“Skip the late moves”"
#: This process's runs going on, by id: their threads, for tests and shutdown.
THREADS: dict[str, threading.Thread] = {}


def open_runs(app: Flask) -> None:
    """The app's run store, from its settings (SQLite in the state directory, or Redis)."""
    app.extensions[RUNS_KEY] = open_check_runs(app.extensions[SETTINGS_KEY])


def runs() -> RunStore:
    store: RunStore = current_app.extensions[RUNS_KEY]
    return store


@dataclass(frozen=True)
class Order:
    """What a run plays: the vetted URL and the address to connect to, the checker's options, the moves, and the
    late move's wait for unreadable expiries (None: the checker's own)."""

    url: str
    address: str
    options: CheckOptions
    moves: Sequence[Move]
    late_after: float | None = None


def start(run: Run, order: Order, tokens: tuple[str, str]) -> None:
    """Play `order` for the admitted `run` in a new thread of this process, with the two tokens (owner, other)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    thread = threading.Thread(target=_execute, args=(app, runs(), run, order, tokens), name=f"check-{run.id[:6]}",
                              daemon=True)
    THREADS[run.id] = thread
    thread.start()
    log.info("check run %s started for %s", run.id[:6], order.url)


@dataclass
class _Progress:
    """A run's events from the checker, kept in the run and saved as they come; no token in anything kept."""

    store: RunStore
    run: Run
    secrets: tuple[str, ...]
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_wait: float = 0.0

    def events(self) -> Events:
        return Events(phase=self.phase, move_done=self.move_done, probe_done=self.probe_done, wait=self.wait,
                      planned=self.planned)

    def planned(self, text: str) -> None:
        with self.lock:
            self.run.plan = text[:1].upper() + text[1:] + "."
            self.save()

    def save(self) -> None:
        try:
            self.store.save(self.run)
        except RunStoreDown as exc:
            log.error("check run %s: could not save progress: %s", self.run.id[:6], exc)

    def phase(self, text: str) -> None:
        with self.lock:
            self.run.phase, self.run.waiting = text[:1].upper() + text[1:], False
            self.save()

    def move_done(self, row: MoveRow, index: int, total: int) -> None:
        exchange = [redact(message, self.secrets) for message in row.exchange]
        with self.lock:
            self.run.rows.append({"move": row.move, "title": row.title, "expected": row.expected,
                                  "observed": row.observed, "verdict": row.verdict,
                                  "detail": redact(row.detail, self.secrets), "stops_at": row.stops_at,
                                  "exchange": exchange, "index": index})
            # Moves end in any order when played concurrently: the page lists them in the catalogue's.
            self.run.rows.sort(key=lambda r: r.get("index", 0))
            self.run.total = total
            self.save()

    def resync(self, rows: Sequence[MoveRow]) -> None:
        """Show exactly `rows` (a stopped report's), dropping any that ended after the time-out stopped the run."""
        with self.lock:
            total, self.run.rows = self.run.total, []
        for index, row in enumerate(rows, 1):
            self.move_done(row, index, total)

    def probe_done(self, probe: ProbeResult) -> None:
        with self.lock:
            self.run.probes.append({"probe": probe.probe, "title": probe.title, "ok": probe.ok,
                                    "detail": redact(probe.detail, self.secrets)})
            self.save()

    def wait(self, waited: float, total: float) -> None:
        with self.lock:
            self.run.waiting, self.run.waited, self.run.wait_total = True, waited, total
            if waited >= total or self.store.clock() - self.last_wait >= WAIT_SAVE_EVERY:
                self.last_wait = self.store.clock()
                self.save()

    def explored(self, record: JSONObject) -> None:
        with self.lock:
            self.run.exploration = record

    def end(self, state: str, *, summary: str = "", error: str = "") -> None:
        with self.lock:
            self.run.state, self.run.summary, self.run.error = state, summary, error

    def close(self) -> None:
        with self.lock:
            self.run.waiting = False
            self.run.finished = self.store.clock()
            self.save()


def _target(settings: Settings, order: Order, tokens: tuple[str, str]) -> HttpTarget:
    # MRTR_CHECK_TIMEOUT bounds each request here as it does for the CLI; a time-out stops the run (CheckStopped).
    timing = Timing(late_after=order.late_after, skip_late=order.options.skip_late, max_wait=settings.check_max_wait,
                    late_after_name=LATE_AFTER_FIELD, late_after_hint=f"fill in {LATE_AFTER_FIELD} with seconds",
                    skip_late_name=SKIP_LATE_FIELD)
    return HttpTarget(order.url, [("owner", tokens[0]), ("other", tokens[1])], connect_to=order.address,
                      timeout=settings.check_timeout or DEFAULT_TIMEOUT, timing=timing)


def _execute(app: Flask, store: RunStore, run: Run, order: Order, tokens: tuple[str, str]) -> None:
    """The background run. Tokens live in the target only, and go with it when this returns (the redaction
    of the kept messages holds them as long as the target does)."""
    progress = _Progress(store, run, tuple(t for t in tokens if t))
    target = None
    try:
        target = _target(app.extensions[SETTINGS_KEY], order, tokens)
        tokens = ("", "")
        report = run_check(target, order.options, moves=order.moves, events=progress.events(),
                           secrets=progress.secrets)
        if report.explored is not None:
            progress.explored(page_record(report.explored, order.options.budget,
                                          lambda value: redact(value, progress.secrets)))
        progress.end("done", summary=report.summary())
    except CheckStopped as exc:  # the rows as the report keeps them: those played before the time-out, in order
        progress.resync(exc.report.moves)
        progress.end("error", error=redact(str(exc), progress.secrets))
    except CheckError as exc:
        progress.end("error", error=redact(str(exc), progress.secrets))
    except Exception as exc:  # never a traceback on the page; the log gets the type, never a token
        log.error("check run %s failed: %s", run.id[:6], type(exc).__name__)
        progress.end("error", error="The checker failed unexpectedly; nothing more is known.")
    finally:
        if target is not None:
            target.close()
        progress.close()
        THREADS.pop(run.id, None)


@overload
def redact(value: str, secret_values: tuple[str, ...]) -> str: ...


@overload
def redact(value: JSON, secret_values: tuple[str, ...]) -> JSON: ...


def redact(value: JSON, secret_values: tuple[str, ...]) -> JSON:
    """`value` with every occurrence of a token replaced: a server could echo one back in its answer."""
    if isinstance(value, str):
        for secret in secret_values:
            value = value.replace(secret, "[token]")
        return value
    if isinstance(value, list):
        return [redact(v, secret_values) for v in value]
    if isinstance(value, dict):
        return {k: redact(v, secret_values) for k, v in value.items()}
    return value
