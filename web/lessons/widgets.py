"""The data behind the lesson's live figures, computed from the real server, never canned.

Each `*_data` function returns plain values for one widget template. The expensive, deterministic
ones (the round trip, the lab, the check matrix) are computed once per process and key ring and
cached on the app; the anatomy mints a fresh ticket whenever it is asked for. Every server here
runs on the lab's keys (`Services.lab_ring`), never the app's: no ticket a figure shows works on /mcp.
The round trip's sequence diagram is laid out by web/site/sequence.py; this module hands it the lesson's steps.
"""

from __future__ import annotations

import base64
import copy
import inspect
import json
import threading
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict, TypeVar, cast

from flask import current_app
from markupsafe import Markup, escape

from moves import story, transcripts
from moves.engine import Call, answers_for, modern_request, outcome_of, play
from moves.target import Outcome, Reply
from moves.targets.in_process import lab_target
from mrtr import CHECK_TITLES, CHECKS, DEFAULT_TTL, JSON, FakeClock, MemoryStore, Server, as_object
from mrtr_toolsets import lesson as mrtr_tools
from web.playground.switches import TOOLS
from web.playground.words import play_note, tell
from web.site.content import ContentError, Course, Lesson
from web.site.moveviews import OUTCOME_CLASS, OUTCOME_TEXT, pretty_json
from web.site.sequence import SequenceModel, sequence_model
from web.site.services import get_services

#: Where each move happens on the figure's clock, and where the ticket stops being valid.
MINT_AT = 0
EXPIRY_AT = DEFAULT_TTL

#: What each claim in a ticket payload is for (shown beside the decoded value).
CLAIM_MEANINGS: dict[str, str] = {
    "v": "Format version of the claims, so a later server can tell old tickets from new ones.",
    "jti": "A random id for this one ticket; Not already redeemed records it once it is spent.",
    "sub": "The principal the ticket was minted for. A retry by anyone else fails Principal is the caller.",
    "req": "A digest of the method, the tool and its arguments. Same method and arguments compares it with the retry.",
    "iat": "Issued at, in seconds since the epoch (the server's clock when it minted the ticket).",
    "exp": f"Expires at: issued at plus {DEFAULT_TTL} seconds. Later than this, Not expired fails.",
    "step": "Which question the server was waiting on when it handed the work out.",
    "work.env": "The half-done work itself: the environment to deploy. It comes back from the ticket, "
                "not from the retry's arguments.",
}

_lock = threading.Lock()
T = TypeVar("T")


def _cache() -> dict[str, object]:
    cache: dict[str, object] = current_app.extensions.setdefault("mrtr.widgets", {})
    return cache


def _cached(name: str, compute: Callable[[], T]) -> T:
    cache = _cache()
    with _lock:
        if name not in cache:
            cache[name] = compute()
        return cast(T, cache[name])  # stored by this function under this name, from `compute`


# -- the round trip ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldNote:
    id: str  # the anchor of its definition-list entry
    label: str  # where the field sits in its message, e.g. params › _meta › …
    note: str


@dataclass(frozen=True)
class Header:
    name: str
    value: str
    note: FieldNote


@dataclass(frozen=True)
class FigureLine:
    direction: str
    note: str
    message: JSON
    html: Markup  # the message as indented JSON, each explained key a link to its note
    fields: tuple[FieldNote, ...]
    headers: tuple[Header, ...]


@dataclass(frozen=True)
class FigureStep:
    n: int
    title: str
    caption: str
    replica: str | None
    lines: tuple[FigureLine, ...]
    checks: tuple[dict[str, str], ...] | None
    verdict: str


@dataclass(frozen=True)
class FieldNotes:
    """The lesson's fields.toml: notes matched by the end of a field's path, and HTTP header notes."""

    fields: tuple[tuple[tuple[str, ...], str], ...]
    headers: tuple[tuple[str, str, str], ...]

    def note_for(self, path: tuple[str, ...]) -> str | None:
        best: tuple[int, str] | None = None
        for pattern, note in self.fields:
            n = len(pattern)
            if n <= len(path) and all(p in ("*", k) for p, k in zip(pattern, path[-n:], strict=True)):
                if best is None or n > best[0]:
                    best = (n, note)
        return best[1] if best else None


