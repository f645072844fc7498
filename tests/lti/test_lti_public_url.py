"""With MRTR_PUBLIC_URL set, LTI's absolute addresses (the configuration a platform copies, the launch address the
OIDC login sends the browser back to) name the public site, whatever Host a request sent: a forged Host would
otherwise have a course platform register, or a browser carry its id_token to, another site."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask

from mrtr import FakeClock
from mrtr_stores import lti_sqlite
from tests.lti.platform import Platform
from tests.lti.test_lti import TOOL, _tool_key, lti_config, platform

__all__ = ["platform"]


@pytest.fixture
def app_config(clock: FakeClock, platform: Platform, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(lti_sqlite, "new_private_key", _tool_key)
    return {**lti_config(clock, [platform.tool_entry()]), "MRTR_PUBLIC_URL": TOOL}


def test_the_lti_configuration_names_the_public_url_whatever_host_is_sent(app: Flask) -> None:
    config = app.test_client().get("/lti/config.json", base_url="https://evil.example",
                                   headers={"X-Forwarded-Host": "evil.example"})
    assert config.status_code == 200
    text = config.get_data(as_text=True)
    assert "evil.example" not in text
    body = config.get_json()
    assert body["oidc_initiation_url"] == f"{TOOL}/lti/login" and body["target_link_uri"] == f"{TOOL}/lti/launch"


def test_the_logins_redirect_uri_names_the_public_url_whatever_host_is_sent(app: Flask, platform: Platform) -> None:
    url = urlsplit(platform.login_url())
    response = app.test_client().get(f"{url.path}?{url.query}", base_url="https://evil.example")
    assert response.status_code == 302, response.get_data(as_text=True)
    redirect = parse_qs(urlsplit(response.headers["Location"]).query)["redirect_uri"]
    assert redirect == [f"{TOOL}/lti/launch"]
