"""The redeemed-ticket stores keep one contract (`mrtr.RedeemedStore`): the first redemption of an id wins and every
later one is refused until the ticket expires, even when many threads race; a store that cannot be reached says
so with `StoreUnavailable`, so single use fails closed. Run against memory, SQLite and Redis. (Eviction, which
each backend does its own way, is tested beside each: tests/mrtr/test_stores.py, tests/mrtr/test_redis_store.py.)"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mrtr import MemoryStore, StoreUnavailable
from mrtr_stores.redeemed_redis import RedisStore
from mrtr_stores.redeemed_sqlite import SqliteStore
from tests.stores.conftest import BACKENDS, away_redis, on_new_thread, spoil

NOW = 1_790_000_000.0


@pytest.fixture(params=["memory", *BACKENDS])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "sqlite":
        return SqliteStore(tmp_path / "redeemed.sqlite3")
    return RedisStore(request.getfixturevalue("redis_client"), prefix="contract:")


def test_an_id_is_redeemed_once_and_others_stay_free(store: Any) -> None:
    assert store.redeem("a", NOW + 60, NOW) is True
    assert store.redeem("a", NOW + 60, NOW + 1) is False
    assert store.redeem("b", NOW + 60, NOW + 2) is True
    assert len(store) == 2


def test_racing_threads_redeem_one_id_exactly_once(store: Any) -> None:
    barrier = threading.Barrier(8)
    wins: list[bool] = []
    lock = threading.Lock()

    def redeem() -> None:
        barrier.wait(timeout=10)
        won = store.redeem("raced", NOW + 60, NOW)
        with lock:
            wins.append(won)

    threads = [threading.Thread(target=redeem) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(wins) == [False] * 7 + [True]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_that_is_away_says_so(backend: str, tmp_path: Path) -> None:
    if backend == "sqlite":
        path = tmp_path / "redeemed.sqlite3"
        store: Any = SqliteStore(path)
        spoil(path)
        with pytest.raises(StoreUnavailable):
            on_new_thread(lambda: store.redeem("a", NOW + 60, NOW))
    else:
        with pytest.raises(StoreUnavailable):
            RedisStore(away_redis()).redeem("a", NOW + 60, NOW)
