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
"""

import argparse
import sys
from typing import Annotated

from pydantic import BaseModel, Field

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)


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
    mcp = MCPServer("mrtr-lab-sdk-reference", version="0.1.0")

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
    args = p.parse_args(argv)

    mcp = build_server()
    if args.transport == "stdio":
        mcp.run("stdio")
        return 0

    import uvicorn

    app = mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    if args.require_token:
        app = _BearerGate(app, args.require_token)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
