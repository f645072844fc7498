"""The lab's out-of-band page: where a URL-mode question (the `connect` tool) sends the user to enter an API key.

The spec (2026-07-28, elicitation "URL mode") says a form must never collect a secret: the server sends the user to a
page of its own instead, and learns from its own state, on the retry, whether the page was finished. This blueprint
is that page. GET shows the form for a reference the server opened (mrtr_stores/completions.py); POST takes the key,
checks only that it looks like one, and records in the completion store that the page was finished.

What it must never do: keep, log, show back or send over MCP the key the learner typed (it is read, checked and
dropped; a refused one is not echoed into the form), or finish a reference the server never opened (the store
refuses it, keeping nothing). The address carries only the random reference: no user, no credential.
"""

from __future__ import annotations

import string

from flask import Blueprint, Response, make_response, render_template, request

from mrtr import StoreUnavailable
from mrtr_stores.completions import CompletionStore
from web.site.services import get_services

bp = Blueprint("out_of_band", __name__)

#: What an API key may be: printable, no spaces, this long.
KEY_LENGTH = (8, 200)
_KEY_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)
AWAY = "The lab cannot reach its store right now; try again shortly."


def key_problem(key: str) -> str | None:
    """Why `key` is not an API key the lab takes, in words that never repeat it; None when it is one."""
    low, high = KEY_LENGTH
    if not key:
        return "Enter the API key."
    if not low <= len(key) <= high:
        return f"An API key here is {low} to {high} characters long."
    if not set(key) <= _KEY_CHARACTERS:
        return "An API key here is letters, digits and punctuation, with no spaces."
    return None


def receive(store: CompletionStore, ref: str, key: str, now: float) -> str | None:
    """Take the key sent on the page for `ref`: None when the page is now finished, else why not (for the page).
    The key is only checked; it goes nowhere and is dropped when this returns."""
    problem = key_problem(key)
    if problem is not None:
        return problem
    return None if store.complete(ref, now) else "expired"


def _page(ref: str, state: str, status: int = 200, problem: str = "") -> Response:
    response = make_response(render_template("out_of_band/page.html", ref=ref, state=state, problem=problem), status)
    # The page carries a reference and takes a secret: never cached, never sent on as a referrer.
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.route("/out-of-band/<ref>", methods=["GET", "POST"])
def page(ref: str) -> Response:
    """The form while the reference waits; a POST there sends the key. Otherwise what became of the link."""
    services = get_services()
    store, now = services.completions, services.server.clock()
    try:
        if store.is_open(ref, now):
            if request.method == "GET":
                return _page(ref, "open")
            problem = receive(store, ref, request.form.get("key", ""), now)
            if problem is None:
                return _page(ref, "done")
            return _page(ref, "unknown", 404) if problem == "expired" else _page(ref, "open", 422, problem)
        return _page(ref, "done") if store.is_complete(ref, now) else _page(ref, "unknown", 404)
    except StoreUnavailable:
        return _page(ref, "away", 503, AWAY)
