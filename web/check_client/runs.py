"""/check-client's runs between the store and the grader: the app's run store (`mrtr_stores.client_runs`, opened
here on the app's clock), one MCP request answered and recorded through it, and a run read back as a
`mrtr_grading.Recording` and graded by the same rules as `mrtr check-client`.

The answer is the grading server's (`mrtr_grading.respond`, as mrtr_cli/grading_server.py serves it); what makes
it this page's is that the n-th call of a tool is counted by the store in one atomic step, so any worker or
replica may take any request. A request is kept with its time (the app's clock: the pacing rule reads it across
replicas), its id, params and answer, and only its `Mcp-*` and `MCP-Protocol-Version` headers: never a cookie or
an authorization a client sends along. Nothing here reads a Flask request or renders.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from flask import Flask, current_app

from mrtr import JSONObject, as_object
from mrtr_grading import ClientReport, Received, Recording, grade, honest_row, respond
from mrtr_settings.stores import open_client_runs
from mrtr_stores.client_runs import ClientRun, ClientRunStore
from web.site.services import SETTINGS_KEY

RUNS_KEY = "mrtr.client_runs"
#: What the report calls the client it grades (the page knows no command line).
COMMAND = "the client pointed at this page"


def open_runs(app: Flask) -> None:
    """The app's client-run store, from its settings, on the app's clock (MRTR_CLOCK in tests)."""
    clock = app.config.get("MRTR_CLOCK") or app.extensions["mrtr"].server.clock
    app.extensions[RUNS_KEY] = open_client_runs(app.extensions[SETTINGS_KEY], clock)


def runs() -> ClientRunStore:
    store: ClientRunStore = current_app.extensions[RUNS_KEY]
    return store


def kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers the rules read (the 2026-07-28 ones, lower-cased), each cut at 1 KiB; no other is kept."""
    return {name.lower(): value[:1024] for name, value in headers.items() if name.lower().startswith("mcp-")}


def answer(run_id: str, message: JSONObject, headers: Mapping[str, str], size: int) -> JSONObject:
    """The grading server's answer to one request of the run, counted and kept by the store.

    Raises:
        RunGone: no such run, or it ended.
        CallRefused: the run's caps are reached (the message says which).
    """
    method = str(message.get("method", ""))
    params = as_object(message.get("params"))
    name = params.get("name")
    tool = name if method == "tools/call" and isinstance(name, str) else ""
    reply: JSONObject = {}

    def entry(n: int, at: float) -> str:
        reply.update({"jsonrpc": "2.0", "id": message.get("id"), **respond(method, params, n)})
        return json.dumps({"at": at, "method": method, "id": message.get("id"), "params": params, "answer": reply,
                           "headers": kept_headers(headers)})

    runs().record(run_id, tool, size, entry)
    return reply


def recording_of(run_id: str) -> Recording:
    """The run's requests as the rules read them; anything unreadable in the store is left out, never raised."""
    recording = Recording()
    for text in runs().calls(run_id):
        try:
            kept = as_object(json.loads(text))
            headers = kept.get("headers")
            at = kept.get("at")
            recording.calls.append(Received(
                float(at) if isinstance(at, int | float) else 0.0, str(kept.get("method", "")), kept.get("id"),
                as_object(kept.get("params")), as_object(kept.get("answer")),
                {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}))
        except ValueError:
            continue
    return recording


def report_of(run: ClientRun) -> tuple[ClientReport, JSONObject, Recording]:
    """The run graded: the report (output-reading rules graded only when the learner pasted the output), the
    honest-flows row the lesson's steps need, and the recording they read."""
    recording = recording_of(run.id)
    pasted = run.output != "" or run.exit_code is not None
    report = grade(recording, COMMAND, transport="http", exit_code=run.exit_code if pasted else None,
                   output=run.output if pasted else None, choices_known=run.choices_known)
    return report, honest_row(recording), recording
