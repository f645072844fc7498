"""The redeemed-ticket store in Redis, for replicas on several hosts: a ticket is claimed, then committed.

One key per ticket id, `<prefix><jti>`. /mcp spends a ticket in two steps around the work (`mrtr.ClaimingStore`):

1. `claim`: a script that sets `p:<attempt>` for the lease unless the key exists (and says what was there):
   atomic in Redis, so two replicas racing for the same ticket can never both win. It answers "claimed" (this
   attempt holds it), "spent" (a committed ticket, or `1` written by `redeem`) or "busy" (another attempt holds
   it right now; the caller answers a retryable 503, never "spent", because that attempt may still fail).
2. `commit` after the work: the claim becomes `d` (done) for the ticket's remaining life (a script: only this
   attempt's own claim, or nothing at all, is turned into `d`).
   `release` when the work failed: this attempt's claim is deleted (a script: only its own), so the same
   request can be tried again.

Why two steps: Redis that freezes (a stall, SIGSTOP) still holds a command that timed out in its socket and
runs it once it wakes. A one-step redeem answered "unavailable, retry" could then land anyway, and the honest
retry that followed was refused: spent but not done. Here what lands late is only a claim, and a claim ends:
the attempt that failed releases it (now, or once Redis answers again: see below), and a claim nobody ends runs
out after `LEASE` seconds (a process that died). So after Redis recovers the same retry completes, exactly once:
never twice (a live claim or `d` refuses every copy), never spent but not done.

`commit` and `release` never raise. When Redis cannot take them, they are kept in this process and delivered
by a background thread (every `REDELIVER_EVERY` seconds) until Redis takes them; until then a retry is told
"busy" (try again), never "spent". A commit that cannot be delivered does not turn a finished answer into a
503: the claim keeps every copy out until the commit lands. The one gap left: a process that dies while Redis
is away and holds an undelivered commit; its claim runs out after `LEASE` and that ticket could be redeemed
once more. Tickets live minutes, the lease half a minute, so this needs Redis away and a crash together.

The time-to-live is computed from the caller's `now` (stores never read the clock), relative, so the store is
correct under an injected clock. Redis that cannot be reached (down, timing out, refusing writes when full)
raises `StoreUnavailable` from `claim` and `redeem`, never a driver exception: single use fails closed with a
retryable error. Every command waits at most `redis_clients.REQUEST_TIMEOUT` and passes the process's gate.

Memory: scripts/cluster.sh starts Redis with `maxmemory` and `maxmemory-policy noeviction`. Every policy that
evicts could pick these keys (they all carry a time-to-live, which is what `volatile-*` looks for), and an
evicted spent ticket is a replay. Under `noeviction` a full Redis refuses writes instead: claims fail closed
(503), nothing is forgotten; the caps on everything else a visitor can make the server store keep it from
filling.

This module imports `redis`; the app imports this module only when Redis is configured.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import deque
from collections.abc import Callable
from typing import TypeAlias

import redis
from redis.commands.core import Script

from mrtr import Claim, StoreUnavailable
from mrtr_stores.redis_clients import REQUEST_TIMEOUT, RedisBusy, redis_client

log = logging.getLogger("mrtr.stores")

DEFAULT_PREFIX = "mrtr:redeemed:"
#: Seconds to wait for Redis to accept a connection or answer a command before it counts as down.
REDIS_TIMEOUT = REQUEST_TIMEOUT
#: Seconds a claim lasts if nobody commits or releases it (its attempt's process died): far longer than any
#: call's work, short enough that a retry is not refused for long.
LEASE = 30.0
#: Seconds between two tries to deliver commits and releases Redis could not take.
REDELIVER_EVERY = 0.5
#: The most undelivered commits and releases kept; past it the oldest releases go first (a release lost only
#: makes a retry wait for its claim to run out).
MAX_UNDELIVERED = 10_000
DONE = b"d"
#: What one of this store's scripts answers: nil (None), the key's value (bytes; str from a client that decodes
#: replies), or a count.
ScriptReply: TypeAlias = bytes | str | int | None

#: Claim the key for ARGV[1] during ARGV[2] ms unless it is there; what was there (nil: claimed now).
_CLAIM = """
local before = redis.call('GET', KEYS[1])
if before then
  return before
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
"""
#: Turn this attempt's claim (or no key at all) into `d` for the ticket's remaining life. 1: done; 0: another
#: attempt's claim or a spent ticket was there (logged: only a claim that ran out can lead there).
_COMMIT = """
local seen = redis.call('GET', KEYS[1])
if seen == ARGV[1] or not seen then
  redis.call('SET', KEYS[1], 'd', 'PX', ARGV[2])
  return 1
