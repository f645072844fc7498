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
Redis is away (the store's "unavailable": a retryable 503), holding its thread for no longer than that. Every
command of every pool passes the same gate, pipelines and scripts included, because the gate sits where a
connection is taken from the pool. The class's pub/sub listener has its own client and thread and is not gated.

What it must never do: wait longer than `REQUEST_TIMEOUT` (plus one connection retry) for Redis on a request, or
let a request wait for a turn longer than `GATE_WAIT`. Imports `redis`, which is needed only when Redis is
configured: callers import this module only then.
"""

from __future__ import annotations

import threading
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

#: Extra attempts after a connection error (not after a time-out), with no backoff.
CONNECT_RETRIES = 1
#: Seconds a command or a connection may take on a request's path before Redis counts as away. Redis answers in
#: well under a millisecond when it is up; a quarter of a second is only ever reached when it is not.
REQUEST_TIMEOUT = 0.25
#: Seconds a request waits for its turn at the gate before Redis counts as away for it.
GATE_WAIT = 0.1
#: Threads of one process inside Redis commands at once, unless configured (MRTR_REDIS_WAITERS).
DEFAULT_WAITERS = 1


class RedisBusy(redis.exceptions.ConnectionError):
    """Every turn at the gate is taken: as far as this request knows, Redis is away."""


class Gate:
    """At most `limit` holders at once; a turn is waited for `GATE_WAIT` at most."""

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
    """A connection pool whose every connection, while it is out of the pool, holds a turn at the gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._holders: dict[int, Gate] = {}
        self._holders_lock = threading.Lock()

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        gate = _gate
        gate.enter()
        try:
            connection = super().get_connection(*args, **kwargs)
        except BaseException:
            gate.leave()
            raise
        with self._holders_lock:
            self._holders[id(connection)] = gate
        return connection

    def release(self, connection: Any) -> None:
        try:
            super().release(connection)
        finally:
            with self._holders_lock:
                gate = self._holders.pop(id(connection), None)
            if gate is not None:
                gate.leave()


def redis_client(url: str, *, timeout: float = REQUEST_TIMEOUT) -> Any:
    """A lazily connecting client for `url` (redis://host:port/db, rediss://…, unix://…) whose every connect and
    command waits at most `timeout` seconds, and passes the process's gate."""
    retry = Retry(NoBackoff(), CONNECT_RETRIES, supported_errors=(redis.exceptions.ConnectionError,))
    pool = GatedPool.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry)
    client = redis.Redis(connection_pool=pool)
    client.auto_close_connection_pool = True
    return client
