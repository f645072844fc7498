"""Test tiers: every test that needs a process or peer outside this Python gets the `external` marker.

`pytest -m "not browser and not external"` is the quick edit loop; plain `pytest` runs everything.
A test is external when its module is one of EXTERNAL_MODULES (peers, the conformance suite, the
SDK clients, real multi-process servers, Redis, the load runs), when it uses a fixture that starts
one (EXTERNAL_FIXTURES), or when its own code starts gunicorn, granian, Redis or Node.
"""

from __future__ import annotations

import inspect

import pytest

EXTERNAL_MODULES = (
    "tests/peers/",
    "tests/deploy/",
    "tests/check/test_peers_report.py",
    "tests/web/test_conformance.py",
    "tests/web/test_mcp_sdk_clients.py",
    "tests/web/test_replicas_processes.py",
    "tests/web/test_classroom_redis.py",
    "tests/web/test_load.py",
    "tests/web/test_classroom_load.py",
    "tests/mrtr/test_redis_store.py",
)
#: Fixtures that start a server process (gunicorn) or a peer.
EXTERNAL_FIXTURES = frozenset({"served", "body_server", "redis_url"})
#: Words in a test's own code that mean it starts an outside process.
EXTERNAL_WORDS = ("gunicorn", "granian", "RedisServer", "npx", "node_modules")


def _is_external(item: pytest.Item) -> bool:
    path = item.path.as_posix()
    if any(f"/{module}" in path or path.endswith(module) for module in EXTERNAL_MODULES):
        return True
    if EXTERNAL_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    function = getattr(item, "function", None)
    try:
        source = inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        source = ""
    return any(word in source for word in EXTERNAL_WORDS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _is_external(item):
            item.add_marker(pytest.mark.external)
