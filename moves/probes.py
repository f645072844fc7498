"""Protocol probes the checker runs beside the moves, judged from the wire alone.

- `capability`: a call without the elicitation capability must get error -32021, not a question.
- `version`: a request for protocol version 1900-01-01 must get -32022 with `data.supported` and `data.requested`.
- `missing-answer`: a retry whose inputResponses lack the answer asked for is asked again.
- `result-type`: every result the server sent during the whole run carries `resultType`.
- `same-error`: every refused ticket got the same error object (apart from its id); otherwise the
  probe says which failures the error gives away.

`Recorder` wraps any target and keeps every exchange, so the last two can look back over the
run. Probes only send through the `Target` protocol: no sockets, no Flask, no clock.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from moves.engine import Call, MoveResult, answers_for, client_meta, mint_round, modern_request, supplied_answers
from moves.target import Outcome, Progress, Reply, Role, Target
from moves.targets.remote import ticket_expiry
from mrtr import JSON, JSONObject, as_object
from mrtr.errors import MISSING_CAPABILITY, UNSUPPORTED_VERSION
from mrtr.messages import InputRequiredResult, input_required_of, request_message
from mrtr.protocol import META_VERSION

#: A protocol version no server supports: the version probe expects the error `UNSUPPORTED_VERSION` for it.
UNKNOWN_VERSION_DATE = "1900-01-01"

#: Probe slugs, in report order, with the one-line title the report shows.
PROBES: dict[str, str] = {
    "capability": "No elicitation capability: error -32021, not a question",
    "version": "Protocol version 1900-01-01: error -32022 listing data.supported",
    "missing-answer": "Retry lacking the answer asked for: asked again",
    "result-type": "resultType on every result",
    "same-error": "Every refused ticket gets the same error",
}


#: What a server author changes when a probe does not hold (the end of a failed probe's detail).
PROBE_FIXES: dict[str, str] = {
    "capability": "before asking for input, read the request's _meta client capabilities; without elicitation, "
                  "answer error -32021 with data.requiredCapabilities naming what the tool needs",
    "version": "answer a protocol version you do not speak with error -32022, data.supported listing the versions "
               "you do and data.requested echoing the version the request named (the spec requires both)",
    "missing-answer": "when the answer to a question you asked is missing, send a new input_required result asking "
                      "it again (not an error, and never the work)",
    "result-type": "put resultType (\"complete\" or \"input_required\") on every result",
    "same-error": "answer every refused ticket with one frozen error (the same code, message and data, whatever "
                  "failed) and write the reason to your own log",
}


@dataclass(frozen=True)
class ProbeResult:
    probe: str
    ok: bool
    detail: str

    @property
    def title(self) -> str:
        return PROBES.get(self.probe, self.probe)


def _failed(probe: str, detail: str) -> ProbeResult:
    """A probe that did not hold: what came back, then what to change (`PROBE_FIXES`)."""
    return ProbeResult(probe, False, f"{detail.rstrip('.')}. Fix: {PROBE_FIXES[probe]}.")


@dataclass(frozen=True)
class ProbeExchange:
    """One request sent during the run and what came back; `label` says who sent it and why."""

    role: Role
    sent: JSONObject
    reply: Reply
    label: str


class TargetTimedOut(Exception):
    """The target did not answer one request in time: the checker stops the run there (exit 2)."""

    def __init__(self, context: str, why: str) -> None:
        super().__init__(f"{context}: {why}")
        self.context = context
        self.why = why


class Recorder:
    """A target that keeps every exchange sent through it (the same target, seen from the side), and raises
    TargetTimedOut at the first request the target did not answer in time."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.exchanges: list[ProbeExchange] = []
        self.context = "setup"
        self.last_ticket: str | None = None

    @property
    def label(self) -> str:
        return self.target.label

    @property
    def owner(self) -> str:
        return self.target.owner

    @property
    def other(self) -> str:
        return self.target.other

    def __getattr__(self, name: str) -> object:  # timing, ... (what a target may have beyond the protocol)
        return getattr(self.target, name)

    def send(self, role: Role, message: JSONObject) -> Reply:
        reply = self.target.send(role, message)
        self.exchanges.append(ProbeExchange(role, message, reply, self.context))
        if reply.timed_out:
            raise TargetTimedOut(self.context, reply.transport_error or "no answer in time")
        minted = input_required(reply)
        if minted and "requestState" in minted:
            self.last_ticket = minted["requestState"]
        return reply

    def send_burst(self, role: Role, messages: list[JSONObject]) -> list[Reply]:
        """The messages at once when the target can send them so (`send_burst`), else one after another."""
        burst = getattr(self.target, "send_burst", None)
        replies = burst(role, messages) if burst is not None else [self.target.send(role, m) for m in messages]
        for message, reply in zip(messages, replies, strict=True):
            self.exchanges.append(ProbeExchange(role, message, reply, self.context))
        late = next((r for r in replies if r.timed_out), None)
        if late is not None:
            raise TargetTimedOut(self.context, late.transport_error or "no answer in time")
        return replies

    def begin(self) -> None:
        self.target.begin()

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None,
                on_progress: Progress | None = None) -> bool:
        """As the target's, but a ticket the engine could not read may still show its `exp` (JWT-like)."""
        if expires_at is None and past_expiry and self.last_ticket:
            expires_at = ticket_expiry(self.last_ticket)
        return self.target.advance(seconds, past_expiry=past_expiry, expires_at=expires_at, on_progress=on_progress)

    def near_expiry(self, seconds: float, fraction: float, *, expires_at: float | None,
                    on_progress: Progress | None = None) -> bool:
        """The target's real wait to `fraction` of the ticket's life when it has one, else its clock moved to
        `seconds` (an in-process server's exact clock)."""
        if expires_at is None and self.last_ticket:
            expires_at = ticket_expiry(self.last_ticket)
        near = getattr(self.target, "near_expiry", None)
        if near is None:
            return self.target.advance(seconds, past_expiry=False, expires_at=expires_at, on_progress=on_progress)
        return bool(near(seconds, fraction, expires_at=expires_at, on_progress=on_progress))

    def close(self) -> None:
        self.target.close()


