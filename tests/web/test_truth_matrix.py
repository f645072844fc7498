"""Every word the playground shows about a play follows from what its server did (issue 42, item 2).

Every move is played in-process under every combination of the server's switches, on every tool of the picker, at
the clock offsets that matter (in time; the honest retry just past expiry; every move past it; the page's maximum).
For each play the rendered result (verdict, the lines under the answer and the log, the note) and the move list's
summaries are compared with the trace and the wire: the check that stopped the retry, the tools the messages went to,
the keys asked, the outcome, and whether the answer is the frozen ticket refusal. A failure names the play and says
what disagreed.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
from flask import Flask, render_template

from moves.target import Outcome
from mrtr import CHECK_TITLES
from mrtr.errors import FROZEN_TICKET_MESSAGE
from web.playground.lab import run_move
from web.playground.routes import playground_context
from web.playground.switches import MAX_OFFSET, TOOLS, Toggles
from web.playground.views import Result
from web.site.content import load_course

MOVES = load_course().moves
OFFSETS = (0, 113, 150, MAX_OFFSET)
SWITCHES = list(itertools.product((True, False), (False, True), (False, True)))
QUOTED = re.compile(r"“([^”]+)”")
TITLE_OF = {title: name for name, title in CHECK_TITLES.items()}
#: Words that belong to one tool's story: a sentence may use them only when that tool was called in the play.
TOOL_WORDS = {
    "deploy": re.compile(r"\b(deploy\w*|confirm)\b", re.I),
    "provision": re.compile(r"\b(provision\w*|database|region)\b", re.I),
    "release": re.compile(r"\b(releas\w*|notify|1\.4\.0|1\.5\.0)\b", re.I),
}
#: The arguments' words: a sentence may name them only when some message of the play carried them.
ARGUMENT_WORDS = re.compile(r"\b(staging|prod|1\.4\.0|1\.5\.0)\b")
#: Sentences that say the answer is the frozen refusal, and ones that say it is not.
SAYS_FROZEN = re.compile(r"same (frozen )?error as any|only the frozen|same frozen answer|frozen error every")
FROZEN_LINE = "Every refused ticket gets this same frozen answer"
SAYS_OWN = re.compile(r"error of its own|Invalid inputResponses|not the ticket refusal")


def _sent(result: Result) -> list[dict[str, object]]:
    return [json.loads(v.sent) for v, _ in result.earlier] + [json.loads(result.last.sent)]


def _tools_called(result: Result, toggles: Toggles) -> set[str]:
    """The picked tool (round one called it) and every tool a retry of the play went to."""
    return {toggles.tool} | {str(m.get("params", {}).get("name")) for m in _sent(result)}  # type: ignore[union-attr]


def _argument_values(result: Result, toggles: Toggles) -> set[str]:
    """Round one's arguments, every retry's, and the value a move wrote into the ticket."""
    values = {str(v) for v in toggles.played.arguments.values()}
    values |= {str(v) for m in _sent(result) for v in (m.get("params", {}).get("arguments") or {}).values()}  # type: ignore[union-attr]
    if result.move is not None and result.move.ticket == "edit-work":
        values.add(str(result.move.edit_value))
    return values


def _wrong_tool_words(text: str, allowed: set[str], values: set[str]) -> list[str]:
    found = [f"says {m.group(0)!r} though no {tool} was called"
             for tool, pattern in TOOL_WORDS.items() if tool not in allowed for m in pattern.finditer(text)]
    found += [f"names {m.group(0)!r}, which no message of the play carried"
              for m in ARGUMENT_WORDS.finditer(text) if m.group(0) not in values]
    return found


def disagreements(result: Result, html: str, toggles: Toggles) -> list[str]:
    """Every way the shown words disagree with the trace or the wire ([] when none)."""
    found: list[str] = []
    answer = json.loads(result.last.answer) if result.last.answer != "null" else None
    error = (answer or {}).get("error") or {}
    frozen = error.get("message") == FROZEN_TICKET_MESSAGE
    stopped = result.first_failure.name if result.first_failure else ""
    if f'data-verdict="{result.verdict}"' not in html:
        found.append("the verdict shown is not the engine's")
    got_through = "data-danger" in html
    if got_through != (result.move is not None and result.move.expect == Outcome.REFUSED
                       and result.verdict == Outcome.COMPLETED.value):
        found.append(f"'the attack got through' shown={got_through} for a {result.verdict} play")
    says_frozen = FROZEN_LINE in html
    if says_frozen != frozen:
        found.append(f"the frozen-answer line shown={says_frozen}, the wire error is "
                     f"{'the frozen one' if frozen else repr(error.get('message'))}")
    note = result.note
    if note is None:
        return [*found, "no note at all"]
    if note.outcome != result.verdict:
        found.append(f"the note is for {note.outcome}, the play got {result.verdict}")
    text = note.text
    written = next((n for n in result.move.notes if n.text == text), None) if result.move else None
    written_for = getattr(note, "written_for", written.stopped_at if written else None)
    if written_for is not None and written_for != stopped:
        found.append(f"the note was written for a stop at {written_for!r}, the trace stopped at {stopped!r}")
    if result.verdict == Outcome.REFUSED.value and stopped and written_for != stopped \
            and f"“{CHECK_TITLES[stopped]}”" not in text:
        found.append(f"the note for a refusal at {stopped!r} neither was written for it nor names it")
    plain = " ".join(s for s in re.split(r"(?<=[.:;])\s", text) if "built to be stopped by" not in s)
    for title in QUOTED.findall(plain):
        if title in TITLE_OF and TITLE_OF[title] != stopped:
            found.append(f"the note names “{title}”, but {stopped or 'no check'} stopped the retry")
    if SAYS_FROZEN.search(text) and not frozen:
        found.append(f"the note says the answer is the frozen refusal; the wire says {error.get('message')!r}")
    if SAYS_OWN.search(text) and (frozen or not error):
        found.append("the note says the error is one of its own; the wire says otherwise")
    if re.search(r"no longer opens", text) and stopped != "signature":
        found.append(f"the note says the ticket no longer opens; it was refused at {stopped!r}")
    if toggles.sealed and re.search(r"signed ticket|its signature|the signature (still|no longer)", text):
        found.append("the note calls a sealed ticket signed")
    called, values = _tools_called(result, toggles), _argument_values(result, toggles)
    found += [f"note {w}" for w in _wrong_tool_words(text, called, values)]
    found += [f"verdict {w}" for w in _wrong_tool_words(result.verdict_text, called, values)]
    move = result.move
    if move is not None and move.request == "other-tool" and result.verdict != Outcome.NOT_RUN.value \
            and {str(m.get("params", {}).get("name")) for m in _sent(result)} == {toggles.tool}:  # type: ignore[union-attr]
        found.append("'Spend it on another tool' sent its retry to the very tool the ticket was minted by")
    return found


def _play(app: Flask, toggles: Toggles) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    with app.test_request_context("/playground"):
        context = playground_context(toggles.params)
        for move in MOVES:
            result = run_move(move, toggles)
            context["pg"].result = result
            html = render_template("playground/_result.html", **context)
            if problems := disagreements(result, html, toggles):
                bad[move.slug] = problems
    return bad


@pytest.mark.parametrize("tool", list(TOOLS))
@pytest.mark.parametrize("offset", OFFSETS)
def test_every_shown_word_agrees_with_the_trace(app: Flask, tool: str, offset: int) -> None:
    bad = {f"su{su:d} sealed{sealed:d} nosig{nosig:d}": found
           for su, sealed, nosig in SWITCHES
           if (found := _play(app, Toggles(su, sealed, nosig, offset, tool)))}
    assert bad == {}, json.dumps(bad, indent=1, ensure_ascii=False)


@pytest.mark.parametrize("tool", list(TOOLS))
def test_the_move_list_tells_the_picked_tools_story(app: Flask, tool: str) -> None:
    toggles = Toggles(tool=tool)
    played = TOOLS[tool]
    values = {str(v) for v in (*played.arguments.values(), *played.other_arguments.values())}
    with app.test_request_context("/playground"):
        pg = playground_context(toggles.params)["pg"]
    bad = {}
    for view in pg.moves:
        allowed = {tool} | ({played.other_tool} if view.move.request == "other-tool" and played.other_tool else set())
        summary = getattr(view, "summary", view.move.summary)
        if problems := _wrong_tool_words(summary, allowed, values | {str(view.move.edit_value)}):
            bad[view.move.slug] = problems
    assert bad == {}, json.dumps(bad, indent=1, ensure_ascii=False)


def test_under_sealed_tickets_the_edit_moves_say_what_they_really_change(app: Flask) -> None:
    """A sealed payload cannot be read, so "the readable payload is edited" would be false: the list says the
    move changes a character of the blob instead (the engine's `flip_one_character`)."""
    with app.test_request_context("/playground"):
        sealed = playground_context(Toggles(sealed=True).params)["pg"]
        signed = playground_context(Toggles().params)["pg"]
    edits = {v.move.slug: v.summary for v in sealed.moves if v.move.ticket in ("edit-work", "edit-each")}
    assert edits and all("one character of the blob" in text for text in edits.values()), edits
    assert not any("blob" in v.summary for v in signed.moves if v.move.ticket in ("edit-work", "edit-each"))


def test_the_decks_notes_and_captions_agree_with_each_slides_play(app: Flask) -> None:
    """The presenter's deck plays every move, and the switched-off protections, on deploy: each slide's note is
    either the move's own note for that stop or names the check that stopped it, and no caption or note leaves
    deploy's story."""
    from web.demo.routes import DEPLOY_WORDS, build_deck
    from web.playground.words import tell
    from web.site.content import get_content

    with app.test_request_context("/demo"):
        deck = [s for s in build_deck() if s.kind in ("move", "switch")]
        moves = {m.slug: m for m in get_content().moves}
    bad = {}
    for slide in deck:
        problems = []
        stopped = slide.stopped_at["check"] if slide.stopped_at else ""
        move = moves.get(slide.key)
        written = {tell(n.text, DEPLOY_WORDS): n for n in move.notes} if move else {}
        note = written.get(slide.note)
        if slide.verdict == Outcome.REFUSED.value and stopped:
            if not ((note is not None and note.stopped_at == stopped) or f"“{CHECK_TITLES[stopped]}”" in slide.note):
                problems.append(f"refused at {stopped!r}, the note neither was written for it nor names it")
        if note is not None and note.outcome.value != slide.verdict:
            problems.append(f"the note is for {note.outcome.value}, the slide's play got {slide.verdict}")
        values = {"staging", "prod"}
        problems += _wrong_tool_words(slide.note, {"deploy", "provision"} if slide.key == "other-tool" else {"deploy"},
                                      values)
        problems += _wrong_tool_words(slide.caption, {"deploy", "provision"}, values)
        if problems:
            bad[slide.anchor] = problems
    assert deck and bad == {}, json.dumps(bad, indent=1, ensure_ascii=False)
