"""What the catalogue says a server lacking one defence gets wrong, derived from moves/moves.toml alone, so a
new move changes these sets with no edit here.

`caught_by(feature)`: the moves that FAIL on a server without `feature` (a check name from mrtr.tickets.CHECKS,
or "single-use" for a missing redeemed store); `gated_by(moves)`: the moves reported not-run because a move
they need to go first did not get its expectation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from moves.catalog import DEFAULT_PATH, Move, load_moves
from moves.target import Outcome

MOVES: tuple[Move, ...] = load_moves()
SLUGS: list[str] = [m.slug for m in MOVES]


def caught_by(feature: str, moves: Sequence[Move] = MOVES) -> set[str]:
    """Moves a server without `feature` fails: those only that check refuses (`Move.refused_by`: a move another
    check refuses too, such as a stolen ticket sent late, is still refused), a plain retry a sound server stops
    there without refusing it (a retry without the answer, asked again: a server with no answer check does the
    work), and those whose expectation requires it. Moves that go first for another (`before`) count only for
    themselves."""
    return {m.slug for m in moves
            if (m.before is None and m.expect == "refused" and m.refused_by_checks == {feature})
            or (m.before is None and m.expect != "refused" and m.stops_at == feature
                and m.answer in ("accept", "none", "wrong-key") and m.ticket == "as-issued")
            or m.requires == feature}


def gated_by(failed: Iterable[str], moves: Sequence[Move] = MOVES) -> set[str]:
    """Moves whose `before` move is in `failed`: the checker reports them as not shown (not-run)."""
    failed = set(failed)
    return {m.slug for m in moves if m.before is not None and m.before.slug in failed}


def one(description: str, predicate: Callable[[Move], bool]) -> Move:
    """The first catalogue move that fits `predicate`, so tests pick moves by what they do, not by name."""
    found = next((m for m in MOVES if predicate(m)), None)
    assert found is not None, f"the catalogue has no move that {description}"
    return found


HONEST = one("is a plain honest retry", lambda m: m.expect == "completed" and m.before is None
             and m.sender == "owner" and m.ticket == "as-issued" and m.answer == "accept" and m.request == "same"
             and m.timing == "in-time")
EDITED = one("edits the ticket", lambda m: m.ticket == "edit-work" and m.before is None)
STOLEN = one("is sent by the other principal", lambda m: m.sender == "other" and m.before is None)
REPLAY = one("replays a spent ticket", lambda m: m.before is not None and m.before_ticket == "same"
             and m.requires == "single-use")
#: The moves a sound server refuses at one ticket check of their own (no sequence, no junk): one error each.
PLAIN_REFUSALS = [m for m in MOVES if m.expect == "refused" and m.before is None and m.ticket != "junk"
                  and m.copies == 1 and m.refused_by]


#: The move fields a selector may name (besides `before.<field>`, the move sent first, `before` for whether there
#: is one, `same_id`: whether the move's retry reuses the id of the retry sent before it, `burst`: whether
#: it sends several copies at once, and `first`: whether it is the catalogue's first move, the honest call that
#: the checker plays before any other).
SELECTABLE = ("sender", "timing", "ticket", "answer", "request", "expect", "stops_at", "requires", "before_ticket",
              "copy_ids", "round")


def _value(move: Move | None, field: str) -> Any:
    if move is None:
        return None
    if field == "same_id":
        return move.before is not None and move.request_id == move.before.request_id
    if field == "before":
        return move.before is not None
    if field == "burst":
        return move.copies > 1
    if field.startswith("before."):
        return _value(move.before, field.removeprefix("before."))
    if field not in SELECTABLE:
        raise KeyError(f"a selector names {field!r}, which is not a field of a move")
    value = getattr(move, field)
    return str(value) if isinstance(value, Outcome) else value


def matching(selector: dict[str, Any], moves: Sequence[Move] = MOVES) -> set[str]:
    """The catalogue moves that fit a selector (a table of field = value or [values]), so a table can name moves
    by what they do and a new move of an existing kind needs no edit there."""
    def value(move: Move, field: str) -> Any:
        # Only the position in the catalogue is not a fact about the move alone.
        return move is moves[0] if field == "first" else _value(move, field)

    return {m.slug for m in moves if all(value(m, f) in (want if isinstance(want, list) else [want])
                                         for f, want in selector.items())}


def select(items: list[Any], moves: Sequence[Move] = MOVES) -> set[str]:
    """The moves a list names: each item a slug, or a selector (see `matching`)."""
    chosen: set[str] = set()
    for item in items:
        chosen |= {item} if isinstance(item, str) else matching(item, moves)
    return chosen


def entry_of(text: str, slug: str) -> str:
    """The whole `[[moves]]` entry of `slug` in a moves file: its fields and its `[[moves.notes]]`."""
    entries = re.split(r"(?m)^(?=\[\[moves\]\]$|\[\[notes\]\]$)", text)
    found = [e for e in entries if e.startswith("[[moves]]") and re.search(rf'(?m)^slug = "{slug}"$', e)]
    assert len(found) == 1, slug
    return found[0]


def copy_of(move: Move) -> tuple[str, str, str]:
    """A one-entry copy of `move`'s whole entry, as an author adding a move of its kind would write it, under a
    new slug and title: (slug, title, the TOML entry)."""
    slug, title = f"{move.slug}-copy", f"{move.title}, once more"
    entry = entry_of(DEFAULT_PATH.read_text(encoding="utf-8"), move.slug)
    entry = entry.replace(f'slug = "{move.slug}"', f'slug = "{slug}"', 1)
    entry = re.sub(r'(?m)^title = ".*"$', lambda _: f'title = "{title}"', entry, count=1)
    return slug, title, entry


def with_copies(originals: Iterable[Move], path: Path) -> tuple[Move, ...]:
    """The catalogue with a one-entry copy of each of `originals` appended, written to `path` and read back."""
    entries = [copy_of(move)[2] for move in originals]
    path.write_text("\n\n".join([DEFAULT_PATH.read_text(encoding="utf-8").rstrip("\n"), *entries]),
                    encoding="utf-8")
    return load_moves(path)
