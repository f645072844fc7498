"""The Python side of the build lesson's in-page checker: it runs in the learner's browser, on Pyodide, in the
lesson's Web Worker (static/js/build-worker.js), never in the app.

The app ships this file with the checker's own modules (web/build/runner.py zips them from this repository);
the worker imports it and calls `run`, which plays the catalogue on the learner's source with
`moves.check.check_source` and hands each row to the worker as it finishes. The report it returns also keeps,
with each move, the server's last log lines while it was played, and what the source shows that no move can
(web/build/lint.py): the build lesson's grading reads both.

Pyodide's core runtime leaves out a few standard modules (ssl, sqlite3) and has no cryptography wheel. The
checker's modules import them at the top (the HTTP target, the SQLite and sealed-ticket code) but an in-page run
never uses them, so `install_stubs` lets those imports succeed with modules that refuse any real use, saying why.
A module Pyodide does have is never replaced: the stub finder is asked last. It imports no Flask.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

if TYPE_CHECKING:
    from mrtr import JSON

#: The server's last lines kept with each move's row (web/build/routes.py reads which check refused an honest retry).
LOG_LINES, LOG_WIDTH = 4, 160
#: Top-level modules an in-page run imports but never uses, which Pyodide's core does not ship.
UNAVAILABLE = ("ssl", "sqlite3", "cryptography", "redis")


class UnavailableHere(ImportError):
    """A stand-in module was really used: the in-page checker does not have it."""


def _refuse(module: str, name: str) -> type:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise UnavailableHere(f"{module}.{name} is not available in the in-page checker")

    # A class, so a module's `class X(stub.Base)` and `except stub.Error` at import still work.
    return type(name, (Exception,), {"__init__": refuse, "__call__": refuse, "__module__": module})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _refuse(self.__name__, name)
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name, "Not available in the in-page checker (see web/build/in_browser.py).")
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def install_stubs(names: Sequence[str] = UNAVAILABLE) -> None:
    """Let `names` (and their submodules) import where they are missing. Asked last, so a real module wins."""
    if not any(isinstance(f, _StubFinder) for f in sys.meta_path):
        sys.meta_path.append(_StubFinder(names))


def run(source: str, catalogue: str | Path, post: Callable[[str, object], None]) -> Mapping[str, object]:
    """Play the catalogue at `catalogue` (a moves.toml) on the learner's `source`; `post(kind, data)` gets each
    "move", "probe" and "log" as it happens. Returns what `check_source` returns."""
    from moves.catalog import load_moves
    from moves.check import check_source
    from web.build.lint import findings

    try:
        moves = load_moves(Path(catalogue))
    except ValueError as exc:
        return {"report": None, "summary": "", "error": f"the move catalogue cannot be read: {exc}"}
    logs: dict[str, list[str]] = {}
    pending: list[str] = []

    def on_log(lines: list[str]) -> None:
        pending.extend(lines)
        post("log", lines)

    def on_move(row: object) -> None:
        # What the server printed while this move was played: its grade names the check that refused it.
        if isinstance(row, dict):
            logs[str(row.get("move"))] = [line[:LOG_WIDTH] for line in pending[-LOG_LINES:]]
        pending.clear()
        post("move", row)

    result = check_source(source, moves=moves, on_move=on_move, on_probe=lambda probe: post("probe", probe),
                          on_log=on_log)
    report = result.get("report")
    rows = report.get("moves") if isinstance(report, dict) else None
    if isinstance(report, dict) and isinstance(rows, list):
        for row in rows:
            if isinstance(row, dict):
                row["log"] = cast("list[JSON]", logs.get(str(row.get("move")), []))
        report["findings"] = cast("dict[str, JSON]", findings(source))
    return result


def run_client(source: str, catalogue: str | Path, post: Callable[[str, object], None]) -> Mapping[str, object]:
    """Run the learner's client in `source` against the client checker's flows (web/build/client_run.py); the same
    signature as `run`, so the worker calls either. `catalogue` is unused: the rules are mrtr_grading's."""
    from web.build.client_run import run_source

    return run_source(source, post)
