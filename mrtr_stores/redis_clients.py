"""The one way this project connects to Redis: bounded waits, and one quick retry after a dropped connection.

Every Redis-backed store (redeemed tickets, the session directory, the live class, /check's runs) gets its client
here, so none of them sits through redis-py's default retries with backoff (several seconds) before saying Redis
is away. A connection error is tried once more at once (a pooled connection left over from before a Redis restart
fails once); a time-out is not, since the command may have landed. Imports `redis`, which is needed only when
Redis is configured: callers import this module only then.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

#: Extra attempts after a connection error (not after a time-out), with no backoff.
CONNECT_RETRIES = 1


def redis_client(url: str, *, timeout: float) -> Any:
    """A lazily connecting client for `url` (redis://host:port/db, rediss://…, unix://…) whose every connect and
    command waits at most `timeout` seconds."""
    retry = Retry(NoBackoff(), CONNECT_RETRIES, supported_errors=(redis.exceptions.ConnectionError,))
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry)
