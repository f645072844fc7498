"""The LTI 1.3 platforms (course sites) registered with the tool, parsed from `MRTR_LTI_PLATFORMS`.

The setting is either inline JSON or the path of a JSON file; either way it is a list of objects, one per
registration, each with `issuer`, `client_id`, `deployment_ids`, `key_set_url`, `auth_login_url` and
`auth_token_url`; optionally `auth_audience`, and `frame_origins`: the origins the platform shows its
courses on, when they differ from its issuer's (Canvas's issuer is canvas.instructure.com, its courses are on
each school's own host). Every URL must be https, except on loopback hosts (a
platform running beside the tool, as the tests run one), so a platform's keys are never fetched in the
clear over a network. Nothing here is secret: these are the platform's public addresses and identifiers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

REQUIRED = ("issuer", "client_id", "deployment_ids", "key_set_url", "auth_login_url", "auth_token_url")
URL_FIELDS = ("key_set_url", "auth_login_url", "auth_token_url")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class PlatformsError(ValueError):
    """The platform list is unusable; the message says which entry and why."""


@dataclass(frozen=True)
class LtiPlatform:
    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    key_set_url: str
    auth_login_url: str
    auth_token_url: str
    auth_audience: str | None = None
    frame_origins: tuple[str, ...] = ()

    def origins(self) -> tuple[str, ...]:
        """The web origins this platform shows the tool from: its issuer's, its login page's and `frame_origins`."""
        found: list[str] = []
        for url in (self.issuer, self.auth_login_url, *self.frame_origins):
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") and parts.netloc:
                origin = f"{parts.scheme}://{parts.netloc}".lower()
                if origin not in found:
                    found.append(origin)
        return tuple(found)


def _url(name: str, where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PlatformsError(f"{where}: {name} must be a URL")
    parts = urlsplit(value.strip())
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" and host:
        return value.strip()
    if parts.scheme == "http" and host in LOOPBACK:
        return value.strip()
    raise PlatformsError(f"{where}: {name} must be an https URL (http only on loopback); got {value!r}")


def _platform(raw: object, where: str) -> LtiPlatform:
    if not isinstance(raw, dict):
        raise PlatformsError(f"{where}: must be an object")
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise PlatformsError(f"{where}: needs {', '.join(missing)}")
    issuer, client_id = raw["issuer"], raw["client_id"]
    if not isinstance(issuer, str) or not issuer.strip():
        raise PlatformsError(f"{where}: issuer must be a non-empty string")
    if not isinstance(client_id, str) or not client_id.strip():
        raise PlatformsError(f"{where}: client_id must be a non-empty string")
    deployments = raw["deployment_ids"]
    if not isinstance(deployments, list) or not deployments or \
            not all(isinstance(d, str) and d.strip() for d in deployments):
        raise PlatformsError(f"{where}: deployment_ids must be a non-empty list of strings")
    audience = raw.get("auth_audience")
    if audience is not None and not isinstance(audience, str):
        raise PlatformsError(f"{where}: auth_audience must be a string when given")
    urls = {name: _url(name, where, raw[name]) for name in URL_FIELDS}
    frames = raw.get("frame_origins", [])
    if not isinstance(frames, list):
        raise PlatformsError(f"{where}: frame_origins must be a list of origins")
    origins = tuple(_origin(where, value) for value in frames)
    return LtiPlatform(issuer.strip(), client_id.strip(), tuple(d.strip() for d in deployments),
                       urls["key_set_url"], urls["auth_login_url"], urls["auth_token_url"], audience or None, origins)


def _origin(where: str, value: object) -> str:
    """`scheme://host[:port]` and nothing else: it goes into a CSP frame-ancestors list."""
    url = _url("frame_origins", where, value)
    parts = urlsplit(url)
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise PlatformsError(f"{where}: frame_origins entries are origins like https://school.example; got {value!r}")
    return f"{parts.scheme}://{parts.netloc}".lower()


def parse_platforms(name: str, raw: object) -> tuple[LtiPlatform, ...]:
    """`raw` (inline JSON, or a path to a JSON file) as the registered platforms; PlatformsError naming `name`."""
    text = str(raw).strip()
    if not text.startswith(("[", "{")):
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise PlatformsError(f"{name}: neither JSON nor a readable file ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise PlatformsError(f"{name}: not valid JSON") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise PlatformsError(f"{name}: must be a list of platform objects")
    platforms = tuple(_platform(item, f"{name} entry #{n}") for n, item in enumerate(data, 1))
    seen = set()
    for p in platforms:
        if (p.issuer, p.client_id) in seen:
            raise PlatformsError(f"{name}: issuer {p.issuer!r} with client_id {p.client_id!r} is listed twice")
        seen.add((p.issuer, p.client_id))
    return platforms
