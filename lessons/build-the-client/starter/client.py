"""An MRTR client for "Build the client's loop" (MRTR Lab, lesson 4): it lists a server's tools, calls each once,
and answers every input_required the way revision 2026-07-28 asks a client to.

It is written against a transport of two functions, so the same file runs in two places:
* in the lesson's page, where the lab hands `run` a `send` that reaches the grading server inside the page and a
  `sleep` that moves the grading run's clock (nothing waits);
* from a terminal, as `python client.py URL` (for example under
  `mrtr check-client --command "python client.py"`, which appends the URL), over HTTP with urllib.

The six functions between "# -- step: ... --" markers are the lesson's steps; everything else is given.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

VERSION = "2026-07-28"
#: What this client can answer: form questions and URL-mode pages (declared again on every request).
CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
META = {"io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-lab-lesson-client", "version": "1"}}
#: The most rounds one call may take before the client gives up (the official SDKs stop after 10).
MAX_ROUNDS = 10

Send = Callable[[dict[str, Any]], dict[str, Any]]
Sleep = Callable[[float], None]
_ids = itertools.count(1)


class Refused(Exception):
    """A result this client cannot act on: it stops the call and says why, and never retries it."""


class GaveUp(Exception):
    """The server kept asking past MAX_ROUNDS."""


def new_id() -> int:
    """A JSON-RPC id this client has never used."""
    return next(_ids)


def user_says(key: str) -> str:
    """The person at the keyboard, for a form question: "accept" unless MRTR_CHECK_CLIENT_CHOICES (which
    `mrtr check-client --user-choices` sets: {"key": "decline", ...}) names another choice for this key."""
    try:
        named = json.loads(os.environ.get("MRTR_CHECK_CLIENT_CHOICES", "{}"))
    except ValueError:
        named = {}
    said = named.get(key) if isinstance(named, dict) else None
    return said if said in ("accept", "decline", "cancel") else "accept"


def user_opens(url: str) -> bool:
    """The person at the keyboard, for a URL-mode request: in this lab they open the page and agree."""
    print(f"  (the user opens {url} and agrees)")
    return True


# -- step: retry --
def build_request(call: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """The request for one round of a tools/call."""
    # TODO step 1: every request needs an id of its own, and `fields` must go out exactly as they came.
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**call, **fields}}
# -- end of step --


# -- step: answers --
EVERY_ANSWER: dict[str, Any] = {}


def pick_answers(questions: dict[str, Any]) -> dict[str, Any]:
    """The answers to send with the next retry."""
    # TODO step 2: answer this round's keys only, each value of the type its schema asks for.
    for key, question in questions.items():
        params = question.get("params", {})
        if params.get("mode") == "url":
            EVERY_ANSWER[key] = answer_url(params)
            continue
        fields = params.get("requestedSchema", {}).get("properties", {})
        EVERY_ANSWER[key] = {"action": "accept", "content": {name: "yes" for name in fields}}
    return dict(EVERY_ANSWER)
# -- end of step --


# -- step: carry --
LAST: dict[str, Any] = {}


def carry(result: dict[str, Any] | None, answers: dict[str, Any]) -> dict[str, Any]:
    """What the next request adds to the call's params."""
    # TODO step 3: a fresh call starts empty, and a ticket goes back only when the server sent one.
    if result is not None:
        LAST["requestState"] = result.get("requestState")
    fields = dict(LAST)
    if answers:
        fields["inputResponses"] = answers
    return fields
# -- end of step --


# -- step: rounds --
def next_round(result: dict[str, Any], rounds: int, sleep: Sleep) -> dict[str, Any]:
    """The questions to answer before retry number `rounds`."""
    # TODO step 4: stop after MAX_ROUNDS, and pause (with `sleep`) before retrying a round without questions.
    return result.get("inputRequests", {})
# -- end of step --


# -- step: url --
def answer_url(params: dict[str, Any]) -> dict[str, Any]:
    """The answer to a URL-mode request."""
    # TODO step 5: answer only if CAPABILITIES declares URL mode, with the user's choice and no content.
    return {"action": "accept", "content": {"url": params.get("url")}}
# -- end of step --


# -- step: refuse --
def check_result(result: Any) -> dict[str, Any]:
    """`result` when this client can act on it."""
    # TODO step 6: raise Refused for a result this client cannot act on, instead of retrying it.
    return dict(result)
# -- end of step --


def call_tool(send: Send, sleep: Sleep, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call, round after round until the server completes it (or the client stops)."""
    call = {"name": name, "arguments": arguments, "_meta": META}
    result: dict[str, Any] | None = None
    answers: dict[str, Any] = {}
    rounds = 0
    while True:
        reply = send(build_request(call, carry(result, answers)))
        if "error" in reply:
            error = reply["error"]
            raise Refused(f"the server answered error {error.get('code')}: {error.get('message')}")
        result = check_result(reply.get("result"))
        if result.get("resultType", "complete") == "complete":
            return result
        rounds += 1
        answers = pick_answers(next_round(result, rounds, sleep))


def run(send: Send, sleep: Sleep) -> None:
    """List the server's tools and call each once, with its arguments' defaults; say how each call ended."""
    listed = send({"jsonrpc": "2.0", "id": new_id(), "method": "tools/list", "params": {"_meta": META}})
    for tool in listed.get("result", {}).get("tools", []):
        properties = tool.get("inputSchema", {}).get("properties", {})
        arguments = {k: v["default"] for k, v in properties.items() if "default" in v}
        try:
            result = call_tool(send, sleep, tool["name"], arguments)
        except (Refused, GaveUp) as exc:
            print(f"{tool['name']}: stopped: {exc}")
            continue
        texts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)]
        print(f"{tool['name']}: {' '.join(texts) or 'complete'}")


def http_send(url: str) -> Send:
    """`send` over 2026-07-28 Streamable HTTP: one POST per request, its JSON (or event-stream) answer read back."""
    def send(message: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(url, json.dumps(message).encode(), method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION, "Mcp-Method": message["method"],
            **({"Mcp-Name": message["params"]["name"]} if message["method"] == "tools/call" else {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                body = response.read().decode()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode()
        if body.lstrip().startswith("{"):
            return dict(json.loads(body))
        data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1])) if data else {"error": {"code": -32603, "message": body[:200]}}
    return send


if __name__ == "__main__":
    run(http_send(sys.argv[-1]), time.sleep)
