"""A small MCP server over stdio, for the lesson "Build the ticket checks yourself".

Run it with `python server.py`; it reads one JSON-RPC message a line on stdin and writes one a
line on stdout (MCP revision 2026-07-28). It offers one tool, `deploy`, which asks the user to
confirm before it deploys and hands the client a signed requestState ticket to bring back.

Your job is the six functions between the "step" markers: five check the returned ticket, one
reads the answer that came with it. Check your work with the lesson's checker (a short ticket
lifetime keeps its late move's wait short):

    MRTR_TICKET_TTL=3 python -m mrtr check --stdio "python server.py"

Environment:
    MRTR_PRINCIPAL    who is calling (a stdio server has one user per process; default bob)
    MRTR_TICKET_TTL   how many seconds a ticket stays valid (default 120)
    LESSON_SIGNING_KEY  the key tickets are signed with (every process must share it)
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import sys
import time
import traceback
from typing import Any

from itsdangerous import BadSignature, Signer  # noqa: F401 - step 1 needs BadSignature

PROTOCOL_VERSION = "2026-07-28"
PRINCIPAL = os.environ.get("MRTR_PRINCIPAL") or "bob"
TICKET_TTL = float(os.environ.get("MRTR_TICKET_TTL") or 120)
#: HMAC-SHA256 over the payload (itsdangerous would use SHA-1 unless told otherwise).
SIGNER = Signer(os.environ.get("LESSON_SIGNING_KEY", "lesson-only-key-never-use-in-production"),
                salt="build-the-checks.requestState", sep=".", digest_method=hashlib.sha256)
SERVER_INFO = {"name": "build-the-checks", "version": "1.1"}
#: How long a client may cache server/discover and tools/list (they are the same for every caller).
LIST_TTL_MS = 300_000

#: Every refused ticket gets this very error, whatever the reason: the reason goes to stderr only.
TICKET_REFUSED = {"code": -32602, "message": "Invalid or expired requestState"}

#: Ticket ids already spent, with the time each expires (kept in memory: one process, one user).
REDEEMED: dict[str, float] = {}

CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Yes, deploy"}},
    "required": ["confirm"],
}


# -- tickets: minting and reading (given) -----------------------------------------------------------


def request_digest(tool: str, arguments: dict[str, Any]) -> str:
    """A fingerprint of one request: the tool's name and its arguments, in a canonical form."""
    text = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def mint_ticket(tool: str, arguments: dict[str, Any], work: dict[str, Any]) -> str:
    """A ticket is "t1.<payload>.<signature>"; the payload is base64url JSON anyone can read."""
    claims = {
        "sub": PRINCIPAL,                             # who asked
        "exp": time.time() + TICKET_TTL,              # when it stops being valid
        "jti": secrets.token_urlsafe(12),             # this ticket's id
        "req": request_digest(tool, arguments),       # the request it belongs to
        "asked": ["confirm"],                         # the questions it asked
        "work": work,                                 # the half-done work
    }
    text = json.dumps(claims, sort_keys=True, separators=(",", ":"))
    payload = base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
    return "t1." + SIGNER.sign(payload).decode()


def read_claims(ticket: str) -> dict[str, Any] | None:
    """The ticket's payload, decoded WITHOUT checking anything (what any holder can read)."""
    try:
        prefix, payload, _signature = ticket.split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, AttributeError):
        return None
    return claims if prefix == "t1" and isinstance(claims, dict) else None


# -- the six checks: your part ----------------------------------------------------------------------
# They run in this order. Steps 1-4 and 6 return True when the ticket passes, and the first False
# refuses the retry. Step 5 reads the answer instead: "yes", "no", "missing", or it raises BadAnswer.


class BadAnswer(Exception):
    """An answer is there but does not fit its question. The client gets the course's malformed-answer error:
    -32602, "Invalid inputResponses: '<key>': <why>", data {"reason": "invalid_input_response", "key": <key>}."""

    def __init__(self, why: str, key: str | None = None) -> None:
        super().__init__(f"{key!r}: {why}" if key is not None else why)
        self.key = key


