"""`mrtr call` run in this process: `run` with string streams, `Terminal` on a pseudo-terminal (the command reads and
writes the pty's slave end in a thread; the test types on the master end and reads until what it expects shows,
under a deadline, never a sleep)."""

from __future__ import annotations

import io
import os
import pty
import select
import threading
import time
from collections.abc import Callable

from mrtr_cli.call import main as call_main

DEADLINE = 20.0


def run(argv: list[str], stdin: str = "", environ: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = call_main(argv, stdin=io.StringIO(stdin), stdout=out, stderr=err, environ=environ or {})
    return code, out.getvalue(), err.getvalue()


class Terminal:
    """`mrtr call` running in a thread on a pseudo-terminal; `expect` reads until text shows, `type` types a line."""

    def __init__(self, argv: list[str]) -> None:
        self.master, slave = pty.openpty()
        self._in = open(slave, encoding="utf-8", closefd=False)  # noqa: SIM115 (closed in close())
        self._out = open(os.dup(slave), "w", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._slave = slave
        self.seen = ""
        self.code: list[int] = []
        self.thread = threading.Thread(target=lambda: self.code.append(
            call_main(argv, stdin=self._in, stdout=self._out, stderr=self._out, environ={})), daemon=True)
        self.thread.start()

    def expect(self, text: str) -> str:
        end = time.monotonic() + DEADLINE
        while text not in self.seen:
            left = end - time.monotonic()
            assert left > 0, f"{text!r} never appeared; the terminal shows:\n{self.seen}"
            if select.select([self.master], [], [], left)[0]:
                self.seen += os.read(self.master, 65536).decode("utf-8", "replace").replace("\r\n", "\n")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def close(self) -> int:
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), f"mrtr call did not end; the terminal shows:\n{self.seen}"
        self.release()
        return self.code[0]

    def release(self) -> None:
        if self._out.closed:
            return
        for f in (self._in, self._out):
            f.close()
        os.close(self._slave)
        os.close(self.master)


MakeTerminal = Callable[[list[str]], Terminal]
