"""A small, independent MRTR server for the checker's tests, weak exactly where it is told to be.

Written from the spec alone (stdlib only, no `mrtr` import), so the checker is proven against a
server that is not the app. Its `deploy` tool asks "Deploy to <env>?" and hands out a readable,
HMAC-signed ticket `t1.<payload>.<mac>` (a shape the engine can read) with sub, exp, req (a digest
of the request), jti and the work. Weaknesses, named in `--weak a,b` (or WEAK_SERVER_WEAK):

    principal    never compares the ticket's sub with the caller
    single-use   keeps no redeemed store (a retry sent twice deploys twice)
    reveal       says in the error message which check failed
    capability   asks for elicitation even when the client did not declare it
    version      serves any protocol version
    result-type  leaves resultType off tools/list
    asks-error   answers a retry without the answer with an error instead of asking again
    x9-prefix    (not a weakness) tickets start "x9." instead of "t1.", a shape the engine does not read

Run over HTTP: `python tests/check/weak_server.py --port N` (tokens bob-token, alice-token), or
over stdio: `python tests/check/weak_server.py --stdio` (principal from MRTR_PRINCIPAL).
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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = b"weak-server-key-for-tests-only-0123456789"
VERSION = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
TOKENS = {"bob-token": "bob", "alice-token": "alice"}
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
DEPLOY = {"name": "deploy", "description": "Deploy after a yes.",
          "inputSchema": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}}


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Refused(Exception):
    def __init__(self, code: int, message: str, data: Any = None, status: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.status = code, message, data, status


class WeakServer:
    def __init__(self, weak: set[str], ttl: int = 2, clock: Any = time.time) -> None:
        self.weak = weak
        self.ttl = ttl
        #: The ticket clock (the system's; in-process tests pass one they can move, so no test waits for real).
        self.clock = clock
        self.redeemed: set[str] = set()
        self.prefix = "x9" if "x9-prefix" in weak else "t1"
        self.lock = threading.Lock()

    def _refuse_ticket(self, why: str) -> Refused:
        message = f"Invalid requestState: {why}" if "reveal" in self.weak else "Invalid or expired requestState"
        return Refused(-32602, message, {"reason": "invalid_request_state"})

    def _mint(self, principal: str, name: str, arguments: Any) -> str:
        payload = {"sub": principal, "exp": int(self.clock()) + self.ttl, "req": self._digest(name, arguments),
                   "jti": secrets.token_hex(8), "work": {"env": arguments.get("env")}}
        body = _b64(json.dumps(payload, sort_keys=True).encode())
        return f"{self.prefix}.{body}.{_b64(hmac.new(KEY, body.encode(), hashlib.sha256).digest())}"

    @staticmethod
    def _digest(name: str, arguments: Any) -> str:
        return hashlib.sha256(json.dumps([name, arguments], sort_keys=True).encode()).hexdigest()[:16]

    def _ask(self, principal: str, name: str, arguments: Any) -> dict[str, Any]:
        question = {"method": "elicitation/create", "params": {"mode": "form", "message":
                    f"Deploy to {arguments.get('env')}?", "requestedSchema": CONFIRM}}
        return {"resultType": "input_required", "inputRequests": {"confirm": question},
                "requestState": self._mint(principal, name, arguments)}

    def handle(self, message: Any, principal: str) -> tuple[int, dict[str, Any]]:
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            result = self._dispatch(message, principal)
            return 200, {"jsonrpc": "2.0", "id": request_id, "result": result}
        except Refused as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            return exc.status, {"jsonrpc": "2.0", "id": request_id, "error": error}

    def _dispatch(self, message: Any, principal: str) -> dict[str, Any]:
        if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
            raise Refused(-32600, "Invalid request", status=400)
        params = message["params"]
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        version = meta.get(META_VERSION)
        if version != VERSION and "version" not in self.weak:
            raise Refused(-32022, "Unsupported protocol version", {"supported": [VERSION], "requested": version}, 400)
        method = message.get("method")
        if method == "tools/list":
            result: dict[str, Any] = {"tools": [DEPLOY]}
            if "result-type" not in self.weak:
                result["resultType"] = "complete"
            return result
        if method != "tools/call" or params.get("name") != "deploy":
            raise Refused(-32601, "Method not found", status=404)
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        caps = meta.get(META_CAPS) if isinstance(meta.get(META_CAPS), dict) else {}
        if "elicitation" not in caps and "capability" not in self.weak:
            raise Refused(-32021, "deploy needs the elicitation capability",
                          {"requiredCapabilities": {"elicitation": {}}}, 400)
        ticket = params.get("requestState")
        if ticket is None:
            return self._ask(principal, "deploy", arguments)
        claims = self._verify(ticket, principal, arguments)
        answer = (params.get("inputResponses") or {}).get("confirm") \
            if isinstance(params.get("inputResponses"), dict) else None
        if not isinstance(answer, dict):
            if "asks-error" in self.weak:
                raise Refused(-32602, "inputResponses.confirm is missing")
            return self._ask(principal, "deploy", arguments)
        with self.lock:
            if claims["jti"] in self.redeemed and "single-use" not in self.weak:
                raise self._refuse_ticket("already redeemed")
            self.redeemed.add(claims["jti"])
        yes = answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm") is True
        text = f"deployed to {claims['work']['env']}" if yes else "nothing deployed"
        return {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": False}

    def _verify(self, ticket: Any, principal: str, arguments: Any) -> dict[str, Any]:
        try:
            prefix, body, mac = str(ticket).split(".")
            good = hmac.compare_digest(_unb64(mac), hmac.new(KEY, body.encode(), hashlib.sha256).digest())
            claims = json.loads(_unb64(body)) if good and prefix == self.prefix else None
        except (ValueError, TypeError):
            claims = None
        if not isinstance(claims, dict):
            raise self._refuse_ticket("bad signature")
        if claims.get("sub") != principal and "principal" not in self.weak:
            raise self._refuse_ticket("wrong principal")
        if self.clock() >= claims.get("exp", 0):
            raise self._refuse_ticket("expired")
        if claims.get("req") != self._digest("deploy", arguments):
            raise self._refuse_ticket("another request")
        return claims


def serve_http(server: WeakServer, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            principal = TOKENS.get(self.headers.get("Authorization", "").removeprefix("Bearer ").strip())
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if principal is None:
                status, reply = 401, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no"}}
            else:
                try:
                    message = json.loads(body)
                except ValueError:
                    message = None
                status, reply = server.handle(message, principal)
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def serve_stdio(server: WeakServer, principal: str) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        _, reply = server.handle(message, principal)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--weak", default=os.environ.get("WEAK_SERVER_WEAK", ""))
    parser.add_argument("--ttl", type=int, default=2)
    args = parser.parse_args()
    server = WeakServer({w for w in args.weak.split(",") if w}, ttl=args.ttl)
    if args.stdio:
        serve_stdio(server, os.environ.get("MRTR_PRINCIPAL") or "bob")
        return 0
    httpd = serve_http(server, args.port)
    print(f"listening on {httpd.server_address[1]}", flush=True)
    httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
