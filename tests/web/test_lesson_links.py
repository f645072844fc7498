"""Everything a lesson points at exists (issue 42, item 4; finding F5).

Every lesson's rendered page is read: each link inside it to a section (an anchor on this page or on another
lesson's) must land on an element with that id, and each link to another page of the app must answer 200. Each
source a lesson's text cites in brackets as a file or folder of this repository ("[mrtr/errors.py]",
"[mrtr/client.py, mrtr/_server.py]") must exist, so a learner who follows a citation finds what it names.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from bs4 import BeautifulSoup
from flask import Flask

from web.site.content import DEFAULT_ROOT, load_course

ROOT = DEFAULT_ROOT.parent
LESSONS = [lesson.slug for lesson in load_course().lessons]
#: A citation in brackets names repository paths: a folder of the repo, then a path ("mrtr/errors.py", "mrtr_stores/").
CITED = re.compile(r"(?<![\w/.-])((?:mrtr|mrtr_stores|mrtr_toolsets|mrtr_settings|mrtr_cli|moves|web|lessons|tests"
                   r"|templates|docs)/[\w./-]*)")
BRACKETS = re.compile(r"\[([^\]]+)\](?!\()")


def test_every_cited_file_exists() -> None:
    missing = []
    for path in sorted(DEFAULT_ROOT.glob("*/sections/*.md")):
        for inside in BRACKETS.findall(path.read_text(encoding="utf-8")):
            for cited in CITED.findall(inside):
                if not (ROOT / cited.rstrip(".,;")).exists():
                    missing.append(f"{path.relative_to(ROOT)} cites {cited}")
    assert missing == []


def test_the_citation_pattern_reads_what_lessons_write() -> None:
    """The pattern above must see the citations the table writes, or the test before could not fail."""
    assert CITED.findall("[mrtr/client.py, mrtr/_server.py]") == ["mrtr/client.py", "mrtr/_server.py"]
    assert BRACKETS.findall("see [TS server.ts; mrtr/errors.py] and [a link](#x)") == ["TS server.ts; mrtr/errors.py"]


@pytest.mark.parametrize("slug", LESSONS)
def test_every_link_of_a_lesson_lands(app: Flask, slug: str) -> None:
    client = app.test_client()
    page = BeautifulSoup(client.get(f"/lessons/{slug}").data, "html.parser")
    pages: dict[str, BeautifulSoup] = {f"/lessons/{slug}": page}
    broken = []
    for link in page.select("main a[href]"):
        href = str(link["href"])
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith("mailto:"):
            continue  # another site: not ours to check here
        where = parts.path or f"/lessons/{slug}"
        if where not in pages:
            response = client.get(where + (f"?{parts.query}" if parts.query else ""))
            if response.status_code != 200:
                broken.append(f"{href}: HTTP {response.status_code}")
                continue
            pages[where] = BeautifulSoup(response.data, "html.parser")
        if parts.fragment and pages[where].find(id=parts.fragment) is None:
            broken.append(f"{href}: no element with id {parts.fragment!r}")
    assert broken == []
