"""What the in-page checker downloads, and the policy it runs under: every file from this app's origin, Pyodide
and the wheel only as installed from their recorded checksums, the checker zipped from this repository's own
modules, 'wasm-unsafe-eval' on the build lesson's page and worker script and on no other response."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from flask import Flask, url_for
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from moves.catalog import DEFAULT_PATH
from web.build import pyodide_install
from web.build import runner as build_runner
from web.site.security import security_headers

ROOT = Path(__file__).resolve().parents[2]
LESSON = "/lessons/build-the-checks"
PLAIN_CSP = dict(security_headers())["Content-Security-Policy"]
WASM_CSP = PLAIN_CSP.replace("script-src 'self';", "script-src 'self' 'wasm-unsafe-eval';")


def get(client: FlaskClient, url: str) -> TestResponse:
    """A response read to the end and closed (a file response holds its file open until then)."""
    response = client.get(url)
    response.get_data()
    response.close()
    return response


def runner_urls(client: FlaskClient) -> dict[str, str]:
    """The addresses the build lesson's page hands its worker (the bundle's only when Pyodide is installed)."""
    html = get(client, LESSON).get_data(as_text=True)
    root = html[html.index("data-build-runner"):]
    names = ("worker", "pyodide", "wheel", "bundle")
    return {n: root.split(f'data-{n}="', 1)[1].split('"', 1)[0] for n in names}


def bundle_url(app: Flask) -> str:
    """The checker bundle's address, which the app serves whether or not Pyodide is installed."""
    with app.test_request_context():
        return url_for("build.runner.checker", digest=build_runner.bundle().digest)


def test_only_the_build_pages_and_the_worker_script_allow_webassembly(app: Flask, client: FlaskClient) -> None:
    assert WASM_CSP != PLAIN_CSP and "'unsafe-eval'" not in WASM_CSP and "unsafe-inline" not in WASM_CSP
    assert get(client, LESSON).headers["Content-Security-Policy"] == WASM_CSP
    assert get(client, f"{LESSON}/figures/build-loop").headers["Content-Security-Policy"] == WASM_CSP
    assert get(client, runner_urls(client)["worker"]).headers["Content-Security-Policy"] == WASM_CSP
    # Every other page the app serves without arguments keeps its policy exactly.
    checked = 0
    for rule in app.url_map.iter_rules():
        if "GET" not in (rule.methods or ()) or rule.arguments or rule.rule.startswith(("/lti", "/mcp", "/embed")):
            continue
        response = get(client, rule.rule)
        if response.status_code < 400:
            assert response.headers["Content-Security-Policy"] == PLAIN_CSP, rule.rule
            checked += 1
    for url in ("/lessons/when-the-server-needs-input", "/quiz/build-the-checks", "/check", "/playground",
                "/static/js/build-worker.js", bundle_url(app)):
        assert get(client, url).headers["Content-Security-Policy"] == PLAIN_CSP, url
    assert checked >= 3


def test_the_runner_files_come_from_this_origin_cacheable_and_typed(app: Flask, client: FlaskClient,
                                                                    pyodide: Path) -> None:
    urls = runner_urls(client)
    assert all(u.startswith("/build-runner/") for u in urls.values())
    assert urls["bundle"] == bundle_url(app)
    for name, mimetype in build_runner.PYODIDE_SERVED.items():
        response = get(client, urls["pyodide"] + name)
        assert response.status_code == 200 and response.mimetype == mimetype, name
        assert response.headers["Cache-Control"] == build_runner.IMMUTABLE
        assert hashlib.sha256(response.data).hexdigest() == json.loads(
            (pyodide / pyodide_install.MARKER).read_text())["sha256"][name]
    wheel = get(client, urls["wheel"])
    assert hashlib.sha256(wheel.data).hexdigest() == pyodide_install.ITSDANGEROUS_SHA256
    for url in (urls["pyodide"] + "README.md", urls["pyodide"] + "../../x", "/build-runner/pyodide/0.0.1/pyodide.js",
                "/build-runner/wheels/flask-3.1.3-py3-none-any.whl", "/build-runner/checker-0000.zip",
                "/build-runner/worker-0000.js"):
        assert get(client, url).status_code == 404, url


def test_the_checker_bundle_is_this_repositorys_own_code(app: Flask, client: FlaskClient) -> None:
    response = get(client, bundle_url(app))
    assert response.status_code == 200 and response.headers["Cache-Control"] == build_runner.IMMUTABLE
    with zipfile.ZipFile(io.BytesIO(response.data)) as archive:
        names = set(archive.namelist())
        for name in names - {build_runner.CATALOGUE_NAME}:
            assert archive.read(name) == (ROOT / name).read_bytes(), name
        assert archive.read(build_runner.CATALOGUE_NAME) == DEFAULT_PATH.read_bytes()  # the app's own catalogue
    for module in ("web/build/in_browser.py", "moves/targets/module.py", "moves/check.py", "moves/engine.py"):
        assert module in names
    assert not any(n.startswith(("tests/", "bench/")) or n in ("app.py", "web/build/routes.py") for n in names)


