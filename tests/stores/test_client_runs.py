"""/check-client's run stores keep one contract (`mrtr_stores.client_runs.ClientRunStore`), in SQLite (the processes
of one machine) and in Redis (replicas on several hosts): a run started by one process is fed and read by another;
every request is counted exactly once, per tool, even when many arrive at once on two processes; a run takes at
most MAX_CALLS requests and MAX_RUN_BYTES of bodies; it ends after LIFETIME and is forgotten; starts are capped
per visitor and for everyone; a store that is away refuses in words and reads as no run."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from mrtr import FakeClock
from mrtr_stores import client_runs
from mrtr_stores.client_runs import (
    LIFETIME,
    MAX_CALLS,
    MAX_LIVE,
    MAX_RUN_BYTES,
    RUN_ID,
    STORE_AWAY,
    CallRefused,
    ClientRunRefused,
    RunGone,
)
from mrtr_stores.client_runs_redis import RedisClientRuns
from mrtr_stores.client_runs_sqlite import SqliteClientRuns
from tests.stores.conftest import BACKENDS, away_redis, on_new_thread, spoil


@pytest.fixture(params=BACKENDS)
def replicas(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> tuple[Any, Any]:
    """Two processes' views of one store, on one clock."""
    if request.param == "sqlite":
        return SqliteClientRuns(tmp_path / "runs", clock), SqliteClientRuns(tmp_path / "runs", clock)
    import redis

    one = request.getfixturevalue("redis_client")
    two = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    request.addfinalizer(two.close)
    return RedisClientRuns(one, clock), RedisClientRuns(two, clock)


def entry(tool: str) -> Any:
    return lambda n, at: json.dumps({"tool": tool, "n": n, "at": at})


def test_a_run_started_by_one_process_is_fed_and_read_by_another(replicas: tuple[Any, Any],
                                                                  clock: FakeClock) -> None:
    a, b = replicas
    run = a.start("visitor-1", limit=5, window=600)
    assert RUN_ID.fullmatch(run.id) and run.expires == clock() + LIFETIME
    assert b.get(run.id) == run
    clock.advance(1.5)
    assert json.loads(b.record(run.id, "grade_plain", 10, entry("grade_plain"))) == {
        "tool": "grade_plain", "n": 1, "at": clock()}
    a.record(run.id, "", 5, entry(""))  # tools/list: no tool
    a.record(run.id, "grade_plain", 10, entry("grade_plain"))
    assert [json.loads(t)["n"] for t in a.calls(run.id)] == [1, 1, 2]
    assert b.get(run.id).calls == 3 and b.get(run.id).bytes == 25
    b.note(run.id, "x" * (client_runs.MAX_OUTPUT + 10), 0, True)
    seen = a.get(run.id)
    assert len(seen.output) == client_runs.MAX_OUTPUT and seen.exit_code == 0 and seen.choices_known
    for bad in ("../../etc/passwd", "x" * 100, "A" * 31, run.id[:-1] + "!"):
        assert b.get(bad) is None and b.calls(bad) == []
        with pytest.raises(RunGone):
            b.record(bad, "t", 1, entry("t"))