# -- step: signature --
def check_signature(ticket: str) -> bool:
    """Step 1: the signature must still belong to the payload the server wrote."""
    try:
        _prefix, rest = ticket.split(".", 1)
        SIGNER.unsign(rest)
    except (ValueError, BadSignature):
        return False
    return True
# -- end of step --


# -- step: principal --
def check_principal(claims: dict[str, Any]) -> bool:
    """Step 2: the ticket must belong to whoever is calling now."""
    return claims.get("sub") == PRINCIPAL
# -- end of step --


# -- step: expiry --
def check_expiry(claims: dict[str, Any]) -> bool:
    """Step 3: the ticket must come back before it expires."""
    exp = claims.get("exp")
    return isinstance(exp, int | float) and time.time() < exp
# -- end of step --


# -- step: request --
def check_same_request(claims: dict[str, Any], tool: str, arguments: dict[str, Any]) -> bool:
    """Step 4: the retry must be the very request the ticket was minted for."""
    return claims.get("req") == request_digest(tool, arguments)
# -- end of step --


# -- step: answer --
def check_answer_included(claims: dict[str, Any], responses: dict[str, Any]) -> str:
    """Step 5: what the user answered to every question the ticket asked: "yes", "no" or "missing"."""
    said = "yes"
    for key in claims.get("asked", []):
        if key not in responses:
            return "missing"
        answer = responses[key]
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise BadAnswer("the answer is not an elicitation result (an object whose action is accept, "
                            "decline or cancel)", key)
        if answer["action"] != "accept":
            said = "no"  # declined or cancelled: the call ends without the work
            continue
        content = answer.get("content")
        if not isinstance(content, dict) or not isinstance(content.get("confirm"), bool):
            raise BadAnswer("an accepted answer needs a true-or-false confirm in its content", key)
        if content["confirm"] is not True:
            said = "no"
    return said
# -- end of step --


# -- step: single-use --
def check_not_redeemed(claims: dict[str, Any]) -> bool:
    """Step 6: a ticket is spent once; remember it until it expires."""
    now = time.time()
    for jti in [j for j, exp in REDEEMED.items() if exp <= now]:
        del REDEEMED[jti]  # expired tickets are refused anyway: forget them
    jti = claims.get("jti")
    if not isinstance(jti, str) or jti in REDEEMED:
        return False
    REDEEMED[jti] = float(claims.get("exp", now))
    return True
# -- end of step --


# -- the deploy tool (given) ------------------------------------------------------------------------


class Refused(Exception):
    """A ticket failed a check: the client gets TICKET_REFUSED, the log gets the reason."""


def ask(tool: str, arguments: dict[str, Any], env: str) -> dict[str, Any]:
    question = {"method": "elicitation/create",
                "params": {"mode": "form", "message": f"Deploy to {env}?", "requestedSchema": CONFIRM_SCHEMA}}
    return {"resultType": "input_required", "inputRequests": {"confirm": question},
            "requestState": mint_ticket(tool, arguments, {"env": env})}


