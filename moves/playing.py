"""Playing the moves and the probes of one check: one after another, or several at a time (moves.schedule) on a target
that can (`for_move`: HTTP and stdio), and each one's row as the report keeps it (`move_row`). Played several at a
time, the exploration (moves/explore.py) is one more job among them, so that its waits overlap theirs.

Whatever the order they ran in, the results come back in catalogue order, so the report reads the same. Each row is
handed to `Events` as its move ends. The first request not answered in time stops the run: nothing more starts, the
late waits give up, and `played` says where it stopped. Nothing here renders a report or parses a command line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from moves.calls import outcome_of
from moves.catalog import NOT_A_YES, Move
from moves.engine import Call, MoveResult, play
from moves.exchange import exchange_of
from moves.explore import Exploration
from moves.probes import (
    ProbeExchange,
    ProbeResult,
    Recorder,
    TargetTimedOut,
    counter,
    probe_capability,
    probe_missing_answer,
    probe_version,
)
from moves.replays import kept_result
from moves.report import CheckOptions, Events, MoveRow
from moves.schedule import Countdown, Schedule, Slots
from moves.target import Outcome, Reply, Target
from moves.wording import explain


def move_row(result: MoveResult, move: Move, options: CheckOptions, target: Target) -> MoveRow:
    observed = Outcome(result.outcome).value
    detail = result.detail
    ok = bool(result.ok)
    required = True
    excused = ""
    timing = getattr(target, "timing", None)
    if result.outcome == Outcome.NOT_RUN:
        reason = getattr(timing, "skip_reason", None)
        if move.timing != "in-time" and reason:
            detail = reason
        if move.timing != "in-time" and options.skip_late:
            required = False
    elif result.warn:
        required = False
    elif not ok and options.allow_replay and move.requires == "single-use":
        required = False
        excused = "allowed by --allow-replay: "
    if ok and result.note:
        detail = f"{detail}; {result.note}"
    waited = getattr(timing, "waited", None)
    if move.timing != "in-time" and waited and result.outcome != Outcome.NOT_RUN:
        detail = f"{detail} ({waited})"
    row = MoveRow(move.slug, move.title, Outcome(move.expect).value, observed, ok, detail, required,
                  move.stops_at, exchange_of(result))
    # What was sent, what came back, what to fix (moves/wording.py).
    row.detail = excused + explain(move, result, detail, row.verdict, owner=str(getattr(target, "owner", "the owner")),
                                   other=str(getattr(target, "other", "the other principal")))
    return row


#: The probes that send requests, in report order (the two that read the run over are judged after it).
PROBES: tuple[tuple[str, Callable[[Target, Call, Callable[[], int]], ProbeResult]], ...] = (
    ("capability", probe_capability), ("version", probe_version), ("missing-answer", probe_missing_answer))


@dataclass
class Played:
    """One move or probe as played: its result, its row, the exchanges it sent, its seconds, and why the run
    stopped there ("" when it did not)."""

    move: Move | None = None
    result: MoveResult | None = None  # None for a probe, or at a time-out
    row: MoveRow | None = None
    probe: ProbeResult | None = None
    explored: Exploration | None = None
    exchanges: list[ProbeExchange] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str = ""


@dataclass(frozen=True)
class _Job:
    """A move to play, a probe (by slug) to run, or the exploration; `ids`: where a probe's request ids start."""

    move: Move | None = None
    probe: str = ""
    ids: int = 1000
    explore: bool = False


@dataclass
class _FirstWork:
    """The catalogue's first move's complete result, played before any other move: an independent piece of work
    that a replay's "kept result" is compared with (moves/replays.py)."""

    reply: Reply | None = None

    def keep(self, index: int, one: Played) -> None:
        if index == 0 and one.result is not None:
            done = [s for s in one.result.steps if outcome_of(s.reply) == Outcome.COMPLETED]
            self.reply = done[-1].reply if done else None


