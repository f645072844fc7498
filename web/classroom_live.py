"""Wake-ups for the presenter's live views, within one process and across processes through Redis.

A change to a class is written to the shared store first; then `notify(class_id)` wakes every
stream watching that class. In-process that is a condition variable. With `MRTR_REDIS_URL` set, the
notice is also published on the channel `mrtr:class:<id>` and one listener thread per process
(started on first use, so after gunicorn forks) turns messages from other processes into local
wake-ups. Streams also re-read the store every `poll_seconds`, so a lost notice only delays a view.
Notices carry no data: nothing secret or personal crosses Redis. Never renders, never reads a request.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger("mrtr.classroom")
CHANNEL_PREFIX = "mrtr:class:"


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


class RedisBus(LocalBus):
    """LocalBus plus Redis pub/sub, so every process serving a class hears about every change."""

    def __init__(self, url: str) -> None:
        super().__init__()
        import redis  # only when asked for: redis is optional at runtime

        self._client: Any = redis.Redis.from_url(url)
        self._listener: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._ready = threading.Event()
        self.ensure_listening()  # subscribed before this process serves its first live view

    def _listen(self) -> None:
        while True:
            try:
                pubsub = self._client.pubsub()
                pubsub.psubscribe(CHANNEL_PREFIX + "*")
                for _ in range(50):  # wait for Redis to confirm: from then on no notice is missed
                    confirmed = pubsub.get_message(timeout=0.2)
                    if confirmed and confirmed.get("type") == "psubscribe":
                        break
                self._ready.set()
                for message in pubsub.listen():
                    if message.get("type") != "pmessage":
                        continue
                    channel = message.get("channel")
                    if isinstance(channel, bytes):
                        channel = channel.decode("utf-8", "replace")
                    if isinstance(channel, str) and channel.startswith(CHANNEL_PREFIX):
                        super().notify(channel[len(CHANNEL_PREFIX):])
            except Exception:  # noqa: BLE001 - a dropped connection must not end the listener
                log.warning("classroom: Redis pub/sub listener lost its connection; reconnecting", exc_info=True)
                threading.Event().wait(1.0)

    def ensure_listening(self) -> None:
        with self._start_lock:
            if self._listener is None or not self._listener.is_alive():
                self._listener = threading.Thread(target=self._listen, name="classroom-redis", daemon=True)
                self._listener.start()
        self._ready.wait(timeout=10.0)

    def notify(self, class_id: str) -> None:
        super().notify(class_id)
        try:
            self._client.publish(CHANNEL_PREFIX + class_id, b"1")
        except Exception:  # noqa: BLE001 - the store has the change; other processes catch up by polling
            log.warning("classroom: could not publish a change to Redis", exc_info=True)

    def wait(self, class_id: str, seen: int, timeout: float) -> int:
        self.ensure_listening()
        return super().wait(class_id, seen, timeout)


def make_bus(redis_url: str | None) -> LocalBus:
    return RedisBus(redis_url) if redis_url else LocalBus()
