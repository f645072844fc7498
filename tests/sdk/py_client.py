"""Drive an MCP server with the OFFICIAL Python SDK client (``mcp==2.3.0``).

Why: our server must work with real third-party clients, not only with our own
tests. This script connects with ``mcp.Client``, answers the deploy
confirmation through an elicitation callback and calls ``deploy`` once.
The SDK does the protocol work (server/discover or initialize, MRTR retries or
a live ``elicitation/create``); we only observe the outcome.

Run it with an interpreter that has ``mcp==2.3.0`` installed (not the app's
venv), e.g.::

    python3 -m venv /tmp/sdkvenv && /tmp/sdkvenv/bin/pip install mcp==2.3.0
    /tmp/sdkvenv/bin/python tests/sdk/py_client.py --mode auto --answer accept \
        --url http://127.0.0.1:5000/mcp --token secret
    /tmp/sdkvenv/bin/python tests/sdk/py_client.py --mode legacy --answer decline \
        --stdio -- python bench/sdk_server.py --transport stdio

Output: exactly one JSON line on stdout.
  success: {"ok": true, "text": ..., "isError": ..., "elicitations": [...], "mode": ..., ...}  exit 0
  failure: {"ok": false, "error": "...", ...}                                                  exit 1
Diagnostics (SDK logging, server stderr for stdio) go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

TIMEOUT_S = 20.0


def _parse(argv: list[str]) -> argparse.Namespace:
    cmd: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser(description="Official Python SDK client driver for the deploy tool")
    p.add_argument("--mode", choices=["auto", "legacy"], default="auto")
    p.add_argument("--answer", choices=["accept", "decline", "cancel"], default="accept")
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--stdio", action="store_true", help="launch the server command given after --")
    p.add_argument("--env", default="staging", help="deploy argument (default: staging)")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S)
    ns = p.parse_args(argv)
    ns.cmd = cmd
    if bool(ns.url) == bool(ns.stdio):
        p.error("give exactly one of --url URL or --stdio -- CMD ARGS...")
    if ns.stdio and not cmd:
        p.error("--stdio needs a command after --")
    return ns


async def _run(ns: argparse.Namespace) -> dict[str, Any]:
    from contextlib import AsyncExitStack

    import httpx2
    import mcp_types as types
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    elicitations: list[str] = []

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        elicitations.append(getattr(params, "message", ""))
        if ns.answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action=ns.answer)

    async with AsyncExitStack() as stack:
        if ns.url:
            # Client(url) builds its own httpx client with no way to add headers;
            # passing a pre-configured httpx2.AsyncClient to streamable_http_client
            # is the SDK's documented route for headers/auth. When the client is
            # provided, the transport does NOT close it, so we do.
            headers = {"Authorization": f"Bearer {ns.token}"} if ns.token else {}
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(ns.timeout))
            )
            target: Any = streamable_http_client(ns.url, http_client=http)
        else:
            target = StdioServerParameters(command=ns.cmd[0], args=ns.cmd[1:])

        client = await stack.enter_async_context(
            Client(
                target,
                mode=ns.mode,
                elicitation_callback=on_elicit,
                client_info=types.Implementation(name="mrtr-lab-py-driver", version="0.1.0"),
                cache=None,
            )
        )
        result = await client.call_tool("deploy", {"env": ns.env})
        texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
        return {
            "ok": True,
            "text": "\n".join(texts),
            "isError": bool(result.is_error),
            "elicitations": elicitations,
            "mode": ns.mode,
            "protocolVersion": client.session.protocol_version,
            "client": "python-sdk",
        }


def main(argv: list[str] | None = None) -> int:
    ns = _parse(sys.argv[1:] if argv is None else argv)
    import anyio

    async def bounded() -> dict[str, Any]:
        with anyio.fail_after(ns.timeout):
            return await _run(ns)

    try:
        out = anyio.run(bounded)
        code = 0
    except BaseException as exc:  # noqa: BLE001 - report every failure as one JSON line
        if isinstance(exc, KeyboardInterrupt):
            raise
        traceback.print_exc(file=sys.stderr)
        out = {"ok": False, "error": _describe(exc, ns.timeout), "mode": ns.mode, "client": "python-sdk"}
        code = 1
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return code


def _describe(exc: BaseException, timeout: float) -> str:
    # Task groups wrap the real error; unwrap single-leaf ExceptionGroups.
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return f"timeout after {timeout:g}s" if not str(exc) else f"timeout: {exc}"
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    sys.exit(main())
