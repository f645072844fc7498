"""A learner's client from "Build the client's loop", run in-process against the client checker's flows: the
lesson's page runs it on Pyodide (web/build/in_browser.py) and the tests run it in CPython, by the same code.

The client's source defines `run(send, sleep)` (lessons/build-the-client/solution/client.py). Here `send` hands
each request, as JSON text, to one `mrtr_grading.Recording` and gives back a fresh copy of its answer, and `sleep`
moves the run's own clock, which the recording stamps each request with: pacing is graded and nothing waits.
Then the rules grade the recording, with the row that says whether the honest flows still complete
(`mrtr_grading.honest`, read by web/build/routes.py).

It imports no Flask (it ships to the browser), never touches the network, and caps what one run may send.
"""

from __future__ import annotations

import contextlib
import io
import json
import traceback
from collections.abc import Callable

from mrtr import JSON, JSONObject, as_object
from mrtr.clock import FakeClock
from mrtr_grading import HONEST_ROW, Recording, grade, honest_row

#: Requests one in-page run records: ten times what a sound client sends (about 40), and far above what any rule
#: reads (the grader stops answering the endless tool after ENDLESS_CAP calls), yet small enough that a client
#: that never stops retrying is graded in a moment on a phone. Past it, requests get the grader's error.
RUN_CAP = 400
#: Requests one run may send after that before the run is stopped (a client looping on errors).
OVERRUN = 50
LOG_LINES = 200


#: The longest one `sleep` of the learner's moves the run's clock (an hour: far past any rule's reading).
LONGEST_SLEEP = 3600.0


class RunawayClient(Exception):
    """The client kept sending after the grading server had stopped answering."""


def where(exc: BaseException) -> str:
    """`exc` as one line, with its line in client.py when it has one."""
    line = next((f.lineno for f in reversed(traceback.extract_tb(exc.__traceback__)) if f.filename == "client.py"),
                getattr(exc, "lineno", None))
    at = f" at line {line}" if line else ""
    return f"{type(exc).__name__}{at}: {exc}"[:400]


def run_source(source: str, post: Callable[[str, object], None] = lambda kind, data: None) -> JSONObject:
    """Run the client in `source` against the grading flows; `post(kind, data)` gets each rule's row ("move",
    in the build runner's words), then the honest row, and what the client printed ("log").

    Returns {"report": the client report's JSON plus "honest", "summary", "error"}: error is a sentence when the
    client could not be run at all (a syntax error, no `run`), and then report is None."""
    clock = FakeClock()
    recording = Recording(clock=clock)

    def sleep(seconds: object) -> None:
        """The learner's `sleep`: it moves the run's clock (never back, never past an hour) and waits for nothing."""
        if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
            clock.advance(min(float(seconds), LONGEST_SLEEP))

    namespace: dict[str, object] = {"__name__": "lesson_client"}
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(source, "client.py", "exec"), namespace)  # noqa: S102 - the learner's own code, in their page
    except Exception as exc:  # noqa: BLE001 - whatever their module raises is theirs to read
        return {"report": None, "summary": "", "error": f"client.py could not be loaded: {where(exc)}"}
    start = namespace.get("run")
    if not callable(start):
        return {"report": None, "summary": "", "error": "client.py has no run(send, sleep) function"}

    sent = [0]

    def send(message: object) -> object:
        sent[0] += 1
        if sent[0] > RUN_CAP + OVERRUN:
            raise RunawayClient(f"the client kept sending after {RUN_CAP} requests, so the run was stopped")
        request = as_object(json.loads(json.dumps(message)))  # what a wire carries: a tuple arrives as a list
        if sent[0] > RUN_CAP:
            refusal: JSONObject = {"jsonrpc": "2.0", "id": request.get("id"), "error": {
                "code": -32603, "message": f"the grader answers at most {RUN_CAP} requests in the page"}}
            return refusal
        return json.loads(json.dumps(recording.answer(request)))

    with contextlib.redirect_stdout(printed):
        try:
            start(send, sleep)
        except Exception as exc:  # noqa: BLE001 - graded all the same: the rules it reached keep their verdicts
            print(f"the client stopped: {where(exc)}")
    report = grade(recording, "client.py, in the page")
    lines = printed.getvalue().splitlines()[-LOG_LINES:]
    if lines:
        post("log", lines)
    rows = report.to_json()
    rules = rows.get("rules")
    for row in rules if isinstance(rules, list) else []:
        post("move", _row(as_object(row)))
    honest = honest_row(recording)
    post("move", _row(honest))
    kept: list[JSON] = list(lines[-20:])
    return {"report": {**rows, "honest": honest, "log": kept}, "summary": report.summary(), "error": ""}


def _row(row: JSONObject) -> JSONObject:
    """A rule's row in the build runner's words: move, verdict, detail, and what was expected."""
    honest = row.get("rule") == HONEST_ROW
    return {"move": row.get("rule"), "verdict": row.get("verdict"), "detail": row.get("evidence"),
            "observed": row.get("verdict"), "expected": "completed" if honest else "pass"}
