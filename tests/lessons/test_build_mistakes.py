"""Plausible wrong ways to write each step of the build lesson, and what catches them.

Each mistake below replaces one step's block of the solution with code a learner could well write
(and, for "spends first", moves the step's call too), then runs the real checker: it must flag the
moves named here (a verdict other than pass), so the lesson's grading cannot be fooled by it. A few
mistakes change no answer on the wire at all; for those the checker must pass, and the lesson must say
why no black-box test can see them (tests below read the sentence in the lesson's text).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lessons.buildkit import BUILD, CATALOGUE, LESSON, SHOWABLE, check, verdicts
from web.build.routes import splice


@dataclass(frozen=True)
class Mistake:
    step: str
    name: str
    code: str  # the step's block as the learner wrote it
    flags: frozenset[str] = frozenset()  # moves the checker must flag; empty: no black-box move can see it
    #: Edits outside the block, (old, new), for a mistake in where the step's check is called.
    given: tuple[tuple[str, str], ...] = ()
    #: For a mistake no move can see: words of the lesson that say why.
    lesson_says: str = ""


def learner(step: str, body: str) -> str:
    """A step's function as a learner wrote it: the solution's own `def` line, then `body`."""
    return BUILD.step(step).solution.splitlines()[0] + body


MISTAKES = (
    # -- signature --
    Mistake("signature", "checks only the prefix", learner("signature", '''
    return ticket.startswith("t1.")
'''), frozenset({"tampered"})),
    Mistake("signature", "checks only that it splits in three", learner("signature", '''
    return len(ticket.split(".")) == 3
'''), frozenset({"tampered"})),
    Mistake("signature", "forgets to return False", learner("signature", '''
    try:
        _prefix, rest = ticket.split(".", 1)
        SIGNER.unsign(rest)
    except (ValueError, BadSignature):
        print("[server] bad signature", file=sys.stderr)
    return True
'''), frozenset({"tampered"})),
    Mistake("signature", "compares with == instead of in constant time", learner("signature", '''
    parts = ticket.split(".")
    if len(parts) != 3:
        return False
    return parts[2] == SIGNER.get_signature(parts[1]).decode()
'''), lesson_says="a black-box test that sends a handful of requests cannot measure that"),
    # -- principal --
    Mistake("principal", "compares with a constant", learner("principal", '''
    return claims.get("sub") == "bob"
'''), frozenset({"stolen"})),
    Mistake("principal", "checks only that a sub is there", learner("principal", '''
    return bool(claims.get("sub"))
'''), frozenset({"stolen"})),
    Mistake("principal", "accepts a ticket with no sub", learner("principal", '''
    return claims.get("sub", PRINCIPAL) == PRINCIPAL
'''), lesson_says="answers every move the same as a strict one"),
    # -- expiry --
    Mistake("expiry", "compares the time left with the lifetime (<=)", learner("expiry", '''
    return claims["exp"] - time.time() <= TICKET_TTL
'''), frozenset({"late"})),
    Mistake("expiry", "turns the comparison round", learner("expiry", '''
    return claims["exp"] <= time.time()
'''), frozenset({"honest"})),
    Mistake("expiry", "reads exp as milliseconds", learner("expiry", '''
    return time.time() < claims["exp"] / 1000
'''), frozenset({"honest"})),
    Mistake("expiry", "uses the monotonic clock", learner("expiry", '''
    return time.monotonic() < claims["exp"]
'''), frozenset({"late"})),
    Mistake("expiry", "lets an exp that is not a number through", learner("expiry", '''
    try:
        return time.time() < float(claims["exp"])
    except (KeyError, TypeError, ValueError):
        return True
'''), lesson_says="answers every move the same as a strict one"),
    # -- request --
    Mistake("request", "checks only that a digest is there", learner("request", '''
    return bool(claims.get("req"))
'''), frozenset({"other-request"})),
    Mistake("request", "ignores the retry's arguments", learner("request", '''
    return claims.get("req") == request_digest(tool, claims.get("work", {}))
'''), frozenset({"other-request"})),
    # -- answer --
    Mistake("answer", "checks only that an answer is there", learner("answer", '''
    for key in claims.get("asked", []):
        if key not in responses:
            return "missing"
    return "yes"
'''), frozenset({"declined", "cancelled", "wrong-type", "missing-key"})),
    Mistake("answer", "accepts any action", learner("answer", '''
    for key in claims.get("asked", []):
        if key not in responses:
            return "missing"
        content = responses[key].get("content") or {}
        if "confirm" in content and not isinstance(content["confirm"], bool):
            raise BadAnswer("confirm must be true or false")
        if content.get("confirm") is False:
            return "no"
    return "yes"
'''), frozenset({"declined", "cancelled", "missing-key"})),
    Mistake("answer", "takes any truthy confirm for a yes", learner("answer", '''
    for key in claims.get("asked", []):
        answer = responses.get(key)
        if answer is None:
            return "missing"
        if answer.get("action") != "accept" or not (answer.get("content") or {}).get("confirm"):
            return "no"
    return "yes"
'''), frozenset({"wrong-type"})),
    Mistake("answer", "takes a missing confirm for a yes", learner("answer", '''
    for key in claims.get("asked", []):
        answer = responses.get(key)
        if answer is None:
            return "missing"
        if answer.get("action") != "accept":
            return "no"
        confirm = (answer.get("content") or {}).get("confirm", True)
        if not isinstance(confirm, bool):
            raise BadAnswer("confirm must be true or false")
        if not confirm:
            return "no"
    return "yes"
'''), frozenset({"missing-key"})),
    Mistake("answer", "asks again on decline and cancel", learner("answer", '''
    for key in claims.get("asked", []):
        answer = responses.get(key)
        if not isinstance(answer, dict) or answer.get("action") != "accept":
            return "missing"
        if not isinstance((answer.get("content") or {}).get("confirm"), bool):
            raise BadAnswer("confirm must be true or false")
        if not answer["content"]["confirm"]:
            return "no"
    return "yes"
'''), frozenset({"declined", "cancelled"})),
    Mistake("answer", "refuses a missing answer", learner("answer", '''
    for key in claims.get("asked", []):
        answer = responses.get(key)
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise BadAnswer(f"no usable answer to {key!r}")
        if answer["action"] != "accept":
            return "no"
        if not isinstance((answer.get("content") or {}).get("confirm"), bool):
            raise BadAnswer("confirm must be true or false")
        if not answer["content"]["confirm"]:
            return "no"
    return "yes"
'''), frozenset({"no-answer"})),
    # -- single-use --
    Mistake("single-use", "never records the ticket", learner("single-use", '''
    return claims.get("jti") not in REDEEMED
'''), frozenset({"twice", "replay-new-id"})),
    Mistake("single-use", "keys the store on the request", learner("single-use", '''
    key = claims.get("req")
    if not isinstance(key, str) or key in REDEEMED:
        return False
    REDEEMED[key] = float(claims["exp"])
    return True
'''), frozenset({"second-call"})),
    Mistake("single-use", "remembers the ticket only until now", learner("single-use", '''
    now = time.time()
    for jti in [j for j, exp in REDEEMED.items() if exp <= now]:
        del REDEEMED[jti]
    jti = claims.get("jti")
    if not isinstance(jti, str) or jti in REDEEMED:
        return False
    REDEEMED[jti] = now
    return True
'''), frozenset({"twice", "replay-new-id"})),
    Mistake("single-use", "spends the ticket before the other checks", BUILD.step("single-use").solution,
            frozenset({"after-refusal", "answer-later"}), given=(
                ('''    # Single use last: a refused or unanswered retry must never spend the ticket.
    if not check_not_redeemed(claims):
        raise Refused("single-use")
''', ""),
                ('''    if not check_principal(claims):''', '''    if not check_not_redeemed(claims):
        raise Refused("single-use")
    if not check_principal(claims):'''))),
)


def wrong_server(mistake: Mistake) -> str:
    """The solution with one step written wrong."""
    block = f"# -- step: {mistake.step} --\n{mistake.code}# -- end of step --\n"
    source = splice(BUILD.solution, block, {mistake.step})
    for old, new in mistake.given:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    assert source != BUILD.solution
    return source


def lesson_text() -> str:
    sections = sorted((LESSON / "sections").glob("*.md"))
    return " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in sections)


def test_every_step_has_mistakes_the_checker_catches() -> None:
    caught = {m.step for m in MISTAKES if m.flags}
    assert caught == {s.id for s in BUILD.steps}


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: f"{m.step}: {m.name}")
def test_the_checker_flags_the_mistake_or_the_lesson_says_why_it_cannot(mistake: Mistake, tmp_path: Path) -> None:
    # The late move waits for real; only a mistake in the expiry step needs it.
    skip_late = mistake.step != "expiry"
    report = check(wrong_server(mistake), tmp_path, skip_late=skip_late)
    # the lesson's server serves one tool: a move that needs a second one is not run, never flagged
    flagged = {slug for slug, verdict in verdicts(report).items() if verdict != "pass"
               and not (verdict == "not-run" and slug not in SHOWABLE)}
    if skip_late:
        # the moves that wait (past the expiry, or near it) are skipped by --skip-late: not run, not flagged
        flagged -= {m.slug for m in CATALOGUE if m.timing in ("past-expiry", "near-expiry")}
    if mistake.flags:
        assert mistake.flags <= flagged, f"not flagged: {sorted(mistake.flags - flagged)}"
    else:
        assert flagged == set(), "a mistake no move can see should pass every move"
        assert mistake.lesson_says in lesson_text()
