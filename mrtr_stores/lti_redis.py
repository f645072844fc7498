"""The LTI tool's store in Redis, for replicas on several hosts (the contract: `mrtr_stores.lti.LtiStore`): one
key for the tool's private key (set once, with NX, so every replica signs with and publishes the same key), a key
per launch-data entry and per launch (each with its time to live), a hash per score and a sorted set of the
unsent scores by when each is due.

Expiry is decided on the injected clock (each entry carries its expiry time); Redis's own time to live only
bounds how long it keeps an entry. The steps that must not interleave (taking a nonce, replacing a score,
marking one sent or failed) are one command or one Lua script each. Every Redis failure is `LtiStoreDown`.
The key is a secret: give this store a Redis that only the app's replicas reach. Imports `redis`: imported
only when Redis is configured.
"""

from __future__ import annotations

import json
import math
import secrets
import time

import redis

from mrtr import JSON, JSONObject, as_object
from mrtr.clock import Clock
from mrtr_stores.failures import failures_become
from mrtr_stores.lti import (
    LAUNCH_LIFETIME,
    MAX_ERROR,
    LtiStoreDown,
    PendingScore,
    new_private_key,
    retry_wait,
)
from mrtr_stores.redis_clients import REQUEST_TIMEOUT, redis_client

PREFIX = "mrtr:lti:"
#: Seconds a Redis command or connection may take before the LTI store counts as down.
REDIS_TIMEOUT = REQUEST_TIMEOUT  # on a request's path: well under a second (mrtr_stores/redis_clients.py)

#: KEYS: the score's hash, the due set. ARGV: score key, given, activity, grading, keep best (1/0), record json,
#: timestamp. Returns 0 when the score changes nothing queued or sent (or is lower, keeping the best), else 1.
_RECORD = """
local old = redis.call('HMGET', KEYS[1], 'given', 'activity', 'grading')
if old[1] then
  local given, new = tonumber(old[1]), tonumber(ARGV[2])
  if ARGV[5] == '1' and given > new then return 0 end
  if given == new and old[2] == ARGV[3] and old[3] == ARGV[4] then return 0 end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'record', ARGV[6], 'given', ARGV[2], 'activity', ARGV[3], 'grading', ARGV[4],
           'timestamp', ARGV[7], 'sent', 0, 'attempts', 0)
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
"""

#: KEYS: the score's hash, the due set. ARGV: score key, given, timestamp. Marks exactly that version sent.
_SENT = """
local now = redis.call('HMGET', KEYS[1], 'given', 'timestamp')
if now[1] and tonumber(now[1]) == tonumber(ARGV[2]) and now[2] == ARGV[3] then
  redis.call('HSET', KEYS[1], 'sent', 1, 'last_error', '')
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 0
"""

#: KEYS: the score's hash, the due set. ARGV: score key, timestamp, when it is due next, the error.
_FAILED = """
local now = redis.call('HMGET', KEYS[1], 'timestamp', 'sent')
if now[1] == ARGV[2] then
  redis.call('HINCRBY', KEYS[1], 'attempts', 1)
  redis.call('HSET', KEYS[1], 'last_error', ARGV[4])
  if now[2] == '0' then redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) end
end
return 0
"""


