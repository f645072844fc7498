"""A deliberately weak MRTR peer for the checker's tests: one `deploy` tool, stdlib only, test-only.

It speaks just enough MCP 2026-07-28 (server/discover, tools/list, tools/call) over HTTP (POST /mcp)
or stdio (one JSON-RPC message per line). Round one answers input_required with a "confirm" form
question and a readable signed ticket, the same shape the lab uses:

    w1.<b64url(JSON payload)>.<b64url(HMAC-SHA256(key, "w1." + payload part))>
    payload: {"sub": principal, "req": digest of method+tool+arguments, "exp": unix seconds,
              "jti": random id, "work": {"env": ...}}

On a retry it runs the six checks in the lab's order, and `--skip CHECK` (repeatable) turns one off,
so the checker can be shown to catch exactly the weakness switched on:
    signature    the MAC is not compared (an edited payload is believed)
    principal    the ticket's `sub` is not compared with the caller
    expiry       `exp` is ignored
    request      the ticket is not compared with this request's method, tool and arguments
    answer       a retry without inputResponses is treated as a yes (instead of asking again)
    single-use   redeemed tickets are not remembered
Every ticket failure is the same error object: -32602 "Invalid or expired requestState".

Protocol weaknesses, for the checker's probes (also off by default):
    --ask-without-capability   asks its question even when the client declared no elicitation (no -32021)
    --any-version              serves any protocol version instead of answering -32022
    --reveal-reasons           each ticket failure's message names the check that failed
    --omit-result-type         complete results carry no resultType (input_required ones still do)

Principals: over HTTP a bearer token from `--token NAME=TOKEN` (default bob=bob-token,
alice=alice-token; anything else gets 401). Over stdio the environment variable `--principal-env`
names (default MRTR_PRINCIPAL). Clock: the real time plus the seconds written in the file
MRTR_PEER_CLOCK_FILE names, when set (tests move past expiry without waiting).

Run:  python tests/peers/weak_server.py http --port 8124 --skip principal --skip single-use
      MRTR_PRINCIPAL=bob python tests/peers/weak_server.py stdio --skip expiry
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import secrets
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

VERSION = "2026-07-28"
CHECKS = ("signature", "principal", "expiry", "request", "answer", "single-use")
KEY = b"mrtr-lab-weak-peer-key-0123456789abcdef"
PREFIX = "w1"
REFUSED = {"code": -32602, "message": "Invalid or expired requestState"}
SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Yes, deploy"}},
          "required": ["confirm"]}
TOOL = {"name": "deploy", "description": "Deploy the current build. Asks the user to confirm first.",
        "inputSchema": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}}


class Refused(Exception):
    """A ticket check failed; `reason` goes to stderr, never to the wire."""


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Weak:
    def __init__(self, skip: set[str], ttl: float, clock_file: str | None, *, ask_without_capability: bool = False,
                 any_version: bool = False, reveal_reasons: bool = False, omit_result_type: bool = False) -> None:
        self.skip, self.ttl = skip, ttl
        self.ask_without_capability, self.any_version = ask_without_capability, any_version
        self.reveal_reasons, self.omit_result_type = reveal_reasons, omit_result_type
        self.clock_file = Path(clock_file) if clock_file else None
        self.redeemed: set[str] = set()

    def now(self) -> float:
        offset = 0.0
        if self.clock_file is not None:
            try:
                offset = float(self.clock_file.read_text().strip() or 0)
            except (OSError, ValueError):
                offset = 0.0
        return time.time() + offset

    # -- tickets -------------------------------------------------------------------------------------

    def mint(self, principal: str, digest: str, env: str) -> str:
        payload = {"sub": principal, "req": digest, "exp": int(self.now() + self.ttl), "jti": secrets.token_hex(8),
                   "work": {"env": env}}
        body = b64(json.dumps(payload, separators=(",", ":")).encode())
        mac = hmac.new(KEY, f"{PREFIX}.{body}".encode(), hashlib.sha256).digest()
        return f"{PREFIX}.{body}.{b64(mac)}"

    def open(self, ticket: Any) -> dict[str, Any]:
        parts = ticket.split(".") if isinstance(ticket, str) else []
        if len(parts) != 3 or parts[0] != PREFIX:
            raise Refused("malformed")
        try:
            payload = json.loads(unb64(parts[1]))
            mac = unb64(parts[2])
        except ValueError as exc:
            raise Refused("malformed") from exc
        if not isinstance(payload, dict):
            raise Refused("malformed")
        good = hmac.new(KEY, f"{PREFIX}.{parts[1]}".encode(), hashlib.sha256).digest()
        if "signature" not in self.skip and not hmac.compare_digest(mac, good):
            raise Refused("signature")
        return payload

    # -- the tool ------------------------------------------------------------------------------------

    def deploy(self, params: dict[str, Any], principal: str) -> dict[str, Any]:
        args = params.get("arguments") or {}
        env = args.get("env")
        if not isinstance(env, str):
            return {"content": [{"type": "text", "text": "env must be a string"}], "isError": True}
        digest = hashlib.sha256(json.dumps(["tools/call", "deploy", args], sort_keys=True).encode()).hexdigest()[:16]
        ticket = params.get("requestState")
        if ticket is None:
            return self.ask(principal, digest, env)
        payload = self.open(ticket)
        if "principal" not in self.skip and payload.get("sub") != principal:
            raise Refused("principal")
        if "expiry" not in self.skip and not (isinstance(payload.get("exp"), int) and self.now() < payload["exp"]):
            raise Refused("expiry")
        if "request" not in self.skip and payload.get("req") != digest:
            raise Refused("request")
        work = payload.get("work") if isinstance(payload.get("work"), dict) else {}
        target = str(work.get("env", env))
        reply = (params.get("inputResponses") or {}).get("confirm")
        if not isinstance(reply, dict):
            if "answer" not in self.skip:
                return self.ask(principal, digest, target)
            reply = {"action": "accept", "content": {"confirm": True}}
        jti = str(payload.get("jti"))
        if "single-use" not in self.skip:
            if jti in self.redeemed:
                raise Refused("single-use")
            self.redeemed.add(jti)
        content = reply.get("content") if isinstance(reply.get("content"), dict) else {}
        if reply.get("action") == "accept" and content.get("confirm") is True:
            return {"content": [{"type": "text", "text": f"deployed to {target}"}], "isError": False}
        return {"content": [{"type": "text", "text": f"nothing was deployed to {target}"}], "isError": False}

    def ask(self, principal: str, digest: str, env: str) -> dict[str, Any]:
        question = {"method": "elicitation/create",
                    "params": {"mode": "form", "message": f"Deploy to {env}?", "requestedSchema": SCHEMA}}
        return {"resultType": "input_required", "inputRequests": {"confirm": question},
                "requestState": self.mint(principal, digest, env)}

    # -- JSON-RPC ------------------------------------------------------------------------------------

    def handle(self, msg: Any, principal: str) -> tuple[int, dict[str, Any] | None]:
        """One message in, (HTTP status, response or None for a notification) out."""
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            return 400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}}
        if "id" not in msg:
            return 202, None
        rid, method = msg["id"], msg["method"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}

        def error(status: int, err: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            return status, {"jsonrpc": "2.0", "id": rid, "error": err}

        version = meta.get("io.modelcontextprotocol/protocolVersion")
        if version is None:
            return error(400, {"code": -32602, "message": "Missing _meta protocol version"})
        if version != VERSION and not self.any_version:
            return error(400, {"code": -32022, "message": "Unsupported protocol version",
                               "data": {"supported": [VERSION], "requested": version}})
        caps = meta.get("io.modelcontextprotocol/clientCapabilities")
        if method == "server/discover":
            result = {"supportedVersions": [VERSION], "capabilities": {"tools": {}}, "cacheScope": "private",
                      "ttlMs": 0, "serverInfo": {"name": "mrtr-weak-peer", "version": "0"}}
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            if params.get("name") != "deploy":
                return error(400, {"code": -32602, "message": "Unknown tool"})
            if (not isinstance(caps, dict) or "elicitation" not in caps) and not self.ask_without_capability:
                return error(400, {"code": -32021, "message": "deploy requires the elicitation capability",
                                   "data": {"requiredCapabilities": {"elicitation": {}}}})
            try:
                result = self.deploy(params, principal)
            except Refused as exc:
                print(f"weak peer: requestState refused ({exc})", file=sys.stderr, flush=True)
                if self.reveal_reasons:
                    return error(400, {"code": -32602, "message": f"requestState refused: {exc}"})
                return error(400, dict(REFUSED))
        else:
            return error(404, {"code": -32601, "message": "Method not found"})
        if not self.omit_result_type:
            result.setdefault("resultType", "complete")
        return 200, {"jsonrpc": "2.0", "id": rid, "result": result}


def serve_http(weak: Weak, port: int, tokens: dict[str, str]) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path != "/mcp":
                return self.reply(404, {"error": "not found"})
            auth = self.headers.get("Authorization", "")
            principal = tokens.get(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None
            if principal is None:
                return self.reply(401, {"error": "invalid_token"})
            try:
                length = int(self.headers.get("Content-Length") or 0)
                msg = json.loads(self.rfile.read(min(length, 1_000_000)))
            except ValueError:
                parse_error = {"code": -32700, "message": "Parse error"}
                return self.reply(400, {"jsonrpc": "2.0", "id": None, "error": parse_error})
            status, body = weak.handle(msg, principal)
            self.reply(status, body)

        def reply(self, status: int, body: dict[str, Any] | None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def serve_stdio(weak: Weak, principal: str) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        _, body = weak.handle(msg, principal)
        if body is not None:
            sys.stdout.write(json.dumps(body) + "\n")
            sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["http", "stdio"])
    parser.add_argument("--port", type=int, default=8124)
    parser.add_argument("--skip", action="append", choices=CHECKS, default=[], help="turn one check off (repeat)")
    parser.add_argument("--ttl", type=float, default=120.0)
    parser.add_argument("--token", action="append", help="NAME=TOKEN (HTTP; repeat; default bob and alice)")
    parser.add_argument("--principal-env", default="MRTR_PRINCIPAL")
    parser.add_argument("--ask-without-capability", action="store_true")
    parser.add_argument("--any-version", action="store_true")
    parser.add_argument("--reveal-reasons", action="store_true")
    parser.add_argument("--omit-result-type", action="store_true")
    args = parser.parse_args(argv)
    weak = Weak(set(args.skip), args.ttl, os.environ.get("MRTR_PEER_CLOCK_FILE"),
                ask_without_capability=args.ask_without_capability, any_version=args.any_version,
                reveal_reasons=args.reveal_reasons, omit_result_type=args.omit_result_type)
    if args.transport == "stdio":
        serve_stdio(weak, os.environ.get(args.principal_env, ""))
        return
    pairs = args.token or ["bob=bob-token", "alice=alice-token"]
    tokens = {token: name for name, _, token in (p.partition("=") for p in pairs)}
    serve_http(weak, args.port, tokens)


if __name__ == "__main__":
    main()
