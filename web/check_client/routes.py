"""/check-client: the client checker in the browser, its views. A form starts a grading run; the run's page hands
out its own MCP address (`/check-client/<run id>/mcp`, the id 192 random bits), the learner points their client at
it, and the page grades every request the client sends by the rules of `mrtr check-client`, live (htmx polls the
rules' fragment every two seconds; without JavaScript the page refreshes itself and carries a refresh link).

The MCP address is a machine's endpoint: no same-site check, no form guard (web/site/inputs.py leaves it alone and it
checks its own body, as /mcp does), but every cap of a public input: the body's size, the run's requests and
bytes, its lifetime, and how many runs a visitor and everyone may start (mrtr_stores.client_runs). Nothing about
a run is reachable without its id: no page lists runs, and an unknown or ended id is a 404 like any other.
Store and grading glue: web/check_client/runs.py.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from flask import Blueprint, Flask, Response, abort, redirect, request, url_for
from flask.blueprints import BlueprintSetupState
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Response as BaseResponse

from mrtr import JSONObject
from mrtr.wire import holds_lone_surrogate, nesting_bound
from mrtr_grading import CHOICES, CHOICES_VARIABLE, ClientReport
from mrtr_stores.client_runs import LIFETIME, MAX_CALLS, MAX_OUTPUT, CallRefused, ClientRun, ClientRunRefused, RunGone
from web.build.routes import Build, Grading, grade_client, load_build
from web.check.hosts import CheckInputError
from web.check.limits import run_limit, same_site, visitor
from web.check_client import runs as check_client_runs
from web.site import htmx
from web.site.content import get_content

bp = Blueprint("check_client", __name__)

PAGE = "check_client/show.html"
RUN_PAGE = "check_client/run.html"
RULES_FRAGMENT = "check_client/_rules.html"
ENDED_FRAGMENT = "check_client/_ended.html"
#: The lesson whose steps the run's page shows.
LESSON = "build-the-client"
#: The largest request body the MCP address reads.
MAX_BODY = 256 * 1024
#: The deepest JSON the MCP address reads (the grader's own messages nest a handful of levels).
MAX_DEPTH = 64
#: How often the page's rules are polled (seconds), with JavaScript or without.
POLL_SECONDS = 2


@bp.record_once
def _setup(state: BlueprintSetupState) -> None:
    assert isinstance(state.app, Flask)  # the setup state is typed for any Flask-like app; this one is Flask
    check_client_runs.open_runs(state.app)


# -- starting a run -----------------------------------------------------------------------------------


def _start_page(error: str = "", status: int = 200) -> Response:
    limit, window = run_limit()
    return htmx.render(PAGE, PAGE, status=status, error=error, lifetime=int(LIFETIME // 60), max_calls=MAX_CALLS,
                       limit=limit, window=int(window // 60), capped=limit < 1000)


@bp.get("/check-client")
def start_page() -> Response:
    """Say what the page does and offer one button: start a grading run."""
    return _start_page()


@bp.post("/check-client")
def start_run() -> BaseResponse | Response:
    """Start a run for this visitor (within their rate and the site's cap) and go to its page."""
    try:
        same_site()
        run = check_client_runs.runs().start(visitor(), *run_limit())
    except CheckInputError as exc:
        return _start_page(str(exc), 400)
    except ClientRunRefused as exc:
        return _start_page(str(exc), 503 if exc.busy else 429)
    return redirect(url_for("check_client.run_page", run_id=run.id), 303)


# -- the run's page -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LessonStepView:
    n: int
    title: str
    done: bool
    detail: str


@dataclass(frozen=True)
class ClientRunView:
    """What the run's page and its rules fragment render."""

    run: ClientRun
    report: ClientReport
    honest: JSONObject
    requests: int
    left: str
    mcp_url: str
    steps: list[LessonStepView]
    steps_done: int
    output_read: bool


@functools.cache
def _build(directory: Path) -> Build | None:
    return load_build(directory)


def _steps(report: ClientReport, honest: JSONObject) -> list[LessonStepView]:
    """The lesson's steps as this run shows them (web.build.routes.grade_client, the honest row included)."""
    lesson = next((lesson for lesson in get_content().lessons if lesson.slug == LESSON), None)
    build = _build(lesson.directory) if lesson is not None else None
    if build is None:
        return []
    grading: Grading = grade_client(build, json.dumps({**report.to_json(), "honest": honest}))
    return [LessonStepView(g.step.n, g.step.title, g.done, g.detail) for g in grading.steps]


def _left(seconds: float) -> str:
    whole = max(int(seconds), 0)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def _view(run: ClientRun) -> ClientRunView:
    report, honest, recording = check_client_runs.report_of(run)
    steps = _steps(report, honest)
    return ClientRunView(run, report, honest, len(recording.calls), _left(run.left(check_client_runs.runs().clock())),
                   url_for("check_client.mcp", run_id=run.id, _external=True), steps,
                   sum(s.done for s in steps), run.output != "" or run.exit_code is not None)


def _context(run: ClientRun) -> dict[str, object]:
    """What the run's page and its fragment render."""
    return {"view": _view(run), "poll": POLL_SECONDS, "choices": json.dumps(CHOICES),
            "choices_variable": CHOICES_VARIABLE, "max_output": MAX_OUTPUT // 1024, "max_calls": MAX_CALLS,
            "error": ""}


def _run_or_404(run_id: str) -> ClientRun:
    run = check_client_runs.runs().get(run_id)
    if run is None:
        abort(404)
    return run


@bp.get("/check-client/<run_id>")
def run_page(run_id: str) -> Response:
    """The run: the address to give the client, what it has sent so far, every rule's verdict and the steps."""
    run = check_client_runs.runs().get(run_id)
    if run is None and htmx.wants_fragment():
        # htmx's own "stop polling" status: a page left open past its run's end stops asking, and says why
        # (the same words for an id that never existed: nothing tells the two apart)
        return htmx.render(ENDED_FRAGMENT, ENDED_FRAGMENT, status=286, start_url=url_for("check_client.start_page"))
    if run is None:
        abort(404)
    return htmx.render(RUN_PAGE, RULES_FRAGMENT, _context(run))


@bp.post("/check-client/<run_id>/output")
def note_output(run_id: str) -> BaseResponse | Response:
    """Keep what the learner says of their client: its output and exit status, and whether its user answers as
    MRTR_CHECK_CLIENT_CHOICES says; the rules that read them are graded from then on."""
    run = _run_or_404(run_id)
    output = request.form.get("output", "").replace("\r\n", "\n")
    exit_text = request.form.get("exit_code", "").strip()
    try:
        same_site()
        if len(output) > MAX_OUTPUT:
            raise CheckInputError(f"Paste at most {MAX_OUTPUT // 1024} KB of output: its last lines are enough.")
        if exit_text and not (exit_text.isascii() and exit_text.lstrip("-").isdigit() and len(exit_text) <= 4):
            raise CheckInputError("The exit status is a whole number, such as 0 or 1.")
        check_client_runs.runs().note(run.id, output, int(exit_text) if exit_text else (0 if output else None),
                                      request.form.get("choices") == "1")
    except CheckInputError as exc:
        return htmx.render(RUN_PAGE, RUN_PAGE, _context(run), status=400, error=str(exc))
    except RunGone:
        abort(404)
    return redirect(url_for("check_client.run_page", run_id=run.id) + "#client-rules", 303)


# -- the run's MCP address ----------------------------------------------------------------------------


def _error(status: int, code: int, message: str, request_id: object = None) -> Response:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return Response(json.dumps(body), status, mimetype="application/json")


@bp.route("/check-client/<run_id>/mcp", methods=["GET", "POST", "DELETE", "PUT", "PATCH"])
def mcp(run_id: str) -> Response:
    """The run's grading server: 2026-07-28 stateless Streamable HTTP, answered as `mrtr check-client` answers."""
    if check_client_runs.runs().get(run_id) is None:
        return _error(404, -32001, "no such grading run: it never existed or it ended; start a new one at "
                      + url_for("check_client.start_page", _external=True))
    if request.method != "POST":
        response = Response("this grading server is stateless: POST one JSON-RPC message per request\n", 405,
                            mimetype="text/plain")
        response.headers["Allow"] = "POST"
        return response
    if "chunked" in request.headers.get("Transfer-Encoding", "").lower():
        return _error(411, -32600, "send the request with its Content-Length, not in chunks")
    if (request.content_length or 0) > MAX_BODY:
        return _error(413, -32600, f"the body is larger than {MAX_BODY // 1024} KB, the most this grader reads")
    try:
        raw = request.get_data(cache=False)
    except RequestEntityTooLarge:
        return _error(413, -32600, f"the body is larger than {MAX_BODY // 1024} KB, the most this grader reads")
    try:
        if nesting_bound(raw) > MAX_DEPTH:
            return _error(400, -32700, f"the body nests deeper than {MAX_DEPTH} levels")
        message = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return _error(400, -32700, "the body is not UTF-8 JSON")
    if holds_lone_surrogate(message):
        return _error(400, -32700, "the body holds a lone UTF-16 surrogate, which is not text")
    if not isinstance(message, dict) or "id" not in message:
        return Response("", 202)  # a notification or a response: nothing to answer, nothing graded
    try:
        reply = check_client_runs.answer(run_id, message, dict(request.headers.items()), len(raw))
    except RunGone:
        return _error(404, -32001, "no such grading run: it ended while this request came", message.get("id"))
    except CallRefused as exc:
        return _error(200, -32603, str(exc), message.get("id"))
    return Response(json.dumps(reply, ensure_ascii=False), 200, mimetype="application/json")

