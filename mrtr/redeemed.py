"""The redeemed-ticket store's contract, and the one in memory.

Signing cannot make a ticket single-use; only memory on the server side can. Every store offers
one atomic operation, `redeem(jti, exp, now)`, true the first time an id is redeemed and false
after. An id is kept only until its ticket's expiry: after that the expiry check refuses the
ticket anyway, so eviction is safe and memory stays flat. Stores never read the clock; the
caller passes `now`. A store that cannot answer raises `StoreUnavailable`, never a driver
exception. Stores on disk or in Redis live in `mrtr_stores`; this module opens nothing.
"""

from __future__ import annotations

import heapq
import threading
from typing import Protocol


class RedeemedStore(Protocol):
    def redeem(self, jti: str, exp: float, now: float) -> bool: ...

    def __len__(self) -> int: ...


class MemoryStore:
    """A per-process store. Replicas in one process can share one instance."""

    def __init__(self) -> None:
        self._spent: dict[str, float] = {}
        self._by_expiry: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def redeem(self, jti: str, exp: float, now: float) -> bool:
        with self._lock:
            self._evict(now)
            if jti in self._spent:
                return False
            self._spent[jti] = exp
            heapq.heappush(self._by_expiry, (exp, jti))
            return True

    def _evict(self, now: float) -> None:
        while self._by_expiry and self._by_expiry[0][0] <= now:
            _, jti = heapq.heappop(self._by_expiry)
            self._spent.pop(jti, None)

    def __len__(self) -> int:
        return len(self._spent)
