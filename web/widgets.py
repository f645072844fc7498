"""The data behind the lesson's live figures, computed from the real server, never canned.

Each `*_data` function returns plain values for one widget template. The expensive, deterministic
ones (the round trip, the lab, the check matrix) are computed once per process and key ring and
cached on the app; the anatomy mints a fresh ticket whenever it is asked for. Every server here
runs on the lab's keys (`Services.lab_ring`), never the app's: no ticket a figure shows works on /mcp.
"""

from __future__ import annotations

import base64
import inspect
import json
import threading
from dataclasses import dataclass
from typing import Any

from flask import current_app

from moves import story, transcripts
from moves.engine import Call, play
from moves.target import Outcome
from moves.targets.lab import lab_target
from mrtr import CHECKS
from mrtr import tools as mrtr_tools
from mrtr.tickets import CHECK_TITLES
from web.content import Course, Lesson
from web.services import get_services

#: Where each move happens on the figure's clock, and where the ticket stops being valid.
MINT_AT = 0
EXPIRY_AT = 120

#: What each claim in a ticket payload is for (shown beside the decoded value).
CLAIM_MEANINGS: dict[str, str] = {
    "v": "Format version of the claims, so a later server can tell old tickets from new ones.",
    "jti": "A random id for this one ticket; the single-use check records it once it is spent.",
    "sub": "The principal the ticket was minted for. A retry by anyone else fails the principal check.",
    "req": "A digest of the method, the tool and its arguments. The retry must match it exactly.",
    "iat": "Issued at, in seconds since the epoch (the server's clock when it minted the ticket).",
    "exp": "Expires at: issued at plus 120 seconds. Later than this, the expiry check fails.",
    "step": "Which question the server was waiting on when it handed the work out.",
    "work.env": "The half-done work itself: the environment to deploy. It comes back from the ticket, "
                "not from the retry's arguments.",
}

_lock = threading.Lock()


def _cache() -> dict[str, Any]:
    return current_app.extensions.setdefault("mrtr.widgets", {})


def _cached(name: str, compute: Any) -> Any:
    cache = _cache()
    with _lock:
        if name not in cache:
            cache[name] = compute()
        return cache[name]


def pretty(message: Any) -> str:
    return json.dumps(message, indent=2, ensure_ascii=False)


# -- the round trip ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureStep:
    n: int
    title: str
    caption: str
    replica: str | None
    lines: tuple[transcripts.Line, ...]
    checks: tuple[dict[str, str], ...] | None
    verdict: str


def roundtrip_data(lesson: Lesson) -> list[FigureStep]:
    steps = _cached("roundtrip", lambda: story.roundtrip(get_services().lab_ring))
    captions = {c.n: c for c in lesson.roundtrip_steps}
    figure = []
    for step in steps:
        caption = captions.get(step.n)
        figure.append(FigureStep(step.n, caption.title if caption else step.title,
                                 caption.caption if caption else "", step.replica, tuple(step.lines),
                                 tuple(step.checks) if step.checks else None, step.verdict))
    return figure


# -- the ticket, opened ----------------------------------------------------------------------------


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def anatomy_data() -> dict[str, Any]:
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
    return {**raw, "fields": fields, "payload_json": pretty(json.loads(payload_json)),
            "sealed_blob": raw["sealed_token"].partition(".")[2]}


# -- the moves against the clock ---------------------------------------------------------------------


#: The style class each outcome takes in the lesson's figures (site.css colours "deployed" as good news).
OUTCOME_WORDS = {Outcome.COMPLETED: "deployed", Outcome.REFUSED: "refused", Outcome.ASKED_AGAIN: "asked-again",
                 Outcome.ERROR: "error", Outcome.NOT_RUN: "not-run"}


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

    @property
    def word(self) -> str:
        return OUTCOME_WORDS.get(Outcome(self.verdict), self.verdict)


def _play_all(course: Course, lesson: Lesson) -> list[MatrixRow]:
    services = get_services()
    rows = []
    for move in course.moves:
        target = lab_target(services.lab_ring, now=story.FIGURE_EPOCH, catalog=services.catalog)
        result = play(move, target, Call(client_name="mrtr-lab-playground"))
        last = result.last
        outcomes = {c["check"]: c["outcome"] for c in (last.reply.trace or [])} if last else {}
        cells = tuple((name, outcomes.get(name, "skipped")) for name in CHECKS)
        note = lesson.note_for(move.slug, result.outcome, result.stopped_at)
        rows.append(MatrixRow(move.slug, move.title, move.at, target.principal(move.sender), move.summary,
                              note.text if note else "", cells, str(result.outcome), str(move.expect),
                              move.stops_at, pretty(last.reply.response if last else None)))
    return rows


def timeline_data(course: Course, lesson: Lesson) -> dict[str, Any]:
    rows = _cached(f"matrix:{lesson.slug}", lambda: _play_all(course, lesson))
    events: list[dict[str, Any]] = [{"kind": "mint", "at": MINT_AT}]
    events += [{"kind": "move", "at": row.at, "row": row} for row in rows]
    events.append({"kind": "expiry", "at": EXPIRY_AT})
    events.sort(key=lambda e: (e["at"], e["kind"] != "mint"))
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

BREAK_IT = (
    ("Remove the signature check, then send the tampered ticket", "/playground?no_signature=1#move-tampered",
     "signature"),
    ("Turn single use off, then send the honest retry twice", "/playground?single_use=0#move-twice",
     "single-use"),
    ("Seal the tickets, then open one and tamper with it", "/playground?sealed=1#move-tampered", "signature"),
    ("Move the clock 150 s past the mint, then send the honest retry", "/playground?offset=150#move-honest",
     "expiry"),
)


def breakit_data() -> list[dict[str, str]]:
    return [{"label": label, "href": href, "check": check, "check_title": CHECK_TITLES[check]}
            for label, href, check in BREAK_IT]
