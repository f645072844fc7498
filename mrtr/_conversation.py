"""What serving one message needs to know, whichever era serves it.

What this module owns: `ServerView`, the part of a server the eras read (its catalog, codec,
clock, policy, store, identity and limits; `mrtr.Server` is one), and `Conversation`: that
server, who is speaking, and what serving the current message has produced so far (log lines,
notifications to send before the response). Both eras work on a `Conversation`; neither inherits
from the other. It must never serve a method itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from ._handler import Policy
from ._primitives import Catalog
from .clock import Clock
from .messages import JSONObject
from .redeemed import RedeemedStore
from .tickets import TicketCodec

log = logging.getLogger("mrtr")


class ServerView(Protocol):
    """The server as the eras see it: read only."""

    @property
    def catalog(self) -> Catalog: ...
    @property
    def codec(self) -> TicketCodec: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def policy(self) -> Policy: ...
    @property
    def store(self) -> RedeemedStore: ...
    @property
    def ttl(self) -> int: ...
    @property
    def info(self) -> dict[str, str]: ...
    @property
    def instructions(self) -> str: ...
    @property
    def shim_max_rounds(self) -> int: ...
    @property
    def shim_round_timeout(self) -> float: ...
    @property
    def on_log(self) -> Callable[[str], None] | None: ...
    @property
    def operator_log(self) -> bool: ...


class Conversation:
    """The server, who is speaking, and what serving the current message produced."""

    def __init__(self, server: ServerView, principal: str, *, stateless: bool = False) -> None:
        self.server = server
        self.principal = principal
        self.stateless = stateless
        self.log: list[str] = []
        self.outbox: list[JSONObject] = []  # notifications that go out before this message's response

    def begin(self) -> None:
        """Start serving a new message: nothing logged or queued yet."""
        self.log = []
        self.outbox = []

    def note(self, line: str) -> None:
        self.log.append(line)
        log.debug(line)
        if self.server.on_log:
            self.server.on_log(line)
