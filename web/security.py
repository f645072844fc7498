"""Security headers on every response. Framing is refused everywhere except the embed routes.

A view opts into framing by the allow-list with `allow_framing_by(origins)`; nothing else
changes a header here. The policy has no 'unsafe-inline' and no 'unsafe-eval'.
"""

from __future__ import annotations

import re

from flask import Flask, Response, g

from web import inputs

BASE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"
)


#: A CSP host-source for frame-ancestors: scheme, host (optionally `*.`-prefixed), optional port.
#: Anything else (spaces, `;`, quotes, paths) could smuggle in another directive, so it is dropped.
_ORIGIN = re.compile(r"\Ahttps?://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?\Z")


def allow_framing_by(origins: list[str]) -> None:
    """Let the listed origins frame the current response (the embed routes only).

    Only well-formed `scheme://host[:port]` origins are kept; the rest are ignored, so a bad
    `MRTR_EMBED_ORIGINS` entry can never widen the policy or inject a directive.
    """
    g.frame_ancestors = [o.strip().rstrip("/") for o in origins if _ORIGIN.match(o.strip().rstrip("/"))]


def init_app(app: Flask) -> None:
    inputs.init_app(app)  # every page's query parameters and form fields are checked before any view runs

    @app.after_request
    def security_headers(response: Response) -> Response:
        origins = g.get("frame_ancestors")
        ancestors = " ".join(["'self'", *origins]) if origins is not None else "'none'"
        response.headers["Content-Security-Policy"] = f"{BASE_CSP}; frame-ancestors {ancestors}"
        if origins is None:
            response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        response.headers.setdefault("Cache-Control", "no-store")
        return response
