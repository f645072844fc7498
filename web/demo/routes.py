"""Presenter mode: the round trip's six steps and every move of moves/moves.toml as a full-screen deck.

Everything on a slide is produced by real servers at the moment the page is asked for, but on a
FIXED demo key, a fixed clock and a seeded ticket-id sequence, so the same slide replays byte for
byte on every load, in every rehearsal and on every machine. The demo key is public on purpose:
it is not the app's secret, and a ticket shown on the projector is worthless against `/mcp`.

Each slide has its own URL (`/demo/step/3`, `/demo/move/<slug>`) and the deck works as linked
pages without JavaScript; `static/js/demo.js` adds the keyboard, the raw-JSON toggle, the speaker
notes sync and the kiosk auto-play. URLs name slides, never tickets.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from flask import Blueprint, abort, render_template, request, url_for

from moves.catalog import Move, facts
from moves.engine import Call, MoveResult, play
from moves.labcodec import LabRing
from moves.story import roundtrip
from moves.target import Outcome
from moves.targets.in_process import LabTarget, lab_target
from mrtr import CHECK_TITLES, DEFAULT_TTL, JSON
from mrtr.clock import FIXED_EPOCH
from mrtr.tickets import b64encode
from web.playground.switches import TOOLS
from web.playground.words import play_note, tell
from web.site.content import Lesson, get_content
from web.site.moveviews import OUTCOME_LABELS, OUTCOME_TEXT, step_words, stopped_first_by

bp = Blueprint("demo", __name__, url_prefix="/demo")

#: Public on purpose: a demo must never show (or depend on) the app's real secret.
DEMO_KEY = "mrtr-lab-demo-key-presenter-not-a-secret"
DEMO_RING = LabRing.public(DEMO_KEY)
#: The instant every demo starts at, so times and expiries never drift.
DEMO_EPOCH = FIXED_EPOCH
#: Auto-play bounds, in seconds per slide.
AUTOPLAY_MIN, AUTOPLAY_MAX = 2, 600

#: Verdicts a slide shows as good news, bad news, or neither.
VERDICT_TONES = {"complete": "ok", "completed": "ok", "deployed": "ok", "refused": "bad", "error": "bad",
                 "asked-again": "warn", "input_required": "warn", "declined": "warn", "not-run": "warn",
                 "ended": "warn"}


def demo_jti(seed: str) -> Callable[[], str]:
    """Ticket ids that look random (16 base64url characters) but follow from `seed`, in order."""
    counter = itertools.count(1)
    return lambda: b64encode(hashlib.sha256(f"mrtr-demo\x00{seed}\x00{next(counter)}".encode()).digest()[:12])


@dataclass(frozen=True)
class Block:
    """One raw JSON message on a slide, with what it is."""

    label: str
    message: JSON


@dataclass(frozen=True)
class Slide:
    index: int
    kind: str  # "step", "move" or "switch"
    key: str  # the step number or the move slug
    number: int  # 1-6 for steps, 1-N for the N moves
    title: str
    caption: str
    note: str  # what the presenter says (speaker notes)
    verdict: str
    replica: str | None = None
    actor: str = "bob"
    at: float | None = None
    checks: tuple[dict[str, str], ...] = ()
    stopped_at: dict[str, str] | None = None
    facts: tuple[tuple[str, str], ...] = ()
    blocks: tuple[Block, ...] = ()
    log: tuple[str, ...] = field(default_factory=tuple)

    @property
    def anchor(self) -> str:
        return f"{self.kind}-{self.key}"

    @property
    def verdict_label(self) -> str:
        return OUTCOME_LABELS.get(self.verdict, self.verdict)

    @property
    def tone(self) -> str:
        return VERDICT_TONES.get(self.verdict, "neutral")

    def url(self, *, notes: bool = False) -> str:
        endpoint = "demo.notes_" + self.kind if notes else "demo." + self.kind
        return url_for(endpoint, **({"n": self.number} if self.kind == "step" else {"slug": self.key}))


def _lesson() -> Lesson:
    """The lesson whose round trip and move notes the deck presents."""
    course = get_content()
    return next((lesson for lesson in course.lessons if lesson.roundtrip_steps), course.lessons[0])


def _first_failure(checks: tuple[dict[str, str], ...]) -> dict[str, str] | None:
    failed = next((c for c in checks if c["outcome"] == "fail"), None)
    return {**failed, "title": CHECK_TITLES[failed["check"]]} if failed else None


def step_slides(lesson: Lesson) -> list[Slide]:
    captions = {c.n: c for c in lesson.roundtrip_steps}
    slides = []
    for step in roundtrip(DEMO_RING, jti=demo_jti("roundtrip"), epoch=DEMO_EPOCH):
        caption = captions.get(step.n)
        checks = tuple(step.checks or ())
        where = f"Replica {step.replica}" if step.replica else "The client and its user"
        slides.append(Slide(
            index=step.n - 1, kind="step", key=str(step.n), number=step.n,
            title=caption.title if caption else step.title, caption=caption.caption if caption else "",
            note=caption.caption if caption else step.title, verdict=step.verdict, replica=step.replica,
            checks=checks, stopped_at=_first_failure(checks), facts=(("Where", where),),
            blocks=tuple(Block(f"{'Sent' if line.direction == '-->' else 'Received'}"
                               f"{': ' + line.note if line.note else ''}", line.message) for line in step.lines),
        ))
    return slides


CALL = Call(client_name="mrtr-lab-playground")


def _describe(move: Move, caller: str) -> tuple[tuple[str, str], ...]:
    return facts(move, caller=caller, arguments=CALL.arguments, other_arguments=CALL.other_arguments,
                 ttl=DEFAULT_TTL)


def _played(result: MoveResult, target: LabTarget) -> tuple[tuple[dict[str, str], ...], tuple[Block, ...],
                                                              tuple[str, ...]]:
    """What a slide shows of a played move: the last step's checks, every message sent and answered, the log."""
    last = result.last
    checks = tuple(last.reply.trace or ()) if last else ()
    blocks = []
    if result.minted is not None:
        blocks += [Block("Round one: bob calls deploy", result.minted.sent),
                   Block("The server answers input_required with a ticket", result.minted.reply.response)]
    moves = get_content().moves
    for step in result.steps:
        what = step_words(step, moves)
        blocks.append(Block(f"{what[0].upper()}{what[1:]}, sent by {target.principal(step.role)} at t = {step.at:g} s",
                            step.sent))
        blocks.append(Block("The server's answer", step.reply.response))
    steps = ([result.minted] if result.minted else []) + result.steps
    return checks, tuple(blocks), tuple(line for step in steps for line in step.reply.log)


