"""Grading "Build the client's loop" step by step from a client run's report (web/client_run.py's, which the
lesson's page posts): a step is done when every rule it names has the verdict pass AND the honest flows still
complete, the same honest-grading rule as the server lesson's (web/build.py): a client that refuses everything
passes every refusal rule, so refusing is only credit while the flows a sound client finishes still finish.

It reads the report as untrusted text: only rule slugs of `mrtr_grading.RULES` are shown, every detail is clipped.
It never runs a client and stores nothing.
"""

from __future__ import annotations

from mrtr import JSONObject, as_object
from mrtr_grading import RULES
from web.build import Build, Graded, Grading, MoveVerdict, ReportError, _parse, _rows, _verdict
from web.client_run import HONEST_ROW

HONEST_WORDS = "the honest flows"


def grade_client(build: Build, text: str) -> Grading:
    """Which steps the posted client report shows as done.

    Raises:
        ReportError: the text is not a client report with its honest row.
    """
    report = _parse(text)
    rows = _rows(report, "rules", "rule")
    honest = report.get("honest")
    if not isinstance(honest, dict) or honest.get("rule") != HONEST_ROW:
        raise ReportError("that report does not say whether the honest flows complete: run the client in the "
                          "page (mrtr check-client's own report grades the rules, not the steps)")
    titles = {r.slug: r.title for r in RULES}

    def seen(slug: str) -> MoveVerdict:
        row = rows.get(slug)
        return MoveVerdict(slug, titles.get(slug, ""), _verdict(row), _evidence(row))

    flows = MoveVerdict(HONEST_ROW, "the honest flows still complete", _verdict(as_object(honest)),
                        _evidence(as_object(honest)))
    broken = (flows,) if flows.verdict != "pass" else ()
    graded = tuple(Graded(step, tuple(seen(slug) for slug in step.moves), broken,
                          where_to_look="the evidence names each flow that stopped, and the client's output why",
                          honest=HONEST_WORDS) for step in build.steps)
    owned = {slug for step in build.steps for slug in step.moves}
    everything = [seen(r.slug) for r in RULES]
    others = tuple(v for v in everything if v.slug not in owned and v.verdict and not v.passed)
    not_held = tuple(v for v in [*everything, flows] if v.verdict and v.verdict != "pass")
    return Grading(graded, others, report.get("ok") is True and not broken, not_held)


def _evidence(row: JSONObject | None) -> str:
    evidence = row.get("evidence") if row else None
    return evidence[:600] if isinstance(evidence, str) else ""
