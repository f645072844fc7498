"""Which servers /check may connect to, and the one address a run connects to: the checker's guard against
server-side request forgery.

Only loopback targets, unless `MRTR_CHECK_HOSTS` lists more (comma-separated host names, IP addresses or CIDR
networks, on the ports of `MRTR_CHECK_PORTS`). The host is resolved and every address it resolves to is vetted;
the run then connects to exactly the vetted address, so DNS cannot swap it afterwards (and redirects are never
followed: moves.targets.http). Link-local, multicast and unspecified addresses are refused even for a listed
name, cloud metadata addresses always. `MRTR_PUBLIC=1` (a public deployment) turns even loopback off unless
`MRTR_CHECK_HOSTS` lists it. (`MRTR_CHECK_RESOLVER`, a `(host, port) -> [addresses]` callable, is a test seam
only.) This module reads the request only to tell whether the visitor is this very machine; it never connects.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import request

from web.site.services import get_settings


class CheckInputError(ValueError):
    """The form cannot be run as sent (bad URL, a host not allowed, ...): HTTP 400 with this message."""


def _loopback(value: str | None) -> bool:
    name = (value or "").strip().strip("[]").lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_public() -> bool:
    """Whether this deployment is public, so that even loopback targets would be SSRF.

    `MRTR_PUBLIC=1` says so. Without it, the page still counts as public unless the visitor is this very
    machine: a request from another address, or one that names a host other than loopback (the app behind
    a reverse proxy, reached by its public name), gets no loopback targets, whatever an operator forgot to set.
    """
    if get_settings().public:
        return True
    try:
        host = urlsplit(f"//{request.host}").hostname
    except ValueError:
        return True
    return not (_loopback(host) and _loopback(request.remote_addr))


#: Cloud metadata services: never checked, whatever MRTR_CHECK_HOSTS says (AWS, GCP and Azure on 169.254.169.254,
#: ECS task metadata, Alibaba, AWS over IPv6).
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200", "fd00:ec2::254"))
#: Ports a listed host may be checked on unless MRTR_CHECK_PORTS lists others.
DEFAULT_PORTS = frozenset({80, 443})

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _internal(address: Address) -> bool:
    """Addresses a listed *name* may not lead to unless the address itself is listed: loopback, private,
    link-local, shared (CGNAT), multicast, reserved and unspecified ones."""
    shared = isinstance(address, ipaddress.IPv4Address) and address in ipaddress.ip_network("100.64.0.0/10")
    return (address.is_loopback or address.is_private or address.is_link_local or address.is_multicast
            or address.is_reserved or address.is_unspecified or shared)


@dataclass(frozen=True)
class HostRules:
    """Which servers /check may connect to (MRTR_CHECK_HOSTS, MRTR_CHECK_PORTS, MRTR_PUBLIC).

    Loopback, on any port, only for a visitor on this very machine of a deployment that is not public. Else
    a target must be listed: an address or network (CIDR) admits its addresses, a name admits what it
    resolves to unless that is an internal address (loopback, private, link-local: DNS can point anywhere, so
    such an address must be listed itself), and only on a listed port. Metadata addresses are never admitted.
    """

    names: frozenset[str]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    loopback: bool
    ports: frozenset[int] = DEFAULT_PORTS

    @classmethod
    def from_config(cls, hosts: str, public: bool, ports: str = "") -> HostRules:
        names: set[str] = set()
        networks = []
        for entry in (e.strip().lower() for e in str(hosts or "").split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                names.add(entry.rstrip("."))
        allowed = frozenset(int(p) for p in str(ports or "").replace(" ", "").split(",") if p.isdigit()
                            and 0 < int(p) < 65536) or DEFAULT_PORTS
        return cls(frozenset(names), tuple(networks), loopback=not public, ports=allowed)

    @property
    def any_allowed(self) -> bool:
        return self.loopback or bool(self.names) or bool(self.networks)

    def listed(self, address: Address) -> bool:
        return any(address.version == net.version and address in net for net in self.networks)

    def allows(self, host: str, address: Address, port: int | None = None) -> bool:
        if address in METADATA_ADDRESSES:
            return False
        if address.is_loopback and self.loopback:
            return True  # this machine's own servers, on any port, for a visitor at this machine
        if port is not None and port not in self.ports:
            return False
        if self.listed(address):
            return True
        return host in self.names and not _internal(address)


def rules() -> HostRules:
    settings = get_settings()
    return HostRules.from_config(settings.check_hosts, is_public(), settings.check_ports)


Resolver = Callable[[str, int], list[str]]


def resolve_host(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def vet_url(url: str, host_rules: HostRules, resolve: Resolver = resolve_host) -> tuple[str, str]:
    """The URL to check and the one address to connect to; raises CheckInputError when not allowed."""
    url = url.strip()
    if not url:
        raise CheckInputError("Give the URL of the server's MCP endpoint, for example http://127.0.0.1:5000/mcp.")
    if len(url) > 2048:
        raise CheckInputError("That URL is too long.")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise CheckInputError("That URL cannot be read (check the port).") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CheckInputError("The URL must start with http:// or https:// and name a host.")
    if parts.username or parts.password:
        raise CheckInputError("Put tokens in the token fields, never in the URL.")
    if not host_rules.any_allowed:
        raise CheckInputError("This deployment checks no servers: its operator has not listed any in "
                              "MRTR_CHECK_HOSTS.")
    host = parts.hostname.lower().rstrip(".")
    try:
        addresses = [ipaddress.ip_address(a.split("%")[0]) for a in resolve(host, port)]
    except (OSError, UnicodeError, ValueError):
        raise CheckInputError(f"The host {host!r} could not be resolved.") from None
    if not addresses:
        raise CheckInputError(f"The host {host!r} could not be resolved.")
    addresses = [a.ipv4_mapped if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped else a for a in addresses]
    refused = [a for a in addresses if not host_rules.allows(host, a, port)]
    if refused:
        where = ("servers on this machine (loopback addresses)" if host_rules.loopback
                 else "the hosts its operator listed")
        if all(host_rules.allows(host, a) for a in refused):
            ports = ", ".join(str(p) for p in sorted(host_rules.ports))
            raise CheckInputError(f"This lab only checks {where} on port {ports}; port {port} is not allowed.")
        raise CheckInputError(f"This lab only checks {where}; {host!r} resolves to {refused[0]}, which is not allowed.")
    return parts.geturl(), str(addresses[0])
