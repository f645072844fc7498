"""/check's runs in Redis, for replicas on several hosts (the contract: `mrtr_stores.check_runs.RunStore`): a key
per run (kept a day at most) and a set of run ids; `start` holds a short Redis lock, so two replicas never both
admit one visitor's run. Every Redis failure is `RunStoreDown` (saving), `RunRefused` in words (starting) or "no
such run" (reading), never a driver exception. Imports `redis`: imported only when Redis is configured.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator

import redis

from mrtr_stores.check_runs import RUN_ID, STORE_AWAY, Run, RunRefused, RunStoreDown, admit, decode, encode
from mrtr_stores.redis_clients import REQUEST_TIMEOUT, redis_client

log = logging.getLogger("mrtr.check")
#: Seconds a Redis command or connection may take before the run store counts as down.
REDIS_TIMEOUT = REQUEST_TIMEOUT  # on a request's path: well under a second (mrtr_stores/redis_clients.py)


class RedisRunStore:
    """The runs under `prefix` in the Redis that `client` talks to."""

    LOCK_MS = 5000
    KEEP_S = 24 * 3600

    def __init__(self, client: redis.Redis, clock: Callable[[], float] = time.time,
                 prefix: str = "mrtr:check:") -> None:
        self.client = client
        self.clock = clock
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str) -> RedisRunStore:
        return cls(redis_client(url, timeout=REDIS_TIMEOUT))

    def _key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}"

    def save(self, run: Run) -> None:
        run.updated = self.clock()
        pipe = self.client.pipeline()
        pipe.set(self._key(run.id), encode(run), ex=self.KEEP_S)
        pipe.sadd(f"{self.prefix}runs", run.id)
        try:
            pipe.execute()
        except redis.exceptions.RedisError as exc:
            raise RunStoreDown(f"the run store in Redis: {type(exc).__name__}: {exc}") from exc

    def get(self, run_id: str) -> Run | None:
        if not RUN_ID.fullmatch(run_id):
            return None
        try:
            raw = self.client.get(self._key(run_id))
        except redis.exceptions.RedisError as exc:
            log.warning("check: the run store in Redis is unavailable: %s", exc)
            return None
        return decode(raw.decode() if isinstance(raw, bytes) else raw, self.clock())

    def _all(self, now: float) -> list[Run]:
        ids = [i.decode() if isinstance(i, bytes) else str(i) for i in self.client.smembers(f"{self.prefix}runs")]
        texts = self.client.mget([self._key(i) for i in ids]) if ids else []
        gone = [i for i, text in zip(ids, texts, strict=True) if text is None]
        if gone:  # expired by Redis: their ids leave the set too
            self.client.srem(f"{self.prefix}runs", *gone)
        found = [decode(t.decode() if isinstance(t, bytes) else t, now) for t in texts if t is not None]
        return [r for r in found if r is not None]

    def _forget(self, run_id: str) -> None:
        pipe = self.client.pipeline()
        pipe.delete(self._key(run_id))
        pipe.srem(f"{self.prefix}runs", run_id)
        pipe.execute()

    def start(self, visitor: str, url: str, limit: int, window: float) -> Run:
        now = self.clock()
        try:
            with self._locked():
                run = admit(self._all(now), self._forget, visitor=visitor, url=url, now=now, limit=limit,
                            window=window)
                self.save(run)
                return run
        except (redis.exceptions.RedisError, RunStoreDown) as exc:
            log.warning("check: the run store in Redis is unavailable: %s", exc)
            raise RunRefused(STORE_AWAY) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        name, token = f"{self.prefix}lock", secrets.token_hex(8)
        deadline = time.monotonic() + self.LOCK_MS / 1000
        while not self.client.set(name, token, nx=True, px=self.LOCK_MS):
            if time.monotonic() > deadline:
                raise RunRefused("The checker is busy; try again in a moment.")
            time.sleep(0.01)  # another replica is admitting a run: a few milliseconds
        try:
            yield
        finally:
            if self.client.get(name) in (token, token.encode()):
                self.client.delete(name)
