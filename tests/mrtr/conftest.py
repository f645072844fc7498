"""Fixtures for the core's tests. Nothing here (or below) imports Flask."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mrtr import FakeClock, KeyRing, MemoryStore, Policy, Server
from mrtr_toolsets.lesson import lesson_catalog

ROOT = Path(__file__).resolve().parents[2]
KEY = "core-test-key-0123456789abcdef0123456789abcdef"


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing([KEY])


@pytest.fixture
def make_server(ring: KeyRing, clock: FakeClock):
    def make(**policy: Any) -> Server:
        return Server(ring=ring, store=MemoryStore(), clock=clock, catalog=lesson_catalog(),
                      policy=Policy(**policy))

    return make


@pytest.fixture
def server(make_server) -> Server:
    return make_server()
