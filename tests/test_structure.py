"""Modules with one job, held by a measure: no module of a product package over MAX_MODULE_LINES lines, no function
or method over MAX_FUNCTION_LINES (its signature, docstring and body; decorators aside), read with `ast`.

ALLOWED is for a file genuinely over a limit, named with the reason it may be for now; an allowance that no longer
covers anything over the limits fails, so the list only ever holds what is really over. (Every file is under them
since issue 35: web/lti/routes.py was split by job, mrtr/_calls.py's `call` gave its lookup a step of its own.)"""

from __future__ import annotations

import ast
from fnmatch import fnmatch
from pathlib import Path

from tests.tracked import tracked_under

ROOT = Path(__file__).resolve().parent.parent
#: Every package that ships or serves (tests, bench and loopback are the harness, not the product).
PRODUCT = ("mrtr", "mrtr_cli", "mrtr_client", "mrtr_grading", "mrtr_settings", "mrtr_stores", "mrtr_toolsets", "moves",
           "web")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
#: Files exempt for now, as glob patterns relative to the repository, and why each may be over (none today).
ALLOWED: dict[str, str] = {}


def _product_files(root: Path = ROOT) -> list[Path]:
    """The product's modules git tracks (never what a build or an editor left beside them)."""
    return tracked_under(*PRODUCT, root=root)


def _allowed(path: Path) -> bool:
    name = path.relative_to(ROOT).as_posix()
    return any(fnmatch(name, pattern) for pattern in ALLOWED)


def oversized(source: str, name: str = "<source>") -> list[str]:
    """What in `source` breaks the limits, one line each: the module's length, then each long function's."""
    found = []
    lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    if lines > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines (at most {MAX_FUNCTION_LINES})")
    return found


def test_no_product_module_or_function_is_over_the_limits() -> None:
    found = [line for path in _product_files() if not _allowed(path)
             for line in oversized(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert found == [], "split these into parts with one job each:\n" + "\n".join(found)


def test_every_allowance_names_files_that_exist() -> None:
    names = [p.relative_to(ROOT).as_posix() for p in _product_files()]
    stale = [pattern for pattern in ALLOWED if not any(fnmatch(n, pattern) for n in names)]
    assert stale == [], f"allowances for files that are gone: {stale}"


def test_every_allowance_covers_something_over_the_limits() -> None:
    """An allowance whose files are all back under the limits is taken off: it would hide the next file to grow."""
    over = {path.relative_to(ROOT).as_posix() for path in _product_files()
            if oversized(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())}
    idle = [pattern for pattern in ALLOWED if not any(fnmatch(name, pattern) for name in over)]
    assert idle == [], f"allowances for files within the limits: {idle}"


def test_the_measure_covers_every_product_package_the_core_and_the_web_app_included() -> None:
    assert {"mrtr", "web", "moves"} <= set(PRODUCT)
    measured = {path.relative_to(ROOT).parts[0] for path in _product_files()}
    assert measured == set(PRODUCT)
    assert ROOT / "web" / "lti" / "routes.py" in _product_files() and ROOT / "mrtr" / "_calls.py" in _product_files()


def test_the_measure_counts_module_lines_and_whole_functions_and_methods() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))  # with its def: exactly the limit
    assert oversized(f"def fits():\n{body}") == []
    assert oversized(f"def over():\n{body}    y = 0\n") == ["<source>:1 over: 61 lines (at most 60)"]
    method = "class C:\n    def m(self):\n" + "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert oversized(method) == ["<source>:2 m: 61 lines (at most 60)"]
    assert oversized("x = 1\n" * MAX_MODULE_LINES) == []
    assert oversized("x = 1\n" * (MAX_MODULE_LINES + 1)) == ["<source>: 601 lines (at most 600)"]


#: Class names still defined twice, and who is changing the file that holds the second: none now (issue 35 gave
#: web/lessons/exchanges.py's scene its own name and its lines the core's `mrtr.client.Line`); add one only with a
#: reason.
DUPLICATES_ALLOWED: dict[str, str] = {}


def _type_names(node: ast.stmt) -> list[str]:
    """The public type names a module-level statement defines: a class, or a CapWords alias (`Clock = ...`)."""
    if isinstance(node, ast.ClassDef):
        names = [node.name]
    elif isinstance(node, ast.Assign):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        names = [node.target.id]
    else:
        names = []
    # CapWords only: constants (UPPER) and type variables (T) are not types a reader has to tell apart.
    return [n for n in names if n[:1].isupper() and not n.isupper() and not n.startswith("_")]


def class_homes(files: list[Path]) -> dict[str, list[str]]:
    """Each module-level class or type-alias name in `files`, with the modules that define it."""
    homes: dict[str, list[str]] = {}
    for path in files:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            for name in _type_names(node):
                homes.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    return homes


def test_every_class_name_has_one_definition() -> None:
    """One name, one meaning: a reader who meets `Step`, `Tool` or `Clock` finds one class or alias, not two to
    tell apart."""
    twice = {name: where for name, where in class_homes(_product_files()).items()
             if len(where) > 1 and name not in DUPLICATES_ALLOWED}
    assert twice == {}


def test_a_name_means_one_thing_across_the_core_and_the_checker() -> None:
    """`UNSUPPORTED_VERSION` is the core's error code; the probe's date has its own name."""
    import moves.probes
    from mrtr.errors import UNSUPPORTED_VERSION

    assert moves.probes.UNSUPPORTED_VERSION is UNSUPPORTED_VERSION
    assert moves.probes.UNKNOWN_VERSION_DATE == "1900-01-01"
