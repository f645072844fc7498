"""The distribution: `pip install` gives the `mrtr` command, which works from any directory, without the checkout.

The quick tests read pyproject.toml: its pins are requirements.txt's, and the moves file is package data. The
external ones build the wheel from a copy of the working tree (git's own files and the untracked ones it does not
ignore, so nothing is written into the checkout), install it into a fresh virtual environment once per session
(the dependencies come from the package index), and run the installed `mrtr` from an empty directory: its help,
`mrtr lab`, and `mrtr check` against the installed stdio server, whose tickets live 2 s so the late move waits
about 3 s. Nothing installed may import Flask, or read anything from the checkout.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import mrtr
from moves.catalog import DEFAULT_PATH, load_moves

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The packages the wheel holds: the command, and everything `mrtr check`, `serve` and `lab` run on.
PACKAGES = {"mrtr", "mrtr_cli", "mrtr_settings", "mrtr_stores", "mrtr_toolsets", "moves"}
#: Modules that need an optional extra, and the one module they may miss without it.
#: Every Redis backend (and the client factory they share) is named for Redis, and nothing else may need it.
EXTRAS = {f"mrtr_stores.{p.stem}": "redis" for p in sorted((ROOT / "mrtr_stores").glob("*redis*.py"))}
INSTALL_TIMEOUT = 600  # a slow package index, once per session


def _pins(lines: list[str]) -> dict[str, str]:
    """name (normalised) -> version, for `name==version` lines; any other requirement fails."""
    pins: dict[str, str] = {}
    for line in lines:
        requirement = line.split("#", 1)[0].strip()
        if not requirement or requirement.startswith("-"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)", requirement)
        assert match, f"not an exact pin: {requirement!r}"
        pins[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return pins


def test_the_pins_in_pyproject_are_those_of_requirements_txt() -> None:
    required = _pins((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())
    project = PYPROJECT["project"]
    declared = _pins([*project["dependencies"], *(d for extra in project["optional-dependencies"].values()
                                                 for d in extra)])
    assert declared, "pyproject.toml declares no dependency"
    for name, version in declared.items():
        assert name in required, f"{name} is a dependency in pyproject.toml but not pinned in requirements.txt"
        assert version == required[name], (f"{name}: pyproject.toml pins {version}, requirements.txt "
                                           f"{required[name]}")


def test_the_moves_file_is_package_data_of_moves() -> None:
    assert "moves.toml" in PYPROJECT["tool"]["setuptools"]["package-data"]["moves"]
    assert Path(str(DEFAULT_PATH)) == ROOT / "moves" / "moves.toml"
    assert not (ROOT / "lessons" / "moves.toml").exists(), "the moves file lives in the moves package now"
    assert load_moves()


# -- the built wheel, installed -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    wheel: Path
    python: Path  # the fresh environment's interpreter
    mrtr: Path  # its console script
    elsewhere: Path  # an empty directory outside the checkout, the commands' working directory
    env: dict[str, str]


def _run(argv: list[str | Path], *, cwd: Path, env: dict[str, str],
         timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _copy_working_tree(target: Path) -> None:
    """The files git knows or would add (tracked, and untracked but not ignored): what a `pip install .` of this
    checkout reads, without caches, .venv or node_modules, and never building inside the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a file deleted in the working tree but still in the index is not copied
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    # No variable of this session may lead the installed commands back to the checkout or change their settings.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP") and not k.startswith("MRTR_")}
    source, dist, venv, elsewhere = base / "source", base / "dist", base / "venv", base / "elsewhere"
    for directory in (source, dist, elsewhere):
        directory.mkdir()
    _copy_working_tree(source)
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                  "--wheel-dir", dist, source], cwd=elsewhere, env=env, timeout=INSTALL_TIMEOUT)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("mrtr_lab-*.whl")
    made = _run([sys.executable, "-m", "venv", venv], cwd=elsewhere, env=env, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    python = venv / "bin" / "python"
    pip = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", wheel], cwd=elsewhere, env=env,
               timeout=INSTALL_TIMEOUT)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    env = {**env, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
           "MRTR_STATE_DIR": str(base / "state")}
    yield Installed(wheel, python, venv / "bin" / "mrtr", elsewhere, env)