# -- reading replies --------------------------------------------------------------------------------


def reply_gist(reply: Reply) -> str:
    """What came back, in a few words: 'error -32602 "Invalid ..."', 'input_required', ..."""
    if reply.response is None:
        return f"no usable answer ({reply.transport_error or 'nothing came back'})"
    if "error" in reply.response:
        error = as_object(reply.response["error"])
        message = str(error.get("message", ""))[:80]
        return f"error {error.get('code')} {json.dumps(message)}"
    result = as_object(reply.response.get("result"))
    kind = result.get("resultType", "no resultType")
    if kind == "complete" or "resultType" not in result:
        content = result.get("content")
        texts = [c.get("text", "") for c in content if isinstance(c, dict)] if isinstance(content, list) else []
        text = " ".join(str(t) for t in texts).strip()[:80]
        flag = " (isError)" if result.get("isError") is True else ""
        return f"a complete result{flag}" + (f": {json.dumps(text)}" if text else "")
    return f"resultType {json.dumps(str(kind)[:40])}"


def error_code(reply: Reply) -> JSON:
    """The code of the reply's error, as the server sent it (None when there is no error object)."""
    error = (reply.response or {}).get("error")
    return error.get("code") if isinstance(error, dict) else None


def error_data(reply: Reply) -> JSON:
    """The `data` of the reply's error (None when there is none)."""
    return as_object((reply.response or {}).get("error")).get("data")


def input_required(reply: Reply) -> InputRequiredResult | None:
    """The reply's input_required result, typed (`mrtr.messages.input_required_of`), or None."""
    return input_required_of(reply.response) if reply.response is not None else None


def _status_note(reply: Reply) -> str:
    if reply.http_status is not None and reply.http_status != 400:
        return f" (over HTTP with status {reply.http_status}; the transport says 400)"
    return ""


# -- the probes -------------------------------------------------------------------------------------


def probe_capability(target: Target, call: Call, next_id: Callable[[], int]) -> ProbeResult:
    params: JSONObject = {"name": call.tool, "arguments": call.arguments}
    reply = target.send("owner", modern_request(next_id(), "tools/call", params, replace(call, capabilities={})))
    if error_code(reply) == MISSING_CAPABILITY:
        data = error_data(reply)
        if not isinstance(as_object(data).get("requiredCapabilities"), dict):  # the official suite's schema check
            return _failed("capability", "refused with -32021 but without data.requiredCapabilities (an object "
                                         "naming what the tool needs); data.requiredCapabilities is missing")
        return ProbeResult("capability", True, f"refused with -32021{_status_note(reply)}")
    if input_required(reply):
        return _failed("capability", "asked for input anyway, although the request declared no "
                                                "capabilities (it must answer -32021)")
    return _failed("capability", f"got {reply_gist(reply)}, not error -32021")


def probe_version(target: Target, call: Call, next_id: Callable[[], int]) -> ProbeResult:
    meta = client_meta(call=call)
    meta[META_VERSION] = UNKNOWN_VERSION_DATE
    message = request_message(next_id(), "tools/list", {"_meta": meta})
    reply = target.send("owner", message)
    if error_code(reply) != UNSUPPORTED_VERSION:
        return _failed("version", f"got {reply_gist(reply)}, not error -32022")
    data = error_data(reply)
    supported = data.get("supported") if isinstance(data, dict) else None
    if not (isinstance(supported, list) and supported and all(isinstance(v, str) for v in supported)):
        return _failed("version", "refused with -32022 but without data.supported listing the versions "
                                             "it speaks")
    if as_object(data).get("requested") != UNKNOWN_VERSION_DATE:
        return _failed("version", "refused with -32022 but without data.requested naming the version asked for "
                                  f"({UNKNOWN_VERSION_DATE})")
    shown = ", ".join(str(v)[:20] for v in supported[:5])
    return ProbeResult("version", True, f"refused with -32022; supported: {shown}{_status_note(reply)}")


