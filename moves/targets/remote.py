"""What the HTTP and stdio targets share: the real-time wait of the late move, and reading replies.

Remote targets cannot move a server's clock. In-time moves are sent at once; a past-expiry move
waits, for real, until just past the ticket's `exp` (when the engine could read it) or the
configured `late_after`, or is skipped. `Timing` owns that wait, on an injected clock and sleep,
so tests can drive it without waiting. `check_response` turns "something came back" into either
a JSON-RPC response for the request sent (a JSON object; what is inside is the peer's) or a plain-words
reason why not.

This module never opens sockets or processes and never imports Flask.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeGuard

from moves.schedule import Slots
from moves.target import Progress
from mrtr import JSON, JSONObject

#: Seconds to wait past a readable `exp` before sending the late move (servers compare whole seconds).
EXPIRY_MARGIN = 1.0
#: The environment variable that tells a server the checker starts (a process, or a module loaded in the page)
#: which principal it serves, unless the author names another.
PRINCIPAL_ENV = "MRTR_PRINCIPAL"
#: How often the wait reports progress (seconds).
TICK = 0.1
#: A wait longer than this is refused rather than started (a server whose tickets live an hour).
MAX_WAIT = 30 * 60.0
#: Per-request timeout unless the caller gives one (seconds).
DEFAULT_TIMEOUT = 10.0
#: The most bytes one reply may take, body or stream (a guard against endless output).
MAX_REPLY_BYTES = 4 * 1024 * 1024


def _seconds(expires_at: float) -> float:
    """A readable exp in seconds: one absurdly far in the future is read as milliseconds."""
    return expires_at / 1000.0 if expires_at > 1e11 else expires_at


@dataclass
class Timing:
    """When the late move may be sent, and the wait until then.

    `late_after`: seconds after minting to wait when the ticket's expiry cannot be read.
    `skip_late`: never wait; the late move is reported as not run.
    """

    late_after: float | None = None
    skip_late: bool = False
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    max_wait: float = MAX_WAIT
    started: float = 0.0
    #: Why the last `advance` declined to wait (shown in the report), or None.
    skip_reason: str | None = None
    #: Where the last real wait came from, in words (shown beside the late move's verdict), or None.
    waited: str | None = None
    #: What the wait for unreadable expiries is called where the user sets it, and how to set it (the CLI's
    #: flag; the /check page names its form field instead).
    late_after_name: str = "--late-after"
    late_after_hint: str = "pass --late-after SECONDS"
    #: What skipping the late moves is called where the user sets it (the CLI's flag; the page's checkbox).
    skip_late_name: str = "--skip-late"
    #: When moves are played concurrently, each move's own copy (`for_move`) takes turns for its waits here
    #: (moves.schedule.Slots), under its catalogue index; None when moves are played one after another.
    gate: Slots | None = None
    index: int = 0

    def for_move(self, gate: Slots, index: int) -> Timing:
        """A copy for one move played concurrently: its own start and reasons, the same clock, sleep and limits."""
        return replace(self, gate=gate, index=index, started=self.started, skip_reason=None, waited=None)

    def begin(self) -> None:
        self.started = self.clock()
        self.skip_reason = None
        self.waited = None

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None,
                on_progress: Progress | None = None) -> bool:
        self.skip_reason = None
        self.waited = None
        if not past_expiry:
            return True  # a remote server's clock cannot be moved: in-time moves go at once
        if self._skipping():
            return False
        if expires_at is not None:
            until = _seconds(expires_at) + EXPIRY_MARGIN
            source = f"sent {until - self.started:.1f} s after minting, {EXPIRY_MARGIN:g} s past the ticket's exp"
        elif self.late_after is not None:
            until = self.started + self.late_after
            source = (f"sent {self.late_after:g} s after minting, the wait {self.late_after_name} set (the ticket's "
                      f"expiry is unreadable); if the server's tickets live longer than that, raise "
                      f"{self.late_after_name}")
        else:
            return self._unknown_lifetime()
        return self._go_at(until, source, "the ticket expires in {total:.0f} s", on_progress)

    def near_expiry(self, fraction: float, *, expires_at: float | None, on_progress: Progress | None = None) -> bool:
        """Wait until `fraction` of the ticket's life has passed (from its readable exp, else of `late_after`), for
        a move that must still be in time but late in the ticket's life. Returns False (with `skip_reason`) when
        skipping late moves, or when the lifetime is unknown."""
        self.skip_reason = None
        self.waited = None
        if self._skipping():
            return False
        if expires_at is not None:
            until = self.started + fraction * max(_seconds(expires_at) - self.started, 0.0)
            source = (f"sent {until - self.started:.1f} s after minting, {fraction:.0%} of the way to the ticket's "
                      "exp")
        elif self.late_after is not None:
            until = self.started + fraction * self.late_after
            source = (f"sent {until - self.started:.1f} s after minting, {fraction:.0%} of the "
                      f"{self.late_after_name} wait (the ticket's expiry is unreadable)")
        else:
            return self._unknown_lifetime()
        return self._go_at(until, source, "the move waits {total:.0f} s", on_progress)

    def _skipping(self) -> bool:
        if self.skip_late:
            self.skip_reason = "skipped (--skip-late)"
        return self.skip_late

    def _unknown_lifetime(self) -> bool:
        self.skip_reason = ("not run: the ticket's payload is unreadable, so its expiry is unknown; "
                            f"{self.late_after_hint} (a little more than the server's ticket lifetime)")
        return False

    def _go_at(self, until: float, source: str, too_long: str, on_progress: Progress | None) -> bool:
        """Wait until `until` and record why (`source`), unless that is longer than the checker will wait."""
        total = until - self.clock()
        if total > self.max_wait:
            self.skip_reason = (f"not run: {too_long.format(total=total)}, longer than the {self.max_wait:.0f} s "
                                "the checker will wait; pass --skip-late")
            return False
        if not self._wait(until, max(total, 0.0), on_progress):
            self.skip_reason = "not run: the check stopped (a request elsewhere was not answered in time) before " \
                               "this move's wait ended"
            return False
        self.waited = source
        return True

    def _wait(self, until: float, total: float, on_progress: Progress | None) -> bool:
        """Sleep until `until`, reporting progress; with a gate, first wait for this wait's turn there (the time
        already counts). False when the gate's schedule stopped meanwhile."""
        start = until - total

        def report() -> float:
            now = self.clock()
            if on_progress is not None:
                on_progress(min(max(now - start, 0.0), total), total)
            return now

        if self.gate is not None and not self.gate.turn(until, self.index, report):
            return False
        while True:
            now = report()
            if now >= until:
                return True
            self.sleep(min(TICK, until - now))


