"""The one place that reads htmx's `HX-*` request headers and writes its response headers.

It keeps `htmx-flask` behind three functions, so a change of htmx version (htmx 4 renames
headers) is an edit here and nowhere else. Views never look at `HX-*` headers themselves.
"""

from __future__ import annotations

from collections.abc import Mapping

from flask import Flask, Response, render_template
from htmx_flask import Htmx, make_response  # type: ignore[import-untyped]  # ships no type hints
from htmx_flask import request as htmx_request


def init_app(app: Flask) -> None:
    Htmx(app)


def wants_fragment() -> bool:
    """True for an htmx swap; false for a full page load, a boosted link, a history restore or a no-JS post.

    A boosted link (`hx-boost`) swaps the whole body, so it needs the full page, not a fragment.
    """
    headers = htmx_request.htmx
    return bool(headers) and not headers.boosted and not headers.history_restore_request


def render(page: str, fragment: str, given: Mapping[str, object] | None = None, /, *, status: int = 200,
           push_url: str | None = None, trigger: str | Mapping[str, object] | None = None, **more: object) -> Response:
    """Render the fragment for htmx, the full page otherwise; either way `Vary: HX-Request`. The context is
    `given` (a view's context, built once) and `more`."""
    context = {**(given or {}), **more}
    if wants_fragment():
        response: Response = make_response(render_template(fragment, **context), status, push_url=push_url or None,
                                 trigger=trigger)
    else:
        response = make_response(render_template(page, **context), status)
    response.headers.add("Vary", "HX-Request")
    return response
