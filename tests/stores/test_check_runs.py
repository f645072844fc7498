"""/check's run stores keep one contract (`mrtr_stores.check_runs.RunStore`), in SQLite (the processes of one
machine) and in Redis (replicas on several hosts): a run saved by one process is read by another, admission is
one run at a time per visitor, a per-visitor rate and a cap for everyone, even when two processes admit at once;
a run whose process went away reads as failed, finished runs are forgotten, and a store that is away refuses a
new run in words and reads as no run."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mrtr import FakeClock
from mrtr_stores.check_runs import MAX_ACTIVE, RUN_TTL, STALE, STORE_AWAY, Run, RunRefused, RunStoreDown
from mrtr_stores.check_runs_redis import RedisRunStore
from mrtr_stores.check_runs_sqlite import SqliteRunStore
from tests.stores.conftest import BACKENDS, away_redis, on_new_thread, spoil

URL = "http://127.0.0.1:9/mcp"


@pytest.fixture(params=BACKENDS)
def replicas(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> tuple[Any, Any]:
    """Two processes' views of one store, on one clock."""
    if request.param == "sqlite":
        return SqliteRunStore(tmp_path / "runs", clock), SqliteRunStore(tmp_path / "runs", clock)
    import redis

    one = request.getfixturevalue("redis_client")
    two = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    request.addfinalizer(two.close)
    return RedisRunStore(one, clock), RedisRunStore(two, clock)


def finish(store: Any, run: Run, clock: FakeClock) -> None:
    run.state, run.finished = "done", clock()
    store.save(run)


def test_a_run_saved_by_one_process_is_read_by_another(replicas: tuple[Any, Any], clock: FakeClock) -> None:
    a, b = replicas
    run = a.start("visitor-1", URL, limit=5, window=600)
    assert b.get(run.id) == a.get(run.id) and b.get(run.id).running
    run.rows.append({"move": "honest", "title": "Honest retry", "expected": "completed", "observed": "completed",
                     "verdict": "pass", "detail": "", "stops_at": ""})
    a.save(run)
    assert b.get(run.id).rows == run.rows
    assert b.get("../../etc/passwd") is None and b.get("x" * 100) is None and b.get("A" * 22) is None


def test_runs_are_one_at_a_time_and_rate_limited_per_visitor(replicas: tuple[Any, Any], clock: FakeClock) -> None:
    a, b = replicas
    first = a.start("v1", URL, limit=2, window=60)
    with pytest.raises(RunRefused, match="still running"):
        b.start("v1", URL, limit=2, window=60)
    finish(a, first, clock)
    finish(b, b.start("v1", URL, limit=2, window=60), clock)
    with pytest.raises(RunRefused, match="started 2 checks recently; try again in 60 s"):
        a.start("v1", URL, limit=2, window=60)
    finish(a, a.start("v2", URL, limit=2, window=60), clock)  # someone else is not limited
    clock.advance(60)
    assert b.start("v1", URL, limit=2, window=60).running
    for n in range(MAX_ACTIVE - 1):
        a.start(f"w{n}", URL, limit=2, window=60)
    with pytest.raises(RunRefused, match="busy"):
        b.start("w9", URL, limit=2, window=60)


def test_two_starts_at_once_in_two_processes_admit_one(replicas: tuple[Any, Any]) -> None:
    barrier = threading.Barrier(2)
    outcomes: list[str] = []
    lock = threading.Lock()

    def start(store: Any) -> None:
        barrier.wait(timeout=10)
        try:
            store.start("visitor-2", URL, limit=5, window=600)
            result = "started"
        except RunRefused:
            result = "refused"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=start, args=(s,)) for s in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["refused", "started"]


def test_a_run_whose_process_went_away_reads_as_failed_and_old_runs_are_forgotten(
        replicas: tuple[Any, Any], clock: FakeClock) -> None:
    a, b = replicas
    run = a.start("v1", URL, limit=5, window=60)
    clock.advance(STALE + 1)
    stale = b.get(run.id)
    assert stale.state == "error" and "went away" in stale.error
    b.start("v1", URL, limit=5, window=60)  # the dead run no longer blocks its visitor
    clock.advance(RUN_TTL + 1)
    a.start("v2", URL, limit=5, window=60)  # admitting sweeps what is past its time
    assert b.get(run.id) is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_that_is_away_refuses_a_run_in_words_and_reads_as_no_run(backend: str, clock: FakeClock,
                                                                          tmp_path: Path) -> None:
    if backend == "sqlite":
        store: Any = SqliteRunStore(tmp_path / "runs", clock)
        run = store.start("v", URL, limit=1, window=600)
        spoil(store.path)
        check = on_new_thread
    else:
        store = RedisRunStore(away_redis(), clock)
        run = Run("A" * 22, "v", URL, clock())
        check = lambda work: work()  # noqa: E731 - one connection either way
    with pytest.raises(RunRefused, match=STORE_AWAY):
        check(lambda: store.start("w", URL, limit=1, window=600))
    assert check(lambda: store.get(run.id)) is None
    with pytest.raises(RunStoreDown):
        check(lambda: store.save(run))
