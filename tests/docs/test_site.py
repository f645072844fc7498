"""The documentation site builds with `mkdocs build --strict`: every page in the nav, no broken link or anchor,
and the API pages really generated from the docstrings. Built once, in this process (MkDocs is a Python
requirement), into a temporary directory."""

from __future__ import annotations

import re
from pathlib import Path

import griffe
import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config

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
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
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
