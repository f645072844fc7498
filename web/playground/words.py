"""The words a page shows about a played move, taken from what the server did: the note, the caption, and whether the
wire error is the frozen ticket refusal.

A move's written note (moves.toml) tells its story; it is shown only when it fits the play: the same outcome, and for
a refusal the same stopping check (a note that names no check is never shown under a refusal, since any check may
have refused it: the clock, a switch). When none fits, the note is composed from the trace: the check that stopped
the retry and its detail, the check the move was built for and why it did not act, and the error on the wire. Every
`{name}` mark in a note or summary is filled with the picked tool's story words (`PlayedTool.words`), so a provision
play never reads "deploy". It never plays a move and never reads a request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from moves.catalog import Move, MoveNote
from moves.engine import MoveResult
from moves.target import Outcome
from mrtr import CHECK_TITLES, JSON, as_object
from mrtr.errors import FROZEN_TICKET_MESSAGE

_MARK = re.compile(r"\{([a-z_]+)\}")


def tell(text: str, words: Mapping[str, str]) -> str:
    """`text` with each `{name}` mark that names a story word replaced by it (any other brace is left alone)."""
    return _MARK.sub(lambda m: words.get(m.group(1), m.group(0)), text)


def frozen_error(response: JSON) -> bool:
    """Whether this answer is the frozen error every refused ticket gets (and not, say, a malformed answer's own)."""
    error = as_object(as_object(response).get("error"))
    return error.get("message") == FROZEN_TICKET_MESSAGE


def written_note(move: Move, outcome: Outcome, stopped_at: str | None, *, sealed: bool) -> MoveNote | None:
    """The move's own note for this play, or None: under a refusal only a note naming the check that refused it."""
    note = move.note_for(outcome, stopped_at, sealed=sealed)
    if note is None or (outcome == Outcome.REFUSED and note.stopped_at is None):
        return None
    return note


def _switched_off(check: str, switches: Mapping[str, bool]) -> bool:
    return (check == "signature" and not switches.get("verify_signature", True)) or \
        (check == "single-use" and not switches.get("single_use", True))


def composed_note(move: Move, outcome: Outcome, stopped_at: str | None, detail: str, response: JSON,
                  result_text: str, switches: Mapping[str, bool]) -> str:
    """A note built from the play alone, for when no written note fits it."""
    aimed = move.stops_at
    off = [CHECK_TITLES[c] for c in ("signature", "single-use") if _switched_off(c, switches)]
    if outcome == Outcome.REFUSED and stopped_at:
        text = f"“{CHECK_TITLES[stopped_at]}” refused this retry: {detail}."
        if aimed and aimed != stopped_at:
            why = ("it is switched off on this server" if _switched_off(aimed, switches)
                   else "the checks run in order, and this one came first")
            text += f" This move was built to be stopped by “{CHECK_TITLES[aimed]}”; {why}."
        elif not aimed:
            text += " A sound server lets this move through when nothing else is wrong: here something else was."
        told = (" The client saw only the frozen error every refused ticket gets." if frozen_error(response)
                else " The client got an error of its own, not the ticket refusal.")
        return text + told
    if outcome == Outcome.REFUSED:
        return "The request was refused before any ticket check ran: the answer above says why."
    if outcome == Outcome.COMPLETED:
        text = f"Every check that ran passed and the server did the work: {result_text or 'a complete result'}."
        if move.expect == Outcome.REFUSED:
            text += (f" A sound server refuses this move; here {' and '.join(f'“{t}”' for t in off)} "
                     f"{'is' if len(off) == 1 else 'are'} switched off." if off
                     else " A sound server refuses this move.")
        return text
    if outcome == Outcome.ASKED_AGAIN:
        return "The server asked the question again with a fresh input_required: nothing was done."
    if outcome == Outcome.ENDED:
        return f"The call ended without the work: {result_text or 'a complete result that did nothing'}."
    why = detail.removeprefix("not shown: ") or "the verdict above says why"
    return f"This move was not played against this server: {why}."


def _result_text(response: JSON) -> str:
    content = as_object(as_object(response).get("result")).get("content")
    blocks = content if isinstance(content, list) else []
    return " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict)).strip()


def play_note(move: Move, played: MoveResult, switches: Mapping[str, bool],
              words: Mapping[str, str]) -> tuple[str, MoveNote | None]:
    """What a play teaches, in the played tool's words: the move's own note when one fits, else one composed from
    the trace. Returns the text and the written note it came from (None: composed)."""
    last = played.steps[-1] if played.steps else played.minted
    response = last.reply.response if last else None
    failed = next((c for c in (last.reply.trace or []) if c.get("outcome") == "fail"), None) if last else None
    sealed = bool(played.ticket and played.ticket.startswith("s1."))
    written = written_note(move, played.outcome, played.stopped_at, sealed=sealed)
    detail = played.detail if played.outcome == Outcome.NOT_RUN else str(failed.get("detail", "")) if failed else ""
    text = written.text if written is not None else composed_note(
        move, played.outcome, played.stopped_at, detail, response,
        _result_text(response), switches)
    return tell(text, words), written


def summary_for(move: Move, words: Mapping[str, str], *, sealed: bool) -> str:
    """A move's summary in the played tool's words; under sealed tickets, an edit of the payload says what the move
    really does instead (the payload cannot be read, so one character of the blob is changed)."""
    text = tell(move.summary, words)
    if sealed and move.ticket in ("edit-work", "edit-each"):
        text += (" With sealed tickets nobody can read the payload, so the move changes one character of the blob "
                 "instead.")
    return text
