"""The client tests' shared fixture: `terminal(argv)`, a `mrtr call` on a pseudo-terminal, released at teardown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .terminal import MakeTerminal, Terminal


@pytest.fixture
def terminal() -> Iterator[MakeTerminal]:
    """`terminal(argv)`: a Terminal whose pty is released at teardown even when the test failed midway."""
    made: list[Terminal] = []

    def make(argv: list[str]) -> Terminal:
        made.append(Terminal(argv))
        return made[-1]

    yield make
    for term in made:
        if not term.thread.is_alive():
            term.release()


