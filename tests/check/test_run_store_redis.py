"""/check's runs in Redis: replicas on several hosts see every run, and the per-visitor limit holds across all of
them, admitting exactly one of two runs started at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from loopback.redis_server import RedisServer
from mrtr import FakeClock
from web.check_page import CheckInputError, RedisRunStore


@pytest.fixture
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


def replica(url: str, clock: FakeClock) -> RedisRunStore:
    return RedisRunStore(redis.Redis.from_url(url), clock)


def test_a_run_started_on_one_replica_is_seen_and_counted_on_another(redis_url: str) -> None:
    clock = FakeClock(1_790_000_000.0)
    a, b = replica(redis_url, clock), replica(redis_url, clock)
    run = a.start("visitor-1", "http://127.0.0.1:9/mcp", limit=2, window=600)
    assert b.get(run.id) == a.get(run.id) and b.get(run.id).running  # type: ignore[union-attr]
    with pytest.raises(CheckInputError, match="still running"):
        b.start("visitor-1", "http://127.0.0.1:9/mcp", limit=2, window=600)
    run.state, run.finished = "done", clock()
    a.save(run)
    second = b.start("visitor-1", "http://127.0.0.1:9/mcp", limit=2, window=600)
    second.state, second.finished = "done", clock()
    b.save(second)
    with pytest.raises(CheckInputError, match="started 2 checks recently"):
        a.start("visitor-1", "http://127.0.0.1:9/mcp", limit=2, window=600)


def test_two_starts_at_once_on_two_replicas_admit_one(redis_url: str) -> None:
    clock = FakeClock(1_790_000_000.0)
    stores = [replica(redis_url, clock) for _ in range(2)]
    outcomes: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    def start(store: RedisRunStore) -> None:
        barrier.wait()
        try:
            store.start("visitor-2", "http://127.0.0.1:9/mcp", limit=5, window=600)
            result = "started"
        except CheckInputError:
            result = "refused"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=start, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["refused", "started"]


def test_a_redis_that_is_away_refuses_a_run_in_words() -> None:
    # No retries: redis-py's default backs off for seconds first (RedisRunStore.from_url keeps that default).
    client = redis.Redis(port=1, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    store = RedisRunStore(client, FakeClock(0.0))
    with pytest.raises(CheckInputError, match="cannot reach its store"):
        store.start("v", "http://127.0.0.1:9/mcp", limit=1, window=600)
    assert store.get("A" * 22) is None
