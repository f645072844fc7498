"""The redeemed-ticket store's contract, and the one in memory.

Signing cannot make a ticket single-use; only memory on the server side can. Every store offers
one atomic operation, `redeem(jti, exp, now)`, true the first time an id is redeemed and false
after. An id is kept only until its ticket's expiry: after that the expiry check refuses the
ticket anyway, so eviction is safe and memory stays flat. Stores never read the clock; the
caller passes `now`. A store that cannot answer raises `StoreUnavailable`, never a driver
exception. Stores on disk or in Redis live in `mrtr_stores`; this module opens nothing.

A store whose answer can be lost on the way back (Redis over a network: a command that timed out may
still land once Redis wakes up) also offers `ClaimingStore`: `claim` before the work, `commit` after it,
`release` when the work failed. A redeem in one step, answered "unavailable" although it landed, would
leave the ticket spent while the client was told to retry; a claim that landed unseen is instead released
(or runs out), so the retry still completes, exactly once. The reasoning is in docs/security-notes.md.
"""

from __future__ import annotations

import heapq
import threading
from typing import Literal, Protocol, runtime_checkable

#: What a claim found: the ticket is now this attempt's (until commit or release), it was spent, or another
#: attempt holds it right now (the caller answers "retry", never "spent": that attempt may still fail).
Claim = Literal["claimed", "spent", "busy"]


class RedeemedStore(Protocol):
    def redeem(self, jti: str, exp: float, now: float) -> bool: ...

    def __len__(self) -> int: ...


@runtime_checkable
class ClaimingStore(Protocol):
    """A redeemed store that spends a ticket in two steps around the work (see the module's docstring).

    `claim` raises `StoreUnavailable` when the store cannot answer; `commit` and `release` never raise: a store
    that cannot reach its backend keeps them and delivers them once it can (a claim also runs out by itself).
    """

    def claim(self, jti: str, exp: float, now: float, attempt: str) -> Claim: ...

    def commit(self, jti: str, exp: float, now: float, attempt: str) -> None: ...

    def release(self, jti: str, attempt: str) -> None: ...


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
