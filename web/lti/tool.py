"""The LTI tool itself: the registered platforms as pylti1p3's configuration, the tool's key pair, its LTI store
and the platforms' key sets, built once per app on first use (`get_tool`); and the one HTTP session every call to a
platform goes through (`NoRedirects`).

What it must never do: generate a key or open the LTI store when no platform is registered (`get_tool` answers
None and the views answer 404), or let a platform's response send the tool to another address.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import requests
from flask import current_app
from pylti1p3.registration import Registration
from pylti1p3.tool_config.dict import ToolConfDict

from mrtr import JSONObject
from mrtr_settings.lti_platforms import LtiPlatform
from mrtr_settings.stores import open_lti
from mrtr_stores.lti import LtiStore, public_pem
from web.lti.keys import KeySetCache
from web.lti.launch_data import StoreLaunchData
from web.site.services import get_settings

#: Where the tool is kept in `app.extensions`.
EXTENSION = "mrtr.lti"
#: Seconds the tool waits for a platform (keys, token, score) before giving up for now.
PLATFORM_TIMEOUT = 5.0


class NoRedirects(requests.Session):
    """Every call the tool makes to a platform: a time limit, and a redirect is an error, so keys come from
    the registered key set URL and scores go to the line item, never to wherever a response points."""

    def __init__(self) -> None:
        super().__init__()
        self.max_redirects = 0
        self.headers["User-Agent"] = "MRTR Lab LTI tool"

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # requests' own parameters, passed on
        kwargs.setdefault("timeout", PLATFORM_TIMEOUT)
        return super().request(*args, **kwargs)


@dataclass
class LtiTool:
    platforms: tuple[LtiPlatform, ...]
    conf: ToolConfDict
    db: LtiStore
    #: The platforms' key sets, fetched once and kept (web/lti/keys.py): a forged launch fetches nothing.
    key_sets: KeySetCache = field(default_factory=KeySetCache)

    def storage(self) -> StoreLaunchData:
        return StoreLaunchData(self.db)

    def registration(self, issuer: str, client_id: str) -> Registration:
        registration: Registration = self.conf.find_registration_by_params(issuer, client_id)  # untyped there
        return registration

    def origins(self) -> list[str]:
        return sorted({o for p in self.platforms for o in p.origins()})


_build_lock = threading.Lock()


def get_tool() -> LtiTool | None:
    """The tool for this app, built on first use; None when no platform is registered."""
    platforms = get_settings().lti_platforms
    if not platforms:
        return None
    tool: LtiTool | None = current_app.extensions.get(EXTENSION)
    if tool is not None:
        return tool
    with _build_lock:
        tool = current_app.extensions.get(EXTENSION)
        if tool is None:
            db = open_lti(get_settings(), current_app.config.get("LTI_CLOCK"))  # the clock: a test seam
            tool = LtiTool(platforms, _tool_conf(platforms, db.private_key()), db, KeySetCache(db.clock))
            current_app.extensions[EXTENSION] = tool
    return tool


def _tool_conf(platforms: tuple[LtiPlatform, ...], private: str) -> ToolConfDict:
    """pylti1p3's configuration of the registered platforms, each signed for with the tool's one key pair."""
    public = public_pem(private)
    by_issuer: dict[str, list[JSONObject]] = {}
    for p in platforms:
        by_issuer.setdefault(p.issuer, []).append({
            "default": not by_issuer.get(p.issuer),  # a login without client_id: the first one
            "client_id": p.client_id, "auth_login_url": p.auth_login_url, "auth_token_url": p.auth_token_url,
            "auth_audience": p.auth_audience, "key_set_url": p.key_set_url, "key_set": None,
            "deployment_ids": list(p.deployment_ids)})
    conf = ToolConfDict(by_issuer)  # type: ignore[arg-type]  # its TypedDict is narrower than JSON
    for p in platforms:
        conf.set_private_key(p.issuer, private, client_id=p.client_id)
        conf.set_public_key(p.issuer, public, client_id=p.client_id)
    return conf
