"""The in-process lab target: a real `mrtr.Server` on lab keys, a fake clock and a fresh store.

Owns `lab_server` (the one way pages build a server: lab keys only, the playground's switches) and
`LabTarget` (the engine's target over such a server, exposing each request's check trace and log).
A lab server never signs with a key /mcp accepts (`LabRing`) and never writes to the app's log or
store. Never imports Flask.
"""

from __future__ import annotations

from collections.abc import Callable

from moves.labcodec import LabCodec, LabRing
from mrtr.catalog import Catalog
from mrtr.clock import FakeClock
from mrtr.server import Policy, Server
from mrtr.store import MemoryStore, RedeemedStore
from mrtr.tickets import DEFAULT_TTL


def lab_server(ring: LabRing, *, clock: Callable[[], float], single_use: bool = True, sealed: bool = False,
               verify_signature: bool = True, catalog: Catalog | None = None, ttl: int = DEFAULT_TTL,
               jti: Callable[[], str] | None = None, store: RedeemedStore | None = None,
               name: str = "mrtr-lab") -> Server:
    """A real server for the pages: lab keys, its own store (fresh unless given), the playground's switches."""
    if not isinstance(ring, LabRing):
        raise TypeError("lab servers run on lab keys only (a LabRing), never on the app's key ring")
    server = Server(ring=ring, store=store if store is not None else MemoryStore(), clock=clock, catalog=catalog,
                    policy=Policy(single_use=single_use, sealed=sealed), ttl=ttl, name=name, jti=jti)
    server.codec = LabCodec(ring, sealed=sealed, ttl=ttl, jti=jti, verify_signature=verify_signature)
    return server


__all__ = ["FakeClock", "lab_server"]