def _play_move(move: Move, target: Target, call: Call, options: CheckOptions, clock: Callable[[], float],
               on_progress: Callable[[float, float], None], first_work: Reply | None = None) -> Played:
    recorder = Recorder(target)
    recorder.context = f"move {move.slug}"
    started = clock()
    try:
        result = play(move, recorder, call, on_progress=on_progress)
    except TargetTimedOut as exc:
        row = MoveRow(move.slug, move.title, Outcome(move.expect).value, Outcome.ERROR.value, False,
                      f"no answer in time ({exc.why}); the run stopped here", True, move.stops_at,
                      seconds=clock() - started, timed_out=True)
        return Played(move, None, row, exchanges=recorder.exchanges, seconds=row.seconds,
                      stopped=f"{target.label} did not answer in time during {exc.context}: {exc.why}")
    # A replay answered with the same principal's own earlier result, unchanged, did no second piece of work.
    result = kept_result(result, first_work)
    row = move_row(result, move, options, target)
    row.seconds = clock() - started
    return Played(move, result, row, exchanges=recorder.exchanges, seconds=row.seconds)


def _explore_job(exploring: Callable[[Target, Callable[[], bool]], Exploration], target: Target,
                 clock: Callable[[], float], stopped: Callable[[], bool]) -> Played:
    started = clock()
    explored = exploring(target, stopped)
    return Played(explored=explored, seconds=clock() - started)


def _run_probe(job: _Job, target: Target, call: Call, clock: Callable[[], float]) -> Played:
    recorder = Recorder(target)
    recorder.context = f"probe {job.probe}"
    started = clock()
    probe = dict(PROBES)[job.probe]
    try:
        result = probe(recorder, call, counter(job.ids))
    except TargetTimedOut as exc:
        # The probe gets its row too (a JUnit <error>), so CI shows where the run stopped.
        return Played(probe=ProbeResult(job.probe, False, f"no answer in time ({exc.why}); the run stopped here"),
                      exchanges=recorder.exchanges, seconds=clock() - started,
                      stopped=f"{target.label} did not answer in time during {exc.context}: {exc.why}")
    return Played(probe=result, exchanges=recorder.exchanges, seconds=clock() - started)


def cost(job: _Job) -> int:
    """About how many requests a job sends one after another (its controls and the move it needs first included)."""
    move = job.move
    if job.explore:
        return 1000  # hundreds of calls, one after another: started as soon as the first move has played
    if move is None:
        return 3 if job.probe == "missing-answer" else 1
    shapes = {"edit-each": 8, "junk": 6, "unsigned": 3}.get(move.ticket, 1)
    controls = 2 * (move.answer in NOT_A_YES) + 2 * (move.sender == "other") + 2 * move.distinct_error
    first = 0 if move.before is None else 1 + (move.before_ticket == "new")
    return 1 + shapes + controls + first + (move.copies > 1)


def _starts_first(job: _Job) -> tuple[bool, int]:
    """Timed moves first (their real wait starts at their ticket's minting), then the longest: the last job to end
    then ends soon after the others."""
    return job.move is None or job.move.timing == "in-time", -cost(job)


def plan(catalog: Sequence[Move], options: CheckOptions, timing: object, *, per_request: float,
         lifetime: float | None, concurrent: bool) -> str:
    """How long the check will take, in words, from what is known once the tool is chosen: the seconds a request
    took so far, the ticket's lifetime when it is readable (else the wait the user set), the late moves' fate."""
    jobs = [_Job(move=m) for m in catalog] + [_Job(probe=slug) for slug, _ in PROBES]
    width = max(1, options.concurrency) if concurrent else 1
    timed = [m for m in catalog if m.timing != "in-time"]
    seconds = per_request * sum(cost(j) for j in jobs if j.move is None or j.move.timing == "in-time") / width
    skip_name = getattr(timing, "skip_late_name", "--skip-late")
    late_after = getattr(timing, "late_after", None)
    wait = lifetime if lifetime is not None else late_after
    if not timed:
        why = ""
    elif options.skip_late:
        why = "; the late moves are skipped"
    elif wait is None:
        why = (f"; the ticket's expiry is unreadable, so the late moves will not run unless "
               f"{getattr(timing, 'late_after_name', '--late-after')} is set")
    else:
        whose = f"the ticket lives {wait:.0f} s" if lifetime is not None else f"the late moves wait {wait:.0f} s"
        why = f"; {whose} and the late moves wait it out ({skip_name} leaves them out)"
        late = wait + 1.0 + 3 * per_request
        seconds = max(seconds, late) if concurrent else seconds + late
    how = f"{width} at a time" if width > 1 else "one at a time"
    return f"about {duration(seconds)}: {len(catalog)} moves and {len(PROBES) + 2} probes, {how}{why}"


