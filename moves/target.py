"""What the move engine plays against: the `Target` protocol, the `Reply` it returns, the `Outcome` enum.

A target is anything that answers MCP 2026-07-28 requests for two principals: the lab's in-process
server (which also exposes its check trace and log), an HTTP endpoint (two bearer tokens), or a
stdio command (one process per principal). The engine speaks only this protocol, so a move is
played the same way against every target. This module owns types only: no I/O, no Flask.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from mrtr import JSONObject

#: Who sends a message: the principal the ticket was minted for, or the other one (the thief), or the
#: owner again from a second process or connection (to tell "bound to its principal" from "bound to the
#: process that minted it").
Role = Literal["owner", "other", "owner-again"]

#: Called while a target waits out real time: (seconds waited so far, seconds to wait in all).
Progress = Callable[[float, float], None]


class Outcome(enum.StrEnum):
    """What a move's last message got, read off the wire alone."""

    COMPLETED = "completed"  # a complete result (the work was done, or the answer was honoured)
    REFUSED = "refused"  # a JSON-RPC error, or an isError result, instead of the work
    ASKED_AGAIN = "asked-again"  # resultType "input_required" once more
    ENDED = "ended"  # a complete result unlike an accepted call's: the call ended without the work
    #: Never observed: the expectation "anything but the work" (a refusal, an ending, or a fresh question).
    NOT_DONE = "not-done"
    ERROR = "error"  # no usable answer: transport failure, timeout, not JSON-RPC
    NOT_RUN = "not-run"  # skipped (for example --skip-late), or an earlier step could not be played


@dataclass
class Reply:
    """What one request produced on a target."""

    #: The JSON-RPC response (result or error) to the request sent, or None when none came back.
    #: Targets other than the in-process lab server have checked its envelope (`moves.targets.remote.check_response`):
    #: a JSON-RPC 2.0 response to the request's id whose result or error is an object; what is inside is the peer's.
    response: JSONObject | None
    #: Everything else received while waiting for it (progress notifications, ...), in order.
    notifications: list[JSONObject] = field(default_factory=list)
    #: The HTTP status, for HTTP targets; None elsewhere.
    http_status: int | None = None
    #: The ticket checks the server ran, in order, as `{"check", "outcome", "detail"}` dicts.
    #: Only targets that expose them (the in-process lab server) fill this; remote ones leave None.
    trace: list[dict[str, str]] | None = None
    #: Server log lines this request caused; in-process only.
    log: list[str] = field(default_factory=list)
    #: Why there is no usable response ("timed out after 10 s", "HTTP 502 with an HTML body", ...).
    transport_error: str | None = None
    #: True when no answer came within the target's time-out (the checker stops the run there).
    timed_out: bool = False


class Target(Protocol):
    """Where moves are played. Implementations: `moves.targets.in_process`, `.http`, `.stdio`."""

    @property
    def label(self) -> str:
        """Shown in reports: the URL, the command, or "lab server"."""
        ...

    @property
    def owner(self) -> str:
        """The display name of the principal a ticket is minted for, for example "bob"."""
        ...

    @property
    def other(self) -> str:
        """The display name of the other principal (the thief), for example "alice"."""
        ...

    def send(self, role: Role, message: JSONObject) -> Reply:
        """Send one JSON-RPC request as `role` and return what came back. Never raises for a bad peer."""
        ...

    def begin(self) -> None:
        """Mark "now" as the moment a new ticket is minted; `advance` counts from here."""
        ...

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None,
                on_progress: Progress | None = None) -> bool:
        """Let time pass until `seconds` after `begin()`, as this target can.

        The lab server jumps its fake clock exactly. Remote targets send in-time moves at once and,
        for a `past_expiry` move, really wait until just past `expires_at` (the ticket's `exp`, when
        its payload is readable) or their configured wait. Returns False when the target skips such
        a wait (`--skip-late`): the engine then reports the move as NOT_RUN.
        """
        ...

    def close(self) -> None:
        """Release processes and connections. Safe to call twice."""
        ...
