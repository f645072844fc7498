"""Reference MCP server built with the OFFICIAL Python SDK (``mcp==2.3.0``).

Why this exists: it is a known-good server to validate our SDK client drivers
(``tests/sdk/py_client.py``, ``tests/js/deploy_client.mjs``) before our own
server is finished, and a baseline to benchmark and conformance-test against.
It is NOT part of the app and is never imported by it.

It exposes one tool, ``deploy(env: str)``, written in the SDK's dependency form
(``Resolve`` + ``Elicit``). That form serves both protocol eras from one body:

* 2026-07-28 clients get an ``InputRequiredResult`` (MRTR) and retry with
  ``inputResponses`` + the sealed ``requestState``;
* 2025-11-25 (legacy, ``initialize``) clients get a live ``elicitation/create``
  request mid-call (stdio, or sessionful streamable HTTP).

A hand-built ``InputRequiredResult`` would only work for the modern era (the
SDK answers legacy sessions with -32603), so it is not used here.

Usage (needs a venv with ``mcp==2.3.0``, e.g. /tmp/sdkvenv):

    python bench/sdk_server.py --transport stdio
    python bench/sdk_server.py --transport http --port 8765 [--require-token T]

HTTP serves ``http://127.0.0.1:PORT/mcp`` (uvicorn, sessionful, SSE allowed).
``--require-token`` makes the server answer 401 unless the request carries
``Authorization: Bearer T``; it exists to prove the drivers send the header.

``--workers N`` (HTTP only) runs N uvicorn worker processes, so the benchmark
can give the SDK the same number of processes as our gunicorn app. Modern
(2026-07-28) requests then land on any worker, so every worker must unseal
every other worker's ``requestState``: the workers share one key, taken from
``MRTR_SDK_STATE_KEY`` (generated for the run when unset). Legacy sessions
would need sticky routing, which uvicorn's workers do not do.
"""

import argparse
import os
import secrets
import socket
import sys
from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.request_state import RequestStateSecurity
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field

STATE_KEY_ENV = "MRTR_SDK_STATE_KEY"
TOKEN_ENV = "MRTR_SDK_REQUIRE_TOKEN"
JSON_ENV = "MRTR_SDK_JSON_RESPONSE"
STATELESS_ENV = "MRTR_SDK_STATELESS"
ALLOWED_HOSTS_ENV = "MRTR_SDK_ALLOWED_HOSTS"


class Confirm(BaseModel):
    confirm: bool = Field(description="Yes, deploy")


# Module level on purpose: the SDK evaluates the tool's annotations with
# ``eval_str=True`` against module globals, so a resolver defined inside a
# function (or string annotations from ``from __future__ import annotations``
# pointing at a local) raises NameError at registration time. The resolver's
# ``module:qualname`` is also the wire key of the input request.
async def ask_confirm(env: str) -> Elicit[Confirm]:
    return Elicit(f"Deploy to {env}?", Confirm)


def build_server() -> MCPServer:
    # One shared key when a multi-worker run set it; else the SDK's per-process key.
    key = os.environ.get(STATE_KEY_ENV)
    security = RequestStateSecurity(keys=[key.encode()]) if key else None
    mcp = MCPServer("mrtr-lab-sdk-reference", version="0.1.0", request_state_security=security)

    @mcp.tool(description="Deploy to an environment after the user confirms.")
    async def deploy(
        env: str,
        answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
    ) -> str:
        if isinstance(answer, AcceptedElicitation) and answer.data.confirm:
            return f"deployed to {env}"
        return f"nothing was deployed to {env}"

    return mcp


class _BearerGate:
    """Tiny ASGI middleware: 401 unless ``Authorization: Bearer <token>``."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            auth = dict(scope.get("headers") or []).get(b"authorization")
            if auth != self.expected:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--require-token", default=None, help="HTTP only: demand this bearer token")
    p.add_argument("--log-level", default="warning")
    p.add_argument("--workers", type=int, default=1, help="HTTP only: uvicorn worker processes (shared key)")
    p.add_argument("--json-response", action="store_true",
                   help="HTTP only: json_response=True, one JSON body per request (the SDK docs' production advice)")
    p.add_argument("--stateless", action="store_true",
                   help="HTTP only: stateless_http=True (legacy clients get no session; for load-balanced replicas)")
    p.add_argument("--allowed-hosts", default="",
                   help="HTTP only: comma-separated Host values to accept besides the SDK's loopback defaults, "
                   "as behind a proxy that forwards its own Host (nginx's `Host $host` has no port)")
    args = p.parse_args(argv)
    if args.allowed_hosts:
        os.environ[ALLOWED_HOSTS_ENV] = args.allowed_hosts
    if args.json_response:
        os.environ[JSON_ENV] = "1"
    if args.stateless:
        os.environ[STATELESS_ENV] = "1"

    mcp = build_server()
    if args.transport == "stdio":
        mcp.run("stdio")
        return 0

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    # uvicorn binds a socket with proto 0, and asyncio only sets TCP_NODELAY on sockets whose
    # proto is IPPROTO_TCP; without it, keep-alive clients wait ~40 ms per response (Nagle vs
    # delayed ACK, since uvicorn writes the head and the body separately). Bind it ourselves.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.set_inheritable(True)
    if args.workers > 1:
        # uvicorn's workers import the app by name; settings travel in the environment.
        os.environ.setdefault(STATE_KEY_ENV, secrets.token_urlsafe(32))
        if args.require_token:
            os.environ[TOKEN_ENV] = args.require_token
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        config = uvicorn.Config("bench.sdk_server:http_app", factory=True, workers=args.workers,
                                log_level=args.log_level)
        Multiprocess(config, sockets=[sock]).run()
        return 0
    config = uvicorn.Config(_http_app(mcp, args.require_token), log_level=args.log_level)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _transport_security() -> TransportSecuritySettings | None:
    """None (the SDK's own loopback DNS-rebinding rules, which want a port in Host) unless extra hosts
    were given: then the same rules with those hosts added, protection still on, so the SDK does the
    same checks per request behind a proxy as in front of one."""
    extra = [h.strip() for h in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()]
    if not extra:
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", *extra],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def _http_app(mcp: MCPServer, token: str | None):
    app = mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1",
                                  json_response=os.environ.get(JSON_ENV) == "1",
                                  stateless_http=os.environ.get(STATELESS_ENV) == "1",
                                  transport_security=_transport_security())
    return _BearerGate(app, token) if token else app


def http_app():
    """The HTTP app for one uvicorn worker (``--workers N``); reads its settings from the environment."""
    return _http_app(build_server(), os.environ.get(TOKEN_ENV))


if __name__ == "__main__":
    sys.exit(main())
