"""The load test's bounded twin: learners join and answer against the production server (gunicorn).

Same code as `python -m bench.class_load` (which measures 200 learners and records p99), with a
small room and no timing asserted: every join and answer must succeed and the presenter's screen
must count every answer, with two workers sharing one SQLite file.
"""

from __future__ import annotations

import pytest

from bench.class_load import run
from loopback.launchers import gunicorn_app

pytestmark = pytest.mark.external  # the app under gunicorn

LEARNERS = 24


def test_a_room_joins_and_answers_with_zero_errors() -> None:
    with gunicorn_app(workers=2, threads=4) as served:
        result = run(served.port, learners=LEARNERS, workers=2)
    assert result.first_errors == [] and result.errors == 0
    assert result.joined == LEARNERS and result.answered == LEARNERS
    assert result.tally == LEARNERS
    assert len(result.answer_ms) == LEARNERS
