"""Wake-ups for the presenter's live views, within one process and across processes through Redis.

A change to a class is written to the shared store first; then `notify(class_id)` wakes every
stream watching that class. In-process that is a condition variable. With `MRTR_REDIS_URL` set, the
notice is also published on the channel `mrtr:class:<id>` and one listener thread per process
(started on first use, so after gunicorn forks) turns messages from other processes into local
wake-ups. Streams also re-read the store every `poll_seconds`, so a lost notice only delays a view.
Notices carry no data: nothing secret or personal crosses Redis. Never renders, never reads a request.
It lives with the stores because it is Redis I/O, which the web app never does itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # redis is imported at run time only when a Redis URL is configured
    import redis
    from redis.client import PubSub

log = logging.getLogger("mrtr.classroom")
CHANNEL_PREFIX = "mrtr:class:"


class _Subscribing(Protocol):
    """What the listener needs of its client: redis-py leaves `pubsub` untyped, so its type is said here."""

    def pubsub(self) -> PubSub: ...


class LocalBus:
    """Per-process wake-ups: a counter per class and one condition variable."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ticks: dict[str, int] = {}

    def tick(self, class_id: str) -> int:
        with self._cond:
            return self._ticks.get(class_id, 0)

    def notify(self, class_id: str) -> None:
        with self._cond:
            self._ticks[class_id] = self._ticks.get(class_id, 0) + 1
            self._cond.notify_all()

    def wait(self, class_id: str, seen: int, timeout: float) -> int:
        """Block until `class_id` ticks past `seen` or `timeout` seconds pass; returns the tick now."""
        with self._cond:
            self._cond.wait_for(lambda: self._ticks.get(class_id, 0) != seen, timeout=timeout)
            return self._ticks.get(class_id, 0)


#: Seconds a Redis command or connection may take before Redis counts as away (no request waits longer).
REDIS_TIMEOUT = 2.0
#: The listener's wait before reconnecting: it doubles after each failure, up to the last value.
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0


class RedisBus(LocalBus):
    """LocalBus plus Redis pub/sub, so every process serving a class hears about every change.

    While Redis is away nothing waits for it: notices are not published (the change is in the store already,
    and every live view re-reads the store every `poll_seconds`, so views fall back to polling), and the
    listener reconnects in the background with a growing pause. The log says so once when Redis goes away and
    once when it is back, never once per attempt.
    """

    def __init__(self, url: str, *, client: redis.Redis | None = None, pause: Callable[[float], object] | None = None,
                 timeout: float = REDIS_TIMEOUT) -> None:
        super().__init__()
        if client is not None:
            publisher = client
        else:
            import redis  # only when asked for: redis is optional at runtime

            from mrtr_stores.redis_clients import redis_client

            # The listener's own connection, in its own thread: not gated, and its time-out is the listener's.
            client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
            # Publishing happens on a request's path: the request clients' short time-out and gate.
            publisher = redis_client(url)
        self._client: _Subscribing = client
        self._publisher: redis.Redis = publisher
        self._pause = pause or threading.Event().wait
        self._timeout = timeout
        self._listener: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._ready = threading.Event()
        self._state_lock = threading.Lock()
        #: None until the first connection attempt has ended; then whether Redis answered last time.
        self.up: bool | None = None
        self.ensure_listening(wait=timeout)  # subscribed before this process serves its first live view

    def _set_up(self, up: bool, why: str = "") -> None:
        """Record Redis's state; log only when it changes."""
        with self._state_lock:
            before, self.up = self.up, up
        if up and before is False:
            log.warning("classroom: Redis is back; live views are pushed again")
        elif not up and before is not False:
            log.warning("classroom: Redis is away (%s); live views re-read the store every few seconds "
                        "until it is back", why)

    def _listen(self) -> None:
        backoff = BACKOFF_FIRST
        while True:
            pubsub: PubSub | None = None
            try:
                pubsub = self._client.pubsub()
                pubsub.psubscribe(CHANNEL_PREFIX + "*")
                for _ in range(50):  # wait for Redis to confirm: from then on no notice is missed
                    confirmed = pubsub.get_message(timeout=0.2)
                    if confirmed and confirmed.get("type") == "psubscribe":
                        break
                self._set_up(True)
                self._ready.set()
                backoff = BACKOFF_FIRST
                # Listening with a timeout, so a connection that silently died is noticed and replaced.
                while True:
                    message = pubsub.get_message(timeout=1.0)
                    if message is None:
                        pubsub.ping()
                        continue
                    if message.get("type") != "pmessage":
                        continue
                    channel = message.get("channel")
                    if isinstance(channel, bytes):
                        channel = channel.decode("utf-8", "replace")
                    if isinstance(channel, str) and channel.startswith(CHANNEL_PREFIX):
                        super().notify(channel[len(CHANNEL_PREFIX):])
            except Exception as exc:  # noqa: BLE001 - a dropped connection must not end the listener
                self._set_up(False, f"{type(exc).__name__}: {str(exc)[:120]}")
                self._ready.set()  # nobody waits for a Redis that is away
                try:
                    if pubsub is not None:
                        pubsub.close()
                except Exception:  # noqa: BLE001 - closing a dead connection may fail too
                    pass
                self._pause(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)

    def ensure_listening(self, wait: float = 0.0) -> None:
        with self._start_lock:
            if self._listener is None or not self._listener.is_alive():
                self._listener = threading.Thread(target=self._listen, name="classroom-redis", daemon=True)
                self._listener.start()
        if wait:
            self._ready.wait(timeout=wait)

    def notify(self, class_id: str) -> None:
        super().notify(class_id)
        if self.up is False:
            return  # Redis is away: the store has the change, and every view re-reads it
        try:
            self._publisher.publish(CHANNEL_PREFIX + class_id, b"1")
        except Exception as exc:  # noqa: BLE001 - the store has the change; other processes catch up by polling
            self._set_up(False, f"{type(exc).__name__}: {str(exc)[:120]}")

    def wait(self, class_id: str, seen: int, timeout: float) -> int:
        self.ensure_listening()
        return super().wait(class_id, seen, timeout)


def make_bus(redis_url: str | None) -> LocalBus:
    return RedisBus(redis_url) if redis_url else LocalBus()
