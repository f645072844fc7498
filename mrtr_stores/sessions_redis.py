"""The 2025-11-25 session directory and its mailbox in Redis, shared by replicas on several hosts (the contract:
`mrtr_stores.sessions.SessionDirectory`): a key per session with its own time to live, and a list per process tag.

Every Redis failure becomes `DirectoryDown`, never a driver exception. Imports `redis`: imported only when Redis
is configured.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import redis

from mrtr_stores.redis_clients import REQUEST_TIMEOUT, redis_client
from mrtr_stores.sessions import DEFAULT_TTL, MAILBOX_TTL, MAX_MESSAGE, DirectoryDown

T = TypeVar("T")


class RedisDirectory:
    """Sessions and the mailbox in Redis, shared by replicas on several hosts."""

    shared = True

    def __init__(self, client: Any, *, ttl: float = DEFAULT_TTL, prefix: str = "mrtr:legacy:") -> None:
        self.client = client
        self.ttl = ttl
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str, *, ttl: float = DEFAULT_TTL, timeout: float = REQUEST_TIMEOUT) -> RedisDirectory:
        return cls(redis_client(url, timeout=timeout), ttl=ttl)

    def _do(self, work: Callable[[], T]) -> T:
        try:
            return work()
        except redis.exceptions.RedisError as exc:
            raise DirectoryDown(f"the session directory in Redis: {type(exc).__name__}: {exc}") from exc

    def put(self, sid: str, principal: str, state: dict[str, Any], now: float) -> None:
        value = json.dumps({"principal": principal, "state": state})
        self._do(lambda: self.client.set(f"{self.prefix}s:{sid}", value, px=int(self.ttl * 1000)))

    def get(self, sid: str, now: float) -> tuple[str, dict[str, Any]] | None:
        key = f"{self.prefix}s:{sid}"
        raw = self._do(lambda: self.client.get(key))
        if raw is None:
            return None
        self._do(lambda: self.client.pexpire(key, int(self.ttl * 1000)))
        record = json.loads(raw)
        return str(record["principal"]), dict(record["state"])

    def delete(self, sid: str) -> None:
        self._do(lambda: self.client.delete(f"{self.prefix}s:{sid}"))

    def post(self, tag: str, sid: str, message: dict[str, Any], now: float) -> None:
        text = json.dumps({"sid": sid, "message": message}, separators=(",", ":"))
        if len(text) > MAX_MESSAGE:
            raise DirectoryDown("an answer too large to relay")
        key = f"{self.prefix}m:{tag}"

        def work() -> None:
            pipe = self.client.pipeline()
            pipe.rpush(key, text)
            pipe.pexpire(key, int(MAILBOX_TTL * 1000))
            pipe.execute()

        self._do(work)

    def take(self, tag: str, now: float) -> list[tuple[str, dict[str, Any]]]:
        key = f"{self.prefix}m:{tag}"

        def work() -> list[Any]:
            pipe = self.client.pipeline()  # MULTI/EXEC: read and empty the list in one step
            pipe.lrange(key, 0, -1)
            pipe.delete(key)
            return list(pipe.execute()[0])

        out = []
        for raw in self._do(work):
            record = json.loads(raw)
            out.append((str(record["sid"]), dict(record["message"])))
        return out
