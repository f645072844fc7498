"""The 2025-11-25 sessions every process of a deployment can see, and the mailbox that carries a client's
answer to the process holding the call it answers: the contract (`SessionDirectory`) and the one-process backend.

A legacy session is opened by one process, but its next request may reach any worker or replica. The
directory keeps what another process needs to go on with a session (its principal and the core's
`session_state()`), so any process can serve it; the mailbox relays a client's answer to a shim question
(a JSON-RPC response, whose id names the process that asked) to that process, whose waiting stream takes
it out. Three backends, chosen like the redeemed store (`mrtr_settings.stores.open_sessions`): `LocalDirectory`
(one process: nothing to share), `SqliteDirectory` (`sessions_sqlite`: the processes of one machine) and
`RedisDirectory` (`sessions_redis`: replicas on several hosts).

Nothing a visitor sends is stored without a cap. The mailbox takes an answer only to a question the server
asked in that session and is still waiting for (`expect` records each, at most `MAX_AWAITED` per session, for
`MAILBOX_TTL`; an answer consumes its question, so each is relayed once), and at most `MAX_RELAYS_PER_PRINCIPAL`
answers per principal per `MAILBOX_TTL`. Anything else is refused (`NotAwaited`, `RelaysExhausted`), never
stored: before, answers with made-up ids were kept 600 s with no cap (about 3 GB per address per 10 minutes).

Stores never read the clock: callers pass `now`. Every failure of a shared backend is `DirectoryDown`,
never a driver exception, so /mcp answers 503 and stays up. It never holds a token or a key.
"""

from __future__ import annotations

import os
import secrets
from typing import Protocol

from mrtr import JSONObject

#: How long an unused session stays in the directory (seconds): web/mcp/sessions.py's SESSION_IDLE_TIMEOUT.
DEFAULT_TTL = 30 * 60.0
#: How long an answer waits in the mailbox for its process before it is dropped (seconds).
MAILBOX_TTL = 600.0
#: The most bytes of one relayed message (the /mcp body limit is smaller).
MAX_MESSAGE = 1024 * 1024
#: Questions one session may have waiting for an answer in the directory; past it the oldest is forgotten. A
#: session has at most 8 calls waiting (web/mcp/legacy.py), each asking a few questions.
MAX_AWAITED = 32
#: Answers relayed for one principal per MAILBOX_TTL, across every process: at the /mcp body limit (256 KiB), at
#: most 50 MiB of one principal's answers in the mailbox at once.
MAX_RELAYS_PER_PRINCIPAL = 200


class NotAwaited(Exception):
    """The answer's id names no question this session is waiting for (made up, answered already, or expired)."""


class RelaysExhausted(Exception):
    """The principal has had MAX_RELAYS_PER_PRINCIPAL answers relayed in the last MAILBOX_TTL seconds."""


class DirectoryDown(Exception):
    """The shared directory could not be read or written; the message says which and why."""


class SessionDirectory(Protocol):
    """Where every process finds a 2025-11-25 session, and the mailbox of each process."""

    #: False when there is nothing to share (one process): callers then skip the directory entirely.
    shared: bool

    def put(self, sid: str, principal: str, state: JSONObject, now: float) -> None:
        """Keep (or replace) session `sid` for the directory's time to live from `now`."""

    def get(self, sid: str, now: float) -> tuple[str, JSONObject] | None:
        """The session's principal and state, its time to live renewed; None when unknown or expired."""

    def delete(self, sid: str) -> None:
        """Forget the session everywhere (nothing happens for an unknown one)."""

    def expect(self, sid: str, question_id: str, now: float) -> None:
        """Session `sid` waits for the answer to `question_id` (for MAILBOX_TTL; at most MAX_AWAITED per session)."""

    def post(self, tag: str, sid: str, message: JSONObject, now: float, principal: str = "") -> None:
        """Leave `message` (for session `sid`) in the mailbox of the process `tag`, consuming the question it
        answers. Raises NotAwaited when no such question waits, RelaysExhausted past the principal's cap,
        DirectoryDown past MAX_MESSAGE."""

    def take(self, tag: str, now: float) -> list[tuple[str, JSONObject]]:
        """Everything in `tag`'s mailbox, oldest first, emptied in the same step (no answer is taken twice)."""


def process_tag(replica: str | None) -> str:
    """A name for this process that no other process of the deployment has: the replica, the pid, a nonce.
    It prefixes the ids of the questions this process asks, so an answer names the process to relay it to."""
    prefix = "".join(c for c in (replica or "") if c.isascii() and (c.isalnum() or c in "-_"))[:40]
    return f"{prefix or 'p'}.{os.getpid()}.{secrets.token_hex(3)}"


def answered_id(message: JSONObject) -> str | None:
    """The question id an answer names, when it is one a tagged process could have asked."""
    found = message.get("id")
    return found if isinstance(found, str) and tag_of(found) is not None else None


def tag_of(request_id: object) -> str | None:
    """The process tag in a question's id (`<tag>-<n>`), or None for an id no tagged process gave."""
    if not isinstance(request_id, str) or "-" not in request_id:
        return None
    tag, _, number = request_id.rpartition("-")
    return tag if number.isdigit() and tag.count(".") == 2 else None


class LocalDirectory:
    """One process: every session lives in it, so there is nothing to look up or relay."""

    shared = False

    def put(self, sid: str, principal: str, state: JSONObject, now: float) -> None:
        pass

    def get(self, sid: str, now: float) -> tuple[str, JSONObject] | None:
        return None

    def delete(self, sid: str) -> None:
        pass

    def expect(self, sid: str, question_id: str, now: float) -> None:
        pass

    def post(self, tag: str, sid: str, message: JSONObject, now: float, principal: str = "") -> None:
        raise DirectoryDown("no shared directory: an answer for another process cannot be relayed")

    def take(self, tag: str, now: float) -> list[tuple[str, JSONObject]]:
        return []
