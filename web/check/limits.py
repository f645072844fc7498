"""What a visitor may send to /check, and how often they may start a run.

The form's fields: each at most MAX_FIELD characters, the tool's arguments a JSON object, the late move's wait
within `MRTR_CHECK_MAX_WAIT`. A run starts from this app's own form only (another site must not aim a visitor's
browser at it). Visitors are known by a digest of their address, never the address. In public, a visitor starts
at most `MRTR_CHECK_RUNS` runs per `MRTR_CHECK_WINDOW` seconds; a visitor on this very machine has in effect no
cap. One run at a time each, and `MAX_ACTIVE` for everyone, whatever: the run store admits runs atomically
(mrtr_stores.check_runs). Errors are `CheckInputError`, whose message the form shows.
"""

from __future__ import annotations

import hashlib
import json

from flask import request

from mrtr import JSONObject
from web.check.hosts import CheckInputError, is_public
from web.site.deployment import visitor_key
from web.site.services import get_settings

#: The most characters of one form field.
MAX_FIELD = 4096
#: Runs per window for a visitor on this very machine (local mode): in effect, no cap.
LOCAL_RUNS = 1_000_000


def form_field(name: str) -> str:
    value = request.form.get(name, "")
    if len(value) > MAX_FIELD:
        raise CheckInputError(f"The {name.replace('_', ' ')} field is too long.")
    return value


def json_object(text: str, label: str) -> JSONObject | None:
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise CheckInputError(f"{label} must be JSON, for example {{\"env\": \"staging\"}}.") from None
    if not isinstance(value, dict):
        raise CheckInputError(f"{label} must be a JSON object, for example {{\"env\": \"staging\"}}.")
    return value


def late_after(text: str, max_wait: float) -> float | None:
    """The form's late-move wait in seconds (None when empty), within what the page will wait."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= max_wait:
        raise CheckInputError(f"Late move after must be a number of seconds between 0 and {max_wait:g}.")
    return value


def same_site() -> None:
    """A check is started from this app's own form only: another site must not aim a visitor's browser at it."""
    origin = request.headers.get("Origin")
    # Browsers say "null" under this app's no-referrer policy; Sec-Fetch-Site tells cross-site posts apart.
    foreign = origin not in (None, "null") and origin.rstrip("/").lower() != request.host_url.rstrip("/").lower()
    if foreign or request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        raise CheckInputError("Checks start from this page's own form, not from another site.")


def visitor() -> str:
    """Who is asking, as a digest: the run store never holds an address."""
    return hashlib.sha256(visitor_key(request.remote_addr).encode()).hexdigest()[:16]


def run_limit() -> tuple[int, float]:
    """How many runs the visitor may start, and in how many seconds."""
    limit, window = get_settings().check_runs, get_settings().check_window
    if not is_public():
        # local mode: the visitor is this very machine, checking servers on it; a cap protects nobody
        # (one run at a time still holds)
        limit = max(limit, LOCAL_RUNS)
    return limit, window
