"""/check-client's runs in Redis, for replicas on several hosts (the contract:
`mrtr_stores.client_runs.ClientRunStore`). A run is a hash, its requests a hash of sequence number -> text, its
tools' call counts a hash; the live runs and each visitor's starts are sorted sets. Starting a run and counting a
request are each one Lua script, so two replicas never both admit past a cap or count one call twice. Every key
expires with the run (Redis's own clock), and the run's `expires` field, read against the store's clock, is what
decides. Every Redis failure is `ClientRunRefused` in words, `RunGone` or "no such run", never a driver exception.
Imports `redis`: imported only when Redis is configured.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable

import redis

from mrtr_stores.client_runs import (
    LIFETIME,
    MAX_CALLS,
    MAX_LIVE,
    MAX_OUTPUT,
    MAX_RUN_BYTES,
    RUN_ID,
    STORE_AWAY,
    CallRefused,
    ClientRun,
    ClientRunRefused,
    Entry,
    RunGone,
    call_problem,
    new_run_id,
    refuse_start,
)
from mrtr_stores.redis_clients import REQUEST_TIMEOUT, redis_client

log = logging.getLogger("mrtr.check_client")

# KEYS: live, the visitor's starts, the new run. ARGV: now, window, limit, max live, id, visitor, expires, ttl ms,
# a unique member for the start. Runs past their time leave `live` (and their keys go); then the caps are read.
_START = """
local now = tonumber(ARGV[1])
local prefix = string.sub(KEYS[3], 1, string.len(KEYS[3]) - string.len(ARGV[5]) - 4)
for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('DEL', prefix .. 'run:' .. old, prefix .. 'tools:' .. old, prefix .. 'calls:' .. old)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[2]))
local live = redis.call('ZCARD', KEYS[1])
local starts = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
if live >= tonumber(ARGV[4]) or #starts / 2 >= tonumber(ARGV[3]) then
  local out = {'refused', tostring(live)}
  for i = 2, #starts, 2 do table.insert(out, starts[i]) end
  return out
end
redis.call('HSET', KEYS[3], 'visitor', ARGV[6], 'started', ARGV[1], 'expires', ARGV[7], 'calls', 0, 'bytes', 0)
redis.call('PEXPIRE', KEYS[3], ARGV[8])
redis.call('ZADD', KEYS[1], ARGV[7], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[9])
redis.call('PEXPIRE', KEYS[2], ARGV[8])
return {'ok'}
"""

# KEYS: the run, its tools' counts. ARGV: now, size, tool, max calls, max bytes, ttl ms.
_RECORD = """
local r = redis.call('HMGET', KEYS[1], 'expires', 'calls', 'bytes')
if not r[1] or tonumber(r[1]) <= tonumber(ARGV[1]) then return {'gone'} end
if tonumber(r[2]) >= tonumber(ARGV[4]) or tonumber(r[3]) + tonumber(ARGV[2]) > tonumber(ARGV[5]) then
  return {'refused', r[2], r[3]}
end
local seq = redis.call('HINCRBY', KEYS[1], 'calls', 1)
redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[2])
local n = 1
if ARGV[3] ~= '' then
  n = redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
