"""RedisStore against a real redis-server: atomic single use, expiry by TTL, counting by prefix.

Each test gets its own key prefix on one shared throwaway server. No Flask here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from loopback.redis_server import RedisServer
from mrtr import FakeClock, KeyRing, Server
from mrtr_stores.redeemed_redis import RedisStore
from mrtr_toolsets.lesson import lesson_catalog
from tests.mrtr.helpers import ACCEPT, assert_frozen_rejection, deploy

NOW = 1_790_000_000.0


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@pytest.fixture
def store(client: redis.Redis, request: pytest.FixtureRequest) -> RedisStore:
    return RedisStore(client, prefix=f"test:{request.node.name}:")


def test_first_redeem_wins_and_the_second_is_refused(store: RedisStore) -> None:
    assert store.redeem("abc", NOW + 60, NOW) is True
    assert store.redeem("abc", NOW + 60, NOW) is False
    assert store.redeem("other", NOW + 60, NOW) is True
    assert len(store) == 2


def test_key_lives_until_the_ticket_expires_measured_on_the_callers_clock(store: RedisStore,
                                                                          client: redis.Redis) -> None:
    # The caller's clock is far from Redis's: the TTL must still be exp - now.
    store.redeem("t", NOW + 90, NOW)
    ttl_ms = client.pttl(store.key("t"))
    assert 89_000 < ttl_ms <= 90_000


def test_expired_ids_are_evicted_by_redis(store: RedisStore) -> None:
    assert store.redeem("short", NOW + 0.15, NOW)
    assert len(store) == 1
    deadline = time.monotonic() + 5
    while len(store) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(store) == 0
    # Only possible because the ticket itself has expired: the expiry check refuses it first.
    assert store.redeem("short", NOW + 0.15, NOW)


def test_a_ticket_at_its_expiry_still_gets_a_positive_ttl(store: RedisStore, client: redis.Redis) -> None:
    assert store.redeem("edge", NOW, NOW) is True
    assert client.pttl(store.key("edge")) in (-2, 0, 1)  # gone or about to go; never persisted forever


def test_len_counts_only_its_own_prefix_even_with_glob_characters(client: redis.Redis) -> None:
    weird = RedisStore(client, prefix="t*[x]?:")
    plain = RedisStore(client, prefix="t-plain:")
    client.set("t-unrelated", b"1", px=60_000)
    for i in range(25):
        assert weird.redeem(f"w{i}", NOW + 60, NOW)
    assert plain.redeem("p", NOW + 60, NOW)
    assert len(weird) == 25
    assert len(plain) == 1


def test_racing_threads_redeem_one_ticket_exactly_once(redis_url: str) -> None:
    store = RedisStore.from_url(redis_url, prefix="race:")
    wins: list[bool] = []
    lock = threading.Lock()
    barrier = threading.Barrier(16, timeout=10)

    def racer() -> None:
        barrier.wait()
        won = store.redeem("contested", NOW + 60, NOW)
        with lock:
            wins.append(won)

    threads = [threading.Thread(target=racer) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sorted(wins) == [False] * 15 + [True]


def test_empty_prefix_is_refused(client: redis.Redis) -> None:
    with pytest.raises(ValueError):
        RedisStore(client, prefix="")


def test_two_servers_sharing_redis_refuse_a_replay_across_replicas(redis_url: str) -> None:
    clock = FakeClock(NOW)
    ring = KeyRing(["redis-test-key-0123456789abcdef0123456789abcdef"])
    a = Server(ring=ring, store=RedisStore.from_url(redis_url, prefix="replicas:"), clock=clock,
               catalog=lesson_catalog(), name="A")
    b = Server(ring=ring, store=RedisStore.from_url(redis_url, prefix="replicas:"), clock=clock,
               catalog=lesson_catalog(), name="B")
    first = a.handle(deploy(id=1), principal="bob").response
    ticket = first["result"]["requestState"]
    retry = deploy(id=2, requestState=ticket, inputResponses=ACCEPT)
    done = b.handle(retry, principal="bob").response
    assert done["result"]["content"][0]["text"] == "deployed to staging"
    assert_frozen_rejection(a.handle(retry, principal="bob").response)
    assert_frozen_rejection(b.handle(retry, principal="bob").response)
