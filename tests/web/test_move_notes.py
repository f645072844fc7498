"""A move's note never contradicts what really stopped it (issue 32, item 4).

Every move is played on the lab's real in-process server under every combination of the playground's switches
and at several clock offsets (in time, just past expiry, long past it), and the note the playground shows is
compared with the server's trace and its answer on the wire: the outcome, the check that stopped the move, the
checks the note names, the error it quotes, and what it says about the signature. A note written for one check
(the wrong-type note's "Answer included") must not be shown when another check (expiry) refused the move.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
from flask import Flask

from moves.target import Outcome
from mrtr import CHECK_TITLES
from web.playground.lab import run_move
from web.playground.switches import Toggles
from web.playground.views import Result
from web.site.content import load_course

MOVES = load_course().moves
#: In time; the honest move just past its ticket's expiry (8 + 113 > 120); every move long past it.
OFFSETS = (0, 113, 150, 600)
TOGGLES = [Toggles(single_use, sealed, no_signature, offset)
           for single_use, sealed, no_signature, offset in itertools.product((True, False), (False, True),
                                                                             (False, True), OFFSETS)]
TITLE_OF = {title: name for name, title in CHECK_TITLES.items()}
QUOTED = re.compile(r"“([^”]+)”")


def contradictions(result: Result, toggles: Toggles) -> list[str]:
    """Every way the note shown for `result` disagrees with the trace or the wire ([] when none)."""
    note = result.note
    if note is None:
        return ["no note at all"]
    found = []
    failed = result.first_failure.name if result.first_failure else ""
    if note.outcome != result.verdict:
        found.append(f"note for {note.outcome}, move got {result.verdict}")
    if note.written_for is not None and note.written_for != failed:
        found.append(f"note for a stop at {note.written_for!r}, stopped at {failed!r}")
    # the note composed from the trace names the check the move was built for, saying why it did not act
    plain = " ".join(s for s in re.split(r"(?<=[.:;])\s", note.text) if "built to be stopped by" not in s)
    for title in QUOTED.findall(plain):
        if title in TITLE_OF and TITLE_OF[title] != failed:
            found.append(f"note names “{title}”, but {failed or 'no check'} stopped the move")
    answer = result.last.answer
    for quoted in ("Invalid inputResponses", "Invalid or expired requestState"):
        if quoted in note.text and quoted not in answer:
            found.append(f"note quotes {quoted!r}, the server answered {answer[:120]}")
    signature = next(c for c in result.checks if c.name == "signature")
    if signature.outcome != "pass" and re.search(r"[Ss]ignature[^.:;]*\bpass", note.text):
        found.append(f"note says the signature passes, the trace says {signature.outcome}")
    if toggles.sealed and re.search(r"signed ticket|its signature|the signature", note.text):
        found.append("note calls a sealed ticket signed")
    return found


@pytest.mark.parametrize("toggles", TOGGLES, ids=lambda t: f"su{t.single_use:d}-sealed{t.sealed:d}-"
                                                            f"nosig{t.no_signature:d}-t{t.offset}")
def test_no_note_contradicts_the_check_that_stopped_the_move(app: Flask, toggles: Toggles) -> None:
    with app.test_request_context("/playground"):
        bad = {m.slug: found for m in MOVES if (found := contradictions(run_move(m, toggles), toggles))}
    assert bad == {}


def test_a_malformed_answer_refused_at_expiry_gets_the_expiry_note_not_the_answer_note(app: Flask) -> None:
    """The case the issue found: wrong-type at +150 s was refused at expiry but shown the schema note."""
    with app.test_request_context("/playground"):
        for slug in ("wrong-type", "missing-key"):
            move = next(m for m in MOVES if m.slug == slug)
            late, in_time = run_move(move, Toggles(offset=150)), run_move(move, Toggles())
            assert late.first_failure is not None and late.first_failure.name == "expiry"
            assert late.note is not None and "Not expired" in late.note.text
            assert in_time.first_failure is not None and in_time.first_failure.name == "answer"
            assert in_time.note is not None and "Invalid inputResponses" in in_time.note.text
            error = json.loads(in_time.last.answer)["error"]
            assert error["data"]["reason"] == "invalid_input_response" and error["data"]["key"] == "confirm"


def test_a_note_that_names_the_refusing_check_says_so_in_its_data() -> None:
    """So that note_for can never pick it for a move another check refused."""
    for move in MOVES:
        for note in move.notes:
            named = [TITLE_OF[t] for t in QUOTED.findall(note.text) if t in TITLE_OF]
            if named and note.outcome in (Outcome.REFUSED, Outcome.ASKED_AGAIN):
                assert note.stopped_at in named, (move.slug, note.text[:60])


@pytest.mark.parametrize(("changes", "says", "label"), [
    ({"answer": "raw", "answer_raw": '{"confirm": {"action": "accept", "content": {"confirm": "yes"}}}'},
     "Invalid inputResponses", "failed"),
    ({"answer": "none"}, "asked the question again", "asked again"),
    ({"arguments": '{"env": "prod"}'}, "only the frozen error", "passed"),
], ids=["malformed", "missing", "ticket"])
def test_your_own_retry_is_told_what_the_client_really_got(client, changes: dict[str, str], says: str,  # noqa: ANN001
                                                             label: str) -> None:
    from bs4 import BeautifulSoup

    from tests.web.test_playground import HX, custom_form

    page = BeautifulSoup(client.post("/playground/custom", data={**custom_form(client), **changes}, headers=HX)
                         .get_data(as_text=True), "html.parser")
    assert says in page.select_one("[data-note]").get_text()
    answer = page.select_one("ol.checks li[data-check='answer'] .check-outcome")
    if label != "passed":  # a ticket refusal stops before the answer is read
        assert answer.get_text() == label
