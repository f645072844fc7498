"""Whether a client still finishes the flows a sound client finishes: the row beside the rules that keeps a
client from passing a rule by breaking the loop (the client lesson's honest-grading rule, as the build lesson's
honest moves are for servers).

What this module owns: the honest tools and the honest row. It reads a recording and never grades a rule.
"""

from __future__ import annotations

from mrtr import JSONObject, as_object

from .recording import Recording

#: The tools a sound client completes: every flow that ends in a complete result for an honest client.
#: grade_url_mode joins them when the client declared URL mode (a client that did not must leave it unanswered).
HONEST_TOOLS = ("grade_ticket_echo", "grade_retry_rounds", "grade_multi_round", "grade_plain", "grade_no_ticket",
                "grade_typed_answers", "grade_state_only")
HONEST_ROW = "honest-flows"
HONEST_TITLE = "the honest flows still complete"


def honest_problems(recording: Recording) -> list[str]:
    """Why the honest flows did not all complete (empty when they did): each honest tool's last answer must be
    a complete result."""
    problems = []
    url = recording.of("grade_url_mode")
    declared_url = bool(url) and "url" in as_object(url[0].capabilities.get("elicitation"))
    for tool in HONEST_TOOLS + (("grade_url_mode",) if declared_url else ()):
        calls = recording.of(tool)
        if not calls:
            problems.append(f"{tool} was never called")
            continue
        last = calls[-1].answer
        kind = as_object(last.get("result")).get("resultType")
        if kind != "complete":
            got = f"error {as_object(last.get('error')).get('code')}" if "error" in last else f"{kind}"
            problems.append(f"{tool} stopped after {len(calls)} call(s) without completing (last answer: {got})")
    return problems


def honest_row(recording: Recording) -> JSONObject:
    problems = honest_problems(recording)
    return {"rule": HONEST_ROW, "title": HONEST_TITLE,
            "verdict": "fail" if problems else "pass",
            "evidence": "; ".join(problems)[:600] if problems else "every flow a sound client finishes completed"}
