"""The round trip as a sequence diagram: the model templates/_sequence.html draws, from real messages.

What it owns: the parties and the two layouts (wide, narrow; the deck's larger text), the arrows read off each
step's JSON-RPC messages and check trace (`sequence_model`), and the model's types. Its steps come from the lesson's
story (web.lessons.widgets `roundtrip_sequence`), the lesson's figures and /check's kept exchanges
(web.check.routes), through the `SeqStep` Protocol. Nothing here plays a move, reads a request or draws by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypedDict

from mrtr import JSON, as_object

#: The parties, left to right: who sends, who routes, who answers, and the one piece of shared state.
SEQ_PARTIES: tuple[tuple[str, str, str], ...] = (
    ("client", "Client (bob)", "Client"), ("lb", "Load balancer", "LB"), ("A", "Replica A", "A"),
    ("B", "Replica B", "B"), ("store", "Redeemed store", "Store"))
#: Two layouts of the same model: wide (desktop, projector) and narrow (a 390 px phone).
SEQ_LAYOUTS: dict[str, dict[str, float]] = {
    "wide": {"left": 84, "gap": 140, "row": 66, "head": 60, "label": 17, "sub": 14.5},
    "narrow": {"left": 50, "gap": 67, "row": 66, "head": 46, "label": 13.6, "sub": 13.6},
}
#: Larger text for a room (the deck): wider lanes and taller rows to hold it; sequence.css has the same sizes.
SEQ_SIZES: dict[str, dict[str, dict[str, float]]] = {
    "deck": {"wide": {"left": 84, "gap": 165, "row": 84, "head": 66, "label": 22, "sub": 19}},
}


def _label_x(centre: float, text: str, size: float, width: float, per_char: float) -> float:
    """Centre a label on its arrow, nudged so it never runs off either edge of the drawing."""
    half = len(text) * size * per_char / 2
    return round(min(max(centre, half + 4), width - half - 4), 1)


@dataclass(frozen=True)
class SeqArrow:
    step: int
    src: str
    dst: str
    label: str  # the method and id, or what the message is when it is not JSON-RPC
    sub: str  # one short line under the arrow: what it carries or what came of it
    ticket: str  # "" (no ticket), "issued", "carried" or "edited"
    kind: str  # request, response, local (inside the client's host) or store
    via_lb: bool

    @property
    def text(self) -> str:
        names = {key: long for key, long, _ in SEQ_PARTIES}
        where = " via the load balancer" if self.via_lb else ""
        carries = {"issued": " (carries the new ticket)", "carried": " (carries the ticket)",
                   "edited": " (carries an edited ticket)"}.get(self.ticket, "")
        return f"{names[self.src]} to {names[self.dst]}{where}: {self.label}{carries}. {self.sub}".strip()


def message_label(message: JSON) -> tuple[str, str]:
    """The arrow's label (method and id) and its sub-line, read from the real JSON-RPC message."""
    if not isinstance(message, dict):
        return "a value", ""
    mid = message.get("id")
    at = f" · id {mid}" if mid is not None else ""
    if "method" in message and "jsonrpc" in message:
        params = as_object(message.get("params"))
        tool = f" {params['name']}" if isinstance(params.get("name"), str) else ""
        carried = [what for key, what in (("requestState", "requestState"), ("inputResponses", "the answer"))
                   if key in params]
        return f"{message['method']}{tool}{at}", f"with {' and '.join(carried)}" if carried else ""
    if "result" in message:
        result = message["result"] if isinstance(message["result"], dict) else {}
        kind = result.get("resultType", "result")
        return f"result: {kind}{at}", "requestState: a signed ticket" if "requestState" in result else ""
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        return f"error {error.get('code', '')}{at}".replace("  ", " "), str(error.get("message", ""))
    if "method" in message:
        return f"{message['method']} (to the user)", "the host shows the question"
    action = message.get("action")
    return (f"the user: {action}" if action else "the user answers"), "the answer goes into the retry"


class SeqLine(Protocol):
    """A message as the sequence diagram reads it: `mrtr.client.Line`, or the lesson's `FigureLine`."""

    @property
    def direction(self) -> str: ...  # "-->" sent, "<--" received
    @property
    def message(self) -> JSON: ...
    @property
    def note(self) -> str: ...


class SeqStep(Protocol):
    """A step as the sequence diagram reads it: `moves.story.RoundTripStep`, `FigureStep`, /check's `DiagramStep`."""

    @property
    def n(self) -> int: ...
    @property
    def replica(self) -> str | None: ...  # the replica that answered; None or "" for the client's host alone
    @property
    def lines(self) -> Sequence[SeqLine]: ...
    @property
    def checks(self) -> Sequence[Mapping[str, JSON]] | None: ...  # the server's check trace, when it has one


class SeqRow(TypedDict):
    """One arrow placed on a layout."""

    arrow: SeqArrow
    y: int
    x1: float
    x2: float
    label_x: float
    sub_x: float
    lanes: int  # how many lifelines apart its ends are (0: an arrow to itself)
    dir: str  # "r", "l" or "self"
    lb: float  # the load balancer's lifeline, where an arrow through it gets its dot
    first: bool  # the first arrow of its step, where the step's number is drawn


class SeqLayout(TypedDict):
    """One layout of the model: its size, its arrows placed, each party's lifeline, and the sizes it is drawn at."""

    width: float
    height: int
    rows: list[SeqRow]
    xs: dict[str, float]
    left: float
    gap: float
    row: float
    head: float
    label: float
    sub: float


