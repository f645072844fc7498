"""MRTR Lab as an LTI 1.3 tool: course platforms launch the quiz and the build lesson, and get scores back.

Everything protocol-shaped is pylti1p3's (OIDC login, id_token checks, deep-linking JWT, AGS token and
score calls); this module wires it to the app:

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

Cookies (pylti1p3's state and session id) are `Secure; SameSite=None; HttpOnly` and scoped to `/lti/`,
so they survive the platform's iframe and never reach another route. LTI pages may be framed by the
registered platforms' origins only; the deep-linking return page may post to the platform only.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import requests
from flask import Blueprint, Response, current_app, jsonify, redirect, render_template, request, url_for
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.contrib.flask.cookie import FlaskCookieService
from pylti1p3.contrib.flask.message_launch import FlaskMessageLaunch
from pylti1p3.contrib.flask.oidc_login import FlaskOIDCLogin
from pylti1p3.contrib.flask.request import FlaskRequest
from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException, OIDCException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.service_connector import ServiceConnector
from pylti1p3.tool_config.dict import ToolConfDict
from werkzeug.wrappers import Response as BaseResponse

from mrtr_settings.lti_platforms import LtiPlatform
from mrtr_settings.stores import open_lti
from mrtr_stores.lti import LtiStore, LtiStoreDown, PendingScore, public_pem
from web import build, embed, htmx, inputs, quiz
from web.content import Lesson, Question, get_content
from web.lti_keys import KeySetCache, KeySetUnavailable
from web.lti_launch_data import StoreLaunchData
from web.security import allow_form_posts_to, allow_framing_by
from web.services import get_settings

log = logging.getLogger("mrtr.lti")

bp = Blueprint("lti", __name__, url_prefix="/lti")

EXTENSION = "mrtr.lti"
#: The custom parameter a deep-linked content item carries: which activity the link opens.
ITEM_PARAM = "mrtr_item"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
AGS_SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly", SCORE_SCOPE)
#: Seconds the tool waits for a platform (keys, token, score) before giving up for now.
PLATFORM_TIMEOUT = 5.0
#: Queued scores retried per LTI request: bounded, so a platform that is down slows no page for long.
RETRIES_PER_REQUEST = 2
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
# The inputs guard (web/inputs.py) declares per endpoint what a view reads; an id_token is longer than
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


class _NoRedirects(requests.Session):
    """Every call the tool makes to a platform: a time limit, and a redirect is an error, so keys come from
    the registered key set URL and scores go to the line item, never to wherever a response points."""

    def __init__(self) -> None:
        super().__init__()
        self.max_redirects = 0
        self.headers["User-Agent"] = "MRTR Lab LTI tool"

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", PLATFORM_TIMEOUT)
        return super().request(*args, **kwargs)


class _Cookies(FlaskCookieService):
    """pylti1p3's cookies, always `Secure; SameSite=None` (the platform frames us from another site),
    and only for /lti/ (no other route ever receives them)."""

    def update_response(self, response: Response) -> None:
        for key, data in self._cookie_data_to_set.items():
            response.set_cookie(key, data["value"], max_age=data["exp"], path="/lti/", secure=True, httponly=True,
                                samesite="None")


class _Launch(FlaskMessageLaunch):
    """pylti1p3's launch, its platform keys from the tool's cache instead of a fetch per launch."""

    key_sets: KeySetCache

    def fetch_public_key(self, key_set_url: str) -> Any:
        kid = (self._jwt.get("header") or {}).get("kid")
        try:
            return self.key_sets.get(key_set_url, kid if isinstance(kid, str) else None, self._requests_session)
        except KeySetUnavailable as exc:
            raise LtiException(f"Error during fetch of the key set: {exc}") from exc  # the "keys" refusal


def _cookies(req: FlaskRequest) -> _Cookies:
    return _Cookies(req)  # type: ignore[no-untyped-call]  # pylti1p3's Flask adapter has no annotations


@dataclass
class LtiTool:
    platforms: tuple[LtiPlatform, ...]
    conf: ToolConfDict
    db: LtiStore
    #: The platforms' key sets, fetched once and kept (web/lti_keys.py): a forged launch fetches nothing.
    key_sets: KeySetCache = field(default_factory=KeySetCache)

    def storage(self) -> StoreLaunchData:
        return StoreLaunchData(self.db)

    def registration(self, issuer: str, client_id: str) -> Any:
        return self.conf.find_registration_by_params(issuer, client_id)

    def origins(self) -> list[str]:
        return sorted({o for p in self.platforms for o in p.origins()})


_build_lock = threading.Lock()


def get_tool() -> LtiTool | None:
    """The tool for this app, built on first use; None when no platform is registered."""
    platforms = get_settings().lti_platforms
    if not platforms:
        return None
    tool: LtiTool | None = current_app.extensions.get(EXTENSION)
    if tool is not None:
        return tool
    with _build_lock:
        tool = current_app.extensions.get(EXTENSION)
        if tool is None:
            db = open_lti(get_settings(), current_app.config.get("LTI_CLOCK"))  # the clock: a test seam
            private = db.private_key()
            public = public_pem(private)
            by_issuer: dict[str, list[dict[str, Any]]] = {}
            for p in platforms:
                by_issuer.setdefault(p.issuer, []).append({
                    "default": not by_issuer.get(p.issuer),  # a login without client_id: the first one
                    "client_id": p.client_id, "auth_login_url": p.auth_login_url, "auth_token_url": p.auth_token_url,
                    "auth_audience": p.auth_audience, "key_set_url": p.key_set_url, "key_set": None,
                    "deployment_ids": list(p.deployment_ids)})
            conf = ToolConfDict(by_issuer)  # type: ignore[arg-type]  # its TypedDict is narrower than JSON
            for p in platforms:
                conf.set_private_key(p.issuer, private, client_id=p.client_id)
                conf.set_public_key(p.issuer, public, client_id=p.client_id)
            tool = LtiTool(platforms, conf, db, KeySetCache(db.clock))
            current_app.extensions[EXTENSION] = tool
    return tool


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


# -- the activities a link can open ----------------------------------------------------------------


@dataclass(frozen=True)
class Activity:
    item: str  # "quiz/<lesson>", "question/<lesson>/<question>" or "build/<lesson>"
    kind: str
    lesson: Lesson
    question: Question | None
    title: str
    maximum: int  # the line item's scoreMaximum: questions, or build steps


def activities() -> list[Activity]:
    """Everything an instructor can pick, in course order."""
    found = []
    for lesson in get_content().lessons:
        if lesson.questions:
            found.append(Activity(f"quiz/{lesson.slug}", "quiz", lesson, None, f"Quick check: {lesson.title}",
                                  len(lesson.questions)))
            for q in lesson.questions:
                found.append(Activity(f"question/{lesson.slug}/{q.id}", "question", lesson, q,
                                      f"{lesson.title}: {q.prompt}"[:200], 1))
        steps = build.load_build(lesson.directory)
        if steps is not None:
            found.append(Activity(f"build/{lesson.slug}", "build", lesson, None, lesson.title, len(steps.steps)))
    return found


def activity(item: Any) -> Activity | None:
    return next((a for a in activities() if a.item == item), None) if isinstance(item, str) else None


# -- OIDC login, launch, keys, configuration ---------------------------------------------------------


def _lti_request() -> FlaskRequest:
    return FlaskRequest(session={})  # type: ignore[no-untyped-call]  # launch data lives in the LTI store, never in Flask's session


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """OIDC login initiation: remember a state (cookie) and a nonce, and send the browser to the platform."""
    tool = _tool()
    req = _lti_request()
    try:
        oidc = FlaskOIDCLogin(req, tool.conf, cookie_service=_cookies(req),  # type: ignore[no-untyped-call]
                              launch_data_storage=tool.storage())
        return oidc.redirect(url_for("lti.launch", _external=True))
    except OIDCException as exc:
        log.info("LTI login refused: %s", exc)
        return _page(400, "This login could not start", "The course site's login request is incomplete or comes "
                     "from a platform this tool does not know. Ask your course administrator to check the "
                     "registration.")
    except LtiStoreDown:
        raise  # the tool's own storage failed: a server error (logged), not the platform's fault
    except Exception as exc:  # pylti1p3 raises bare Exception for an unknown issuer or client id
        log.info("LTI login refused: %s", type(exc).__name__)
        return _page(400, "This course site is not registered", "The login came from a platform (issuer and client "
                     "id) this MRTR Lab does not know. Ask your course administrator to register it.")


#: pylti1p3's reasons, as a learner or an instructor can read them.
_REASONS = (
    ("Missing %s cookie", "state", "Your browser did not send this tool's cookie back (it may block cookies in "
     "frames). Open the activity in a new window from your course."),
    ("State not found", "state", "This launch does not match a login started in this browser. Open the activity "
     "again from your course."),
    ("Missing state", "state", "This launch does not match a login started in this browser."),
    ("Invalid Nonce", "replayed", "This launch was already used once (or is too old). Open the activity again from "
     "your course."),
    ("is missing the", "incomplete", "This launch lacks a claim every launch must carry (its expiry or issue "
     "time)."),
    ("expired", "expired", "This launch has expired. Open the activity again from your course."),
    ("Signature verification failed", "forged", "This launch is not signed by the course site it claims to come "
     "from."),
    ("Unable to find public key", "forged", "This launch is signed with a key the course site does not publish."),
    ("Unable to find deployment", "deployment", "This launch comes from a deployment of the tool that is not "
     "registered here. Ask your course administrator to add its deployment id."),
    ("Client id not registered", "audience", "This launch is meant for another tool (its audience is not this "
     "tool's client id)."),
    ("Error during fetch", "keys", "The course site's public keys could not be fetched. Try again in a minute."),
    ("Invalid response from", "keys", "The course site's key set URL did not answer with its public keys."),
)


def _refused(exc: Exception) -> Response:
    text = str(exc)
    for needle, reason, message in _REASONS:
        if needle in text:
            log.info("LTI launch refused (%s)", reason)
            return _page(403 if reason in ("forged", "replayed", "audience") else 400,
                         "This launch could not be verified", message)
    log.info("LTI launch refused: %s", type(exc).__name__)
    return _page(400, "This launch could not be verified", "The course site's launch message is incomplete, comes "
                 "from a platform this tool does not know, or is not a launch this tool accepts.")


def _audience_ok(body: dict[str, Any], client_id: str) -> bool:
    """OpenID Connect's rule, which pylti1p3 only half applies (it reads aud[0]): the audience contains our
    client id, and with several audiences the authorised party is us."""
    aud = body.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    if client_id not in audiences:
        return False
    return len(audiences) == 1 or body.get("azp") == client_id


@bp.post("/launch")
def launch() -> Response | BaseResponse:
    """Verify the platform's id_token (state, nonce once, signature from the registered keys, issuer,
    audience, deployment, expiry, message type), keep what the pages need, and send the browser there."""
    tool = _tool()
    req = _lti_request()
    try:
        message = _Launch(req, tool.conf, cookie_service=_cookies(req),  # type: ignore[no-untyped-call]
                          launch_data_storage=tool.storage(), requests_session=_NoRedirects())
        message.key_sets = tool.key_sets
        # pylti1p3 leaves audience to validate_registration; exp and iat must be present, not just valid.
        message.set_jwt_verify_options({"verify_aud": False, "require": ["exp", "iat"]})  # type: ignore[dict-item]
        body = dict(message.validate().get_launch_data())
        issuer, client_id = message.get_iss(), message.get_client_id()
    except LtiStoreDown:
        raise  # the tool's own storage failed: a server error (logged), not a refused launch
    except Exception as exc:  # pylti1p3 raises LtiException, and bare errors for odd claims: all a client's doing
        return _refused(exc)
    if not _audience_ok(body, client_id):
        return _refused(LtiException("Client id not registered"))
    base = {"iss": issuer, "client_id": client_id, "deployment_id": body.get(CLAIM + "deployment_id"),
            "user": body.get("sub"), "browser": _browser()}
    if message.is_deep_link_launch():
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
    ref = tool.db.save_launch({**base, "kind": "resource", "item": chosen.item, "ags": body.get(AGS_CLAIM)})
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


def _launch(ref: str, kind: str) -> dict[str, Any] | Response:
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
    settings = data["settings"]
    return_url = settings["deep_link_return_url"]
    parts = urlsplit(return_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return _page(400, "This deep link cannot be returned", "The course site's return URL is not a web address.")
    line_item = LineItem().set_score_maximum(chosen.maximum).set_label(chosen.title).set_resource_id(chosen.item)
    resource = (DeepLinkResource().set_url(url_for("lti.launch", _external=True)).set_title(chosen.title)
                .set_custom_params({ITEM_PARAM: chosen.item}).set_lineitem(line_item))
    registration = _tool().registration(data["iss"], data["client_id"])
    token = DeepLink(registration, data["deployment_id"], settings).get_response_jwt([resource])
    allow_form_posts_to([f"{parts.scheme}://{parts.netloc}"])
    return render_template("lti/deep_link_return.html", return_url=return_url, token=token, chosen=chosen)


# -- the activity pages and their scores ----------------------------------------------------------------


def _browser() -> str | None:
    """The browser session this request comes from, as a digest (pylti1p3's session cookie, set at login)."""
    session = request.cookies.get(SESSION_COOKIE)
    return hashlib.sha256(session.encode()).hexdigest() if session else None


def _resource(ref: str, *, scoring: bool = False) -> tuple[dict[str, Any], Activity] | Response:
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
                  ) -> dict[str, Any]:
    context = embed.embed_context(chosen.lesson, token, only=chosen.question, origin=None, feedback=feedback)
    context.update(answer_endpoint="lti.answer", answer_args={"launch": ref})
    return context


