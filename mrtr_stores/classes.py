"""What a live class keeps, whatever keeps it: the contract (`ClassStore`), its rows, its rules and its errors.

Two backends keep the class store's contract (tests/stores/test_classes.py runs one suite against both):
`SqliteClassStore` (`classes_sqlite`: one file, the processes of one machine) and `RedisClassStore`
(`classes_redis`: replicas on several hosts). The class's limits (joins, answers, guesses, starts) are
`RateLimit`s: `LocalRateLimit` (here: each process its own) or `RedisRateLimit` (every replica at once).

Every change bumps the class's `version` (the presenter's live views re-render when it moves); a presenter
action also bumps `stage` (learners' pages re-render only then). Secrets are stored as SHA-256 hashes only. A
class and everything in it is gone once it is older than the store's TTL, measured on an injected clock. A
backend that fails raises `ClassStoreUnavailable`, never a driver exception. Nothing here renders, reads a
request or signs a ticket.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import unicodedata
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

#: Join codes avoid letters and digits that read alike on a projector (0/O, 1/I/L).
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
#: Learners in one class; read at each join (tests lower it), by both backends.
MAX_LEARNERS = 500
NICKNAME_MAX = 24
#: A learner's draw of a drawn question (web/quiz/draws.py: a seed and a time), at most this many characters.
DRAW_MAX = 64
#: Drawn questions a class keeps draws for; each learner has at most one draw per question, so a learner causes at
#: most this many to be stored (and a class at most MAX_LEARNERS times as many).
MAX_DRAWN_QUESTIONS = 64
#: Letters (any script), digits, spaces and . _ - ' ; nothing that could pass for markup or a control.
_NICKNAME = re.compile(r"^[^\W_][\w .'-]*$", re.UNICODE)


#: One row of a class's export: kind ("answer" or "attempt"), nickname, item (question or move), value (option or
#: outcome), detail (the check that stopped an attempt; "right" or "wrong" for an answer to a drawn question, graded
#: on the learner's own draw), and when, in epoch seconds.
ExportRow: TypeAlias = tuple[str, str, str, str, str, float]
#: Whom a rate limit counts: a visitor's address, a class id, or a (class id, learner id) pair.
RateKey: TypeAlias = str | tuple[str | int, ...]


class ClassroomError(ValueError):
    """Input a learner or presenter can fix; the message is safe to show them."""


class ClassFull(ClassroomError):
    pass


class ClassStoreUnavailable(Exception):
    """The class store cannot be reached or written: nothing was changed, and the request may be retried."""


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def host_ok(row: ClassRow, secret: str | None) -> bool:
    """Whether `secret` is the presenter's capability for the class `row` (compared in constant time)."""
    return bool(secret) and row.host_hash is not None and hmac.compare_digest(row.host_hash, digest(secret or ""))


def normalize_code(raw: str | None) -> str:
    return "".join(ch for ch in (raw or "").upper() if ch.isalnum())[:16]


def check_nickname(raw: str | None) -> str:
    """The nickname as it will be shown, or ClassroomError saying which rule it breaks."""
    name = unicodedata.normalize("NFC", " ".join((raw or "").split()))
    if not name:
        raise ClassroomError("Choose a nickname: it is how the class will see you.")
    if len(name) > NICKNAME_MAX:
        raise ClassroomError(f"A nickname is at most {NICKNAME_MAX} characters.")
    if not _NICKNAME.match(name):
        raise ClassroomError("Use letters, digits, spaces and . _ - ' only, starting with a letter or digit.")
    return name


def check_draw(draw: str) -> None:
    if not draw or len(draw) > DRAW_MAX:
        raise ClassroomError(f"A draw is 1 to {DRAW_MAX} characters.")


def too_many_draws() -> ClassroomError:
    return ClassroomError(f"This class keeps draws for {MAX_DRAWN_QUESTIONS} questions at most.")


def class_full() -> ClassFull:
    return ClassFull(f"This class is full ({MAX_LEARNERS} learners).")


NICKNAME_TAKEN = "Someone in this class already uses that nickname; pick another."


@dataclass(frozen=True)
class ClassRow:
    id: str
    code: str
    host_hash: str | None
    lesson: str
    created: float
    version: int
    stage: int
    question_no: int
    question_id: str | None
    revealed: bool
    round_open: bool
    single_use: bool
    first_replay: str | None
    #: The presenter closed the class to new learners (those already in stay).
    locked: bool = False


@dataclass(frozen=True)
class Learner:
    id: int
    class_id: str
    nickname: str
    created: float
    ticket: str | None

    @property
    def principal(self) -> str:
        return f"learner-{self.id}"


