"""A small scripted MCP 2026-07-28 server over HTTP, one tool per thing a strict client must do or refuse.

It runs in a thread of the test process (no subprocess, so the tests stay in the fast tier), keeps every request it
got with its headers, and answers each tool by its script: the refusals (an unknown resultType, an empty
input_required, URL mode or sampling or an unknown method a form-only client never declared, a server that never
finishes), the rounds a client must get right (newest ticket, only this round's answers, state-only rounds), a
tool with x-mcp-header arguments and invalid tool definitions. `sse=True` answers every request as an event
stream, with a notification before the response. `reject_first_discover` answers the first server/discover with
-32022 and `data.supported`. `legacy=True` knows no server/discover (-32601) and serves the 2025 handshake.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FORM = {"type": "object", "properties": {"count": {"type": "integer", "default": 3},
                                          "size": {"type": "string", "enum": ["small", "large"]},
                                          "ok": {"type": "boolean"}, "name": {"type": "string", "minLength": 2}},
        "required": ["size", "ok"]}
TICKET_1 = '  {"nonce":"\\u00e9t\\u00e9","n":1} é  '  # spaces, escapes and non-ASCII: echoed byte for byte
TICKET_2 = "ticket-two"


def elicit(message: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message,
                                                       "requestedSchema": schema or FORM}}


SAMPLING = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
URL_QUESTION = {"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/p/1"}}
TOOLS = [
    {"name": name, "inputSchema": {"type": "object", "properties": {}}}
    for name in ("bogus", "empty", "url", "sampling", "foo", "loop", "state_only", "multi", "form", "plain", "nostate")
] + [
    {"name": "headers", "inputSchema": {"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}, "count": {"type": "integer", "x-mcp-header": "Count"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"}, "note": {"type": "string"}}}},
    {"name": "bad_header", "inputSchema": {"type": "object", "properties": {
        "score": {"type": "number", "x-mcp-header": "Score"}}}},
    {"name": "no_schema"},
]


def complete(text: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}]}


def _multi(params: dict[str, Any]) -> dict[str, Any]:
    state = params.get("requestState")
    if state is None:
        return {"resultType": "input_required", "inputRequests": {"first": elicit("first?")}, "requestState": TICKET_1}
    if state == TICKET_1:
        return {"resultType": "input_required", "inputRequests": {"second": elicit("second?")},
                "requestState": TICKET_2}
    return complete(f"multi done with {sorted(params.get('inputResponses', {}))}")


def _state_only(params: dict[str, Any]) -> dict[str, Any]:
    state = params.get("requestState")
    step = int(state[1:]) if isinstance(state, str) else 0
    if step < 3:
        return {"resultType": "input_required", "requestState": f"s{step + 1}"}
    return complete("state-only done")


def tool_result(name: str, params: dict[str, Any]) -> dict[str, Any]:
    retry = "inputResponses" in params or "requestState" in params
    if name == "multi":
        return _multi(params)
    if name == "state_only":
        return _state_only(params)
    scripted: dict[str, dict[str, Any]] = {
        "bogus": {"resultType": "bogus", "content": []},
        "empty": {"resultType": "input_required"},
        "url": {"resultType": "input_required", "inputRequests": {"page": URL_QUESTION}},
        "sampling": {"resultType": "input_required", "inputRequests": {"s": SAMPLING}},
        "foo": {"resultType": "input_required", "inputRequests": {"f": {"method": "foo/bar", "params": {}}}},
        "loop": {"resultType": "input_required", "inputRequests": {"again": elicit("again?")}, "requestState": "loop"},
        "form": {"resultType": "input_required", "inputRequests": {"f": elicit("fill")}, "requestState": "form"},
        "nostate": {"resultType": "input_required", "inputRequests": {"f": elicit("fill")}},
    }
    if name in scripted and not (retry and name in ("form", "nostate", "url")):
        return scripted[name]
    if name in ("form", "nostate", "url"):
        return complete(json.dumps(params.get("inputResponses"), sort_keys=True))
    return complete(f"{name} ok")


@dataclass
class Scripted:
    """What the server saw: each request's body and headers (names lower-cased)."""

    sse: bool = False
    reject_first_discover: bool = False
    legacy: bool = False
    seen: list[tuple[dict[str, Any], dict[str, str]]] = field(default_factory=list)
    url: str = ""

    def calls(self, tool: str) -> list[dict[str, Any]]:
        return [m for m, _h in self.seen if m.get("method") == "tools/call" and m["params"].get("name") == tool]

    def headers_of(self, tool: str) -> list[dict[str, str]]:
        return [h for m, h in self.seen if m.get("method") == "tools/call" and m["params"].get("name") == tool]

    def answer(self, message: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        method, params, rid = message.get("method"), message.get("params") or {}, message.get("id")
        if "id" not in message:
            return 202, None
        if method == "server/discover":
            if self.legacy:
                return 404, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
            if self.reject_first_discover and sum(m.get("method") == "server/discover" for m, _ in self.seen) == 1:
                return 400, {"jsonrpc": "2.0", "id": rid, "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"], "requested": "x"}}}
            return 200, {"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "private"}}
        if method == "initialize":
            return 200, {"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                                 "serverInfo": {"name": "scripted", "version": "1"}}}
        if method == "tools/list":
            return 200, {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", "tools": TOOLS,
                                                                 "ttlMs": 0, "cacheScope": "private"}}
        if method == "tools/call":
            return 200, {"jsonrpc": "2.0", "id": rid, "result": tool_result(params.get("name"), params)}
        return 404, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}


def _handler(script: Scripted) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

        def do_POST(self) -> None:  # noqa: N802 (the base class's name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            script.seen.append((body, {k.lower(): v for k, v in self.headers.items()}))
            status, reply = script.answer(body)
            if reply is None:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if script.sse and status == 200:
                note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
                data = (f"event: message\r\ndata: {json.dumps(note)}\r\n\r\n"
                        f": a comment\r\ndata: {json.dumps(reply)}\r\n\r\n")
                self._send(status, "text/event-stream", data.encode())
            else:
                self._send(status, "application/json", json.dumps(reply).encode())

        def _send(self, status: int, ctype: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def scripted_server(**options: Any) -> Iterator[Scripted]:
    """A `Scripted` server listening on 127.0.0.1 until the block ends."""
    script = Scripted(**options)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    script.url = f"http://127.0.0.1:{server.server_port}/mcp"
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
