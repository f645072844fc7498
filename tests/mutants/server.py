"""A small SOUND MRTR server, written from the spec alone (stdlib only, no `mrtr` import), and the flawed
variants the mutation suite checks the checker against (`MUTANTS`, each one plausible mistake).

The sound server (`Sound`) follows MCP 2026-07-28 MRTR and its requestState security rules:
- `deploy {env}` asks "Deploy to <env>?" with an `input_required` result and a ticket
  `m1.<payload>.<mac>`: an HMAC-SHA256 over a readable payload {sub, exp, req, jti, work} (integrity is a MUST
  when state drives business logic; confidentiality is optional, so the payload stays readable and its `exp`
  lets the checker's late move wait on a movable clock instead of for real);
- a retry's ticket is checked in order: signature, principal, expiry, same request; every failure gets one
  frozen error (-32602 "Invalid or expired requestState"), whatever the cause, junk included;
- a missing answer is asked for again (a fresh ticket, nothing spent); decline and cancel end the call
  without the work and are never asked again; a malformed answer (not the schema's boolean) gets an error;
- only a retry that passed every other check spends its ticket (a redeemed store keyed on the ticket's jti);
- the capability (-32021) and version (-32022) rules, and `resultType` on every result.

Each mutant is a subclass overriding one small method: the place where that mistake would live.

This is the one flawed server of the tests: the mutation suite (tests/mutants), the checker's CLI and /check
tests (tests/check) and the peers' by-hand ground truth (tests/peers) all start the servers below by name.

Run: in process over HTTP with `serve_http(server)` (bearer tokens bob-token and alice-token); as a process,
over stdio as `python tests/mutants/server.py [NAME]` with the principal in MRTR_PRINCIPAL, or over HTTP as
`python tests/mutants/server.py [NAME] --http PORT` (POST to any path; it prints nothing). The clock is
`time.time()` plus an offset: `server.clock.offset` in process, or a number in the file MRTR_PEER_CLOCK_FILE
names (read at each request) for a process, the clock file every peer of tests/peers reads.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

VERSION = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
TOKENS = {"bob-token": "bob", "alice-token": "alice"}
KEY = b"mutation-suite-shared-key-0123456789abcdef"
TTL = 60
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Yes, deploy"}},
           "required": ["confirm"]}
DEPLOY = {"name": "deploy", "description": "Deploy after a yes.",
          "inputSchema": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}}
#: A second tool that asks for input with the same arguments: a ticket of one must not work on the other.
RESTART = {"name": "restart", "description": "Restart the environment after a yes.",
           "inputSchema": DEPLOY["inputSchema"]}
FROZEN = "Invalid or expired requestState"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Clock:
    """The server's now: the system time plus an offset the tests move (in process, or through a file)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = Path(path) if path else None
        self._offset = 0.0

    @property
    def offset(self) -> float:
        if self.path is not None:
            try:
                return float(self.path.read_text() or 0)
            except (OSError, ValueError):
                return 0.0
        return self._offset

    @classmethod
    def at_zero(cls, path: Path) -> Clock:
        """A clock kept in the file `path`, (re)set to no offset: the tests' side of a process's clock."""
        path.write_text("0")
        path.with_name(path.name + ".cache").unlink(missing_ok=True)  # a file-backed cache starts empty too
        return cls(str(path))

    def advance(self, seconds: float) -> None:
        if self.path is not None:
            self.path.write_text(str(self.offset + seconds))
        else:
            self._offset += seconds

    def now(self) -> float:
        return time.time() + self.offset

    #: Called for the time, like the app's FakeClock: the checker's `Timing(clock=c, sleep=c.advance)` takes either.
    __call__ = now


