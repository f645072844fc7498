"""Fixtures for the web tests: an app on an injected clock, and its Flask test client.

`app` is the real `create_app()` with an in-memory store and a fixed signing key, so every test
gets fresh state; `clock` is the `FakeClock` the core reads (move it to expire tickets).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
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
