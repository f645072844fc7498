"""RedisStore against a real redis-server: atomic single use, expiry by TTL, counting by prefix.

Each test gets its own key prefix on one shared throwaway server. No Flask here.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from loopback.redis_server import RedisServer
from mrtr import FakeClock, KeyRing, Server, StoreUnavailable
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


# -- claim, commit, release: a ticket spent in two steps around the work --------------------------------------


def test_a_claim_holds_the_ticket_until_commit_then_it_is_spent(store: RedisStore) -> None:
    assert store.claim("t", NOW + 60, NOW, "a1") == "claimed"
    assert store.claim("t", NOW + 60, NOW, "a2") == "busy"  # another attempt is at work: retry, not "spent"
    store.commit("t", NOW + 60, NOW, "a1")
    assert store.claim("t", NOW + 60, NOW, "a3") == "spent"
    assert store.redeem("t", NOW + 60, NOW) is False


def test_a_released_claim_leaves_the_ticket_unspent_and_only_its_own_attempt_can_release_it(
        store: RedisStore) -> None:
    assert store.claim("t", NOW + 60, NOW, "a1") == "claimed"
    store.release("t", "someone-else")
    assert store.claim("t", NOW + 60, NOW, "a2") == "busy"
    store.release("t", "a1")
    assert store.claim("t", NOW + 60, NOW, "a2") == "claimed"


def test_claim_commit_and_release_work_on_a_redis_that_lost_its_scripts(store: RedisStore,
                                                                         client: redis.Redis) -> None:
    """Each step is one EVALSHA; a Redis restarted since (its script cache empty) answers NOSCRIPT, and the store
    sends the script once and goes on."""
    client.script_flush()
    assert store.claim("t", NOW + 60, NOW, "a1") == "claimed"
    client.script_flush()
    store.release("t", "a1")
    client.script_flush()
    assert store.claim("t", NOW + 60, NOW, "a2") == "claimed"
    client.script_flush()
    store.commit("t", NOW + 60, NOW, "a2")
    assert store.undelivered == 0 and store.claim("t", NOW + 60, NOW, "a3") == "spent"


def test_a_ticket_spent_in_one_step_is_spent_for_claims_too(store: RedisStore) -> None:
    assert store.redeem("t", NOW + 60, NOW) is True
    assert store.claim("t", NOW + 60, NOW, "a1") == "spent"


def test_a_claim_nobody_ends_runs_out_and_a_commit_lasts_the_tickets_life(
        store: RedisStore, client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    store.claim("t", NOW + 90, NOW, "a1")
    assert 0 < client.pttl(store.key("t")) <= 30_000  # the lease, not the ticket's 90 s
    store.commit("t", NOW + 90, NOW, "a1")
    assert 89_000 < client.pttl(store.key("t")) <= 90_000
    monkeypatch.setattr("mrtr_stores.redeemed_redis.LEASE", 0.1)
    store.claim("dead", NOW + 90, NOW, "crashed")
    deadline = time.monotonic() + 5
    while store.claim("dead", NOW + 90, NOW, "next") == "busy":
        assert time.monotonic() < deadline, "the claim never ran out"
        time.sleep(0.05)


def test_racing_attempts_claim_one_ticket_exactly_once(redis_url: str) -> None:
    store = RedisStore.from_url(redis_url, prefix="claim-race:")
    found: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8, timeout=10)

    def racer(n: int) -> None:
        barrier.wait()
        claim = store.claim("contested", NOW + 60, NOW, f"a{n}")
        with lock:
            found.append(claim)

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sorted(found) == ["busy"] * 7 + ["claimed"]


def test_a_redis_frozen_mid_claim_leaves_the_retry_retryable_and_it_completes_exactly_once() -> None:
    """SIGSTOP: the claim times out (the caller answers 503) but lands when Redis wakes; the store releases it
    then, so the same request tried again is claimed and committed once, and every copy after is refused."""
    with RedisServer() as server:
        store = RedisStore.from_url(server.url, prefix="frozen:")
        watcher = redis.Redis.from_url(server.url)
        assert store.claim("warm-up", NOW + 60, NOW, "w") == "claimed"  # the claim script is loaded
        assert server.proc is not None
        server.proc.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                store.claim("t", NOW + 60, NOW, "first")
            assert time.monotonic() - started < 1.0  # a bounded wait, well under a second
        finally:
            server.proc.send_signal(signal.SIGCONT)
        assert watcher.get(store.key("t")) == b"p:first"  # it landed once Redis woke: the old bug's trap
        seen = []
        deadline = time.monotonic() + 10
        while True:  # a client told "unavailable" or "busy" tries again, as the 503 says
            try:
                found = store.claim("t", NOW + 60, NOW, "retry")
            except StoreUnavailable:
                found = "unavailable"  # the store counts Redis as away for a second after the time-out
            seen.append(found)
            if found not in ("busy", "unavailable"):
                break
            assert time.monotonic() < deadline, "the claim that landed late was never released"
            time.sleep(0.1)
        assert found == "claimed" and "spent" not in seen
        store.commit("t", NOW + 60, NOW, "retry")
        assert store.claim("t", NOW + 60, NOW, "copy") == "spent"
        watcher.close()


def test_a_commit_redis_cannot_take_is_delivered_once_it_can(redis_url: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store = RedisStore.from_url(redis_url, prefix="late-commit:")
    assert store.claim("t", NOW + 60, NOW, "a1") == "claimed"
    real = store._apply
    refusals = iter([True, True])

    def flaky(*args: object) -> None:
        if next(refusals, False):
            raise redis.exceptions.ConnectionError("Redis is away")
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_apply", flaky)
    store.commit("t", NOW + 60, NOW, "a1")  # never raises
    assert store.claim("t", NOW + 60, NOW, "copy") == "busy"  # the claim keeps every copy out meanwhile
    deadline = time.monotonic() + 10
    while store.undelivered:
        assert time.monotonic() < deadline, "the commit was never delivered"
        time.sleep(0.05)
    assert store.claim("t", NOW + 60, NOW, "copy") == "spent"