class SequenceModel(TypedDict):
    """What templates/_sequence.html draws: the parties, the arrows in words, and the two layouts of them."""

    parties: tuple[tuple[str, str, str], ...]  # (key, long name, short name), left to right
    arrows: list[SeqArrow]
    layouts: dict[str, SeqLayout]  # "wide" and "narrow"
    current: int | None  # the step drawn as current, if any
    answered: dict[int, str | None]  # step -> the replica that answered it
    steps: list[int]
    size: str  # "page" or "deck"
    focus: bool  # only the current step's arrows


def sequence_model(steps: Sequence[SeqStep], *, current: int | None = None, focus: bool = False,
                   size: str = "page") -> SequenceModel:
    """The arrows of the real round trip (`story.roundtrip` steps or the lesson's `FigureStep`s), laid out twice.

    Each JSON-RPC message becomes one arrow between the client and the replica that handled it (through the
    load balancer); the host's question and answer stay on the client; the replica's look-up in the redeemed
    store is drawn when its "Not already redeemed" check ran. Nothing here is drawn by hand: labels, ids,
    tickets and the answering replica come from the messages and the check trace. With `focus`, only the
    current step's arrows are drawn (a short diagram that fits one screen beside the step it shows); `size`
    "deck" draws the text large enough to read on a projector (sequence.css, `.seq-size-deck`).
    """
    arrows: list[SeqArrow] = []
    issued = ""
    for step in steps:
        replica = step.replica
        for line in step.lines:
            message = line.message
            label, sub = message_label(message)
            if not isinstance(message, dict) or "jsonrpc" not in message or not replica:
                arrows.append(SeqArrow(step.n, "client", "client", label, sub, "", "local", False))
                continue
            params = as_object(message.get("params"))
            result = as_object(message.get("result"))
            ticket = ""
            issued_now, sent = result.get("requestState"), params.get("requestState")
            if isinstance(issued_now, str):
                issued, ticket = issued_now, "issued"
            elif isinstance(sent, str):
                same = not issued or sent in (issued, f"{issued[:16]}…{issued[-6:]}")  # the lesson shortens repeats
                ticket = "carried" if same else "edited"
            if line.direction == "-->":
                arrows.append(SeqArrow(step.n, "client", replica, label, sub or line.note, ticket, "request", True))
                arrows.extend(_store_arrows(step, replica))
            else:
                arrows.append(SeqArrow(step.n, replica, "client", label, sub or line.note, ticket, "response", True))
        if not any(a.step == step.n and a.kind == "store" for a in arrows) and not any(
                line.direction == "-->" and replica for line in step.lines):
            # a response-only step still shows its store look-up before the answer goes back
            store = _store_arrows(step, replica) if replica else []
            if store:
                at = next(i for i, a in enumerate(arrows) if a.step == step.n)
                arrows[at:at] = store
    answered = {step.n: step.replica for step in steps}
    return _model(arrows, current=current, answered=answered, size=size, focus=focus)


def _model(arrows: list[SeqArrow], *, current: int | None, answered: dict[int, str | None], size: str,
           focus: bool) -> SequenceModel:
    """Lay the arrows out (only the current step's when `focus`), at the text sizes `size` names."""
    if focus and current is not None:
        arrows = [a for a in arrows if a.step == current]
    index = {key: i for i, (key, _, _) in enumerate(SEQ_PARTIES)}
    layouts: dict[str, SeqLayout] = {}
    for name, base in SEQ_LAYOUTS.items():
        lay = {**base, **SEQ_SIZES.get(size, {}).get(name, {})}
        xs = {key: lay["left"] + i * lay["gap"] for key, i in index.items()}
        width = lay["left"] * 2 + lay["gap"] * (len(SEQ_PARTIES) - 1)
        rows: list[SeqRow] = []
        y = lay["head"] + lay["row"] * 0.55
        last_step = None
        for arrow in arrows:
            if arrow.step != last_step and last_step is not None:
                y += lay["row"] * 0.3
            x1, x2 = xs[arrow.src], xs[arrow.dst]
            lanes = abs(index[arrow.dst] - index[arrow.src])
            mid = (x1 + x2) / 2
            if not lanes:
                label_x = sub_x = x1 + 42
            else:
                label_x = _label_x(mid, arrow.label, lay["label"], width, 0.62)
                sub_x = _label_x(mid, arrow.sub, lay["sub"], width, 0.52)
            rows.append({"arrow": arrow, "y": round(y), "x1": x1, "x2": x2, "label_x": label_x, "sub_x": sub_x,
                         "lanes": lanes, "dir": "r" if x2 > x1 else ("l" if x2 < x1 else "self"),
                         "lb": xs["lb"], "first": arrow.step != last_step})
            last_step = arrow.step
            y += lay["row"]
        layouts[name] = SeqLayout(width=width, height=round(y), rows=rows, xs=xs, left=lay["left"], gap=lay["gap"],
                                  row=lay["row"], head=lay["head"], label=lay["label"], sub=lay["sub"])
    return {"parties": SEQ_PARTIES, "arrows": arrows, "layouts": layouts, "current": current, "answered": answered,
            "steps": sorted({a.step for a in arrows}), "size": size, "focus": focus}


def _store_arrows(step: SeqStep, replica: str) -> list[SeqArrow]:
    single = next((c for c in step.checks or () if c.get("check") == "single-use"), None)
    if single is None or single.get("outcome") == "skipped":
        return []
    spent = single.get("outcome") == "fail"
    return [SeqArrow(step.n, replica, "store", "redeem the ticket's id", "check 6: Not already redeemed", "", "store",
                     False),
            SeqArrow(step.n, "store", replica, "already redeemed" if spent else "not seen before: now spent",
                     "refused" if spent else "single use holds across replicas", "", "store", False)]
