"""What every store's contract test shares: one real redis-server per test process, a clean database for each
test, and the ways a backend is taken away (a Redis nobody answers on, a SQLite file that is no database).

Each kind's test module runs one suite against its SQLite and its Redis backend (the `store` fixture of the
module, parametrised by `BACKENDS`); the Redis half is external, so the fast tier runs the SQLite half only."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from loopback.redis_server import RedisServer, free_port

T = TypeVar("T")

#: The parameters of each module's `store` fixture: SQLite (fast) and Redis (a redis-server: external).
BACKENDS = ["sqlite", pytest.param("redis", marks=pytest.mark.external)]


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Any]:
    """A client on an empty database of the test process's redis-server."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()


def away_redis() -> Any:
    """A client for a Redis that is not there: a loopback port nobody listens on, no retries, a short wait."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis(port=free_port(), socket_connect_timeout=0.5, socket_timeout=0.5, retry=Retry(NoBackoff(), 0))


def spoil(path: Path) -> None:
    """Make the SQLite file at `path` (and its WAL) something that is no database, as a damaged disk would."""
    for extra in ("-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    path.write_bytes(b"this is not a SQLite database\n" * 200)


def on_new_thread(work: Callable[[], T]) -> T:
    """`work()` on a thread of its own, so a store that keeps a connection per thread opens a new one; what it
    returned, or raised."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("ok", work()))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller as it is
            outcome.append(("raised", exc))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    kind, value = outcome[0]
    if kind == "raised":
        raise value
    return value  # type: ignore[no-any-return]
