"""The build lessons' in-page runs, timed in headless Chromium: a cold first Run and warm re-runs, for the server
lesson (build-the-checks) and the client lesson (build-the-client).

    .venv/bin/python -m bench --pyodide          # writes its own section of bench/RESULTS.md

Four ways a learner meets it, each timed from the press of "Run the checks" until every move and probe has its
verdict (performance.now() in the page, so the load of the measuring process is left out):

* cold: a fresh browser context (empty HTTP cache) opens /lessons/build-the-checks at the editors and presses at
  once, so the press waits for downloading Pyodide (about 12 MB from the app itself), starting it, loading the
  checker, and the run;
* revisit: a new page in the same context (the browser's HTTP cache holds the immutable files), pressed at once;
* preloaded: the learner reached an editor and Python loaded while they read and typed (the page preloads it),
  then pressed;
* warm: the same page pressed again.

Each run plays the solution (every move and probe, all passing). The app is served in-process on a loopback
port, as the browser tests serve it. Targets (issue 34): cold under 6 s, already loaded (preloaded, warm) under
1 s.
"""

from __future__ import annotations

import logging
import os
import platform
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from werkzeug.serving import make_server

from bench.recorded import PYODIDE

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

LESSON = "/lessons/build-the-checks"
#: The lessons with an in-page run: the server lesson (the default) and the client lesson ("Build the client's
#: loop", whose Run plays the learner's client against the client checker's flows in the same worker).
LESSONS = ("build-the-checks", "build-the-client")
#: The learner's screen: the targets are a phone's (issue 46: "on a phone-sized viewport").
PHONE: ViewportSize = {"width": 390, "height": 844}
TARGET_WARM_S = 1.0
TARGET_COLD_S = 6.0
#: What each kind of run must stay under.
TARGETS = {"cold": TARGET_COLD_S, "revisit": TARGET_COLD_S, "preloaded": TARGET_WARM_S, "warm": TARGET_WARM_S}
CHROMIUM = os.environ.get("MRTR_CHROMIUM", "/usr/bin/chromium")
LESSONS_DIR = Path(__file__).resolve().parent.parent / "lessons"

#: Fill every step's editor with the solution's block, press Run, and resolve with the milliseconds until the run
#: ends (data-run-state leaves "running"), and how it ended.
_RUN = """async (blocks) => {
  const root = document.querySelector('[data-build-runner]');
  for (const [id, code] of Object.entries(blocks)) {
    const area = document.querySelector(`textarea[data-editor="${id}"]`);
    area.value = code;
    area.dispatchEvent(new Event('input', {bubbles: true}));
  }
  const started = performance.now();
  const ended = new Promise((resolve) => {
    const seen = new MutationObserver(() => {
      const state = root.getAttribute('data-run-state');
      if (state && state !== 'running') { seen.disconnect(); resolve(state); }
    });
    seen.observe(root, {attributes: true, attributeFilter: ['data-run-state']});
  });
  root.querySelector('[data-action="run-checks"]').click();
  const state = await ended;
  return {ms: performance.now() - started, state, status: root.querySelector('[data-run-status]').textContent,
          moves: root.querySelectorAll('tr[data-move][data-verdict="pass"]').length};
}"""


@dataclass(frozen=True)
class Timing:
    kind: str  # a key of TARGETS
    seconds: float
    status: str


@contextmanager
def serve() -> Iterator[str]:
    """The app on a free loopback port, from a daemon thread."""
    from app import create_app

    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": "bench-pyodide-key-0123456789abcdef0123456789",
                      "MRTR_STORE": "memory"})
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request would bury the figures
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def solution_blocks(lesson: str = LESSONS[0]) -> dict[str, str]:
    from web.build.routes import load_build

    build = load_build(LESSONS_DIR / lesson)
    if build is None:
        raise SystemExit(f"{lesson} has no build loop")
    return {step.id: step.solution for step in build.steps}


