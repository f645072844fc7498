"""The 2025-11-25 session directory and its mailbox in Redis, shared by replicas on several hosts (the contract:
`mrtr_stores.sessions.SessionDirectory`): a key per session with its own time to live, and a list per process tag.

Every Redis failure becomes `DirectoryDown`, never a driver exception. Imports `redis`: imported only when Redis
is configured.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

import redis

from mrtr import JSONObject, as_object
from mrtr_stores.redis_clients import REQUEST_TIMEOUT, RedisText, redis_client
from mrtr_stores.sessions import (
    DEFAULT_TTL,
    MAILBOX_TTL,
    MAX_AWAITED,
    MAX_MESSAGE,
    MAX_RELAYS_PER_PRINCIPAL,
    DirectoryDown,
    NotAwaited,
    RelaysExhausted,
    answered_id,
)

T = TypeVar("T")

#: Relay an answer: only to a question the session awaits (consumed), within the principal's window. KEYS: the
#: session's awaited questions, the process's mailbox, the principal's counter. ARGV: question id, message, ttl ms,
#: the principal's cap. 1: relayed; 0: no such question; -1: the principal's cap is reached.
_POST = """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local n = redis.call('INCR', KEYS[3])
if n == 1 then
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
if n > tonumber(ARGV[4]) then
  return -1
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
"""


class RedisDirectory:
    """Sessions and the mailbox in Redis, shared by replicas on several hosts."""

    shared = True

    def __init__(self, client: redis.Redis, *, ttl: float = DEFAULT_TTL, prefix: str = "mrtr:legacy:") -> None:
        self.client = client
        self.ttl = ttl
        self.prefix = prefix
        self._post = client.register_script(_POST)

    @classmethod
    def from_url(cls, url: str, *, ttl: float = DEFAULT_TTL, timeout: float = REQUEST_TIMEOUT) -> RedisDirectory:
        return cls(redis_client(url, timeout=timeout), ttl=ttl)

    def _do(self, work: Callable[[], T]) -> T:
        try:
            return work()
        except redis.exceptions.RedisError as exc:
            raise DirectoryDown(f"the session directory in Redis: {type(exc).__name__}: {exc}") from exc

    def put(self, sid: str, principal: str, state: JSONObject, now: float) -> None:
        value = json.dumps({"principal": principal, "state": state})
        self._do(lambda: self.client.set(f"{self.prefix}s:{sid}", value, px=int(self.ttl * 1000)))

    def get(self, sid: str, now: float) -> tuple[str, JSONObject] | None:
        key = f"{self.prefix}s:{sid}"
        raw = self._do(lambda: self.client.get(key))
        if raw is None:
            return None
        self._do(lambda: self.client.pexpire(key, int(self.ttl * 1000)))
        record = as_object(json.loads(raw))
        return str(record["principal"]), as_object(record["state"])

    def delete(self, sid: str) -> None:
        self._do(lambda: self.client.delete(f"{self.prefix}s:{sid}"))

    def expect(self, sid: str, question_id: str, now: float) -> None:
        key = f"{self.prefix}q:{sid}"

        def work() -> None:
            pipe = self.client.pipeline()
            pipe.zadd(key, {question_id: now})
            pipe.zremrangebyrank(key, 0, -MAX_AWAITED - 1)  # the newest MAX_AWAITED stay
            pipe.pexpire(key, int(MAILBOX_TTL * 1000))
            pipe.execute()

        self._do(work)

    def post(self, tag: str, sid: str, message: JSONObject, now: float, principal: str = "") -> None:
        text = json.dumps({"sid": sid, "message": message}, separators=(",", ":"))
        if len(text) > MAX_MESSAGE:
            raise DirectoryDown("an answer too large to relay")
        question = answered_id(message)
        if question is None:
            raise NotAwaited("an answer whose id names no question of this server")
        keys = [f"{self.prefix}q:{sid}", f"{self.prefix}m:{tag}", f"{self.prefix}c:{principal}"]
        done = self._do(lambda: self._post(keys=keys, args=[question, text, int(MAILBOX_TTL * 1000),
                                                             MAX_RELAYS_PER_PRINCIPAL]))
        if done == 0:
            raise NotAwaited(f"no question {question} waits in this session")
        if done == -1:
            raise RelaysExhausted(f"{MAX_RELAYS_PER_PRINCIPAL} answers relayed in {MAILBOX_TTL:.0f} s")

    def take(self, tag: str, now: float) -> list[tuple[str, JSONObject]]:
        key = f"{self.prefix}m:{tag}"

        def work() -> list[RedisText]:
            pipe = self.client.pipeline()  # MULTI/EXEC: read and empty the list in one step
            pipe.lrange(key, 0, -1)
            pipe.delete(key)
            return list(pipe.execute()[0])

        out = []
        for raw in self._do(work):
            record = as_object(json.loads(raw))
            out.append((str(record["sid"]), as_object(record["message"])))
        return out
