"""A peer for the checker: the official Python SDK (mcp==2.3.0) serving a `deploy` tool, test-only.

The tool is built the way the SDK's multi-round-trip docs show for an `@mcp.tool()` that returns the
result itself: round one returns an `InputRequiredResult` with a "confirm" form question and a
plaintext `request_state`; the SDK seals that state (AES-GCM under `--key`) and, on the retry,
checks integrity, expiry (`--ttl`), the method, tool and arguments digest, the audience and the
principal before the tool runs again. The tool then reads `ctx.input_responses`: no answer asks
again, accept with the box ticked deploys, anything else deploys nothing. Nothing else is added:
no redeemed store, because the SDK offers none; that is what the checker must find.

Principals, as the SDK offers them:
  * HTTP (Streamable HTTP, stateless, JSON responses, `/mcp`): the SDK's own bearer-token seam,
    `MCPServer(token_verifier=..., auth=AuthSettings(...))`. The verifier here is a fixed table
    (`--token NAME=TOKEN`, default bob=bob-token and alice=alice-token): each token becomes an
    `AccessToken` whose `subject` is NAME, so the SDK's default `authenticated_principal` binds the
    ticket to (client, issuer, subject). Unknown or missing tokens get the SDK's 401.
  * stdio: no token exists, so `RequestStateSecurity(bind_principal=...)` (the SDK's hook for an
    identity signal of your own) reads the principal from the environment variable `--principal-env`
    names (default MRTR_PRINCIPAL). One process per principal; all share `--key`, as replicas would.

Test clock: when MRTR_PEER_CLOCK_FILE names a file, the SDK's ticket clock reads the real time plus
the number of seconds written in that file, so a test can move past a ticket's expiry without
waiting. This replaces the module attribute the SDK's request_state module reads (`time`); it is a
test seam of this peer, not something the SDK offers.

Two forms of the same tool (`--form`):
  * "result" (default): the tool returns the `InputRequiredResult` itself, as described above;
  * "resolve": the SDK's dependency form, `Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]`, where
    `ask_confirm` returns `Elicit(...)` and the SDK builds the `InputRequiredResult`, validates the answer
    against the `Confirm` model and hands the tool accept, decline or cancel. Nothing of ours is in its state.

Run:  python tests/peers/sdk_py_server.py http --port 8123      (URL http://127.0.0.1:8123/mcp)
      MRTR_PRINCIPAL=bob python tests/peers/sdk_py_server.py stdio
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from mcp.server import request_state as sdk_request_state
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer, RequestStateSecurity
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
)
from pydantic import BaseModel, Field

SERVER_NAME = "mrtr-peer-sdk-python"
DEFAULT_KEY = "mrtr-lab-test-peer-key-0123456789abcdef"  # test-only, >= 32 bytes
DEFAULT_TOKENS = ("bob=bob-token", "alice=alice-token")
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Yes, deploy"}},
    "required": ["confirm"],
}


class FileClock:
    """Stands in for the `time` module inside the SDK's request_state module (only `.time()` is used)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def time(self) -> float:
        try:
            offset = float(self.path.read_text().strip() or 0)
        except (OSError, ValueError):
            offset = 0.0
        return time.time() + offset


class TokenTable:
    """The SDK's TokenVerifier protocol over a fixed NAME=TOKEN table."""

    def __init__(self, pairs: list[str]) -> None:
        self.principals = {}
        for pair in pairs:
            name, _, token = pair.partition("=")
            if not name or not token:
                raise SystemExit(f"--token wants NAME=TOKEN, got {pair!r}")
            self.principals[token] = name

    async def verify_token(self, token: str) -> AccessToken | None:
        name = self.principals.get(token)
        if name is None:
            return None
        return AccessToken(token=token, client_id="mrtr-checker", scopes=[], subject=name)


def ask(env: str) -> InputRequiredResult:
    question = ElicitRequest(params=ElicitRequestFormParams(message=f"Deploy to {env}?",
                                                            requested_schema=CONFIRM_SCHEMA))
    return InputRequiredResult(input_requests={"confirm": question},
                               request_state=json.dumps({"step": "confirm", "env": env}))