def test_the_bundle_runs_the_checker_where_ssl_sqlite3_and_cryptography_are_missing(tmp_path: Path, app: Flask,
                                                                                   client: FlaskClient) -> None:
    """As in Pyodide's core: the bundle alone on the path, the three missing modules made unimportable."""
    (tmp_path / "checker.zip").write_bytes(get(client, bundle_url(app)).data)
    starter = (ROOT / "lessons" / "build-the-checks" / "starter" / "server.py").read_text()
    script = f"""
import importlib.abc, json, sys, zipfile
zipfile.ZipFile({str(tmp_path / 'checker.zip')!r}).extractall({str(tmp_path / 'checker')!r})
sys.path = [{str(tmp_path / 'checker')!r}] + [p for p in sys.path if p not in ("", {str(ROOT)!r})]
import web.build.in_browser as ib
ib.install_stubs()
stubs = sys.meta_path[-1]
class Missing(importlib.abc.MetaPathFinder):
    # As in Pyodide's core: no real finder has these, so only the stubs answer.
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("ssl", "_ssl", "sqlite3", "_sqlite3", "cryptography"):
            return stubs.find_spec(name, path, target)
        return None
sys.meta_path.insert(0, Missing())
rows = []
result = ib.run({starter!r}, {str(tmp_path / 'checker' / 'moves.toml')!r}, lambda kind, data: rows.append(kind))
print(json.dumps({{"summary": result["summary"], "error": result["error"], "rows": rows,
                  "from": sorted({{"bundle" if f.startswith({str(tmp_path)!r}) else "repository"
                                  for f in [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
                                  if f.startswith({str(tmp_path)!r})
                                  or (f.startswith({str(ROOT)!r}) and "/.venv/" not in f)}})}}))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["error"] == "" and out["summary"].startswith("FAIL:")
    assert out["rows"].count("move") > 0 and out["rows"].count("probe") > 0
    assert out["from"] == ["bundle"]  # the checker came from the bundle, not from the repository


def _tarball(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_the_installer_keeps_only_a_tarball_that_matches_its_recorded_integrity(tmp_path: Path) -> None:
    tarball = _tarball({name: name.encode() for name in pyodide_install.PYODIDE_FILES})
    good = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    with pytest.raises(pyodide_install.FetchError, match="does not match"):
        pyodide_install.unpack_pyodide(tarball + b"x", tmp_path, good)
    assert not pyodide_install.pyodide_dir(tmp_path).exists()
    with pytest.raises(pyodide_install.FetchError, match="has no package/"):
        partial = _tarball({"pyodide.js": b"x"})
        pyodide_install.unpack_pyodide(partial, tmp_path, "sha512-" + base64.b64encode(
            hashlib.sha512(partial).digest()).decode())
    assert not pyodide_install.pyodide_dir(tmp_path).exists()
    target = pyodide_install.unpack_pyodide(tarball, tmp_path, good)
    assert (target / "pyodide.asm.wasm").read_bytes() == b"pyodide.asm.wasm"
    assert json.loads((target / pyodide_install.MARKER).read_text())["integrity"] == good
    assert sorted(p.name for p in tmp_path.iterdir()) == [pyodide_install.PYODIDE_VERSION]  # no staging left


def test_the_recorded_pins_are_the_ones_installed(pyodide: Path) -> None:
    recorded = json.loads((pyodide / pyodide_install.MARKER).read_text())
    assert recorded["integrity"] == pyodide_install.PYODIDE_INTEGRITY
    requirements = (ROOT / "requirements.txt").read_text()
    assert f"itsdangerous=={pyodide_install.ITSDANGEROUS_VERSION}\n" in requirements


def test_without_pyodide_installed_the_page_says_so_and_the_files_answer_404(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path,
                                                                             client: FlaskClient) -> None:
    monkeypatch.setattr(pyodide_install, "INSTALL_DIR", tmp_path)
    monkeypatch.setattr(pyodide_install.pyodide_dir, "__defaults__", (tmp_path,))
    monkeypatch.setattr(pyodide_install.wheel_path, "__defaults__", (tmp_path,))
    monkeypatch.setattr(pyodide_install.is_installed, "__defaults__", (tmp_path,))
    page = get(client, LESSON)
    assert page.status_code == 200 and 'data-installed="false"' in page.get_data(as_text=True)
    missing = get(client, f"/build-runner/pyodide/{pyodide_install.PYODIDE_VERSION}/pyodide.js")
    assert missing.status_code == 404 and b"web.build.pyodide_install" in missing.data
