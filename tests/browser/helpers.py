"""Shared helpers for the Playwright browser tests (import as ``tests.browser.helpers``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from axe_playwright_python.sync_playwright import Axe
from flask import Flask
from playwright.sync_api import Page
from werkzeug.serving import BaseWSGIServer, make_server


@dataclass
class LiveServer:
    """A WSGI app being served on a loopback port: open ``url`` in the browser."""

    url: str
    app: Flask
    server: BaseWSGIServer


@contextmanager
def serve(app: Flask) -> Iterator[LiveServer]:
    """Serve ``app`` on a free 127.0.0.1 port from a daemon thread until the block ends."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    # A short poll: shutdown() waits up to one poll interval, paid by every test that serves a page.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="live-server",
                              daemon=True)
    thread.start()
    try:
        yield LiveServer(url=f"http://127.0.0.1:{server.server_port}", app=app, server=server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def assert_no_axe_violations(page: Page, axe: Axe | None = None) -> None:
    """Run axe-core on the page as it is now and fail with axe's report on any violation."""
    results = (axe or Axe()).run(page)
    if results.violations_count != 0:
        raise AssertionError(
            f"{results.violations_count} accessibility violation(s) on {page.url}:\n"
            + results.generate_report()
        )