def text(message: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": message}], "isError": False}


def deploy(arguments: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    env = arguments.get("env")
    if not isinstance(env, str) or not env:
        raise RpcError(-32602, "deploy needs an env, a non-empty string")
    ticket = params.get("requestState")
    if ticket is None:  # round one: ask, and forget everything
        return ask("deploy", arguments, env)
    if not isinstance(ticket, str):
        raise Refused("requestState must be a string")
    if not check_signature(ticket):
        raise Refused("signature")
    claims = read_claims(ticket)
    if claims is None:
        raise Refused("the ticket cannot be read")
    if not check_principal(claims):
        raise Refused("principal")
    if not check_expiry(claims):
        raise Refused("expiry")
    if not check_same_request(claims, "deploy", arguments):
        raise Refused("request")
    work = claims.get("work") if isinstance(claims.get("work"), dict) else {}
    target = str(work.get("env", env))  # the work comes from the ticket the checks let through
    responses = params.get("inputResponses")
    if responses is None:
        responses = {}
    if not isinstance(responses, dict):
        raise BadAnswer("inputResponses must be an object")
    said = check_answer_included(claims, responses)
    if said == "missing":
        return ask("deploy", arguments, target)  # an answer is missing: ask again, with a fresh ticket
    # Single use last: a refused or unanswered retry must never spend the ticket.
    if not check_not_redeemed(claims):
        raise Refused("single-use")
    if said == "yes":
        return text(f"deployed to {target}")
    return text(f"nothing was deployed to {target}: the user did not confirm")

# -- JSON-RPC over stdio (given) --------------------------------------------------------------------

DEPLOY_TOOL = {
    "name": "deploy",
    "description": "Deploy the current build to an environment. Asks the user to confirm first.",
    "inputSchema": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]},
}


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error = {"code": code, "message": message, **({"data": data} if data is not None else {})}


META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def handle(method: str, params: dict[str, Any]) -> dict[str, Any]:
    # Every 2026-07-28 request, server/discover included, carries these two keys in params._meta.
    meta = params.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get(META_VERSION), str) \
            or not isinstance(meta.get(META_CAPABILITIES), dict):
        raise RpcError(-32602, f"Missing params._meta with {META_VERSION} and {META_CAPABILITIES}")
    version = meta[META_VERSION]
    if version != PROTOCOL_VERSION:
        raise RpcError(-32022, "Unsupported protocol version", {"supported": [PROTOCOL_VERSION], "requested": version})
    if method == "server/discover":
        return {"resultType": "complete", "supportedVersions": [PROTOCOL_VERSION], "capabilities": {"tools": {}},
                "ttlMs": LIST_TTL_MS, "cacheScope": "public"}
    if method == "tools/list":
        return {"resultType": "complete", "tools": [DEPLOY_TOOL], "ttlMs": LIST_TTL_MS, "cacheScope": "public"}
    if method == "tools/call":
        if params.get("name") != "deploy":
            raise RpcError(-32602, f"Unknown tool: {params.get('name')}")
        caps = meta[META_CAPABILITIES]
        if not isinstance(caps.get("elicitation"), dict):
            raise RpcError(-32021, "deploy asks the user to confirm: declare the elicitation capability",
                           {"requiredCapabilities": {"elicitation": {"form": {}}}})
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        try:
            return deploy(arguments, params)
        except BadAnswer as exc:
            data = {"reason": "invalid_input_response", **({"key": exc.key} if exc.key is not None else {})}
            raise RpcError(-32602, f"Invalid inputResponses: {exc}", data) from None
    raise RpcError(-32601, f"Method not found: {method}")


def respond(line: str) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}}
    if "id" not in message:
        return None  # a notification: nothing to answer
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    try:
        result = handle(message["method"], params)
    except Refused as exc:
        print(f"[server] ticket refused at the {exc} check", file=sys.stderr, flush=True)
        return {"jsonrpc": "2.0", "id": message["id"], "error": dict(TICKET_REFUSED)}
    except RpcError as exc:
        return {"jsonrpc": "2.0", "id": message["id"], "error": exc.error}
    except Exception:  # a bug in a check: show it on stderr, keep serving, and tell the client no more
        traceback.print_exc(file=sys.stderr)
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": "Internal error"}}
    # Every result names the server (the spec's SHOULD for 2026-07-28 results).
    return {"jsonrpc": "2.0", "id": message["id"], "result": {**result, "_meta": {META_SERVER_INFO: SERVER_INFO}}}

def main() -> None:
    print(f"[server] ready for {PRINCIPAL}; tickets live {TICKET_TTL:g} s", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if line.strip():
            reply = respond(line)
            if reply is not None:
                print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