def field_notes(lesson: Lesson) -> FieldNotes:
    """Read and check the lesson's fields.toml (cached); a malformed file raises ContentError."""
    def load() -> FieldNotes:
        path = lesson.directory / "fields.toml"
        if not path.is_file():
            return FieldNotes((), ())
        try:
            with path.open("rb") as handle:
                data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise ContentError(f"{path}: not valid TOML: {exc}") from None
        fields = []
        for i, raw in enumerate(data.get("fields", []), 1):
            pattern, note = raw.get("path"), raw.get("note")
            if not (isinstance(pattern, list) and pattern and all(isinstance(k, str) and k for k in pattern)
                    and isinstance(note, str) and note.strip()):
                raise ContentError(f"{path}: field #{i} needs a non-empty path (a list of keys) and a note")
            fields.append((tuple(pattern), note.strip()))
        headers = []
        for i, raw in enumerate(data.get("headers", []), 1):
            if not all(isinstance(raw.get(k), str) and raw[k].strip() for k in ("name", "value", "note")):
                raise ContentError(f"{path}: header #{i} needs a name, a value and a note")
            headers.append((raw["name"], raw["value"], raw["note"].strip()))
        return FieldNotes(tuple(fields), tuple(headers))

    return _cached(f"fields:{lesson.slug}", load)


def _label(path: tuple[str, ...]) -> str:
    return " › ".join(f"[{k}]" if k == "*" else k for k in path) or "(the message)"


def annotate(message: JSON, notes: FieldNotes, anchor: str, *, base: tuple[str, ...] = ()
             ) -> tuple[Markup, tuple[FieldNote, ...]]:
    """`message` as `json.dumps(indent=2)` would print it, with every key that has a note made a link
    to that note's entry (`#<anchor>-<n>`); and the notes, in the order their fields appear."""
    found: dict[str, FieldNote] = {}

    def key_html(key: str, path: tuple[str, ...]) -> Markup:
        text = json.dumps(key, ensure_ascii=False)
        note = notes.note_for(path)
        if note is None:
            return escape(text)
        entry = found.get(note)
        if entry is None:
            entry = found[note] = FieldNote(f"{anchor}-{len(found) + 1}", _label(path[len(base):]), note)
        return Markup('<a class="field-key" href="#{0}" data-field-note="{0}" aria-label="{1}">{2}</a>').format(
            entry.id, f"{key}: what this field is", text)

    def render(value: JSON, path: tuple[str, ...], indent: str) -> Markup:
        inner = indent + "  "
        if isinstance(value, dict) and value:
            items = [Markup("{0}{1}: {2}").format(inner, key_html(str(k), (*path, str(k))),
                                                  render(v, (*path, str(k)), inner)) for k, v in value.items()]
            return Markup("{\n") + Markup(",\n").join(items) + Markup("\n{0}}}").format(indent)
        if isinstance(value, list) and value:
            items = [Markup("{0}{1}").format(inner, render(v, (*path, "*"), inner)) for v in value]
            return Markup("[\n") + Markup(",\n").join(items) + Markup("\n{0}]").format(indent)
        return escape(json.dumps(value, ensure_ascii=False))

    html = render(message, base, "")
    return html, tuple(found.values())


def _shorten_ticket(message: JSON, full: str) -> JSON:
    """The same message with a repeated ticket shortened: the full ticket is shown once, where it is issued."""
    params = message.get("params") if isinstance(message, dict) else None
    ticket = params.get("requestState") if isinstance(params, dict) else None
    if not isinstance(message, dict) or not isinstance(params, dict) or not isinstance(ticket, str) \
            or len(ticket) < 40 or not full:
        return message
    return {**message, "params": {**params, "requestState": f"{ticket[:16]}…{ticket[-6:]}"}}


#: Where step 3's question and answer travel, so the same notes explain them.
_STEP3_BASES = {"<--": ("inputRequests", "confirm"), "-->": ("inputResponses", "confirm")}


def roundtrip_data(lesson: Lesson, anchor: str = "rt") -> list[FigureStep]:
    steps = _cached("roundtrip", lambda: story.roundtrip(get_services().lab_ring))
    notes = field_notes(lesson)
    captions = {c.n: c for c in lesson.roundtrip_steps}
    issued = ""
    figure = []
    for step in steps:
        caption = captions.get(step.n)
        lines = []
        for i, line in enumerate(step.lines, 1):
            message = line.message
            state = as_object(message.get("result")).get("requestState")
            if isinstance(state, str) and not issued:
                issued = state
            shown = _shorten_ticket(message, issued)
            base = _STEP3_BASES.get(line.direction, ()) if "jsonrpc" not in message else ()
            html, fields = annotate(shown, notes, f"{anchor}-f{step.n}-{i}", base=base)
            headers: tuple[Header, ...] = ()
            if line.direction == "-->" and isinstance(message, dict) and "method" in message:
                headers = tuple(Header(name, value, FieldNote(f"{anchor}-h{step.n}-{i}-{j}", name, note))
                                for j, (name, value, note) in enumerate(notes.headers, 1))
            lines.append(FigureLine(line.direction, line.note, shown, html, fields, headers))
        figure.append(FigureStep(step.n, caption.title if caption else step.title,
                                 caption.caption if caption else "", step.replica, tuple(lines),
                                 tuple(step.checks) if step.checks else None, step.verdict))
    return figure


