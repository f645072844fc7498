"""The misuse moves as data: `moves.toml` (package data beside this module) read into frozen `Move` records,
and validated.

Owns the move schema (the vocabulary below, documented again in the file's header) and what a
sound server's answer to each move may be (`holds`). Pages, the deck, the class round, the
checker, the build-it grading and the tests all read the list from here and derive every set and
count from it, so adding a move is one `[[moves]]` entry, and a new kind of move is one entry in
a vocabulary tuple here plus its handling in `moves.engine`. A broken file raises ValueError
naming the file, the move and the field. Never imports Flask.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal, TypeAlias

from mrtr import CHECKS, JSONObject

from .target import Outcome, Role

#: The moves file shipped in this package, found through importlib.resources (never a path relative to the
#: source tree), so a checkout, an editable install and an installed wheel all read the same file.
DEFAULT_PATH: Traversable = files("moves") / "moves.toml"

# -- the vocabulary ---------------------------------------------------------------------------------

SENDERS: tuple[str, ...] = ("owner", "other")
#: near-expiry: sent at about 80% of the ticket's life (`NEAR_EXPIRY`): remote targets really wait until then (of
#: the readable exp, or of --late-after), or skip the move when the lifetime is unknown.
TIMINGS: tuple[str, ...] = ("in-time", "past-expiry", "near-expiry")
#: How far into a ticket's life a near-expiry move is sent.
NEAR_EXPIRY = 0.8
#: as-issued: the minted ticket untouched; edit-work: the readable payload edited, old signature kept;
#: junk: not a ticket at all, sent in every shape of `JUNK_SHAPES` in turn; absent: no requestState at all, the
#: answers attached anyway (a handler that reads inputResponses before it asks for the ticket can be
#: "pre-answered" on round one).
#: edit-each: each field of a readable payload edited in turn, one retry per field, the old signature kept (an
#: unreadable ticket gets one flipped character instead); unsigned: the ticket with its signature part emptied, then
#: removed (and a JWT header's alg set to "none").
TICKETS: tuple[str, ...] = ("as-issued", "edit-work", "junk", "absent", "edit-each", "unsigned")
#: accept: every question answered from its schema; none: no inputResponses; decline / cancel: the user
#: said no / dismissed the question; wrong-type: accepted, each field of the wrong JSON type;
#: missing-key: accepted with the required fields left out.
#: wrong-key: the accepted answers sent under keys the server never asked (the asked keys missing); extra-key: the
#: accepted answers, with an unknown extra key placed first (the spec says a server ignores it).
ANSWERS: tuple[str, ...] = ("accept", "none", "decline", "cancel", "wrong-type", "missing-key", "wrong-key",
                            "extra-key")
#: Answers that say yes to every question asked: a flow goes on to its next round after them.
YES_ANSWERS: frozenset[str] = frozenset({"accept", "extra-key"})
#: Answers whose result the engine compares with an accepted call's to tell "did the work" from "ended".
NOT_A_YES: frozenset[str] = frozenset({"decline", "cancel", "wrong-type", "missing-key"})
#: same: the request the ticket was minted for; other: the same tool with other arguments; other-tool: another listed
#: tool that asks for input, called with the same arguments (a request binding must cover the tool, not only the
#: arguments). With no such tool the move is not run, saying so.
REQUESTS: tuple[str, ...] = ("same", "other", "other-tool")
#: Where a `before` move's retry goes: on this move's ticket (it must get its expectation, or this move is not
#: run), or on a ticket minted for it alone (then it is one of the two calls this move is about, and a retry that
#: does not hold fails this move: moves.engine `play`).
BEFORE_TICKETS: tuple[str, ...] = ("same", "new")
EXPECTS: tuple[Outcome, ...] = (Outcome.COMPLETED, Outcome.REFUSED, Outcome.ASKED_AGAIN, Outcome.ENDED,
                                Outcome.NOT_DONE)
REQUIRES: tuple[str, ...] = ("single-use",)
#: The last round a move may be played on (the engine follows a flow for at most this many round trips).
MAX_ROUND = 8
#: How the copies of a burst (`copies` > 1: the same retry sent several times at once) are numbered: all under the
#: move's one request id, or each under an id of its own.
COPY_IDS: tuple[str, ...] = ("same", "distinct")
#: The most copies a burst may send at once.
MAX_COPIES = 32
NOTE_TICKETS: tuple[str, ...] = ("signed", "sealed")

#: The shapes a junk ticket takes, in the order they are sent. `{prefix}` is the minted ticket's text up to
#: its first dot, so one shape looks like a real ticket whose body is not base64url.
JUNK_SHAPES: tuple[tuple[str, str], ...] = (
    ("word", "junk"),
    ("empty", ""),
    ("three-parts", "a.b.c"),
    ("bad-body", "{prefix}.%%%not-base64%%%.AAAA"),
    ("long", "A" * 5000),
)

#: What a sound server may answer, per expectation: the outcomes that hold outright, and those that hold
#: with a note (`holds`). A refused ticket must be refused: the spec says state that fails verification MUST be
#: rejected, and the official conformance suite's tampered-state scenario accepts only a JSON-RPC error, so a
#: fresh question in its place fails (asking again is for a missing answer, never for a bad ticket).
_HOLDS: dict[Outcome, tuple[frozenset[Outcome], dict[Outcome, str]]] = {
    Outcome.COMPLETED: (frozenset({Outcome.COMPLETED}), {}),
    Outcome.REFUSED: (frozenset({Outcome.REFUSED}), {}),
    Outcome.ASKED_AGAIN: (frozenset({Outcome.ASKED_AGAIN}), {}),
    Outcome.ENDED: (frozenset({Outcome.ENDED, Outcome.REFUSED}), {}),
    # A malformed answer "SHOULD" get an error, a missing one a fresh question (spec, MRTR "Error Handling"):
    # a server may fairly read a wrong-typed field as no answer, so either holds.
    Outcome.NOT_DONE: (frozenset({Outcome.REFUSED, Outcome.ENDED, Outcome.ASKED_AGAIN}), {}),
}


def holds(expect: Outcome, outcome: Outcome) -> tuple[bool, str]:
    """Whether `outcome` is what a sound server may answer to a move expecting `expect`, and the note
    that goes with a holding answer other than the plainest one ("" when none)."""
    plain, noted = _HOLDS[Outcome(expect)]
    if outcome in plain:
        return True, ""
    if outcome in noted:
        return True, noted[outcome]
    return False, ""


@dataclass(frozen=True)
class MoveNote:
    """What a move teaches when it gets `outcome` (stopped at `stopped_at`, on a `ticket` kind, when given)."""

    slug: str  # the move's slug, or "*" for a note that fits any move
    outcome: Outcome
    text: str
    stopped_at: str | None = None  # None: any; "": no check failed
    ticket: str | None = None  # None: any; "signed" or "sealed"

    def matches(self, slug: str, outcome: Outcome, stopped_at: str | None, sealed: bool) -> bool:
        return (self.slug in (slug, "*") and self.outcome == outcome
                and (self.stopped_at is None or self.stopped_at == (stopped_at or ""))
                and (self.ticket is None or self.ticket == ("sealed" if sealed else "signed")))

    @property
    def specificity(self) -> tuple[int, int, int]:
        return (self.slug != "*", self.stopped_at is not None, self.ticket is not None)


@dataclass(frozen=True)
class Move:
    """One move: how the retry differs from the honest one, and what a sound server must do with it."""

    slug: str
    title: str
    summary: str
    sender: Role
    at: float
    timing: Literal["in-time", "past-expiry", "near-expiry"]
    ticket: Literal["as-issued", "edit-work", "junk", "absent", "edit-each", "unsigned"]
    answer: str
    request: Literal["same", "other", "other-tool"]
    expect: Outcome
    stops_at: str
    edit_path: str = "work.env"
    edit_value: str | int | float | bool = "prod"
    request_id: int | None = None
    requires: str | None = None
    #: Another move whose retry is sent first (its own sender, time and id), or None.
    before: Move | None = None
    before_ticket: Literal["same", "new"] = "same"
    #: The check this move shows, in a sentence ("the redeemed store is keyed on the ticket"), for reports.
    shows: str = ""
    #: What a server author changes when this move fails, in a sentence or two (reports: moves/wording.py).
    fix: str = ""
    #: The round of the flow the move is played on: the rounds before it are answered honestly first.
    round: int = 1
    #: How many identical copies of the retry are sent at once (1: one retry). With more, exactly one copy may do
    #: the work and every other must get `expect` (moves.engine `play`).
    copies: int = 1
    copy_ids: Literal["same", "distinct"] = "same"
    #: Outcomes a sound server may give that the spec does not prefer (a SHOULD it skipped): a warning, not a pass.
    warn: tuple[Outcome, ...] = ()
    #: True when a refusal must not be the frozen error every bad ticket gets (a client could not tell them apart).
    distinct_error: bool = False
    notes: tuple[MoveNote, ...] = field(default=(), compare=False)

    def note_for(self, outcome: Outcome | str, stopped_at: str | None = None, *,
                 sealed: bool = False) -> MoveNote | None:
        """The most specific note written for what this move really got, or None (never a wrong one)."""
        found = [n for n in self.notes if n.matches(self.slug, Outcome(outcome), stopped_at, sealed)]
        return max(found, key=lambda n: n.specificity) if found else None

    def holds(self, outcome: Outcome) -> tuple[bool, str]:
        return holds(self.expect, outcome)

    @property
    def group(self) -> str:
        """What the move varies, one of GROUPS: a retry sent before it, the answer, or else the ticket."""
        if self.before is not None or self.copies > 1:
            return "sequence"
        if self.answer != "accept":
            return "answer"
        return "ticket"

    @property
    def needs_other_tool(self) -> bool:
        """Whether the move needs a second tool that asks for input (a server with one cannot show it: not run)."""
        return self.request == "other-tool"

    @property
    def is_replay(self) -> bool:
        """Whether only a redeemed store stops the move (a spent ticket sent again)."""
        return self.requires == "single-use"

    @property
    def refused_by(self) -> frozenset[str]:
        """Every check a sound server's ticket checks fail for this move's own retry, not only the first
        (`stops_at`): with one check removed, the move is still refused while another remains. "unreadable" is
        the failure before any check can read a junk ticket."""
        refused = {"signature"} if self.ticket in ("edit-work", "junk", "edit-each", "unsigned") else set()
        refused |= {"unreadable"} if self.ticket == "junk" else set()
        # A ticket without its signature part does not even parse as one where the format requires three parts (the
        # lab's): there the signature is not the only thing that refuses it.
        refused |= {"signature-part"} if self.ticket == "unsigned" else set()
        refused |= {"principal"} if self.sender == "other" else set()
        refused |= {"expiry"} if self.timing == "past-expiry" else set()
        refused |= {"request"} if self.request in ("other", "other-tool") else set()
        refused |= {"single-use"} if self.copies > 1 else set()  # every copy but the one that does the work
        # A retry on a ticket its `before` move already spent (a completed retry on the same ticket).
        spent = self.before is not None and self.before_ticket == "same" and self.before.expect == Outcome.COMPLETED
        return frozenset(refused | ({"single-use"} if spent else set()))

    @property
    def refused_by_checks(self) -> frozenset[str]:
        """`refused_by` without the reasons that belong to a ticket format rather than a check: on a server whose
        format takes a ticket without its signature part, the signature check alone refuses it."""
        return self.refused_by - FORMAT_REASONS

    @property
    def chain(self) -> tuple[Move, ...]:
        """The moves whose retries this move sends, first to last (its `before`s, then itself)."""
        return (*(self.before.chain if self.before else ()), self)


#: A table of the moves file as `tomllib` gives it: its values are whatever the file holds until `_move` has checked
#: each one against `_FIELDS` (after that, what `Move` takes).
TomlTable: TypeAlias = dict[str, Any]

_FIELDS: dict[str, tuple[type | tuple[type, ...], tuple[object, ...] | None, bool]] = {
    # name: (type, allowed values or None, required)
    "slug": (str, None, True),
    "title": (str, None, True),
    "summary": (str, None, True),
    "sender": (str, SENDERS, True),
    "at": ((int, float), None, True),
    "timing": (str, TIMINGS, True),
    "ticket": (str, TICKETS, True),
    "answer": (str, ANSWERS, True),
    "request": (str, REQUESTS, True),
    "expect": (str, tuple(str(e) for e in EXPECTS), True),
    "stops_at": (str, ("", *CHECKS), False),
    "edit_path": (str, None, False),
    "edit_value": ((str, int, float, bool), None, False),
    "request_id": (int, None, False),
    "requires": (str, REQUIRES, False),
    "before": (str, None, False),
    "before_ticket": (str, BEFORE_TICKETS, False),
    "shows": (str, None, False),
    "fix": (str, None, False),
    "round": (int, None, False),
    "copies": (int, None, False),
    "copy_ids": (str, COPY_IDS, False),
    "warn": (list, None, False),
    "distinct_error": (bool, None, False),
    "notes": (list, None, False),
}

_NOTE_FIELDS = {"outcome", "text", "stopped_at", "ticket"}


def _note(raw: object, slug: str, where: str) -> MoveNote:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: each note is a table")
    unknown = sorted(set(raw) - _NOTE_FIELDS)
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    outcomes = [str(o) for o in Outcome]
    if raw.get("outcome") not in outcomes:
        raise ValueError(f"{where}: field 'outcome' must be one of {', '.join(outcomes)}; got {raw.get('outcome')!r}")
    if not isinstance(raw.get("text"), str) or not raw["text"].strip():
        raise ValueError(f"{where}: field 'text' is missing")
    stopped_at = raw.get("stopped_at")
    if stopped_at is not None and stopped_at not in ("", *CHECKS):
        raise ValueError(f"{where}: field 'stopped_at' {stopped_at!r} is not a check")
    ticket = raw.get("ticket")
    if ticket is not None and ticket not in NOTE_TICKETS:
        raise ValueError(f"{where}: field 'ticket' must be signed or sealed; got {ticket!r}")
    return MoveNote(slug, Outcome(raw["outcome"]), raw["text"].strip(), stopped_at, ticket)


def _move(raw: TomlTable, where: str, general: tuple[MoveNote, ...]) -> TomlTable:
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    for name, (kind, allowed, required) in _FIELDS.items():
        if name not in raw:
            if required:
                raise ValueError(f"{where}: field {name!r} is missing")
            continue
        value = raw[name]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, (int, float))):
            raise ValueError(f"{where}: field {name!r} has the wrong type ({type(value).__name__})")
        if allowed is not None and value not in allowed:
            raise ValueError(f"{where}: field {name!r} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    if not raw["slug"] or not all(c.isalnum() or c == "-" for c in raw["slug"]) or raw["slug"] != raw["slug"].lower():
        raise ValueError(f"{where}: field 'slug' must be lower-case letters, digits and hyphens")
    if not 0 <= raw["at"] <= 86_400:
        raise ValueError(f"{where}: field 'at' must be between 0 and 86400 seconds")
    if not 1 <= raw.get("round", 1) <= MAX_ROUND:
        raise ValueError(f"{where}: field 'round' must be between 1 and {MAX_ROUND}")
    if not 1 <= raw.get("copies", 1) <= MAX_COPIES:
        raise ValueError(f"{where}: field 'copies' must be between 1 and {MAX_COPIES}")
    if raw.get("copies", 1) > 1 and (raw["ticket"] != "as-issued" or raw["answer"] != "accept"
                                     or raw["request"] != "same" or raw["expect"] != "refused" or "before" in raw):
        raise ValueError(f"{where}: copies sent at once are honest retries (ticket as-issued, answer accept, the same "
                         "request, no 'before') of which one does the work: expect 'refused' for the others")
    if "copy_ids" in raw and raw.get("copies", 1) == 1:
        raise ValueError(f"{where}: field 'copy_ids' needs 'copies' above 1")
    if raw["ticket"] in ("junk", "edit-each", "unsigned") and raw["answer"] not in ("accept", "none"):
        raise ValueError(f"{where}: a {raw['ticket']} ticket goes with answer 'accept' or 'none'")
    if raw["ticket"] == "absent" and raw["answer"] == "none":
        raise ValueError(f"{where}: an absent ticket goes with an answer (without one the retry is round one again)")
    own = tuple(_note(n, raw["slug"], f"{where}: note {i}") for i, n in enumerate(raw.get("notes", []), 1))
    warn = raw.get("warn", [])
    outcomes = [str(o) for o in (Outcome.COMPLETED, Outcome.REFUSED, Outcome.ASKED_AGAIN, Outcome.ENDED)]
    if not all(w in outcomes for w in warn) or Outcome(raw["expect"]) in {Outcome(w) for w in warn if w in outcomes}:
        raise ValueError(f"{where}: field 'warn' lists outcomes ({', '.join(outcomes)}) other than 'expect'")
    if raw.get("distinct_error") and raw["expect"] != "refused":
        raise ValueError(f"{where}: field 'distinct_error' goes with expect 'refused'")
    return {**raw, "at": float(raw["at"]), "warn": tuple(Outcome(w) for w in warn),
            "expect": Outcome(raw["expect"]), "stops_at": raw.get("stops_at", ""),
            "notes": own + general}


def _resolve(values: dict[str, TomlTable], slug: str, where: str, seen: tuple[str, ...] = ()) -> Move:
    raw = values[slug]
    before = raw.get("before")
    resolved: Move | None = None
    if before is not None:
        if before not in values:
            raise ValueError(f"{where}: move {slug!r}: field 'before' names no move ({before!r})")
        if before in (*seen, slug):
            loop = " -> ".join((*seen, slug, before))
            raise ValueError(f"{where}: move {slug!r}: field 'before' makes a loop ({loop})")
        resolved = _resolve(values, before, where, (*seen, slug))
        if resolved.before is not None or resolved.ticket in ("junk", "absent", "edit-each", "unsigned") \
                or resolved.answer in NOT_A_YES:
            raise ValueError(f"{where}: move {slug!r}: field 'before' must name a move of one plain retry "
                             f"({before!r} has its own 'before', a junk or absent ticket or an answer that is "
                             "not a yes)")
        if resolved.timing != "in-time":
            raise ValueError(f"{where}: move {slug!r}: field 'before' names a {resolved.timing} move, which cannot "
                             "go first")
        if resolved.at >= raw["at"]:
            raise ValueError(f"{where}: move {slug!r}: its 'before' move ({before}) must be sent earlier than 'at'")
    elif "before_ticket" in raw:
        raise ValueError(f"{where}: move {slug!r}: field 'before_ticket' needs 'before'")
    return Move(**{**raw, "before": resolved})


def load_moves(path: Traversable | str | None = None) -> tuple[Move, ...]:
    """Read and validate the moves file (default: this package's moves.toml, `DEFAULT_PATH`).

    Raises:
        ValueError: the file is missing or not TOML, or a move is malformed; the message names
            the file, the move and the field.
    """
    path = DEFAULT_PATH if path is None else Path(path) if isinstance(path, str) else path
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the moves file ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    unknown = sorted(set(data) - {"moves", "notes"})
    if unknown:
        raise ValueError(f"{path}: unknown top-level key {unknown[0]!r} (only [[moves]] and [[notes]])")
    tables = data.get("moves")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise ValueError(f"{path}: needs at least one [[moves]] table")
    general_raw = data.get("notes", [])
    if not isinstance(general_raw, list):
        raise ValueError(f"{path}: [[notes]] must be tables")
    general = tuple(_note(n, "*", f"{path}: note {i} (any move)") for i, n in enumerate(general_raw, 1))
    values: dict[str, TomlTable] = {}
    for i, raw in enumerate(tables, 1):
        name = raw.get("slug") if isinstance(raw.get("slug"), str) else None
        where = f"{path}: move {name!r}" if name else f"{path}: move #{i}"
        checked = _move(raw, where, general)
        if checked["slug"] in values:
            raise ValueError(f"{path}: move {checked['slug']!r}: field 'slug' is used twice")
        values[checked["slug"]] = checked
    return tuple(_resolve(values, slug, str(path)) for slug in values)


def find(moves: tuple[Move, ...], slug: str) -> Move | None:
    """The move called `slug`, or None."""
    return next((m for m in moves if m.slug == slug), None)


#: Reasons in `Move.refused_by` that belong to the lab's ticket format (three parts; none may be missing), not to
#: one of the checks.
FORMAT_REASONS = frozenset({"signature-part"})


def stopped_by(moves: tuple[Move, ...], check: str) -> Move | None:
    """The first move a sound server stops at `check` alone (what a page shows when that check is switched
    off), or None."""
    return next((m for m in moves if m.stops_at == check and m.before is None and m.copies == 1
                 and m.ticket in ("as-issued", "edit-work")), None)


def first_stopped_by(moves: tuple[Move, ...], check: str) -> Move | None:
    """`stopped_by`'s plain move, else the first one sent after another (a replay is sent after the retry it
    repeats); never a junk one, nor copies sent at once."""
    return stopped_by(moves, check) or next((m for m in moves if m.stops_at == check and m.ticket != "junk"
                                             and m.copies == 1), None)


#: The groups moves are listed in, by what they vary (`Move.group`), in this order.
GROUPS: tuple[str, ...] = ("ticket", "answer", "sequence")


#: How each part of a move reads on a page ("Ticket: payload edited (work.env = prod)").
TICKET_WORDS = {"as-issued": "as issued", "edit-work": "payload edited ({path} = {value})",
                "junk": "not a ticket: junk in several shapes", "absent": "none at all (no requestState)",
                "edit-each": "each payload field edited in turn, old signature kept",
                "unsigned": "signature part emptied, then removed"}
ANSWER_WORDS = {"accept": "yes (accepted)", "none": "none", "decline": "no (declined)",
                "wrong-key": "yes, under a key the server never asked",
                "extra-key": "yes, with an unknown extra key beside it",
                "cancel": "dismissed (cancelled)", "wrong-type": "accepted, confirm as the text \"yes\"",
                "missing-key": "accepted, with the required field left out"}


def facts(move: Move, *, caller: str, arguments: JSONObject, other_arguments: JSONObject | None,
          ttl: int, owner: str = "bob", tool: str = "deploy", other_tool: str | None = "provision"
          ) -> tuple[tuple[str, str], ...]:
    """What a move sends, in words, for a page: caller, time, ticket, answer, arguments, what goes first."""
    ticket = TICKET_WORDS[move.ticket].format(path=move.edit_path, value=move.edit_value)
    sent = other_arguments if move.request == "other" and other_arguments is not None else arguments
    rows = [("Caller", caller), ("Sent at", f"t = {move.at:g} s (expires at {ttl} s)"), ("Ticket", ticket),
            ("Answer", ANSWER_WORDS[move.answer]), ("Arguments", ", ".join(f"{k}: {v}" for k, v in sent.items()))]
    if move.request == "other-tool":
        other = other_tool or "another tool that asks"
        rows.append(("Tool", f"{other}, not {tool}, the tool the ticket was minted by"))
    if move.copies > 1:
        ids = "the same id" if move.copy_ids == "same" else "an id of its own each"
        rows.append(("Copies", f"{move.copies} identical retries sent at once, under {ids}; one may do the work"))
    if move.before is not None:
        where = "on a ticket of its own" if move.before_ticket == "new" else "on the same ticket"
        who = owner if move.before.sender == "owner" else "the other user"
        rows.append(("Before it", f"{move.before.title} ({who}), at t = {move.before.at:g} s, {where}"))
    return tuple(rows)