def ticket_expiry(ticket: str) -> float | None:
    """The `exp` any holder can read in a ticket shaped like `prefix.payload.signature` (JWT-like, the
    TypeScript SDK's codec, ...): the first dot-separated part that is base64url JSON with a numeric
    top-level `exp`. None for sealed or opaque tickets. Reading is all this does: nothing is trusted.
    """
    if not isinstance(ticket, str) or len(ticket) > 65536:
        return None
    for part in ticket.split("."):
        if len(part) < 8:
            continue
        try:
            decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        except (ValueError, RecursionError):
            continue
        exp = decoded.get("exp") if isinstance(decoded, dict) else None
        if isinstance(exp, int | float) and not isinstance(exp, bool):
            return float(exp)
    return None


@dataclass
class Checked:
    """A reply read off the wire: the response, what came before it, or why there is none."""

    response: JSONObject | None = None
    notifications: list[JSONObject] = field(default_factory=list)
    error: str | None = None


def clip(text: str, limit: int = 120) -> str:
    """One line of untrusted text, short enough for a report."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def parse_json(raw: bytes | str, where: str) -> tuple[JSON, str | None]:
    """JSON from the wire, or a reason it is not JSON."""
    try:
        value: JSON = json.loads(raw)
        return value, None
    except (ValueError, RecursionError):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        return None, f"{where} is not JSON: {clip(text, 80)!r}"


def is_response(message: JSON) -> TypeGuard[JSONObject]:
    """Whether `message` looks like a JSON-RPC response (an object with an id and a result or an error), to be
    matched with its request and then checked (`check_response`)."""
    return isinstance(message, dict) and "id" in message and ("result" in message or "error" in message)


def check_response(message: JSON, request_id: JSON) -> tuple[JSONObject | None, str | None]:
    """(`message`, None) when it is a JSON-RPC 2.0 response to `request_id`; else (None, why it is not)."""
    problem = _response_problem(message, request_id)
    return (message, None) if isinstance(message, dict) and problem is None else (None, problem)


def _response_problem(message: JSON, request_id: JSON) -> str | None:
    if not isinstance(message, dict):
        return f"the reply is JSON but not a JSON-RPC message (a {type(message).__name__})"
    if message.get("jsonrpc") != "2.0":
        return "the reply is JSON but not JSON-RPC 2.0 (no \"jsonrpc\": \"2.0\")"
    if "result" not in message and "error" not in message:
        return "the reply is a JSON-RPC message with neither a result nor an error"
    if message.get("id") != request_id and not ("error" in message and message.get("id") is None):
        # (an error with id null is JSON-RPC's "I could not tell which request": still this one's answer)
        return f"the reply answers id {clip(json.dumps(message.get('id')), 40)}, not the request's id {request_id!r}"
    if "error" in message and not isinstance(message["error"], dict):
        return "the reply's error is not an object"
    if "result" in message and not isinstance(message["result"], dict):
        return "the reply's result is not an object"
    return None
