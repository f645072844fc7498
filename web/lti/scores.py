"""Scores to the platform (LTI Assignment and Grade Services): which launch can take one, keeping a score in the
LTI store's queue before posting it, and posting what is due until the platform accepts it.

What it must never do: post a score for a launch without the AGS score scope, a line item or a user to name, or
lose a score the platform has not accepted (it stays queued and is retried on later LTI requests).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict
from urllib.parse import urlsplit

from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.grade import Grade
from pylti1p3.service_connector import ServiceConnector

from mrtr import JSONObject
from mrtr_stores.lti import PendingScore
from web.lti.activities import Activity
from web.lti.tool import LtiTool, NoRedirects

log = logging.getLogger("mrtr.lti")

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
#: What the tool asks a platform for (its configuration's scopes).
AGS_SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly", SCORE_SCOPE)
#: Queued scores retried per LTI request: bounded, so a platform that is down slows no page for long.
RETRIES_PER_REQUEST = 2


@dataclass(frozen=True)
class ScoreTarget:
    """Where a launch's scores go: the platform, the line item's AGS endpoint and the learner, and the queue's key."""

    key: str
    issuer: str
    client_id: str
    endpoint: JSONObject  # the launch's AGS claim (its lineitem a string, its scopes the score scope)
    user: str


def score_target(data: JSONObject) -> ScoreTarget | None:
    """Where a score for this kept launch goes, or None when the launch cannot take one (no AGS score scope,
    no line item, or no user to name)."""
    ags, user = data.get("ags"), data.get("user")
    issuer, client_id = data.get("iss"), data.get("client_id")
    if not isinstance(ags, dict) or not isinstance(lineitem := ags.get("lineitem"), str) or not user:
        return None
    scopes = ags.get("scope")
    if not isinstance(scopes, list) or SCORE_SCOPE not in scopes:
        return None
    if not (isinstance(issuer, str) and isinstance(client_id, str) and isinstance(user, str)):
        return None  # a launch kept by web/lti/routes.py always names them: nothing to post for one that does not
    return ScoreTarget("\n".join((issuer, client_id, lineitem, user)), issuer, client_id, ags, user)


class ScoreStatus(TypedDict):
    """What the activity's page says of its score (templates/lti/_score.html)."""

    gradable: bool  # the launch can take a score
    given: float | None  # the score kept, if any
    accepted: bool  # the platform has it
    maximum: int


def score_status(tool: LtiTool, data: JSONObject, chosen: Activity) -> ScoreStatus:
    target = score_target(data)
    state = tool.db.score_state(target.key) if target else None
    return {"gradable": target is not None, "given": state[0] if state else None,
            "accepted": state[1] if state else False, "maximum": chosen.maximum}


def record_score(tool: LtiTool, data: JSONObject, chosen: Activity, given: int, *, complete: bool,
                 keep_best: bool, comment: str = "") -> None:
    """Keep the score, then try to post it (AGS: Completed/FullyGraded once done, else InProgress/Pending)."""
    target = score_target(data)
    if target is None:
        return
    stamp = datetime.fromtimestamp(tool.db.clock(), UTC).isoformat(timespec="milliseconds")
    score = PendingScore(target.key, target.issuer, target.client_id, target.endpoint, target.user, float(given),
                         float(chosen.maximum), "Completed" if complete else "InProgress",
                         "FullyGraded" if complete else "Pending", stamp, 0, comment)
    if tool.db.record_score(score, keep_best=keep_best):
        flush_scores(tool, 1, key=target.key)


def flush_scores(tool: LtiTool, limit: int, key: str | None = None) -> None:
    """Post up to `limit` queued scores that are due; each stays queued until the platform accepts it."""
    for score in tool.db.due_scores(limit, key):
        try:
            _post(tool, score)
        except Exception as exc:  # the platform is down, refuses, or redirects: keep the score for a retry
            status = getattr(getattr(exc, "response", None), "status_code", None)
            reason = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
            tool.db.mark_failed(score, reason)
            log.warning("LTI score for %s not accepted yet: %s; it stays queued",
                        urlsplit(str(score.endpoint.get("lineitem", ""))).netloc, reason)
        else:
            tool.db.mark_sent(score)


def _post(tool: LtiTool, score: PendingScore) -> None:
    """One score to its line item, through pylti1p3's AGS client (which fetches the platform's access token)."""
    ags = AssignmentsGradesService(ServiceConnector(tool.registration(score.issuer, score.client_id),
                                                    requests_session=NoRedirects()),
                                   score.endpoint)  # type: ignore[arg-type]  # JSON, checked at launch
    grade = (Grade().set_score_given(score.given).set_score_maximum(score.maximum)
             .set_activity_progress(score.activity).set_grading_progress(score.grading)
             .set_timestamp(score.timestamp).set_user_id(score.user_id))
    if score.comment:
        grade.set_comment(score.comment)
    ags.put_grade(grade)
