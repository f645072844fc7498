"""Moves played several at a time give the very report moves played one after another give, on every server of the
mutation suite, over HTTP and stdio: the same rows in the same order, each with the same verdict and observed
outcome, the same probes. And the checker really plays them together: a server that holds the first calls until four
are in flight is checked at all only if four moves were sent at once (structure, not wall time)."""

from __future__ import annotations

import re
import threading
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from moves.check import CheckOptions, Report, run_check
from moves.targets.http import HttpTarget
from tests.mutants.harness import DEFAULTS, TOKENS, check_http, check_stdio, timing_on
from tests.mutants.server import MUTANTS, SOUND, Clock, Slow, Sound, serve_http

SERIAL = replace(DEFAULTS, concurrency=1)
#: The controls and the mutants (the other variants are the CLI's: servers that hang or list nothing).
SERVERS = sorted({**SOUND, **MUTANTS})
#: A guard against a hang, never a measure: a checker that sends four calls at once passes at once.
GUARD = 20.0


def verdicts(report: Report) -> dict[str, Any]:
    """What must not depend on how the moves interleaved (details with numbers masked: deploy counters differ)."""
    def masked(text: str) -> str:
        return re.sub(r"[0-9a-f]{8,}|\d+(\.\d+)?", "#", text)

    return {"moves": [(r.move, r.verdict, r.observed, r.expected, masked(r.detail)) for r in report.moves],
            "probes": [(p.probe, p.ok) for p in report.probes], "ok": report.ok}


#: The slow control's delay here: slower than every other server's answer by far, as the control needs, but the
#: serial run sends some 90 calls one after another, and at its own tenth of a second that alone took 9 s.
SLOW_HERE = 0.02


@pytest.mark.parametrize("name", SERVERS)
def test_concurrent_moves_report_what_serial_moves_report_over_http(name: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Slow, "delay", SLOW_HERE)
    assert verdicts(check_http(name)) == verdicts(check_http(name, SERIAL))


@pytest.mark.external  # a stdio process per principal
@pytest.mark.parametrize("name", SERVERS)
def test_concurrent_moves_report_what_serial_moves_report_over_stdio(name: str, tmp_path: Path) -> None:
    assert verdicts(check_stdio(name, tmp_path)) == verdicts(check_stdio(name, tmp_path, SERIAL))


class HoldsUntilFour(Sound):
    """Sound, but four of the moves' first calls wait until four are in flight together."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.together = threading.Barrier(4, timeout=GUARD)
        self.held = 0
        self.broken = False

    def deploy(self, message: dict[str, Any], principal: str, arguments: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            # Calls that mint deploy's ticket (restart's round one, the search for a second asking tool, is not
            # one): the tool's choice (1), the exploration's round-one ticket for its expiry variation, minted
            # before the moves so that its expiry passes during their wait (2), and the honest move (3) go before
            # the others; then four of the other moves and the missing-answer probe mint together.
            mint = "requestState" not in message["params"] and message["params"].get("name") == "deploy"
            self.held += mint
            hold = mint and 4 <= self.held <= 7
        if hold:
            try:
                self.together.wait()
            except threading.BrokenBarrierError:
                self.broken = True
        return super().deploy(message, principal, arguments)


def test_four_moves_are_in_flight_at_once() -> None:
    server = HoldsUntilFour(Clock())
    httpd = serve_http(server)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
        with closing(HttpTarget(url, TOKENS, timeout=GUARD + 5, timing=timing_on(server.clock))) as target:
            report = run_check(target, CheckOptions(skip_late=True))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert not server.broken and report.ok, report.table()
