"""A rule's verdict and what it reads: `GradedRun` (the recording, the transport, and what the client itself said) and
the small helpers every rule shares. No rule lives here."""

from __future__ import annotations

import json
from dataclasses import dataclass

from mrtr import JSON, JSONObject, as_object

from .recording import Received, Recording

VERDICTS = ("pass", "fail", "not-run")


@dataclass
class GradedRun:
    """What a rule reads: the recording, how the client was reached, and what the client itself said (its exit
    status and output; None where the adapter has none, as in the browser)."""

    recording: Recording
    transport: str = "http"  # "http" or "stdio"
    exit_code: int | None = None
    output: str | None = None
    #: Whether the client's user answers as MRTR_CHECK_CLIENT_CHOICES says (`mrtr check-client --user-choices`).
    choices_known: bool = False

    def of(self, tool: str) -> list[Received]:
        return self.recording.of(tool)


@dataclass(frozen=True)
class Verdict:
    verdict: str
    evidence: str


def passed(evidence: str) -> Verdict:
    return Verdict("pass", evidence)


def failed(evidence: str) -> Verdict:
    return Verdict("fail", evidence)


def not_run(why: str) -> Verdict:
    return Verdict("not-run", why)


def clip(value: JSON, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = json.dumps(text, ensure_ascii=False) if isinstance(value, str) else text
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def result_of(call: Received) -> JSONObject:
    return as_object(call.answer.get("result"))


def retries_of(calls: list[Received], tool: str) -> Verdict | None:
    """not-run when the client never called `tool`, or never retried it; None when there is a retry to grade."""
    if not calls:
        return not_run(f"the client never called {tool}")
    if len(calls) < 2:
        return not_run(f"the client called {tool} but never retried it, so there is no retry to grade")
    return None