def measure(cold_rounds: int = 3, warm_runs: int = 5, lesson: str = LESSONS[0]) -> list[Timing]:
    """Timings of `lesson`'s Run (a slug of LESSONS), each kind as the module's docstring says."""
    from playwright.sync_api import sync_playwright

    from web.build import pyodide_install

    if not pyodide_install.is_installed():
        raise SystemExit("Pyodide is not installed: run .venv/bin/python -m web.build.pyodide_install first")
    blocks = solution_blocks(lesson)
    at = f"/lessons/{lesson}#step-{next(iter(blocks))}"  # at the editors: the press races the preload
    timings: list[Timing] = []
    with serve() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            for round_ in range(cold_rounds):
                context = browser.new_context(base_url=base, viewport=PHONE)  # a fresh context: an empty HTTP cache
                page = context.new_page()
                page.goto(at)
                page.wait_for_selector("[data-action='run-checks']", state="visible")
                runs = [("cold", page.evaluate(_RUN, blocks))]
                if round_ == 0:
                    runs += [("warm", page.evaluate(_RUN, blocks)) for _ in range(warm_runs)]
                again = context.new_page()  # the same browser, a later visit: its HTTP cache holds the files
                again.goto(at)
                again.wait_for_selector("[data-action='run-checks']", state="visible")
                runs.append(("revisit", again.evaluate(_RUN, blocks)))
                later = context.new_page()  # reached the editors, read and typed while Python loaded, then pressed
                later.goto(at)
                later.wait_for_selector("[data-build-runner][data-preload='ready']", timeout=120_000)
                runs.append(("preloaded", later.evaluate(_RUN, blocks)))
                for kind, run in runs:
                    if run["state"] != "done":
                        raise SystemExit(f"a {kind} run ended {run['state']}: {run['status']}")
                    timings.append(Timing(kind, run["ms"] / 1000, run["status"]))
                    print(f"  {kind:<9} {run['ms'] / 1000:6.2f} s  {run['status']}", flush=True)
                context.close()
        finally:
            browser.close()
    return timings


def section(timings: dict[str, list[Timing]], started: str, note: str = "") -> str:
    from web.build import pyodide_install
    from web.build.runner import PYODIDE_SERVED

    def row(lesson: str, kind: str, target: float) -> str:
        values = [t.seconds for t in timings[lesson] if t.kind == kind]
        median = statistics.median(values)
        verdict = "met" if median < target else "MISSED"
        return (f"| {lesson} | {kind} | {len(values)} | {median:.2f} | {min(values):.2f} | {max(values):.2f} | "
                f"under {target:g} s: {verdict} |")

    weight = sum((pyodide_install.pyodide_dir() / name).stat().st_size for name in PYODIDE_SERVED)
    lines = [
        PYODIDE.begin,
        "## The build lessons' in-page runs (Pyodide in headless Chromium)",
        "",
        f"Recorded {started} by `python -m bench --pyodide` on {platform.node()} ({os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}), Pyodide {pyodide_install.PYODIDE_VERSION}, Debian's Chromium, "
        "headless, in a 390x844 (phone) viewport. Each run plays the lesson's solution: in build-the-checks "
        "every move and probe against the learner's server, in build-the-client every client rule and the "
        "honest flows against the learner's client; seconds from pressing Run until the last verdict, timed in "
        "the page. Cold: a fresh browser "
        f"context pressed as soon as the page is at the editors, so Pyodide ({weight / 1e6:.1f} MB of runtime from "
        "the app's own origin, uncompressed), the wheel and the checker are downloaded and started first. "
        "Revisit: a new page in the same browser (its HTTP cache holds those immutable files), pressed at once. "
        "Preloaded: a new page whose preload (started on reaching the editors) finished before the press. Warm: "
        "the same page again.",
        "",
        "| lesson | run | runs | median s | best s | worst s | target |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *(row(lesson, kind, target) for lesson in timings for kind, target in TARGETS.items()),
    ]
    if note:
        lines += ["", f"Also running on the machine: {note}."]
    lines.append(PYODIDE.end)
    return "\n".join(lines)


def run(results: Path, before: str, *, write: bool, quick: bool = False, note: str = "") -> int:
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    timings: dict[str, list[Timing]] = {}
    for lesson in LESSONS:
        print(f"== {lesson}: the in-page run (cold and warm) ==", flush=True)
        timings[lesson] = measure(cold_rounds=1 if quick else 3, warm_runs=2 if quick else 5, lesson=lesson)
    report = section(timings, started, note)
    print("\n" + report)
    if write:
        text = results.read_text(encoding="utf-8") if results.exists() else ""
        results.write_text(PYODIDE.put(text, report, before), encoding="utf-8")
        print(f"\nwrote the --pyodide section of {results}")
    met = all(statistics.median(t.seconds for t in runs if t.kind == kind) < target
              for runs in timings.values() for kind, target in TARGETS.items())
    return 0 if met else 1
