"""What the engine sends and keeps: the `Call` it makes (tool, arguments, client), each `Step` (a message sent and its
reply), a move's typed `MoveResult`, 2026-07-28 requests (`modern_request`), and what a reply is, read off the wire
alone (`outcome_of`, `reply_text`, `work_of`). Types and pure functions: nothing here sends a message.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field

from mrtr import JSONObject, as_object
from mrtr.messages import RequestId, as_list, request_message
from mrtr.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION, MODERN_VERSION

from .catalog import Move
from .target import Outcome, Reply, Role

#: JSON-RPC ids: round one, and a retry whose move names none.
MINT_ID = 2
RETRY_ID = 3


@dataclass
class Step:
    """One message sent and what came back."""

    role: Role
    at: float
    sent: JSONObject
    reply: Reply
    #: What this message was: "round one", "retry", "junk ticket (empty)", "honest: retry", ...
    label: str = "retry"


def _default_arguments() -> JSONObject:
    return {"env": "staging"}


def _default_other() -> JSONObject:
    return {"env": "prod"}


def _default_capabilities() -> JSONObject:
    return {"elicitation": {"form": {}}}


@dataclass(frozen=True)
class Call:
    """What to call, so the engine is tool-agnostic."""

    tool: str = "deploy"
    arguments: JSONObject = field(default_factory=_default_arguments)
    #: None when the tool has no argument to change: a move that needs another request cannot be played.
    other_arguments: JSONObject | None = field(default_factory=_default_other)
    client_name: str = "mrtr-lab"
    capabilities: JSONObject = field(default_factory=_default_capabilities)
    #: Answers the author supplied (`--answers`): by key for any round, or by round number ("2") then key.
    #: A value for a form question without "action" is its content (sent as an accept); any other is sent as is.
    answers: JSONObject = field(default_factory=dict)
    #: Another listed tool that asks for input when called with the same arguments, and the questions it asked then:
    #: the moves that spend this tool's ticket on it (request "other-tool") go there; None when the server has none.
    #: The default is the lab's second asking tool (the checker sets both from what the server lists).
    cross_tool: str | None = "provision"
    cross_questions: JSONObject = field(default_factory=dict)


@dataclass
class MoveResult:
    move: Move
    outcome: Outcome
    ok: bool
    detail: str
    minted: Step | None  # round one: the owner's first call that answered input_required
    steps: list[Step] = field(default_factory=list)  # the retries (two for repeat moves)
    ticket: str | None = None  # the requestState minted in round one
    #: Why a holding outcome other than the plainest one still holds ("" when none).
    note: str = ""
    #: Calls played only to judge the move (an accepted call to compare with, the owner from a second process).
    controls: list[Step] = field(default_factory=list)
    #: The questions of each round the move's own flow went through, round one first.
    rounds: list[JSONObject] = field(default_factory=list)
    #: Why the checker could not follow the flow to its end ("" when it could, or did not need to).
    stuck: str = ""
    #: True when the outcome is one the move allows only as a warning (`Move.warn`): not ok, and not a failure.
    warn: bool = False
    #: What to fix when the move failed on the form of an otherwise right answer (its detail says which), not on
    #: the mistake the move is there to show: replaces `Move.fix` in the report ("" for the move's own).
    fix: str = ""

    @property
    def stopped_at(self) -> str | None:
        """The first failing check of the last step's trace, when the target exposes one."""
        if not self.steps or self.steps[-1].reply.trace is None:
            return None
        return next((c["check"] for c in self.steps[-1].reply.trace if c.get("outcome") == "fail"), None)

    @property
    def last(self) -> Step | None:
        return self.steps[-1] if self.steps else None


def outcome_of(reply: Reply) -> Outcome:
    """Classify a reply from the wire alone: error or isError -> REFUSED, input_required -> ASKED_AGAIN."""
    response = reply.response
    if not isinstance(response, dict):
        return Outcome.ERROR
    if "error" in response:
        return Outcome.REFUSED
    result = response.get("result")
    if not isinstance(result, dict):
        return Outcome.ERROR
    if result.get("isError") is True:
        return Outcome.REFUSED
    if result.get("resultType") == "input_required":
        return Outcome.ASKED_AGAIN
    return Outcome.COMPLETED


def modern_request(id: RequestId, method: str, params: JSONObject, call: Call) -> JSONObject:  # noqa: A002
    """A 2026-07-28 request: `params` plus `_meta` (protocol version, capabilities, clientInfo)."""
    return request_message(id, method, {**copy.deepcopy(params), "_meta": client_meta(call.capabilities, call)})


def client_meta(capabilities: JSONObject | None = None, call: Call | None = None) -> JSONObject:
    """The `_meta` a 2026-07-28 request carries (form elicitation unless `capabilities` says otherwise)."""
    call = call or Call(client_name="mrtr-lab-playground")
    caps = call.capabilities if capabilities is None else capabilities
    return {META_VERSION: MODERN_VERSION, META_CAPABILITIES: copy.deepcopy(caps),
            META_CLIENT_INFO: {"name": call.client_name, "version": "1.0"}}


def reply_text(reply: Reply, outcome: Outcome) -> str:
    if reply.transport_error:
        return reply.transport_error
    response = reply.response or {}
    if outcome == Outcome.REFUSED and "error" in response:
        error = as_object(response["error"])
        return f"error {error.get('code')}: {str(error.get('message', ''))[:200]}"
    result = as_object(response.get("result"))
    if outcome == Outcome.ASKED_AGAIN:
        return "input_required again: " + ", ".join(sorted(as_object(result.get("inputRequests")))) \
            or "input_required"
    texts = [c.get("text", "") for c in as_list(result.get("content")) if isinstance(c, dict)]
    text = " ".join(t for t in texts if isinstance(t, str)).strip()
    prefix = "isError result" if result.get("isError") is True else "result"
    return f"{prefix}: {text[:200]}" if text else prefix


#: Runs of digits and long hex words: what differs between two results of the same work (ids, times).
_VOLATILE = re.compile(r"[0-9a-fA-F]{8,}(?:-[0-9a-fA-F]{4,})*|\d+")


def work_of(reply: Reply) -> str | None:
    """A complete result's text with ids and numbers masked, so two results of the same work compare
    equal; None when the reply is no complete result."""
    result = as_object((reply.response or {}).get("result"))
    if not result or result.get("resultType") == "input_required" or "error" in (reply.response or {}):
        return None
    content = result.get("content")
    texts = [c.get("text", "") for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    structured = result.get("structuredContent")
    body = " ".join(str(t) for t in texts) + (json.dumps(structured, sort_keys=True) if structured else "")
    return _VOLATILE.sub("#", " ".join(body.split()))
