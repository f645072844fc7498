"""MRTR Lab as an LTI 1.3 tool: course platforms launch the quiz and the build lesson, and get scores back. This
module is the blueprint, every `/lti/` view; the parts it wires together each have a module of their own:

* web/lti/tool.py, the tool (the registered platforms as pylti1p3's configuration, its key pair and store);
  web/lti/launch.py, verifying a login and a launch (pylti1p3's, adapted) and its refusals in words;
  web/lti/keys.py, the platforms' key sets; web/lti/activities.py, what a link can open; web/lti/scores.py,
  scores to the platform (AGS). Everything protocol-shaped is pylti1p3's.
* `/lti/login` (OIDC login initiation), `/lti/launch` (the redirect/launch URL), `/lti/jwks` (the tool's
  public key), `/lti/config.json` (a Canvas-style configuration). Without `MRTR_LTI_PLATFORMS` every
  `/lti/*` address answers a 404 page saying so, and no key is generated.
* A verified launch is kept under a random reference (mrtr_stores.lti) and the browser is sent to a
  GET page for it, so a reload never re-posts the id_token (whose nonce is spent).
* Deep linking: the instructor picks a lesson's quiz, one question or the build lesson; the platform
  gets one content item with a line item whose scoreMaximum is the number of questions or steps.
* Scores: the quiz's first-try score once every question of the link is answered, the build lesson's
  steps after each checker report (the in-page run's, or a pasted one); written to the LTI store before posting,
  retried on later LTI requests until the platform accepts them. A launch without the AGS score scope sends
  nothing. Only the browser session the launch was verified in may post a score (`_resource(scoring=True)`).

LTI pages may be framed by the registered platforms' origins only; the deep-linking return page may post to the
platform only.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from urllib.parse import urlsplit

from flask import Blueprint, Response, jsonify, redirect, render_template, request, url_for
from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.lineitem import LineItem
from werkzeug.wrappers import Response as BaseResponse

from mrtr import JSONObject, as_object
from web.build import routes as build
from web.embed import routes as embed
from web.lti.activities import ITEM_PARAM, Activity, activities, activity
from web.lti.launch import AGS_CLAIM, CLAIM, DL_CLAIM, Refused, login_redirect, verify
from web.lti.scores import AGS_SCOPES, RETRIES_PER_REQUEST, flush_scores, record_score, score_status
from web.lti.tool import LtiTool, get_tool
from web.quiz import routes as quiz
from web.site import htmx, inputs
from web.site.content import get_content
from web.site.security import allow_form_posts_to, allow_framing_by

log = logging.getLogger("mrtr.lti")

bp = Blueprint("lti", __name__, url_prefix="/lti")

#: The comment a build score carries to the platform: the checker runs in the learner's browser, so the steps it
#: reports done are the learner's own account, not something this server observed.
SELF_REPORTED = ("Build steps are self-reported: the checker runs in the learner's own browser and this score is "
                 "what its report says.")
#: Where a build report came from (the form's `source`): the in-page run posts "run", the paste form "paste". The
#: server cannot tell them apart any better than it can check either, so it only names the source in the comment.
REPORT_SOURCES = {"run": "from the in-page run", "paste": "from a pasted checker report"}
#: pylti1p3's browser session cookie (set at login): a launch's pages that post a score must come from it.
SESSION_COOKIE = "lti1p3-session-id"
#: Pages a platform shows inside its iframe: framed by the registered platforms only.
FRAMED = frozenset({"lti.launch", "lti.activity", "lti.answer", "lti.build_report", "lti.pick", "lti.pick_post"})

#: `?launch=`: the reference a verified launch is kept under (mrtr_stores.lti), carried by the pages after it.
_LAUNCH = inputs.Field(max_chars=64)
# The inputs guard (web/site/inputs.py) declares per endpoint what a view reads; an id_token is longer than
# an undeclared field may be, and the quiz and build fields are exactly those of their own pages.
inputs.FIELDS.update({
    "lti.login": {name: inputs.Field(max_chars=4096) for name in (
        "iss", "login_hint", "target_link_uri", "lti_message_hint", "lti_deployment_id", "client_id")},
    "lti.launch": {"id_token": inputs.Field(max_chars=65_536), "state": inputs.Field(max_chars=512)},
    "lti.jwks": {}, "lti.config": {}, "lti.activity": {"launch": _LAUNCH}, "lti.pick": {"launch": _LAUNCH},
    "lti.pick_post": {"launch": _LAUNCH, "item": inputs.Field(max_chars=200)},
    "lti.answer": {"launch": _LAUNCH, **inputs.FIELDS["quiz.answer"]},
    "lti.build_report": {"launch": _LAUNCH, **inputs.FIELDS["build.report"], "source": inputs.Field(max_chars=16)},
})


def _page(status: int, title: str, message: str) -> Response:
    """The error page; under htmx (the build page's in-page run posting its report) the same words as a fragment,
    with the same status, which static/js/lti-build.js swaps in."""
    return htmx.render("lti/error.html", "lti/_error.html", status=status, code=status, title=title,
                       message=message)


def _tool_or_page() -> LtiTool | Response:
    tool = get_tool()
    if tool is None:
        return _page(404, "Course platforms are not set up here",
                     "This MRTR Lab has no LTI 1.3 platform registered (MRTR_LTI_PLATFORMS is unset), so it "
                     "cannot be launched from a course site. Its lessons and the embeddable quiz work as usual.")
    return tool


@bp.before_request
def _before() -> Response | None:
    tool = _tool_or_page()
    if isinstance(tool, Response):
        return tool
    if request.endpoint in FRAMED:
        allow_framing_by(tool.origins())
    if request.endpoint not in ("lti.jwks", "lti.config"):
        flush_scores(tool, RETRIES_PER_REQUEST)
    return None


def _tool() -> LtiTool:
    tool = get_tool()
    assert tool is not None  # _before answered the 404 otherwise
    return tool


# -- OIDC login, launch, keys, configuration ---------------------------------------------------------


@bp.route("/login", methods=["GET", "POST"])
def login() -> Response | BaseResponse:
    """OIDC login initiation: remember a state (cookie) and a nonce, and send the browser to the platform."""
    try:
        return login_redirect(_tool(), url_for("lti.launch", _external=True))
    except Refused as refused:
        return _page(refused.status, refused.title, refused.message)


@bp.post("/launch")
def launch() -> Response | BaseResponse:
    """Verify the platform's id_token (web/lti/launch.py), keep what the pages need, and send the browser there."""
    tool = _tool()
    try:
        verified = verify(tool)
    except Refused as refused:
        return _page(refused.status, refused.title, refused.message)
    body = verified.body
    deployment, user = body.get(CLAIM + "deployment_id"), body.get("sub")
    base: JSONObject = {"iss": verified.issuer, "client_id": verified.client_id,
                        "deployment_id": deployment if isinstance(deployment, str) else None,
                        "user": user if isinstance(user, str) else None, "browser": _browser()}
    if verified.deep_link:
        settings = body.get(DL_CLAIM)
        if not isinstance(settings, dict) or not isinstance(settings.get("deep_link_return_url"), str):
            return _page(400, "This deep link could not start", "The course site sent no deep-linking return URL.")
        ref = tool.db.save_launch({**base, "kind": "deep_link", "settings": settings})
        return redirect(url_for("lti.pick", launch=ref), 303)
    custom = body.get(CLAIM + "custom")
    chosen = activity(custom.get(ITEM_PARAM) if isinstance(custom, dict) else None)
    if chosen is None:
        return _page(404, "This link opens nothing here", "The course link names no MRTR Lab activity. An "
                     "instructor can add the activity again through the course site's tool picker.")
    if not isinstance(base["user"], str) or not base["user"]:
        base["user"] = None  # an anonymous launch: the activity works, no score can name a learner
    ags = body.get(AGS_CLAIM)
    ref = tool.db.save_launch({**base, "kind": "resource", "item": chosen.item,
                               "ags": ags if isinstance(ags, dict) else None})
    return redirect(url_for("lti.activity", launch=ref), 303)


@bp.get("/jwks")
def jwks() -> Response:
    """The tool's public key as a JWK Set: what platforms verify its deep links and token requests with."""
    return jsonify(_tool().conf.get_jwks())


@bp.get("/config.json")
def config() -> Response:
    """The tool's addresses and needs as one JSON document (Canvas reads it as a developer key's JSON)."""
    launch_url = url_for("lti.launch", _external=True)
    return jsonify({
        "title": "MRTR Lab",
        "description": "Multi Round-Trip Requests in MCP: lesson quizzes and the build-the-checks lab, graded.",
        "oidc_initiation_url": url_for("lti.login", _external=True),
        "target_link_uri": launch_url,
        "redirect_uris": [launch_url],
        "public_jwk_url": url_for("lti.jwks", _external=True),
        "scopes": list(AGS_SCOPES),
        "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "anonymous", "settings": {
            "placements": [{"placement": p, "message_type": "LtiDeepLinkingRequest", "target_link_uri": launch_url}
                           for p in ("link_selection", "assignment_selection")]}}],
        "custom_fields": {},
    })