# -- where single use lives: the replay on a shared store and on separate stores -------------------------

REPLAY_MODES = ("shared", "own")


@dataclass(frozen=True)
class ReplayStep:
    label: str
    replica: str
    request_id: JSON
    verdict: str
    checks: tuple[dict[str, str], ...]


class ReplayView(TypedDict):
    """What lessons/_widget_roundtrip.html's replay part draws: the retry, then the same retry on the other replica."""

    mode: str  # shared or own: whether the replicas share one redeemed store
    steps: list[ReplayStep]
    modes: tuple[str, ...]


def replay_data(mode: str) -> ReplayView:
    """bob's retry redeemed on replica B, then the very same retry replayed on replica A.

    `shared`: both replicas consult one redeemed store, so A refuses the replay. `own`: each replica
    keeps its own store, so A has never seen the ticket spent and deploys a second time.
    """
    if mode not in REPLAY_MODES:
        raise ValueError(f"stores must be one of {', '.join(REPLAY_MODES)}")

    def play_it() -> ReplayView:
        ring = get_services().lab_ring
        clock = FakeClock(story.FIGURE_EPOCH)
        shared = MemoryStore()
        lb = story.Balancer({name: Server(ring=ring, store=shared if mode == "shared" else MemoryStore(),
                                          clock=clock, catalog=mrtr_tools.lesson_catalog(), name=f"mrtr-lab-{name}",
                                          operator_log=False)
                                    for name in ("A", "B")})
        call = Call(client_name="mrtr-lab-playground")
        first = lb.handle(modern_request(2, "tools/call", {"name": call.tool, "arguments": dict(call.arguments)},
                                         call), principal="bob", replica="A")
        asked = first.exchange.input_required
        questions = asked.get("inputRequests", {}) if asked else {}
        ticket = asked.get("requestState", "") if asked else ""
        retry = modern_request(3, "tools/call", {"name": call.tool, "arguments": dict(call.arguments),
                                                 "inputResponses": answers_for(questions),
                                                 "requestState": ticket}, call)
        clock.advance(8)
        played = []
        for label, name in (("The retry, on replica B", "B"), ("The same retry again, on replica A", "A")):
            answered = lb.handle(copy.deepcopy(retry), principal="bob", replica=name)
            trace = answered.exchange.trace
            outcome = outcome_of(Reply(answered.exchange.response))
            played.append(ReplayStep(label, name, retry["id"], OUTCOME_CLASS[outcome],
                                     tuple(trace.as_dicts()) if trace else ()))
            clock.advance(4)
        return {"mode": mode, "steps": played, "modes": REPLAY_MODES}

    return _cached(f"replay:{mode}", play_it)


# -- the ticket, opened ----------------------------------------------------------------------------


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def anatomy_data() -> dict[str, object]:
    """A freshly minted ticket, its three parts, its claims field by field, and the same claims sealed."""
    raw = story.anatomy(get_services().lab_ring)
    claims = raw["claims"]
    fields = []
    for name, value in claims.items():
        if name == "work" and isinstance(value, dict):
            for key, inner in value.items():
                fields.append({"name": f"work.{key}", "value": inner,
                               "meaning": CLAIM_MEANINGS.get(f"work.{key}", "Saved work.")})
        else:
            fields.append({"name": name, "value": value, "meaning": CLAIM_MEANINGS.get(name, "")})
    payload_json = _b64decode(raw["payload_b64"]).decode("utf-8")
    return {**raw, "fields": fields, "payload_json": pretty_json(json.loads(payload_json)),
            "sealed_blob": raw["sealed_token"].partition(".")[2]}


# -- the moves against the clock ---------------------------------------------------------------------




@dataclass(frozen=True)
class MatrixRow:
    slug: str
    title: str
    at: float
    actor: str
    summary: str
    note: str
    cells: tuple[tuple[str, str], ...]  # (check, pass | fail | skipped), in CHECKS order
    verdict: str  # the Outcome's value
    expect: str
    stops_at: str
    response: str
    #: The retry this move sends first, as (its title, who sends it, when), or None.
    before: tuple[str, str, float] | None = None

    @property
    def word(self) -> str:
        """The verdict's style class ("deployed", "refused", "ended", ...)."""
        return OUTCOME_CLASS.get(Outcome(self.verdict), self.verdict)

    @property
    def label(self) -> str:
        """The verdict in the story's words ("Deployed", "Ended, nothing deployed", ...)."""
        return OUTCOME_TEXT.get(Outcome(self.verdict), self.verdict)