class ClassStore(Protocol):
    """Classes, learners, answers and attempts. Every method may raise ClassStoreUnavailable."""

    clock: Callable[[], float]
    ttl: float

    # -- lifetime
    def purge(self, *, force: bool = False) -> int:
        """Forget the classes older than the TTL; how many were forgotten."""

    def delete(self, class_id: str) -> None:
        """The class and everything in it, gone."""

    def count_classes(self) -> int:
        """Classes still open."""

    # -- classes
    def create(self, *, lesson: str, host_secret: str | None) -> ClassRow:
        """A new class with a free join code; the presenter's secret is kept as a digest only."""

    def by_code(self, code: str) -> ClassRow | None:
        """The open class with this join code (any case, any separators), or None."""

    def by_id(self, class_id: str) -> ClassRow | None: ...

    def host_ok(self, row: ClassRow, secret: str | None) -> bool: ...

    def version(self, class_id: str) -> int | None:
        """The class's version (it moves on every change), or None when the class is gone."""

    def set_question(self, class_id: str, number: int, question_id: str) -> None: ...

    def reveal(self, class_id: str) -> None: ...

    def set_round(self, class_id: str, open_: bool) -> None: ...

    def set_single_use(self, class_id: str, on: bool) -> None: ...

    def set_locked(self, class_id: str, locked: bool) -> None: ...

    # -- learners
    def join(self, row: ClassRow, nickname: str) -> tuple[Learner, str]:
        """A new learner and its secret token (kept as a digest); ClassFull, or ClassroomError for a taken name."""

    def learner(self, row: ClassRow, token: str | None) -> Learner | None: ...

    def learners(self, class_id: str) -> list[Learner]:
        """The class's learners in the order they joined."""

    def count_learners(self, class_id: str) -> int: ...

    def set_ticket(self, learner: Learner, ticket: str) -> None: ...

    def remove_learner(self, class_id: str, learner_id: int) -> bool:
        """The learner and everything they sent, gone; False when the class has no such learner."""

    # -- answers
    def answer(self, row: ClassRow, learner: Learner, question_id: str, option: str, right: bool | None = None) -> None:
        """Keep the learner's answer (a later one replaces it); `right`: a drawn question's answer graded against
        the learner's own draw (None: a fixed question, whose right option is the same for everyone)."""

    def my_answer(self, row: ClassRow, learner: Learner, question_id: str) -> str | None: ...

    def tally(self, class_id: str, question_id: str) -> dict[str, int]:
        """Answers per option."""

    def right_count(self, class_id: str, question_id: str) -> int:
        """Answers graded right against each learner's own draw."""

    # -- draws
    def keep_draw(self, row: ClassRow, learner: Learner, question_id: str, draw: str) -> str:
        """The learner's draw for a drawn question: the one kept already, else `draw`, kept now (the first stays, so
        every page of the learner shows one situation). ClassroomError for a draw longer than DRAW_MAX, or a new
        question once the class keeps draws for MAX_DRAWN_QUESTIONS."""

    # -- attempts
    def record_attempt(self, row: ClassRow, learner: Learner, *, move: str, outcome: str, stopped_at: str,
                       single_use: bool, replay_through: bool) -> bool:
        """Keep one attempt; True when it made this learner the first to get a replay through."""

    def recent_attempts(self, learner: Learner, since: float) -> int:
        """The learner's attempts after `since`."""

    def heat(self, class_id: str) -> dict[tuple[str, str], int]:
        """Attempts per (move, check that stopped it); a move that went through counts under ''."""

    # -- export
    def export_rows(self, class_id: str) -> list[ExportRow]:
        """One row per answer and per attempt: kind, nickname, item, value, detail, time."""


class RateLimit(Protocol):
    """A sliding window per key: at most `limit` hits in any `window` seconds, on the `now` the caller passes."""

    limit: int
    window: float

    def exhausted(self, key: RateKey, now: float) -> bool:
        """Whether `key` has no hit left in the window now (nothing is recorded)."""

    def allow(self, key: RateKey, now: float) -> bool:
        """Record a hit for `key` and say yes, or say no (and record nothing) when its window is full."""


@dataclass
class LocalRateLimit:
    """A sliding window per key, in this process (each process holds its own)."""

    limit: int
    window: float
    hits: dict[RateKey, deque[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def exhausted(self, key: RateKey, now: float) -> bool:
        with self.lock:
            seen = self.hits.get(key)
            return seen is not None and sum(1 for t in seen if t > now - self.window) >= self.limit

    def allow(self, key: RateKey, now: float) -> bool:
        with self.lock:
            if len(self.hits) > 10_000:
                self.hits = {k: v for k, v in self.hits.items() if v and v[-1] > now - self.window}
            seen = self.hits.setdefault(key, deque())
            while seen and seen[0] <= now - self.window:
                seen.popleft()
            if len(seen) >= self.limit:
                return False
            seen.append(now)
            return True
