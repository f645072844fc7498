"""What the app needs to run as one replica of many behind a proxy: whose headers to believe, and its name.

Owns the two outermost WSGI layers: Werkzeug's `ProxyFix`, applied only when `MRTR_TRUSTED_PROXIES` says how
many proxies stand in front (so `request.is_secure`, the classroom's `Secure` cookies and every per-client
limit see the visitor, not the proxy), and the `MRTR-Replica` header on every response, /mcp included, so a
learner or an operator sees which replica answered. It must never trust `X-Forwarded-*` by default: a
client could then choose its own address and escape every per-client limit.

`MRTR_TRUSTED_PROXIES` is a hop count (`ProxyFix` as configured: the last N entries were written by the N
proxies in front) or the proxies' own addresses and networks: then the headers are believed only from a peer
in that list, and `X-Forwarded-For` is walked from the right past every listed proxy to the first address
that is not one (nginx's `real_ip_recursive`), so a chain of listed proxies works and a forged entry in front
of them does not. `visitor_key` is what every per-visitor limit counts: an IPv4 address, or an IPv6 address's
/64 (one household or server gets a whole /64, so counting single IPv6 addresses would count nothing).

With `MRTR_PROXY_SECRET`, the headers are believed only from a request whose `X-MRTR-Proxy` header carries it
(scripts/cluster.sh makes one at each start and gives it to its nginx alone): a hop count trusts whoever
connects, and on one machine every local process can connect to a replica. The header is removed before the
app sees any request. With `MRTR_PUBLIC_URL`, every absolute address the app writes (`url_for(..., _external=True)`,
`request.host_url`) names that host, whatever `Host` or `X-Forwarded-Host` a request sent; the scheme stays
the request's (https only when a believed proxy said so).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable
from urllib.parse import urlsplit

from werkzeug.middleware.proxy_fix import ProxyFix

from mrtr_settings.environment import ProxyNetwork

if TYPE_CHECKING:
    from _typeshed import OptExcInfo
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask

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

        def start(status: str, headers: list[tuple[str, str]],
                  exc_info: OptExcInfo | None = None) -> Callable[[bytes], object]:
            return start_response(status, [*headers, header], exc_info)

        return self.app(environ, start)


def visitor_key(address: str | None) -> str:
    """Whom a per-visitor limit counts: the IPv4 address, or the /64 an IPv6 address is in (an IPv4 address mapped
    into IPv6 counts as itself)."""
    try:
        parsed = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return address or "unknown"
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


class TrustedPeers:
    """ProxyFix for a list of proxies: believed only when the peer is listed, as many hops as are listed."""

    #: The longest chain of listed proxies believed; beyond it the headers are a client's invention anyway.
    MAX_HOPS = 8

    def __init__(self, app: WSGIApplication, networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]):
        self.app = app
        self.networks = networks
        # ProxyFix per hop count: the scheme, host and port come from the nearest proxy, which sets them.
        # They call through `self.app`, so replacing it (without_lean_mcp) reaches them too.
        self._fixes = [ProxyFix(self._inner, x_for=hops, x_proto=1, x_host=1, x_port=1)
                       for hops in range(1, self.MAX_HOPS + 1)]

    def _inner(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        return self.app(environ, start_response)

    def trusted(self, address: str) -> bool:
        try:
            parsed = ipaddress.ip_address(address.strip())
        except ValueError:
            return False
        if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
            parsed = parsed.ipv4_mapped
        return any(parsed in network for network in self.networks)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not self.trusted(str(environ.get("REMOTE_ADDR", ""))):
            return self.app(environ, start_response)  # not from a listed proxy: no header is believed
        forwarded = [a.strip() for a in str(environ.get("HTTP_X_FORWARDED_FOR", "")).split(",") if a.strip()]
        hops = 1
        while hops < min(len(forwarded), self.MAX_HOPS) and self.trusted(forwarded[-hops]):
            hops += 1  # that entry was written by a listed proxy: look one further left
        return self._fixes[hops - 1](environ, start_response)


class ProxySecret:
    """Believe the proxy headers (through `app`, a ProxyFix or TrustedPeers) only when the request carries the
    shared secret in `X-MRTR-Proxy`; otherwise skip straight to the layer under them. The header never reaches
    the app."""

    ENVIRON_KEY = "HTTP_X_MRTR_PROXY"

    def __init__(self, app: ProxyFix | TrustedPeers, secret: str) -> None:
        self.app = app
        self._secret = secret.encode()

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        given = str(environ.pop(self.ENVIRON_KEY, "")).encode("latin-1", "replace")
        if hmac.compare_digest(given, self._secret):
            return self.app(environ, start_response)
        return self.app.app(environ, start_response)  # the same app, with no forwarded header believed


class PublicHost:
    """Every request names the configured public host (and port), so the addresses the app writes lead there."""

    def __init__(self, app: WSGIApplication, public_url: str) -> None:
        self.app = app
        parts = urlsplit(public_url)
        self.host = parts.netloc
        self.name = parts.hostname or parts.netloc
        self.port = str(parts.port or (443 if parts.scheme == "https" else 80))

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        environ["HTTP_HOST"], environ["SERVER_NAME"], environ["SERVER_PORT"] = self.host, self.name, self.port
        environ.pop("HTTP_X_FORWARDED_HOST", None)
        return self.app(environ, start_response)


@runtime_checkable
class _FallsBack(Protocol):
    """A WSGI entry that hands what it does not serve itself to `fallback` (web.mcp.routes's lean /mcp entry)."""

    fallback: WSGIApplication


def without_lean_mcp(app: Flask) -> None:
    """Serve /mcp through the Flask view instead of the lean WSGI entry (the bench's and tests' comparison):
    the entry under the deployment layers is replaced by the Flask app it falls back to."""
    layer: WSGIApplication = app.wsgi_app
    while isinstance(layer, ReplicaHeader | ProxySecret | TrustedPeers | ProxyFix | PublicHost):
        if isinstance(layer.app, _FallsBack):
            layer.app = layer.app.fallback
            return
        layer = layer.app
    raise ValueError("no lean /mcp entry under the deployment layers")


def wrap(app: WSGIApplication, *, trusted_proxies: int | tuple[ProxyNetwork, ...], replica: str | None,
         proxy_secret: str | None = None, public_url: str | None = None) -> WSGIApplication:
    """The app as a replica serves it: the replica header outermost, then the proxy secret's check, then ProxyFix
    when proxies are trusted, then the public host."""
    inner: WSGIApplication = PublicHost(app, public_url) if public_url else app
    believing: ProxyFix | TrustedPeers | None = None
    if isinstance(trusted_proxies, tuple):
        believing = TrustedPeers(inner, trusted_proxies)
    elif trusted_proxies:
        # Each trusted proxy appends one X-Forwarded-For entry and sets the scheme, host and port it saw.
        believing = ProxyFix(inner, x_for=trusted_proxies, x_proto=trusted_proxies, x_host=trusted_proxies,
                             x_port=trusted_proxies)
    if believing is not None:
        inner = ProxySecret(believing, proxy_secret) if proxy_secret else believing
    return ReplicaHeader(inner, replica)
