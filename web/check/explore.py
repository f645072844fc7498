"""/check's exploration section, its view: what the run file keeps of the exploration (`Run.exploration`, written
by web.check.runner from `moves.findings.page_record`, tokens already redacted) read back as plain values for
check/_exploration.html. Anything malformed in the file is left out, never raised; nothing here plays a request.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mrtr import JSON, JSONObject

ROLES = {"owner": "the ticket's owner", "other": "the second user"}


@dataclass(frozen=True)
class SentStep:
    """One retry of a finding's exchange: who sent it, what (indented JSON), and what came back, in words."""

    role: str
    sent: str
    got: str


@dataclass(frozen=True)
class InvariantView:
    slug: str
    rule: str
    verdict: str  # pass, fail, warn (only excused findings), not-run (nothing explored)


@dataclass(frozen=True)
class FindingView:
    invariant: str
    rule: str
    round: int
    part: str
    variation: str
    detail: str
    fix: str
    verdict: str  # fail, or warn when --allow-replay excuses it
    exchange: list[SentStep] = field(default_factory=list)


@dataclass(frozen=True)
class ExplorationView:
    rounds: int
    calls: int
    variations: int
    budget: int
    not_played: int
    why_not: str
    parts: list[str]
    not_judged: list[str]
    invariants: list[InvariantView]
    findings: list[FindingView]


def _int(value: JSON) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _strings(value: JSON) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _objects(value: JSON) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _finding(item: JSONObject) -> FindingView:
    exchange = [SentStep(ROLES.get(str(s.get("role")), "the client"), str(s.get("sent", "")), str(s.get("got", "")))
                for s in _objects(item.get("exchange"))]
    return FindingView(str(item.get("invariant", "")), str(item.get("rule", "")), _int(item.get("round")),
                       str(item.get("part", "")), str(item.get("variation", "")), str(item.get("detail", "")),
                       str(item.get("fix", "")), "warn" if item.get("excused") is True else "fail", exchange)


def exploration_view(record: JSON) -> ExplorationView | None:
    """The section's values, or None when the run kept no exploration (still running, stopped, or left out)."""
    if not isinstance(record, dict):
        return None
    invariants = [InvariantView(str(i.get("slug", "")), str(i.get("rule", "")), str(i.get("verdict", "not-run")))
                  for i in _objects(record.get("invariants"))]
    return ExplorationView(_int(record.get("rounds")), _int(record.get("calls")), _int(record.get("variations")),
                           _int(record.get("budget")), _int(record.get("not_played")), str(record.get("why_not", "")),
                           _strings(record.get("parts")), _strings(record.get("not_judged")), invariants,
                           [_finding(f) for f in _objects(record.get("findings"))])
