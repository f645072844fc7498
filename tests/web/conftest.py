"""Fixtures for the web tests: an app on an injected clock, and its Flask test client.

`app` is the real `create_app()` with an in-memory store and a fixed signing key, so every test
gets fresh state; `clock` is the `FakeClock` the core reads (move it to expire tickets).
`production_server` names the HTTP server that tests of a real served app start it under (with
`bench.servers.production_app`): the production one by default; `MRTR_TEST_SERVERS=granian,gunicorn`
runs each such test under both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from bench.servers import PRODUCTION_SERVER, SERVERS
from mrtr import FakeClock

TEST_KEY = "test-key-0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_790_000_000.0)


@pytest.fixture
def app(clock: FakeClock) -> Iterator[Flask]:
    yield create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory", "MRTR_CLOCK": clock})


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def _test_servers() -> list[str]:
    names = [n.strip() for n in os.environ.get("MRTR_TEST_SERVERS", PRODUCTION_SERVER).split(",") if n.strip()]
    unknown = set(names) - set(SERVERS)
    if unknown or not names:
        raise pytest.UsageError(f"MRTR_TEST_SERVERS: choose from {', '.join(SERVERS)}, not {sorted(unknown)}")
    return names


@pytest.fixture(scope="session", params=_test_servers())
def production_server(request: pytest.FixtureRequest) -> str:
    return str(request.param)