end
return 0
"""
#: Delete this attempt's claim, and nothing else.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
#: SCAN page size for `__len__`; a hint to Redis, not a limit.
SCAN_COUNT = 1000


class RedisStore:
    """Spent ticket ids in Redis, shared by every replica that talks to the same server."""

    def __init__(self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX,
                 wait: Callable[[float], object] | None = None) -> None:
        if not prefix:
            raise ValueError("a RedisStore needs a non-empty key prefix")
        self.client = client
        self.prefix = prefix
        self._claim = client.register_script(_CLAIM)
        self._commit = client.register_script(_COMMIT)
        self._release = client.register_script(_RELEASE)
        #: Commits and releases Redis has not taken yet: (kind, key, claim value, ttl in ms).
        self._undelivered: deque[tuple[str, str, bytes, int]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._wait = wait or self._wake.wait
        self._courier: threading.Thread | None = None

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX, timeout: float = REDIS_TIMEOUT) -> RedisStore:
        """Connect lazily to `url` (redis://host:port/db, rediss://…, unix://…)."""
        return cls(redis_client(url, timeout=timeout), prefix=prefix)

    def key(self, jti: str) -> str:
        return self.prefix + jti

    def claim(self, jti: str, exp: float, now: float, attempt: str) -> Claim:
        """Claim `jti` for `attempt` until commit, release or `LEASE` (never past the ticket's expiry)."""
        lease_ms = min(_ttl_ms(exp, now), math.ceil(LEASE * 1000))
        try:
            before = self._run(self._claim, self.key(jti), _claim_value(attempt), lease_ms)
        except redis.exceptions.RedisError as exc:
            if not isinstance(exc, RedisBusy):  # it was sent, and may land once Redis wakes: end it then
                self._queue("release", self.key(jti), _claim_value(attempt), 0)
            raise StoreUnavailable(f"Redis store: {type(exc).__name__}: {exc}") from exc
        if before is None:
            return "claimed"
        held = before if isinstance(before, bytes) else str(before).encode()
        return "busy" if held.startswith(b"p:") else "spent"

    def commit(self, jti: str, exp: float, now: float, attempt: str) -> None:
        """The work is done: `jti` is spent for the rest of its life. Delivered later if Redis is away now."""
        self._send("commit", self.key(jti), _claim_value(attempt), _ttl_ms(exp, now))

    def release(self, jti: str, attempt: str) -> None:
        """The work failed: `attempt` lets go of `jti`, so the same request may be tried again."""
        self._send("release", self.key(jti), _claim_value(attempt), 0)

    def _send(self, kind: str, key: str, value: bytes, ttl_ms: int) -> None:
        try:
            self._apply(kind, key, value, ttl_ms)
        except redis.exceptions.RedisError as exc:
            log.warning("redeemed store: Redis did not take a %s (%s: %s); it is delivered once Redis answers",
                        kind, type(exc).__name__, exc)
            self._queue(kind, key, value, ttl_ms)

    def _apply(self, kind: str, key: str, value: bytes, ttl_ms: int) -> None:
        if kind == "commit":
            if not self._run(self._commit, key, value, ttl_ms):
                log.error("redeemed store: the claim on %s ran out and was taken before its commit landed", key)
        else:
            self._run(self._release, key, value)

    def _run(self, script: Script, key: str, *args: bytes | int) -> ScriptReply:
        """One script on one key: a single EVALSHA, one round trip. redis-py's `Script.__call__` does the same plus
        an import and argument copies on every call (9% of a claim and commit's instructions: bench/RESULTS.md); its
        loading is kept for a Redis that lost its script cache (restarted): NOSCRIPT sends the script once, through
        it."""
        # redis-py leaves a script's answer untyped; these scripts' answers are ScriptReply (their callers narrow).
        reply: ScriptReply
        try:
            reply = self.client.evalsha(script.sha, 1, key, *args)
        except redis.exceptions.NoScriptError:
            reply = script(keys=[key], args=list(args))
        return reply

    def _queue(self, kind: str, key: str, value: bytes, ttl_ms: int) -> None:
        with self._lock:
            if len(self._undelivered) >= MAX_UNDELIVERED:
                for i, item in enumerate(self._undelivered):
                    if item[0] == "release":
                        del self._undelivered[i]
                        break
                else:
                    self._undelivered.popleft()
            self._undelivered.append((kind, key, value, ttl_ms))
            if self._courier is None or not self._courier.is_alive():
                self._courier = threading.Thread(target=self._redeliver, name="redeemed-courier", daemon=True)
                self._courier.start()

    def deliver(self) -> int:
        """Deliver what Redis did not take before, oldest first; stops at the first failure. How many are left."""
        while True:
            with self._lock:
                if not self._undelivered:
                    return 0
                item = self._undelivered[0]
            try:
                self._apply(*item)
            except redis.exceptions.RedisError:
                with self._lock:
                    return len(self._undelivered)
            with self._lock:
                if self._undelivered and self._undelivered[0] is item:
                    self._undelivered.popleft()

    @property
    def undelivered(self) -> int:
        with self._lock:
            return len(self._undelivered)

    def _redeliver(self) -> None:
        while True:
            self._wait(REDELIVER_EVERY)  # Redis has just failed: give it a moment first
            if not self.deliver():
                return

    def redeem(self, jti: str, exp: float, now: float) -> bool:
        """True the first time `jti` is redeemed, false after, until the ticket expires."""
        try:
            return bool(self.client.set(self.key(jti), b"1", nx=True, px=_ttl_ms(exp, now)))
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


def _ttl_ms(exp: float, now: float) -> int:
    # At least 1 ms: Redis refuses PX 0, and a ticket at or past its expiry never reaches here (the expiry check
    # comes first), so the floor only guards the boundary.
    return max(1, math.ceil((float(exp) - float(now)) * 1000))


def _claim_value(attempt: str) -> bytes:
    return b"p:" + attempt.encode()


def _glob_escape(text: str) -> str:
    """Escape Redis glob metacharacters so the prefix matches only itself."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