def duration(seconds: float) -> str:
    """Seconds as a person estimates them: "40 s", "2 min", "2.5 min" (to the half minute past 90 s)."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 30) / 2:g} min"


def concurrent(target: Target, options: CheckOptions) -> bool:
    """Whether `play_all` plays several moves at a time on `target` (the exploration among them)."""
    return getattr(target, "for_move", None) is not None and options.concurrency > 1


def play_all(target: Target, call: Call, catalog: Sequence[Move], options: CheckOptions, events: Events,
             clock: Callable[[], float],
             exploring: Callable[[Target, Callable[[], bool]], Exploration] | None = None) -> list[Played | None]:
    """Every move, then every probe that sends requests, played: `options.concurrency` at a time on a target that can
    play several (`for_move`), longest first, else one after another. Results in catalogue order, then the probes';
    None for what never started (an earlier time-out stopped the run). Each row goes to `events` as it ends.

    `exploring`: the exploration, played beside the moves when they are played concurrently (its result last,
    in `Played.explored`), so that its own wait past every round's expiry overlaps theirs; one after another, the
    caller plays it after them."""
    jobs = [_Job(move=m) for m in catalog] + [_Job(probe=slug, ids=1000 + 100 * n) for n, (slug, _) in
                                               enumerate(PROBES)]
    for_move = getattr(target, "for_move", None)
    if for_move is None or not concurrent(target, options):
        return _one_after_another(jobs, target, call, options, events, clock)
    if exploring is not None:
        jobs.append(_Job(explore=True))
    gate = Slots(width=options.concurrency)
    countdown = Countdown(events.wait)
    first = _FirstWork()  # job 0 plays alone, before any job that reads it

    def job(item: _Job, index: int) -> Played:
        view = for_move(gate, index)
        try:
            if item.explore and exploring is not None:
                one = _explore_job(exploring, view, clock, lambda: gate.stopped)
            elif item.move is None:
                one = _run_probe(item, view, call, clock)
            else:
                one = _play_move(item.move, view, call, options, clock, countdown.for_move(index), first.reply)
                first.keep(index, one)
        finally:
            view.close()
        if one.stopped:
            gate.stop()
        return one

    stops: list[int] = []

    def done(index: int, one: Played) -> None:  # after a time-out, only what ended with it
        if not stops:
            _tell(events, one, index, len(catalog))
            stops.extend([index] if one.stopped else [])

    events.phase(f"playing the moves, {options.concurrency} at a time")
    # The catalogue's first move (the honest call) plays before any other move: on a server that remembers requests
    # rather than tickets, it must be the call that does the work, as it is when moves are played one after another.
    # Beside it go only the probes that never call the tool with a ticket (the missing-answer probe retries the same
    # request, so on such a server it must come after the honest call, as it does one at a time).
    beside = [i for i, j in enumerate(jobs) if j.move is None and j.probe in ("capability", "version")]
    return Schedule(job, gate, done).run(jobs, first=[_starts_first(j) for j in jobs], alone=1, beside=beside)


def _one_after_another(jobs: list[_Job], target: Target, call: Call, options: CheckOptions, events: Events,
                       clock: Callable[[], float]) -> list[Played | None]:
    played: list[Played | None] = [None] * len(jobs)
    total = sum(j.move is not None for j in jobs)
    first = _FirstWork()
    for index, item in enumerate(jobs):
        if item.move is not None:
            events.phase(f"playing {item.move.slug}")
            one = _play_move(item.move, target, call, options, clock, events.wait, first.reply)
            first.keep(index, one)
        else:
            events.phase(f"probing {item.probe}")
            one = _run_probe(item, target, call, clock)
        played[index] = one
        _tell(events, one, index, total)
        if one.stopped:
            break
    return played


def _tell(events: Events, one: Played, index: int, total: int) -> None:
    if one.row is not None:
        events.move_done(one.row, index + 1, total)
    elif one.probe is not None:
        events.probe_done(one.probe)
