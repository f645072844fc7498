"""Install what the build lesson's in-page checker runs on: Pyodide's core runtime and the itsdangerous wheel.

    .venv/bin/python -m web.build.pyodide_install        # scripts/run.sh and scripts/test.sh run this

Pyodide comes from the npm registry's tarball (`pyodide@PYODIDE_VERSION`), checked against the sha512
`dist.integrity` recorded below before anything is unpacked; itsdangerous comes from PyPI through pip, checked
against the wheel's sha256 recorded below. Both land in `instance/pyodide/` (git-ignored), which the app serves
from its own origin (web/build/runner.py), so the learner's browser never fetches anything from elsewhere.
A finished install is left alone; a file that fails its check is never kept. Standard library only, so it
runs before anything else is installed (importing it imports no Flask); no Node needed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALL_DIR = ROOT / "instance" / "pyodide"

PYODIDE_VERSION = "0.29.5"
#: npm's `dist.integrity` of pyodide-0.29.5.tgz (`npm view pyodide@0.29.5 dist.integrity`).
PYODIDE_INTEGRITY = "sha512-TkYrUv9m8QmfImADKRmpwZulL48E0uUaBSO+dvRQKyAJc0qh9gu7jn8btyHPh3NZm1r2IH2YrJhIr7Q2B9urAw=="
#: The core runtime: what loadPyodide fetches, plus the package's README and manifest (its licence: MPL-2.0).
PYODIDE_FILES = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json",
                 "package.json", "README.md")

ITSDANGEROUS_VERSION = "2.2.0"  # as requirements.txt pins it
ITSDANGEROUS_WHEEL = f"itsdangerous-{ITSDANGEROUS_VERSION}-py3-none-any.whl"
#: PyPI's sha256 of that wheel.
ITSDANGEROUS_SHA256 = "c6242fc49e35958c8b15141343aa660db5fc54d4f13a1db01a3f5891b98700ef"

MARKER = "installed.json"


class FetchError(Exception):
    """A download failed or did not match its recorded checksum; the message says which."""


def pyodide_dir(root: Path = INSTALL_DIR) -> Path:
    return root / PYODIDE_VERSION


def wheel_path(root: Path = INSTALL_DIR) -> Path:
    return root / "wheels" / ITSDANGEROUS_WHEEL


def is_installed(root: Path = INSTALL_DIR) -> bool:
    """True when both pieces are in place, from this script's pins."""
    marker = pyodide_dir(root) / MARKER
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (recorded.get("integrity") == PYODIDE_INTEGRITY and wheel_path(root).is_file()
            and all((pyodide_dir(root) / name).is_file() for name in PYODIDE_FILES))


def check_integrity(data: bytes, integrity: str) -> None:
    """Raise FetchError unless `data` has the Subresource-Integrity-style `integrity` ("sha512-<base64>")."""
    algorithm, _, expected = integrity.partition("-")
    if algorithm not in ("sha256", "sha384", "sha512") or not expected:
        raise FetchError(f"unusable integrity {integrity!r}")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise FetchError(f"the pyodide tarball does not match its recorded {algorithm} ({actual} != {expected})")


def unpack_pyodide(tarball: bytes, root: Path = INSTALL_DIR, integrity: str = PYODIDE_INTEGRITY) -> Path:
    """Check `tarball` against `integrity`, then put the core runtime's files in place (all or nothing)."""
    check_integrity(tarball, integrity)
    target = pyodide_dir(root)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".pyodide-", dir=root))
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            for name in PYODIDE_FILES:
                try:
                    member = archive.getmember(f"package/{name}")
                except KeyError:
                    raise FetchError(f"the pyodide tarball has no package/{name}") from None
                source = archive.extractfile(member) if member.isfile() else None
                if source is None:
                    raise FetchError(f"package/{name} in the pyodide tarball is not a regular file")
                (staging / name).write_bytes(source.read())
        files = {name: hashlib.sha256((staging / name).read_bytes()).hexdigest() for name in PYODIDE_FILES}
        (staging / MARKER).write_text(json.dumps({"version": PYODIDE_VERSION, "integrity": integrity,
                                                  "sha256": files}, indent=2) + "\n", encoding="utf-8")
        staging.chmod(0o755)  # mkdtemp makes it private; the app serving it may run as another user
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def registry() -> str:
    return (os.environ.get("NPM_CONFIG_REGISTRY") or os.environ.get("npm_config_registry")
            or "https://registry.npmjs.org/").rstrip("/")


def download_pyodide() -> bytes:
    url = f"{registry()}/pyodide/-/pyodide-{PYODIDE_VERSION}.tgz"
    try:
        with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 - a fixed https URL
            return bytes(response.read())
    except OSError as exc:
        raise FetchError(f"could not download {url}: {exc}") from None


def fetch_wheel(root: Path = INSTALL_DIR) -> Path:
    """The itsdangerous wheel from PyPI (through pip, so pip's index settings apply), checked by sha256."""
    target = wheel_path(root)
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == ITSDANGEROUS_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        run = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                              "--no-deps", "--only-binary=:all:", "--dest", tmp,
                              f"itsdangerous=={ITSDANGEROUS_VERSION}"], capture_output=True, text=True, check=False)
        got = Path(tmp) / ITSDANGEROUS_WHEEL
        if run.returncode != 0 or not got.is_file():
            raise FetchError(f"pip could not download {ITSDANGEROUS_WHEEL}: {run.stderr.strip()[-300:]}")
        digest = hashlib.sha256(got.read_bytes()).hexdigest()
        if digest != ITSDANGEROUS_SHA256:
            raise FetchError(f"{ITSDANGEROUS_WHEEL} does not match its recorded sha256 ({digest})")
        got.replace(target)
    return target


def main() -> int:
    if is_installed():
        print(f"pyodide {PYODIDE_VERSION} and {ITSDANGEROUS_WHEEL} already in {INSTALL_DIR.relative_to(ROOT)}")
        return 0
    try:
        fetch_wheel()
        if not is_installed():
            unpack_pyodide(download_pyodide())
    except FetchError as exc:
        print(f"pyodide_install: {exc}", file=sys.stderr)
        return 1
    print(f"installed pyodide {PYODIDE_VERSION} and {ITSDANGEROUS_WHEEL} in {INSTALL_DIR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
