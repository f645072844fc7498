"""The one way this project connects to Redis: short bounded waits, a cap on the threads waiting, one quick retry.

Every Redis-backed store (redeemed tickets, the session directory, the live class, /check's runs, LTI) gets its
client here, so none of them sits through redis-py's default retries with backoff (several seconds) before saying
Redis is away. A connection error is tried once more at once (a pooled connection left over from before a Redis
restart fails once); a time-out is not, since the command may have landed.

Why a cap on waiting threads: a server process has a few threads (scripts/production.sh's THREADS, 2 by default).
When Redis freezes (a stall, a SIGSTOP, a full network queue), every request that needs it waits its whole
time-out; a flood of such requests would hold every thread, and pages that never touch Redis would queue behind
them (the issue measured `GET /` at 17.9 s). So at most `waiters` threads of a process may be inside a Redis
command at once (`MRTR_REDIS_WAITERS`, default 1): the next one waits `GATE_WAIT` for its turn and is then told
Redis is away (the store's "unavailable": a retryable 503), holding its thread for no longer than that. And once
a command has failed (timed out, or found no connection), Redis counts as away for `AWAY_FOR`: every command in
that time is refused at once, without touching the socket, and the first one after it tries again. A flood while
Redis is frozen then costs one time-out per process per `AWAY_FOR`, not one per request. Every command of every
pool passes the same gate, pipelines and scripts included, because the gate sits where a connection is taken
from the pool. The class's pub/sub listener has its own client and thread and is not gated.

What it must never do: wait longer than `REQUEST_TIMEOUT` (plus one connection retry) for Redis on a request, or
let a request wait for a turn longer than `GATE_WAIT`. Imports `redis`, which is needed only when Redis is
configured: callers import this module only then.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeAlias

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

#: A string as a Redis reply holds it: bytes, or str from a client that decodes replies (redis-py's own hints say so
#: for every reading command; a store reads it with its `_text`).
RedisText: TypeAlias = bytes | str

#: Extra attempts after a connection error (not after a time-out), with no backoff.
CONNECT_RETRIES = 1
#: Seconds a command or a connection may take on a request's path before Redis counts as away. Redis answers in
#: well under a millisecond when it is up; a quarter of a second is only ever reached when it is not.
REQUEST_TIMEOUT = 0.25
#: Seconds a request waits for its turn at the gate before Redis counts as away for it: far longer than a turn
#: takes when Redis answers (a command, under a millisecond, plus the wait for the GIL on a busy machine).
GATE_WAIT = 0.5
#: Seconds Redis counts as away after a command failed: commands are then refused at once.
AWAY_FOR = 1.0
#: Threads of one process inside Redis commands at once, unless configured (MRTR_REDIS_WAITERS).
DEFAULT_WAITERS = 1


class RedisBusy(redis.exceptions.ConnectionError):
    """Every turn at the gate is taken: as far as this request knows, Redis is away."""


class Gate:
    """At most `limit` holders at once, in the whole process; a turn is waited for `GATE_WAIT` at most."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the Redis gate needs at least one turn; got {limit}")
        self.limit = limit
        self._turns = threading.BoundedSemaphore(limit)

    def enter(self) -> None:
        if not self._turns.acquire(timeout=GATE_WAIT):
            raise RedisBusy(f"all {self.limit} turns at Redis are taken (it is slow or away)")

    def leave(self) -> None:
        self._turns.release()


_gate = Gate(DEFAULT_WAITERS)


def set_waiters(limit: int) -> None:
    """How many threads of this process may wait inside Redis at once (read from MRTR_REDIS_WAITERS at start)."""
    global _gate
    if limit != _gate.limit:
        _gate = Gate(limit)


class GatedPool(redis.ConnectionPool):
    """A connection pool whose every connection, while it is out of the pool, holds a turn at the process's gate,
    and which refuses at once for `AWAY_FOR` after one of its commands failed. `clock`: monotonic seconds."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, **options: Any) -> None:
        # `options`: redis-py's own pool and connection options, of many types, passed through as they come.
        super().__init__(**options)
        self.clock = clock
        self._holders: dict[int, Gate] = {}
        self._holders_lock = threading.Lock()
        self._away_until = 0.0

    def _failed(self) -> None:
        self._away_until = self.clock() + AWAY_FOR

    def get_connection(self, *args: object, **kwargs: object) -> redis.Connection:
        if self.clock() < self._away_until:
            raise RedisBusy("Redis failed a moment ago; it counts as away for a second")
        gate = _gate
        gate.enter()
        try:
            connection = super().get_connection(*args, **kwargs)
        except BaseException as exc:
            gate.leave()
            if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
                self._failed()
            raise
        with self._holders_lock:
            self._holders[id(connection)] = gate
        return connection

    def release(self, connection: Any) -> None:
        # `connection`: whatever class the URL chose (redis-py's own `Connection` hint leaves out unix sockets').
        # redis-py disconnects a connection whose command failed (timed out, connection lost) before giving it
        # back: a connection given back without its socket is a failure.
        if getattr(connection, "_sock", True) is None:
            self._failed()
        try:
            super().release(connection)
        finally:
            with self._holders_lock:
                gate = self._holders.pop(id(connection), None)
            if gate is not None:
                gate.leave()


def redis_client(url: str, *, timeout: float = REQUEST_TIMEOUT) -> redis.Redis:
    """A lazily connecting client for `url` (redis://host:port/db, rediss://…, unix://…) whose every connect and
    command waits at most `timeout` seconds, and passes the process's gate."""
    retry = Retry(NoBackoff(), CONNECT_RETRIES, supported_errors=(redis.exceptions.ConnectionError,))
    pool = GatedPool.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry)
    client = redis.Redis(connection_pool=pool)
    client.auto_close_connection_pool = True
    return client
