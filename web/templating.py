"""Template filters and globals every page can use (the macros in `templates/_macros.html` need them)."""

from __future__ import annotations

from flask import Flask

from mrtr import CHECK_TITLES
from web.build.routes import load_build
from web.lessons.widgets import roundtrip_sequence
from web.site.content import Lesson, get_content
from web.site.moveviews import OUTCOME_LABELS, pretty_json
from web.site.sequence import sequence_model

_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def count_word(n: int) -> str:
    """A count as prose writes it: a word up to twelve, digits above (the move list decides, not the template)."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


def init_app(app: Flask) -> None:
    app.add_template_filter(pretty_json, "pretty_json")
    app.add_template_filter(count_word, "count_word")
    app.jinja_env.globals.update(check_titles=CHECK_TITLES, outcome_labels=OUTCOME_LABELS)
    app.add_template_global(get_content, "get_content")
    app.add_template_global(sequence_model, "sequence_model")  # the round trip as a sequence diagram
    app.add_template_global(roundtrip_sequence, "roundtrip_sequence")
    app.add_template_global(build_step_ids, "build_step_ids")


def build_step_ids(lesson: Lesson) -> list[str]:
    """The ids of a lesson's build steps (the checker-graded loop), or none: the home page counts them."""
    build = load_build(lesson.directory)
    return [step.id for step in build.steps] if build else []
