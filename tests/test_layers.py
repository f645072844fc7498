"""The shape of the code, checked by tools rather than by hand: the layering contracts in pyproject.toml
(import-linter), and the core's typed boundary (how often `Any` appears in mrtr/)."""

from __future__ import annotations

import io
import logging
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The most `Any` the protocol core may hold per 1,000 lines: its messages are typed (mrtr/messages.py).
MAX_ANY_PER_KLOC = 15


def test_the_import_contracts_hold(capsys, monkeypatch):
    """Layers (web and CLI above the engine, above settings, stores and tool sets, above the core), a core that
    opens nothing and knows no framework, a web app that opens no database itself, only the core's public API used
    from outside, no circle among its modules, and the benchmarks apart from the tests."""
    from importlinter.cli import lint_imports

    monkeypatch.chdir(ROOT)
    # import-linter configures logging as it starts, which disables every logger that exists by then (the app's
    # "mrtr" logger among them) for the rest of this process: they are enabled again after it.
    loggers = [logger for logger in logging.Logger.manager.loggerDict.values()
               if isinstance(logger, logging.Logger) and not logger.disabled]
    try:
        code = lint_imports(no_cache=True, no_logo=True)
    finally:
        for logger in loggers:
            logger.disabled = False
    out = capsys.readouterr().out
    assert code == 0, out[-4000:]
    assert "Contracts: 9 kept, 0 broken." in out, out[-2000:]


def _any_names(source: str) -> int:
    return sum(1 for tok in tokenize.generate_tokens(io.StringIO(source).readline)
               if tok.type == tokenize.NAME and tok.string == "Any")


def test_the_core_is_typed_at_its_boundary():
    sources = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "mrtr").glob("*.py"))]
    lines = sum(s.count("\n") for s in sources)
    found = sum(_any_names(s) for s in sources)
    assert found * 1000 <= MAX_ANY_PER_KLOC * lines, f"{found} Any in {lines} lines of mrtr/"


def test_the_counter_counts_names_not_words():
    assert _any_names("from typing import Any\nx: Any = 1  # Any in a comment\n'Any'\n") == 2