class Confirm(BaseModel):
    """The "resolve" form's question: one boolean, as the hand-built form's schema has."""

    confirm: bool = Field(title="Yes, deploy")


async def ask_confirm(env: str) -> Elicit[Confirm]:
    return Elicit(f"Deploy to {env}?", Confirm)


def text(message: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=is_error)


def build(args: argparse.Namespace) -> MCPServer:
    if args.transport == "stdio" and args.sdk_defaults:
        # What MCPServer does when request_state_security is omitted: a key made by this process alone, and the
        # default principal binding (the access token), which stdio has none of.
        mcp = MCPServer(SERVER_NAME, request_state_security=RequestStateSecurity.ephemeral(ttl=args.ttl))
    elif args.transport == "stdio":
        variable = args.principal_env

        def principal_from_env(_ctx: Any) -> str | None:
            return os.environ.get(variable) or None

        security = RequestStateSecurity(keys=[args.key], ttl=args.ttl, bind_principal=principal_from_env)
        mcp = MCPServer(SERVER_NAME, request_state_security=security)
    else:
        security = RequestStateSecurity(keys=[args.key], ttl=args.ttl)  # default binding: the access token
        auth = AuthSettings(issuer_url="http://127.0.0.1/", resource_server_url=None)
        mcp = MCPServer(SERVER_NAME, token_verifier=TokenTable(args.token or list(DEFAULT_TOKENS)), auth=auth,
                        request_state_security=security)

    if args.form == "resolve":
        @mcp.tool(name="deploy", description="Deploy the current build to an environment. Asks the user to confirm "
                                             "first.")
        async def deploy_resolved(env: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]
                                  ) -> CallToolResult:
            if isinstance(answer, AcceptedElicitation) and answer.data.confirm:
                return text(f"deployed to {env}")
            return text(f"nothing was deployed to {env}: the user chose {answer.action}")

        return mcp

    @mcp.tool(description="Deploy the current build to an environment. Asks the user to confirm first.")
    async def deploy(env: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        if ctx.request_state is None or not ctx.input_responses:
            return ask(env)
        # The SDK has verified the sealed state; the work comes from it.
        env = json.loads(ctx.request_state).get("env", env)
        reply = ctx.input_responses.get("confirm")
        if reply is None:
            return ask(env)
        answer = reply.model_dump() if hasattr(reply, "model_dump") else dict(reply)
        if answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm") is True:
            return text(f"deployed to {env}")
        return text(f"nothing was deployed to {env}: the user chose {answer.get('action')}")

    return mcp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["http", "stdio"])
    parser.add_argument("--port", type=int, default=8123, help="HTTP port on 127.0.0.1")
    parser.add_argument("--ttl", type=float, default=120.0, help="ticket lifetime in seconds")
    parser.add_argument("--key", default=os.environ.get("MRTR_PEER_KEY", DEFAULT_KEY))
    parser.add_argument("--token", action="append", help="NAME=TOKEN (HTTP; repeat; default bob and alice)")
    parser.add_argument("--principal-env", default="MRTR_PRINCIPAL", help="stdio: variable naming the principal")
    parser.add_argument("--sdk-defaults", action="store_true",
                        help="stdio: the SDK's default sealing (a key per process, no principal) instead of --key")
    parser.add_argument("--form", choices=["result", "resolve"], default="result",
                        help="the tool returns InputRequiredResult itself, or uses the SDK's Resolve dependency")
    args = parser.parse_args(argv)
    clock_file = os.environ.get("MRTR_PEER_CLOCK_FILE")
    if clock_file:
        sdk_request_state.time = FileClock(Path(clock_file))  # type: ignore[assignment]
    mcp = build(args)
    if args.transport == "stdio":
        mcp.run("stdio")
        return
    import uvicorn

    app = mcp.streamable_http_app(stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