@pytest.mark.external
def test_the_wheel_holds_the_command_and_the_moves_not_the_app(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = wheel.read(f"{info}/METADATA").decode()
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert {n.split("/")[0] for n in names} == PACKAGES | {info}
    assert "moves/moves.toml" in names and "moves/targets/stdio.py" in names
    assert info == f"mrtr_lab-{mrtr.__version__}.dist-info"
    assert re.search(r"^mrtr = mrtr_cli:entry_point$", entry_points, re.M)
    requires = sorted(line.removeprefix("Requires-Dist: ").replace(" ", "")
                      for line in metadata.splitlines() if line.startswith("Requires-Dist: "))
    project = PYPROJECT["project"]
    assert requires == sorted([*project["dependencies"], *(f'{d};extra=="{extra}"' for extra, deps in
                                                          project["optional-dependencies"].items() for d in deps)])


@pytest.mark.external
def test_the_installed_packages_import_without_flask_or_the_checkout(installed: Installed) -> None:
    script = f"""
import importlib, importlib.metadata, importlib.util, json, pkgutil, sys
packages = {sorted(PACKAGES)!r}
extras = {EXTRAS!r}
missing = {{}}
files = []
for package in packages:
    module = importlib.import_module(package)
    files.append(module.__file__)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        try:
            files.append(importlib.import_module(info.name).__file__)
        except ModuleNotFoundError as exc:
            missing[info.name] = exc.name
import mrtr, moves.catalog
print(json.dumps({{"missing": missing, "files": files, "path": sys.path,
                  "flask": "flask" in sys.modules or importlib.util.find_spec("flask") is not None,
                  "version": importlib.metadata.version("mrtr-lab"), "core": mrtr.__version__,
                  "moves": str(moves.catalog.DEFAULT_PATH), "count": len(moves.catalog.load_moves())}}))
"""
    run = _run([installed.python, "-c", script], cwd=installed.elsewhere, env=installed.env, timeout=120)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["missing"] == EXTRAS, "only the optional extras may be missing"
    assert not found["flask"], "the installed packages imported Flask, or it was installed with them"
    assert found["version"] == found["core"] == mrtr.__version__
    venv = str(installed.python.parent.parent)
    assert all(f.startswith(venv) for f in found["files"]), [f for f in found["files"] if not f.startswith(venv)]
    assert not any(p.startswith(str(ROOT)) for p in found["path"]), found["path"]
    assert found["moves"].startswith(venv) and found["count"] == len(load_moves())


@pytest.mark.external
@pytest.mark.parametrize("argv", [["{mrtr}", "--help"], ["{mrtr}", "check", "--help"],
                                  ["{python}", "-m", "mrtr", "check", "--help"]],
                         ids=["mrtr", "mrtr check", "python -m mrtr check"])
def test_the_help_from_another_directory(installed: Installed, argv: list[str]) -> None:
    command = [a.format(mrtr=installed.mrtr, python=installed.python) for a in argv]
    run = _run(command, cwd=installed.elsewhere, env=installed.env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: ") and ("--stdio" in run.stdout) == ("check" in argv), run.stdout


@pytest.mark.external
def test_mrtr_lab_runs_its_scenes_on_the_installed_server(installed: Installed) -> None:
    run = _run([installed.mrtr, "lab"], cwd=installed.elsewhere, env=installed.env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 of 4 scenes went as expected" in run.stdout


@pytest.mark.external
def test_mrtr_check_holds_against_the_installed_stdio_server(installed: Installed) -> None:
    server = f"{shlex.quote(str(installed.python))} -m mrtr serve"
    env = {**installed.env, "MRTR_TICKET_TTL": "2"}  # the late move waits about 3 s, not two minutes
    run = _run([installed.mrtr, "check", "--stdio", server, "--json"], cwd=installed.elsewhere, env=env,
               timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["ok"] is True and "stopped" not in report
    assert [m["move"] for m in report["moves"]] == [m.slug for m in load_moves()]
    assert {m["move"]: m["verdict"] for m in report["moves"] if m["verdict"] != "pass"} == {}
    assert [p["probe"] for p in report["probes"] if not p["ok"]] == []