#: The deck plays the first lesson's deploy, so its notes and captions are told in deploy's words.
DEPLOY_WORDS = TOOLS["deploy"].words()


def move_slides(lesson: Lesson, first_index: int) -> list[Slide]:
    slides = []
    for number, move in enumerate(get_content().moves, 1):
        target = lab_target(DEMO_RING, now=DEMO_EPOCH, jti=demo_jti(f"move:{move.slug}"))
        result = play(move, target, CALL)
        checks, blocks, log = _played(result, target)
        note, _ = play_note(move, result, {}, DEPLOY_WORDS)
        slides.append(Slide(
            index=first_index + number - 1, kind="move", key=move.slug, number=number, title=move.title,
            caption=tell(move.summary, DEPLOY_WORDS), note=note, verdict=str(result.outcome),
            actor=target.principal(move.sender), at=move.at, checks=checks, stopped_at=_first_failure(checks),
            facts=_describe(move, target.principal(move.sender)), blocks=blocks, log=log,
        ))
    return slides


#: The protections a lab switch removes, each with a slide of its own: (slide key, the check the switch takes away,
#: the lab server's switch, what the slide calls it). The move each slide plays is the first one a sound server
#: stops at that check (`stopped_first_by`), and its words are that move's own note for getting through.
SWITCHES: tuple[tuple[str, str, dict[str, bool], str], ...] = (
    ("single-use-off", "single-use", {"single_use": False}, "single use"),
    ("signature-off", "signature", {"verify_signature": False}, "the signature check"),
)