def _down(store: object, exc: BaseException) -> LtiStoreDown:
    return LtiStoreDown(f"the LTI store in Redis: {type(exc).__name__}: {str(exc)[:120]}")


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@failures_become(redis.exceptions.RedisError, _down)
class RedisLtiStore:
    """The key, launch data, launches and score queue under `prefix` in the Redis that `client` talks to."""

    def __init__(self, client: redis.Redis, clock: Clock = time.time, *, prefix: str = PREFIX) -> None:
        self.client = client
        self.clock = clock
        self.prefix = prefix
        self._key: str | None = None
        self._record = client.register_script(_RECORD)
        self._sent = client.register_script(_SENT)
        self._failed = client.register_script(_FAILED)

    @classmethod
    def from_url(cls, url: str, clock: Clock = time.time) -> RedisLtiStore:
        return cls(redis_client(url, timeout=REDIS_TIMEOUT), clock)

    def private_key(self) -> str:
        if self._key is None:
            name = self.prefix + "tool-key"
            self.client.set(name, new_private_key(), nx=True)  # the first replica's key is everyone's
            self._key = _text(self.client.get(name))
        return self._key

    def _put(self, name: str, value: JSON, lifetime: float | None) -> None:
        expires = self.clock() + lifetime if lifetime else None
        record = json.dumps({"value": value, "expires": expires})
        self.client.set(name, record, px=math.ceil(lifetime * 1000) if lifetime else None)

    def _live(self, raw: bytes | str | None) -> JSONObject | None:
        """The record `_put` kept (its value and when it expires), or None when there is none or it expired."""
        if raw is None:
            return None
        record = as_object(json.loads(raw))
        expires = record.get("expires")
        return None if isinstance(expires, int | float) and expires <= self.clock() else record

    # -- pylti1p3's key-value storage -----------------------------------------------------------------

    def kv_get(self, key: str) -> JSON:
        record = self._live(self.client.get(self.prefix + "kv:" + key))
        return None if record is None else record["value"]

    def kv_set(self, key: str, value: JSON, exp: int | None) -> None:
        self._put(self.prefix + "kv:" + key, value, exp)

    def kv_take(self, key: str) -> bool:
        return self._live(self.client.getdel(self.prefix + "kv:" + key)) is not None

    # -- launches -------------------------------------------------------------------------------------

    def save_launch(self, data: JSONObject) -> str:
        ref = secrets.token_urlsafe(24)
        self._put(self.prefix + "launch:" + ref, data, LAUNCH_LIFETIME)
        return ref

    def launch(self, ref: str) -> JSONObject | None:
        record = self._live(self.client.get(self.prefix + "launch:" + ref))
        return None if record is None else as_object(record["value"])

    # -- scores ---------------------------------------------------------------------------------------

    def _score_keys(self, key: str) -> list[str]:
        return [self.prefix + "score:" + key, self.prefix + "due"]

    def record_score(self, score: PendingScore, *, keep_best: bool) -> bool:
        record = json.dumps({"issuer": score.issuer, "client_id": score.client_id, "endpoint": score.endpoint,
                             "user_id": score.user_id, "maximum": score.maximum, "comment": score.comment})
        return bool(self._record(keys=self._score_keys(score.key),
                                 args=[score.key, repr(float(score.given)), score.activity, score.grading,
                                       int(keep_best), record, score.timestamp]))

    def _pending(self, key: str) -> PendingScore | None:
        found = {_text(k): _text(v) for k, v in self.client.hgetall(self.prefix + "score:" + key).items()}
        if not found:
            return None
        record = json.loads(found["record"])
        return PendingScore(key, record["issuer"], record["client_id"], as_object(record["endpoint"]),
                            record["user_id"], float(found["given"]), float(record["maximum"]), found["activity"],
                            found["grading"], found["timestamp"], int(found["attempts"]),
                            str(record.get("comment", "")))

    def due_scores(self, limit: int, key: str | None = None) -> list[PendingScore]:
        now = self.clock()
        if key is not None:
            due = self.client.zscore(self.prefix + "due", key)
            keys = [key] if due is not None and float(due) <= now and limit > 0 else []
        else:
            keys = [_text(k) for k in self.client.zrangebyscore(self.prefix + "due", "-inf", repr(now), 0, limit)]
        found = [self._pending(k) for k in keys]
        return [s for s in found if s is not None]

    def mark_sent(self, score: PendingScore) -> None:
        self._sent(keys=self._score_keys(score.key), args=[score.key, repr(float(score.given)), score.timestamp])

    def mark_failed(self, score: PendingScore, error: str) -> None:
        due = self.clock() + retry_wait(score.attempts)
        self._failed(keys=self._score_keys(score.key), args=[score.key, score.timestamp, repr(due), error[:MAX_ERROR]])

    def score_state(self, key: str) -> tuple[float, bool, int] | None:
        given, sent, attempts = self.client.hmget(self.prefix + "score:" + key, "given", "sent", "attempts")
        if given is None:
            return None
        return float(given), _text(sent) == "1", int(attempts or 0)
