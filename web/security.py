"""Security headers on every response. Framing is refused everywhere except the embed routes.

A view opts into framing by the allow-list with `allow_framing_by(origins)`; nothing else
changes a header here. The policy has no 'unsafe-inline' and no 'unsafe-eval'.
"""

from __future__ import annotations

from flask import Flask, Response, g

BASE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"
)


def allow_framing_by(origins: list[str]) -> None:
    """Let the listed origins frame the current response (the embed routes only)."""
    g.frame_ancestors = origins


def init_app(app: Flask) -> None:
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
