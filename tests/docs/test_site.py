"""The documentation site builds with `mkdocs build --strict`: every page in the nav, no broken link or anchor,
and the API pages really generated from the docstrings. Built once, in this process (MkDocs is a Python
requirement), into a temporary directory."""

from __future__ import annotations

import re
from pathlib import Path

import griffe
import pytest
import yaml
from bs4 import BeautifulSoup
from mkdocs.commands.build import build
from mkdocs.config import load_config

from tests.tracked import tracked_under

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def nav_pages(nav: list[object]) -> list[str]:
    """Every page the nav lists, in order (the nav is a list of pages, titled pages and titled sections)."""
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += nav_pages(value) if isinstance(value, list) else [str(value)]
    return pages


class Loader(yaml.SafeLoader):
    """mkdocs.yml as data, its `!!python/name:` tags (none today) read as plain strings."""


Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: suffix)
NAV = nav_pages(yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader)["nav"])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("site")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NO_MKDOCS_2_WARNING", "1")  # the theme's notice about its successor, on every build
        # griffe asks `git` (a process) for each package's repository, only to link source on a known forge; the
        # site links no source (show_source: false), so the look-up is skipped and the build stays in-process.
        patch.setattr(griffe.GitInfo, "from_package", classmethod(lambda cls, package: None))
        config = load_config(str(ROOT / "mkdocs.yml"), strict=True, site_dir=str(directory))
        assert config["strict"] is True
        build(config)  # raises mkdocs.exceptions.Abort on the first warning, strict as it is
    return directory


def built(site: Path, doc: str) -> str:
    """The HTML MkDocs wrote for the page `doc` (docs/a/b.md is a/b/index.html, docs/a/index.md a/index.html)."""
    stem = doc.removesuffix(".md")
    return (site / (stem if stem.endswith("index") else f"{stem}/index")).with_suffix(".html").read_text(
        encoding="utf-8")


def test_every_page_is_in_the_nav_once_and_built(site: Path) -> None:
    pages = sorted(str(p.relative_to(DOCS)) for p in tracked_under("docs", suffix=".md"))
    assert sorted(NAV) == pages, "a page in docs/ and not in the nav, or the other way round"
    assert len(set(NAV)) == len(NAV)
    for doc in NAV:
        title = re.search(r"<h1[^>]*>(.*?)</h1>", built(site, doc), re.S)
        assert title, f"{doc} has no title"


@pytest.mark.parametrize(("doc", "names"), [
    ("api/mrtr.md", ["mrtr.Server", "mrtr.Connection", "mrtr.KeyRing", "mrtr.FakeClock", "mrtr.tickets.split_ticket",
                     "mrtr.errors.INVALID_PARAMS", "mrtr.wire.utf8_text", "mrtr.protocol.MODERN_VERSION"]),
    ("api/moves.md", ["moves.check.run_check", "moves.catalog.load_moves", "moves.target.Target"]),
    ("api/stores.md", ["mrtr_stores.sessions", "mrtr_stores.classes", "mrtr_stores.check_runs", "mrtr_stores.lti"]),
    ("api/settings.md", ["mrtr_settings.environment.read_settings"]),
    ("api/toolsets.md", ["mrtr_toolsets.lesson.lesson_catalog"]),
    ("api/cli.md", ["mrtr_cli.main", "mrtr_cli.call.main"]),
    ("api/client.md", ["mrtr_client.HttpTransport", "mrtr_client.StdioTransport"]),
])
def test_the_api_pages_are_generated_from_the_docstrings(site: Path, doc: str, names: list[str]) -> None:
    html = built(site, doc)
    for name in names:
        assert f'id="{name}"' in html, f"{doc} documents no {name}"
    assert "doc-contents" in html  # mkdocstrings rendered docstrings, not the `::: name` line
    assert ":::" not in html


#: A URL on another origin: with a scheme, or scheme-relative (`//fonts.gstatic.com/...`).
ELSEWHERE = re.compile(r"^\s*['\"]?\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
CSS_URLS = re.compile(r"url\(([^)]*)\)|@import\s+['\"]([^'\"]+)", re.IGNORECASE)


def fetched_elsewhere(site: Path) -> list[str]:
    """What the built site would fetch from another origin as a page loads: fonts, scripts, styles, images, frames
    (a link a reader follows is not fetched; the theme's own code loads nothing else unless a page has a mermaid
    diagram, or runs from file://)."""
    found = []
    for page in sorted(site.rglob("*.html")):
        name = page.relative_to(site).as_posix()
        html = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for tag in html.find_all(["script", "img", "iframe", "source", "audio", "video", "embed", "link"]):
            for attribute in ("src", "href", "srcset"):
                value = tag.get(attribute)
                if isinstance(value, str) and ELSEWHERE.match(value):
                    found.append(f"{name}: <{tag.name} {attribute}={value}>")
        styles = [t.get_text() for t in html.find_all("style")] + [str(t["style"]) for t in html.select("[style]")]
        found += [f"{name}: style url {u}" for s in styles for m in CSS_URLS.finditer(s) for u in m.groups()
                  if u and ELSEWHERE.match(u)]
        if html.select(".mermaid"):
            found.append(f"{name}: a mermaid diagram (the theme loads mermaid from unpkg.com)")
    for css in sorted(site.rglob("*.css")):
        found += [f"{css.relative_to(site)}: {u}" for m in CSS_URLS.finditer(css.read_text(encoding="utf-8"))
                  for u in m.groups() if u and ELSEWHERE.match(u)]
    return found


def test_no_page_fetches_anything_from_another_origin(site: Path) -> None:
    """The docs, like the app, load nothing from elsewhere: no Google Fonts (theme font: false), no CDN."""
    assert fetched_elsewhere(site) == []


def test_the_origin_check_sees_fonts_scripts_and_styles(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(
        '<link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>'
        '<link rel="stylesheet" href="//fonts.googleapis.com/css?family=Roboto"><script src="https://cdn.example/x.js">'
        '</script><a href="https://example.org/">a link is fine</a><img src="assets/local.png">'
        '<div style="background: url(\'https://img.example/a.png\')"></div>')
    (tmp_path / "a.css").write_text('@import "https://fonts.example/x.css"; b { background: url(local.png) }')
    assert len(fetched_elsewhere(tmp_path)) == 5
