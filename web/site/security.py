"""Security headers on every response. Framing is refused everywhere except the embed routes.

A view opts into framing by the allow-list with `allow_framing_by(origins)`, and a response that runs
WebAssembly (the build lesson's in-page checker: its page and its worker script) opts into
`'wasm-unsafe-eval'` with `allow_wasm()`; nothing else changes a header here. The policy has no
'unsafe-inline' and no 'unsafe-eval'.
"""

from __future__ import annotations

import re

from flask import Flask, Response, g

from web.site import inputs

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


def allow_form_posts_to(origins: list[str]) -> None:
    """Let the current page's forms post to the listed origins as well as to this site (the LTI deep-linking
    return page posts its signed answer to the course platform). Malformed origins are dropped."""
    g.form_action = [o.strip().rstrip("/") for o in origins if _ORIGIN.match(o.strip().rstrip("/"))]


def allow_wasm() -> None:
    """Let the current response compile WebAssembly: `'wasm-unsafe-eval'` joins its script-src, and nothing else
    changes (no 'unsafe-eval': JavaScript's eval stays refused). A worker's policy comes from its own script's
    response, so the page and the worker script each opt in."""
    g.wasm_eval = True


def security_headers(frame_ancestors: list[str] | None = None,
                     form_action: list[str] | None = None, *, wasm: bool = False) -> list[tuple[str, str]]:
    """Every security header, in order, for a response framed by `frame_ancestors` (None: by nobody).

    A pure function: the app's after_request hook and the /mcp WSGI entry (web/mcp/routes.py) both send
    exactly these. Cache-Control is a default: a response that sets its own keeps it. `form_action`
    adds origins forms may post to (None: this site only); `wasm` adds 'wasm-unsafe-eval' to script-src.
    """
    ancestors = " ".join(["'self'", *frame_ancestors]) if frame_ancestors is not None else "'none'"
    csp = BASE_CSP if not form_action else BASE_CSP.replace("form-action 'self'",
                                                            " ".join(["form-action 'self'", *form_action]))
    if wasm:
        csp = csp.replace("script-src 'self';", "script-src 'self' 'wasm-unsafe-eval';", 1)
    headers = [("Content-Security-Policy", f"{csp}; frame-ancestors {ancestors}")]
    if frame_ancestors is None:
        headers.append(("X-Frame-Options", "DENY"))
    headers += [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
                ("Cross-Origin-Opener-Policy", "same-origin"), ("Cache-Control", "no-store")]
    return headers


def with_security_headers(headers: list[tuple[str, str]],
                          frame_ancestors: list[str] | None = None) -> list[tuple[str, str]]:
    """`headers` (a WSGI header list) with the security headers set, as the after_request hook sets them."""
    out = list(headers)
    names = {name.lower() for name, _ in out}
    for name, value in security_headers(frame_ancestors):
        if name.lower() in names:
            if name == "Cache-Control":
                continue  # a default only
            out = [(n, value if n.lower() == name.lower() else v) for n, v in out]
        else:
            out.append((name, value))
    return out


def init_app(app: Flask) -> None:
    inputs.init_app(app)  # every page's query parameters and form fields are checked before any view runs

    @app.after_request
    def add_security_headers(response: Response) -> Response:
        for name, value in security_headers(g.get("frame_ancestors"), g.get("form_action"),
                                            wasm=bool(g.get("wasm_eval"))):
            if name == "Cache-Control":
                response.headers.setdefault(name, value)
            else:
                response.headers[name] = value
        return response
