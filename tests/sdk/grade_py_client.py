"""The OFFICIAL Python SDK client (``mcp==2.3.0``) as a client for ``mrtr check-client --command``.

Why: the lab grades the official clients side by side with its own (docs/client/official-clients.md), so this
driver does nothing a user's program would not: it lists the tools and calls each once through the SDK's own
automatic input_required loop, answering every form question from its schema (default, first enum value, least
number, ``true``) and every URL-mode question with accept. Its simulated user chooses as ``MRTR_CHECK_CLIENT_CHOICES``
says (question key to action; the SDK callback sees no key, so the key is read from the start of the message).
The grading server's URL is the last argument::

    mrtr check-client --command "python tests/sdk/grade_py_client.py"

One line per tool on stdout says how the SDK ended the call (complete, error or raised); a tool that raises does
not stop the others. Exit 0 once every tool was tried, 1 when the session itself failed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TIMEOUT_S = 20.0


def answer_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Content for a form question, typed by its requestedSchema."""
    content: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            content[name] = prop["default"]
        elif prop.get("enum"):
            content[name] = prop["enum"][0]
        elif prop.get("type") == "boolean":
            content[name] = True
        elif prop.get("type") in ("integer", "number"):
            content[name] = prop.get("minimum", 0)
        else:
            content[name] = "yes"
    return content


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: p["default"] for k, p in (schema.get("properties") or {}).items() if "default" in p}


def users_choice(message: str) -> str | None:
    """The action the user chose for this question, if MRTR_CHECK_CLIENT_CHOICES names its key."""
    choices = json.loads(os.environ.get("MRTR_CHECK_CLIENT_CHOICES") or "{}")
    choice = choices.get(message.split(":")[0]) if isinstance(choices, dict) else None
    return choice if isinstance(choice, str) else None


async def run(url: str) -> None:
    import mcp_types as types
    from mcp import Client

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        if getattr(params, "mode", "form") == "url":
            return types.ElicitResult(action="accept")
        choice = users_choice(str(getattr(params, "message", "")))
        if choice in ("decline", "cancel"):
            return types.ElicitResult(action=choice)
        schema = getattr(params, "requested_schema", None) or {}
        if not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        return types.ElicitResult(action="accept", content=answer_for(schema))

    async with Client(url, mode="auto", elicitation_callback=on_elicit,
                      client_info=types.Implementation(name="mrtr-lab-grade-py", version="0.1.0")) as client:
        listed = await client.list_tools()
        for tool in listed.tools:
            try:
                result = await client.call_tool(tool.name, arguments_for(dict(tool.input_schema or {})))
                print(f"{tool.name}: {'error' if result.is_error else 'complete'}", flush=True)
            except Exception as exc:  # noqa: BLE001 - a refused result is the outcome to report, not a crash
                first = str(exc).splitlines()[0] if str(exc) else ""
                print(f"{tool.name}: raised {type(exc).__name__}: {first[:160]}", flush=True)


def main() -> int:
    import anyio

    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT_S * 3):
            await run(sys.argv[-1])

    try:
        anyio.run(bounded)
    except Exception as exc:  # noqa: BLE001 - one line for the grader's log, not a traceback
        print(f"session failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
