"""The classroom's Redis wake-ups when Redis goes away and comes back: nothing waits for it, the log says so
once per change, the listener backs off, and pushes resume by themselves. A fake Redis client stands in, and
the listener's pauses are handed to the test, so nothing here waits in real time."""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

import pytest

from mrtr_stores.class_notices import BACKOFF_FIRST, BACKOFF_MAX, CHANNEL_PREFIX, RedisBus

STEP_S = 10.0  # a bound on each hand-over between the listener thread and the test, never a sleep


class Down(ConnectionError):
    pass


class FakePubSub:
    def __init__(self, redis: FakeRedis) -> None:
        self.redis = redis
        self.confirmed = False

    def psubscribe(self, pattern: str) -> None:
        if not self.redis.up:
            raise Down("Connection refused")

    def get_message(self, timeout: float = 0.0) -> dict[str, Any] | None:
        if not self.redis.up:
            raise Down("Connection reset by peer")
        if not self.confirmed:
            self.confirmed = True
            return {"type": "psubscribe"}
        self.redis.listening.set()  # asked for a message after the confirmation: the bus counts Redis as up
        try:
            channel = self.redis.published.get(timeout=min(timeout, 0.05))
        except queue.Empty:
            return None
        return {"type": "pmessage", "channel": channel.encode()}

    def ping(self) -> None:
        if not self.redis.up:
            raise Down("Connection reset by peer")

    def close(self) -> None:
        pass


class FakeRedis:
    def __init__(self, up: bool) -> None:
        self.up = up
        self.published: queue.Queue[str] = queue.Queue()
        self.publish_calls = 0
        self.listening = threading.Event()

    def pubsub(self) -> FakePubSub:
        return FakePubSub(self)

    def publish(self, channel: str, data: bytes) -> None:
        self.publish_calls += 1
        if not self.up:
            raise Down("Connection refused")
        self.published.put(channel)


class Pauses:
    """The listener's pauses, recorded; each one ends only when the test says so."""

    def __init__(self) -> None:
        self.asked: queue.Queue[float] = queue.Queue()
        self.go = threading.Semaphore(0)

    def __call__(self, seconds: float) -> None:
        self.asked.put(seconds)
        self.go.acquire()

    def next(self) -> float:
        return self.asked.get(timeout=STEP_S)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mrtr.classroom" and r.levelno >= logging.WARNING]


def test_a_redis_that_is_away_at_start_costs_no_request_a_wait(caplog: pytest.LogCaptureFixture) -> None:
    redis, pauses = FakeRedis(up=False), Pauses()
    bus = RedisBus("redis://unused", client=redis, pause=pauses, timeout=STEP_S)
    assert pauses.next() == BACKOFF_FIRST  # the first attempt failed, and the constructor has returned
    assert bus.up is False
    bus.notify("c1")
    assert redis.publish_calls == 0  # Redis is known to be away: nothing tries it on a request's time
    assert bus.tick("c1") == 1  # this process's own views still wake at once


def test_the_listener_backs_off_and_logs_once_per_change(caplog: pytest.LogCaptureFixture) -> None:
    redis, pauses = FakeRedis(up=False), Pauses()
    caplog.set_level(logging.INFO, logger="mrtr.classroom")
    RedisBus("redis://unused", client=redis, pause=pauses, timeout=STEP_S)
    waits = [pauses.next()]
    for _ in range(8):
        pauses.go.release()
        waits.append(pauses.next())
    assert waits == [min(BACKOFF_FIRST * 2 ** n, BACKOFF_MAX) for n in range(9)]
    assert len(warnings(caplog)) == 1 and "away" in warnings(caplog)[0]
    assert not any(r.exc_info for r in caplog.records)  # no traceback per attempt


def test_pushes_resume_by_themselves_when_redis_is_back(caplog: pytest.LogCaptureFixture) -> None:
    redis, pauses = FakeRedis(up=False), Pauses()
    caplog.set_level(logging.INFO, logger="mrtr.classroom")
    bus = RedisBus("redis://unused", client=redis, pause=pauses, timeout=STEP_S)
    pauses.next()
    redis.up = True
    pauses.go.release()
    seen = bus.tick("c2")
    assert redis.listening.wait(STEP_S)  # the listener has reconnected by itself
    assert bus.up is True
    redis.published.put(CHANNEL_PREFIX + "c2")  # as if another replica had published
    assert bus.wait("c2", seen, STEP_S) == seen + 1
    away, back = warnings(caplog)
    assert "away" in away and back == "classroom: Redis is back; live views are pushed again"
    bus.notify("c3")
    assert redis.publish_calls == 1  # publishing again


def test_a_redis_that_drops_mid_way_is_noticed_once(caplog: pytest.LogCaptureFixture) -> None:
    redis, pauses = FakeRedis(up=True), Pauses()
    bus = RedisBus("redis://unused", client=redis, pause=pauses, timeout=STEP_S)
    assert bus.up is True
    redis.up = False
    bus.notify("c4")  # the publish fails: the state changes, and the request is not held up
    assert bus.up is False
    assert pauses.next() == BACKOFF_FIRST  # the listener noticed too
    bus.notify("c4")
    assert redis.publish_calls == 1
    assert len(warnings(caplog)) == 1
