"""A measurement prototype, not shipped: POST /mcp served beside Flask's dispatch, through web/mcp.py itself.

`wrap(app)` returns a WSGI callable that hands everything except `POST /mcp` to the Flask app
untouched, and serves `POST /mcp` by calling web/mcp.py's own view function (`endpoint`, so the
one HTTP adapter decides everything, the legacy sessions and SSE streams included) under a
minimal request context, then runs the app's own `after_request` functions (security headers,
compression) on the response. What it skips is Flask's per-request machinery around the view:
the full RequestContext (session, URL adapter, flashes), URL matching, signals and teardown.

It binds Flask's context variables directly (`flask.globals._cv_app` / `_cv_request`), which is
private API: fine for measuring what the framework costs per request, not for production. The
design that would ship is in bench/RESULTS.md ("A lean /mcp path"): web/mcp.py's checks take a
small request object instead of `flask.request`, so the Flask view and a lean WSGI entry are two
thin callers of one function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

from flask import Flask, Request
from flask.globals import _cv_app, _cv_request

from web import mcp

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def wrap(app: Flask) -> WSGIApp:
    flask_app = app.wsgi_app
    after = list(reversed(app.after_request_funcs.get(None, [])))
    globals_class = app.app_ctx_globals_class

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/mcp" or environ.get("REQUEST_METHOD") != "POST":
            return flask_app(environ, start_response)
        request = Request(environ)
        request.max_content_length = app.config.get("MAX_CONTENT_LENGTH")
        app_token = _cv_app.set(SimpleNamespace(app=app, g=globals_class()))  # type: ignore[arg-type]
        request_token = _cv_request.set(SimpleNamespace(request=request))  # type: ignore[arg-type]
        try:
            response = mcp.endpoint()
            for function in after:
                response = function(response)
            return response(environ, start_response)
        finally:
            _cv_request.reset(request_token)
            _cv_app.reset(app_token)

    return serve


def create_app() -> WSGIApp:
    """For a server's factory option: `granian --interface wsgi --factory bench.lean_mcp:create_app`."""
    from app import create_app as create_flask_app

    return wrap(create_flask_app())
