"""Checking pages as a browser without JavaScript sees them.

axe-core cannot run in a context with JavaScript switched off (its evaluate never settles), so
the accessibility check of the no-JS rendering opens the same URL in a context that refuses to
load the page's own scripts: the DOM is exactly what a no-JS browser gets, and axe can run.
"""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Route

from tests.browser.helpers import assert_no_axe_violations


def _refuse(route: Route) -> None:
    route.abort()


def assert_no_js_page_accessible(browser: Browser, url: str, axe: Axe | None = None) -> None:
    context = browser.new_context()
    try:
        context.route("**/*.js", _refuse)
        page = context.new_page()
        page.goto(url)
        assert page.evaluate("() => typeof window.htmx") == "undefined"
        assert_no_axe_violations(page, axe)
    finally:
        context.close()
