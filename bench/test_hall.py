"""The lecture hall's bounded twin: a small room on each server, counts asserted, no timing (bench/hall.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import hall

pytestmark = pytest.mark.external  # the app under granian and under Flask's development server

LEARNERS = 12


def test_the_run_server_is_the_command_run_sh_ends_with() -> None:
    argv = hall.run_sh_argv(5123)
    assert argv[0].endswith("/flask") and argv[1:] == ["--app", "app", "run", "--host", "127.0.0.1", "--port", "5123"]


@pytest.mark.parametrize("kind", ["production", "run"])
def test_a_small_hall_answers_polls_and_sees_the_reveal(kind: str, tmp_path: Path) -> None:
    class_db = tmp_path / "classroom.sqlite3"
    with hall.served(kind, class_db) as served:
        result = hall.hall_run(served, class_db, name=kind, learners=LEARNERS, spread=1.0, procs=2)
    assert result.errors == []
    assert len(result.answers_ms) == LEARNERS and result.tally == LEARNERS
    assert len(result.reveal_s) == LEARNERS  # every phone's poll brought the revealed answer
    assert result.polls >= LEARNERS and result.rss_peak_kib > 0
