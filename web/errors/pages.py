"""Error pages for people: no traceback or exception text ever reaches the browser.

htmx requests get a small fragment (the same message, without the layout); everything else gets a
full page. The JSON-RPC endpoint (`/mcp`) answers its own errors, so its HTTP errors pass through
untouched here.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException, InternalServerError

from web.site import htmx
from web.site.inputs import InputRefused

log = logging.getLogger("mrtr.web")


def _is_protocol_endpoint() -> bool:
    return request.blueprint == "mcp" or request.path == "/mcp" or request.path.startswith("/mcp/")


def _page(code: int, title: str, message: str) -> Response:
    # Inside another site's iframe (the embeddable quiz) an error page has no site menu around it.
    page = "embed/error.html" if request.path.startswith("/embed/") else "errors/error.html"
    return htmx.render(page, "errors/_error.html", status=code, code=code, title=title, message=message)


def _limit() -> str:
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    return f"at most {int(limit):,} bytes" if limit else "a size limit"


def unavailable(message: str) -> Response:
    """503: a shared store is away for a moment; nothing was done, and a retry may work."""
    response = _page(503, "Unavailable for a moment", message)
    response.headers["Retry-After"] = "5"
    return response


def init_app(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response | HTTPException:
        if _is_protocol_endpoint() or exc.code is None or exc.code < 400:
            return exc
        if exc.code == 503:
            return unavailable(exc.description or "Try again in a few seconds.")
        if exc.code >= 500:
            return server_error(exc)
        if exc.code == 404:
            return _page(404, "Page not found", "There is no page at this address. The course home lists "
                                                "every lesson.")
        if isinstance(exc, InputRefused):  # web/site/inputs.py: the message says which field and why
            return _page(exc.code, exc.title, exc.description or "The request could not be handled as sent.")
        if exc.code == 413:
            return _page(413, "That request is too large", "The form or upload is larger than this site accepts "
                                                           f"({_limit()}). Nothing was kept.")
        return _page(exc.code, exc.name, "The request could not be handled as sent.")

    @app.errorhandler(InternalServerError)
    def server_error(exc: HTTPException) -> Response | HTTPException:
        original = getattr(exc, "original_exception", None)
        if original is not None:
            log.error("unhandled error on %s %s", request.method, request.path, exc_info=original)
        if _is_protocol_endpoint():
            return InternalServerError()
        return _page(500, "Something went wrong", "The server could not finish this request. It has been "
                                                  "logged; reloading the page usually helps.")
