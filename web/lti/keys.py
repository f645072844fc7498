"""The platforms' key sets (JWKS), cached per process: what verifies a launch's signature without a fetch each time.

Why: pylti1p3 fetches the registered key set URL on every launch. Forged launches cost an attacker nothing, so
each one made the tool fetch, and while the platform was slow each held a server thread for the whole time-out.
Here a key set is fetched with a short time-out (`FETCH_TIMEOUT`), kept as long as the platform's
`Cache-Control` says (`max-age`, clamped between `MIN_FRESH` and `MAX_FRESH`; `DEFAULT_FRESH` when it says
nothing), and fetched again before then only for a key id it does not hold (a platform rotating its keys), at
most once every `REFETCH_EVERY` per URL. One fetch per URL runs at a time: a launch that arrives meanwhile uses
the keys already held; with none yet (a cold cache: 12 honest launches at once had refused one), it waits for that
one fetch, at most its time-out, and only `MAX_WAITERS` launches per URL wait at once (the rest are refused at
once), so a slow platform holds a bounded number of threads, for a bounded time.

What it must never do: follow a redirect or fetch any URL but the registered one (the caller's session refuses
redirects: web/lti/tool.py), or read the clock other than through its injected `clock`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import requests
from werkzeug.http import parse_cache_control_header

from mrtr import JSON, JSONObject
from mrtr.messages import as_list

#: Seconds to connect to the platform and to read its key set.
FETCH_TIMEOUT = (2.0, 2.0)
#: Seconds a key set is kept when the platform's Cache-Control says nothing, and the bounds of what it may say.
DEFAULT_FRESH, MIN_FRESH, MAX_FRESH = 3600.0, 60.0, 86_400.0
#: The shortest time between two fetches of one URL, whatever a launch's key id (unknown keys, failures).
REFETCH_EVERY = 60.0
#: The largest key set kept, in bytes of JSON: a platform publishes a few keys.
MAX_KEY_SET = 256 * 1024
#: Launches per URL that may wait for the fetch in flight when no keys are held yet.
MAX_WAITERS = 16


class KeySetUnavailable(Exception):
    """No key set is held for the URL and none could be fetched now (the launch is refused; the reason is logged)."""


@dataclass
class _Entry:
    keys: JSONObject | None = None
    fresh_until: float = 0.0
    fetched_at: float | None = None  # the last attempt, successful or not
    fetching: bool = False
    done: threading.Event = field(default_factory=threading.Event)  # set when the fetch in flight ends
    waiters: int = 0


class KeySetCache:
    """Key sets by URL, shared by every launch this process verifies."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.fetches = 0

    def get(self, url: str, kid: str | None, session: requests.Session) -> JSONObject:
        """The key set for `url` that should hold `kid`; fetched when stale, or for an unknown kid once a minute."""
        now = self.clock()
        with self._lock:
            entry = self._entries.setdefault(url, _Entry())
            held = entry.keys
            if held is not None and now < entry.fresh_until and (kid is None or kid in _kids(held)):
                return held
            may_fetch = not entry.fetching and (entry.fetched_at is None or now - entry.fetched_at >= REFETCH_EVERY)
            if not may_fetch:
                if held is not None:
                    return held  # the launch is checked against what is held (an unknown kid fails there)
                if not entry.fetching or entry.waiters >= MAX_WAITERS:
                    raise KeySetUnavailable(f"no key set from {url} yet; the next fetch may run in a minute at most")
                entry.waiters += 1
                done = entry.done
            else:
                entry.fetching, entry.fetched_at, entry.done = True, now, threading.Event()
                done = None
        if done is not None:
            return self._wait_for_fetch(url, entry, done)
        try:
            keys, lifetime = self._fetch(url, session)
        except Exception as exc:
            with self._lock:
                entry.fetching = False
            entry.done.set()
            if held is not None:
                return held  # a platform that is down now: the keys it published before still verify
            raise KeySetUnavailable(f"the key set at {url} could not be fetched: {type(exc).__name__}") from exc
        with self._lock:
            entry.keys, entry.fresh_until, entry.fetching = keys, self.clock() + lifetime, False
        entry.done.set()
        return keys

    def waiting(self, url: str) -> int:
        """How many launches wait for the fetch of `url` in flight."""
        with self._lock:
            entry = self._entries.get(url)
            return entry.waiters if entry is not None else 0

    def _wait_for_fetch(self, url: str, entry: _Entry, done: threading.Event) -> JSONObject:
        """The keys of the fetch in flight, once it ends (at most its time-out); refused when it brought none."""
        try:
            done.wait(sum(FETCH_TIMEOUT) + 1.0)
        finally:
            with self._lock:
                entry.waiters -= 1
        with self._lock:
            keys = entry.keys
        if keys is None:
            raise KeySetUnavailable(f"the key set at {url} could not be fetched (a launch waited for the fetch)")
        return keys

    def _fetch(self, url: str, session: requests.Session) -> tuple[JSONObject, float]:
        self.fetches += 1
        response = session.get(url, timeout=FETCH_TIMEOUT, stream=True)
        try:
            response.raise_for_status()
            body = response.raw.read(MAX_KEY_SET + 1, decode_content=True)
        finally:
            response.close()
        if len(body) > MAX_KEY_SET:
            raise ValueError(f"a key set larger than {MAX_KEY_SET} bytes")
        keys: JSON = json.loads(body)
        if not isinstance(keys, dict) or not isinstance(keys.get("keys"), list):
            raise ValueError("not a JWK Set")
        return keys, _lifetime(response.headers.get("Cache-Control"))


def _kids(keys: JSONObject) -> set[str]:
    return {str(k.get("kid")) for k in as_list(keys.get("keys")) if isinstance(k, dict)}


def _lifetime(header: str | None) -> float:
    """How long to keep a key set, from the platform's Cache-Control."""
    if not header:
        return DEFAULT_FRESH
    control = parse_cache_control_header(header)
    if control.no_store or control.no_cache:
        return MIN_FRESH
    if control.max_age is None:
        return DEFAULT_FRESH
    return min(MAX_FRESH, max(MIN_FRESH, float(control.max_age)))
