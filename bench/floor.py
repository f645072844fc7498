"""The floor server: the deploy flow's two answers as canned bytes, with no checks at all.

It is a ceiling for `python -m bench --cluster`, not a competitor: it shows how many flows a second
the stack itself (granian with scripts/production.sh's settings, alone or behind deploy/nginx.conf)
carries on this machine when the application does nothing. No real MCP server can reach it, and it
is not one: it authenticates nobody, parses nothing, mints and verifies no ticket, redeems nothing
and echoes no JSON-RPC id (the same `id` comes back every time; the load generator does not check
ids, a real client would).

The only look at a request is one byte-substring search, `b'"requestState"' in body`, to pick
which of the two answers to send: a retry carries the ticket, round one does not. Both answers are
built once, at import, in the shapes and about the sizes of our app's (662 and 219 bytes against its
660 and 217, with a stand-in ticket as long as its signed one), so the bytes on the wire, the
retry's echo included, are comparable; the ticket is an obvious fake.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "mrtr-floor", "version": "0.1.0"}}
#: A fixed stand-in for a ticket, the length of our app's signed one: never minted, never checked.
FAKE_REQUEST_STATE = ("floor.canned-request-state-not-a-ticket." * 7)[:251]


def _dump(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


ROUND_ONE = _dump({"jsonrpc": "2.0", "id": 1, "result": {
    "resultType": "input_required",
    "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Deploy to staging?",
        "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Yes, deploy"}},
                            "required": ["confirm"]}}}},
    "requestState": FAKE_REQUEST_STATE,
    "_meta": SERVER_INFO}})
RETRY = _dump({"jsonrpc": "2.0", "id": 1, "result": {
    "content": [{"type": "text", "text": "deployed to staging"}], "isError": False, "resultType": "complete",
    "_meta": SERVER_INFO}})
HEADERS = {body: [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            for body in (ROUND_ONE, RETRY)}


def answer_for(body: bytes) -> bytes:
    """Which canned answer a body gets: the retry's when it carries a ticket, round one's otherwise."""
    return RETRY if b'"requestState"' in body else ROUND_ONE


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Any request gets 200 and one of the two canned answers; the body is read only to choose which."""
    answer = answer_for(environ["wsgi.input"].read())
    start_response("200 OK", HEADERS[answer])
    return [answer]


def create_app() -> Callable[..., Iterable[bytes]]:
    """For granian's `--factory`, which scripts/production.sh's options include."""
    return app
