"""The tests that read the tree read what git tracks: a stray file where `pip install .` leaves its copy of the
packages (build/lib/, ignored by git) breaks no rule, however bad it is, and the index reader behind them lists
what `git ls-files` lists."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import test_layers, test_structure
from tests.tracked import ROOT, index_paths, tracked

pytestmark = pytest.mark.external  # git, to make and read the index the reader is compared with

BAD = "from moves.engine import _helper\nimport os,sys\n" + "x = 1\n" * 700


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=root,
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout with one good tracked module and, beside it, what `pip install .` and an editor leave."""
    git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("/build/\n")
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "ok.py").write_text('"""Fine."""\n\nVALUE = 1\n')
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "start")
    stray = tmp_path / "build" / "lib" / "web" / "stray.py"
    stray.parent.mkdir(parents=True)
    stray.write_text(BAD)
    return tmp_path


def test_a_stray_build_copy_breaks_no_tree_rule(checkout: Path) -> None:
    assert [p.relative_to(checkout).as_posix() for p in tracked(checkout)] == [".gitignore", "web/ok.py"]
    assert test_layers.private_imports_in(checkout) == []
    assert test_layers.any_count("web", root=checkout) == (0, 3)
    assert test_structure._product_files(checkout) == [checkout / "web" / "ok.py"]
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E401",
                           "."], cwd=checkout, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout


def test_the_same_file_tracked_breaks_them(checkout: Path) -> None:
    """The control: the stray file's content, once tracked, is found by every check above."""
    (checkout / "web" / "bad.py").write_text(BAD)
    git(checkout, "add", "web/bad.py")
    tracked.cache_clear()
    assert test_layers.private_imports_in(checkout) == [("web/bad.py", "moves.engine._helper")]
    assert checkout / "web" / "bad.py" in test_structure._product_files(checkout)
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E401",
                           "."], cwd=checkout, capture_output=True, text=True)
    assert lint.returncode == 1 and "web/bad.py" in lint.stdout and "build" not in lint.stdout


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_the_index_reader_lists_what_git_lists(checkout: Path, version: str) -> None:
    """Every index version git writes (4 compresses paths; 3 carries extended flags, here intent-to-add)."""
    (checkout / "lessons" / "a b").mkdir(parents=True)
    for name in ("lessons/a b/é.md", "lessons/a b/long-" + "x" * 90 + ".md", "web/ok2.py"):
        (checkout / name).write_text("x\n")
    git(checkout, "add", "lessons", "web/ok2.py")
    if version == "3":
        (checkout / "later.py").write_text("x = 1\n")
        git(checkout, "add", "--intent-to-add", "later.py")
    git(checkout, "update-index", "--index-version", version)
    listed = git(checkout, "ls-files", "-z").split("\0")[:-1]
    assert index_paths((checkout / ".git" / "index").read_bytes()) == listed
    assert len(listed) >= 5


def test_the_reader_lists_this_checkout_as_git_does() -> None:
    listed = git(ROOT, "ls-files", "-z").split("\0")[:-1]
    assert sorted(p.relative_to(ROOT).as_posix() for p in tracked(ROOT)) == sorted(n for n in listed
                                                                                   if (ROOT / n).is_file())
