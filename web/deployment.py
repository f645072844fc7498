"""What the app needs to run as one replica of many behind a proxy: whose headers to believe, and its name.

Owns the two outermost WSGI layers: Werkzeug's `ProxyFix`, applied only when `MRTR_TRUSTED_PROXIES` says how
many proxies stand in front (so `request.is_secure`, the classroom's `Secure` cookies and every per-client
limit see the visitor, not the proxy), and the `MRTR-Replica` header on every response, /mcp included, so a
learner or an operator sees which replica answered. It must never trust `X-Forwarded-*` by default: a
client could then choose its own address and escape every per-client limit.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from werkzeug.middleware.proxy_fix import ProxyFix

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

REPLICA_HEADER = "MRTR-Replica"
#: What a replica name may hold once it is a header value: letters, digits and a little punctuation.
_UNSAFE = re.compile(r"[^A-Za-z0-9._:@-]")
_MAX_NAME = 64


def replica_name(configured: str | None, environ: WSGIEnvironment) -> str:
    """The configured name, or this host's name and the port the request reached, made header-safe."""
    name = configured or f"{socket.gethostname()}:{environ.get('SERVER_PORT', '')}".rstrip(":")
    return _UNSAFE.sub("-", name)[:_MAX_NAME] or "replica"


class ReplicaHeader:
    """Adds `MRTR-Replica: <name>` to every response of the wrapped app."""

    def __init__(self, app: WSGIApplication, configured: str | None) -> None:
        self.app = app
        self.configured = configured
        self._names: dict[str, str] = {}  # by port: the default name depends on which port was reached

    def _name(self, environ: WSGIEnvironment) -> str:
        port = str(environ.get("SERVER_PORT", ""))
        name = self._names.get(port)
        if name is None:
            name = self._names[port] = replica_name(self.configured, environ)
        return name

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        header = (REPLICA_HEADER, self._name(environ))

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], object]:
            return start_response(status, [*headers, header], exc_info)

        return self.app(environ, start)


def without_lean_mcp(app: Any) -> None:
    """Serve /mcp through the Flask view instead of the lean WSGI entry (the bench's and tests' comparison):
    the entry under the deployment layers is replaced by the Flask app it falls back to."""
    layer = app.wsgi_app
    while not hasattr(layer.app, "fallback"):
        layer = layer.app
    layer.app = layer.app.fallback


def wrap(app: WSGIApplication, *, trusted_proxies: int, replica: str | None) -> WSGIApplication:
    """The app as a replica serves it: the replica header outermost, then ProxyFix when proxies are trusted."""
    inner: WSGIApplication = app
    if trusted_proxies:
        # Each trusted proxy appends one X-Forwarded-For entry and sets the scheme, host and port it saw.
        inner = ProxyFix(inner, x_for=trusted_proxies, x_proto=trusted_proxies, x_host=trusted_proxies,
                         x_port=trusted_proxies)
    return ReplicaHeader(inner, replica)
