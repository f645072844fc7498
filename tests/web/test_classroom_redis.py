"""Two production processes (gunicorn) serving one class, sharing a real redis-server and one SQLite file.

The presenter's live screen is connected to one process; learners answer on the other. The
stream's own re-read of the store is set to 60 s, so a tally that arrives within the test's
bound can only have been woken by Redis pub/sub. Both processes then render the same tally.
"""

from __future__ import annotations

import http.client
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopback.class_driver import cookie_of, form_request, host_tally, start_class
from loopback.launchers import Served, gunicorn_app
from loopback.redis_server import RedisServer

READ_TIMEOUT_S = 20  # far below the 60 s fallback poll


@pytest.fixture
def two_processes() -> Iterator[tuple[Served, Served]]:
    with RedisServer() as redis, tempfile.TemporaryDirectory(prefix="mrtr-class-redis-") as tmp:
        env = {"MRTR_REDIS_URL": redis.url, "MRTR_CLASS_DB": str(Path(tmp) / "classroom.sqlite3"),
               "MRTR_CLASS_POLL_SECONDS": "60", "MRTR_CLASS_STREAM_SECONDS": "120"}
        with gunicorn_app(workers=1, threads=4, env=env) as a, gunicorn_app(workers=1, threads=4, env=env) as b:
            yield a, b


class Stream:
    """The presenter's SSE stream on one process, read event by event."""

    def __init__(self, served: Served, code: str, cookie: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=READ_TIMEOUT_S)
        self.conn.request("GET", f"/class/{code}/host/events", headers={"Cookie": cookie})
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        assert self.response.getheader("Content-Type", "").startswith("text/event-stream")

    def next_tally(self) -> int:
        event, data = "", []
        while True:
            line = self.response.readline().decode()
            assert line, "the stream ended"
            line = line.rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif not line:
                if event == "tally":  # how many answered (the split waits for the reveal)
                    found = re.search(r'data-answered="(\d+)"', "\n".join(data))
                    assert found, data
                    return int(found.group(1))
                event, data = "", []

    def wait_for(self, expected: int) -> None:
        """Read tally events until one matches (a join sends one too); each read is bounded."""
        seen = [self.next_tally()]
        while seen[-1] != expected and len(seen) < 6:
            seen.append(self.next_tally())
        assert seen[-1] == expected, seen

    def close(self) -> None:
        self.conn.close()


def answer_on(served: Served, code: str, nickname: str, option: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        response, _ = form_request(conn, "POST", "/join", {"code": code, "nickname": nickname})
        assert response.status == 303
        cookie = cookie_of(response, "mrtr_learner")
        response, body = form_request(conn, "POST", f"/class/{code}/answer", {"option": option},
                                  {"Cookie": cookie, "Accept": "application/json"})
        assert response.status == 200, body
    finally:
        conn.close()


def test_two_processes_show_the_same_live_tally(two_processes: tuple[Served, Served]) -> None:
    a, b = two_processes
    code, cookie = start_class(a.port)
    on_b = Stream(b, code, cookie)
    on_a = Stream(a, code, cookie)
    try:
        assert on_b.next_tally() == 0 and on_a.next_tally() == 0
        answer_on(a, code, "Ada", "c")  # answered on A, seen live on B
        on_b.wait_for(1)
        on_a.wait_for(1)
        answer_on(b, code, "Bo", "a")  # and the other way round
        on_a.wait_for(2)
        on_b.wait_for(2)
    finally:
        on_a.close()
        on_b.close()
    assert host_tally(a.port, code, cookie) == host_tally(b.port, code, cookie) == 2