# -- deep linking -----------------------------------------------------------------------------------


def _ref() -> str:
    return request.args.get("launch") or ""


def _launch(ref: str, kind: str) -> JSONObject | Response:
    """The launch kept under `ref` (as `launch` saved it), when it is of `kind`; else the page saying it has ended."""
    data = _tool().db.launch(ref) if ref else None
    if data is None or data.get("kind") != kind:
        return _page(404, "This launch has ended", "Open the activity again from your course.")
    return data


@bp.get("/pick")
def pick() -> Response | BaseResponse | str:
    ref = _ref()
    data = _launch(ref, "deep_link")
    if isinstance(data, Response):
        return data
    return render_template("lti/pick.html", ref=ref, activities=activities())


@bp.post("/pick")
def pick_post() -> Response | str:
    """Sign the chosen activity as a content item (with its line item) and post it back to the platform."""
    ref = _ref()
    data = _launch(ref, "deep_link")
    if isinstance(data, Response):
        return data
    chosen = activity(request.form.get("item"))
    if chosen is None:
        return Response(render_template("lti/pick.html", ref=ref, activities=activities(),
                                        error="Choose one of the activities first."), 400)
    settings, deployment = as_object(data.get("settings")), data.get("deployment_id")
    return_url = settings.get("deep_link_return_url")  # a string: `launch` kept no deep link without one
    parts = urlsplit(return_url if isinstance(return_url, str) else "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return _page(400, "This deep link cannot be returned", "The course site's return URL is not a web address.")
    line_item = LineItem().set_score_maximum(chosen.maximum).set_label(chosen.title).set_resource_id(chosen.item)
    resource = (DeepLinkResource().set_url(url_for("lti.launch", _external=True)).set_title(chosen.title)
                .set_custom_params({ITEM_PARAM: chosen.item}).set_lineitem(line_item))
    registration = _tool().registration(str(data.get("iss")), str(data.get("client_id")))
    # The deployment id and the settings are the platform's, checked at launch (a registered deployment, a return URL).
    deep_link = DeepLink(registration, str(deployment), settings)  # type: ignore[arg-type]  # JSON, not its TypedDict
    token = deep_link.get_response_jwt([resource])
    allow_form_posts_to([f"{parts.scheme}://{parts.netloc}"])
    return render_template("lti/deep_link_return.html", return_url=return_url, token=token, chosen=chosen)


# -- the activity pages and their scores ----------------------------------------------------------------


def _browser() -> str | None:
    """The browser session this request comes from, as a digest (pylti1p3's session cookie, set at login)."""
    session = request.cookies.get(SESSION_COOKIE)
    return hashlib.sha256(session.encode()).hexdigest() if session else None


def _resource(ref: str, *, scoring: bool = False) -> tuple[JSONObject, Activity] | Response:
    """The launch `ref` opened and its activity. `scoring`: the request may post a score, so it must come from the
    browser the launch was verified in (holding `?launch=` is not enough)."""
    data = _launch(ref, "resource")
    if isinstance(data, Response):
        return data
    launched_in, here = data.get("browser"), _browser()
    if scoring and not (isinstance(launched_in, str) and here and hmac.compare_digest(launched_in, here)):
        log.info("LTI: a score post for a launch from another browser session was refused")
        return _page(403, "Open this activity from your course",
                     "This activity was opened in another browser session, so nothing is scored here. Open it again "
                     "from your course.")
    chosen = activity(data.get("item"))
    if chosen is None:
        return _page(404, "This activity is gone", "The activity this link opened is no longer in the course.")
    return data, chosen


def _quiz_context(ref: str, chosen: Activity, token: str | None, feedback: quiz.Feedback | None = None
                  ) -> embed.EmbedView:
    context = embed.embed_context(chosen.lesson, token, only=chosen.question, origin=None, feedback=feedback)
    return {**context, "answer_endpoint": "lti.answer", "answer_args": {"launch": ref}}


@bp.get("/activity", endpoint="activity")
def activity_page() -> Response | str:
    ref = _ref()
    found = _resource(ref)
    if isinstance(found, Response):
        return found
    data, chosen = found
    status = score_status(_tool(), data, chosen)
    if chosen.kind == "build":
        return render_template("lti/build.html", ref=ref, chosen=chosen, build=build.build_for(chosen.lesson),
                               figure=_build_figure(ref, chosen), grading=None, error=None, lti_score=status)
    return render_template("lti/quiz.html", lesson=chosen.lesson, only=chosen.question,
                           quiz=_quiz_context(ref, chosen, None), lti_score=status)


@bp.post("/answer/<slug>/<qid>")
def answer(slug: str, qid: str) -> Response:
    """The quiz's own check (web.quiz.routes.check); once every question of the link has a first answer, that
    first-try score is the one kept and sent."""
    ref = _ref()
    found = _resource(ref, scoring=True)
    if isinstance(found, Response):
        return found
    data, chosen = found
    question = chosen.lesson.question(qid)
    if chosen.kind == "build" or slug != chosen.lesson.slug or question is None or \
            (chosen.question is not None and chosen.question.id != qid):
        return _page(404, "Not part of this activity", "That question is not part of the activity your course opened.")
    feedback, checked = quiz.check(chosen.lesson, question, request.form)
    context = _quiz_context(ref, chosen, checked["progress"], feedback)
    scope = (chosen.question,) if chosen.question else chosen.lesson.questions
    first = quiz.read_progress(chosen.lesson, checked["progress"])
    if all(q.id in first for q in scope):
        record_score(_tool(), data, chosen, quiz.score_of(scope, first)["correct"], complete=True, keep_best=False)
    status = score_status(_tool(), data, chosen)
    return htmx.render("lti/quiz.html", "lti/_answer.html", lesson=chosen.lesson, only=chosen.question, quiz=context,
                       question=question, feedback=feedback, oob=True, lti_score=status)


def _build_figure(ref: str, chosen: Activity) -> dict[str, object]:
    """The lesson's build widget (editors and the in-page run), its finished run's report posted to this launch's
    build_report as `source=run` instead of to the lesson's own grading endpoint."""
    return {**build.widget_context(chosen.lesson), "report_url": url_for("lti.build_report", launch=ref),
            "report_target": "#lti-build-grade", "report_source": "run"}


@bp.post("/build-report")
def build_report() -> Response:
    """Grade a checker report as the lesson does (web.build.routes.grade), from the in-page run (`source=run`, posted by
    static/js/build-runner.js under htmx) or pasted (`source=paste`, the default): the steps it shows done are the
    score, sent with a comment saying they are self-reported, and a later, worse report never lowers it. Under htmx
    the answer is the grade fragment (a bad report is a message in it, as on the lesson page)."""
    ref = _ref()
    found = _resource(ref, scoring=True)
    if isinstance(found, Response):
        return found
    data, chosen = found
    if chosen.kind != "build":
        return _page(404, "Not part of this activity", "This activity has no checker report to paste.")
    lesson_build = build.build_for(chosen.lesson)
    source = request.form.get("source") or "paste"
    grading: build.Grading | None = None
    if source not in REPORT_SOURCES:
        error = "that report names no known source (the in-page run or a pasted report): reload the activity"
    else:
        try:
            grading, error = build.grade(lesson_build, request.form.get("report", ""), get_content().moves), None
        except build.ReportError as exc:
            error = str(exc)
    if grading is not None:
        record_score(_tool(), data, chosen, grading.done, complete=grading.done == len(lesson_build.steps),
                     keep_best=True, comment=f"{SELF_REPORTED} This report came {REPORT_SOURCES[source]}.")
    status = 400 if error and not htmx.wants_fragment() else 200
    return htmx.render("lti/build.html", "lti/_build_grade.html", status=status, ref=ref, chosen=chosen,
                       build=lesson_build, figure=_build_figure(ref, chosen), grading=grading, error=error,
                       source=source, lti_score=score_status(_tool(), data, chosen))

