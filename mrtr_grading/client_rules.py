"""The rules added for issue 45's second half: the 2026-07-28 headers and `_meta`, the retry after `-32022`, an
embedded request kind the client did not declare, a malformed result, the user's decline and cancel, and a bounded
run that says so. Each reads its own tool's calls in a `GradedRun` and, where the wire cannot tell, what the client
itself said (its exit status and output); a rule that cannot know is not-run, never a guess.

This module reads a run; it never sends a request and never renders a report. `rules.RULES` lists these rules
beside the first thirteen.
"""

from __future__ import annotations

import base64
import binascii
import json

from mrtr import JSONObject, as_object
from mrtr.messages import as_list
from mrtr.protocol import META_CAPABILITIES, META_VERSION

from .flows import CHOICES, UNSUPPORTED_VERSION
from .recording import Received
from .verdicts import GradedRun, Verdict, clip, failed, not_run, passed, result_of, retries_of

#: Words that show a client reported a call as failed or refused (in any of the clients graded so far).
ERROR_WORDS = ("refus", "rais", "error", "exceed", "fail", "gave up", "too many", "stopp", "abort", "limit")


def reports_error(text: str) -> bool:
    return any(word in text.lower() for word in ERROR_WORDS)


def lines_naming(run: GradedRun, tool: str) -> list[str]:
    return [line.strip() for line in (run.output or "").splitlines() if tool in line]


def said_complete(run: GradedRun, tool: str) -> str | None:
    """The client's own `TOOL: complete...` line (the drivers' convention), when it reported the call done."""
    return next((line for line in lines_naming(run, tool)
                 if line.startswith(f"{tool}: ") and line[len(tool) + 2:].startswith("complete")), None)


def decoded(value: str) -> str:
    """A header value, with the transport's `=?base64?...?=` sentinel undone."""
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return value
    return value


def header_problems(call: Received) -> list[str]:
    headers = call.headers or {}
    wanted: JSONObject = {"mcp-protocol-version": as_object(call.params.get("_meta")).get(META_VERSION),
                          "mcp-method": call.method}
    if call.method == "tools/call":
        wanted["mcp-name"] = call.params.get("name")
    problems = []
    for name, body in wanted.items():
        got = headers.get(name)
        if got is None:
            problems.append(f"no {name} header (the body says {clip(body)})")
        elif decoded(got) != body:
            problems.append(f"{name} is {clip(got)} but the body says {clip(body)}")
    return problems


def http_headers(run: GradedRun) -> Verdict:
    if run.transport != "http":
        return not_run(f"over {run.transport} a request has no HTTP headers; this rule grades Streamable HTTP only")
    calls = run.of("grade_headers")
    if not calls:
        return not_run("the client never called grade_headers")
    if any(c.headers is None for c in calls):
        return not_run("this adapter did not record the request headers")
    for n, call in enumerate(calls, start=1):
        problems = header_problems(call)
        if problems:
            return failed(f"call {n} of grade_headers (id {json.dumps(call.id)}): {'; '.join(problems)}")
    return passed(f"{len(calls)} calls of grade_headers, each with MCP-Protocol-Version, Mcp-Method and Mcp-Name "
                  "matching its body")


def meta_every_request(run: GradedRun) -> Verdict:
    calls = run.of("grade_headers")
    early = retries_of(calls, "grade_headers")
    if early:
        return early
    for n, call in enumerate(calls, start=1):
        meta = as_object(call.params.get("_meta"))
        version = meta.get(META_VERSION)
        if not isinstance(version, str) or not version:
            return failed(f"call {n} of grade_headers carried no _meta protocol version: _meta was {clip(meta)}")
        if not isinstance(meta.get(META_CAPABILITIES), dict):
            return failed(f"call {n} of grade_headers declared no clientCapabilities object in _meta: "
                          f"_meta was {clip(meta)}")
    return passed(f"{len(calls)} calls of grade_headers, each with _meta protocol version {clip(version)} and "
                  "clientCapabilities")


