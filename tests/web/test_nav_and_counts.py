"""Words that follow the data they count: the site navigation names the lessons as the course has them (one, or
several), and a sequence figure's summary says "1 arrow", never "1 arrows"."""

from __future__ import annotations

import re
from collections.abc import Callable

from flask import Flask

from tests.web.helpers import soup
from web.site.content import load_course


def test_the_navigation_leads_to_every_lesson(make_app: Callable[..., Flask]) -> None:
    client = make_app().test_client()
    lessons = load_course().lessons
    assert len(lessons) > 1
    nav = soup(client.get("/playground").data).select_one("nav.site-nav")
    assert nav is not None
    link = nav.find("a", string="Lessons")
    assert link is not None and nav.find("a", string="Lesson") is None
    path, _, anchor = str(link["href"]).partition("#")
    target = soup(client.get(path).data)
    listed = target.find(id=anchor)
    assert listed is not None
    section = listed.find_parent("section")
    assert section is not None
    hrefs = {a["href"] for a in section.select("a[href^='/lessons/']")}
    assert {f"/lessons/{lesson.slug}" for lesson in lessons} <= hrefs


def test_a_sequence_summary_counts_its_arrows_in_words_that_agree(make_app: Callable[..., Flask]) -> None:
    client = make_app().test_client()
    seen = set()
    for url in ("/demo", "/lessons/when-the-server-needs-input"):
        for words in soup(client.get(url).data).select("details.seq-words"):
            summary = words.find("summary").get_text(" ", strip=True)
            count = len(words.select("ol.seq-text > li"))
            match = re.search(r"\((\d+) (arrows?)\)$", summary)
            assert match, summary
            assert (int(match[1]), match[2]) == (count, "arrow" if count == 1 else "arrows"), summary
            seen.add(count)
    assert 1 in seen and len(seen) > 1, seen  # the deck has a one-arrow slide: the case this guards