def _score_status(data: dict[str, Any], chosen: Activity) -> dict[str, Any]:
    tool = _tool()
    key = _score_key(data, chosen)
    state = tool.db.score_state(key) if key else None
    return {"gradable": key is not None, "given": state[0] if state else None,
            "accepted": state[1] if state else False, "maximum": chosen.maximum}


@bp.get("/activity", endpoint="activity")
def activity_page() -> Response | str:
    ref = _ref()
    found = _resource(ref)
    if isinstance(found, Response):
        return found
    data, chosen = found
    status = _score_status(data, chosen)
    if chosen.kind == "build":
        return render_template("lti/build.html", ref=ref, chosen=chosen, build=build.build_for(chosen.lesson),
                               figure=_build_figure(ref, chosen), grading=None, error=None, lti_score=status)
    return render_template("lti/quiz.html", lesson=chosen.lesson, only=chosen.question,
                           quiz=_quiz_context(ref, chosen, None), lti_score=status)


@bp.post("/answer/<slug>/<qid>")
def answer(slug: str, qid: str) -> Response:
    """The quiz's own check (web.quiz.check); once every question of the link has a first answer, that
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
        record_score(data, chosen, sum(first[q.id] for q in scope), complete=True, keep_best=False)
    status = _score_status(data, chosen)
    return htmx.render("lti/quiz.html", "lti/_answer.html", lesson=chosen.lesson, only=chosen.question, quiz=context,
                       question=question, feedback=feedback, oob=True, lti_score=status)


def _build_figure(ref: str, chosen: Activity) -> dict[str, Any]:
    """The lesson's build widget (editors and the in-page run), its finished run's report posted to this launch's
    build_report as `source=run` instead of to the lesson's own grading endpoint."""
    return {**build.widget_context(chosen.lesson), "report_url": url_for("lti.build_report", launch=ref),
            "report_target": "#lti-build-grade", "report_source": "run"}


