"""The redeemed-ticket store in Redis, for replicas on several hosts.

One key per spent ticket id, `<prefix><jti>`, written with a single `SET key 1 NX PX <ms>`: the
check and the write are one atomic command, so two replicas racing to redeem the same ticket
can never both win (no read-then-write window). The key lives until the ticket's own expiry and
then Redis drops it, so the store never grows past the tickets still alive.

The time-to-live is `exp - now` in milliseconds, computed from the caller's `now` (stores never
read the clock). A relative TTL keeps the store correct under an injected clock; an absolute
`EXAT` would be measured against the Redis host's clock instead.

Redis that cannot be reached (down, timing out, refusing writes) raises `StoreUnavailable`,
never a driver exception: single use then fails closed with a retryable error. A connection
error is retried once (`mrtr_stores.redis_clients`: a pooled connection left over from before a Redis
restart fails once); a timeout is not, since the SET may have landed. In that rare case the
retry is refused as a replay, which is the safe side to err on.

This module imports `redis`; the app imports this module only when Redis is configured.
"""

from __future__ import annotations

import math
from typing import Any

import redis

from mrtr import StoreUnavailable
from mrtr_stores.redis_clients import redis_client

DEFAULT_PREFIX = "mrtr:redeemed:"
#: Seconds to wait for Redis to accept a connection or answer a command before it counts as down.
REDIS_TIMEOUT = 5.0
#: SCAN page size for `__len__`; a hint to Redis, not a limit.
SCAN_COUNT = 1000


class RedisStore:
    """Spent ticket ids in Redis, shared by every replica that talks to the same server."""

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX) -> None:
        if not prefix:
            raise ValueError("a RedisStore needs a non-empty key prefix")
        self.client = client
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX, timeout: float = REDIS_TIMEOUT) -> RedisStore:
        """Connect lazily to `url` (redis://host:port/db, rediss://…, unix://…)."""
        return cls(redis_client(url, timeout=timeout), prefix=prefix)

    def key(self, jti: str) -> str:
        return self.prefix + jti

    def redeem(self, jti: str, exp: float, now: float) -> bool:
        """True the first time `jti` is redeemed, false after, until the ticket expires."""
        # At least 1 ms: Redis refuses PX 0, and a ticket at or past its expiry never reaches
        # here (the expiry check comes first), so the floor only guards the boundary.
        ttl_ms = max(1, math.ceil((float(exp) - float(now)) * 1000))
        try:
            return bool(self.client.set(self.key(jti), b"1", nx=True, px=ttl_ms))
        except redis.exceptions.RedisError as exc:
            raise StoreUnavailable(f"Redis store: {type(exc).__name__}: {exc}") from exc

    def __len__(self) -> int:
        """How many spent ids are still remembered (SCAN over the prefix; O(keys), for monitoring)."""
        pattern = _glob_escape(self.prefix) + "*"
        try:
            return sum(1 for _ in self.client.scan_iter(match=pattern, count=SCAN_COUNT))
        except redis.exceptions.RedisError as exc:
            raise StoreUnavailable(f"Redis store: {type(exc).__name__}: {exc}") from exc

    def __repr__(self) -> str:
        return f"RedisStore(prefix={self.prefix!r})"


def _glob_escape(text: str) -> str:
    """Escape Redis glob metacharacters so the prefix matches only itself."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
