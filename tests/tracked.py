"""The files git tracks in a checkout, read from git's index in this Python (no `git` process, so the fast tier
may use it): what the tests that read the tree read, never the file system, where `pip install .` leaves
`build/lib/`, an editor leaves backups and a run leaves what it made.

The same list as `git ls-files`, less the files deleted in the work tree (tests/test_tracked_tree.py compares the
two). A new module is seen once it is added (`git add`), as it will be on a clean clone.
"""

from __future__ import annotations

import struct
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: ctime, mtime (seconds and nanoseconds each), dev, ino, mode, uid, gid, size: the fixed start of an entry.
_STAT = struct.Struct(">10I")
_EXTENDED = 0x4000
_SPARSE_DIRECTORY = 0o040000


class NotACheckout(RuntimeError):
    """The tree is not a git checkout, or its index is in a form this reader does not know."""


def git_dir(root: Path) -> Path:
    """The repository directory of the checkout at `root` (`.git`, or where a worktree's `.git` file points)."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        line = dot.read_text(encoding="utf-8").strip()
        if line.startswith("gitdir:"):
            target = Path(line.removeprefix("gitdir:").strip())
            return target if target.is_absolute() else (root / target).resolve()
    raise NotACheckout(f"{root} is not a git checkout: the tests read the files git tracks there")


def _hash_size(repository: Path) -> int:
    """20 bytes (SHA-1) unless the repository (or the one a worktree belongs to) says sha256."""
    for folder in (repository, repository.parent.parent):
        config = folder / "config"
        if config.is_file():
            text = config.read_text(encoding="utf-8", errors="replace").lower().replace(" ", "")
            return 32 if "objectformat=sha256" in text else 20
    return 20


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset encoding (index version 4): the value and where the next field starts."""
    byte = data[at]
    value, at = byte & 0x7F, at + 1
    while byte & 0x80:
        byte = data[at]
        value, at = ((value + 1) << 7) | (byte & 0x7F), at + 1
    return value, at


def index_paths(index: bytes, hash_size: int = 20) -> list[str]:
    """Every path the index holds (each once, whatever its merge stage), in the index's order."""
    if index[:4] != b"DIRC":
        raise NotACheckout("git's index does not start with DIRC")
    version, count = struct.unpack_from(">II", index, 4)
    if version not in (2, 3, 4):
        raise NotACheckout(f"git's index version {version} is not one this reader knows")
    at, previous, paths = 12, b"", []
    for _ in range(count):
        start = at
        mode = _STAT.unpack_from(index, at)[6]
        at += _STAT.size + hash_size
        (flags,) = struct.unpack_from(">H", index, at)
        at += 2 + (2 if version >= 3 and flags & _EXTENDED else 0)
        if version == 4:
            strip, at = _varint(index, at)
            end = index.index(b"\0", at)
            name = previous[:len(previous) - strip] + index[at:end]
            at = end + 1
        else:
            end = index.index(b"\0", at)
            name = index[at:end]
            at = start + ((end - start) // 8 + 1) * 8  # 1 to 8 NULs pad each entry to a multiple of 8 bytes
        previous = name
        if mode != _SPARSE_DIRECTORY and (not paths or paths[-1] != name.decode("utf-8", "surrogateescape")):
            paths.append(name.decode("utf-8", "surrogateescape"))
    return paths


@cache
def tracked(root: Path = ROOT) -> tuple[Path, ...]:
    """The files git tracks under `root` that exist in the work tree, sorted."""
    repository = git_dir(root)
    index = repository / "index"
    if not index.is_file():
        return ()
    paths = index_paths(index.read_bytes(), _hash_size(repository))
    return tuple(sorted(p for p in (root / name for name in paths) if p.is_file()))


def tracked_under(*folders: str, suffix: str = ".py", root: Path = ROOT) -> list[Path]:
    """The tracked files ending in `suffix` in any of `folders` (relative to `root`; "" for the whole tree)."""
    prefixes = tuple(f"{folder.strip('/')}/" if folder.strip("/") else "" for folder in folders) or ("",)
    return [p for p in tracked(root)
            if p.name.endswith(suffix) and p.relative_to(root).as_posix().startswith(prefixes)]
