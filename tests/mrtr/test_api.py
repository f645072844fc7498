"""The core's public surface, held narrow: what `mrtr` names, which submodules are public, and that the rest is
private by name (the `public-api` import-linter contract keeps underscore modules inside the package)."""

from __future__ import annotations

from pathlib import Path

import mrtr

ROOT = Path(__file__).resolve().parents[2]
#: At most this many names at the top level: what a server or client author needs (h11 names about 25).
MAX_TOP_LEVEL = 40
#: The submodules a caller may import from, each a reference for one kind of reader; every other module is private.
PUBLIC_SUBMODULES = ("client", "client_errors", "clock", "errors", "forms", "keys", "messages", "protocol", "redeemed",
                     "tickets", "tooldefs", "wire")


def test_the_top_level_is_narrow_and_every_name_it_promises_exists():
    assert len(mrtr.__all__) <= MAX_TOP_LEVEL, len(mrtr.__all__)
    assert len(set(mrtr.__all__)) == len(mrtr.__all__)
    missing = [name for name in mrtr.__all__ if not hasattr(mrtr, name)]
    assert missing == []


def test_every_module_is_public_by_list_or_private_by_name():
    """A new module is a decision: add it to PUBLIC_SUBMODULES (and its API page) or give it an underscore."""
    modules = sorted(p.stem for p in (ROOT / "mrtr").glob("*.py") if not p.stem.startswith("_"))
    assert modules == sorted(PUBLIC_SUBMODULES)


def test_every_public_submodule_has_an_api_page_section():
    page = (ROOT / "docs" / "api" / "mrtr.md").read_text(encoding="utf-8")
    assert [name for name in PUBLIC_SUBMODULES if f"::: mrtr.{name}\n" not in page] == []
