"""One replica of many: every response names its replica, and X-Forwarded-* is believed only from trusted proxies."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask, request

from web.site.deployment import REPLICA_HEADER, replica_name

FORWARDED = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "lab.example"}
MODERN_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}}


@pytest.fixture
def make_app(make_app: Callable[..., Flask]) -> Callable[..., Flask]:
    """tests/conftest.py's make_app, each app with a view /_seen that shows what every view sees of the visitor."""

    def make(**config: Any) -> Flask:
        app = make_app(**config)

        @app.get("/_seen")
        def seen() -> str:
            return f"{request.remote_addr} {request.scheme} {request.host}"

        return app

    return make


@pytest.mark.parametrize("path", ["/", "/playground", "/no-such-page", "/static/css/site.css"])
def test_every_page_names_its_replica(make_app: Callable[..., Flask], path: str) -> None:
    app = make_app(MRTR_REPLICA_NAME="replica-a")
    with app.test_client().get(path) as response:  # a static file's body is a file: close it
        assert response.headers[REPLICA_HEADER] == "replica-a"


def test_mcp_names_its_replica_too(make_app: Callable[..., Flask]) -> None:
    """/mcp is served beside Flask (web/mcp/routes.py WsgiEntry), so the header must come from outside both."""
    app = make_app(MRTR_REPLICA_NAME="replica-b")
    response = app.test_client().post("/mcp", json=MODERN_CALL, headers={
        "Authorization": "Bearer bob-token", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    assert response.status_code == 200
    assert response.headers[REPLICA_HEADER] == "replica-b"
    refused = app.test_client().post("/mcp", data=b"{not json", headers={"Content-Type": "application/json"})
    assert refused.status_code >= 400 and refused.headers[REPLICA_HEADER] == "replica-b"


def test_the_default_name_is_the_host_and_port_and_names_are_header_safe() -> None:
    assert replica_name(None, {"SERVER_PORT": "8101"}).endswith(":8101")
    assert replica_name("a b\r\nSet-Cookie: x", {}) == "a-b--Set-Cookie:-x"
    assert len(replica_name("r" * 500, {})) == 64


def test_forwarded_headers_are_ignored_unless_proxies_are_trusted(make_app: Callable[..., Flask]) -> None:
    client = make_app().test_client()
    seen = client.get("/_seen", headers=FORWARDED, environ_base={"REMOTE_ADDR": "127.0.0.1"}).get_data(as_text=True)
    assert seen == "127.0.0.1 http localhost"


def test_a_trusted_proxy_gives_the_visitors_address_scheme_and_host(make_app: Callable[..., Flask]) -> None:
    client = make_app(MRTR_TRUSTED_PROXIES=1).test_client()
    seen = client.get("/_seen", headers=FORWARDED, environ_base={"REMOTE_ADDR": "127.0.0.1"}).get_data(as_text=True)
    assert seen == "203.0.113.9 https lab.example"
    # A client that forges its own X-Forwarded-For in front of the proxy's entry is not believed: only the
    # entry the one trusted proxy appended counts.
    forged = {**FORWARDED, "X-Forwarded-For": "10.0.0.1, 203.0.113.9"}
    assert client.get("/_seen", headers=forged).get_data(as_text=True).startswith("203.0.113.9 ")


def _host_cookie(app: Flask, headers: dict[str, str]) -> str:
    response = app.test_client().post("/class/start", headers=headers)
    assert response.status_code == 201
    cookies = [v for k, v in response.headers.items() if k == "Set-Cookie"]
    assert cookies
    return cookies[0]


def test_class_cookies_are_secure_only_behind_a_trusted_https_proxy(make_app: Callable[..., Flask]) -> None:
    assert "Secure" not in _host_cookie(make_app(), FORWARDED)
    assert "Secure" in _host_cookie(make_app(MRTR_TRUSTED_PROXIES=1), FORWARDED)
    plain = {**FORWARDED, "X-Forwarded-Proto": "http"}
    assert "Secure" not in _host_cookie(make_app(MRTR_TRUSTED_PROXIES=1), plain)


def test_listed_proxies_are_believed_only_from_their_own_addresses(make_app: Callable[..., Flask]) -> None:
    """MRTR_TRUSTED_PROXIES as addresses and networks: a listed peer's headers count, anyone else's do not."""
    client = make_app(MRTR_TRUSTED_PROXIES="10.0.0.5, 192.0.2.0/24").test_client()
    listed = client.get("/_seen", headers=FORWARDED, environ_base={"REMOTE_ADDR": "192.0.2.77"})
    assert listed.get_data(as_text=True) == "203.0.113.9 https lab.example"
    stranger = client.get("/_seen", headers=FORWARDED, environ_base={"REMOTE_ADDR": "198.51.100.1"})
    assert stranger.get_data(as_text=True) == "198.51.100.1 http localhost"


def test_a_chain_of_listed_proxies_is_walked_past_but_a_forged_entry_in_front_is_not(
        make_app: Callable[..., Flask]) -> None:
    client = make_app(MRTR_TRUSTED_PROXIES="10.0.0.5,10.0.0.6").test_client()
    # The visitor forged 1.2.3.4; the TLS proxy (10.0.0.6) appended the visitor; nginx (10.0.0.5) appended 10.0.0.6.
    chain = {**FORWARDED, "X-Forwarded-For": "1.2.3.4, 203.0.113.9, 10.0.0.6"}
    seen = client.get("/_seen", headers=chain, environ_base={"REMOTE_ADDR": "10.0.0.5"}).get_data(as_text=True)
    assert seen.startswith("203.0.113.9 https ")


@pytest.mark.parametrize("value", ["10.0.0.300", "proxy.example", "10.0.0.0/33", " , "])
def test_an_unusable_proxy_list_is_refused_at_start_up_by_name(value: str) -> None:
    from mrtr_settings.environment import ConfigError, read_settings

    with pytest.raises(ConfigError, match="MRTR_TRUSTED_PROXIES"):
        read_settings({"MRTR_TRUSTED_PROXIES": value})


def test_ipv6_visitors_are_counted_per_64_and_ipv4_per_address() -> None:
    from web.site.deployment import visitor_key

    assert visitor_key("2001:db8:1:2:aaaa::1") == visitor_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert visitor_key("2001:db8:1:3::1") != visitor_key("2001:db8:1:2::1")
    assert visitor_key("203.0.113.9") != visitor_key("203.0.113.10")
    assert visitor_key("::ffff:203.0.113.9") == "203.0.113.9"


def test_class_limits_count_an_ipv6_visitors_whole_64(make_app: Callable[..., Flask]) -> None:
    """Three classes per visitor: the fourth from another address of the same /64 is refused."""
    client = make_app(MRTR_TRUSTED_PROXIES=1).test_client()
    statuses = [client.post("/class/start", headers={"X-Forwarded-For": f"2001:db8:7:7::{i}"}).status_code
                for i in range(1, 5)]
    other = client.post("/class/start", headers={"X-Forwarded-For": "2001:db8:7:8::1"}).status_code
    assert statuses == [201, 201, 201, 429] and other == 201


SECRET = "proxy-secret-0123456789"


def test_with_a_proxy_secret_only_the_request_that_carries_it_is_believed(make_app: Callable[..., Flask]) -> None:
    """A hop count trusts whoever connects, and on one machine any local process can reach a replica: with
    MRTR_PROXY_SECRET the forwarded headers count only beside the secret nginx alone was given."""
    app = make_app(MRTR_TRUSTED_PROXIES=1, MRTR_PROXY_SECRET=SECRET)

    @app.get("/_proxy_header")
    def proxy_header() -> str:
        return request.headers.get("X-MRTR-Proxy", "none")

    client = app.test_client()
    local = {"REMOTE_ADDR": "127.0.0.1"}
    for forged in ({}, {"X-MRTR-Proxy": "a guess"}, {"X-MRTR-Proxy": SECRET[:-1]}):
        seen = client.get("/_seen", headers={**FORWARDED, **forged}, environ_base=local).get_data(as_text=True)
        assert seen == "127.0.0.1 http localhost", forged
    seen = client.get("/_seen", headers={**FORWARDED, "X-MRTR-Proxy": SECRET}, environ_base=local)
    assert seen.get_data(as_text=True) == "203.0.113.9 https lab.example"
    assert client.get("/_proxy_header", headers={"X-MRTR-Proxy": SECRET}).get_data(as_text=True) == "none"
    assert "Secure" not in _host_cookie(app, FORWARDED)
    assert "Secure" in _host_cookie(app, {**FORWARDED, "X-MRTR-Proxy": SECRET})


def test_absolute_addresses_name_the_public_url_whatever_host_is_sent(make_app: Callable[..., Flask]) -> None:
    """The embed snippet, oEmbed, /check's own address and every url_for(_external=True) start at
    MRTR_PUBLIC_URL; Host and X-Forwarded-Host (even from a trusted proxy) no longer choose it."""
    app = make_app(MRTR_PUBLIC_URL="http://lab.example.org:8080", MRTR_TRUSTED_PROXIES=1)
    client = app.test_client()
    forged = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}
    assert client.get("/_seen", headers=forged).get_data(as_text=True).endswith(" lab.example.org:8080")
    quiz = "http://lab.example.org:8080/quiz/when-the-server-needs-input"
    for path in ("/quiz/when-the-server-needs-input", "/check", f"/oembed?url={quiz}&format=json"):
        page = client.get(path, headers=forged)
        text = page.get_data(as_text=True).replace("\\/", "/")
        assert page.status_code == 200 and "evil.example" not in text and "http://lab.example.org:8080/" in text, path


def test_without_a_public_url_the_development_server_keeps_the_host_it_was_reached_by(
        make_app: Callable[..., Flask]) -> None:
    seen = make_app().test_client().get("/_seen", headers={"Host": "127.0.0.1:5001"}).get_data(as_text=True)
    assert seen.endswith(" 127.0.0.1:5001")


def test_a_public_deployment_without_a_public_url_says_so_at_start_up(
        make_app: Callable[..., Flask], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mrtr.web")
    make_app(MRTR_PUBLIC="1")
    assert any("without MRTR_PUBLIC_URL" in r.getMessage() for r in caplog.records)
    caplog.clear()
    make_app(MRTR_PUBLIC="1", MRTR_PUBLIC_URL="https://lab.example.org")
    assert not any("MRTR_PUBLIC_URL" in r.getMessage() for r in caplog.records)
