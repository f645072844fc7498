"""The rules a client is graded by: each reads the recording of its own tool (`flows.FLOWS`) and gives a verdict
(pass, fail, not-run) with evidence, what the server sent and what the client sent back, and a "Fix:" line.

One home for each rule: the docs page (docs/client/check-client.md) lists the same slugs. A rule whose tool the
client never called, or whose retry it never made, is not-run, never pass. This module reads a recording; it never
sends a request and never renders a report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from mrtr import JSONObject, as_object
from mrtr.protocol import META_VERSION

from .client_rules import (
    bounded_said,
    decline_cancel,
    http_headers,
    meta_every_request,
    refuse_undeclared,
    said_complete,
    version_retry,
)
from .flows import ENDLESS_CAP, HARD_TICKET, TYPED_SCHEMA
from .verdicts import GradedRun, Verdict, clip, failed, not_run, passed, result_of, retries_of

#: The most calls a client may make to a server that never stops asking (the SDKs stop after 10 retries).
ROUND_BOUND = 21
#: The least pause, in seconds, between two retries of a round that carried only a ticket.
MIN_PACE = 0.04


def ticket_echo(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_ticket_echo")
    early = retries_of(calls, "grade_ticket_echo")
    if early:
        return early
    sent = calls[1].params.get("requestState")
    if sent == HARD_TICKET:
        return passed(f"the {len(HARD_TICKET)}-char ticket came back identical")
    where = next((i for i, (a, b) in enumerate(zip(HARD_TICKET, str(sent), strict=False)) if a != b),
                 min(len(HARD_TICKET), len(str(sent))))
    if not isinstance(sent, str):
        return failed(f"server sent a {len(HARD_TICKET)}-char requestState; client sent back {clip(sent, 60)}")
    around = slice(max(0, where - 10), where + 20)
    return failed(f"server sent a {len(HARD_TICKET)}-char requestState, client sent back {len(sent)} chars; "
                  f"the first difference is at char {where}: sent {clip(HARD_TICKET[around])}, "
                  f"got back {clip(sent[around])}")


def new_id(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_retry_rounds")
    early = retries_of(calls, "grade_retry_rounds")
    if early:
        return early
    ids = [json.dumps(c.id) for c in calls]
    if len(set(ids)) == len(ids):
        return passed(f"{len(ids)} calls, ids {', '.join(ids)}")
    return failed(f"the client retried with an id it had used before: ids {', '.join(ids)}")


def same_request(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_retry_rounds")
    early = retries_of(calls, "grade_retry_rounds")
    if early:
        return early
    first = calls[0].params
    version = as_object(first.get("_meta")).get(META_VERSION)
    for n, call in enumerate(calls[1:], start=2):
        if call.params.get("name") != first.get("name") or call.params.get("arguments") != first.get("arguments"):
            return failed(f"call 1 was {clip(first.get('arguments'))}; retry {n} sent {call.params.get('name')} "
                          f"{clip(call.params.get('arguments'))}")
        meta = as_object(call.params.get("_meta"))
        if meta.get(META_VERSION) != version:
            return failed(f"call 1's _meta protocol version was {clip(version)}; retry {n} sent "
                          f"{clip(meta.get(META_VERSION))}")
        if call.capabilities != calls[0].capabilities:
            return failed(f"call 1 declared capabilities {clip(calls[0].capabilities)}; retry {n} declared "
                          f"{clip(call.capabilities)} (each request carries the same _meta)")
    return passed(f"{len(calls) - 1} retries kept the tool, arguments {clip(first.get('arguments'))}, version "
                  "and capabilities")


def multi_round(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_multi_round")
    early = retries_of(calls, "grade_multi_round")
    if early:
        return early
    for before, call in zip(calls, calls[1:], strict=False):
        asked = result_of(before)
        ticket, keys = asked.get("requestState"), sorted(as_object(asked.get("inputRequests")))
        got = sorted(as_object(call.params.get("inputResponses")))
        if call.params.get("requestState") != ticket:
            echoed = call.params.get("requestState")
            return failed(f"server's newest ticket was {clip(ticket)}; client sent {clip(echoed)}")
        if got != keys:
            return failed(f"server asked {keys} this round; client answered {got}")
    return passed(f"{len(calls) - 1} retries, each with the newest ticket and only that round's answers")


def nothing_carried(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_plain")
    if not calls:
        return not_run("the client never called grade_plain")
    for call in calls:
        carried = sorted(k for k in ("requestState", "inputResponses") if k in call.params)
        if carried:
            return failed(f"a fresh call to grade_plain carried {', '.join(carried)}: "
                          f"{clip({k: call.params[k] for k in carried})}")
    return passed("the unrelated call carried neither requestState nor inputResponses")


def no_ticket_no_state(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_no_ticket")
    early = retries_of(calls, "grade_no_ticket")
    if early:
        return early
    if "requestState" in calls[1].params:
        return failed(f"server sent no requestState; the retry carried {clip(calls[1].params['requestState'])}")
    return passed("the server gave no ticket and the retry carried no requestState key")


def bounded_rounds(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_endless")
    early = retries_of(calls, "grade_endless")
    if early:
        return early
    if len(calls) > ROUND_BOUND:
        stop = " and the server had to stop it with an error" if len(calls) > ENDLESS_CAP else ""
        return failed(f"the server asked forever; the client called {len(calls)} times{stop} "
                      f"(bound: {ROUND_BOUND})")
    return passed(f"the server asked forever; the client stopped after {len(calls)} calls")


def state_only_no_answers(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_state_only")
    early = retries_of(calls, "grade_state_only")
    if early:
        return early
    for call in calls[1:]:
        answers = call.params.get("inputResponses")
        if answers not in (None, {}):
            return failed(f"server sent only a ticket, no questions; client answered {clip(answers)}")
    return passed(f"{len(calls) - 1} state-only retries carried no answers")


def state_only_paced(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_state_only")
    early = retries_of(calls, "grade_state_only")
    if early:
        return early
    gaps = [b.at - a.at for a, b in zip(calls, calls[1:], strict=False)]
    shown = ", ".join(f"{g * 1000:.0f} ms" for g in gaps)
    if min(gaps) < MIN_PACE:
        return failed(f"state-only retries came {shown} apart (at least {MIN_PACE * 1000:.0f} ms expected)")
    return passed(f"state-only retries came {shown} apart")


def url_mode(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_url_mode")
    if not calls:
        return not_run("the client never called grade_url_mode")
    declared = "url" in as_object(calls[0].capabilities.get("elicitation"))
    if not declared:
        if len(calls) > 1:
            return failed("the client declared form elicitation only, yet answered a URL-mode request with "
                          f"{clip(calls[1].params.get('inputResponses'))}")
        return passed("the client declared form only and did not answer the URL-mode request")
    if len(calls) < 2:
        return not_run("the client declared URL mode but never retried grade_url_mode")
    answer = as_object(as_object(calls[1].params.get("inputResponses")).get("page"))
    if answer.get("action") not in ("accept", "decline", "cancel") or "content" in answer:
        return failed(f"server sent a URL-mode request under 'page'; client answered {clip(answer)} "
                      "(an action and no content expected)")
    return passed(f"declared URL mode and answered {clip(answer)}")


def typed_problems(content: JSONObject) -> list[str]:
    """Where `content` breaks TYPED_SCHEMA (checked here on its own, not with the client's code)."""
    problems = [f"{k} missing" for k in ("agree", "size", "count") if k not in content]
    if "agree" in content and not isinstance(content["agree"], bool):
        problems.append(f"agree is {clip(content['agree'])}, not a boolean")
    if "size" in content and content["size"] not in ("small", "large"):
        problems.append(f"size is {clip(content['size'])}, not one of small, large")
    count = content.get("count")
    if "count" in content and (isinstance(count, bool) or not isinstance(count, int) or not 2 <= count <= 5):
        problems.append(f"count is {clip(count)}, not an integer from 2 to 5")
    if "label" in content and not isinstance(content["label"], str):
        problems.append(f"label is {clip(content['label'])}, not a string")
    return problems


def typed_answers(rec: GradedRun) -> Verdict:
    calls = rec.of("grade_typed_answers")
    early = retries_of(calls, "grade_typed_answers")
    if early:
        return early
    answer = as_object(as_object(calls[1].params.get("inputResponses")).get("settings"))
    if answer.get("action") != "accept":
        return not_run(f"the client answered {clip(answer)}, not an accepted form, so no value can be graded")
    problems = typed_problems(as_object(answer.get("content")))
    if problems:
        return failed(f"server asked with schema {clip(TYPED_SCHEMA['properties'], 80)}; client sent "
                      f"{clip(answer.get('content'))}: {'; '.join(problems)}")
    return passed(f"answered {clip(answer.get('content'))}, every value fits its schema")


def refused(tool: str, sent: str) -> Callable[[GradedRun], Verdict]:
    def rule(rec: GradedRun) -> Verdict:
        calls = rec.of(tool)
        if not calls:
            return not_run(f"the client never called {tool}")
        if len(calls) > 1:
            return failed(f"server sent {sent}; client retried it {len(calls) - 1} time(s) with "
                          f"{clip({k: v for k, v in calls[1].params.items() if k != '_meta'})}")
        complete = said_complete(rec, tool)
        if complete:  # the wire looks like a refusal; the client's own output says it took the result as done
            return failed(f"server sent {sent}; the client did not retry but took it as done: it said "
                          f"{clip(complete)}")
        return passed(f"server sent {sent}; the client did not retry")
    return rule


@dataclass(frozen=True)
class Rule:
    slug: str
    title: str
    source: str
    fix: str
    grade: Callable[[GradedRun], Verdict]


MRTR = "2026-07-28 basic/patterns/mrtr"
SDKS = "not a spec MUST: the TS and Python SDK clients' practice"
ELIC = "2026-07-28 client/elicitation"
RULES: tuple[Rule, ...] = (
    Rule("ticket-echo", "requestState echoed byte for byte",
         f"{MRTR} (client requirement 2)",
         "send requestState back exactly as received: never parse, trim, re-encode or re-escape it", ticket_echo),
    Rule("new-id", "a new JSON-RPC id for every retry",
         f"{MRTR} (client requirement 3)",
         "mint a fresh id for each retry; an id is never reused within a session of calls", new_id),
    Rule("same-request", "the retry repeats the tool, arguments and version",
         f"{MRTR} (the retry carries the original params)",
         "retry the same tools/call: same name, same arguments, same _meta protocol version", same_request),
    Rule("multi-round", "only the newest ticket and only this round's answers",
         f"{MRTR} (client requirement 2; inputResponses answer that result's keys)",
         "on each round send the ticket of the latest input_required and answer only the keys it asked",
         multi_round),
    Rule("nothing-carried", "no requestState or answers carried into an unrelated call",
         f"{MRTR} (client requirement 4)",
         "keep tickets and answers with the call they belong to; a fresh call starts empty", nothing_carried),
    Rule("no-ticket-no-state", "no requestState when the server gave none",
         f"{MRTR} (client requirement 2)",
         "omit requestState entirely when the input_required result had none", no_ticket_no_state),
    Rule("bounded-rounds", "a server that never stops asking is stopped",
         f"{SDKS} (10 rounds); the spec sets no limit",
         "cap the rounds of one call (the SDKs stop after 10) and report it to the user", bounded_rounds),
    Rule("state-only-no-answers", "a round with only a ticket is retried without answers",
         f"{MRTR} (client requirement 1)",
         "when input_required carries requestState and no inputRequests, retry without inputResponses",
         state_only_no_answers),
    Rule("state-only-paced", "state-only retries are paced",
         f"{SDKS} (Python 50 to 250 ms, TS 250 ms); the spec allows an immediate retry",
         f"wait between state-only retries (at least {MIN_PACE * 1000:.0f} ms, growing), never retry at once",
         state_only_paced),
    Rule("url-mode", "URL mode answered only when declared, with no content",
         f"{ELIC} (capabilities; content only for an accepted form)",
         "answer URL-mode requests only if you declared elicitation.url; answer with an action and no content",
         url_mode),
    Rule("typed-answers", "answers typed by the question's schema",
         f"{ELIC} (requestedSchema)",
         "build content from requestedSchema: booleans as true/false, an enum's value, numbers within bounds",
         typed_answers),
    Rule("refuse-unknown-result", "an unknown resultType is refused, not retried",
         "2026-07-28 basic (ResultType: an unrecognized value is invalid)",
         "treat an unknown resultType as an error; never retry it or take it as complete",
         refused("grade_unknown_result", 'resultType "bogus"')),
    Rule("refuse-empty-input-required", "input_required with neither member is refused",
         f"{MRTR} (server requirement 6: at least one of the two)",
         "refuse an input_required that has neither inputRequests nor requestState; never retry it",
         refused("grade_empty_input_required", "input_required with neither inputRequests nor requestState")),
    Rule("refuse-malformed-result", "a malformed result is refused, not retried or taken as done",
         "2026-07-28 schema (InputRequiredResult: inputRequests an object, requestState a string)",
         "check the result's shape before acting on it: refuse an inputRequests that is not an object or a "
         "requestState that is not a string, with an error", refused("grade_malformed_result",
         "input_required with inputRequests a string and requestState a number")),
    Rule("refuse-undeclared-kind", "an embedded request of an undeclared kind is refused, never answered",
         f"{MRTR} (server requirement 7: only declared kinds; a client answers only what it declared)",
         "answer only the embedded request kinds your _meta clientCapabilities declare; refuse the call otherwise",
         refuse_undeclared),
    Rule("decline-cancel", "decline and cancel passed through as the user chose",
         f"{ELIC} (accept, decline and cancel are the user's; decline and cancel MUST be handled)",
         "send the user's own action back: a decline as decline and a cancel as cancel, with no content, never "
         "turned into accept or dropped", decline_cancel),
    Rule("bounded-rounds-reported", "a call given up after the bound is reported as an error",
         f"{SDKS} (both raise an error after 10 rounds)",
         "when the round bound stops a call, end it with an error the user sees (and a non-zero exit status)",
         bounded_said),
    Rule("http-headers", "MCP-Protocol-Version, Mcp-Method and Mcp-Name match the body",
         "2026-07-28 basic/transports (Streamable HTTP standard request headers, SEP-2243)",
         "send MCP-Protocol-Version equal to _meta's version, Mcp-Method equal to method and, for tools/call, "
         "Mcp-Name equal to params.name, on every request including retries", http_headers),
    Rule("meta-every-request", "_meta carries the protocol version and capabilities on every request",
         "2026-07-28 basic (_meta: protocolVersion and clientCapabilities required on every request)",
         "put io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities in the _meta "
         "of every request, retries too", meta_every_request),
    Rule("version-retry", "after -32022 the client retries with a supported version or refuses clearly",
         "2026-07-28 basic/versioning (-32022: the client SHOULD pick a version the server supports and retry)",
         "on -32022 retry with a version from data.supported (a new id), or end the call with an error naming "
         "the versions; never take it as done", version_retry),
)
