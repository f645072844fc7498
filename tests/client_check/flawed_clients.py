"""Small MRTR clients for grading `mrtr check-client`: `SmallClient` is sound (it passes every rule), and each
flag in `Flaws` breaks exactly one rule, the way a real client gets it wrong. They speak stateless HTTP with urllib
and pace state-only rounds by advancing the grading server's fake clock, so no test waits.
"""

from __future__ import annotations

import json
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


class SmallClient:
    """A client of the grading server: discover, list, call every tool and resolve its input_required."""

    def __init__(self, url: str, flaws: Flaws, advance: Callable[[float], None]) -> None:
        self.url, self.flaws, self.advance = url, flaws, advance
        self.next_id = 0
        self.last_ticket: str | None = None
        self.meta: JSONObject = {META_VERSION: MODERN_VERSION, META_CAPABILITIES: {"elicitation": {"form": {}}}}

    def post(self, method: str, params: JSONObject, id_: int | None = None) -> JSONObject:
        if id_ is None:
            self.next_id += 1
            id_ = self.next_id
        body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}).encode()
        request = urllib.request.Request(self.url, data=body, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN_VERSION})
        with urllib.request.urlopen(request, timeout=10) as response:
            return as_object(json.loads(response.read()))

    def run(self) -> int:
        self.post("server/discover", {"_meta": self.meta})
        tools = as_object(self.post("tools/list", {"_meta": self.meta}).get("result")).get("tools")
        for tool in tools if isinstance(tools, list) else []:
            name = str(as_object(tool).get("name"))
            arguments: JSONObject = {"word": "same"} if name == "grade_retry_rounds" else {}
            self.call(name, arguments)
        return 0

    def call(self, name: str, arguments: JSONObject) -> None:
        params: JSONObject = {"name": name, "arguments": arguments, "_meta": self.meta}
        if self.flaws.leak_ticket and self.last_ticket is not None:
            params["requestState"] = self.last_ticket
        first_id: int | None = None
        answers: JSONObject = {}
        rounds = 0
        while True:
            reply = self.post("tools/call", params, first_id if self.flaws.reuse_id else None)
            first_id = first_id or self.next_id
            result = as_object(reply.get("result"))
            kind = result.get("resultType")
            retry_anyway = kind == "bogus" and self.flaws.retry_unknown and rounds == 0
            if (kind != "input_required" and not retry_anyway) or rounds >= (10**6 if self.flaws.no_bound else 10):
                return
            questions, ticket = result.get("inputRequests"), result.get("requestState")
            if questions is None and ticket is None and not (self.flaws.retry_empty or retry_anyway):
                return
            if (questions is None and ticket is None) and rounds:
                return
            rounds += 1
            sent_before = params
            again: JSONObject = {"word": "changed"} if self.flaws.change_arguments and arguments else arguments
            params = {"name": name, "arguments": again, "_meta": self.meta}
            if ticket is None and self.flaws.empty_ticket:
                params["requestState"] = ""
            if isinstance(ticket, str):
                if self.flaws.stale_ticket and "requestState" in sent_before:
                    ticket = str(sent_before["requestState"])
                self.last_ticket = ticket
                params["requestState"] = (json.dumps(json.loads(ticket)) if self.flaws.reserialise_ticket
                                          and ticket.strip().startswith("{") else ticket)
            if questions is None and ticket is not None:
                if self.flaws.answer_state_only:  # answers to a question nobody asked
                    params["inputResponses"] = {"ok": {"action": "accept", "content": {"ok": True}}}
                self.advance(0.0 if self.flaws.no_pacing else 0.05 * rounds)
                continue
            now = self.answers(as_object(questions)) if questions is not None else {}
            if now is None:
                return
            answers = {**answers, **now} if self.flaws.resend_old_answers else now
            params["inputResponses"] = answers

    def answers(self, questions: JSONObject) -> JSONObject | None:
        """Answers by schema; None (refuse the call) for a URL-mode request, since only form is declared."""
        out: JSONObject = {}
        for key, raw in questions.items():
            request_params = as_object(as_object(raw).get("params"))
            if request_params.get("mode") == "url":
                if not self.flaws.answer_url:
                    return None
                out[key] = {"action": "accept", "content": {}}
                continue
            content = by_schema(as_object(request_params.get("requestedSchema")), self.flaws.answer_yes)
            out[key] = {"action": "accept", "content": content}
        return out
