"""The live class with a real Redis that is away, then back: no request waits for it (a class request gets a
clear, retryable 503; the other pages are served), the log says so once, and pushes and classes resume by
themselves once redis-server answers again on the same port."""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

import pytest

from app import create_app
from loopback.redis_server import REDIS_SERVER, free_port, ping
from mrtr import FakeClock
from mrtr_stores.redis_clients import AWAY_FOR
from web.classroom.services import classroom

KEY = "redis-faults-key-0123456789abcdefghijklmnopqr"
#: Redis's own time-out in the app (web/classroom_live.py REDIS_TIMEOUT) plus a margin for a busy machine.
NO_LONGER_THAN_S = 2.5
START_S = 10.0


def test_a_class_is_served_while_redis_is_away_and_pushes_again_when_it_is_back(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mrtr.classroom")
    port = free_port()
    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "memory",
                      "MRTR_REDIS_URL": f"redis://127.0.0.1:{port}/0", "MRTR_STORE_PATH": str(tmp_path / "r"),
                      "MRTR_CLASS_DB": str(tmp_path / "class.sqlite3"), "MRTR_CLASS_CLOCK": FakeClock(1.79e9)})
    client = app.test_client()
    # The pages' own first-request work (templates compiled, the error page's too) happens here, so what is timed
    # below is the class request's wait for the absent Redis, which a busy machine does not stretch.
    assert client.get("/demo").status_code == 200 and client.get("/no-such-page").status_code == 404
    started = time.monotonic()
    away_page = client.post("/class/start")  # the first classroom request of this process
    assert away_page.status_code == 503 and away_page.headers["Retry-After"]
    assert "nothing was changed" in away_page.get_data(as_text=True)
    assert client.get("/demo").status_code == 200
    assert time.monotonic() - started < NO_LONGER_THAN_S
    with app.app_context():
        bus = classroom().bus
    assert bus.up is False
    away = [r for r in caplog.records if "away" in r.getMessage()]
    assert len(away) == 1 and not away[0].exc_info

    server = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_S
        while not ping(port):
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        # The listener's next attempt comes after its back-off (0.5 s, then 1 s, ...); bounded, never assumed.
        deadline = time.monotonic() + 60
        while bus.up is not True:
            assert time.monotonic() < deadline, "the listener did not reconnect"
            time.sleep(0.1)
        assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("classroom: Redis is back")] \
            == ["classroom: Redis is back; live views are pushed again"]
        # And the class works again, by itself: at once, or after the second for which a store counts Redis as away
        # after a failure (mrtr_stores/redis_clients.py AWAY_FOR), as the 503's Retry-After says.
        deadline = time.monotonic() + AWAY_FOR + START_S
        while (status := client.post("/class/start").status_code) == 503:
            assert time.monotonic() < deadline, "the class store stayed away after Redis came back"
            time.sleep(0.1)
        assert status == 201
    finally:
        server.kill()
        server.wait(timeout=10)
