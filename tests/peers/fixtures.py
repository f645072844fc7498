"""Fixtures that start the checker's peers (see launch.py): each yields a running peer and stops it after.

Use them from any test folder with, in that folder's conftest.py:
    from tests.peers.fixtures import *  # noqa: F403

HTTP peers (`HttpPeer`: `.url`, `.tokens` {"bob": "bob-token", "alice": "alice-token"}, `.clock`, `.ttl`):
    sdk_py_http          official Python SDK, Streamable HTTP (stateless)        session-scoped
    sdk_py_resolve_http  the same SDK, its Resolve dependency form               session-scoped
    sdk_ts_http          official TypeScript SDK, the SDK example's shape         session-scoped
    sdk_ts_lesson_http   official TypeScript SDK serving the lesson's snippet    session-scoped
    weak_http            weak server skipping the principal and single-use checks session-scoped
    weak_http_with       factory: `with weak_http_with(skip=(...,), flags=(...,)) as peer:` any weakness
stdio peers (`StdioPeer`: `.command`, `.env(principal)` sets MRTR_PRINCIPAL, `.clock`, `.ttl`):
    sdk_py_stdio, sdk_py_stdio_defaults (the SDK's default sealing: a key per process), weak_stdio
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.peers import launch

__all__ = ["peers_dir", "sdk_py_http", "sdk_py_resolve_http", "sdk_py_stdio", "sdk_py_stdio_defaults",
           "sdk_ts_http", "sdk_ts_lesson_http", "weak_http", "weak_stdio", "weak_http_with"]


@pytest.fixture(scope="session")
def peers_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("peers")


@pytest.fixture(scope="session")
def sdk_py_http(peers_dir: Path) -> Iterator[launch.HttpPeer]:
    with launch.sdk_python_http(peers_dir) as peer:
        yield peer


@pytest.fixture(scope="session")
def sdk_py_resolve_http(peers_dir: Path) -> Iterator[launch.HttpPeer]:
    with launch.sdk_python_http(peers_dir, form="resolve") as peer:
        yield peer


@pytest.fixture(scope="session")
def sdk_py_stdio(peers_dir: Path) -> launch.StdioPeer:
    return launch.sdk_python_stdio(peers_dir)


@pytest.fixture(scope="session")
def sdk_py_stdio_defaults(peers_dir: Path) -> launch.StdioPeer:
    return launch.sdk_python_stdio(peers_dir, sdk_defaults=True)


@pytest.fixture(scope="session")
def sdk_ts_http(peers_dir: Path) -> Iterator[launch.HttpPeer]:
    with launch.sdk_typescript_http(peers_dir, "docs") as peer:
        yield peer


@pytest.fixture(scope="session")
def sdk_ts_lesson_http(peers_dir: Path) -> Iterator[launch.HttpPeer]:
    with launch.sdk_typescript_http(peers_dir, "lesson") as peer:
        yield peer


@pytest.fixture(scope="session")
def weak_http(peers_dir: Path) -> Iterator[launch.HttpPeer]:
    with launch.weak_http(peers_dir) as peer:
        yield peer


@pytest.fixture(scope="session")
def weak_stdio(peers_dir: Path) -> launch.StdioPeer:
    return launch.weak_stdio(peers_dir)


@pytest.fixture
def weak_http_with(tmp_path: Path) -> Any:
    """`with weak_http_with(skip=("expiry",)) as peer:` a weak HTTP peer with exactly those weaknesses.

    `skip`: ticket checks to leave out; `flags`: protocol weaknesses from `launch.WEAK_FLAGS`.
    """

    def start(skip: tuple[str, ...] = (), flags: tuple[str, ...] = (), **kwargs: Any
              ) -> AbstractContextManager[launch.HttpPeer]:
        name = "weak-" + ("-".join((*skip, *flags)) or "none")
        return launch.weak_http(tmp_path, skip=skip, flags=flags, name=name, **kwargs)

    return start
