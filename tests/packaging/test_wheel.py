"""The distribution: `pip install` gives the `mrtr` command, which works from any directory, without the checkout.

The quick tests read pyproject.toml: its pins are requirements.txt's, the moves file and every package's
`py.typed` are package data, the licence is MIT with its file, and the long description is PACKAGE.md, a page of
its own that names only real commands and settings. The external ones build the wheel from a copy of the working
tree (git's own files and the untracked ones it does not ignore, so nothing is written into the checkout),
install it into a fresh virtual environment once per session (the dependencies come from the package index),
and run the installed `mrtr` from an empty directory: its help, `mrtr lab`, and `mrtr check` against the
installed `mrtr serve`, whose tickets live 2 s so the late move waits about 3 s. Nothing installed may import
Flask, or read anything from the checkout; mypy type-checks code that imports the installed packages (their
`py.typed`).
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
from mrtr_cli import USAGE
from mrtr_settings.environment import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The packages the wheel holds: the command, and everything `mrtr check`, `serve` and `lab` run on.
PACKAGES = {"mrtr", "mrtr_cli", "mrtr_client", "mrtr_grading", "mrtr_settings", "mrtr_stores", "mrtr_toolsets", "moves"}
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


def test_every_package_is_typed_and_ships_its_marker() -> None:
    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert set(include) == PACKAGES | {f"{p}.*" for p in PACKAGES}, "the wheel's packages are PACKAGES"
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["*"]
    for package in sorted(PACKAGES):
        marker = ROOT / package / "py.typed"
        assert marker.is_file(), f"{package} has no py.typed (PEP 561)"
        assert marker.read_text(encoding="utf-8") == "", "py.typed marks a whole package: it stays empty"
    assert "Typing :: Typed" in PYPROJECT["project"]["classifiers"]


def test_the_licence_is_mit_with_its_file() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) ") and "Permission is hereby granted, free of charge" in text
    # PEP 639: an SPDX expression replaces the licence classifiers, and setuptools refuses both together.
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def test_the_project_urls_are_absolute_https_addresses() -> None:
    urls = PYPROJECT["project"]["urls"]
    assert urls and all(re.fullmatch(r"https://[a-z0-9.-]+\.[a-z]{2,}(/\S*)?", url) for url in urls.values()), urls
    assert not any(".example" in url for url in urls.values()), "no placeholder address"


#: The long description: short, and readable where it is shown (no relative links, no checkout-only images).
LONG_DESCRIPTION = ROOT / PYPROJECT["project"]["readme"]
MAX_DESCRIPTION_LINES = 40


def test_the_long_description_is_a_short_page_of_its_own() -> None:
    assert LONG_DESCRIPTION.name == "PACKAGE.md", "the README is the checkout's front page, not the package's"
    text = LONG_DESCRIPTION.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_DESCRIPTION_LINES
    assert not re.search(r"\]\((?!https://)", text), "a link the package index cannot follow"
    commands = set(re.findall(r"`mrtr (\w+)", text))
    assert commands == set(re.findall(r"^  mrtr (\w+)", USAGE, re.M)), "it names each `mrtr` command, and no other"
    assert set(re.findall(r"MRTR_[A-Z_]+", text)) <= {s.name for s in SETTINGS}, "a setting that does not exist"
    assert f"[{next(iter(PYPROJECT['project']['optional-dependencies']))}]" in text, "it names the extra"


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
        wheel_licence = wheel.read(f"{info}/licenses/LICENSE")
    assert {n.split("/")[0] for n in names} == PACKAGES | {info}
    assert "moves/moves.toml" in names and "moves/targets/stdio.py" in names
    assert {f"{p}/py.typed" for p in PACKAGES} <= set(names)
    assert wheel_licence == (ROOT / "LICENSE").read_bytes()
    assert info == f"mrtr_lab-{mrtr.__version__}.dist-info"
    assert re.search(r"^mrtr = mrtr_cli:entry_point$", entry_points, re.M)
    requires = sorted(line.removeprefix("Requires-Dist: ").replace(" ", "")
                      for line in metadata.splitlines() if line.startswith("Requires-Dist: "))
    project = PYPROJECT["project"]
    assert requires == sorted([*project["dependencies"], *(f'{d};extra=="{extra}"' for extra, deps in
                                                          project["optional-dependencies"].items() for d in deps)])
    headers, _, description = metadata.partition("\n\n")
    fields = [tuple(line.split(": ", 1)) for line in headers.splitlines() if ": " in line]
    assert ("License-Expression", "MIT") in fields and ("License-File", "LICENSE") in fields
    assert [v for k, v in fields if k == "Project-URL"] == [f"{k}, {v}" for k, v in project["urls"].items()]
    assert [v for k, v in fields if k == "Classifier"] == project["classifiers"]
    assert ("Description-Content-Type", "text/markdown") in fields
    assert description.strip() == LONG_DESCRIPTION.read_text(encoding="utf-8").strip()


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
    server = f"{shlex.quote(str(installed.mrtr))} serve"  # the console script, as PACKAGE.md shows it
    env = {**installed.env, "MRTR_TICKET_TTL": "2"}  # the late move waits about 3 s, not two minutes
    run = _run([installed.mrtr, "check", "--stdio", server, "--json"], cwd=installed.elsewhere, env=env,
               timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["ok"] is True and "stopped" not in report
    assert [m["move"] for m in report["moves"]] == [m.slug for m in load_moves()]
    assert {m["move"]: m["verdict"] for m in report["moves"] if m["verdict"] != "pass"} == {}
    assert [p["probe"] for p in report["probes"] if not p["ok"]] == []


@pytest.mark.external
def test_code_importing_the_installed_packages_type_checks(installed: Installed, tmp_path: Path) -> None:
    """mypy reads the installed packages' annotations only because of their py.typed (without it: "missing
    library stubs or py.typed marker"); a wrong use is an error, a right one is not."""
    program = tmp_path / "uses_mrtr.py"
    program.write_text(f"""import {", ".join(sorted(PACKAGES))}
from moves.catalog import load_moves

right: str = mrtr.__version__
wrong: int = mrtr.__version__
count: str = len(load_moves())
""", encoding="utf-8")
    run = _run([sys.executable, "-m", "mypy", "--python-executable", installed.python, "--no-incremental",
                "--strict", "--no-error-summary", program], cwd=tmp_path, env=installed.env, timeout=300)
    errors = [line for line in run.stdout.splitlines() if ": error: " in line]
    assert "py.typed" not in run.stdout, run.stdout
    assert [line.split(":")[1] for line in errors] == ["5", "6"], run.stdout + run.stderr
