"""Small MRTR clients for grading `mrtr check-client`: `SmallClient` is sound (it passes every rule), and each
flag in `Flaws` breaks exactly one rule, the way a real client gets it wrong. They speak stateless HTTP with urllib,
or stdio to the server command they are given, print one `tool: outcome` line per tool (exit 1 when one was
refused), and pace state-only rounds by advancing the grading server's fake clock, so no test waits.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from mrtr import JSONObject, as_object
from mrtr.protocol import META_CAPABILITIES, META_VERSION, MODERN_VERSION


@dataclass(frozen=True)
class Flaws:
    reserialise_ticket: bool = False  # json.loads then json.dumps the ticket
    reuse_id: bool = False  # retry with the first call's id
    resend_old_answers: bool = False  # keep every earlier round's answers in inputResponses
    no_bound: bool = False  # retry input_required forever
    no_pacing: bool = False  # retry a state-only round at once
    leak_ticket: bool = False  # carry the last ticket into the next call
    answer_yes: bool = False  # answer every field "yes", whatever its type
    change_arguments: bool = False  # retry with the arguments changed
    empty_ticket: bool = False  # send requestState "" when the server gave none
    answer_state_only: bool = False  # answer a state-only round with the last answers
    answer_url: bool = False  # answer a URL-mode request (with content) though only form was declared
    retry_unknown: bool = False  # take an unknown resultType as a reason to ask again
    retry_empty: bool = False  # retry an input_required with neither member
    stale_ticket: bool = False  # keep sending the first ticket of a call
    retry_malformed: bool = False  # read a malformed input_required as "no questions" and retry
    answer_undeclared: bool = False  # answer a roots/list request though roots was never declared
    decline_to_accept: bool = False  # turn the user's decline into an accept
    silent_bound: bool = False  # give up after the bound but report the call complete
    no_name_header: bool = False  # leave Mcp-Name out of the HTTP headers
    no_capabilities: bool = False  # leave clientCapabilities out of _meta
    swallow_version_error: bool = False  # take -32022 as an empty, complete result


def by_schema(schema: JSONObject, yes: bool) -> JSONObject:
    content: JSONObject = {}
    for key, raw in as_object(schema.get("properties")).items():
        prop = as_object(raw)
        if yes:
            content[key] = "yes"
        elif "default" in prop:
            content[key] = prop["default"]
        elif isinstance(choices := prop.get("enum"), list) and choices:
            content[key] = choices[0]
        elif prop.get("type") == "boolean":
            content[key] = True
        elif prop.get("type") in ("integer", "number"):
            content[key] = prop.get("minimum", 1)
        else:
            content[key] = "x"
    return content


class Refused(Exception):
    """The client refuses the call (its outcome line says why)."""


class StdioServer:
    """The server command the client was given, started once and spoken to one line each way."""

    def __init__(self, command: str) -> None:
        self.process = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def exchange(self, body: bytes) -> JSONObject:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(body + b"\n")
        self.process.stdin.flush()
        return as_object(json.loads(self.process.stdout.readline()))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


class SmallClient:
    """A client of the grading server: discover, list, call every tool and resolve its input_required. `target`
    is the URL, or with `stdio` the server command; `choices` are the user's actions keyed by question key."""

    def __init__(self, target: str, flaws: Flaws, advance: Callable[[float], None], *, stdio: bool = False,
                 choices: dict[str, str] | None = None) -> None:
        self.target, self.flaws, self.advance = target, flaws, advance
        self.stdio = StdioServer(target) if stdio else None
        self.choices = choices or {}
        self.next_id = 0
        self.last_ticket: str | None = None
        self.version = MODERN_VERSION
        self.lines: list[str] = []

    @property
    def meta(self) -> JSONObject:
        meta: JSONObject = {META_VERSION: self.version}
        if not self.flaws.no_capabilities:
            meta[META_CAPABILITIES] = {"elicitation": {"form": {}}}
        return meta

    def post(self, method: str, params: JSONObject, id_: int | None = None) -> JSONObject:
        if id_ is None:
            self.next_id += 1
            id_ = self.next_id
        body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}).encode()
        if self.stdio is not None:
            return self.stdio.exchange(body)
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": str(as_object(params.get("_meta")).get(META_VERSION)),
                   "Mcp-Method": method}
        if method == "tools/call" and not self.flaws.no_name_header:
            headers["Mcp-Name"] = str(params.get("name"))
        request = urllib.request.Request(self.target, data=body, headers=headers)
        with urllib.request.urlopen(request, timeout=10) as response:
            return as_object(json.loads(response.read()))

    def run(self) -> tuple[int, str]:
        """Call every tool; the exit status (1 when a call was refused) and the printed outcome lines."""
        try:
            self.post("server/discover", {"_meta": self.meta})
            tools = as_object(self.post("tools/list", {"_meta": self.meta}).get("result")).get("tools")
            for tool in tools if isinstance(tools, list) else []:
                name = str(as_object(tool).get("name"))
                arguments: JSONObject = {"word": "same"} if name == "grade_retry_rounds" else {}
                try:
                    self.lines.append(f"{name}: {self.call(name, arguments)}")
                except Refused as exc:
                    self.lines.append(f"{name}: refused: {exc}")
        finally:
            if self.stdio is not None:
                self.stdio.close()
        refused = any(": refused: " in line for line in self.lines)
        return (1 if refused else 0), "\n".join(self.lines) + "\n"

    def call(self, name: str, arguments: JSONObject) -> str:
        """The call's outcome ("complete", "server error ..."); raises Refused when the client refuses it."""
        params: JSONObject = {"name": name, "arguments": arguments, "_meta": self.meta}
        if self.flaws.leak_ticket and self.last_ticket is not None:
            params["requestState"] = self.last_ticket
        first_id: int | None = None
        answers: JSONObject = {}
        rounds = 0
        while True:
            reply = self.post("tools/call", params, first_id if self.flaws.reuse_id else None)
            first_id = first_id or self.next_id
            if "error" in reply:
                if not self.version_retry(as_object(reply["error"]), rounds):
                    return self.server_error(as_object(reply["error"]))
                params = {**params, "_meta": self.meta}
                rounds += 1
                continue
            result = as_object(reply.get("result"))
            if not self.needs_retry(result, rounds):
                return "complete"
            if rounds >= (10**6 if self.flaws.no_bound else 10):
                if self.flaws.silent_bound:
                    return "complete"
                raise Refused(f"gave up after {rounds} rounds")
            rounds += 1
            params, answers = self.next_params(name, arguments, params, result, answers, rounds)

    def version_retry(self, error: JSONObject, rounds: int) -> bool:
        """After -32022, switch to a version the server supports; False when there is nothing to retry."""
        supported = as_object(error.get("data")).get("supported")
        if error.get("code") != -32022 or rounds or not isinstance(supported, list) or not supported:
            return False
        if self.flaws.swallow_version_error:
            return False
        self.version = MODERN_VERSION if MODERN_VERSION in supported else str(supported[0])
        return True

    def server_error(self, error: JSONObject) -> str:
        if error.get("code") == -32022 and self.flaws.swallow_version_error:
            return "complete"
        return f"server error: {error.get('message')}"

    def needs_retry(self, result: JSONObject, rounds: int) -> bool:
        """Whether `result` asks for a retry; raises Refused for what the client must not act on."""
        kind = result.get("resultType")
        if kind == "bogus":
            if self.flaws.retry_unknown and rounds == 0:
                return True
            raise Refused("unknown resultType 'bogus'")
        if kind != "input_required":
            return False
        questions, ticket = result.get("inputRequests"), result.get("requestState")
        malformed = (questions is not None and not isinstance(questions, dict)) or (
            ticket is not None and not isinstance(ticket, str))
        if malformed and not (self.flaws.retry_malformed and rounds == 0):
            raise Refused("malformed input_required")
        if questions is None and ticket is None and not (self.flaws.retry_empty and rounds == 0):
            raise Refused("input_required with neither inputRequests nor requestState")
        return True

    def next_params(self, name: str, arguments: JSONObject, sent_before: JSONObject, result: JSONObject,
                    answers: JSONObject, rounds: int) -> tuple[JSONObject, JSONObject]:
        questions, ticket = result.get("inputRequests"), result.get("requestState")
        again: JSONObject = {"word": "changed"} if self.flaws.change_arguments and arguments else arguments
        params: JSONObject = {"name": name, "arguments": again, "_meta": self.meta}
        if ticket is None and self.flaws.empty_ticket:
            params["requestState"] = ""
        if isinstance(ticket, str):
            if self.flaws.stale_ticket and "requestState" in sent_before:
                ticket = str(sent_before["requestState"])
            self.last_ticket = ticket
            params["requestState"] = (json.dumps(json.loads(ticket)) if self.flaws.reserialise_ticket
                                      and ticket.strip().startswith("{") else ticket)
        elif ticket is not None:  # a malformed ticket, echoed by the flaw that retries it
            params["requestState"] = ticket
        if questions is None and ticket is not None:
            if self.flaws.answer_state_only:  # answers to a question nobody asked
                params["inputResponses"] = {"ok": {"action": "accept", "content": {"ok": True}}}
            self.advance(0.0 if self.flaws.no_pacing else 0.05 * rounds)
            return params, answers
        now = self.answers(questions if isinstance(questions, dict) else {})
        answers = {**answers, **now} if self.flaws.resend_old_answers else now
        params["inputResponses"] = answers
        return params, answers

    def answers(self, questions: JSONObject) -> JSONObject:
        """Answers by schema, or the user's choice; refuses a URL-mode request (only form is declared) and any
        kind but elicitation (none other is declared)."""
        out: JSONObject = {}
        for key, raw in questions.items():
            method = as_object(raw).get("method")
            if method != "elicitation/create":
                if not (self.flaws.answer_undeclared and method == "roots/list"):
                    raise Refused(f"{method} was never declared")
                out[key] = {"roots": []}
                continue
            request_params = as_object(as_object(raw).get("params"))
            if request_params.get("mode") == "url":
                if not self.flaws.answer_url:
                    raise Refused("URL mode was never declared")
                out[key] = {"action": "accept", "content": {}}
                continue
            content = by_schema(as_object(request_params.get("requestedSchema")), self.flaws.answer_yes)
            action = self.choices.get(key, "accept")
            if action == "decline" and self.flaws.decline_to_accept:
                action = "accept"
            out[key] = {"action": "accept", "content": content} if action == "accept" else {"action": action}
        return out