def switch_slides(first_index: int) -> list[Slide]:
    """The misuse moves that succeed once a protection is switched off, replayed like the move slides."""
    slides: list[Slide] = []
    for key, check, switch, switched in SWITCHES:
        move = stopped_first_by(get_content().moves, check)
        if move is None:  # no move in moves.toml shows this protection: no slide for it
            continue
        target = lab_target(DEMO_RING, now=DEMO_EPOCH, jti=demo_jti(f"switch:{key}"),
                            single_use=switch.get("single_use", True),
                            verify_signature=switch.get("verify_signature", True))
        result = play(move, target, CALL)
        checks, blocks, log = _played(result, target)
        caller = target.principal(move.sender)
        note, _ = play_note(move, result, switch, DEPLOY_WORDS)
        went = "goes through" if result.outcome == Outcome.COMPLETED else OUTCOME_TEXT[result.outcome].lower()
        slides.append(Slide(
            index=first_index + len(slides), kind="switch", key=key, number=len(slides) + 1,
            title=f"{switched[0].upper()}{switched[1:]} off: “{move.title}” {went}",
            caption=f"{tell(move.summary, DEPLOY_WORDS)} This time {switched} is switched off.",
            note=note, verdict=str(result.outcome), actor=caller, at=move.at,
            checks=checks, stopped_at=_first_failure(checks),
            facts=(("Switched off", switched), *_describe(move, caller)), blocks=blocks, log=log,
        ))
    return slides


def build_deck() -> list[Slide]:
    """Every slide (the round trip's steps, one per move, then the switched-off protections), replayed now."""
    lesson = _lesson()
    steps = step_slides(lesson)
    moves = move_slides(lesson, len(steps))
    return steps + moves + switch_slides(len(steps) + len(moves))


def _autoplay() -> int | None:
    raw = request.args.get("autoplay", "")
    if not raw.isdigit():
        return None
    return min(max(int(raw), AUTOPLAY_MIN), AUTOPLAY_MAX)


def _render(deck: list[Slide], current: Slide, *, notes: bool) -> str:
    return render_template("demo/notes.html" if notes else "demo/deck.html", deck=deck, current=current,
                           lesson=_lesson(), autoplay=None if notes else _autoplay(),
                           prev=deck[current.index - 1] if current.index > 0 else None,
                           next=deck[current.index + 1] if current.index + 1 < len(deck) else None)


def _find(deck: list[Slide], kind: str, key: str) -> Slide:
    slide = next((s for s in deck if s.kind == kind and s.key == key), None)
    if slide is None:
        abort(404)
    return slide


@bp.get("")
def deck() -> str:
    slides = build_deck()
    return _render(slides, slides[0], notes=False)


@bp.get("/step/<int:n>")
def step(n: int) -> str:
    slides = build_deck()
    return _render(slides, _find(slides, "step", str(n)), notes=False)


@bp.get("/move/<slug>")
def move(slug: str) -> str:
    slides = build_deck()
    return _render(slides, _find(slides, "move", slug), notes=False)


@bp.get("/switch/<slug>")
def switch(slug: str) -> str:
    slides = build_deck()
    return _render(slides, _find(slides, "switch", slug), notes=False)


@bp.get("/notes/switch/<slug>")
def notes_switch(slug: str) -> str:
    slides = build_deck()
    return _render(slides, _find(slides, "switch", slug), notes=True)


@bp.get("/notes")
def notes() -> str:
    slides = build_deck()
    return _render(slides, slides[0], notes=True)


@bp.get("/notes/step/<int:n>")
def notes_step(n: int) -> str:
    slides = build_deck()
    return _render(slides, _find(slides, "step", str(n)), notes=True)


@bp.get("/notes/move/<slug>")
def notes_move(slug: str) -> str:
    slides = build_deck()
    return _render(slides, _find(slides, "move", slug), notes=True)
