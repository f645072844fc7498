"""Verifying who launches: pylti1p3's OIDC login and launch message, adapted to the tool, and its refusals put into
words a learner or an instructor can act on.

The adaptations: pylti1p3's cookies (state, session id) are `Secure; SameSite=None; HttpOnly` and scoped to
`/lti/`, so they survive the platform's iframe and never reach another route; the platform's keys come from the
tool's cache (web/lti/keys.py), not a fetch per launch; the launch data lives in the LTI store, never in Flask's
session; the audience is checked as OpenID Connect says. What it must never do: accept a launch pylti1p3 or the
audience rule refuses, or turn a failure of the tool's own storage (`LtiStoreDown`) into a refused launch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Response
from pylti1p3.contrib.flask.cookie import FlaskCookieService
from pylti1p3.contrib.flask.message_launch import FlaskMessageLaunch
from pylti1p3.contrib.flask.oidc_login import FlaskOIDCLogin
from pylti1p3.contrib.flask.request import FlaskRequest
from pylti1p3.exception import LtiException, OIDCException
from werkzeug.wrappers import Response as BaseResponse

from mrtr_stores.lti import LtiStoreDown
from web.lti.keys import KeySetCache, KeySetUnavailable
from web.lti.tool import LtiTool, NoRedirects

log = logging.getLogger("mrtr.lti")

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"


class Refused(Exception):
    """A login or launch this tool will not accept: the page's status, title and message (the reason is logged)."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status, self.title, self.message = status, title, message


@dataclass(frozen=True)
class Verified:
    """A launch that passed every check: its claims, and who sent it."""

    body: Mapping[str, object]  # the id_token's claims as pylti1p3 decoded them: narrowed where they are read
    issuer: str
    client_id: str
    deep_link: bool


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

    def fetch_public_key(self, key_set_url: str) -> Any:  # a platform's JWK Set, less than pylti1p3's TKeySet says
        kid = (self._jwt.get("header") or {}).get("kid")
        try:
            return self.key_sets.get(key_set_url, kid if isinstance(kid, str) else None, self._requests_session)
        except KeySetUnavailable as exc:
            raise LtiException(f"Error during fetch of the key set: {exc}") from exc  # the "keys" refusal


def _cookies(req: FlaskRequest) -> _Cookies:
    return _Cookies(req)  # type: ignore[no-untyped-call]  # pylti1p3's Flask adapter has no annotations


def _lti_request() -> FlaskRequest:
    return FlaskRequest(session={})  # type: ignore[no-untyped-call]  # launch data lives in the LTI store, never in Flask's session


def login_redirect(tool: LtiTool, launch_url: str) -> BaseResponse:
    """OIDC login initiation: remember a state (cookie) and a nonce, and send the browser to the platform."""
    req = _lti_request()
    try:
        oidc = FlaskOIDCLogin(req, tool.conf, cookie_service=_cookies(req),  # type: ignore[no-untyped-call]
                              launch_data_storage=tool.storage())
        response: BaseResponse = oidc.redirect(launch_url)
        return response
    except OIDCException as exc:
        log.info("LTI login refused: %s", exc)
        raise Refused(400, "This login could not start", "The course site's login request is incomplete or comes "
                      "from a platform this tool does not know. Ask your course administrator to check the "
                      "registration.") from exc
    except LtiStoreDown:
        raise  # the tool's own storage failed: a server error (logged), not the platform's fault
    except Exception as exc:  # pylti1p3 raises bare Exception for an unknown issuer or client id
        log.info("LTI login refused: %s", type(exc).__name__)
        raise Refused(400, "This course site is not registered", "The login came from a platform (issuer and "
                      "client id) this MRTR Lab does not know. Ask your course administrator to register it.") from exc


def verify(tool: LtiTool) -> Verified:
    """Verify the platform's id_token (state, nonce once, signature from the registered keys, issuer, audience,
    deployment, expiry, message type); `Refused` says why not."""
    req = _lti_request()
    try:
        message = _Launch(req, tool.conf, cookie_service=_cookies(req),  # type: ignore[no-untyped-call]
                          launch_data_storage=tool.storage(), requests_session=NoRedirects())
        message.key_sets = tool.key_sets
        # pylti1p3 leaves audience to validate_registration; exp and iat must be present, not just valid.
        message.set_jwt_verify_options({"verify_aud": False, "require": ["exp", "iat"]})  # type: ignore[dict-item]
        body = dict(message.validate().get_launch_data())
        verified = Verified(body, message.get_iss(), message.get_client_id(), message.is_deep_link_launch())
    except LtiStoreDown:
        raise  # the tool's own storage failed: a server error (logged), not a refused launch
    except Exception as exc:  # pylti1p3 raises LtiException, and bare errors for odd claims: all a client's doing
        raise _refused(exc) from exc
    if not _audience_ok(body, verified.client_id):
        raise _refused(LtiException("Client id not registered"))
    return verified


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


def _refused(exc: Exception) -> Refused:
    text = str(exc)
    for needle, reason, message in _REASONS:
        if needle in text:
            log.info("LTI launch refused (%s)", reason)
            return Refused(403 if reason in ("forged", "replayed", "audience") else 400,
                           "This launch could not be verified", message)
    log.info("LTI launch refused: %s", type(exc).__name__)
    return Refused(400, "This launch could not be verified", "The course site's launch message is incomplete, "
                   "comes from a platform this tool does not know, or is not a launch this tool accepts.")


def _audience_ok(body: Mapping[str, object], client_id: str) -> bool:
    """OpenID Connect's rule, which pylti1p3 only half applies (it reads aud[0]): the audience contains our
    client id, and with several audiences the authorised party is us."""
    aud = body.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    if client_id not in audiences:
        return False
    return len(audiences) == 1 or body.get("azp") == client_id
