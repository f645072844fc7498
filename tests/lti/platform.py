"""A course platform for the LTI tests, built on `lti1p3platform` (a platform implementation written by others).

Its browser-facing half (OIDC login initiation, the signed launch, deep-linking validation) is driven directly
through the library's core classes; its service half (the key set, the OAuth2 token endpoint, the AGS score
endpoint) is a real HTTP server on 127.0.0.1 that the tool calls, stopped by the fixture that starts it. For a
real browser (tests/browser), that server also answers the tool's auth redirect once `browser_launch` is set:
with a page holding the signed launch form, as a platform's page posts it.
"""

from __future__ import annotations

import html
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration

CLIENT_ID = "mrtr-client-1"
DEPLOYMENT_ID = "deployment-1"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


def new_key_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


#: The platforms' key pair, made once per process: a 2048-bit RSA key takes 40-200 ms to make, every test starts a
#: platform, and each test has one platform, so none can mistake another's key for its own. A key the platform does
#: not hold (a forged launch) still comes from new_key_pair().
platform_key_pair = cache(new_key_pair)


class PlatformConf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self._registration


class _Request:
    """What lti1p3platform reads of the browser's request: the query the tool redirected it with."""

    def __init__(self, get_data: dict[str, str]) -> None:
        self.get_data = get_data
        self.form_data: dict[str, str] = {}


class _Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> str:
        return url


class _Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return launch_data


class Platform:
    """One registration of the tool (client id, deployment), with the score endpoint's record of what it got."""

    def __init__(self, base: str, tool_base: str) -> None:
        self.base = base
        self.private_key, self.public_key = platform_key_pair()
        self.registration = (Registration().set_iss(base).set_client_id(CLIENT_ID).set_deployment_id(DEPLOYMENT_ID)
                             .set_oidc_login_url(f"{tool_base}/lti/login").set_launch_url(f"{tool_base}/lti/launch")
                             .set_deeplink_launch_url(f"{tool_base}/lti/launch")
                             .set_platform_public_key(self.public_key).set_platform_private_key(self.private_key))
        self.conf = PlatformConf(registration=self.registration)
        self.scores: list[dict[str, Any]] = []
        self.down = False  # the score endpoint answers 503 while True
        self.token_requests = 0
        self.jwks_fetches = 0
        self.jwks_cache_control: str | None = None  # the key set's Cache-Control header, if any
        self.jwks_delay = 0.0  # seconds the key set URL takes to answer (a slow platform)
        #: (the tool's launch URL, the activity) a browser's auth request is answered with; None: a 404
        self.browser_launch: tuple[str, str] | None = None

    def tool_entry(self, **changes: Any) -> dict[str, Any]:
        """This platform as the tool's MRTR_LTI_PLATFORMS lists it."""
        entry = {"issuer": self.base, "client_id": CLIENT_ID, "deployment_ids": [DEPLOYMENT_ID],
                 "key_set_url": f"{self.base}/jwks", "auth_login_url": f"{self.base}/auth",
                 "auth_token_url": f"{self.base}/token"}
        return {**entry, **changes}

    @property
    def lineitem(self) -> str:
        return f"{self.base}/lineitems/1/lineitem"

    def login_url(self, hint: str = "resource-1", user: str = "learner-1") -> str:
        login = _Login(None, self.conf)
        login.set_lti_message_hint(hint=hint)
        return login.prepare_preflight_url(user)

    def launch(self, auth_redirect: str, *, user: str = "learner-1", item: str | None = None, ags: bool = True,
               deep_link: bool = False, expires_in: int = 300) -> dict[str, Any]:
        """The platform's answer to the tool's auth redirect: the signed id_token and the state, to post."""
        query = dict(parse_qsl(urlsplit(auth_redirect).query))
        message = _Launch(_Request(query), self.conf)
        message.set_user_data(user, ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"])
        message.set_resource_link_claim("resource-1")
        message.set_id_token_expiration(expires_in)
        if item is not None:
            message.set_custom_parameters_claim({"mrtr_item": item})
        if ags:
            message.set_ags(f"{self.base}/lineitems", self.lineitem, allow_creating_lineitems=False)
        if deep_link:
            message.set_dl(f"{self.base}/deep-link-return", title="Pick", accept_types={"ltiResourceLink"})
        result: dict[str, Any] = message.lti_launch()
        return result

    def sign(self, payload: dict[str, Any], private_key: str | None = None, kid: str | None = None) -> str:
        """A launch id_token with the platform's kid (or `kid`), signed by `private_key` (default: the platform's
        own)."""
        return Registration.encode_and_sign(payload, private_key or self.private_key,
                                            headers={"kid": kid or self.registration.get_kid()})

    def deep_link_items(self, jwt: str) -> list[dict[str, Any]]:
        """The content items of the tool's deep-linking response, verified with the tool's published key."""
        return self.conf.validate_deeplinking_resp({"JWT": jwt})


def _handler(platform: Platform) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures, not access logs
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_GET(self) -> None:
            if self.path == "/jwks":
                platform.jwks_fetches += 1
                time.sleep(platform.jwks_delay)
                control = platform.jwks_cache_control
                self._send(200, platform.conf.get_jwks(), {"Cache-Control": control} if control else None)
            elif self.path.startswith("/auth?") and platform.browser_launch is not None:
                launch_url, item = platform.browser_launch
                data = platform.launch(platform.base + self.path, item=item)
                fields = "".join(f'<input type="hidden" name="{name}" value="{html.escape(data[name])}">'
                                 for name in ("id_token", "state"))
                page = (f'<!doctype html><html lang="en"><title>Course</title><form method="post" '
                        f'action="{html.escape(launch_url)}">{fields}<button>Open the activity</button></form></html>')
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif self.path == "/moved-jwks":  # a key set URL that redirects elsewhere
                self._send(302, {}, {"Location": f"{platform.base}/jwks"})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            if self.path == "/token":
                platform.token_requests += 1
                form = dict(parse_qsl(self._body().decode()))
                try:
                    self._send(200, platform.conf.get_access_token(form))
                except Exception as exc:  # the platform refuses a bad client assertion
                    self._send(400, {"error": type(exc).__name__})
            elif self.path == "/lineitems/1/lineitem/scores":
                body = self._body()
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                if platform.down:
                    self._send(503, {"error": "down"})
                elif not platform.conf.validate_token(token, allowed_scopes=[SCORE_SCOPE]):
                    self._send(401, {"error": "scope"})
                else:
                    platform.scores.append({"content_type": self.headers.get("Content-Type"),
                                            **json.loads(body)})
                    self._send(200, {})
            else:
                self._send(404, {"error": "not found"})

    return Handler


@contextmanager
def running_platform(tool_base: str) -> Iterator[Platform]:
    """A platform whose services listen on 127.0.0.1 (an ephemeral port) until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    platform = Platform(f"http://127.0.0.1:{server.server_address[1]}", tool_base)
    server.RequestHandlerClass = _handler(platform)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield platform
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
