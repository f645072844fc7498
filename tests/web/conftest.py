"""Fixtures for the web tests. `app`, `client`, `clock` and `make_app` come from tests/conftest.py.

`production_server` names the HTTP server that tests of a real served app start it under (with
`loopback.launchers.production_app`): the production one by default; `MRTR_TEST_SERVERS=granian,gunicorn`
runs each such test under both. Any test using it is external (it starts that server).
"""

from __future__ import annotations

import os

import pytest

from loopback.launchers import PRODUCTION_SERVER, SERVERS
from tests.conftest import TEST_KEY

__all__ = ["TEST_KEY"]


def _test_servers() -> list[str]:
    names = [n.strip() for n in os.environ.get("MRTR_TEST_SERVERS", PRODUCTION_SERVER).split(",") if n.strip()]
    unknown = set(names) - set(SERVERS)
    if unknown or not names:
        raise pytest.UsageError(f"MRTR_TEST_SERVERS: choose from {', '.join(SERVERS)}, not {sorted(unknown)}")
    return names


@pytest.fixture(scope="session", params=_test_servers())
def production_server(request: pytest.FixtureRequest) -> str:
    return str(request.param)
