"""The one way to Redis (mrtr_stores/redis_clients.py): a Redis that does not answer holds a thread for 0.25 s at
most, the threads waiting inside Redis are capped per process, and after a failure the pool refuses at once for a
second instead of waiting again. Against a real redis-server, frozen with SIGSTOP."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from loopback.redis_server import RedisServer
from mrtr_stores import redis_clients
from mrtr_stores.redis_clients import AWAY_FOR, REQUEST_TIMEOUT, RedisBusy, redis_client

pytestmark = pytest.mark.external  # a redis-server


@pytest.fixture
def frozen() -> Iterator[RedisServer]:
    with RedisServer() as server:
        assert server.proc is not None
        server.proc.send_signal(signal.SIGSTOP)
        try:
            yield server
        finally:
            server.proc.send_signal(signal.SIGCONT)


def test_a_frozen_redis_holds_a_request_a_quarter_second_then_none_for_a_second(frozen: RedisServer) -> None:
    client = redis_client(frozen.url)
    started = time.monotonic()
    with pytest.raises(redis.exceptions.TimeoutError):
        client.get("k")
    assert time.monotonic() - started < REQUEST_TIMEOUT + 0.5
    started = time.monotonic()
    for _ in range(50):  # a flood meanwhile: refused at once, without waiting on the socket
        with pytest.raises(RedisBusy):
            client.get("k")
    assert time.monotonic() - started < 0.2


def test_threads_waiting_inside_redis_are_capped_per_process(frozen: RedisServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_clients, "GATE_WAIT", 0.05)
    redis_clients.set_waiters(1)
    inside, other = redis_client(frozen.url), redis_client(frozen.url)  # two stores: one gate
    holder = threading.Thread(target=lambda: pytest.raises(redis.exceptions.TimeoutError, inside.get, "k"))
    holder.start()
    time.sleep(0.05)  # the holder is inside Redis now (its time-out is 0.25 s)
    started = time.monotonic()
    with pytest.raises(RedisBusy, match="turns"):
        other.get("k")
    assert time.monotonic() - started < REQUEST_TIMEOUT
    holder.join(5)


def test_after_its_second_away_the_pool_tries_redis_again() -> None:
    with RedisServer() as server:
        now = [100.0]
        client = redis_client(server.url)
        client.connection_pool.clock = lambda: now[0]
        assert server.proc is not None
        server.proc.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(redis.exceptions.TimeoutError):
                client.get("k")
        finally:
            server.proc.send_signal(signal.SIGCONT)
        with pytest.raises(RedisBusy):
            client.get("k")
        now[0] += AWAY_FOR
        assert client.get("k") is None  # Redis answers again
