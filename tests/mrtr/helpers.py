"""Message builders and assertions shared by the core tests."""

from __future__ import annotations

from typing import Any

from mrtr.errors import FROZEN_TICKET_MESSAGE, INVALID_PARAMS

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
ACCEPT = {"confirm": {"action": "accept", "content": {"confirm": True}}}


def request(method: str, params: dict[str, Any] | None = None, *, id: Any = 1, meta: Any = META) -> dict[str, Any]:
    body = dict(params or {})
    if meta is not None:
        body["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": body}


def deploy(env: str = "staging", *, id: Any = 1, **extra: Any) -> dict[str, Any]:
    return request("tools/call", {"name": "deploy", "arguments": {"env": env}, **extra}, id=id)


def assert_frozen_rejection(response: dict[str, Any]) -> None:
    """Every ticket failure looks the same on the wire, whatever the reason."""
    assert response["error"] == {"code": INVALID_PARAMS, "message": FROZEN_TICKET_MESSAGE,
                                 "data": {"reason": "invalid_request_state"}}