end
return {'ok', seq, n}
"""


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisClientRuns:
    """The runs under `prefix` in the Redis that `client` talks to."""

    def __init__(self, client: redis.Redis, clock: Callable[[], float] = time.time,
                 prefix: str = "mrtr:client:") -> None:
        self.client = client
        self.clock = clock
        self.prefix = prefix
        self._start = client.register_script(_START)
        self._record = client.register_script(_RECORD)

    @classmethod
    def from_url(cls, url: str, clock: Callable[[], float] = time.time) -> RedisClientRuns:
        return cls(redis_client(url, timeout=REQUEST_TIMEOUT), clock)

    def _key(self, kind: str, run_id: str) -> str:
        return f"{self.prefix}{kind}:{run_id}"

    @property
    def _ttl_ms(self) -> int:
        return int(LIFETIME * 1000) + 60_000  # Redis's own clean-up, a minute after the run's end

    def start(self, visitor: str, limit: int, window: float) -> ClientRun:
        now, run_id = self.clock(), new_run_id()
        expires = now + LIFETIME
        try:
            out = self._start(keys=[f"{self.prefix}live", f"{self.prefix}starts:{visitor}", self._key("run", run_id)],
                              args=[repr(now), repr(window), limit, MAX_LIVE, run_id, visitor, repr(expires),
                                    max(self._ttl_ms, int(window * 1000)), f"{now!r}:{secrets.token_hex(6)}"])
        except redis.exceptions.RedisError as exc:
            log.warning("check-client: the run store in Redis is unavailable: %s", exc)
            raise ClientRunRefused(STORE_AWAY) from None
        if _text(out[0]) == "refused":
            refuse_start([float(_text(s)) for s in out[2:]], int(_text(out[1])), now=now, limit=limit, window=window)
            raise ClientRunRefused("The client checker cannot start a run right now; try again shortly.")  # not reached
        return ClientRun(run_id, visitor, now, expires)

    def get(self, run_id: str) -> ClientRun | None:
        if not RUN_ID.fullmatch(run_id):
            return None
        try:
            raw = self.client.hgetall(self._key("run", run_id))
        except redis.exceptions.RedisError as exc:
            log.warning("check-client: the run store in Redis is unavailable: %s", exc)
            return None
        if not raw:
            return None
        got = {_text(k): _text(v) for k, v in raw.items()}
        run = ClientRun(run_id, got["visitor"], float(got["started"]), float(got["expires"]), int(got["calls"]),
                        int(got["bytes"]), got.get("output", ""),
                        int(got["exit_code"]) if got.get("exit_code", "") != "" else None, got.get("choices") == "1")
        return run if run.expires > self.clock() else None

    def record(self, run_id: str, tool: str, size: int, entry: Entry) -> str:
        if not RUN_ID.fullmatch(run_id):
            raise RunGone(run_id)
        now = self.clock()
        try:
            out = self._record(keys=[self._key("run", run_id), self._key("tools", run_id)],
                               args=[repr(now), size, tool, MAX_CALLS, MAX_RUN_BYTES, self._ttl_ms])
            kind = _text(out[0])
            if kind == "gone":
                raise RunGone(run_id)
            if kind == "refused":
                counted = ClientRun(run_id, "", now, now, int(_text(out[1])), int(_text(out[2])))
                raise CallRefused(call_problem(counted, size) or "this grading run takes no more requests")
            seq, n = int(out[1]), int(out[2])
            text = entry(n, now)
            pipe = self.client.pipeline()
            pipe.hset(self._key("calls", run_id), str(seq), text)
            pipe.pexpire(self._key("calls", run_id), self._ttl_ms)
            pipe.execute()
            return text
        except redis.exceptions.RedisError as exc:
            log.warning("check-client: the run store in Redis is unavailable: %s", exc)
            raise RunGone(run_id) from None

    def calls(self, run_id: str) -> list[str]:
        if self.get(run_id) is None:
            return []
        try:
            raw = self.client.hgetall(self._key("calls", run_id))
        except redis.exceptions.RedisError as exc:
            log.warning("check-client: the run store in Redis is unavailable: %s", exc)
            return []
        return [_text(v) for _, v in sorted(raw.items(), key=lambda kv: int(_text(kv[0])))]

    def note(self, run_id: str, output: str, exit_code: int | None, choices_known: bool) -> None:
        if self.get(run_id) is None:
            raise RunGone(run_id)
        try:
            self.client.hset(self._key("run", run_id), mapping={
                "output": output[:MAX_OUTPUT], "exit_code": "" if exit_code is None else str(exit_code),
                "choices": "1" if choices_known else "0"})
        except redis.exceptions.RedisError as exc:
            log.warning("check-client: the run store in Redis is unavailable: %s", exc)
            raise RunGone(run_id) from None
