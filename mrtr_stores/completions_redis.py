"""The URL-mode pages' completions in Redis, for replicas on several hosts (the contract:
`mrtr_stores.completions.CompletionStore`): two sorted sets, the references waiting for their page and the finished
ones, each scored by when it expires. Finishing one is one script (it moves only a waiting, unexpired reference), so
two submissions of one page finish it once. Imports `redis`: imported only when Redis is configured.
"""

from __future__ import annotations

import redis

from mrtr import StoreUnavailable
from mrtr_stores.completions import MAX_OPEN, REF, TTL
from mrtr_stores.failures import failures_become
from mrtr_stores.redis_clients import REQUEST_TIMEOUT, redis_client

# KEYS: waiting, finished. ARGV: ref, now, cap. Moves ref from waiting to finished when it waits and has not expired;
# past the cap the finished ones that expire first are forgotten.
_COMPLETE = """
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expires or tonumber(expires) <= tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
redis.call('ZADD', KEYS[2], expires, ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[3])
if over > 0 then redis.call('ZPOPMIN', KEYS[2], over) end
return 1
"""


def _down(store: object, exc: BaseException) -> Exception:
    return StoreUnavailable(f"the completion store in Redis: {type(exc).__name__}: {exc}")


@failures_become(redis.exceptions.RedisError, _down)
class RedisCompletions:
    """The completions under `prefix` in the Redis that `client` talks to."""

    def __init__(self, client: redis.Redis, *, prefix: str = "mrtr:url:", cap: int = MAX_OPEN) -> None:
        self.client = client
        self.cap = cap
        self.waiting, self.finished = f"{prefix}waiting", f"{prefix}finished"
        self._complete = client.register_script(_COMPLETE)

    @classmethod
    def from_url(cls, url: str) -> RedisCompletions:
        return cls(redis_client(url, timeout=REQUEST_TIMEOUT))

    def open(self, ref: str, now: float) -> None:
        pipe = self.client.pipeline()
        pipe.zremrangebyscore(self.waiting, "-inf", now)
        pipe.zadd(self.waiting, {ref: now + TTL})
        pipe.zcard(self.waiting)
        count = pipe.execute()[-1]
        if count > self.cap:
            self.client.zpopmin(self.waiting, count - self.cap)

    def _alive(self, key: str, ref: str, now: float) -> bool:
        if not REF.fullmatch(ref):
            return False
        expires = self.client.zscore(key, ref)
        return expires is not None and float(expires) > now

    def is_open(self, ref: str, now: float) -> bool:
        return self._alive(self.waiting, ref, now)

    def complete(self, ref: str, now: float) -> bool:
        if not REF.fullmatch(ref):
            return False
        return bool(self._complete(keys=[self.waiting, self.finished], args=[ref, now, self.cap]))

    def is_complete(self, ref: str, now: float) -> bool:
        return self._alive(self.finished, ref, now)
