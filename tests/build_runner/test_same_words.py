"""The in-page run draws its verdicts with the /check report's words and check badges: the word tables of
templates/lessons/_build_run.html are those of templates/check/_matrix.html, and both use _macros.html's
check_badge, so a word changed in one place and not the other fails here."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
_SET = re.compile(r"{%-?\s*set (labels|probe_labels|states) = ({[^}]*})\s*-?%}")


def word_tables(path: Path) -> dict[str, str]:
    return {m[1]: " ".join(m[2].split()) for m in _SET.finditer(path.read_text(encoding="utf-8"))}


def test_the_in_page_report_uses_the_check_reports_words_and_badges() -> None:
    check = word_tables(TEMPLATES / "check" / "_matrix.html")
    build = word_tables(TEMPLATES / "lessons" / "_build_run.html")
    assert set(check) == {"labels", "probe_labels", "states"}
    assert build == check
    source = (TEMPLATES / "lessons" / "_build_run.html").read_text(encoding="utf-8")
    assert '{% from "_macros.html" import check_badge %}' in source
    assert "check_badge(state, labels[verdict])" in source and "check_badge(state, probe_labels[verdict])" in source
