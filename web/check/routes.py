"""/check: the server checker in the browser, its views. A form (URL, two tokens, tool, arguments) starts a
background run of `moves.check.run_check` (web.check.runner); the run's page shows live progress (htmx polls it
every second; without JavaScript the page refreshes itself) and then the report, drawn like the playground's check
matrix, each failing row linking to the lesson section on that defence, and each move's messages drawn as the
lesson's sequence diagram (`diagram_steps` -> `web.site.sequence.sequence_model`).

Safety lives beside it, one job a module: which servers may be checked (web.check.hosts), what a visitor may send
and how often they may start a run (web.check.limits), and the run itself, whose tokens are never logged,
rendered or kept (web.check.runner). Token inputs are password fields that are never refilled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

from flask import Blueprint, Flask, Response, abort, current_app, redirect, request, url_for
from flask.blueprints import BlueprintSetupState
from werkzeug.wrappers import Response as BaseResponse

from moves.check import CheckOptions
from moves.playing import duration
from moves.report import secret_problem
from mrtr import JSON, JSONObject
from mrtr.client import Line
from mrtr_stores.check_runs import ProbeRecord, Run, RunRefused
from web.check import runner as check_runner
from web.check.explore import ExplorationView, exploration_view
from web.check.hosts import CheckInputError, is_public, resolve_host, rules, vet_url
from web.check.limits import form_field, json_object, late_after, run_limit, same_site, visitor
from web.site import htmx
from web.site.content import get_content
from web.site.sequence import SequenceModel, sequence_model
from web.site.services import get_services, get_settings

bp = Blueprint("check", __name__)

PAGE = "check/show.html"
RUN_PAGE = "check/run.html"
RUN_FRAGMENT = "check/_run.html"
FORM_FRAGMENT = "check/_form.html"
#: The lesson section that explains each defence a failing row is about.
SECTIONS: dict[str, str] = {
    "signature": "checks-and-clock",
    "principal": "checks-and-clock",
    "expiry": "checks-and-clock",
    "request": "checks-and-clock",
    "answer": "spec-rules",
    "single-use": "spec-rules",
    "capability": "spec-rules",
    "missing-answer": "spec-rules",
    "result-type": "round-trip",
    "same-error": "checks-and-clock",
}


@bp.record_once
def _setup(state: BlueprintSetupState) -> None:
    assert isinstance(state.app, Flask)  # the setup state is typed for any Flask-like app; this one is Flask
    check_runner.open_runs(state.app)


# -- the form ----------------------------------------------------------------------------------------


@dataclass
class Form:
    url: str = ""
    tool: str = ""
    args: str = ""
    skip_late: bool = False
    allow_replay: bool = False
    late_after: str = ""
    error: str = ""


def _page(form: Form, status: int = 200) -> Response:
    public = is_public()
    own_mcp = request.host_url.rstrip("/") + "/mcp"
    return htmx.render(PAGE, FORM_FRAGMENT, status=status, form=form, enabled=rules().any_allowed,
                       public=public, own_mcp=own_mcp, own_tokens=get_services().public_mcp_tokens(),
                       run_limit=None if not public else (get_settings().check_runs, get_settings().check_window),
                       own_ttl=get_settings().ticket_ttl, own_estimate=duration(get_settings().ticket_ttl + 15))


@bp.get("/check")
def check_page() -> Response:
    return _page(Form())


def _form_as_sent() -> Form:
    return Form(url=form_field("url")[:2048], tool=form_field("tool").strip(), args=form_field("args"),
                skip_late=request.form.get("skip_late") == "1",
                allow_replay=request.form.get("allow_replay") == "1", late_after=form_field("late_after").strip())


def _tokens() -> tuple[str, str]:
    """The two tokens (owner, other): both given, and not the same."""
    owner, other = form_field("owner_token").strip(), form_field("other_token").strip()
    if not owner or not other:
        raise CheckInputError("Give both tokens: the ticket's owner and a second user (for the stolen move).")
    if owner == other:
        raise CheckInputError("The two tokens must belong to two different users.")
    for token in (owner, other):
        problem = secret_problem(token)
        if problem is not None:
            raise CheckInputError(problem[0].upper() + problem[1:] + ".")
    return owner, other


@bp.post("/check")
def start_check() -> BaseResponse | Response:
    form = Form()
    try:
        same_site()
        form = _form_as_sent()  # shown again, filled in, when it cannot run
        tokens = _tokens()
        options = CheckOptions(tool=form.tool or None, arguments=json_object(form.args, "Arguments"),
                               allow_replay=form.allow_replay, skip_late=form.skip_late)
        wait = late_after(form.late_after, get_settings().check_max_wait)
        url, address = vet_url(form.url, rules(), current_app.config.get("MRTR_CHECK_RESOLVER") or resolve_host)
        run = check_runner.runs().start(visitor(), url, *run_limit())
    except (CheckInputError, RunRefused) as exc:
        form.error = str(exc)
        return _page(form, 400)
    # the moves this app teaches (MRTR_MOVES_FILE included)
    check_runner.start(run, check_runner.Order(url, address, options, get_content().moves, wait), tokens)
    target = url_for("check.run_page", run_id=run.id)
    if htmx.wants_fragment():
        return htmx.render(RUN_PAGE, RUN_FRAGMENT, push_url=target, run=run, view=_view(run))
    return redirect(target, 303)


# -- the exchange as a sequence diagram -----------------------------------------------------------------


@dataclass(frozen=True)
class DiagramStep:
    """One kept step as `web.site.sequence.sequence_model` reads it; the remote server stands where replica A is."""

    n: int
    replica: str
    lines: tuple[Line, ...]
    checks: tuple[JSONObject, ...] | None  # the check trace as the run file kept it
    role: str
    at: float
    error: str


SERVER_LANE = "A"
ROLES = {"owner": "the ticket's owner", "other": "the second user"}


def diagram_steps(exchange: JSON) -> list[DiagramStep]:
    """A move's kept exchange (`moves.check.exchange_of`, read back from the run file) as diagram steps: the
    request, then the answer when one came back. Anything malformed in the file is left out, never raised."""
    steps: list[DiagramStep] = []
    for item in exchange if isinstance(exchange, list) else []:
        if not isinstance(item, dict) or not isinstance(sent := item.get("sent"), dict):
            continue
        lines = [Line("-->", sent, f"sent as {ROLES.get(str(item.get('role')), 'the client')}")]
        if isinstance(response := item.get("response"), dict):
            lines.append(Line("<--", response))
        trace = item.get("trace")
        checks = tuple(c for c in trace if isinstance(c, dict)) if isinstance(trace, list) else None
        at = item.get("at")
        steps.append(DiagramStep(len(steps) + 1, SERVER_LANE, tuple(lines), checks,
                                 str(item.get("role", "")), float(at) if isinstance(at, int | float) else 0.0,
                                 str(item.get("error") or "")))
    return steps


#: A probe's own place in the lesson, inside its section, when it has one.
PROBE_ANCHORS: dict[str, str] = {"same-error": "checks-and-clock--what-the-client-is-told"}


def _lesson_url(section: str | None, anchor: str | None = None) -> str | None:
    if not section:
        return None
    lesson = get_content().lessons[0]
    if lesson.section(section) is None:
        return None
    return url_for("lessons.lesson_page", slug=lesson.slug) + "#" + (anchor or section)


def _move_url(move: str) -> str | None:
    """Where the lesson plays this very move: its row on the checks' timeline (one per catalogue move)."""
    if not any(m.slug == move for m in get_content().moves):
        return None
    return _lesson_url("checks-and-clock", f"timeline-checks-and-clock-{move}")


