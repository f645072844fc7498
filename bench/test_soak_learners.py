"""The soak's learners, briefly (`python -m bench.soak` runs 200 for 60 s): learners on threads play a fixed number
of moves and flows each against the production server (MRTR_TEST_SERVERS picks it), with zero errors. Nothing is
timed."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.soak import Tally, learner
from loopback.launchers import PRODUCTION_SERVER, Served, production_app

pytestmark = pytest.mark.external  # the app under granian (or gunicorn)


@pytest.fixture(scope="module", params=os.environ.get("MRTR_TEST_SERVERS", PRODUCTION_SERVER).split(","))
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    with tempfile.TemporaryDirectory(prefix="mrtr-load-") as tmp:
        env = {"MRTR_STORE": "sqlite", "MRTR_STORE_PATH": str(Path(tmp) / "redeemed.sqlite3")}
        with production_app(request.param.strip(), workers=2, threads=4, env=env) as server:
            yield server


def test_concurrent_learners_over_http_get_no_errors(served: Served) -> None:
    learners, actions = 12, 15
    tally = Tally()
    threads = [threading.Thread(target=learner, args=(served.port, i, tally), kwargs={"actions": actions},
                                daemon=True) for i in range(learners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not tally.errors, f"{len(tally.errors)} errors, first: {tally.errors[:5]}"
    assert tally.flows == tally.moves == learners * actions