def test_requests_at_once_on_two_processes_are_each_counted_once(replicas: tuple[Any, Any]) -> None:
    a, b = replicas
    run = a.start("v", limit=5, window=600)
    threads = [threading.Thread(target=(a, b)[i % 2].record, args=(run.id, "grade_ticket_echo", 1,
                                                                   entry("grade_ticket_echo")))
               for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    counts = sorted(json.loads(t)["n"] for t in b.calls(run.id))
    assert counts == list(range(1, 41)) and a.get(run.id).calls == 40


def test_a_run_takes_at_most_its_calls_and_bytes(replicas: tuple[Any, Any]) -> None:
    a, b = replicas
    run = a.start("v", limit=5, window=600)
    for _ in range(MAX_CALLS):
        a.record(run.id, "", 1, entry(""))
    with pytest.raises(CallRefused, match=f"its {MAX_CALLS} requests"):
        b.record(run.id, "", 1, entry(""))
    other = a.start("w", limit=5, window=600)
    a.record(other.id, "", MAX_RUN_BYTES - 10, entry(""))
    with pytest.raises(CallRefused, match="kB of requests"):
        b.record(other.id, "", 11, entry(""))
    assert len(b.calls(run.id)) == MAX_CALLS and len(b.calls(other.id)) == 1


def test_a_run_ends_after_its_lifetime_and_is_forgotten(replicas: tuple[Any, Any], clock: FakeClock) -> None:
    a, b = replicas
    run = a.start("v", limit=5, window=600)
    a.record(run.id, "", 1, entry(""))
    clock.advance(LIFETIME - 1)
    assert b.get(run.id) is not None
    clock.advance(1)
    assert b.get(run.id) is None and b.calls(run.id) == []
    with pytest.raises(RunGone):
        b.record(run.id, "", 1, entry(""))
    with pytest.raises(RunGone):
        b.note(run.id, "out", 0, False)
    if isinstance(a, SqliteClientRuns):  # the late request itself made the file forget the run's rows
        assert on_disk(a, run.id) == (0, 0)
    a.start("w", limit=5, window=600)  # a start forgets the ended run altogether
    assert b.get(run.id) is None


def test_starts_are_capped_per_visitor_and_for_everyone(replicas: tuple[Any, Any], clock: FakeClock) -> None:
    a, b = replicas
    a.start("v1", limit=2, window=60)
    b.start("v1", limit=2, window=60)
    with pytest.raises(ClientRunRefused, match="started 2 grading runs recently; try again in 60 s") as refused:
        a.start("v1", limit=2, window=60)
    assert not refused.value.busy
    clock.advance(60)
    a.start("v1", limit=2, window=60)
    for i in range(MAX_LIVE - 3):
        (a, b)[i % 2].start(f"other-{i}", limit=2, window=60)
    with pytest.raises(ClientRunRefused, match=f"grading {MAX_LIVE} runs already") as full:
        b.start("newcomer", limit=2, window=60)
    assert full.value.busy
    clock.advance(LIFETIME)  # every run ended: room again
    assert b.start("newcomer", limit=2, window=60).visitor == "newcomer"


def test_starts_at_once_on_two_processes_admit_no_more_than_the_limit(replicas: tuple[Any, Any]) -> None:
    a, b = replicas
    admitted: list[str] = []
    refused: list[str] = []

    def start(store: Any) -> None:
        try:
            admitted.append(store.start("v", limit=3, window=600).id)
        except ClientRunRefused as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=start, args=((a, b)[i % 2],)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(admitted) == 3 and len(set(admitted)) == 3 and len(refused) == 9


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_that_is_away_refuses_in_words_and_reads_as_no_run(backend: str, clock: FakeClock,
                                                                   tmp_path: Path) -> None:
    if backend == "sqlite":
        store: Any = SqliteClientRuns(tmp_path / "runs", clock)
        rid = store.start("v", limit=5, window=600).id
        spoil(store.path)
        check = on_new_thread  # a new connection meets the spoiled file
    else:
        store = RedisClientRuns(away_redis(), clock)
        rid = "A" * 32
        check = lambda work: work()  # noqa: E731 - one connection either way
    with pytest.raises(ClientRunRefused, match=STORE_AWAY):
        check(lambda: store.start("w", limit=5, window=600))
    assert check(lambda: store.get(rid)) is None and check(lambda: store.calls(rid)) == []
    with pytest.raises(RunGone):
        check(lambda: store.record(rid, "", 1, entry("")))


def on_disk(store: SqliteClientRuns, run_id: str) -> tuple[int, int]:
    """The run's rows and its requests' rows still in the SQLite file."""
    db = store._connections.get()
    return (db.execute("SELECT COUNT(*) FROM client_runs WHERE id = ?", (run_id,)).fetchone()[0],
            db.execute("SELECT COUNT(*) FROM client_calls WHERE run_id = ?", (run_id,)).fetchone()[0])
