"""The in-page run draws its verdicts with the /check report's words and check badges: both templates take the
word tables from one file (templates/check/_verdict_words.html) and draw badges with _macros.html's check_badge,
so a verdict cannot read one way on /check and another in the build lesson."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
IMPORT = '{% from "check/_verdict_words.html" import labels, probe_labels, states %}'
_SET = re.compile(r"{%-?\s*set (\w+) = ")


def test_the_words_live_in_one_file_that_both_reports_import() -> None:
    words = (TEMPLATES / "check" / "_verdict_words.html").read_text(encoding="utf-8")
    assert set(_SET.findall(words)) == {"labels", "probe_labels", "states"}
    for report in (TEMPLATES / "check" / "_matrix.html", TEMPLATES / "lessons" / "_build_run.html"):
        source = report.read_text(encoding="utf-8")
        assert IMPORT in source, report
        assert not {"labels", "probe_labels", "states"} & set(_SET.findall(source)), f"{report} redefines the words"
        assert '{% from "_macros.html" import check_badge %}' in source, report


def test_the_in_page_run_badges_use_those_words() -> None:
    source = (TEMPLATES / "lessons" / "_build_run.html").read_text(encoding="utf-8")
    assert "check_badge(state, labels[verdict])" in source and "check_badge(state, probe_labels[verdict])" in source
