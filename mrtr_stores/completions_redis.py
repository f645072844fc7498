"""The URL-mode pages' completions in Redis, for replicas on several hosts (the contract:
`mrtr_stores.completions.CompletionStore`): two sorted sets, the references waiting for their page and the finished
ones, each scored by when it expires, and one more per owner (named by a hash of the principal) holding that
owner's references, so its cap evicts only its own. Opening is one script, and so is finishing one (it moves only
a waiting, unexpired reference), so two submissions of one page finish it once. Imports `redis`: imported only when
Redis is configured.
"""

from __future__ import annotations

import hashlib
import math

import redis

from mrtr import StoreUnavailable
from mrtr_stores.completions import MAX_OPEN, MAX_PER_OWNER, REF, TTL
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


# KEYS: waiting, finished, the owner's set. ARGV: ref, now, expires, cap, per-owner cap, the owner set's lifetime.
# Adds ref as waiting and as the owner's; past the owner's cap that owner's first to expire are forgotten (waiting or
# finished), past the cap for everyone the first waiting ones to expire.
_OPEN = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[6])
local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[5])
if over > 0 then
    local gone = redis.call('ZPOPMIN', KEYS[3], over)
    for i = 1, #gone, 2 do
        redis.call('ZREM', KEYS[1], gone[i])
        redis.call('ZREM', KEYS[2], gone[i])
    end
end
local all = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if all > 0 then redis.call('ZPOPMIN', KEYS[1], all) end
return 1
"""


def _down(store: object, exc: BaseException) -> Exception:
    return StoreUnavailable(f"the completion store in Redis: {type(exc).__name__}: {exc}")


@failures_become(redis.exceptions.RedisError, _down)
class RedisCompletions:
    """The completions under `prefix` in the Redis that `client` talks to."""

    def __init__(self, client: redis.Redis, *, prefix: str = "mrtr:url:", cap: int = MAX_OPEN,
                 per_owner: int = MAX_PER_OWNER) -> None:
        self.client = client
        self.cap, self.per_owner, self.prefix = cap, per_owner, prefix
        self.waiting, self.finished = f"{prefix}waiting", f"{prefix}finished"
        self._complete = client.register_script(_COMPLETE)
        self._open = client.register_script(_OPEN)

    @classmethod
    def from_url(cls, url: str) -> RedisCompletions:
        return cls(redis_client(url, timeout=REQUEST_TIMEOUT))

    def open(self, ref: str, now: float, owner: str = "") -> None:
        # The principal's name stays out of Redis's keys: a hash names the owner's set.
        owned = f"{self.prefix}owner:{hashlib.sha256(owner.encode()).hexdigest()[:32]}"
        self._open(keys=[self.waiting, self.finished, owned],
                   args=[ref, now, now + TTL, self.cap, self.per_owner, math.ceil(TTL) + 1])

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
