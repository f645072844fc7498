"""The move engine: play one `Move` against any `Target` and return a typed `MoveResult`.

Round one: the owner calls the tool and must get `input_required` with a `requestState`. Then the
engine builds the retry the move describes (ticket edit, junk or none, arguments, answers built from each
input request's schema), lets the target's time pass, sends it as the move's sender (its `before` move's
retry first) and classifies what came back from the wire alone (`outcome_of`). Verdicts need evidence
(`play`): controls tell "ended" from "did the work" (a complete result compared with an accepted call's,
ids and numbers masked) and "bound to its principal" from "bound to its process" (the owner from a second
process or connection). Nothing here knows a target's internals or imports Flask.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from mrtr import as_object
from mrtr.messages import as_list
from mrtr.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION, MODERN_VERSION
from mrtr.tickets import SIGNED_PREFIX, b64decode_strict, b64encode, canonical_json, read_payload

from .catalog import JUNK_SHAPES, NEAR_EXPIRY, NOT_A_YES, YES_ANSWERS, Move
from .target import Outcome, Progress, Reply, Role, Target

#: The key an answer goes under that no server asked for (wrong-key and extra-key answers).
UNASKED = "mrtr-check-unasked"

#: JSON-RPC ids: round one, and a retry whose move names none.
MINT_ID = 2
RETRY_ID = 3


@dataclass
class Step:
    """One message sent and what came back."""

    role: Role
    at: float
    sent: dict[str, Any]
    reply: Reply
    #: What this message was: "round one", "retry", "junk ticket (empty)", "honest: retry", ...
    label: str = "retry"


def _default_arguments() -> dict[str, Any]:
    return {"env": "staging"}


def _default_other() -> dict[str, Any]:
    return {"env": "prod"}


def _default_capabilities() -> dict[str, Any]:
    return {"elicitation": {"form": {}}}


@dataclass(frozen=True)
class Call:
    """What to call, so the engine is tool-agnostic."""

    tool: str = "deploy"
    arguments: dict[str, Any] = field(default_factory=_default_arguments)
    #: None when the tool has no argument to change: a move that needs another request cannot be played.
    other_arguments: dict[str, Any] | None = field(default_factory=_default_other)
    client_name: str = "mrtr-lab"
    capabilities: dict[str, Any] = field(default_factory=_default_capabilities)
    #: Answers the author supplied (`--answers`): by key for any round, or by round number ("2") then key.
    #: A value for a form question without "action" is its content (sent as an accept); any other is sent as is.
    answers: dict[str, Any] = field(default_factory=dict)


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
    rounds: list[dict[str, Any]] = field(default_factory=list)
    #: Why the checker could not follow the flow to its end ("" when it could, or did not need to).
    stuck: str = ""
    #: True when the outcome is one the move allows only as a warning (`Move.warn`): not ok, and not a failure.
    warn: bool = False

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


def _number(value: Any, default: float = 0) -> float:
    """A schema's numeric keyword as a number; anything else (a peer's "5", null, true) is the default."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else default


