"""Playwright set-up shared by every browser test.

* Chromium is Debian's (/usr/bin/chromium, installed by scripts/test.sh): Playwright
  never downloads a browser in this project.
* ``live_server`` serves the real app (``create_app``) on a free loopback port for the
  whole session; ``base_url`` points at it, so ``page.goto("/")`` opens the app.
* Every test collected under tests/browser gets the ``browser`` marker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page

from tests.browser.helpers import LiveServer, serve

CHROMIUM = os.environ.get("MRTR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

BROWSER_TEST_CONFIG: dict[str, Any] = {
    "TESTING": True,
    "MRTR_SECRET_KEYS": "browser-test-key-0123456789abcdef0123456789abcdef",
    "MRTR_STORE": "memory",
}

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's launch options plus Debian's Chromium and CI-safe flags."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"{CHROMIUM} not found: browser tests need Debian's chromium "
            "(bash scripts/test.sh installs it with apt-get)",
            pytrace=False,
        )
    args = list(browser_type_launch_args.get("args", []))
    args += [a for a in CHROMIUM_ARGS if a not in args]
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": args}


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    """The real MRTR Lab app, built by create_app with a fixed test config."""
    from app import create_app

    with serve(create_app(dict(BROWSER_TEST_CONFIG))) as live:
        yield live


@pytest.fixture(scope="session")
def base_url(live_server: LiveServer) -> str:
    return live_server.url


@pytest.fixture(autouse=True)
def _a_new_presenter_each_test(request: pytest.FixtureRequest) -> None:
    """Each test is a presenter of its own, but the one shared app sees every test from 127.0.0.1, whose start
    limit (3 classes an hour, web/classroom/services.py) would refuse the fourth test's class. The limits themselves are
    tested in tests/web; here each test starts with none of its predecessors' class starts counted."""
    if "live_server" not in request.fixturenames and "base_url" not in request.fixturenames \
            and "page" not in request.fixturenames:
        return
    classroom = request.getfixturevalue("live_server").app.extensions.get("classroom")
    for limit in (getattr(classroom, "starts", None), getattr(classroom, "all_starts", None)):
        hits = getattr(limit, "hits", None)
        if hits is not None:
            with limit.lock:
                hits.clear()


@pytest.fixture
def no_js_page(browser: Browser, base_url: str) -> Iterator[Page]:
    """A page in a fresh context with JavaScript disabled, on the live app."""
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="session")
def axe() -> Axe:
    return Axe()
