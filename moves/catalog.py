"""The misuse moves as data: `lessons/moves.toml` read into frozen `Move` records, and validated.

Pages, the demo, the checker and the tests all read the list from here, so adding a move is one
entry in the file. Owns the schema (see the file's header and /work/plan/engine.md); a broken file
raises ValueError naming the file, the move and the field. Never imports Flask.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mrtr.tickets import CHECKS

from .target import Outcome, Role

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "lessons" / "moves.toml"

SENDERS: tuple[str, ...] = ("owner", "other")
TIMINGS: tuple[str, ...] = ("in-time", "past-expiry")
TICKETS: tuple[str, ...] = ("as-issued", "edit-work")
ANSWERS: tuple[str, ...] = ("accept", "none")
REQUESTS: tuple[str, ...] = ("same", "other")
EXPECTS: tuple[Outcome, ...] = (Outcome.COMPLETED, Outcome.REFUSED, Outcome.ASKED_AGAIN)
REQUIRES: tuple[str, ...] = ("single-use",)


@dataclass(frozen=True)
class Move:
    """One move: how the retry differs from the honest one, and what a sound server must do with it."""

    slug: str
    title: str
    summary: str
    sender: Role
    at: float
    timing: Literal["in-time", "past-expiry"]
    ticket: Literal["as-issued", "edit-work"]
    answer: Literal["accept", "none"]
    request: Literal["same", "other"]
    repeat: bool
    expect: Outcome
    stops_at: str
    edit_path: str = "work.env"
    edit_value: Any = "prod"
    request_id: int | None = None
    requires: str | None = None


_FIELDS: dict[str, tuple[type | tuple[type, ...], tuple[Any, ...] | None, bool]] = {
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
    "repeat": (bool, None, False),
    "expect": (str, tuple(str(e) for e in EXPECTS), True),
    "stops_at": (str, ("", *CHECKS), False),
    "edit_path": (str, None, False),
    "edit_value": ((str, int, float, bool), None, False),
    "request_id": (int, None, False),
    "requires": (str, REQUIRES, False),
}


def _move(raw: dict[str, Any], where: str) -> Move:
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
    values = {**raw, "at": float(raw["at"]), "expect": Outcome(raw["expect"]), "repeat": raw.get("repeat", False),
              "stops_at": raw.get("stops_at", "")}
    return Move(**values)


def load_moves(path: Path | None = None) -> tuple[Move, ...]:
    """Read and validate the moves file (default: <repo>/lessons/moves.toml).

    Raises:
        ValueError: the file is missing or not TOML, or a move is malformed; the message names
            the file, the move and the field.
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the moves file ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    tables = data.get("moves")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise ValueError(f"{path}: needs at least one [[moves]] table")
    moves = []
    for i, raw in enumerate(tables, 1):
        name = raw.get("slug") if isinstance(raw.get("slug"), str) else f"#{i}"
        moves.append(_move(raw, f"{path}: move {name!r}" if name != f"#{i}" else f"{path}: move {name}"))
    slugs = [m.slug for m in moves]
    duplicate = next((s for s in slugs if slugs.count(s) > 1), None)
    if duplicate:
        raise ValueError(f"{path}: move {duplicate!r}: field 'slug' is used twice")
    return tuple(moves)
