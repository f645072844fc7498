"""The in-process lab target: a real `mrtr.Server` on lab keys, a fake clock and a fresh store.

Owns `lab_server` (the one way pages build a server: lab keys only, the playground's switches) and
`LabTarget` (the engine's target over such a server, exposing each request's check trace and log).
A lab server never signs with a key /mcp accepts (`LabRing`) and never writes to the app's log or
store. Never imports Flask.
"""

from __future__ import annotations

from collections.abc import Callable

from moves.labcodec import LabCodec, LabRing
from moves.target import Progress, Reply, Role
from mrtr import DEFAULT_TTL, Catalog, FakeClock, JSONObject, MemoryStore, Policy, RedeemedStore, Server
from mrtr_toolsets.lesson import lesson_catalog


def lab_server(ring: LabRing, *, clock: Callable[[], float], single_use: bool = True, sealed: bool = False,
               verify_signature: bool = True, catalog: Catalog | None = None, ttl: int = DEFAULT_TTL,
               jti: Callable[[], str] | None = None, store: RedeemedStore | None = None,
               name: str = "mrtr-lab") -> Server:
    """A real server for the pages: lab keys, its own store (fresh unless given), the playground's switches."""
    if not isinstance(ring, LabRing):
        raise TypeError("lab servers run on lab keys only (a LabRing), never on the app's key ring")
    server = Server(ring=ring, store=store if store is not None else MemoryStore(), clock=clock,
                    catalog=catalog if catalog is not None else lesson_catalog(),
                    policy=Policy(single_use=single_use, sealed=sealed), ttl=ttl, name=name, jti=jti,
                    operator_log=False)
    server.codec = LabCodec(ring, sealed=sealed, ttl=ttl, jti=jti, verify_signature=verify_signature)
    return server


class LabStore:
    """A redeemed store whose spent ids can be listed, so a page can carry them to the next request."""

    def __init__(self, spent: list[str] | None = None, *, until: float = float("inf")) -> None:
        self._spent: dict[str, float] = dict.fromkeys(spent or [], until)

    def redeem(self, jti: str, exp: float, now: float) -> bool:
        self._spent = {k: v for k, v in self._spent.items() if v > now}
        if jti in self._spent:
            return False
        self._spent[jti] = exp
        return True

    @property
    def spent(self) -> list[str]:
        return list(self._spent)

    def __len__(self) -> int:
        return len(self._spent)


class LabTarget:
    """The engine's target over one lab server: exact fake time, the full check trace and log per reply.

    `begin()` marks the clock's current time as the mint; `advance(s)` sets the clock to that plus
    `s` exactly (past-expiry moves need no real wait). The server's store lives as long as the target.
    """

    label = "lab server"

    def __init__(self, server: Server, clock: FakeClock, *, owner: str = "bob", other: str = "alice") -> None:
        self.server = server
        self.clock = clock
        self.owner = owner
        self.other = other
        self.t0 = clock()

    def principal(self, role: Role) -> str:
        return self.other if role == "other" else self.owner

    def send(self, role: Role, message: JSONObject) -> Reply:
        exchange = self.server.handle(message, principal=self.principal(role))
        trace = exchange.trace.as_dicts() if exchange.trace is not None else []
        return Reply(response=exchange.response, notifications=[m for m in exchange.messages if "method" in m],
                     trace=trace, log=list(exchange.log))

    def begin(self) -> None:
        self.t0 = self.clock()

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None,
                on_progress: Progress | None = None) -> bool:
        self.clock.set(self.t0 + seconds)
        return True

    def close(self) -> None:
        pass


def lab_target(ring: LabRing, *, now: float, single_use: bool = True, sealed: bool = False,
               verify_signature: bool = True, catalog: Catalog | None = None, ttl: int = DEFAULT_TTL,
               jti: Callable[[], str] | None = None, store: RedeemedStore | None = None,
               owner: str = "bob", other: str = "alice") -> LabTarget:
    """A lab target on a fresh server (fresh store unless given) whose fake clock starts at `now`."""
    clock = FakeClock(now)
    server = lab_server(ring, clock=clock, single_use=single_use, sealed=sealed, verify_signature=verify_signature,
                        catalog=catalog, ttl=ttl, jti=jti, store=store)
    return LabTarget(server, clock, owner=owner, other=other)


__all__ = ["LabStore", "LabTarget", "lab_server", "lab_target"]