def version_retry(run: GradedRun) -> Verdict:
    calls = run.of("grade_version_retry")
    if not calls:
        return not_run("the client never called grade_version_retry")
    error = as_object(calls[0].answer.get("error"))
    if error.get("code") != UNSUPPORTED_VERSION:
        return not_run("the server could not answer the first call with -32022 (the run's record was full)")
    sent = f"-32022 with data {clip(error.get('data'))}"
    if len(calls) > 1:
        supported = as_list(as_object(error.get("data")).get("supported"))
        version = as_object(calls[1].params.get("_meta")).get(META_VERSION)
        if version not in supported:
            return failed(f"server sent {sent}; the client retried with _meta protocol version {clip(version)}, "
                          "not one the server supports")
        return passed(f"server sent {sent}; the client retried with {clip(version)}")
    if run.output is None:
        return not_run(f"server sent {sent}; the client did not retry, and its output was not captured to show "
                       "whether it refused clearly")
    complete = said_complete(run, "grade_version_retry")
    if complete:
        return failed(f"server sent {sent}; the client neither retried nor refused: it said {clip(complete)}")
    reported = [line for line in lines_naming(run, "grade_version_retry") if reports_error(line)]
    if reported:
        return passed(f"server sent {sent}; the client did not retry and said {clip(reported[0])}")
    return not_run(f"server sent {sent}; the client did not retry, and its output never names "
                   "grade_version_retry with an error")


def refuse_undeclared(run: GradedRun) -> Verdict:
    calls = run.of("grade_undeclared_kind")
    if not calls:
        return not_run("the client never called grade_undeclared_kind")
    asked = as_object(as_object(result_of(calls[0]).get("inputRequests")).get("undeclared"))
    if not asked:
        return not_run("the client declared roots and sampling, so there was no undeclared kind to send")
    declared = sorted(calls[0].capabilities)
    if len(calls) > 1:
        answer = as_object(calls[1].params.get("inputResponses")).get("undeclared")
        return failed(f"the client declared {declared}; server sent a {asked.get('method')} request under "
                      f"'undeclared'; client answered {clip(answer)}")
    complete = said_complete(run, "grade_undeclared_kind")
    if complete:
        return failed(f"the client declared {declared} and did not answer the {asked.get('method')} request, "
                      f"but took the call as done: it said {clip(complete)}")
    return passed(f"the client declared {declared}; the {asked.get('method')} request was not answered")


def decline_cancel(run: GradedRun) -> Verdict:
    calls = run.of("grade_user_choice")
    if not calls:
        return not_run("the client never called grade_user_choice")
    if not run.choices_known:
        return not_run("the grader cannot know what the client's user chose: run with --user-choices and a client "
                       "whose user answers as MRTR_CHECK_CLIENT_CHOICES says")
    chosen = ", ".join(f"{action} for {key!r}" for key, action in CHOICES.items())
    if len(calls) < 2:
        return failed(f"the user chose {chosen}; the client never sent the answers back to the server")
    got = as_object(calls[1].params.get("inputResponses"))
    for key, action in CHOICES.items():
        if key not in got:
            return failed(f"the user chose {action} for {key!r}; the client's retry left it out: {clip(got)}")
        answer = as_object(got[key])
        if answer.get("action") != action or "content" in answer:
            return failed(f"the user chose {action} for {key!r}; the client sent {clip(got[key])}")
    return passed(f"the user chose {chosen}; the retry carried {clip(got)}")


def bounded_said(run: GradedRun) -> Verdict:
    calls = run.of("grade_endless")
    if not calls:
        return not_run("the client never called grade_endless")
    if run.output is None or run.exit_code is None:
        return not_run("the client's exit status and output were not captured (only mrtr check-client runs the "
                       "client itself)")
    lines = lines_naming(run, "grade_endless")
    if lines:
        reported = [line for line in lines if reports_error(line)]
        if reported:
            return passed(f"after {len(calls)} calls the client said {clip(reported[0])}")
        return failed(f"the server asked forever; after {len(calls)} calls the client said {clip(lines[-1])}, "
                      "no error")
    if run.exit_code == 0 and not reports_error(run.output):
        return failed(f"the server asked forever; after {len(calls)} calls the client exited 0 and printed no "
                      "error")
    return not_run(f"the client exited {run.exit_code}, but its output never names grade_endless, so what it "
                   "reported cannot be tied to that call")
