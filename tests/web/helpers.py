"""Helpers for the web tests: which templates a request rendered, and the page's HTML as a tree."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bs4 import BeautifulSoup
from flask import Flask, template_rendered

HX = {"HX-Request": "true"}


@contextmanager
def rendered(app: Flask) -> Iterator[list[str]]:
    """The names of the templates rendered (top level, not includes) while the block runs."""
    names: list[str] = []

    def record(sender: Flask, template, context, **extra) -> None:  # noqa: ANN001
        names.append(template.name)

    template_rendered.connect(record, app)
    try:
        yield names
    finally:
        template_rendered.disconnect(record, app)


def soup(html: bytes | str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def assert_csp_clean(html: bytes | str) -> None:
    """No inline script, no style attribute or element, no on* handler: what our CSP would block."""
    tree = soup(html)
    for script in tree.find_all("script"):
        assert script.get("src"), f"inline script: {script}"
    assert not tree.find_all("style"), "a <style> element"
    for tag in tree.find_all(True):
        assert "style" not in tag.attrs, f"style attribute on {tag.name}"
        handlers = [a for a in tag.attrs if a.lower().startswith("on")]
        assert not handlers, f"{handlers} on {tag.name}"
        for attr in ("hx-on", "hx-vars", "hx-vals"):
            assert not any(a.startswith(attr) for a in tag.attrs), f"{attr} on {tag.name}"


def assert_unique_ids(html: bytes | str, *, ignore: frozenset[str] = frozenset()) -> None:
    ids = [tag["id"] for tag in soup(html).find_all(id=True)]
    dupes = sorted({i for i in ids if ids.count(i) > 1} - ignore)
    assert not dupes, f"duplicate ids: {dupes}"
