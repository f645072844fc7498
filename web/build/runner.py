"""What the build lesson's in-page checker downloads, all from this app's own origin: Pyodide's core runtime, the
itsdangerous wheel, the checker's own Python code, and the Web Worker that runs them.

* Pyodide and the wheel are files `web.build.pyodide_install` put in instance/pyodide/ (checksums recorded there); only
  the names loadPyodide asks for are served, under a versioned path, cacheable for a year.
* The checker is zipped from this repository when first asked for: the modules `web/build/in_browser.py` imports,
  found by `modulefinder` (so a module moved or added in moves/ or mrtr/ ships without a list to edit here),
  and the move catalogue the app itself reads. Its address carries a hash of its bytes.
* The worker script's response, and the page that starts it, allow `'wasm-unsafe-eval'` (web.site.security.allow_wasm):
  a worker's Content-Security-Policy comes from its own script's response.

It never runs the learner's code and never receives it: the run happens in the browser. Nothing here writes.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from functools import cache
from importlib.resources.abc import Traversable
from modulefinder import ModuleFinder
from pathlib import Path
from typing import TypedDict

from flask import Blueprint, Response, abort, send_file, url_for

from moves.catalog import DEFAULT_PATH
from moves.targets.remote import DEFAULT_TIMEOUT
from web.build import pyodide_install
from web.site.security import allow_wasm
from web.site.services import get_settings

bp = Blueprint("runner", __name__, url_prefix="/build-runner")

ROOT = Path(__file__).resolve().parents[2]
WORKER_SCRIPT = ROOT / "static" / "js" / "build-worker.js"
#: The module the worker imports first; the bundle is everything of this repository it imports, transitively.
ENTRY = "web.build.in_browser"
#: Where the catalogue sits inside the bundle.
CATALOGUE_NAME = "moves.toml"
#: What loadPyodide fetches from its indexURL, and the type each is served as (wasm must be application/wasm
#: for streaming compilation).
PYODIDE_SERVED = {"pyodide.js": "text/javascript", "pyodide.asm.js": "text/javascript",
                  "pyodide.asm.wasm": "application/wasm", "python_stdlib.zip": "application/zip",
                  "pyodide-lock.json": "application/json"}
#: Seconds a run may go without a word from the worker before the page ends it (an endless loop in the learner's
#: code); the stdio checker's own per-request time-out.
RUN_TIMEOUT = int(DEFAULT_TIMEOUT)
#: A year: every address here names a version or a content hash, so its bytes never change.
IMMUTABLE = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Bundle:
    data: bytes
    digest: str  # the first 16 hex digits of its sha256: part of its address
    modules: tuple[str, ...]  # the repository modules in it, dotted


def _fixed(name: str, data: bytes) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))  # the same bytes give the same hash
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


@cache
def checker_bundle(root: Path, catalogue: Path | Traversable) -> Bundle:
    """The repository's modules `web.build.in_browser` imports (lazily imported ones included: `modulefinder` reads
    the code, it does not run it), at their repository paths, and the catalogue as moves.toml."""
    finder = ModuleFinder(path=[str(root)])
    finder.import_hook(ENTRY)
    files: dict[str, bytes] = {}
    names = []
    for name, module in finder.modules.items():
        path = Path(getattr(module, "__file__", None) or "")  # modulefinder.Module: None for built-ins
        if path.suffix == ".py" and path.is_relative_to(root):
            files[path.relative_to(root).as_posix()] = path.read_bytes()
            names.append(name)
    for package in {n.split("/")[0] for n in files if "/" in n}:
        files.setdefault(f"{package}/__init__.py", b"")  # a namespace package (web/) must still import here
    files[CATALOGUE_NAME] = catalogue.read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name in sorted(files):
            archive.writestr(_fixed(name, files[name]), files[name])
    data = out.getvalue()
    return Bundle(data, hashlib.sha256(data).hexdigest()[:16], tuple(sorted(names)))


def catalogue_path() -> Path:
    """The moves file the app reads (MRTR_MOVES_FILE, else the moves package's moves.toml)."""
    settings = get_settings()
    return settings.moves_file or Path(str(DEFAULT_PATH))


def bundle() -> Bundle:
    return checker_bundle(ROOT, catalogue_path())


@cache
def _worker_digest(path: Path, mtime: float) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def worker_digest() -> str:
    return _worker_digest(WORKER_SCRIPT, WORKER_SCRIPT.stat().st_mtime)


class RunnerContext(TypedDict):
    """What lessons/_build_runner.html hands the worker (addresses on this app's own origin)."""

    installed: bool
    install_command: str
    worker: str
    pyodide: str  # the directory loadPyodide reads from (indexURL)
    wheel: str
    bundle: str  # "" when Pyodide is not installed: nothing to run it on
    catalogue: str
    timeout: int


def runner_context() -> RunnerContext:
    """The addresses the page hands its worker, or `installed: False` when Pyodide is not installed here.

    Rendering the runner is what lets its page compile WebAssembly: this also opts the response in."""
    allow_wasm()
    installed = pyodide_install.is_installed()
    return {
        "installed": installed,
        "install_command": ".venv/bin/python -m web.build.pyodide_install",
        "worker": url_for("build.runner.worker", digest=worker_digest()),
        "pyodide": url_for("build.runner.pyodide", version=pyodide_install.PYODIDE_VERSION, name="pyodide.js")
        .removesuffix("pyodide.js"),
        "wheel": url_for("build.runner.wheel", name=pyodide_install.ITSDANGEROUS_WHEEL),
        "bundle": url_for("build.runner.checker", digest=bundle().digest) if installed else "",
        "catalogue": CATALOGUE_NAME,
        "timeout": RUN_TIMEOUT,
    }


def _immutable(response: Response) -> Response:
    response.headers["Cache-Control"] = IMMUTABLE
    return response


def _not_installed(what: str) -> Response:
    return Response(f"{what} is not installed on this server: run .venv/bin/python -m web.build.pyodide_install\n",
                    404, mimetype="text/plain")


@bp.get("/pyodide/<version>/<name>")
def pyodide(version: str, name: str) -> Response:
    if version != pyodide_install.PYODIDE_VERSION or name not in PYODIDE_SERVED:
        abort(404)
    path = pyodide_install.pyodide_dir() / name
    if not path.is_file():
        return _not_installed(f"Pyodide {version}")
    return _immutable(send_file(path, mimetype=PYODIDE_SERVED[name], conditional=True, etag=True))


@bp.get("/wheels/<name>")
def wheel(name: str) -> Response:
    if name != pyodide_install.ITSDANGEROUS_WHEEL:
        abort(404)
    path = pyodide_install.wheel_path()
    if not path.is_file():
        return _not_installed(name)
    return _immutable(send_file(path, mimetype="application/zip", conditional=True, etag=True))


@bp.get("/checker-<digest>.zip")
def checker(digest: str) -> Response:
    built = bundle()
    if digest != built.digest:
        abort(404)  # an address from before the code changed: the page names the current one
    return _immutable(Response(built.data, mimetype="application/zip"))


@bp.get("/worker-<digest>.js")
def worker(digest: str) -> Response:
    if digest != worker_digest():
        abort(404)
    allow_wasm()  # the worker compiles Pyodide's WebAssembly under this response's policy
    return _immutable(send_file(WORKER_SCRIPT, mimetype="text/javascript", conditional=True, etag=True))
