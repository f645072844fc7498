"""The MRTR server: one message in, messages out, and the trace of every ticket check.

Rule 1: no I/O. A `Connection` is fed parsed or raw JSON-RPC messages and returns an `Exchange`
with the messages to send back; adapters (stdio, Flask, the playground) move the bytes.
Rule 2: time comes from the injected clock, never from the system.
Rule 3: every exception becomes a wire error in exactly one place, `Connection._respond`.

Two eras share one method table. A request whose `params._meta` names a protocol version is
served statelessly (2026-07-28, `modern.py`): nothing from earlier requests is trusted. An
`initialize` without that `_meta` starts a 2025-11-25 session on this connection (`legacy.py`);
there, when a handler returns input_required, the legacy shim turns each question into a real
server-to-client request, waits for the answers, and runs the same handler again with them.

What this module owns: `Server`, the shared and stateless part (catalog, keys, redeemed store,
clock, policy). The catalog is required: the server never picks one for itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ._connection import Connection
from ._handler import DEFAULT_POLICY, Policy
from ._primitives import Catalog
from ._version import __version__
from .clock import Clock
from .keys import KeyRing
from .messages import JSON, RequestId
from .protocol import Exchange
from .redeemed import RedeemedStore
from .tickets import DEFAULT_TTL, TicketCodec


class Server:
    """The shared, stateless part: catalog, keys, redeemed store, clock and policy."""

    def __init__(
        self,
        *,
        ring: KeyRing,
        store: RedeemedStore,
        clock: Clock,
        catalog: Catalog,
        policy: Policy = DEFAULT_POLICY,
        ttl: int = DEFAULT_TTL,
        name: str = "mrtr-lab",
        instructions: str = "A teaching server: the deploy tool asks for confirmation with input_required.",
        shim_max_rounds: int = 8,
        shim_round_timeout: float = 300.0,
        on_log: Callable[[str], None] | None = None,
        jti: Callable[[], str] | None = None,
        operator_log: bool = True,
    ) -> None:
        self.ring = ring
        self.store = store
        self.clock = clock
        self.catalog = catalog
        self.policy = policy
        self.ttl = ttl
        self.jti = jti  # ticket-id generator for deterministic demos; None means random ids
        self.codec = TicketCodec(ring, sealed=policy.sealed, ttl=ttl, jti=jti)
        self.info = {"name": name, "version": __version__}
        self.instructions = instructions
        self.shim_max_rounds = shim_max_rounds
        self.shim_round_timeout = shim_round_timeout
        self.on_log = on_log
        #: Whether refused tickets go to the operator's log ("mrtr"); the pages' lab servers say no, since
        #: their refusals are the lesson, shown on the page, and would drown the real ones.
        self.operator_log = operator_log

    def with_policy(self, policy: Policy) -> Server:
        """The same server (keys, store, clock, catalog) under other switches."""
        clone = object.__new__(Server)
        clone.__dict__.update(self.__dict__)
        clone.policy = policy
        clone.codec = TicketCodec(self.ring, sealed=policy.sealed, ttl=self.ttl, jti=self.jti)
        return clone

    def connect(self, principal: str, *, channel: bool = True,
                request_ids: Iterator[RequestId] | None = None) -> Connection:
        """A connection for one stdio process or one HTTP session (`channel`: can we ask the client?;
        `request_ids`: the ids of the questions it sends, when they must be unique beyond this process)."""
        return Connection(self, principal, channel=channel, request_ids=request_ids)

    def handle(self, message: JSON, *, principal: str, check_text: bool = True, check_depth: bool = True) -> Exchange:
        """Serve one stateless message: the whole contract of the 2026-07-28 era.

        `check_text=False` is for adapters that parsed raw text already shown free of lone
        surrogates by `may_hold_surrogates`; everyone else lets the server scan the strings. `check_depth=False`
        likewise, for raw text whose `nesting_bound` is within `MAX_JSON_DEPTH`.
        """
        return Connection(self, principal, channel=False, stateless=True).receive(
            message, check_text=check_text, check_depth=check_depth)
