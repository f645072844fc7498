"""What the presenter's own browser remembers of the classes it opened: a signed cookie (`mrtr_presenting`, path /,
HttpOnly) listing each class's code and when it opened, newest first, at most MAX_REMEMBERED.

It lets the presenter find their way back (the start control on /demo names their open classes and links each
to its presenter page, where the control link can be shown again on the laptop), and lets a refused start say
when this browser's next class can open. It holds no secret: the presenter page itself still needs the class's
host cookie (web/classroom/access.py), so a copied or forged list opens nothing. Signed with the app's key ring under
its own salt, so a visitor cannot plant codes in it; anything unreadable reads as an empty list.
"""

from __future__ import annotations

import re

from flask import request
from itsdangerous import BadData, URLSafeSerializer
from werkzeug.wrappers import Response as BaseResponse

from web.site.services import get_services

COOKIE = "mrtr_presenting"
SALT = "mrtr.class-presenter"
#: Classes remembered per browser: the start limit's three, and room for one more.
MAX_REMEMBERED = 4
_CODE = re.compile(r"^[A-Z0-9]{4,12}$")


def _serializer() -> URLSafeSerializer:
    # itsdangerous signs with the last key of its list; the ring's first key is the newest.
    return URLSafeSerializer(list(reversed(get_services().ring.keys)), salt=SALT)


def remembered() -> list[tuple[str, float]]:
    """(code, opened at) of the classes this browser opened, newest first; [] for a missing or bad cookie."""
    raw = request.cookies.get(COOKIE)
    if not raw:
        return []
    try:
        data = _serializer().loads(raw)
    except BadData:
        return []
    if not isinstance(data, list):
        return []
    out = []
    for item in data[:MAX_REMEMBERED]:
        if (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and _CODE.match(item[0])
                and isinstance(item[1], int | float)):
            out.append((item[0], float(item[1])))
    return out


def remember(response: BaseResponse, code: str, opened: float, ttl: int) -> None:
    """Put the class just opened at the head of this browser's list (for the class's lifetime)."""
    kept = [[c, t] for c, t in remembered() if c != code]
    value = _serializer().dumps([[code, opened], *kept][:MAX_REMEMBERED])
    response.set_cookie(COOKIE, value, max_age=ttl, path="/", httponly=True, samesite="Lax",
                        secure=request.is_secure)


def next_start(opened: list[float], limit: int, window: float, now: float) -> float | None:
    """When this browser's next class may open under `limit` starts per `window` seconds, from its own record
    (None when the record cannot tell: the limit counts the address, and others may share it)."""
    recent = sorted(t for t in opened if t > now - window)
    if len(recent) < limit:
        return None
    return recent[-limit] + window


def context(open_codes: set[str]) -> dict[str, object]:
    """The start control's view of this browser's classes that are still open."""
    return {"presenting": [c for c, _ in remembered() if c in open_codes]}
