"""Several server replicas behind a round-robin balancer, sharing only keys and the redeemed store.

This is the lesson's central claim made runnable: replica A mints a ticket and forgets, replica B
finishes the work from the ticket alone. Each replica is a separate `Server` object with nothing
in common with the others but the key ring, the redeemed-ticket store and the clock.
"""

from __future__ import annotations

import itertools
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .clock import Clock
from .keys import KeyRing
from .server import Exchange, Policy, Server
from .store import RedeemedStore


@dataclass(frozen=True)
class Answered:
    replica: str
    exchange: Exchange


class Balancer:
    """Hands each message to the next replica in turn and says which one answered."""

    def __init__(self, replicas: dict[str, Server]) -> None:
        if not replicas:
            raise ValueError("a balancer needs at least one replica")
        self.replicas = replicas
        self._order = itertools.cycle(list(replicas))
        self._lock = threading.Lock()

    def handle(self, message: Any, *, principal: str, replica: str | None = None) -> Answered:
        """Serve `message` on the next replica (or on `replica`, to pin one for a demo)."""
        with self._lock:
            name = replica if replica is not None else next(self._order)
        return Answered(name, self.replicas[name].handle(message, principal=principal))


def cluster(n: int, *, ring: KeyRing, store: RedeemedStore, clock: Clock, policy: Policy | None = None,
            ttl: int = 120, jti: Callable[[], str] | None = None) -> Balancer:
    """`n` independent replicas named A, B, C… sharing only `ring`, `store` and `clock`.

    `jti` (optional) replaces random ticket ids with a given sequence, for a replayable demo.
    """
    names = string.ascii_uppercase[:n]
    return Balancer({name: Server(ring=ring, store=store, clock=clock, policy=policy or Policy(), ttl=ttl,
                                  name=f"mrtr-lab-{name}", jti=jti) for name in names})