class Refused(Exception):
    def __init__(self, code: int, message: str, data: Any = None, status: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.status = code, message, data, status


class BadTicket(Exception):
    """A ticket failed a check; `check` names which (for the log only, never for the client)."""

    def __init__(self, check: str) -> None:
        super().__init__(check)
        self.check = check


class Sound:
    """The control: every rule kept. Two tools ask for input with the same arguments (deploy and restart), and a
    ticket is bound to its tool as well as its arguments."""

    #: The tools listed, each asking "<verb> <env>?" under the key confirm; the first is the one the checker plays.
    tools: tuple[dict[str, Any], ...] = (DEPLOY, RESTART)
    #: The checker's --late-after for this server: None when the ticket's exp is readable (the checker waits for it).
    late_after: float | None = None

    def __init__(self, clock: Clock | None = None, key: bytes = KEY, ttl: int = TTL) -> None:
        self.clock = clock or Clock()
        self.key = key
        self.ttl = ttl
        self.redeemed: set[Any] = set()
        self.deploys = 0
        self.lock = threading.Lock()
        #: The caller's bearer token over HTTP (only the variant that echoes it back reads it).
        self.bearer = ""

    # -- the wire -------------------------------------------------------------------------------------

    def handle(self, message: Any, principal: str) -> tuple[int, dict[str, Any]]:
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            result = self.dispatch(message, principal)
            return 200, {"jsonrpc": "2.0", "id": request_id, "result": result}
        except Refused as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            return exc.status, {"jsonrpc": "2.0", "id": request_id, "error": error}

    def dispatch(self, message: Any, principal: str) -> dict[str, Any]:
        if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
            raise Refused(-32600, "Invalid request", status=400)
        params = message["params"]
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        self.check_version(meta.get(META_VERSION))
        method = message.get("method")
        if method == "tools/list":
            return self.complete({"tools": list(self.tools)})
        if method != "tools/call" or params.get("name") not in {t["name"] for t in self.tools}:
            raise Refused(-32601, "Method not found")
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        self.check_capability(meta.get(META_CAPS) if isinstance(meta.get(META_CAPS), dict) else {})
        return self.deploy(message, principal, arguments)

    def complete(self, result: dict[str, Any]) -> dict[str, Any]:
        return {"resultType": "complete", **result}

    def check_version(self, version: Any) -> None:
        if version != VERSION:
            raise Refused(-32022, "Unsupported protocol version", {"supported": [VERSION], "requested": version}, 400)

    def check_capability(self, caps: dict[str, Any]) -> None:
        if "elicitation" not in caps:
            raise Refused(-32021, "deploy asks for confirmation: it needs the elicitation capability",
                          {"requiredCapabilities": {"elicitation": {}}}, 400)

    # -- the tool -------------------------------------------------------------------------------------

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Every tool's prologue: round one asks; a retry's ticket is verified (any failure refused), then
        `proceed` reads the answers."""
        params = message["params"]
        tool = str(params.get("name"))
        if "requestState" not in params:
            return self.ask(principal, arguments, tool)
        try:
            claims = self.verify(params["requestState"], principal, arguments, message)
        except BadTicket as bad:
            return self.refuse_ticket(bad.check)
        return self.proceed(claims, message, principal, arguments)

    def proceed(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
        """A verified retry: ask again without the answer, end on a no, else spend the ticket and do the work."""
        params = message["params"]
        answer = self.answer_of(params.get("inputResponses"))
        decision = self.decide(answer)
        if decision == "missing":
            return self.missing(principal, arguments, str(params.get("name")))
        self.spend(claims, message, principal, arguments)
        if decision == "no":
            return self.nothing()
        return self.work(claims)

    def ask(self, principal: str, arguments: dict[str, Any], tool: str = "deploy") -> dict[str, Any]:
        verb = "Deploy to" if tool == self.tools[0]["name"] else f"{tool.capitalize()}"
        question = {"method": "elicitation/create", "params": {"mode": "form", "message":
                    f"{verb} {arguments.get('env')}?", "requestedSchema": CONFIRM}}
        return {"resultType": "input_required", "inputRequests": {"confirm": question},
                "requestState": self.mint(principal, arguments, tool)}

    def missing(self, principal: str, arguments: dict[str, Any], tool: str = "deploy") -> dict[str, Any]:
        """A retry without the answer is asked again (spec: a new InputRequiredResult, not an error)."""
        return self.ask(principal, arguments, tool)

    def work(self, claims: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.deploys += 1
            number = self.deploys
        # The deploy number differs per call: the checker must mask it to compare two results of the same work.
        tool = claims["work"].get("tool")
        done = f"{tool}: done for" if tool else "deployed to"
        text = f"{done} {claims['work']['env']} (deploy {number}, id {secrets.token_hex(6)})"
        return self.complete({"content": [{"type": "text", "text": text}], "isError": False})

    def refuse_ticket(self, check: str) -> dict[str, Any]:
        raise Refused(-32602, FROZEN, {"reason": "invalid_request_state"})

    # -- the ticket -----------------------------------------------------------------------------------

    def digest(self, arguments: dict[str, Any], tool: str = "deploy") -> str:
        """The request a ticket is bound to: the method, the tool and the arguments."""
        return hashlib.sha256(json.dumps(["tools/call", tool, arguments], sort_keys=True).encode()).hexdigest()[:24]

    def sign(self, body: str) -> str:
        return _b64(hmac.new(self.key, body.encode(), hashlib.sha256).digest())

    def mint(self, principal: str, arguments: dict[str, Any], tool: str = "deploy", **extra: Any) -> str:
        """A ticket; `extra` claims (a flow's step) go into the signed payload too."""
        payload = {"sub": principal, "exp": int(self.clock.now()) + self.ttl, "req": self.digest(arguments, tool),
                   "jti": secrets.token_hex(8), "work": self.work_of(arguments, tool), **extra}
        body = _b64(json.dumps(payload, sort_keys=True).encode())
        return f"m1.{body}.{self.sign(body)}"

    def open(self, ticket: Any) -> dict[str, Any]:
        """The ticket's claims once its signature matches; any other input is a BadTicket("signature")."""
        if not isinstance(ticket, str) or len(ticket) > 4096:
            raise BadTicket("signature")
        parts = ticket.split(".")
        if len(parts) != 3 or parts[0] != "m1":
            raise BadTicket("signature")
        self.check_signature(parts[1], parts[2])
        try:
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            raise BadTicket("signature") from None
        if not isinstance(claims, dict) or not isinstance(claims.get("work"), dict):
            raise BadTicket("signature")
        return claims

    def check_signature(self, body: str, mac: str) -> None:
        if not hmac.compare_digest(mac.encode(), self.sign(body).encode()):
            raise BadTicket("signature")

    def verify(self, ticket: Any, principal: str, arguments: dict[str, Any], message: dict[str, Any]
               ) -> dict[str, Any]:
        claims = self.open(ticket)
        self.check_principal(claims, principal)
        self.check_expiry(claims)
        self.check_request(claims, arguments, str(message["params"].get("name")))
        self.check_unspent(claims, message, principal, arguments)
        return claims

    def check_principal(self, claims: dict[str, Any], principal: str) -> None:
        if claims.get("sub") != principal:
            raise BadTicket("principal")

    def check_expiry(self, claims: dict[str, Any]) -> None:
        exp = claims.get("exp")
        if not isinstance(exp, int) or self.clock.now() >= exp:
            raise BadTicket("expiry")

    def check_request(self, claims: dict[str, Any], arguments: dict[str, Any], tool: str = "deploy") -> None:
        if claims.get("req") != self.digest(arguments, tool):
            raise BadTicket("request")

    def work_of(self, arguments: dict[str, Any], tool: str) -> dict[str, Any]:
        """What the ticket carries to the retry: the env, and the tool when it is not the first."""
        return {"env": arguments.get("env")} if tool == self.tools[0]["name"] else \
            {"env": arguments.get("env"), "tool": tool}

    # -- single use -----------------------------------------------------------------------------------

    def redeemed_key(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                     arguments: dict[str, Any]) -> Any:
        return claims.get("jti")

    def check_unspent(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                      arguments: dict[str, Any]) -> None:
        if self.redeemed_key(claims, message, principal, arguments) in self.redeemed:
            raise BadTicket("single-use")

    def spend(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
              arguments: dict[str, Any]) -> None:
        """Mark the ticket redeemed: only here, once every other check has passed and an answer came."""
        key = self.redeemed_key(claims, message, principal, arguments)
        with self.lock:
            if key in self.redeemed:
                raise Refused(-32602, FROZEN, {"reason": "invalid_request_state"})
            self.redeemed.add(key)

    # -- the answer -----------------------------------------------------------------------------------

    @staticmethod
    def answer_of(responses: Any) -> Any:
        return responses.get("confirm") if isinstance(responses, dict) else None

    def decide(self, answer: Any) -> str:
        """"yes", "no" (declined, cancelled, or a false confirm) or "missing"; a malformed answer is an error
        (spec, MRTR "Error Handling": malformed inputResponses SHOULD get a JSON-RPC error)."""
        if answer is None:
            return "missing"
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise Refused(-32602, "Invalid inputResponses: confirm is not an elicitation result")
        if answer["action"] != "accept":
            return "no"
        content = answer.get("content")
        confirm = content.get("confirm") if isinstance(content, dict) else None
        if not isinstance(confirm, bool):
            raise Refused(-32602, "Invalid inputResponses: confirm must be true or false")
        return "yes" if confirm else "no"

    def nothing(self) -> dict[str, Any]:
        return self.complete({"content": [{"type": "text", "text": "nothing deployed: the user said no"}],
                              "isError": False})


# -- sound servers of other shapes: the flows a checker must follow (controls, every move holds) ---------------

WINDOW = {"type": "object", "properties": {"window": {"type": "string", "enum": ["now", "tonight"], "title": "When"}},
          "required": ["window"]}


class TwoRounds(Sound):
    """Sound, in two rounds (legal multi-round MRTR, like the conformance suite's multi-round scenario): after the
    yes it spends the ticket and asks a second, different question (when to deploy) with a new requestState; only
    the answer to that one does the work, on a ticket of its own."""

    second_key = "window"

    def proceed(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        tool = str(params.get("name"))
        responses = params.get("inputResponses") if isinstance(params.get("inputResponses"), dict) else {}
        second = claims.get("step") == 2
        decision = self.decide_second(responses.get(self.second_key), claims) if second else \
            self.decide(self.answer_of(responses))
        if decision == "missing":
            return self.ask_second(principal, arguments, tool) if second else self.missing(principal, arguments, tool)
        self.spend(claims, message, principal, arguments)
        if decision == "no":
            return self.nothing()
        return self.work(claims) if second else self.ask_second(principal, arguments, tool)

    def ask_second(self, principal: str, arguments: dict[str, Any], tool: str = "deploy") -> dict[str, Any]:
        question = {"method": "elicitation/create", "params": {"mode": "form", "message": "Deploy now or tonight?",
                                                                "requestedSchema": WINDOW}}
        return {"resultType": "input_required", "inputRequests": {self.second_key: question},
                "requestState": self.mint(principal, arguments, tool, step=2)}

    def decide_second(self, answer: Any, claims: dict[str, Any]) -> str:
        if answer is None:
            return "missing"
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise Refused(-32602, "Invalid inputResponses: window is not an elicitation result")
        if answer["action"] != "accept":
            return "no"
        window = answer.get("content", {}).get("window") if isinstance(answer.get("content"), dict) else None
        if window not in ("now", "tonight"):
            raise Refused(-32602, "Invalid inputResponses: window must be now or tonight")
        return "yes"


class FreeTextSecond(TwoRounds):
    """Sound, in two rounds whose second asks for free text ("type the environment's name to confirm"): a wrong name
    ends the call without the work, with the very result a no gets, so a checker that guesses the text cannot tell
    its own honest flow from a refusal (it must say not-run and ask for --answers, never fail)."""

    second_key = "typed"

    def ask_second(self, principal: str, arguments: dict[str, Any], tool: str = "deploy") -> dict[str, Any]:
        schema = {"type": "object", "properties": {"name": {"type": "string", "title": "Type the environment's name"}},
                  "required": ["name"]}
        question = {"method": "elicitation/create", "params": {"mode": "form", "message": "Type the environment's "
                                                                "name to confirm", "requestedSchema": schema}}
        return {"resultType": "input_required", "inputRequests": {self.second_key: question},
                "requestState": self.mint(principal, arguments, tool, step=2)}

    def decide_second(self, answer: Any, claims: dict[str, Any]) -> str:
        if answer is None:
            return "missing"
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise Refused(-32602, "Invalid inputResponses: typed is not an elicitation result")
        content = answer.get("content") if isinstance(answer.get("content"), dict) else {}
        typed = content.get("name") if answer["action"] == "accept" else None
        if answer["action"] == "accept" and not isinstance(typed, str):
            raise Refused(-32602, "Invalid inputResponses: name must be text")
        return "yes" if typed == claims["work"].get("env") else "no"


class StateOnlyFirst(Sound):
    """Sound, shedding load: round one hands back only a requestState (legal: a busy instance passes its progress
    on); the retry with it and no answers gets the question."""

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        tool = str(params.get("name"))
        if "requestState" not in params:
            return {"resultType": "input_required", "requestState": self.mint(principal, arguments, tool, step=0)}
        try:
            claims = self.open(params["requestState"])
        except BadTicket:
            claims = {}
        if claims.get("step") == 0:
            try:
                self.verify(params["requestState"], principal, arguments, message)
            except BadTicket as bad:
                return self.refuse_ticket(bad.check)
            return self.ask(principal, arguments, tool)
        return super().deploy(message, principal, arguments)


class SignsInSecond(TwoRounds):
    """Sound, in two rounds whose second is a URL-mode elicitation (sign in on a page): no client can make up its
    answer, so the checker needs it from the author (`--answers`)."""

    second_key = "login"

    def ask_second(self, principal: str, arguments: dict[str, Any], tool: str = "deploy") -> dict[str, Any]:
        question = {"method": "elicitation/create", "params": {
            "mode": "url", "message": "Sign in to approve the deploy", "url": "https://example.com/approve",
            "elicitationId": secrets.token_hex(4)}}
        return {"resultType": "input_required", "inputRequests": {self.second_key: question},
                "requestState": self.mint(principal, arguments, tool, step=2)}

    def decide_second(self, answer: Any, claims: dict[str, Any]) -> str:
        if answer is None:
            return "missing"
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise Refused(-32602, "Invalid inputResponses: login is not an elicitation result")
        return "yes" if answer["action"] == "accept" else "no"


class Opaque(Sound):
    """Sound, with opaque tickets: a random handle to claims kept server-side, so no holder can read exp (the
    checker needs --late-after for the timed moves). The claims live in this object, or, for processes sharing a
    clock file, in a handles file beside it that every process of the server reads (a shared store, as replicas
    would have)."""

    late_after = TTL + 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tickets: dict[str, dict[str, Any]] = {}
        self.shared = self.clock.path.with_suffix(".handles") if self.clock.path is not None else None

    def mint(self, principal: str, arguments: dict[str, Any], tool: str = "deploy", **extra: Any) -> str:
        ticket = "o1." + secrets.token_urlsafe(24)
        claims = {"sub": principal, "exp": int(self.clock.now()) + self.ttl, "req": self.digest(arguments, tool),
                  "jti": secrets.token_hex(8), "work": self.work_of(arguments, tool), **extra}
        self.tickets[ticket] = claims
        if self.shared is not None:
            with self.lock, self.shared.open("a", encoding="utf-8") as handles:
                handles.write(json.dumps([ticket, claims]) + "\n")
        return ticket

    def open(self, ticket: Any) -> dict[str, Any]:
        claims = self.tickets.get(ticket) if isinstance(ticket, str) else None
        if claims is None and isinstance(ticket, str) and self.shared is not None and self.shared.exists():
            lines = self.shared.read_text(encoding="utf-8").splitlines()
            claims = next((c for t, c in (json.loads(line) for line in lines if line) if t == ticket), None)
        if claims is None:
            raise BadTicket("signature")
        return claims


class TwoQuestions(Sound):
    """Sound, asking two questions in one round (a yes, and a reason under a key of its own): both are needed, a
    missing one is asked again, a malformed one gets an error, and a no to either ends the call."""

    QUESTIONS = {"confirm": CONFIRM, "reason": {"type": "object", "required": ["reason"], "properties": {
        "reason": {"type": "string", "title": "Why now?", "minLength": 2}}}}

    def ask(self, principal: str, arguments: dict[str, Any], tool: str = "deploy") -> dict[str, Any]:
        asked = super().ask(principal, arguments, tool)
        reason = {"method": "elicitation/create", "params": {"mode": "form", "message": "Why deploy now?",
                                                             "requestedSchema": self.QUESTIONS["reason"]}}
        return {**asked, "inputRequests": {**asked["inputRequests"], "reason": reason}}

    def proceed(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        responses = params.get("inputResponses") if isinstance(params.get("inputResponses"), dict) else {}
        if any(responses.get(key) is None for key in self.QUESTIONS):
            return self.missing(principal, arguments, str(params.get("name")))
        decisions = [self.decide(responses["confirm"]), self.decide_reason(responses["reason"])]
        self.spend(claims, message, principal, arguments)
        return self.work(claims) if decisions == ["yes", "yes"] else self.nothing()

    def decide_reason(self, answer: Any) -> str:
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise Refused(-32602, "Invalid inputResponses: reason is not an elicitation result")
        if answer["action"] != "accept":
            return "no"
        reason = answer.get("content", {}).get("reason") if isinstance(answer.get("content"), dict) else None
        if not isinstance(reason, str) or len(reason) < 2:
            raise Refused(-32602, "Invalid inputResponses: reason must be text of at least 2 characters")
        return "yes"


SHIP = {"name": "ship", "description": "Ship a build after an approval.",
        "inputSchema": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}}
ROLLBACK = {"name": "rollback", "description": "Roll back after an approval.", "inputSchema": SHIP["inputSchema"]}
APPROVE = {"type": "object", "properties": {"approved": {"type": "boolean", "title": "Approve"}},
           "required": ["approved"]}


class Renamed(Sound):
    """Sound, with names of its own: tools ship and rollback (no deploy, so the checker finds the tool that asks),
    asking under the key approval for a field approved."""

    tools = (SHIP, ROLLBACK)

    def ask(self, principal: str, arguments: dict[str, Any], tool: str = "ship") -> dict[str, Any]:
        question = {"method": "elicitation/create", "params": {"mode": "form", "message":
                    f"Approve {tool} to {arguments.get('env')}?", "requestedSchema": APPROVE}}
        return {"resultType": "input_required", "inputRequests": {"approval": question},
                "requestState": self.mint(principal, arguments, tool)}

    def answer_of(self, responses: Any) -> Any:  # type: ignore[override]
        """The answer under approval, its field approved read as Sound's confirm (absent stays absent)."""
        answer = responses.get("approval") if isinstance(responses, dict) else None
        if isinstance(answer, dict) and isinstance(answer.get("content"), dict):
            content = answer["content"]
            return {**answer, "content": {"confirm": content["approved"]} if "approved" in content else {}}
        return answer


def _keystream(key: bytes, nonce: bytes, length: int) -> bytes:
    blocks = (hmac.new(key, nonce + n.to_bytes(4, "big"), hashlib.sha256).digest() for n in range(length // 32 + 1))
    return b"".join(blocks)[:length]


class Sealed(Sound):
    """Sound, with sealed tickets: the payload encrypted (an HMAC keystream) and then authenticated (an HMAC tag
    over nonce and ciphertext), so no holder can read exp; the checker needs --late-after for the timed moves."""

    late_after = TTL + 1

    def mint(self, principal: str, arguments: dict[str, Any], tool: str = "deploy", **extra: Any) -> str:
        opened = Sound.mint(self, principal, arguments, tool, **extra).split(".")[1]
        plain, nonce = _unb64(opened), secrets.token_bytes(12)
        sealed = nonce + bytes(a ^ b for a, b in zip(plain, _keystream(self.key + b"enc", nonce, len(plain)),
                                                     strict=True))
        return f"s1.{_b64(sealed)}.{_b64(hmac.new(self.key + b'tag', sealed, hashlib.sha256).digest())}"

    def open(self, ticket: Any) -> dict[str, Any]:
        parts = ticket.split(".") if isinstance(ticket, str) and len(ticket) <= 4096 else []
        if len(parts) != 3 or parts[0] != "s1":
            raise BadTicket("signature")
        try:
            sealed, tag = _unb64(parts[1]), _unb64(parts[2])
        except ValueError:
            raise BadTicket("signature") from None
        if len(sealed) < 13 or not hmac.compare_digest(tag, hmac.new(self.key + b"tag", sealed,
                                                                        hashlib.sha256).digest()):
            raise BadTicket("signature")
        nonce, body = sealed[:12], sealed[12:]
        plain = bytes(a ^ b for a, b in zip(body, _keystream(self.key + b"enc", nonce, len(body)), strict=True))
        claims = json.loads(plain)
        if not isinstance(claims, dict) or not isinstance(claims.get("work"), dict):
            raise BadTicket("signature")
        return claims


#: How long the slow control takes over each tools/call (a server that does real work before it answers).
SLOW_DELAY = 0.1


class Slow(Sound):
    """Sound, answering every tools/call after SLOW_DELAY seconds: the checker's waits and copies sent at once must
    not mistake a slow answer for a missing one."""

    delay = SLOW_DELAY

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        time.sleep(self.delay)
        return super().deploy(message, principal, arguments)


class OneTool(Sound):
    """Sound, with deploy as its only tool: a ticket cannot be tried on another tool, so that move is not run."""

    tools = (DEPLOY,)


# -- the mutants: one plausible mistake each ------------------------------------------------------------


class AnyAnswerIsYes(Sound):
    """Deploys on decline and cancel: it only ever tried accept + confirm true, so it never reads the action
    and takes a missing confirm for a yes."""

    def decide(self, answer: Any) -> str:
        if answer is None:
            return "missing"
        content = answer.get("content") if isinstance(answer, dict) else None
        confirm = content.get("confirm", True) if isinstance(content, dict) else True
        return "no" if confirm is False else "yes"


class FirstKeyWins(Sound):
    """Reads the answer from whichever key comes first, not from the key it asked: a yes under any key deploys, and
    an extra key placed first is read instead of the answer."""

    @staticmethod
    def answer_of(responses: Any) -> Any:
        return next(iter(responses.values()), None) if isinstance(responses, dict) else None


class MissingAnswerIsYes(Sound):
    """Takes a retry without the answer for a yes: the handler reads "no answer" as "nothing to object to", so a
    ticket alone, its question never answered, does the work."""

    def decide(self, answer: Any) -> str:
        return "yes" if answer is None else super().decide(answer)


class DeclineAsksAgain(Sound):
    """Treats decline and cancel as no answer, so the user who said no is asked again forever."""

    def decide(self, answer: Any) -> str:
        if isinstance(answer, dict) and answer.get("action") in ("decline", "cancel"):
            return "missing"
        return super().decide(answer)


class TruthyConfirm(Sound):
    """Reads confirm for its truth, not its type: confirm "yes" deploys."""

    def decide(self, answer: Any) -> str:
        if isinstance(answer, dict) and answer.get("action") == "accept":
            content = answer.get("content") if isinstance(answer.get("content"), dict) else {}
            return "yes" if content.get("confirm") else "no"
        return super().decide(answer)


class NumberIsAnAnswer(Sound):
    """Takes any answer that is not a result object (a number, a string) for a confirmed yes, as a loose decoder
    that reads "something came back" as consent: `{confirm: 12345}` deploys."""

    def decide(self, answer: Any) -> str:
        if answer is not None and not isinstance(answer, dict):
            return "yes"
        return super().decide(answer)


class MissingConfirmIsYes(Sound):
    """Defaults a missing confirm to true: an accept with nothing in it deploys."""

    def decide(self, answer: Any) -> str:
        if isinstance(answer, dict) and answer.get("action") == "accept" and isinstance(answer.get("content"), dict):
            answer = {**answer, "content": {"confirm": True, **answer["content"]}}
        return super().decide(answer)


class SpendsFirst(Sound):
    """Marks the ticket redeemed as soon as its signature matches, before its other checks and the answer: a
    refused retry (wrong request, no answer) burns the owner's ticket."""

    def open(self, ticket: Any) -> dict[str, Any]:
        claims = super().open(ticket)
        with self.lock:
            if claims.get("jti") in self.redeemed:
                raise BadTicket("single-use")
            self.redeemed.add(claims.get("jti"))
        return claims

    def check_unspent(self, *args: Any) -> None:
        pass  # done in open()

    def spend(self, *args: Any) -> None:
        pass  # done in open()


#: How long the check-then-act mutant's work takes (a real deploy takes a while): copies arriving within it race.
RACE_WINDOW = 0.25


class CheckThenAct(Sound):
    """Single use checked, then the work, then the record: each of several identical retries arriving together
    passes the check before any of them has written the ticket down, so all of them deploy."""

    def spend(self, *args: Any) -> None:
        pass  # recorded after the work instead

    def work(self, claims: dict[str, Any]) -> dict[str, Any]:
        time.sleep(RACE_WINDOW)
        result = super().work(claims)
        with self.lock:
            self.redeemed.add(claims.get("jti"))
        return result


class ForgetsEarly(Sound):
    """Keeps each redemption for 10 s although tickets live 60 s (a cache with its own short expiry): a replay
    late in the ticket's life goes through."""

    KEEP = 10

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spent_at: dict[Any, float] = {}

    def check_unspent(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                      arguments: dict[str, Any]) -> None:
        with self.lock:
            for key, at in list(self.spent_at.items()):
                if self.clock.now() - at > self.KEEP:
                    self.redeemed.discard(key)
                    del self.spent_at[key]
        super().check_unspent(claims, message, principal, arguments)

    def spend(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
              arguments: dict[str, Any]) -> None:
        super().spend(claims, message, principal, arguments)
        self.spent_at[self.redeemed_key(claims, message, principal, arguments)] = self.clock.now()


class KeyedOnRequestId(Sound):
    """Remembers which (ticket, JSON-RPC id) pairs were served, like a retransmission filter: the very same retry
    is refused, the same retry under a new id deploys again."""

    def redeemed_key(self, claims: dict[str, Any], message: dict[str, Any], *args: Any) -> Any:
        return (claims.get("jti"), json.dumps(message.get("id")))


class KeyedOnRequest(Sound):
    """Remembers requests, not tickets: a second, honest call of the same deploy is refused as a replay."""

    def redeemed_key(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                     arguments: dict[str, Any]) -> Any:
        return (principal, self.digest(arguments))


class JunkLeaks(Sound):
    """Parses requestState before any check and lets the parser's exception through as an internal error:
    junk gets a different error than a bad ticket, and leaks its exception text."""

    def open(self, ticket: Any) -> dict[str, Any]:
        try:
            _head, body, mac = str(ticket).split(".")
            json.loads(_unb64(body))
        except Exception as exc:  # noqa: BLE001 (the mistake under test)
            raise Refused(-32603, f"Internal error: {type(exc).__name__}: {exc}") from None
        return super().open(ticket)


class NoSignature(Sound):
    """Decodes the payload without comparing the MAC: an edited payload is believed."""

    def check_signature(self, body: str, mac: str) -> None:
        pass


class PartialSignature(Sound):
    """Signs only the saved work: the principal, expiry, ticket id and request digest ride along unsigned, so any
    holder can rewrite them (a longer life, a fresh id for a replay, another caller's name)."""

    def sign(self, body: str) -> str:
        try:
            claims = json.loads(_unb64(body))
        except ValueError:
            claims = None
        work = claims.get("work") if isinstance(claims, dict) else body
        return super().sign(json.dumps(work, sort_keys=True))


class UnsignedAccepted(Sound):
    """Verifies a signature only when one is there: a ticket whose signature part is empty is taken as it is (the
    JWT "alg: none" mistake)."""

    def check_signature(self, body: str, mac: str) -> None:
        if mac:
            super().check_signature(body, mac)


class NoPrincipal(Sound):
    """Never compares the ticket's sub with the caller: a stolen ticket works for anyone."""

    def check_principal(self, claims: dict[str, Any], principal: str) -> None:
        pass


class NoExpiry(Sound):
    """Writes exp into the ticket but never reads it back."""

    def check_expiry(self, claims: dict[str, Any]) -> None:
        pass


class NoRequestCheck(Sound):
    """Never compares the ticket's request digest with the retry's arguments: a yes for staging deploys prod."""

    def check_request(self, claims: dict[str, Any], arguments: dict[str, Any], tool: str = "deploy") -> None:
        pass


class NoSingleUse(Sound):
    """Keeps no redeemed store: the same retry deploys as often as it is sent."""

    def check_unspent(self, *args: Any) -> None:
        pass

    def spend(self, *args: Any) -> None:
        pass


class RevealsCheck(Sound):
    """Says in the error which check failed: a client learns which part of its forgery worked."""

    def refuse_ticket(self, check: str) -> dict[str, Any]:
        raise Refused(-32602, f"Invalid requestState: the {check} check failed", {"reason": check})


class ProcessKey(Sound):
    """A fresh key per process and no principal binding: over HTTP (one process) a stolen ticket works; over
    stdio a second process cannot even read the first one's tickets, which hides the missing principal check."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key = secrets.token_bytes(32)

    def check_principal(self, claims: dict[str, Any], principal: str) -> None:
        pass


class PreAnswered(Sound):
    """Reads the answer before it asks whether a ticket came: answers sent with no requestState at all are taken
    for the user's yes (a handler that only checks its inputResponses can be pre-answered on round one)."""

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        if "requestState" not in params and self.decide(self.answer_of(params.get("inputResponses"))) == "yes":
            return self.work({"work": {"env": arguments.get("env")}})
        return super().deploy(message, principal, arguments)


class BindsArgumentsOnly(Sound):
    """Binds a ticket to the arguments only, not the tool: deploy's ticket and yes, sent to restart with the same
    arguments, restart (and do deploy's work)."""

    def digest(self, arguments: dict[str, Any], tool: str = "deploy") -> str:
        return super().digest(arguments, "any tool")


class AnswerErrorIsTicketError(Sound):
    """Answers a malformed answer with the frozen bad-ticket error: a client cannot tell "your answer does not fit"
    from "your ticket was refused"."""

    def decide(self, answer: Any) -> str:
        try:
            return super().decide(answer)
        except Refused:
            raise Refused(-32602, FROZEN, {"reason": "invalid_request_state"}) from None


class MalformedAsksAgain(Sound):
    """Not a mutant: takes a malformed answer for no answer and asks again. Allowed, but the spec says such an
    answer SHOULD get an error: the checker warns."""

    def decide(self, answer: Any) -> str:
        try:
            return super().decide(answer)
        except Refused:
            return "missing"


class MissingAnswerIsAnError(Sound):
    """Answers a retry without the answer with an error instead of asking again."""

    def missing(self, principal: str, arguments: dict[str, Any], tool: str = "deploy") -> dict[str, Any]:
        raise Refused(-32602, "Invalid inputResponses: confirm is missing")


class AsksWithoutCapability(Sound):
    """Asks for elicitation even when the request declared no such capability."""

    def check_capability(self, caps: dict[str, Any]) -> None:
        pass


class AnyVersion(Sound):
    """Serves any protocol version it is asked for."""

    def check_version(self, version: Any) -> None:
        pass


class NoResultType(Sound):
    """Leaves resultType off complete results (a pre-2026 habit)."""

    def complete(self, result: dict[str, Any]) -> dict[str, Any]:
        return dict(result)


class _StartOver(Exception):
    """Raised where a bad ticket would be refused, caught where the call starts over."""


class StartsOver(Sound):
    """Answers a bad ticket by starting over with a fresh question, nothing done: state that fails verification
    MUST be rejected (and the official suite's tampered-state scenario takes only a JSON-RPC error)."""

    def refuse_ticket(self, check: str) -> dict[str, Any]:
        raise _StartOver

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().deploy(message, principal, arguments)
        except _StartOver:
            return self.ask(principal, arguments, str(message["params"].get("name")))


class RefusesAsToolResult(Sound):
    """Refuses every bad ticket with the same words, but as an isError tool result (what a tool sends where its SDK
    turns a throw into one): state that fails verification MUST be rejected, and the official suite's
    tampered-state scenario takes only a JSON-RPC error."""

    def refuse_ticket(self, check: str) -> dict[str, Any]:
        return self.complete({"content": [{"type": "text", "text": FROZEN}], "isError": True})


# -- the exploration's classes: sound shapes it must pass, and mistakes only a variation of some round shows -----


class ThreeRounds(TwoRounds):
    """Sound, in three rounds: a yes, then when, then a reason (an enum); each round spends its ticket and mints the
    next, the step signed into it."""

    REASON = {"type": "object", "properties": {"reason": {"type": "string", "enum": ["release", "hotfix"]}},
              "required": ["reason"]}

    def proceed(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
        if claims.get("step") != 3:
            return super().proceed(claims, message, principal, arguments)
        params = message["params"]
        responses = params.get("inputResponses") if isinstance(params.get("inputResponses"), dict) else {}
        answer = responses.get("reason")
        if answer is None:
            return self.ask_third(principal, arguments, str(params.get("name")))
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise Refused(-32602, "Invalid inputResponses: reason is not an elicitation result")
        self.spend(claims, message, principal, arguments)
        content = answer.get("content") if isinstance(answer.get("content"), dict) else {}
        if answer["action"] != "accept":
            return self.nothing()
        if content.get("reason") not in ("release", "hotfix"):
            raise Refused(-32602, "Invalid inputResponses: reason must be release or hotfix")
        return self.work(claims)

    def work(self, claims: dict[str, Any]) -> dict[str, Any]:
        if claims.get("step") == 2:  # the second round's yes asks the third question instead of working
            raise _Third
        return super().work(claims)

    def ask_third(self, principal: str, arguments: dict[str, Any], tool: str) -> dict[str, Any]:
        question = {"method": "elicitation/create", "params": {"mode": "form", "message": "Why?",
                                                                "requestedSchema": self.REASON}}
        return {"resultType": "input_required", "inputRequests": {"reason": question},
                "requestState": self.mint(principal, arguments, tool, step=3)}

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().deploy(message, principal, arguments)
        except _Third:
            return self.ask_third(principal, arguments, str(message["params"].get("name")))


class _Third(Exception):
    """The second round of ThreeRounds went through: ask the third question."""


class PerUserOpaque(Opaque):
    """Sound, with opaque handles kept per user: a handle only exists in its owner's table."""

    def mint(self, principal: str, arguments: dict[str, Any], tool: str = "deploy", **extra: Any) -> str:
        ticket = "o1." + secrets.token_urlsafe(24)
        claims = {"sub": principal, "exp": int(self.clock.now()) + self.ttl, "req": self.digest(arguments, tool),
                  "jti": secrets.token_hex(8), "work": self.work_of(arguments, tool), **extra}
        self.tickets[f"{principal}:{ticket}"] = claims
        if self.shared is not None:
            with self.lock, self.shared.open("a", encoding="utf-8") as handles:
                handles.write(json.dumps([f"{principal}:{ticket}", claims]) + "\n")
        return ticket

    def verify(self, ticket: Any, principal: str, arguments: dict[str, Any], message: dict[str, Any]
               ) -> dict[str, Any]:
        return super().verify(f"{principal}:{ticket}" if isinstance(ticket, str) else ticket, principal, arguments,
                              message)


class Jws(Sound):
    """Sound, with a JWS-style three-part ticket: base64url JSON header, payload, and an HMAC over header.payload."""

    HEADER = _b64(json.dumps({"alg": "HS256", "typ": "mrtr"}).encode())

    def mint(self, principal: str, arguments: dict[str, Any], tool: str = "deploy", **extra: Any) -> str:
        body = super().mint(principal, arguments, tool, **extra).split(".")[1]
        return f"{self.HEADER}.{body}.{self.sign(self.HEADER + '.' + body)}"

    def open(self, ticket: Any) -> dict[str, Any]:
        parts = ticket.split(".") if isinstance(ticket, str) and len(ticket) <= 4096 else []
        if len(parts) != 3:
            raise BadTicket("signature")
        self.check_signature(f"{parts[0]}.{parts[1]}", parts[2])
        try:
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            raise BadTicket("signature") from None
        if not isinstance(claims, dict) or not isinstance(claims.get("work"), dict):
            raise BadTicket("signature")
        return claims


class UrlGated(TwoRounds):
    """Sound, its second round a sign-in page (URL mode) only when the request declares url elicitation, else a form
    question; a URL accept is consent, so the work waits for the server's own record that the page was finished
    (never, here: no client visits it), and the question is asked again."""

    second_key = "approval"
    APPROVED = {"type": "object", "properties": {"approved": {"type": "boolean", "title": "A second person approved"}},
                "required": ["approved"]}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._url = threading.local()

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        meta = message["params"].get("_meta") if isinstance(message["params"].get("_meta"), dict) else {}
        caps = meta.get(META_CAPS) if isinstance(meta.get(META_CAPS), dict) else {}
        self._url.on = isinstance(caps.get("elicitation"), dict) and "url" in caps["elicitation"]
        return super().deploy(message, principal, arguments)

    def ask_second(self, principal: str, arguments: dict[str, Any], tool: str = "deploy") -> dict[str, Any]:
        url = getattr(self._url, "on", False)
        params: dict[str, Any] = {"mode": "url", "message": "Sign in to approve", "url": "https://example.com/ok",
                                  "elicitationId": secrets.token_hex(4)} if url else \
            {"mode": "form", "message": "Approved?", "requestedSchema": self.APPROVED}
        return {"resultType": "input_required", "inputRequests": {self.second_key: {
            "method": "elicitation/create", "params": params}},
            "requestState": self.mint(principal, arguments, tool, step=2, url=url)}

    def decide_second(self, answer: Any, claims: dict[str, Any]) -> str:
        if answer is None:
            return "missing"
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            raise Refused(-32602, "Invalid inputResponses: approval is not an elicitation result")
        if answer["action"] != "accept":
            return "no"
        if claims.get("url"):
            return self.url_accepted(claims)
        content = answer.get("content") if isinstance(answer.get("content"), dict) else {}
        if not isinstance(content.get("approved"), bool):
            raise Refused(-32602, "Invalid inputResponses: approved must be true or false")
        return "yes" if content["approved"] else "no"

    def url_accepted(self, claims: dict[str, Any]) -> str:
        return "missing"  # no record of the page being finished: ask again


class UrlAcceptIsDone(UrlGated):
    """Takes a URL-mode accept for completion, without any record that the page was visited."""

    def url_accepted(self, claims: dict[str, Any]) -> str:
        return "yes"


class UrlUndeclared(SignsInSecond):
    """Asks a URL-mode question although the request declared form elicitation only."""


class SecondRoundUnbound(TwoRounds):
    """Checks the principal and the request on the first round's ticket only: a second-round ticket works for
    anyone, on any arguments."""

    def check_principal(self, claims: dict[str, Any], principal: str) -> None:
        if claims.get("step") != 2:
            super().check_principal(claims, principal)

    def check_request(self, claims: dict[str, Any], arguments: dict[str, Any], tool: str = "deploy") -> None:
        if claims.get("step") != 2:
            super().check_request(claims, arguments, tool)


class SecondRoundReplayable(TwoRounds):
    """Spends the first round's ticket only: the second round's can be replayed."""

    def spend(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
              arguments: dict[str, Any]) -> None:
        if claims.get("step") != 2:
            super().spend(claims, message, principal, arguments)


class SkipsARound(TwoRounds):
    """On the first round's ticket, takes the last round's answer as well: answering when skips the yes."""

    def proceed(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
        responses = message["params"].get("inputResponses")
        if claims.get("step") != 2 and isinstance(responses, dict) and self.second_key in responses:
            self.spend(claims, message, principal, arguments)
            return self.work(claims)
        return super().proceed(claims, message, principal, arguments)


class RereadsEarlierAnswers(TwoRounds):
    """On the second round, reads the first round's yes again from the retry when it is resent, instead of taking
    it from the ticket: a resent "no" beside the second answer changes the outcome."""

    def proceed(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
        responses = message["params"].get("inputResponses")
        if claims.get("step") == 2 and isinstance(responses, dict) and "confirm" in responses:
            if self.decide(self.answer_of(responses)) == "no":
                self.spend(claims, message, principal, arguments)
                return self.nothing()
        return super().proceed(claims, message, principal, arguments)


class MetaIdentity(Sound):
    """Takes the caller's identity from _meta when the request names one, over the transport's credentials."""

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        meta = message["params"].get("_meta") if isinstance(message["params"].get("_meta"), dict) else {}
        claimed = meta.get("user")
        return super().deploy(message, claimed if isinstance(claimed, str) else principal, arguments)


class ArgumentIdentity(Sound):
    """Takes the caller's identity from a `user` argument when one is sent, and binds the ticket to the env only."""

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        claimed = arguments.get("user")
        return super().deploy(message, claimed if isinstance(claimed, str) else principal, arguments)

    def digest(self, arguments: dict[str, Any], tool: str = "deploy") -> str:
        return super().digest({"env": arguments.get("env")}, tool)


class ObjectState(Sound):
    """Takes a requestState that is a JSON object as the claims themselves (a JSON state), unsigned."""

    def open(self, ticket: Any) -> dict[str, Any]:
        if isinstance(ticket, dict) and isinstance(ticket.get("work"), dict):
            return ticket
        return super().open(ticket)


class ContentIsYes(Sound):
    """Reads confirm from the content whatever the action: a decline that carries {confirm: true} deploys."""

    def decide(self, answer: Any) -> str:
        if isinstance(answer, dict) and isinstance(answer.get("content"), dict) and \
                answer["content"].get("confirm") is True:
            return "yes"
        return super().decide(answer)


class CapabilitiesFromTicket(TwoRounds):
    """Checks the elicitation capability on the first call only, and asks the second round whatever the retry
    declares (inferring it from the first request)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry = threading.local()

    def dispatch(self, message: Any, principal: str) -> dict[str, Any]:
        self.retry.on = isinstance(message, dict) and isinstance(message.get("params"), dict) and \
            "requestState" in message["params"]
        return super().dispatch(message, principal)

    def check_capability(self, caps: dict[str, Any]) -> None:
        if not getattr(self.retry, "on", False):
            super().check_capability(caps)


class JwsHeaderUnsigned(Jws):
    """A JWS-style ticket whose HMAC covers the payload alone: the header can be rewritten."""

    def mint(self, principal: str, arguments: dict[str, Any], tool: str = "deploy", **extra: Any) -> str:
        header, body, _sig = super().mint(principal, arguments, tool, **extra).split(".")
        return f"{header}.{body}.{self.sign(body)}"

    def open(self, ticket: Any) -> dict[str, Any]:
        parts = ticket.split(".") if isinstance(ticket, str) and len(ticket) <= 4096 else []
        if len(parts) != 3:
            raise BadTicket("signature")
        return Sound.open(self, f"m1.{parts[1]}.{parts[2]}")


class LenientExactStore(Sound):
    """Decodes a ticket leniently (padding, either base64 alphabet, whitespace skipped) and verifies the decoded
    bytes, but keys its redeemed store on the exact string: the same ticket re-encoded is spent again."""

    def open(self, ticket: Any) -> dict[str, Any]:
        if not isinstance(ticket, str):
            raise BadTicket("signature")
        parts = "".join(ticket.split()).replace("+", "-").replace("/", "_").split(".")
        if len(parts) != 3:
            raise BadTicket("signature")
        body, mac = parts[1].rstrip("="), parts[2].rstrip("=")
        return super().open(f"{parts[0]}.{body}.{mac}")

    def redeemed_key(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                     arguments: dict[str, Any]) -> Any:
        return message["params"].get("requestState")


class CacheForAnyone(Sound):
    """Keeps each ticket's result and serves it to any retry that sends the ticket again, before any check: another
    principal's replay gets the owner's result. As processes (one per principal over stdio) the cache is a file
    beside the clock file that every process shares, as a stdio server's on-disk cache is shared by its users'
    processes: a cache per process would be a cache per principal there, which is no mistake at all."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.results: dict[str, dict[str, Any]] = {}
        self.shared = self.clock.path.with_name(self.clock.path.name + ".cache") if self.clock.path else None

    def kept(self) -> dict[str, Any]:
        if self.shared is None:
            return self.results
        try:
            loaded = json.loads(self.shared.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def keep(self, state: str, result: dict[str, Any]) -> None:
        with self.lock:
            kept = {**self.kept(), state: result}
            if self.shared is None:
                self.results = kept
                return
            spare = self.shared.with_name(f"{self.shared.name}.{os.getpid()}")
            spare.write_text(json.dumps(kept), encoding="utf-8")
            spare.replace(self.shared)  # whole or not at all: a reader never sees half a file

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        state = message["params"].get("requestState")
        kept = self.kept()
        if isinstance(state, str) and isinstance(kept.get(state), dict):
            return dict(kept[state])
        result = super().deploy(message, principal, arguments)
        if isinstance(state, str) and result.get("resultType") == "complete" and "deployed" in json.dumps(result):
            self.keep(state, result)
        return result


class _Kept(Exception):
    """A replay that found its kept result (raised from the single-use check, after every other check passed)."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


class KeepsResults(Sound):
    """Sound, and keeps each retry's result for its principal: the same principal's replay of a spent ticket with
    the same answers, once the signature, principal, expiry and request are checked, gets that result again byte for
    byte (its deploy number and id unchanged), and nothing is deployed again. Another principal, other answers or a
    ticket that fails a check never reach the kept results. Requests are served one at a time, so that of identical
    copies arriving together the first deploys and the others find its result (never a race)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.results: dict[tuple[str, Any, str], dict[str, Any]] = {}
        self.serial = threading.Lock()

    @staticmethod
    def kept_key(claims: dict[str, Any], message: dict[str, Any], principal: str) -> tuple[str, Any, str]:
        answers = json.dumps(message["params"].get("inputResponses"), sort_keys=True)
        return principal, claims.get("jti"), answers

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        with self.serial:
            try:
                return super().deploy(message, principal, arguments)
            except _Kept as kept:
                return self.served_again(kept.result)

    def served_again(self, result: dict[str, Any]) -> dict[str, Any]:
        return result

    def check_unspent(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                      arguments: dict[str, Any]) -> None:
        kept = self.results.get(self.kept_key(claims, message, principal))
        if kept is not None:
            raise _Kept(kept)
        super().check_unspent(claims, message, principal, arguments)

    def proceed(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
        result = super().proceed(claims, message, principal, arguments)
        if result.get("resultType") == "complete":
            self.results[self.kept_key(claims, message, principal)] = result
        return result


class CacheCountedAsWork(KeepsResults):
    """Keeps each retry's result per principal, but counts serving it again as a deploy: the replay gets the kept
    result with the deploy number moved on (reported as new work)."""

    def served_again(self, result: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.deploys += 1
            number = self.deploys
        text = str(result["content"][0]["text"])
        counted = re.sub(r"\(deploy \d+,", f"(deploy {number},", text)
        return {**result, "content": [{"type": "text", "text": counted}]}


#: The mutants by name (the names tests/mutants/expectations.toml uses), and the sound servers.
MUTANTS: dict[str, type[Sound]] = {
    "any-answer-is-yes": AnyAnswerIsYes,
    "decline-asks-again": DeclineAsksAgain,
    "truthy-confirm": TruthyConfirm,
    "missing-confirm-is-yes": MissingConfirmIsYes,
    "spends-first": SpendsFirst,
    "keyed-on-request-id": KeyedOnRequestId,
    "check-then-act": CheckThenAct,
    "forgets-early": ForgetsEarly,
    "keyed-on-request": KeyedOnRequest,
    "junk-leaks": JunkLeaks,
    "no-signature": NoSignature,
    "partial-signature": PartialSignature,
    "unsigned-accepted": UnsignedAccepted,
    "no-principal": NoPrincipal,
    "no-expiry": NoExpiry,
    "no-request-check": NoRequestCheck,
    "no-single-use": NoSingleUse,
    "reveals-check": RevealsCheck,
    "process-key": ProcessKey,
    "missing-answer-is-an-error": MissingAnswerIsAnError,
    "answer-error-is-ticket-error": AnswerErrorIsTicketError,
    "binds-arguments-only": BindsArgumentsOnly,
    "missing-answer-is-yes": MissingAnswerIsYes,
    "first-key-wins": FirstKeyWins,
    "pre-answered": PreAnswered,
    "asks-without-capability": AsksWithoutCapability,
    "any-version": AnyVersion,
    "no-result-type": NoResultType,
    "starts-over": StartsOver,
    "refuses-as-tool-result": RefusesAsToolResult,
    "second-round-unbound": SecondRoundUnbound,
    "second-round-replayable": SecondRoundReplayable,
    "skips-a-round": SkipsARound,
    "rereads-earlier-answers": RereadsEarlierAnswers,
    "meta-identity": MetaIdentity,
    "argument-identity": ArgumentIdentity,
    "object-state": ObjectState,
    "content-is-yes": ContentIsYes,
    "capabilities-from-ticket": CapabilitiesFromTicket,
    "jws-header-unsigned": JwsHeaderUnsigned,
    "lenient-exact-store": LenientExactStore,
    "url-accept-is-done": UrlAcceptIsDone,
    "url-undeclared": UrlUndeclared,
    "cache-for-anyone": CacheForAnyone,
    "cache-counted-as-work": CacheCountedAsWork,
    "number-is-an-answer": NumberIsAnAnswer,
}
SOUND: dict[str, type[Sound]] = {"sound": Sound, "two-rounds": TwoRounds,
                                  "state-only-first": StateOnlyFirst, "opaque": Opaque, "sealed": Sealed,
                                  "two-questions": TwoQuestions, "renamed": Renamed, "slow": Slow,
                                  "free-text-second": FreeTextSecond, "three-rounds": ThreeRounds,
                                  "per-user-opaque": PerUserOpaque, "jws": Jws, "url-gated": UrlGated,
                                  "keeps-results": KeepsResults}


# -- servers for the checker's own verdict tests (tests/check/test_verdicts.py), not mutants ----------------


class HangsOnRetry(Sound):
    """Answers everything but a retry: a retry waits until `release` is set (the test sets it when done)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = threading.Event()

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if "requestState" in message["params"]:
            self.release.wait(30)
        return super().deploy(message, principal, arguments)


class HangsWithoutCapability(HangsOnRetry):
    """Answers every move, but hangs on a call that declares no elicitation capability (the first probe)."""

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return Sound.deploy(self, message, principal, arguments)

    def check_capability(self, caps: dict[str, Any]) -> None:
        if "elicitation" not in caps:
            self.release.wait(30)
        super().check_capability(caps)


class EchoesToken(Sound):
    """Sound, but echoes the caller's bearer token in its refusals and results (a debugging leftover)."""

    def refuse_ticket(self, check: str) -> dict[str, Any]:
        raise Refused(-32602, f"{FROZEN} (caller {self.bearer})", {"reason": "invalid_request_state"})

    def work(self, claims: dict[str, Any]) -> dict[str, Any]:
        result = super().work(claims)
        result["content"][0]["text"] += f" for {self.bearer}"
        return result


class ListsForNobody(Sound):
    """Refuses tools/list with an error that names the caller's bearer token: the check cannot even start."""

    def dispatch(self, message: Any, principal: str) -> dict[str, Any]:
        if isinstance(message, dict) and message.get("method") == "tools/list":
            raise Refused(-32001, f"no tools for the token {self.bearer}")
        return super().dispatch(message, principal)


class MillisecondExp(Sound):
    """Sound on its own clock, but writes exp in milliseconds (a JavaScript habit): every move holds, and the report
    warns that exp reads as milliseconds."""

    def mint(self, principal: str, arguments: dict[str, Any], tool: str = "deploy", **extra: Any) -> str:
        return super().mint(principal, arguments, tool, **extra, exp=int((self.clock.now() + self.ttl) * 1000))

    def check_expiry(self, claims: dict[str, Any]) -> None:
        exp = claims.get("exp")
        if not isinstance(exp, int) or self.clock.now() * 1000 >= exp:
            raise BadTicket("expiry")


class AsksForever(Sound):
    """Asks a new question under a new key after every answer and never finishes: the checker must stop following
    it at its bound, and say so, rather than loop."""

    def proceed(self, claims: dict[str, Any], message: dict[str, Any], principal: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
        step = int(claims.get("step", 1)) + 1
        question = {"method": "elicitation/create", "params": {"mode": "form", "message": f"Question {step}?",
                                                                "requestedSchema": CONFIRM}}
        return {"resultType": "input_required", "inputRequests": {f"q{step}": question},
                "requestState": self.mint(principal, arguments, str(message["params"].get("name")), step=step)}


class ConstantNoSingleUse(NoSingleUse):
    """Keeps no redeemed store, and every deploy answers the same text, a digit in it ("release 2") but nothing that
    differs between two deploys: a replay's result is byte for byte the first use's, and still a second deploy."""

    def work(self, claims: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.deploys += 1
        return self.complete({"content": [{"type": "text", "text": f"deployed to {claims['work']['env']} (release "
                                                                     "2)"}], "isError": False})


VARIANTS: dict[str, type[Sound]] = {"constant-no-single-use": ConstantNoSingleUse,
                                    "one-tool": OneTool, "millisecond-exp": MillisecondExp,
                                    "hangs-on-retry": HangsOnRetry, "echoes-token": EchoesToken,
                                    "lists-for-nobody": ListsForNobody,
                                    "hangs-without-capability": HangsWithoutCapability,
                                    "signs-in-second": SignsInSecond, "asks-forever": AsksForever,
                                    "malformed-asks-again": MalformedAsksAgain}
ALL: dict[str, type[Sound]] = {**SOUND, **MUTANTS, **VARIANTS}


def _message(raw: str | bytes) -> Any:
    """The JSON read from one request, or None for what is not JSON (answered "Invalid request")."""
    try:
        return json.loads(raw)
    except ValueError:
        return None


def serve_http(server: Sound, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for `server` on loopback `port` (0: a free one); call serve_forever (in a thread)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            token = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            principal = TOKENS.get(token)
            server.bearer = token
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if principal is None:
                status, reply = 401, {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "no token"}}
            else:
                status, reply = server.handle(_message(body), principal)
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    # A backlog for the checker's copies sent at once (the default 5 would make the rest wait for a SYN retry).
    ThreadingHTTPServer.request_queue_size = 64
    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    httpd.daemon_threads = True
    return httpd


def serve_stdio(server: Sound, principal: str) -> None:
    """One line, one request, each handled in a thread of its own as it arrives (as an async server would), so
    lines written together are served together; replies go out whole, in the order they are ready."""
    out = threading.Lock()

    def serve(line: str) -> None:
        _, reply = server.handle(_message(line), principal)
        with out:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()

    workers = []
    for line in sys.stdin:
        if line.strip():
            workers.append(threading.Thread(target=serve, args=(line,), daemon=True))
            workers[-1].start()
    for worker in workers:
        worker.join(timeout=30)


def main(argv: list[str]) -> int:
    """`[NAME] [--http PORT]`: server NAME (default sound) over stdio, or over HTTP on PORT."""
    args = list(argv)
    port = None
    if "--http" in args:
        at = args.index("--http")
        port = int(args[at + 1])
        del args[at:at + 2]
    server = ALL[args[0] if args else "sound"](Clock(os.environ.get("MRTR_PEER_CLOCK_FILE")))
    if port is None:
        serve_stdio(server, os.environ.get("MRTR_PRINCIPAL") or "bob")
    else:
        serve_http(server, port).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