def _play_all(course: Course, lesson: Lesson) -> list[MatrixRow]:
    services = get_services()
    words = TOOLS["deploy"].words()  # the figures play the first lesson's deploy
    rows = []
    for move in course.moves:
        target = lab_target(services.lab_ring, now=story.FIGURE_EPOCH, catalog=services.server.catalog)
        result = play(move, target, Call(client_name="mrtr-lab-playground"))
        last = result.last
        outcomes = {c["check"]: c["outcome"] for c in (last.reply.trace or [])} if last else {}
        # A missing answer is not a failure: the server asks again, and the matrix says so.
        asked_again = result.outcome is Outcome.ASKED_AGAIN
        cells = tuple((name, "asked-again" if name == "answer" and asked_again and outcomes.get(name) == "fail"
                       else outcomes.get(name, "skipped")) for name in CHECKS)
        note, _ = play_note(move, result, {}, words)
        first = move.before
        before = (first.title, target.principal(first.sender), first.at) if first is not None else None
        rows.append(MatrixRow(move.slug, move.title, move.at, target.principal(move.sender), tell(move.summary, words),
                              note, cells, str(result.outcome), str(move.expect),
                              move.stops_at, pretty_json(last.reply.response if last else None), before))
    return rows


@dataclass(frozen=True)
class TimelineEvent:
    """One mark on the timeline: the ticket minted, a move played (its row), or the ticket's expiry."""

    kind: str  # "mint", "move" or "expiry"
    at: float
    row: MatrixRow | None = None


class TimelineView(TypedDict):
    """What the checks' timeline (lessons/_widget_timeline.html) draws: every move's row, on the ticket's clock."""

    rows: list[MatrixRow]
    events: list[TimelineEvent]  # the mint, each move and the expiry, in time order
    checks: list[tuple[str, str]]  # (check, its title), in order
    expiry_at: int


def timeline_data(course: Course, lesson: Lesson) -> TimelineView:
    rows = _cached(f"matrix:{lesson.slug}", lambda: _play_all(course, lesson))
    events = [TimelineEvent("mint", MINT_AT), *(TimelineEvent("move", row.at, row) for row in rows),
              TimelineEvent("expiry", EXPIRY_AT)]
    events.sort(key=lambda e: (e.at, e.kind != "mint"))
    return {"rows": rows, "events": events, "checks": [(c, CHECK_TITLES[c]) for c in CHECKS],
            "expiry_at": EXPIRY_AT}


# -- the legacy shim and the lab ----------------------------------------------------------------------


def lab_data() -> list[transcripts.Scene]:
    return _cached("lab", transcripts.lab_scenes)


def shim_data() -> transcripts.Scene:
    return next(scene for scene in lab_data() if scene.key == "legacy")


# -- the SDK, side by side -----------------------------------------------------------------------------


def sdk_data(lesson: Lesson) -> dict[str, str]:
    snippet = lesson.directory / "snippets" / "deploy.ts"
    return {
        "typescript": snippet.read_text(encoding="utf-8") if snippet.is_file() else "",
        "python": inspect.getsource(mrtr_tools.deploy),
        "python_module": f"{mrtr_tools.__name__}.deploy",
    }


# -- links that break it ---------------------------------------------------------------------------------


def breakit_data(lesson: Lesson) -> list[dict[str, str]]:
    """The "Break it" links, from the lesson's breakit.toml: label, playground URL, what the switch changes."""
    def load() -> list[dict[str, str]]:
        path = lesson.directory / "breakit.toml"
        if not path.is_file():
            return []
        try:
            with path.open("rb") as handle:
                links = tomllib.load(handle).get("links", [])
        except tomllib.TOMLDecodeError as exc:
            raise ContentError(f"{path}: not valid TOML: {exc}") from None
        for i, link in enumerate(links, 1):
            if not (isinstance(link, dict) and all(isinstance(link.get(k), str) and link[k].strip()
                                                   for k in ("label", "href", "changes"))):
                raise ContentError(f"{path}: link #{i} needs a label, an href and what it changes")
        return [{"label": x["label"], "href": x["href"], "changes": x["changes"]} for x in links]

    return _cached(f"breakit:{lesson.slug}", load)


# -- the round trip as a sequence diagram (web/site/sequence.py draws any steps; these are the lesson's own) ----------


def roundtrip_sequence(current: int | None = None, *, focus: bool = False, size: str = "page") -> SequenceModel:
    """The diagram model of the lab's own round trip (the deck draws its current step beside each step slide)."""
    steps = _cached("roundtrip", lambda: story.roundtrip(get_services().lab_ring))
    return sequence_model(steps, current=current, focus=focus, size=size)
