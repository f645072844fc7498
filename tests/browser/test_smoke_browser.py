"""Prove the browser stack works on its own: Debian Chromium + Playwright + vendored htmx.

This test does not touch create_app: a tiny inline Flask app serves the vendored htmx
file straight from static/vendor and a button whose hx-post swaps in a fragment. If
this fails, the problem is the browser tooling, not MRTR Lab.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask, request, send_from_directory
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import LiveServer, assert_no_axe_violations, serve

VENDOR_DIR = Path(__file__).resolve().parents[2] / "static" / "vendor"
HTMX_FILE = "htmx-2.0.11.min.js"

PAGE = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>htmx smoke test</title>
  <script src="/vendor/{HTMX_FILE}"></script>
</head>
<body>
  <main>
    <h1>htmx smoke test</h1>
    <button type="button" hx-post="/fragment" hx-target="#result" hx-swap="innerHTML">Load fragment</button>
    <p id="result">nothing yet</p>
  </main>
</body>
</html>
"""


def _smoke_app() -> Flask:
    app = Flask(__name__)
    posts = 0

    @app.get("/")
    def index() -> str:
        return PAGE

    @app.get("/vendor/<path:name>")
    def vendor(name: str):
        return send_from_directory(VENDOR_DIR, name)

    @app.post("/fragment")
    def fragment() -> str:
        nonlocal posts
        posts += 1
        kind = "htmx" if request.headers.get("HX-Request") == "true" else "plain"
        return f"<strong>swapped by {kind} request #{posts}</strong>"

    return app


@pytest.fixture(scope="module")
def smoke_server() -> Iterator[LiveServer]:
    with serve(_smoke_app()) as live:
        yield live


@pytest.fixture
def smoke_page(browser: Browser) -> Iterator[Page]:
    # A context of our own: the shared `page` fixture is bound to the real app's live_server.
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


def test_hx_post_swaps_fragment_with_vendored_htmx(smoke_server: LiveServer, smoke_page: Page) -> None:
    page = smoke_page
    page.goto(smoke_server.url + "/")
    # The vendored file really loaded and is the version it claims to be.
    assert page.evaluate("() => window.htmx && window.htmx.version") == "2.0.11"

    result = page.locator("#result")
    expect(result).to_have_text("nothing yet")
    page.get_by_role("button", name="Load fragment").click()
    expect(result).to_have_text("swapped by htmx request #1")
    expect(result.locator("strong")).to_have_count(1)

    page.get_by_role("button", name="Load fragment").click()
    expect(result).to_have_text("swapped by htmx request #2")

    assert_no_axe_violations(page)