def _value_for(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return True
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if isinstance(schema.get("oneOf"), list) and schema["oneOf"] and isinstance(schema["oneOf"][0], dict):
        return schema["oneOf"][0].get("const", True)
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        low = _number(schema.get("minimum", schema.get("exclusiveMinimum", 0)))
        value = low + 1 if "exclusiveMinimum" in schema else max(low, 1 if "maximum" not in schema else low)
        return int(value) if kind == "integer" else value
    if kind == "array":
        items = as_object(schema.get("items"))
        raw_any_of, raw_enum = items.get("anyOf"), items.get("enum")
        any_of: list[Any] = raw_any_of if isinstance(raw_any_of, list) else []
        enum: list[Any] = raw_enum if isinstance(raw_enum, list) else []
        options = enum or [o.get("const") for o in any_of if isinstance(o, dict)]
        return options[: max(1, int(_number(schema.get("minItems"), 1)))] if options else []
    text = "yes"
    if schema.get("format") == "email":
        text = "lab@example.com"
    elif schema.get("format") == "uri":
        text = "https://example.com/"
    elif schema.get("format") == "date":
        text = "2026-01-01"
    elif schema.get("format") == "date-time":
        text = "2026-01-01T00:00:00Z"
    minimum = int(_number(schema.get("minLength")))
    return text + "y" * max(0, min(minimum, 10_000) - len(text))


def _is_form(request: Any) -> bool:
    """Whether an input request is a form elicitation (the only kind the checker answers from its schema)."""
    request = as_object(request)
    params = as_object(request.get("params", request))
    return request.get("method", "elicitation/create") == "elicitation/create" \
        and params.get("mode", "form") == "form" and isinstance(params.get("requestedSchema"), dict)


def _supplied(value: Any, request: Any) -> Any:
    if _is_form(request) and isinstance(value, dict) and "action" not in value:
        return {"action": "accept", "content": copy.deepcopy(value)}
    return copy.deepcopy(value)


def supplied_answers(call: Call, round_n: int) -> dict[str, Any]:
    """The author's answers (`Call.answers`) for round `round_n`: those given for any round, then the round's."""
    general = {k: v for k, v in call.answers.items() if not k.isdigit()}
    return {**general, **as_object(call.answers.get(str(round_n)))}


def unanswerable(input_requests: dict[str, Any], supplied: dict[str, Any] | None = None) -> str | None:
    """Why the checker cannot answer these questions itself ("'login' (a url-mode elicitation)"), or None."""
    for key, request in (input_requests or {}).items():
        if key in (supplied or {}) or _is_form(request):
            continue
        request = as_object(request)
        method = request.get("method", "elicitation/create")
        mode = as_object(request.get("params", request)).get("mode", "form")
        kind = f"a {str(mode)[:20]}-mode elicitation" if method == "elicitation/create" else \
            f"a {str(method)[:40]} request"
        return f"{str(key)[:40]!r} ({kind})"
    return None


def answers_for(input_requests: dict[str, Any], supplied: dict[str, Any] | None = None) -> dict[str, Any]:
    """Accept answers that satisfy each input request's requestedSchema (every property filled); a key in
    `supplied` (the author's `--answers`) gets that answer instead."""
    answers: dict[str, Any] = {}
    for key, request in (input_requests or {}).items():
        if supplied and key in supplied:
            answers[key] = _supplied(supplied[key], request)
            continue
        params = request.get("params", request) if isinstance(request, dict) else {}
        schema = params.get("requestedSchema") if isinstance(params, dict) else None
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        content = {name: _value_for(prop) for name, prop in props.items()} if isinstance(props, dict) else {}
        answers[key] = {"action": "accept", "content": content}
    return answers


def modern_request(id: Any, method: str, params: dict[str, Any], call: Call) -> dict[str, Any]:  # noqa: A002
    """A 2026-07-28 request: `params` plus `_meta` (protocol version, capabilities, clientInfo)."""
    meta = {META_VERSION: MODERN_VERSION, META_CAPABILITIES: copy.deepcopy(call.capabilities),
            META_CLIENT_INFO: {"name": call.client_name, "version": "1.0"}}
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": {**copy.deepcopy(params), "_meta": meta}}


def client_meta(capabilities: dict[str, Any] | None = None, call: Call | None = None) -> dict[str, Any]:
    """The `_meta` a 2026-07-28 request carries (form elicitation unless `capabilities` says otherwise)."""
    call = call or Call(client_name="mrtr-lab-playground")
    caps = call.capabilities if capabilities is None else capabilities
    meta: dict[str, Any] = modern_request(0, "", {}, replace(call, capabilities=caps))["params"]["_meta"]
    return meta


def _payload_part(ticket: str) -> tuple[str, str, str] | None:
    """`(head, payload, signature)` of a JWT-like ticket: three dot-separated parts, the middle base64url."""
    parts = ticket.split(".") if isinstance(ticket, str) and len(ticket) <= 65536 else []
    if len(parts) != 3 or not parts[1] or not parts[2]:
        return None
    return parts[0], parts[1], parts[2]


def readable_claims(ticket: str) -> dict[str, Any] | None:
    """A signed ticket's payload, decoded WITHOUT verification (what any holder can read), or None.

    Reads the lab's `t1.payload.signature` strictly, and any other JWT-like `header.payload.signature`
    (a JWT, the TypeScript SDK codec's `v1.…`) whose middle part is base64url JSON. Sealed or opaque
    tickets give None. Nothing read here is trusted.
    """
    parts = _payload_part(ticket)
    if parts is None:
        return None
    head, payload, _sig = parts
    try:
        if head == SIGNED_PREFIX:
            raw = b64decode_strict(payload)
        else:
            raw = base64.urlsafe_b64decode(payload.rstrip("=") + "=" * (-len(payload.rstrip("=")) % 4))
        claims = read_payload(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # not base64, not UTF-8, not JSON, too deep, lone surrogates
        return None
    return claims if isinstance(claims, dict) else None


def _encode_claims(head: str, old_payload: str, claims: dict[str, Any]) -> str:
    """The edited payload in the ticket's own encoding: the lab's canonical JSON for t1, else compact ASCII
    JSON in the original key order, padded only if the original was."""
    if head == SIGNED_PREFIX:
        return b64encode(canonical_json(claims))
    body = b64encode(json.dumps(claims, separators=(",", ":")).encode("ascii"))
    return body + "=" * (-len(body) % 4) if old_payload.endswith("=") else body


def _string_leaf(value: Any, path: list[str], skip: frozenset[str]) -> list[str] | None:
    if isinstance(value, str) and (not path or path[-1] not in skip):
        return path
    if isinstance(value, dict):
        for key, inner in value.items():
            found = _string_leaf(inner, [*path, key], skip)
            if found:
                return found
    return None


def flip_one_character(ticket: str) -> str:
    """Change one character in the middle of a ticket's body to another base64url character."""
    prefix, dot, rest = ticket.partition(".")
    body = rest if dot else ticket
    if not body:
        return ticket + "x"
    middle = len(body) // 2
    while body[middle] == "." and middle + 1 < len(body):
        middle += 1
    flipped = "B" if body[middle] != "B" else "C"
    body = body[:middle] + flipped + body[middle + 1:]
    return f"{prefix}.{body}" if dot else body


def _named_leaf(value: Any, name: str, path: list[str]) -> list[str] | None:
    """The path of the first string leaf whose key is `name`, anywhere in `value`."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == name and isinstance(inner, str):
                return [*path, key]
            found = _named_leaf(inner, name, [*path, key])
            if found:
                return found
    return None


def edit_ticket(ticket: str, move: Move) -> str:
    """What an attacker does: set the payload's `edit_path` to `edit_value` and keep the old signature.

    Works on any readable (JWT-like) payload. Fallback paths, in order: a string leaf named like
    `edit_path`'s last key anywhere in the payload (the TypeScript codec keeps `p.env`), the first string
    leaf under "work", any string leaf that is not sub/jti/req. An unreadable ticket (sealed, unknown
    format) gets one character flipped in the middle instead.
    """
    claims = readable_claims(ticket)
    parts = _payload_part(ticket)
    if claims is None or parts is None:
        return flip_one_character(ticket)
    path = move.edit_path.split(".") if move.edit_path else []
    node: Any = claims
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if not path or not isinstance(node, dict) or path[-1] not in node:
        skip = frozenset({"sub", "jti", "req"})
        found = (_named_leaf(claims, path[-1], []) if path else None) \
            or _string_leaf(claims.get("work"), ["work"], skip) or _string_leaf(claims, [], skip)
        if not found:
            return flip_one_character(ticket)
        path, node = found, claims
        for key in path[:-1]:
            node = node[key]
    node[path[-1]] = move.edit_value
    head, payload, sig = parts
    return f"{head}.{_encode_claims(head, payload, claims)}.{sig}"


def _expires_at(ticket: str) -> float | None:
    claims = readable_claims(ticket)
    exp = claims.get("exp") if claims else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


def _describe(reply: Reply, outcome: Outcome) -> str:
    if reply.transport_error:
        return reply.transport_error
    response = reply.response or {}
    if outcome == Outcome.REFUSED and "error" in response:
        error = response["error"] if isinstance(response["error"], dict) else {}
        return f"error {error.get('code')}: {str(error.get('message', ''))[:200]}"
    result = as_object(response.get("result"))
    if outcome == Outcome.ASKED_AGAIN:
        return "input_required again: " + ", ".join(sorted(as_object(result.get("inputRequests")))) \
            or "input_required"
    texts = [c.get("text", "") for c in as_list(result.get("content")) if isinstance(c, dict)]
    text = " ".join(t for t in texts if isinstance(t, str)).strip()
    prefix = "isError result" if result.get("isError") is True else "result"
    return f"{prefix}: {text[:200]}" if text else prefix


def answers_of(kind: str, input_requests: dict[str, Any], supplied: dict[str, Any] | None = None
               ) -> dict[str, Any] | None:
    """The inputResponses an `answer` kind sends (see moves/catalog.py), or None for "none".

    Raises:
        ValueError: the questions have no field to send with the wrong type, or none to leave out.
    """
    if kind == "none":
        return None
    accepted = answers_for(input_requests, supplied)
    if kind == "accept":
        return accepted
    if kind == "wrong-key":
        return {f"{key}-{UNASKED}": answer for key, answer in accepted.items()}
    if kind == "extra-key":
        return {UNASKED: {"action": "accept", "content": {}}, **accepted}
    if kind in ("decline", "cancel"):
        return {key: {"action": kind} for key in accepted}
    changed: dict[str, Any] = {}
    for key, answer in accepted.items():
        params = as_object(as_object(input_requests.get(key)).get("params", input_requests.get(key)))
        schema = as_object(params.get("requestedSchema"))
        content = dict(answer["content"])
        if kind == "wrong-type":
            props = as_object(schema.get("properties"))
            content = {name: _wrong_type(as_object(props.get(name))) for name in content}
        else:  # missing-key
            required = [r for r in as_list(schema.get("required")) if isinstance(r, str)]
            content = {name: value for name, value in content.items() if name not in (required or content)}
        if content != answer["content"]:
            changed[key] = {"action": "accept", "content": content}
        else:
            changed[key] = answer
    if changed == accepted:
        what = "with the wrong type" if kind == "wrong-type" else "to leave out"
        raise ValueError(f"the questions have no field {what}")
    return changed


def _wrong_type(schema: dict[str, Any]) -> Any:
    """A value of another JSON type than the field asks for: "yes" for a boolean, a number for text."""
    kind = schema.get("type")
    if kind == "boolean":
        return "yes"
    if kind in ("number", "integer"):
        return "1"
    if kind == "array":
        return "yes"
    return 12345


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


#: The most round trips one flow may take, state-only retries included (the TypeScript SDK's shim stops at 8,
#: its client and the Python client at 10).
MAX_ROUNDS = 8
#: JSON-RPC ids of the honest retries that carry a flow on to its next round (plus the hop's number).
FOLLOW_ID = 50


def asked_of(reply: Reply) -> tuple[str | None, dict[str, Any]] | None:
    """An input_required result's (requestState or None, inputRequests), or None when the reply is no such result."""
    response = reply.response or {}
    result = as_object(response.get("result"))
    if "error" in response or result.get("resultType") != "input_required":
        return None
    ticket = result.get("requestState")
    return (ticket if isinstance(ticket, str) and ticket else None), as_object(result.get("inputRequests"))




def _keys(requests: dict[str, Any]) -> str:
    return ", ".join(repr(str(k)[:40]) for k in list(requests)[:4]) or "nothing"


@dataclass
class Walk:
    """How far an honest flow went from one reply: the steps sent after it, the last reply, and either the round
    reached (its ticket and questions, when one was asked for), the flow's end, or why the checker stopped."""

    steps: list[Step]
    last: Step
    round: int
    ticket: str | None = None
    requests: dict[str, Any] = field(default_factory=dict)
    #: Each round's questions, round one first.
    rounds: list[dict[str, Any]] = field(default_factory=list)
    #: Every question key asked in the flow so far.
    seen: set[str] = field(default_factory=set)
    #: Why the checker, not the server, stopped the flow (a question it cannot answer, the round bound), or "".
    stuck: str = ""


def _walk(target: Target, call: Call, role: Role, step: Step, *, seen: set[str], round_n: int,
          arguments: dict[str, Any], until: int | None = None, label: str = "") -> Walk:
    """Carry a flow on from `step`'s reply as an honest client: a question under a key not asked before in this
    flow (`seen`) is the next round, answered from its schema or the author's `--answers`; a result carrying only
    requestState is retried with it and no answers (load shedding). Questions under keys already asked are the
    same questions asked again (a missing answer, or a server starting over), never a new round. Stops at round
    `until` before answering it, at the flow's end (anything but input_required with a ticket), at a question asked
    again, or at the bound."""
    steps: list[Step] = []
    rounds: list[dict[str, Any]] = []
    seen = set(seen)
    honest_sent = False
    for hop in range(MAX_ROUNDS + 1):
        got = asked_of(step.reply)
        if got is None or got[0] is None:
            return Walk(steps, step, round_n, rounds=rounds, seen=seen)
        ticket, requests = got
        if requests and set(map(str, requests)) <= seen:
            stuck = ""
            if honest_sent:
                stuck = (f"round {round_n} asks {_keys(requests)} again after the checker's answers, so the flow "
                         f"cannot go on; pass the answers the server accepts with --answers "
                         f"'{{\"{round_n}\": {{\"{str(next(iter(requests)))[:40]}\": ...}}}}'")
            return Walk(steps, step, round_n, ticket, requests, rounds, seen, stuck)
        if requests:
            round_n += 1
            rounds.append(requests)
            seen |= set(map(str, requests))
            if until is not None and round_n >= until:
                return Walk(steps, step, round_n, ticket, requests, rounds, seen)
            if round_n > MAX_ROUNDS:
                break
        if hop == MAX_ROUNDS:
            break
        answers = None
        if requests:
            supplied = supplied_answers(call, round_n)
            why = unanswerable(requests, supplied)
            if why is not None:
                return Walk(steps, step, round_n, ticket, requests, rounds, seen,
                            f"round {round_n} asks {why}, which the checker cannot answer by itself; pass its answer "
                            f"with --answers '{{\"{round_n}\": {{\"{str(next(iter(requests)))[:40]}\": ...}}}}'")
            answers = answers_for(requests, supplied)
        params: dict[str, Any] = {"name": call.tool, "arguments": arguments, "requestState": ticket}
        if answers is not None:
            params["inputResponses"] = answers
        message = modern_request(FOLLOW_ID + hop, "tools/call", params, call)
        what = f"round {round_n} answered" if answers is not None else "state-only retry"
        step = Step(role, step.at, message, target.send(role, message), f"{label}{what}")
        steps.append(step)
        honest_sent = True
    return Walk(steps, step, round_n, rounds=rounds, seen=seen,
                stuck=f"the flow went on past {MAX_ROUNDS} rounds, so the checker stopped following it")


@dataclass
class Minted:
    """Round one as the owner, carried on honestly to the round a move is played on."""

    first: Step
    #: The round's ticket and questions; None when there is none (then `why` says why).
    ticket: str | None
    requests: dict[str, Any]
    why: str = ""
    #: The steps after the first (honest answers to earlier rounds, state-only retries).
    hops: list[Step] = field(default_factory=list)
    #: True when the checker, not the server, stopped short (a question it cannot answer): not-run, never a fail.
    stuck: bool = False
    #: Every question key asked up to this round.
    seen: set[str] = field(default_factory=set)
    #: The questions of each round up to this one.
    rounds: list[dict[str, Any]] = field(default_factory=list)
    #: True when the checker stopped following the flow (not when the flow simply ended before the round).
    walk_stuck: bool = False


def mint_round(target: Target, call: Call, at: float = 0.0, label: str = "round one", round_n: int = 1) -> Minted:
    """Call the tool as the owner and carry the flow honestly to round `round_n` (state-only retries followed)."""
    first = modern_request(MINT_ID, "tools/call", {"name": call.tool, "arguments": call.arguments}, call)
    step = Step("owner", at, first, target.send("owner", first), label)
    walk = _walk(target, call, "owner", step, seen=set(), round_n=0, arguments=call.arguments, until=round_n,
                 label=f"{label}: ")
    if walk.stuck:
        return Minted(step, None, {}, walk.stuck, walk.steps, True, rounds=walk.rounds, walk_stuck=True)
    if walk.ticket is None or walk.round < round_n:
        if walk.round == 0:
            last = walk.last.reply
            why = last.transport_error or _describe(last, outcome_of(last))
            return Minted(step, None, {}, f"round one did not answer input_required with a requestState: {why}",
                          walk.steps)
        return Minted(step, None, {}, f"the flow ended after {walk.round} round{'s' * (walk.round != 1)}, so "
                                      f"there is no round {round_n} to play this move on", walk.steps, True,
                      rounds=walk.rounds)
    return Minted(step, walk.ticket, walk.requests, "", walk.steps, False, walk.seen, walk.rounds)


def _changed(value: Any, owner: str, other: str) -> tuple[Any, bool] | None:
    """An attacker's edit of one payload value, and whether the other principal sends it (the owner's name
    rewritten to the other's); None when the value is nothing to edit (null, a list)."""
    if isinstance(value, bool):
        return not value, False
    if isinstance(value, int | float):
        return value + 3600, False  # a later expiry, a later issue time: what a thief would want
    if isinstance(value, str):
        if value == owner:
            return other, True
        last = value[-1:] if value else ""
        return (value[:-1] + ("B" if last == "A" else "A")) if last.isalnum() else value + "A", False
    if isinstance(value, dict):
        for key, inner in value.items():
            changed = _changed(inner, owner, other) if isinstance(inner, str) else None
            if changed is not None:
                return {**value, key: changed[0]}, changed[1]
    return None


def edits_of(ticket: str, owner: str = "", other: str = "") -> list[tuple[str, str, Role]]:
    """Each field of a readable payload edited in turn under the old signature: (label, ticket, sender). An
    unreadable ticket gets one flipped character (one retry)."""
    claims = readable_claims(ticket)
    parts = _payload_part(ticket)
    if claims is None or parts is None:
        return [("one character flipped (the ticket is unreadable)", flip_one_character(ticket), "owner")]
    head, payload, sig = parts
    edits: list[tuple[str, str, Role]] = []
    for name, value in list(claims.items())[:16]:
        changed = _changed(value, owner, other)
        if changed is None:
            continue
        body = _encode_claims(head, payload, {**claims, name: changed[0]})
        edits.append((f"edited {str(name)[:30]}", f"{head}.{body}.{sig}", "other" if changed[1] else "owner"))
    return edits or [("one character flipped (nothing to edit)", flip_one_character(ticket), "owner")]


def unsigned_of(ticket: str) -> list[tuple[str, str]]:
    """The ticket with its signature part emptied, then removed; a JWT whose header names its alg also comes with
    alg "none" (the mistake of taking an unsigned ticket as valid)."""
    head, dot, _sig = ticket.rpartition(".")
    if not dot:
        return [("signature appended empty", ticket + "."), ("signature part removed", ticket[: len(ticket) // 2])]
    shapes = [("signature emptied", f"{head}."), ("signature part removed", head)]
    first, _, rest = head.partition(".")
    try:
        header = json.loads(base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)))
    except (ValueError, RecursionError):
        header = None
    if isinstance(header, dict) and "alg" in header and rest:
        none = b64encode(json.dumps({**header, "alg": "none"}, separators=(",", ":")).encode())
        shapes.append(("alg none", f"{none}.{rest}."))
    return shapes


def _tickets_of(move: Move, ticket: str, owner: str = "", other: str = "") -> list[tuple[str, str | None, Role]]:
    """(label, ticket, sender) for each retry the move sends; None: no requestState at all."""
    if move.ticket == "edit-each":
        return [(label, edited, role) for label, edited, role in edits_of(ticket, owner, other)]
    if move.ticket == "unsigned":
        return [(label, shape, move.sender) for label, shape in unsigned_of(ticket)]
    return [(label, sent, move.sender) for label, sent in _plain_tickets_of(move, ticket)]


def _plain_tickets_of(move: Move, ticket: str) -> list[tuple[str, str | None]]:
    if move.ticket == "absent":
        return [("retry without a ticket", None)]
    if move.ticket == "edit-work":
        return [("retry", edit_ticket(ticket, move))]
    if move.ticket == "junk":
        prefix = ticket.partition(".")[0][:16]
        return [(f"junk ticket ({name})", shape.replace("{prefix}", prefix)) for name, shape in JUNK_SHAPES]
    return [("retry", ticket)]


@dataclass
class Sent:
    """A move's own retries: every step sent, the reply each one's flow ended on, and why the checker stopped."""

    steps: list[Step]
    finals: list[Step]
    stuck: str = ""
    #: The rounds each retry's flow went on to (after the move's own round).
    rounds: list[dict[str, Any]] = field(default_factory=list)


def _retries(move: Move, target: Target, call: Call, ticket: str, requests: dict[str, Any],
             round_n: int = 1, seen: set[str] | None = None) -> Sent:
    """Send the move's own retry (one per junk shape); an accepted answer's flow is followed to its end. Raises
    ValueError when the move cannot be built against this tool (no other arguments, no field to answer wrongly)."""
    arguments = call.arguments
    if move.request == "other":
        if call.other_arguments is None:
            raise ValueError("the tool has no argument to change for another request; pass --other-args")
        arguments = call.other_arguments
    supplied = supplied_answers(call, round_n)
    # A move judged by an accepted call completing (or, in a burst, by one of them doing the work) cannot be judged
    # on a question the checker cannot answer: a URL-mode page is finished outside MCP, and an accept alone is not it.
    judged_by_work = move.answer in YES_ANSWERS and (move.expect == Outcome.COMPLETED or move.copies > 1)
    why = unanswerable(requests, supplied) if judged_by_work else None
    if why is not None:
        raise ValueError(f"round {round_n} asks {why}, which the checker cannot answer by itself")
    answers = answers_of(move.answer, requests, supplied)
    request_id = move.request_id if move.request_id is not None else RETRY_ID
    sent = Sent([], [])
    for label, message, role, reply in _send(move, target, call, arguments, answers, ticket, request_id):
        step = Step(role, move.at, message, reply, label)
        sent.steps.append(step)
        if move.answer not in YES_ANSWERS:
            sent.finals.append(step)
            continue
        walk = _walk(target, call, role, step, seen=seen or set(requests), round_n=round_n,
                     arguments=arguments, label=f"{label}, then ")
        sent.steps += walk.steps
        sent.finals.append(walk.last)
        if len(walk.rounds) > len(sent.rounds):
            sent.rounds = walk.rounds
        if walk.stuck and not sent.stuck:
            sent.stuck = walk.stuck
        if move.copies == 1 and not move.holds(outcome_of(walk.last.reply))[0]:
            break  # one shape that went through is the evidence; the last step is the one judged
    return sent


def _send(move: Move, target: Target, call: Call, arguments: dict[str, Any], answers: dict[str, Any] | None,
          ticket: str, request_id: int) -> Iterable[tuple[str, dict[str, Any], Role, Reply]]:
    """Build and send the move's retries: one per ticket shape, or `copies` identical ones at once (a target's
    `send_burst`: separate connections, or lines written before any answer is read; one after another on a target
    that has none). Returns (label, message, sender, reply) for each."""
    messages: list[tuple[str, dict[str, Any], Role]] = []
    for label, sent_ticket, role in _tickets_of(move, ticket, target.owner, target.other):
        params: dict[str, Any] = {"name": call.tool, "arguments": arguments}
        if sent_ticket is not None:
            params["requestState"] = sent_ticket
        if answers is not None:
            params["inputResponses"] = copy.deepcopy(answers)
        messages.append((label, modern_request(request_id, "tools/call", params, call), role))
    if move.copies == 1:  # sent one by one as the caller reads them: it stops at the first that does not hold
        return ((label, message, role, target.send(role, message)) for label, message, role in messages)
    label, message, _role = messages[0]
    copies = [(f"copy {n} of {move.copies}", {**copy.deepcopy(message), "id": request_id if move.copy_ids == "same"
                                               else request_id * 100 + n}) for n in range(1, move.copies + 1)]
    burst = getattr(target, "send_burst", None)
    sent = [m for _, m in copies]
    replies = burst(move.sender, sent) if burst is not None else [target.send(move.sender, m) for m in sent]
    return [(label, m, move.sender, reply) for (label, m), reply in zip(copies, replies, strict=True)]


def _burst_judged(move: Move, finals: list[Step]) -> tuple[Outcome, Step, bool, str]:
    """Copies sent at once: exactly one may do the work, and every other must get what the move expects."""
    done = [s for s in finals if outcome_of(s.reply) == Outcome.COMPLETED]
    ids = "the same id" if move.copy_ids == "same" else "ids of their own"
    if len(done) > 1:
        return Outcome.COMPLETED, done[1], False, f"{len(done)} of the {len(finals)} identical retries sent at once " \
            f"under {ids} did the work: {_describe(done[-1].reply, Outcome.COMPLETED)}"
    if not done:
        return outcome_of(finals[0].reply), finals[0], False, (
            f"none of the {len(finals)} identical honest retries sent at once under {ids} did the work (one should): "
            f"{_describe(finals[0].reply, outcome_of(finals[0].reply))}")
    others = [s for s in finals if s is not done[0]]
    outcome, step, ok, note = _judged(move, others)
    if not ok:
        return outcome, step, False, f"one of the {len(finals)} copies did the work, and another got " \
            f"{_describe(step.reply, outcome)}"
    detail = (f"one of the {len(finals)} identical retries sent at once under {ids} did the work; the other "
              f"{len(others)} got {_describe(step.reply, outcome)}")
    return outcome, step, True, detail + (f"; {note}" if note else "")


def _judged(move: Move, steps: list[Step]) -> tuple[Outcome, Step, bool, str]:
    """The move's outcome over its own steps: the first that does not hold, else the one with a note, else
    the last. Returns (outcome, that step, holds, note)."""
    judged = [(outcome_of(s.reply), s) for s in steps]
    verdicts = [(move.holds(o), o, s) for o, s in judged]
    chosen = next((v for v in verdicts if not v[0][0]), None) or next((v for v in verdicts if v[0][1]), verdicts[-1])
    (ok, note), outcome, step = chosen
    return outcome, step, ok, note


def _control(target: Target, call: Call, at: float, role: Role, label: str,
             round_n: int = 1) -> tuple[list[Step], Step | None, str]:
    """An honest call of the same request, start to finish: a new ticket as the owner, answered yes (from round
    `round_n` on, sent by `role`). Returns the steps, the completed retry (None when it did not complete) and what
    went wrong."""
    minted = mint_round(target, call, at, f"{label}: round one", round_n)
    if minted.ticket is None:
        return [minted.first, *minted.hops], None, minted.why
    params = {"name": call.tool, "arguments": call.arguments, "requestState": minted.ticket,
              "inputResponses": answers_for(minted.requests, supplied_answers(call, round_n))}
    message = modern_request(RETRY_ID, "tools/call", params, call)
    step = Step(role, at, message, target.send(role, message), f"{label}: retry")
    walk = _walk(target, call, role, step, seen=minted.seen, round_n=round_n, arguments=call.arguments,
                 label=f"{label}: ")
    steps = [minted.first, *minted.hops, step, *walk.steps]
    outcome = outcome_of(walk.last.reply)
    if walk.stuck:
        return steps, None, walk.stuck
    if outcome != Outcome.COMPLETED:
        return steps, None, walk.last.reply.transport_error or _describe(walk.last.reply, outcome)
    return steps, walk.last, ""


def _not_run(move: Move, detail: str, minted: Step | None, steps: list[Step], ticket: str | None,
             controls: list[Step] | None = None) -> MoveResult:
    return MoveResult(move, Outcome.NOT_RUN, False, detail, minted, steps, ticket, controls=controls or [])


def _refusal(reply: Reply) -> str | None:
    """A refusal as a client sees it (the error or isError result, without the id), or None."""
    response = reply.response or {}
    if isinstance(response.get("error"), dict):
        return json.dumps(response["error"], sort_keys=True, default=str)
    result = as_object(response.get("result"))
    if result.get("isError") is True:
        return json.dumps({k: v for k, v in result.items() if k != "_meta"}, sort_keys=True, default=str)
    return None


def _like_a_bad_ticket(target: Target, call: Call, move: Move, ticket: str, requests: dict[str, Any],
                       reply: Reply) -> tuple[list[Step], bool]:
    """Whether `reply`'s refusal is the one a bad ticket gets: the same retry, answered yes, on a ticket with one
    character flipped, is sent to learn it."""
    params = {"name": call.tool, "arguments": call.arguments, "requestState": flip_one_character(ticket),
              "inputResponses": answers_for(requests, supplied_answers(call, move.round))}
    message = modern_request(RETRY_ID, "tools/call", params, call)
    step = Step(move.sender, move.at, message, target.send(move.sender, message), "a bad ticket, to compare")
    theirs, mine = _refusal(step.reply), _refusal(reply)
    return [step], theirs is not None and theirs == mine


def needs_completed_flow(move: Move) -> bool:
    """Whether the move can only show its check on a flow the checker can finish: it expects the work, one of its
    copies must do it, or a retry that does the work goes first."""
    return move.expect == Outcome.COMPLETED or move.copies > 1 or (move.before is not None and (
        move.before.expect == Outcome.COMPLETED or move.before_ticket == "new"))


def play(move: Move, target: Target, call: Call | None = None, *, on_progress: Progress | None = None
         ) -> MoveResult:
    """Mint a ticket as the owner, carry the flow honestly to the move's round, then play `move` against that
    round's ticket on `target` (its `before` move first).

    A move is only judged when it really exercised what it shows: its `before` move must have got what a
    sound server gives it, a not-a-yes answer's complete result is compared with an accepted call's, and a
    refusal of the other principal counts only when the owner's ticket works from a second process of the
    owner. A flow the checker cannot finish (a question it cannot answer, the round bound) leaves the move not
    run, saying which round and which key. Otherwise the result is NOT_RUN, with the reason in its detail.
    """
    call = call or Call()
    round_n = move.round
    target.begin()
    start = mint_round(target, call, 0.0, "round one", round_n)
    minted, ticket, requests, steps = start.first, start.ticket, start.requests, list(start.hops)
    if ticket is None:
        if start.stuck:
            result = _not_run(move, f"not shown: {start.why}", minted, steps, None)
            result.rounds = start.rounds
            result.stuck = start.why if start.walk_stuck else ""
            return result
        return MoveResult(move, Outcome.ERROR, False, start.why, minted, steps, None)
    expires_at = _expires_at(ticket)
    try:
        first = move.before
        if first is not None:
            if not target.advance(first.at, past_expiry=False, expires_at=expires_at, on_progress=on_progress):
                return _not_run(move, "the target skipped the wait", minted, steps, ticket)
            on, on_requests, on_seen = ticket, requests, start.seen
            if move.before_ticket == "new":
                second = mint_round(target, call, first.at, f"{first.slug}: round one", round_n)
                steps += [second.first, *second.hops]
                if second.ticket is None:
                    return _not_run(move, f"not shown: a second call could not start ({second.why})", minted, steps,
                                    ticket)
                on, on_requests, on_seen = second.ticket, second.requests, second.seen
            earlier = _retries(first, target, call, on, on_requests, round_n, on_seen)
            for step in earlier.steps:
                step.label = f"{first.slug}: {step.label}"
            steps += earlier.steps
            if earlier.stuck:
                return _not_run(move, f"not shown: the {first.slug} retry goes first, and {earlier.stuck}", minted,
                                steps, ticket)
            outcome, step, ok, _note = _judged(first, earlier.finals)
            if not ok and move.before_ticket == "new" and not move.holds(outcome)[0]:
                # On a ticket of its own, the earlier retry is one of the two calls this move is about (two
                # separate calls of the same request): its refusal is this move's evidence, not a missing
                # precondition. (A server that remembers requests refuses it because an earlier move spent the
                # same request; gating it would hide exactly the mistake the move is there to show.)
                return MoveResult(move, outcome, False, f"the first of the two calls, on a ticket of its own, got "
                                                        f"{_describe(step.reply, outcome)}", minted, steps, ticket)
            if not ok:
                return _not_run(move, f"not shown: this move needs the {first.slug} retry to go first and get "
                                      f"{first.expect}, but it got {_describe(step.reply, outcome)}; the "
                                      f"{first.slug} move itself shows why", minted, steps, ticket)
        near = getattr(target, "near_expiry", None) if move.timing == "near-expiry" else None
        if near is not None:
            waited = near(move.at, NEAR_EXPIRY, expires_at=expires_at, on_progress=on_progress)
        else:
            waited = target.advance(move.at, past_expiry=move.timing == "past-expiry", expires_at=expires_at,
                                    on_progress=on_progress)
        if not waited:
            return _not_run(move, "skipped: the move waits past the ticket's expiry", minted, steps, ticket)
        mine = _retries(move, target, call, ticket, requests, round_n, start.seen)
    except ValueError as exc:
        return _not_run(move, f"not run: {exc}", minted, steps, ticket)
    steps += mine.steps
    rounds = [*start.rounds, *mine.rounds]
    if mine.stuck:
        result = _not_run(move, f"not shown: {mine.stuck}", minted, steps, ticket)
        result.stuck, result.rounds = mine.stuck, rounds
        return result
    if move.copies > 1:
        outcome, step, ok, detail = _burst_judged(move, mine.finals)
        return MoveResult(move, outcome, ok, detail, minted, steps, ticket, rounds=rounds)
    outcome, step, ok, note = _judged(move, mine.finals)
    detail = _describe(step.reply, outcome)
    if len(mine.finals) > 1:
        detail = f"{step.label}: {detail}" if not ok or note else f"all {len(mine.finals)} shapes: {detail}"
    controls: list[Step] = []
    if outcome == Outcome.COMPLETED and move.answer in NOT_A_YES:
        controls, accepted, why = _control(target, call, move.at, "owner", "an accepted call", round_n)
        if accepted is None:
            return _not_run(move, "not shown: an honest, accepted call of the same request did not complete "
                                  f"({why}), so there is nothing to tell the work from", minted, steps, ticket,
                            controls)
        if work_of(accepted.reply) != work_of(step.reply):
            outcome = Outcome.ENDED
            ok, note = move.holds(outcome)
            got = _describe(accepted.reply, Outcome.COMPLETED)
            detail = f"ended without the work: {detail} (an accepted call got {got})"
        else:
            detail = f"did the work: {detail}, the same result as an accepted call's"
    if outcome in move.warn:  # before any note: a warning, even where the outcome would hold
        return MoveResult(move, outcome, False, f"{detail}; allowed, but the spec says a server SHOULD answer this "
                                                f"with a JSON-RPC error (a client cannot tell {outcome} from a "
                                                "missing answer)", minted, steps, ticket, controls=controls,
                          rounds=rounds, warn=True)
    if ok and outcome == Outcome.REFUSED and move.distinct_error:
        control, same = _like_a_bad_ticket(target, call, move, ticket, requests, step.reply)
        controls += control
        if same:  # the ticket itself may have been refused: an honest yes on it tells
            params = {"name": call.tool, "arguments": call.arguments, "requestState": ticket,
                      "inputResponses": answers_for(requests, supplied_answers(call, round_n))}
            message = modern_request(RETRY_ID, "tools/call", params, call)
            honest = Step(move.sender, move.at, message, target.send(move.sender, message), "a yes on the ticket")
            controls.append(honest)
            if outcome_of(honest.reply) != Outcome.COMPLETED:  # nothing was done: it holds, on the ticket's refusal
                note = ("the ticket itself was refused (an honest yes on it got "
                        f"{_describe(honest.reply, outcome_of(honest.reply))}), so this refusal says nothing about "
                        "the answer")
                return MoveResult(move, outcome, True, detail, minted, steps, ticket, note=note, controls=controls,
                                  rounds=rounds)
            return MoveResult(move, outcome, False, f"{detail}: the very error a bad ticket gets, so a client cannot "
                                                    "tell its malformed answer from a refused ticket; give it an error "
                                                    "of its own (-32602 \"Invalid inputResponses: ...\")", minted,
                              steps, ticket, controls=controls, rounds=rounds)
    if ok and move.sender == "other":
        controls, again, why = _control(target, call, move.at, "owner-again", "the owner from a second process",
                                        round_n)
        if again is None:
            return _not_run(move, f"not shown: the owner's own honest retry of a fresh call, sent from a second "
                                  f"process or connection, got {why}; tickets here only work where they were "
                                  f"minted (or honest retries are refused), so {target.other}'s refusal does not "
                                  "show a check of the principal", minted, steps, ticket, controls)
    return MoveResult(move, outcome, ok, detail, minted, steps, ticket, note=note, controls=controls, rounds=rounds)
