"""How the exploration's result reads in a report: the table's section, the JSON member and the JUnit cases, each
finding with its invariant, round, smallest variation, what the server did, the exchange (tickets shortened)
and the invariant's "Fix:". Rendering only: nothing here sends a request.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable

from mrtr import JSON, JSONObject, as_object

from . import variations
from .calls import Step, outcome_of, reply_text
from .exchange import short_ticket
from .explore import Exploration, Finding
from .invariants import INVARIANTS


def _kept(step: Step) -> JSONObject:
    """The parts of a retry a variation changes: the ticket (shortened when long) and `_meta` without the
    version and client info every request carries."""
    params = as_object(step.sent.get("params"))
    kept: JSONObject = {k: v for k, v in params.items() if k not in ("_meta", "requestState")}
    if "requestState" in params:
        state = params["requestState"]
        # In full when it fits: an edit in the middle of a part is the evidence, and a shortened ticket hides it.
        kept["requestState"] = (state if len(state) <= 300 else short_ticket(state)) if isinstance(state, str) \
            else state
    meta = {k: v for k, v in as_object(params.get("_meta")).items() if "protocolVersion" not in k and "clientInfo"
            not in k}
    kept["_meta"] = meta
    return kept


def _sent(step: Step) -> str:
    """A retry in one line: who sent it, the ticket (shortened) and the parts a variation changes."""
    return f"{step.role} -> {json.dumps(_kept(step), ensure_ascii=False, sort_keys=True)[:700]}"


def exchange_lines(finding: Finding) -> list[str]:
    lines = []
    for step in finding.steps[-3:]:
        lines += [f"      {_sent(step)}", f"      <- {reply_text(step.reply, outcome_of(step.reply))[:300]}"]
    return lines


def summary_of(explored: Exploration) -> str:
    if explored.why_not:
        return f"Explored: nothing ({explored.why_not})"
    tail = f"; {explored.over_budget} more not played (--budget)" if explored.over_budget else ""
    return (f"Explored: {explored.played} variations of every part of the retry over {explored.rounds} "
            f"round{'s' * (explored.rounds != 1)} in {explored.calls} calls{tail}; "
            f"{len(explored.failures)} broke an invariant")


def table_lines(explored: Exploration, redact: Callable[[str], str]) -> list[str]:
    lines = ["", summary_of(explored)]
    for why in explored.not_judged:
        lines.append(f"  not judged: {why}" + (" (pass the answer with --answers)" if "guess" in why else ""))
    for f in explored.findings:
        verdict = "WARN (allowed by --allow-replay)" if f.excused else "FAIL"
        lines += [f"  {verdict} [{f.invariant}] round {f.round}, {f.part}: {f.variation}",
                  f"    {f.detail}", f"    Broke: {f.rule}.", *exchange_lines(f), f"    Fix: {f.fix}."]
    return [redact(line) for line in lines]


def json_of(explored: Exploration, redact: Callable[[str], str]) -> JSONObject:
    findings: list[JSON] = [{"invariant": f.invariant, "round": f.round, "part": f.part,
                             "variation": redact(f.variation), "detail": redact(f.detail), "fix": f.fix,
                             "excused": f.excused}
                            for f in explored.findings]
    return {"calls": explored.calls, "variations": explored.played, "rounds": explored.rounds,
            "not_played": explored.over_budget, "not_judged": [redact(w) for w in explored.not_judged],
            "why_not": redact(explored.why_not), "findings": findings}


def junit_cases(suite: ET.Element, explored: Exploration, redact: Callable[[str], str]) -> int:
    """One case per invariant; a broken one is a <failure> with its findings. Returns the failures added."""
    failures = 0
    for slug, invariant in INVARIANTS.items():
        case = ET.SubElement(suite, "testcase", classname="mrtr.check.invariants", name=slug, time="0.000")
        broken = [f for f in explored.failures if f.invariant == slug]
        if broken:
            failures += 1
            text = "\n".join(f"round {f.round}, {f.part}: {f.variation}: {f.detail}. Fix: {f.fix}." for f in broken)
            ET.SubElement(case, "failure", message=invariant.rule).text = redact(text)
        elif explored.why_not:
            ET.SubElement(case, "skipped", message=redact(explored.why_not))
    return failures


def _verdict(slug: str, explored: Exploration) -> str:
    broken = [f for f in explored.findings if f.invariant == slug]
    if any(not f.excused for f in broken):
        return "fail"
    if broken:
        return "warn"
    return "pass" if explored.judged.get(slug) else "not-run"  # no variation judged by it: not shown to hold


def page_record(explored: Exploration, budget: int, redact: Callable[[JSON], JSON]) -> JSONObject:
    """What the /check page keeps and draws: `json_of`'s counts with the budget and the parts varied, each
    invariant with its verdict, and each finding with its rule and its exchange (the last three retries, sent
    indented, each reply in words), every string passed through `redact`."""
    record = json_of(explored, lambda text: str(redact(text)))
    invariants: list[JSON] = [{"slug": slug, "rule": i.rule, "verdict": _verdict(slug, explored)}
                              for slug, i in INVARIANTS.items()]
    findings = record["findings"]
    for finding, kept in zip(explored.findings, findings if isinstance(findings, list) else [], strict=False):
        if isinstance(kept, dict):
            kept["rule"] = INVARIANTS[finding.invariant].rule
            kept["exchange"] = [redact({"role": step.role,
                                        "sent": json.dumps(_kept(step), ensure_ascii=False, sort_keys=True,
                                                           indent=2)[:4000],
                                        "got": reply_text(step.reply, outcome_of(step.reply))[:600]})
                                for step in finding.steps[-3:]]
    return {**record, "budget": budget, "parts": list(dict.fromkeys(v.part for v in variations.VARIATIONS)),
            "invariants": invariants}
