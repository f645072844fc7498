"""Fixtures that start the checker's peers (see launch.py): each yields a running peer and stops it after.

Use them from any test folder with, in that folder's conftest.py:
    from tests.peers.fixtures import *  # noqa: F403

HTTP peers (`HttpPeer`: `.url`, `.tokens` {"bob": "bob-token", "alice": "alice-token"}, `.clock`, `.ttl`):
    sdk_py_http          official Python SDK, Streamable HTTP (stateless)        session-scoped
    sdk_py_resolve_http  the same SDK, its Resolve dependency form               session-scoped
    sdk_ts_http          official TypeScript SDK, the SDK example's shape         session-scoped
    sdk_ts_lesson_http   official TypeScript SDK serving the lesson's snippet    session-scoped
    mutant_http_with     factory: `with mutant_http_with("no-expiry") as peer:` a server of the mutation suite
                         (tests/mutants/server.py: "sound", or a mutant with one flaw) as a process
stdio peers (`StdioPeer`: `.command`, `.env(principal)` sets MRTR_PRINCIPAL, `.clock`, `.ttl`):
    sdk_py_stdio, sdk_py_stdio_defaults (the SDK's default sealing: a key per process),
    mutant_stdio (the mutant without a principal check: over stdio the principal is each process's)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.peers import launch

__all__ = ["peers_dir", "sdk_py_http", "sdk_py_resolve_http", "sdk_py_stdio", "sdk_py_stdio_defaults",
           "sdk_ts_http", "sdk_ts_lesson_http", "mutant_stdio", "mutant_http_with"]


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
def mutant_stdio(peers_dir: Path) -> launch.StdioPeer:
    return launch.mutant_stdio(peers_dir, "no-principal")


@pytest.fixture
def mutant_http_with(tmp_path: Path) -> Callable[[str], AbstractContextManager[launch.HttpPeer]]:
    """`with mutant_http_with("no-expiry") as peer:` server NAME of tests/mutants/server.py over HTTP."""

    def start(mutant: str) -> AbstractContextManager[launch.HttpPeer]:
        return launch.mutant_http(tmp_path, mutant)

    return start
