"""Redeemed-ticket stores: atomic first redemption, eviction at expiry, sharing across processes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mrtr import MemoryStore
from mrtr_stores.redeemed_sqlite import SqliteStore


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "redeemed.sqlite3", evict_every=1)


def test_an_id_is_redeemed_once(store):
    assert store.redeem("a", exp=100, now=10) is True
    assert store.redeem("a", exp=100, now=11) is False
    assert store.redeem("b", exp=100, now=12) is True
    assert len(store) == 2


def test_ids_are_evicted_once_their_tickets_have_expired(store):
    for i in range(50):
        store.redeem(f"id-{i}", exp=100 + i, now=0)
    assert len(store) == 50
    store.redeem("late", exp=500, now=125)
    assert len(store) == 50 - 26 + 1


def test_memory_stays_flat_under_a_stream_of_short_lived_tickets():
    store = MemoryStore()
    for t in range(10_000):
        assert store.redeem(f"jti-{t}", exp=t + 120, now=t)
    assert len(store) <= 121


CHILD = """
import sys
from mrtr_stores.redeemed_sqlite import SqliteStore
store = SqliteStore(sys.argv[1])
print("first" if store.redeem(sys.argv[2], exp=10_000, now=1) else "again")
"""


@pytest.mark.external  # two processes
def test_the_sqlite_store_is_shared_by_two_processes(tmp_path):
    """Replicas on one machine share one SQLite file: a ticket spent in one is spent in all."""
    path = str(tmp_path / "shared.sqlite3")

    def redeem_in_child(jti: str) -> str:
        run = subprocess.run([sys.executable, "-c", CHILD, path, jti], capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    assert redeem_in_child("t-1") == "first"
    assert redeem_in_child("t-1") == "again"
    assert SqliteStore(path).redeem("t-1", exp=10_000, now=2) is False
    assert SqliteStore(path).redeem("t-2", exp=10_000, now=2) is True
    assert redeem_in_child("t-2") == "again"