def probe_missing_answer(target: Target, call: Call, next_id: Callable[[], int]) -> ProbeResult:
    params: JSONObject = {"name": call.tool, "arguments": call.arguments}
    target.begin()
    minted = mint_round(target, call)  # a result carrying only requestState is followed to the question
    ticket = minted.ticket
    if ticket is None:
        got = reply_gist((minted.hops or [minted.first])[-1].reply)
        return _failed("missing-answer", f"round one got {got}, so there was nothing to answer")
    questions = minted.requests
    answers = answers_for(questions, supplied_answers(call, 1))
    left_out = next(iter(questions), None)
    partial = {k: v for k, v in answers.items() if k != left_out}
    retry = modern_request(next_id(), "tools/call", {**params, "inputResponses": partial, "requestState": ticket},
                           call)
    reply = target.send("owner", retry)
    what = f"the answer to {left_out!r}" if left_out else "an answer"
    if input_required(reply):
        return ProbeResult("missing-answer", True, f"a retry without {what} was asked again")
    return _failed("missing-answer", f"a retry without {what} got {reply_gist(reply)}; it should be asked "
                                                "again with a new input_required")


def probe_result_type(exchanges: Iterable[ProbeExchange]) -> ProbeResult:
    seen = 0
    missing: list[str] = []
    for exchange in exchanges:
        result = (exchange.reply.response or {}).get("result")
        if not isinstance(result, dict):
            continue
        seen += 1
        if "resultType" not in result:
            method = exchange.sent.get("method", "?")
            where = f"{method} ({exchange.label})"
            if where not in missing:
                missing.append(where)
    if missing:
        return _failed("result-type", "no resultType on the result of " + ", ".join(missing[:6]))
    return ProbeResult("result-type", True, f"all {seen} results carried resultType")


def _error_shape(reply: Reply) -> JSONObject | None:
    """The refusal as the client saw it, minus the response id; None when it was no refusal."""
    response = reply.response or {}
    shape: JSONObject = {"HTTP status": reply.http_status} if reply.http_status is not None else {}
    error = response.get("error")
    if isinstance(error, dict):
        return {**shape, "kind": "error", **{f"error.{k}": v for k, v in error.items()}}
    result = response.get("result")
    if isinstance(result, dict) and result.get("isError") is True:
        return {**shape, "kind": "isError result", **{f"result.{k}": v for k, v in result.items() if k != "_meta"}}
    return None


def _show(value: JSON) -> str:
    return _clip(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False), 80)


def probe_same_error(results: Iterable[MoveResult]) -> ProbeResult:
    groups: dict[str, tuple[JSONObject, list[str]]] = {}
    for result in results:
        if result.move.expect != Outcome.REFUSED or result.outcome == Outcome.NOT_RUN or not result.move.refused_by:
            continue  # only refused tickets (a malformed answer's refusal is meant to differ)
        before = result.move.before.slug + ": " if result.move.before else None
        own = [s for s in result.steps if s.label != "round one" and not (before and s.label.startswith(before))]
        for step in own:
            shape = _error_shape(step.reply)
            if shape is not None:
                key = json.dumps(shape, sort_keys=True, default=str)
                # Junk shapes are named one by one; the copies of a burst count once, as their move.
                several = len(own) > 1 and result.move.copies == 1
                name = result.move.slug + (f" {step.label.removeprefix('junk ticket ')}" if several else "")
                named = groups.setdefault(key, (shape, []))[1]
                if name not in named:
                    named.append(name)
    count = sum(len(slugs) for _, slugs in groups.values())
    if not groups:
        return ProbeResult("same-error", True, "no ticket was refused, so there was nothing to compare")
    if len(groups) == 1:
        shape = next(iter(groups.values()))[0]
        shown = ", ".join(f"{k} {_show(v)}" for k, v in shape.items() if k != "kind")
        return ProbeResult("same-error", True, f"all {count} refusals were identical: {_clip(shown, 140)}")
    ordered = sorted(groups.values(), key=lambda group: -len(group[1]))
    keys = sorted({k for shape, _ in ordered for k in shape})
    differing = [k for k in keys if len({json.dumps(shape.get(k), sort_keys=True, default=str)
                                         for shape, _ in ordered}) > 1]
    parts = []
    for shape, slugs in ordered:
        shown = ", ".join(f"{k} {_show(shape[k]) if k in shape else 'absent'}" for k in differing)
        parts.append(f"{', '.join(slugs)}: {shown}")
    revealed = [slug for _, slugs in ordered[1:] for slug in slugs]
    return _failed("same-error", f"the error gives away which check failed for {', '.join(revealed)}; "
                                            "they differ in " + "; ".join(parts))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counter(start: int = 1000) -> Callable[[], int]:
    """Request ids for probes, apart from the ones the engine uses for moves."""
    ids = itertools.count(start)
    return lambda: next(ids)
