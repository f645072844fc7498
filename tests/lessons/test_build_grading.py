"""The build lesson grades honestly: the wrong answers learners really write are graded "not done", each with
the reason that fits it, in the Python track (played in-process, as the in-page run plays it: web/build/in_browser.py)
and the TypeScript one (the real node server, over stdio, as a pasted report).

A step is done only when its own moves hold AND the moves that must complete still do; a reason names only
moves that ran (a move not run is said to be not run, never a FAIL), and says when an earlier step broke the
honest flow. The wrong answers: refuse everything, accept everything, compare with ==, check the wrong field,
and check after the work (spend the ticket before the checks that may still refuse it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from moves.catalog import DEFAULT_PATH
from tests.lessons.buildkit import BUILD, CATALOGUE
from web.build.in_browser import run
from web.build.lint import EQUALITY, findings
from web.build.routes import Graded, Grading, grade, splice
from web.site.content import DEFAULT_ROOT

TS_TRACK = DEFAULT_ROOT / "build-the-checks" / "typescript"


@dataclass(frozen=True)
class Wrong:
    step: str
    name: str
    python: str  # the step's block body (after the solution's def line)
    typescript: str  # the same mistake in the TypeScript track (the whole function), "" when the track lacks it
    says: str  # words of the step's reason
    #: Edits outside the block, (old, new), per track: a mistake in where the step's check is called.
    given_py: tuple[tuple[str, str], ...] = ()
    given_ts: tuple[tuple[str, str], ...] = ()


SPEND_FIRST_PY = (('''    # Single use last: a refused or unanswered retry must never spend the ticket.
    if not check_not_redeemed(claims):
        raise Refused("single-use")
''', ""), ('''    if not check_principal(claims):''', '''    if not check_not_redeemed(claims):
        raise Refused("single-use")
    if not check_principal(claims):'''))
_SPEND_TS = "  if (!checkNotRedeemed(claims)) throw new Refused('single-use');\n"
_PRINCIPAL_TS = "  if (!checkPrincipal(claims)) throw new Refused('principal');"
_LAST_TS = "  // Single use last: a refused or unanswered retry must never spend the ticket.\n"
SPEND_FIRST_TS = ((_LAST_TS + _SPEND_TS, ""), (_PRINCIPAL_TS, _SPEND_TS + _PRINCIPAL_TS))

WRONG = (
    Wrong("signature", "refuses everything", "\n    return False\n",
          "function checkSignature(ticket: string): boolean {\n  return false;\n}\n",
          "refuses honest callers too"),
    Wrong("principal", "refuses everything", "\n    return False\n",
          "function checkPrincipal(claims: Claims): boolean {\n  return false;\n}\n",
          "refuses honest callers too"),
    Wrong("principal", "accepts everything", "\n    return True\n",
          "function checkPrincipal(claims: Claims): boolean {\n  return true;\n}\n",
          "stolen: fail"),
    Wrong("request", "accepts everything", "\n    return True\n",
          "function checkSameRequest(claims: Claims, tool: string, args: unknown): boolean {\n  return true;\n}\n",
          "other-request: fail"),
    Wrong("signature", "compares with == instead of in constant time", '''
    parts = ticket.split(".")
    if len(parts) != 3:
        return False
    return parts[2] == SIGNER.get_signature(parts[1]).decode()
''', '''function checkSignature(ticket: string): boolean {
  const [prefix, payload, sent] = ticket.split('.');
  if (prefix !== 't1' || payload === undefined || sent === undefined) return false;
  return sent === signature(payload);
}
''', "compares the signature with =="),
    Wrong("single-use", "keys the store on the wrong field (the request, not the ticket)", '''
    key = claims.get("req")
    if not isinstance(key, str) or key in REDEEMED:
        return False
    REDEEMED[key] = float(claims["exp"])
    return True
''', '''function checkNotRedeemed(claims: Claims): boolean {
  if (typeof claims.req !== 'string' || REDEEMED.has(claims.req)) return false;
  REDEEMED.set(claims.req, claims.exp);
  return true;
}
''', "refuses honest callers too"),
    Wrong("single-use", "checks after the work: spends the ticket before the checks that may refuse it", "",
          "", "did not complete", SPEND_FIRST_PY, SPEND_FIRST_TS),
)


def python_server(wrong: Wrong, done: set[str]) -> str:
    """The starter with the steps `done` written right and `wrong.step` written wrong."""
    source = BUILD.partial(done - {wrong.step})
    step = BUILD.step(wrong.step)
    assert step is not None
    code = step.solution
    if wrong.python:
        code = code.splitlines()[0] + wrong.python
    source = splice(source, f"# -- step: {wrong.step} --\n{code}# -- end of step --\n", {wrong.step})
    for old, new in wrong.given_py:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def in_page(source: str) -> Grading:
    out = run(source, str(DEFAULT_PATH), lambda kind, data: None)
    assert not out["error"], out["error"]
    return grade(BUILD, json.dumps(out["report"]), CATALOGUE)


def step_of(grading: Grading, step_id: str) -> Graded:
    return next(g for g in grading.steps if g.step.id == step_id)


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.step}: {w.name}")
def test_each_wrong_answer_alone_is_not_done_with_its_reason(wrong: Wrong) -> None:
    # spending first shows only once a check that refuses comes after the spending: written with the others
    graded = step_of(in_page(python_server(wrong, {s.id for s in BUILD.steps} if wrong.given_py else {wrong.step})),
                     wrong.step)
    assert not graded.done
    assert wrong.says in graded.detail, graded.detail


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.step}: {w.name}")
def test_each_wrong_answer_among_right_steps_is_not_done_and_the_right_steps_say_why(wrong: Wrong) -> None:
    every = {s.id for s in BUILD.steps}
    grading = in_page(python_server(wrong, every))
    graded = step_of(grading, wrong.step)
    assert not graded.done and wrong.says in graded.detail, graded.detail
    if graded.broken:  # the honest flow broke: no step counts, and each right step names the one that broke it
        for other in grading.steps:
            assert not other.done
            if other.step.id != wrong.step:
                assert f"step {graded.step.n} ({graded.step.function}), broke the honest flow" in other.detail
    else:
        assert {g.step.id for g in grading.steps if g.done} == every - {wrong.step}


def test_a_right_step_after_a_step_that_refuses_everyone_is_told_which_step_broke_it_never_blamed() -> None:
    refuse_all = WRONG[0]
    grading = in_page(python_server(refuse_all, {"signature", "principal"}))
    principal = step_of(grading, "principal")
    assert not principal.done
    assert "an earlier step, step 1 (check_signature), broke the honest flow" in principal.detail
    stolen = next(m for m in principal.moves if m.slug == "stolen")
    if stolen.verdict == "not-run":
        assert "stolen was not run" in principal.detail and "FAIL" not in principal.detail
    assert "honest did not complete" in principal.detail and "sent deploy" in principal.detail


def test_the_solution_and_each_right_step_are_done() -> None:
    grading = in_page(BUILD.solution)
    assert all(g.done for g in grading.steps), [g.detail for g in grading.steps if not g.done]
    assert findings(BUILD.solution) == {}
    first = BUILD.steps[0]
    assert {g.step.id for g in in_page(BUILD.partial({first.id})).steps if g.done} == {first.id}


def test_the_equality_finding_reads_both_tracks_and_spares_their_solutions() -> None:
    ts_solution = (TS_TRACK / "solution" / "server.ts").read_text(encoding="utf-8")
    assert findings(ts_solution) == {}
    eq = next(w for w in WRONG if "==" in w.name)
    wrong_ts = splice(ts_solution, f"// -- step: signature --\n{eq.typescript}// -- end of step --\n", {"signature"})
    assert findings(wrong_ts) == {"checkSignature": EQUALITY}
    assert findings(python_server(eq, {"signature"})) == {"check_signature": EQUALITY}


# -- the TypeScript track: the real node server, graded from its report as a pasted one is ------------------


def ts_server(wrong: Wrong) -> str:
    solution = (TS_TRACK / "solution" / "server.ts").read_text(encoding="utf-8")
    source = solution
    if wrong.typescript:
        source = splice(solution, f"// -- step: {wrong.step} --\n{wrong.typescript}// -- end of step --\n",
                        {wrong.step})
    for old, new in wrong.given_ts:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    assert source != solution
    return source


@pytest.mark.external  # the TypeScript compiler and node, each a process
@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.step}: {w.name}")
def test_each_wrong_answer_in_typescript_is_not_done_with_its_reason(wrong: Wrong, tmp_path: Path) -> None:
    from tests.lessons.test_build_typescript import run as run_ts

    source = ts_server(wrong)
    report = run_ts(source, tmp_path)
    grading = grade(BUILD, json.dumps(report.to_json()), CATALOGUE, source=source)
    graded = step_of(grading, wrong.step)
    assert not graded.done
    # A pasted report keeps no server log: a broken honest flow is said without naming the step.
    says = "the honest flow no longer completes" if "refuses honest callers" in wrong.says else wrong.says
    assert says in graded.detail, graded.detail


def test_a_pasted_source_beside_the_report_is_read_for_what_no_move_sees(client) -> None:  # noqa: ANN001
    """The paste form takes the learner's source too: a signature compared with == marks step 1 not done."""
    from tests.lessons.buildkit import report_json

    eq = next(w for w in WRONG if "==" in w.name)
    page = client.get("/lessons/build-the-checks")
    assert b'name="code"' in page.data
    graded = client.post("/lessons/build-the-checks/build/report",
                         data={"report": report_json(), "code": python_server(eq, {s.id for s in BUILD.steps})})
    text = graded.get_data(as_text=True)
    assert graded.status_code == 200 and "compares the signature with ==" in text, text[-1500:]
    assert f"{len(BUILD.steps) - 1} of {len(BUILD.steps)} steps done" in text
