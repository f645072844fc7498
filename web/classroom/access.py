"""Who may do what in a live class: the presenter's capability (or the instructor token), a learner's token, and
the one answer for a code that opens nothing to the visitor, counted toward the wrong-code limit.

The presenter holds a secret capability (shown once, stored hashed, kept in an HttpOnly, SameSite=Strict cookie
scoped to the class) or, when MRTR_INSTRUCTOR_TOKEN is set, that token. A learner holds a per-learner token
(cookie, or `Authorization: Bearer` for curl). Real and made-up codes answer alike, so codes cannot be found by
guessing. Never renders a page beyond the shared "slow down" answer.
"""

from __future__ import annotations

import hmac
from typing import NoReturn

from flask import Response, abort, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from mrtr_stores.classes import ClassRow, Learner, normalize_code
from web.classroom.services import GUESS_WINDOW, HOST_COOKIE, LEARNER_COOKIE, classroom
from web.site.deployment import visitor_key


def no_class(*, to_join: str | None = None) -> NoReturn:
    """The one answer when a class route's code opens nothing to this visitor: no such class, an ended one, or a
    real class the visitor holds no presenter or learner credential for. Real and made-up codes answer alike (a
    404, or for a learner's page the join form), and every such answer counts toward the visitor's wrong-code
    limit (GUESS_LIMIT per GUESS_WINDOW); past it every answer is "slow down", for real codes too."""
    cr = classroom()
    now = cr.clock()
    if cr.guesses.exhausted(client_key(), now):
        abort(slow_down("Too many codes that open no class from this address. Wait ten minutes, then check the "
                         "code on the screen.", int(GUESS_WINDOW)))
    cr.guesses.allow(client_key(), now)
    if to_join is not None:  # the code as given, real or not
        abort(redirect(url_for("classroom.join", code=normalize_code(to_join)), 303))
    abort(404)


def host_row(code: str) -> ClassRow:
    cr = classroom()
    row = cr.store.by_code(code)
    secret = request.cookies.get(HOST_COOKIE)
    if row is None:
        ok = False
    elif cr.instructor_token:
        ok = bool(secret) and hmac.compare_digest(str(secret).encode(), cr.instructor_token.encode())
    else:
        ok = cr.store.host_ok(row, secret)
    if row is None or not ok:
        no_class()
    return row


def _learner_token() -> str | None:
    auth = request.headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return request.cookies.get(LEARNER_COOKIE)


def learner_of(row: ClassRow) -> Learner | None:
    return classroom().store.learner(row, _learner_token())


def wants_json() -> bool:
    return request.accept_mimetypes.best == "application/json" or request.headers.get("Authorization") is not None


def class_cookie(response: BaseResponse, name: str, value: str, code: str) -> None:
    ttl = int(classroom().store.ttl)
    response.set_cookie(name, value, max_age=ttl, path=f"/class/{code}", httponly=True, samesite="Strict",
                        secure=request.is_secure)



def learner_here(code: str, *, to_join: bool = False) -> tuple[ClassRow, Learner]:
    """The class and the visitor's place in it, or the one answer for a code that opens nothing to them."""
    row = classroom().store.by_code(code)
    learner = learner_of(row) if row is not None else None
    if row is None or learner is None:
        no_class(to_join=code if to_join else None)
    return row, learner



def client_key() -> str:
    """Whom per-client limits count: the visitor's address (behind MRTR_TRUSTED_PROXIES, the real one), an IPv6
    visitor's /64."""
    return visitor_key(request.remote_addr)


def slow_down(message: str, retry_after: int) -> Response:
    response = Response(render_template("errors/error.html", code=429, title="Slow down", message=message), 429)
    response.headers["Retry-After"] = str(retry_after)
    return response

