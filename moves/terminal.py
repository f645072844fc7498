"""A running check on the terminal it was started from (stderr): how long it will take, each row as its move or probe
ends, and a countdown while the late moves wait for their tickets to expire. On a terminal the countdown redraws one
line; elsewhere (CI logs) only the plan and one line for the wait are written, since the report follows anyway.
Nothing here runs a move; tokens given to the check are redacted from every line.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import IO

from moves.probes import ProbeResult
from moves.report import Events, MoveRow, redacted


class ProgressBar:
    """The late move's wait as a bar on a terminal; one line per phase otherwise."""

    def __init__(self, stream: IO[str], width: int = 30, tty: bool | None = None) -> None:
        self.stream = stream
        self.width = width
        self.tty = stream.isatty() if tty is None else tty
        self._announced = False

    def __call__(self, waited: float, total: float) -> None:
        done = total <= 0 or waited >= total
        if not self.tty:
            if not self._announced:
                self.stream.write(f"late move: waiting {total:.1f} s for the ticket to expire\n")
                self.stream.flush()
                self._announced = True
            if done:
                self._announced = False
            return
        filled = self.width if done else int(self.width * waited / total)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\rlate move: waiting for the ticket to expire [{bar}] {waited:5.1f} / {total:.1f} s")
        if done:
            self.stream.write("\n")
        self.stream.flush()


class Terminal:
    """`Events` that write to `stream`: rows as they end and the late moves' countdown on a terminal, the plan and
    the wait's announcement elsewhere. Calls may come from several moves' threads: one line at a time."""

    def __init__(self, stream: IO[str], *, tty: bool | None = None, secrets: Sequence[str] = ()) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.secrets = [s for s in secrets if s]
        self.lock = threading.Lock()
        self.bar = ProgressBar(stream, tty=False)
        self.waiting = ""  # the countdown line now drawn on the terminal ("" when none)

    def events(self) -> Events:
        return Events(phase=self.phase, move_done=self.move_done, probe_done=self.probe_done, wait=self.wait,
                      planned=self.planned)

    def _line(self, text: str) -> None:
        """A line above the countdown, which is drawn again under it."""
        with self.lock:
            clear = "\r\x1b[2K" if self.waiting else ""
            self.stream.write(f"{clear}{redacted(text, self.secrets)}\n{self.waiting}")
            self.stream.flush()

    def phase(self, text: str) -> None:
        if self.tty:
            self._line(f"… {text}")

    def planned(self, text: str) -> None:
        self._line(f"This check takes {text}")

    def move_done(self, row: MoveRow, index: int, total: int) -> None:
        if self.tty:
            self._line(f"  {row.verdict.upper():8}{row.move}  ({index} of {total})")

    def probe_done(self, probe: ProbeResult) -> None:
        if self.tty:
            self._line(f"  {'PASS' if probe.ok else 'FAIL':8}probe {probe.probe}")

    def wait(self, waited: float, total: float) -> None:
        if not self.tty:
            self.bar(waited, total)
            return
        left = max(total - waited, 0.0)
        with self.lock:
            if left <= 0:
                self.stream.write("\r\x1b[2K" if self.waiting else "")
                self.waiting = ""
            else:
                width = 20
                filled = int(width * waited / total) if total > 0 else width
                self.waiting = (f"late moves: {int(left) // 60}:{int(left) % 60:02d} left until their tickets expire "
                                f"[{'#' * filled}{'-' * (width - filled)}]")
                self.stream.write(f"\r\x1b[2K{self.waiting}")
            self.stream.flush()
