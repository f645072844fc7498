"""The shape of the code, checked by tools rather than by hand: the layering contracts in pyproject.toml
(import-linter), and the core's typed boundary (how often `Any` appears in mrtr/)."""

from __future__ import annotations

import ast
import io
import logging
import tokenize
from fnmatch import fnmatch
from pathlib import Path

from tests.tracked import tracked_under

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
    assert "Contracts: 11 kept, 0 broken." in out, out[-2000:]


def _any_names(source: str) -> int:
    return sum(1 for tok in tokenize.generate_tokens(io.StringIO(source).readline)
               if tok.type == tokenize.NAME and tok.string == "Any")


#: The most `Any` the packages above the core that speak its messages may hold per 1,000 lines: they use the
#: core's types (`mrtr.JSONObject`, the WSGI standard's, records), so `Any` is left for what really is dynamic.
MAX_ANY_ABOVE_THE_CORE = 10
TYPED_ABOVE_THE_CORE = ("web", "mrtr_toolsets", "moves", "mrtr_settings", "mrtr_stores", "mrtr_cli", "mrtr_client",
                        "mrtr_grading")
#: Files excused from the bar while someone changes them: none now (issue 35 typed the last); nothing may be added
#: without a reason as good as "another developer is rewriting this file today".
ANY_ALLOWED: dict[str, str] = {}


def any_count(package: str, *, allowed: bool = True, root: Path = ROOT) -> tuple[int, int]:
    """(`Any` names, lines) over a package's tracked modules, with or without the files in ANY_ALLOWED."""
    found = lines = 0
    for path in tracked_under(package, root=root):
        if not allowed and any(fnmatch(path.relative_to(root).as_posix(), pattern) for pattern in ANY_ALLOWED):
            continue
        source = path.read_text(encoding="utf-8")
        found, lines = found + _any_names(source), lines + source.count("\n")
    return found, lines


def any_report() -> str:
    """`Any` per 1,000 lines in every product package: `python -m tests.test_layers` prints it."""
    rows = []
    for package in ("mrtr", "mrtr_settings", "mrtr_stores", "mrtr_toolsets", "mrtr_cli", "mrtr_client", "mrtr_grading",
                    "moves", "web"):
        found, lines = any_count(package)
        rows.append(f"{package:14} {found:4} Any in {lines:6} lines: {found * 1000 / max(lines, 1):5.1f} per 1,000")
    return "\n".join(rows)


def test_above_the_core_any_stays_under_the_bar():
    for package in TYPED_ABOVE_THE_CORE:
        found, lines = any_count(package, allowed=False)
        report = f"{package} (allowances aside): {found} Any in {lines} lines\n{any_report()}"
        assert found * 1000 <= MAX_ANY_ABOVE_THE_CORE * lines, report


def test_every_any_allowance_names_a_file_that_exists():
    names = [p.relative_to(ROOT).as_posix() for p in tracked_under(*TYPED_ABOVE_THE_CORE)]
    assert [pattern for pattern in ANY_ALLOWED if not any(fnmatch(n, pattern) for n in names)] == []


def test_the_core_is_typed_at_its_boundary():
    sources = [p.read_text(encoding="utf-8") for p in tracked_under("mrtr") if p.parent == ROOT / "mrtr"]
    lines = sum(s.count("\n") for s in sources)
    found = sum(_any_names(s) for s in sources)
    assert found * 1000 <= MAX_ANY_PER_KLOC * lines, f"{found} Any in {lines} lines of mrtr/"


def test_the_counter_counts_names_not_words():
    assert _any_names("from typing import Any\nx: Any = 1  # Any in a comment\n'Any'\n") == 2


#: Private names imported across packages for now, and why; nothing else may be added without a reason as good.
PRIVATE_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {}


#: The project's own top-level packages and modules (a third party's private parts, like `_typeshed`, are its own).
FIRST_PARTY = {"app", "bench", "loopback", "moves", "mrtr", "mrtr_cli", "mrtr_client", "mrtr_grading", "mrtr_settings",
               "mrtr_stores", "mrtr_toolsets", "tests", "web"}


def private_imports(source: str, importer: str) -> list[str]:
    """`module.name` for every private module or name `source` imports from a package other than its own."""
    own = importer.split("/", 1)[0].removesuffix(".py")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [(alias.name.rpartition(".")[0], alias.name.rpartition(".")[2]) for alias in node.names]
        else:
            continue
        for module, name in modules:
            parts = [*module.split("."), name] if module else [name]
            if parts[0] not in FIRST_PARTY or parts[0] == own or (
                    importer.startswith("tests/mrtr/") and parts[0] == "mrtr"):
                continue  # a package may use its own private parts; the core's tests may look inside the core
            if any(part.startswith("_") and not part.startswith("__") for part in parts):
                found.append(f"{module}.{name}" if module else name)
    return found


def private_imports_in(root: Path) -> list[tuple[str, str]]:
    """(file, private name) for every private import across packages in the Python files git tracks under `root`
    (what `pip install .` copies to build/lib/, or a run leaves, is not the project's code)."""
    return [(path, name) for p in tracked_under("", root=root) for path in [p.relative_to(root).as_posix()]
            for name in private_imports(p.read_text(encoding="utf-8"), path)]


def test_nothing_imports_a_private_name_across_packages():
    """A name or module starting with an underscore is its package's own business: the public-api contract covers
    modules, this covers names (`from moves.engine import _helper`)."""
    found = private_imports_in(ROOT)
    assert [f for f in found if f not in PRIVATE_IMPORTS_ALLOWED] == []
    stale = [k for k in PRIVATE_IMPORTS_ALLOWED if k not in found]
    assert stale == [], f"allowances no longer needed: {stale}"


def test_the_private_import_finder_sees_names_and_modules_but_not_a_package_s_own():
    source = "from moves.engine import _x, y\nimport mrtr._server\nfrom mrtr import __version__\nfrom web._a import b\n"
    assert private_imports(source, "web/views.py") == ["moves.engine._x", "mrtr._server"]
    assert private_imports(source, "tests/mrtr/test_a.py") == ["moves.engine._x", "web._a.b"]


if __name__ == "__main__":
    print(any_report())
