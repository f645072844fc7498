"""A stdio server's death is reported with everything it wrote, however late the checker's threads run.

A busy machine can run the checker before the thread that reads a process's stderr, or before the process has
finished exiting after it closed a pipe. Each test here holds the slow party back on purpose, through a seam, until
the checker waits for it, so the report is wrong every time the checker does not wait (no sleeps, no luck).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from moves.targets.stdio import ServerProcess, StdioTarget

HERE = Path(__file__).resolve().parent
EXIT_3 = "the process exited with code 3; its stderr ended: fake: cannot open the database"
# Closes stdout at once, reads the request, then waits for one more line before it explains itself and exits.
CLOSES_STDOUT_FIRST = ("import os, sys\nos.close(1)\nsys.stdin.readline()\nsys.stdin.readline()\n"
                       "sys.stderr.write('fake: lost the database\\n')\nsys.exit(4)\n")
EXIT_4 = "the process exited with code 4; its stderr ended: fake: lost the database"


def request(rid: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": {}}


@pytest.mark.external  # a stdio server process (tests/check/fake_stdio.py)
def test_an_exit_waits_for_the_stderr_the_reader_has_not_read_yet() -> None:
    waited = threading.Event()

    def held_read(fd: int, size: int) -> bytes:  # the reader reads nothing until someone waits for it
        waited.wait(timeout=10)
        return os.read(fd, size)

    process = ServerProcess([sys.executable, str(HERE / "fake_stdio.py"), "exit"], dict(os.environ), read=held_read)

    class Watched(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waited.set()
            return super().wait(timeout)

    process.stderr_ended = Watched()  # the reader is held back: it has not reached (or set) the original yet
    try:
        assert process.proc.wait(timeout=10) == 3
        assert process.exited() == EXIT_3
        assert process.exited() == EXIT_3  # asked again: the same words, without waiting again
    finally:
        waited.set()
        process.stop()


def _exit_held_until_awaited(target: StdioTarget) -> None:
    """The owner's process exits only once the checker waits for it (its second stdin line is written then)."""
    process = target._process("owner")
    assert isinstance(process, ServerProcess)
    stdin, real_wait = process.proc.stdin, process.proc.wait
    assert stdin is not None

    def wait(timeout: float | None = None) -> int:
        if not stdin.closed:
            try:
                stdin.write(b"go\n")
                stdin.flush()
            except (BrokenPipeError, ValueError):
                pass
        return real_wait(timeout)

    process.proc.wait = wait  # type: ignore[method-assign]


@pytest.mark.external  # a stdio server process
def test_a_closed_stdout_is_reported_with_the_exit_that_follows_it() -> None:
    with StdioTarget([sys.executable, "-c", CLOSES_STDOUT_FIRST], timeout=30) as target:
        _exit_held_until_awaited(target)
        reply = target.send("owner", request(1))
    assert reply.response is None and reply.transport_error == EXIT_4


@pytest.mark.external  # a stdio server process, read by the concurrent path's reader thread
def test_a_closed_stdout_is_reported_with_its_exit_when_moves_share_the_process() -> None:
    with StdioTarget([sys.executable, "-c", CLOSES_STDOUT_FIRST], timeout=30) as target:
        _exit_held_until_awaited(target)
        replies = target.multiplexed("owner", 1, [request(1), request(2)])
    assert [r.transport_error for r in replies] == [EXIT_4, EXIT_4]


@pytest.mark.external  # a stdio server process
def test_a_closed_stdout_is_reported_with_its_exit_after_a_burst() -> None:
    with StdioTarget([sys.executable, "-c", CLOSES_STDOUT_FIRST], timeout=30) as target:
        _exit_held_until_awaited(target)
        replies = target.send_burst("owner", [request(1), request(2)])
    assert [r.transport_error for r in replies] == [EXIT_4, EXIT_4]
