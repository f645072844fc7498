"""The URL-mode pages' completions: which out-of-band steps a learner finished, as the server looks them up.

A URL-mode question (spec 2026-07-28, elicitation "URL mode") sends the user to a page outside the conversation;
the client's `accept` only says the user agreed to go. The server learns whether the step was finished from its own
state, on the retry: this store. The tool `open`s a reference when it asks (a random id it also seals in the
ticket), the lab's page `complete`s it when the learner submits there, and the retry asks `is_complete`.

What it keeps is one reference, whether its page was finished, and until when: never what the learner typed on the
page. Nothing a visitor sends is stored without a cap: a page can only finish a reference the server opened and
that has not expired (`complete` returns False otherwise and stores nothing), each principal (the `owner` the
server opens a reference for) keeps at most `MAX_PER_OWNER` references, waiting or finished (past it, that owner's
own that expire first are forgotten: one token holder's flood evicts only their own pages), and at most `MAX_OPEN`
are kept for everyone. Everything is forgotten `TTL` seconds after it was opened.

Three backends keep the contract (tests/stores/test_completions.py runs one suite against each): `MemoryCompletions`
(here: one process, the lab's figures), `SqliteCompletions` (`completions_sqlite`: the processes of one machine) and
`RedisCompletions` (`completions_redis`: replicas on several hosts). Stores never read the clock: callers pass
`now`. Every backend failure is `mrtr.StoreUnavailable` (a retryable error on /mcp, a "try again" on the page), never
a driver exception.
"""

from __future__ import annotations

import re
import secrets
from typing import Protocol

#: How long a reference lives after the server opened it (seconds): several ticket lifetimes, so a learner who
#: takes a few minutes on the page still finishes in time.
TTL = 600.0
#: References kept at once, for everyone (waiting and finished); past it the ones that expire first are forgotten.
MAX_OPEN = 10_000
#: References kept per principal (waiting and finished): a learner has a page or two open at once; 10,341 `connect`
#: calls by one token holder had emptied everyone's pages when only MAX_OPEN held.
MAX_PER_OWNER = 20
#: What a reference looks like (`new_ref`): a page asked about anything else is refused before any lookup.
REF = re.compile(r"[A-Za-z0-9_-]{22}")


def new_ref() -> str:
    """A reference nobody can guess (128 random bits), safe in a URL: it names no user and carries no credential."""
    return secrets.token_urlsafe(16)


class CompletionStore(Protocol):
    """Where the server records the URL-mode steps it asked for, and the lab's page records the finished ones."""

    def open(self, ref: str, now: float, owner: str = "") -> None:
        """The server asked `owner` for the step `ref`: it waits for its page until `now` + TTL (at most the
        per-owner cap kept for `owner`, and MAX_OPEN for everyone)."""

    def is_open(self, ref: str, now: float) -> bool:
        """Whether `ref` waits for its page (opened, not finished, not expired)."""

    def complete(self, ref: str, now: float) -> bool:
        """The page for `ref` was submitted: True when it was waiting (now finished), else False and nothing kept."""

    def is_complete(self, ref: str, now: float) -> bool:
        """Whether the page for `ref` was finished and the reference has not expired."""


class MemoryCompletions:
    """One process's completions, in a dict: the lab's own figures, where nothing is shared (a fresh one per
    figure keeps the lab's fake clock away from the real store)."""

    def __init__(self, *, cap: int = MAX_OPEN, per_owner: int = MAX_PER_OWNER) -> None:
        self.cap, self.per_owner = cap, per_owner
        self._refs: dict[str, tuple[bool, float]] = {}  # ref -> (finished, expires)
        self._owners: dict[str, str] = {}  # ref -> owner

    def _alive(self, ref: str, now: float) -> tuple[bool, float] | None:
        found = self._refs.get(ref) if REF.fullmatch(ref) else None
        return found if found is not None and found[1] > now else None

    def open(self, ref: str, now: float, owner: str = "") -> None:
        self._refs = {r: v for r, v in self._refs.items() if v[1] > now}
        self._owners = {r: o for r, o in self._owners.items() if r in self._refs}
        self._refs[ref], self._owners[ref] = (False, now + TTL), owner
        own = sorted((r for r, o in self._owners.items() if o == owner), key=lambda r: self._refs[r][1])
        everyone = sorted(self._refs, key=lambda r: self._refs[r][1])
        for gone in {*own[:max(0, len(own) - self.per_owner)], *everyone[:max(0, len(everyone) - self.cap)]}:
            del self._refs[gone], self._owners[gone]

    def is_open(self, ref: str, now: float) -> bool:
        found = self._alive(ref, now)
        return found is not None and not found[0]

    def complete(self, ref: str, now: float) -> bool:
        found = self._alive(ref, now)
        if found is None or found[0]:
            return False
        self._refs[ref] = (True, found[1])
        return True

    def is_complete(self, ref: str, now: float) -> bool:
        found = self._alive(ref, now)
        return found is not None and found[0]
