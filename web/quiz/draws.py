"""Quiz items the live server draws per learner (task kind "draw"): a situation drawn fresh from a seed, played on
the real in-process lab server, and graded by what that server really does.

A draw is a real ticket, minted by a lab target (lab keys /mcp never accepts, a fake clock) at a drawn time with
a drawn lifetime, and one retry of it: a drawn sender, tool arguments, answer and clock, sometimes an edited
payload or a ticket already spent. Each draw is built around one or two faults (none: it completes), so every
check, and the order they run in, comes up. The learner predicts what the server does, choosing among options
that are the same for every draw (the outcomes, and each check that can refuse); the server plays the draw and
its own outcome and trace decide. The draw travels in the form as a token signed with the services key ring,
bound to the lesson and the question, so an attempt is graded on the draw the learner saw; nothing is stored.
Never renders, never reads HX-* headers.
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from itsdangerous import BadData, URLSafeSerializer

from moves.engine import MINT_ID, Step, modern_request, outcome_of
from moves.target import Outcome, Role
from moves.targets.in_process import LabStore, LabTarget, lab_target
from mrtr import CHECKS, JSONObject, as_object
from mrtr.tickets import b64decode_strict as b64decode
from mrtr.tickets import b64encode
from web.playground.lab import CALL, seeded_jti
from web.site.moveviews import pretty_json
from web.site.services import get_services

SALT = "mrtr.quiz-draw"
#: What can go wrong in a draw (one, sometimes two; "none" completes).
FAULTS = ("none", "signature", "principal", "expiry", "request", "missing", "declined", "malformed", "single-use")
#: Lifetimes a drawn ticket may have, in seconds.
LIFETIMES = (60, 120, 300, 600)
#: The options, the same for every draw: (id, words). A refusal names the check that stops it.
OUTCOMES: tuple[tuple[str, str], ...] = (
    ("completed", "It completes: the deploy is done"),
    ("ended", "It ends the call without deploying"),
    ("asked-again", "It asks the question again, with a fresh ticket"),
    *((f"refused-{check}", f"It refuses it at the {check} check") for check in CHECKS),
)
#: The options when the item asks whether the ticket is spent once the retry is answered.
SPENT: tuple[tuple[str, str], ...] = (
    ("spent", "The server has now recorded this ticket as redeemed"),
    ("unspent", "The server has not recorded this ticket as redeemed"),
)
#: What a draw item may ask (its task's `ask`): the options for each.
ASKS: dict[str, tuple[tuple[str, str], ...]] = {"outcome": OUTCOMES, "spent": SPENT}
#: The envs a drawn ticket may be minted for.
ENVS = ("staging", "prod", "dev")
_ENVS = ENVS


class DrawError(ValueError):
    """The draw token is missing, forged or from another question: said to the learner, never counted."""


@dataclass(frozen=True)
class Situation:
    """One draw: everything the learner is shown, and what the server is then sent."""

    seed: str
    minted_at: int
    lifetime: int
    env: str  # the env the ticket was minted for
    faults: tuple[str, ...]
    sender: str  # who sends the retry
    sent_env: str  # the env the retry asks for
    answer: str  # "yes", "no", "decline", "missing" or "malformed"
    at: int  # seconds after minting that the retry is sent
    tampered: bool
    spent: bool  # the owner's honest retry of this very ticket went first


def draw(seed: str, now: int) -> Situation:
    """The situation `seed` stands for, minted at about `now`."""
    rng = random.Random(seed)
    faults = [rng.choice(FAULTS)]
    if faults[0] != "none" and rng.random() < 0.45:  # two faults: which check runs first decides
        faults.append(rng.choice([f for f in FAULTS if f not in ("none", faults[0])]))
    lifetime = rng.choice(LIFETIMES)
    env = rng.choice(_ENVS)
    answer = {"missing": "missing", "declined": rng.choice(["decline", "no"]), "malformed": "malformed"}
    said = next((answer[f] for f in faults if f in answer), "yes")
    at = rng.randrange(lifetime + 5, lifetime + 600) if "expiry" in faults else rng.randrange(2, lifetime - 5)
    return Situation(seed, now - rng.randrange(0, 900), lifetime, env, tuple(faults),
                     "alice" if "principal" in faults else "bob",
                     rng.choice([e for e in _ENVS if e != env]) if "request" in faults else env,
                     said, at, "signature" in faults, "single-use" in faults)


def _target(situation: Situation, store: LabStore) -> LabTarget:
    services = get_services()
    return lab_target(services.lab_ring, now=situation.minted_at, catalog=services.server.catalog,
                      ttl=situation.lifetime, jti=seeded_jti(f"quiz-draw\x00{situation.seed}"), store=store)


def _answers(answer: str) -> JSONObject | None:
    if answer == "missing":
        return None
    if answer == "malformed":
        return {"confirm": {"action": "accept", "content": {"confirm": "yes"}}}
    if answer == "decline":
        return {"confirm": {"action": "decline"}}
    return {"confirm": {"action": "accept", "content": {"confirm": answer == "yes"}}}


def _tamper(ticket: str, env: str) -> str:
    """The ticket with its readable payload's work.env rewritten, its signature left as it was."""
    prefix, payload, signature = ticket.split(".")
    claims = json.loads(b64decode(payload))
    claims["work"] = {**as_object(claims.get("work")), "env": env}
    edited = b64encode(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    return f"{prefix}.{edited}.{signature}"


@dataclass(frozen=True)
class PlayedDraw:
    """A draw as the server played it: what was shown, and what the server did."""

    situation: Situation
    ticket: str
    claims: JSONObject  # the ticket's readable payload, as minted
    retry: JSONObject  # the retry sent
    outcome: str  # one of OUTCOME_IDS
    said: str  # the server's answer, in words
    spent_now: bool  # the ticket is spent once this retry has been answered


def play(situation: Situation) -> PlayedDraw:
    store = LabStore()
    target = _target(situation, store)
    first = modern_request(MINT_ID, "tools/call", {"name": CALL.tool, "arguments": {"env": situation.env}}, CALL)
    target.begin()
    minted = Step("owner", 0.0, first, target.send("owner", first))
    ticket = str(as_object(as_object(minted.reply.response).get("result")).get("requestState"))
    claims = json.loads(b64decode(ticket.split(".")[1]))
    if situation.spent:
        target.advance(1, past_expiry=False, expires_at=None)
        target.send("owner", _retry(situation.env, ticket, _answers("yes"), 2))
    sent = _tamper(ticket, "prod" if situation.env != "prod" else "dev") if situation.tampered else ticket
    retry = _retry(situation.sent_env, sent, _answers(situation.answer), 3)
    target.advance(situation.at, past_expiry=False, expires_at=None)
    role: Role = "other" if situation.sender == target.other else "owner"
    reply = target.send(role, retry)
    outcome = outcome_of(reply)
    failed = next((c["check"] for c in reply.trace or [] if c.get("outcome") == "fail"), "")
    key = f"refused-{failed}" if outcome == Outcome.REFUSED and failed else str(outcome)
    if outcome == Outcome.COMPLETED and not _words(reply.response).startswith("deployed"):
        key = "ended"  # a result, but without the work: the user said no
    # Spent: the server's own redeemed store holds the ticket's id once this retry has been answered.
    return PlayedDraw(situation, ticket, claims, retry, key, _words(reply.response), claims.get("jti") in store.spent)


def _retry(env: str, ticket: str, answers: JSONObject | None, request_id: int) -> JSONObject:
    params: JSONObject = {"name": CALL.tool, "arguments": {"env": env}, "requestState": ticket}
    if answers is not None:
        params["inputResponses"] = answers
    return modern_request(request_id, "tools/call", params, CALL)


def _words(response: JSONObject | None) -> str:
    body = as_object(response)
    if "error" in body:
        error = as_object(body["error"])
        return f"error {error.get('code')}: {str(error.get('message', ''))[:160]}"
    result = as_object(body.get("result"))
    if result.get("resultType") == "input_required":
        return "input_required, with a question and a fresh ticket"
    content = result.get("content")
    texts = [str(c.get("text", "")) for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    return "; ".join(texts)[:200] or pretty_json(body)[:200]


# -- binding a draw to the learner's attempt ------------------------------------------------------------------


def _serializer() -> URLSafeSerializer:
    return URLSafeSerializer(list(reversed(get_services().ring.keys)), salt=SALT)


def new_token(lesson: str, question: str) -> tuple[str, Situation]:
    """A fresh draw for one learner: its signed token (the form carries it back) and the situation."""
    seed, now = secrets.token_urlsafe(9), int(get_services().server.clock())
    token = _serializer().dumps({"l": lesson, "q": question, "s": seed, "t": now})
    return token, draw(seed, now)


def read_token(lesson: str, question: str, token: str) -> Situation:
    """The situation a posted token stands for. Raises DrawError for a missing, forged or foreign one."""
    if not token or len(token) > 512:
        raise DrawError("this question's situation is missing: reload the quiz for a fresh one")
    try:
        data = _serializer().loads(token)
    except BadData:
        raise DrawError("this situation was not drawn here: reload the quiz for a fresh one") from None
    if not isinstance(data, dict) or data.get("l") != lesson or data.get("q") != question \
            or not isinstance(data.get("s"), str) or not isinstance(data.get("t"), int):
        raise DrawError("this situation belongs to another question: reload the quiz for a fresh one")
    return draw(data["s"], data["t"])


def room_draw(now: int) -> str:
    """A fresh draw for one learner in a live class, as the class store keeps it ("<seed>:<time>"): the class keeps
    it server-side, per learner, so the phone needs no token and every page of the learner shows one situation."""
    return f"{secrets.token_urlsafe(9)}:{now}"


def room_situation(kept: str) -> Situation:
    """The situation a kept room draw stands for. Raises DrawError for one that is not a room draw."""
    seed, _, at = kept.rpartition(":")
    if not seed or not at.isdigit():
        raise DrawError("this draw cannot be read back: reload the page")
    return draw(seed, int(at))


@dataclass(frozen=True)
class DrawView:
    """What a draw shows before it is answered: the ticket's payload, the clock, the sender and the retry."""

    token: str
    payload: str  # the ticket's readable payload, as JSON
    minted_at: int
    expires_at: int
    now: int  # the server's clock when the retry arrives
    sender: str
    owner: str
    retry: str  # the retry sent, as JSON (ticket in full)
    edited: bool
    spent_before: bool
    options: tuple[tuple[str, str], ...] = OUTCOMES


def view(lesson: str, question: str, ask: str) -> DrawView:
    token, situation = new_token(lesson, question)
    return view_of(token, play(situation), ask)


def view_of(token: str, played: PlayedDraw, ask: str = "outcome") -> DrawView:
    s = played.situation
    exp = played.claims.get("exp")
    return DrawView(token, pretty_json(played.claims), s.minted_at, int(exp) if isinstance(exp, int | float) else 0,
                    s.minted_at + s.at, s.sender, "bob", pretty_json(played.retry), s.tampered, s.spent,
                    ASKS.get(ask, OUTCOMES))


def right_option(played: PlayedDraw, ask: str) -> str:
    """The option the server's own play makes right."""
    if ask == "spent":
        return "spent" if played.spent_now else "unspent"
    return played.outcome


def grade(lesson: str, question: str, ask: str, form: Mapping[str, str]) -> tuple[bool, str] | None:
    """(right, what the server did) for a posted prediction; None when no option was picked.

    Raises:
        DrawError: the draw cannot be read back.
    """
    situation = read_token(lesson, question, str(form.get("draw", "")))
    picked = str(form.get("predict", ""))
    if picked not in dict(ASKS.get(ask, OUTCOMES)):
        return None
    played = play(situation)
    words = dict(OUTCOMES)[played.outcome]
    spent = "the ticket is now recorded as redeemed" if played.spent_now else "the ticket is not recorded as redeemed"
    return (picked == right_option(played, ask),
            f"the server played your situation: {words.lower()} ({played.said}); {spent}")