def _probe_verdict(probe: ProbeRecord) -> str:
    """A probe's verdict; `same-error` with no refusal at all compared nothing, so it shows nothing either way."""
    if probe["probe"] == "same-error" and probe["ok"] and str(probe["detail"]).startswith("no ticket was refused"):
        return "not-run"
    return "pass" if probe["ok"] else "fail"


# -- the run page ------------------------------------------------------------------------------------


@dataclass
class RowView:
    name: str
    title: str
    expected: str
    observed: str
    verdict: str
    detail: str
    lesson_url: str | None
    steps: list[DiagramStep] = field(default_factory=list)
    diagram: SequenceModel | None = None  # `sequence_model` of `steps`, the last step current
    move_url: str | None = None  # this move's own row on the lesson's timeline of the checks


def _verdict_outcome(verdict: str) -> str:
    return {"pass": "pass", "fail": "fail"}.get(verdict, "skipped")


class RunView(TypedDict):
    """What the run's page and fragment (check/_run.html) render beside the run itself."""

    moves: list[RowView]
    probes: list[RowView]
    status: str
    state: str
    error: str
    overall: str  # pass or fail once the run is done with rows to judge, else ""
    played: int  # moves played so far, of `total`: what the run's progress bar shows
    total: int
    waiting: bool
    wait_left: str
    plan: str
    outcome: Callable[[str], str]  # a row's verdict as the check matrix's outcome class
    roles: dict[str, str]
    exploration: ExplorationView | None  # drawn once the run kept one (check/_exploration.html)


def _view(run: Run) -> RunView:
    move_views = []
    for r in run.rows:
        steps = diagram_steps(r.get("exchange")) if run.state != "running" else []  # drawn once the run is over
        verdict = "not-run" if r["verdict"] == "skip" else r["verdict"]  # a run saved before the rename
        move_views.append(RowView(r["move"], r["title"], r["expected"], r["observed"], verdict, r["detail"],
                                  _lesson_url(SECTIONS.get(r["stops_at"])) if verdict in ("fail", "warn")
                                  else None, steps, sequence_model(steps, current=steps[-1].n) if steps else None,
                                  _move_url(r["move"]) if verdict in ("fail", "warn") else None))
    probe_views = [RowView(p["probe"], p["title"], "", "", _probe_verdict(p), p["detail"],
                           None if p["ok"] else _lesson_url(SECTIONS.get(p["probe"]), PROBE_ANCHORS.get(p["probe"])))
                   for p in run.probes]
    if run.state == "running":
        status = f"{run.phase}…" + (f" ({len(run.rows)} of {run.total} moves played)" if run.total else "")
    elif run.state == "error":
        # A run that played moves and then met a time-out stopped; one that played none could not run at all.
        status = "The check stopped: the server did not answer in time." if run.rows else "The check could not run."
    else:
        status = run.summary or "Done."
    rows = move_views + probe_views
    overall = ("fail" if any(v.verdict == "fail" for v in rows) else "pass") if run.state == "done" and rows else ""
    return {"moves": move_views, "probes": probe_views, "status": status, "state": run.state, "error": run.error,
            "overall": overall,
            "played": len(run.rows), "total": run.total,
            "waiting": run.waiting and run.state == "running", "wait_left": _left(run.wait_total - run.waited),
            "plan": run.plan,
            "outcome": _verdict_outcome, "roles": ROLES, "exploration": exploration_view(run.exploration)}


def _left(seconds: float) -> str:
    """A countdown's seconds as the page says them: "1 min 47 s", "9 s"."""
    whole = max(int(seconds + 0.999), 0)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


@bp.get("/check/runs/<run_id>")
def run_page(run_id: str) -> Response:
    run = check_runner.runs().get(run_id)
    if run is None:
        abort(404)
    return htmx.render(RUN_PAGE, RUN_FRAGMENT, run=run, view=_view(run))