@bp.post("/build-report")
def build_report() -> Response:
    """Grade a checker report as the lesson does (web.build.grade), from the in-page run (`source=run`, posted by
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
        record_score(data, chosen, grading.done, complete=grading.done == len(lesson_build.steps), keep_best=True,
                     comment=f"{SELF_REPORTED} This report came {REPORT_SOURCES[source]}.")
    status = 400 if error and not htmx.wants_fragment() else 200
    return htmx.render("lti/build.html", "lti/_build_grade.html", status=status, ref=ref, chosen=chosen,
                       build=lesson_build, figure=_build_figure(ref, chosen), grading=grading, error=error,
                       source=source, lti_score=_score_status(data, chosen))


def _score_key(data: dict[str, Any], chosen: Activity) -> str | None:
    """Where a score for this launch goes, or None when the launch cannot take one (no AGS score scope,
    no line item, or no user to name)."""
    ags = data.get("ags")
    if not isinstance(ags, dict) or not isinstance(ags.get("lineitem"), str) or not data.get("user"):
        return None
    scopes = ags.get("scope")
    if not isinstance(scopes, list) or SCORE_SCOPE not in scopes:
        return None
    return "\n".join((data["iss"], data["client_id"], ags["lineitem"], data["user"]))


def record_score(data: dict[str, Any], chosen: Activity, given: int, *, complete: bool, keep_best: bool,
                 comment: str = "") -> None:
    """Keep the score, then try to post it (AGS: Completed/FullyGraded once done, else InProgress/Pending)."""
    key = _score_key(data, chosen)
    if key is None:
        return
    tool = _tool()
    stamp = datetime.fromtimestamp(tool.db.clock(), UTC).isoformat(timespec="milliseconds")
    score = PendingScore(key, data["iss"], data["client_id"], data["ags"], data["user"], float(given),
                         float(chosen.maximum), "Completed" if complete else "InProgress",
                         "FullyGraded" if complete else "Pending", stamp, 0, comment)
    if tool.db.record_score(score, keep_best=keep_best):
        flush_scores(tool, 1, key=key)


def flush_scores(tool: LtiTool, limit: int, key: str | None = None) -> None:
    """Post up to `limit` queued scores that are due; each stays queued until the platform accepts it."""
    for score in tool.db.due_scores(limit, key):
        try:
            ags = AssignmentsGradesService(ServiceConnector(tool.registration(score.issuer, score.client_id),
                                                            requests_session=_NoRedirects()),
                                           score.endpoint)  # type: ignore[arg-type]  # JSON, checked at launch
            grade = (Grade().set_score_given(score.given).set_score_maximum(score.maximum)
                     .set_activity_progress(score.activity).set_grading_progress(score.grading)
                     .set_timestamp(score.timestamp).set_user_id(score.user_id))
            if score.comment:
                grade.set_comment(score.comment)
            ags.put_grade(grade)
        except Exception as exc:  # the platform is down, refuses, or redirects: keep the score for a retry
            status = getattr(getattr(exc, "response", None), "status_code", None)
            reason = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
            tool.db.mark_failed(score, reason)
            log.warning("LTI score for %s not accepted yet: %s; it stays queued",
                        urlsplit(str(score.endpoint.get("lineitem", ""))).netloc, reason)
        else:
            tool.db.mark_sent(score)
