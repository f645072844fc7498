"""Shared helpers for the Playwright browser tests (import as ``tests.browser.helpers``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from axe_playwright_python.sync_playwright import Axe
from flask import Flask
from playwright.sync_api import Page, expect
from werkzeug.serving import BaseWSGIServer, make_server

from web.classroom.services import remove_owned_directories


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
        remove_owned_directories(app)  # the fixture's cache may still hold the app when the suite's guard looks


def assert_no_axe_violations(page: Page, axe: Axe | None = None) -> None:
    """Run axe-core on the page as it is now, once its stylesheets apply, and fail with axe's report on any
    violation. A page a form post navigated to can be queried (its alert found) before its CSS has loaded; axe run
    then reads the browser's own colours on a background it takes for white (a clean-clone run failed that way,
    dark scheme, 2.38:1), so the check waits for the page's load event, which no stylesheet outlasts."""
    page.wait_for_load_state("load")
    results = (axe or Axe()).run(page)
    if results.violations_count != 0:
        raise AssertionError(
            f"{results.violations_count} accessibility violation(s) on {page.url}:\n"
            + results.generate_report()
        )


#: Every visible text node under `selector` as [font size in CSS px, the text's start, the element's tag.class]:
#: what a reader at that size sees (a node inside a closed <details> or a hidden element is not measured).
_TEXT_SIZES = """(selector) => {
  const out = [];
  for (const scope of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || !el || !el.checkVisibility({visibilityProperty: true})) { continue; }
      if (el.closest(".visually-hidden, template, script, style")) { continue; }
      let clipped = false;  // inside a one-pixel box (a visually hidden table head): read by screen readers only
      for (let up = el; up && !clipped; up = up.parentElement) {
        const r = up.getBoundingClientRect();
        clipped = (r.width <= 1 || r.height <= 1) && getComputedStyle(up).overflow !== "visible";
      }
      if (clipped) { continue; }
      const range = document.createRange();
      range.selectNodeContents(node);
      const box = range.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) { continue; }
      const cls = el.className && typeof el.className === "string" ? "." + el.className : "";
      out.push([parseFloat(getComputedStyle(el).fontSize), node.textContent.trim().slice(0, 40),
                el.tagName.toLowerCase() + cls]);
    }
  }
  return out;
}"""

#: Every visible control under `selector` (buttons, inputs, selects, summaries, and links that are not inside
#: running text) as [width, height, its name], the target a finger has to hit (a radio's label counts: it is
#: part of the target when the label wraps it or names it with for=).
_TARGETS = """(selector) => {
  const out = [];
  const controls = "button, input:not([type=hidden]), select, textarea, summary, a.button, [role=button]";
  for (const scope of document.querySelectorAll(selector)) {
    for (const el of scope.querySelectorAll(controls)) {
      if (!el.checkVisibility({visibilityProperty: true})) { continue; }
      let box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) { continue; }
      const label = el.labels && el.labels.length ? el.labels[0] : null;
      if (label && (el.type === "radio" || el.type === "checkbox")) {
        const l = label.getBoundingClientRect();
        const left = Math.min(l.left, box.left), top = Math.min(l.top, box.top);
        box = {width: Math.max(l.right, box.right) - left, height: Math.max(l.bottom, box.bottom) - top};
      }
      const name = el.getAttribute("name") || el.id || el.textContent || el.tagName;
      out.push([box.width, box.height, name.trim().slice(0, 40)]);
    }
  }
  return out;
}"""


def text_sizes(page: Page, selector: str = "body") -> list[tuple[float, str, str]]:
    """The font size of every visible piece of text under `selector`, with where it is."""
    return [tuple(row) for row in page.evaluate(_TEXT_SIZES, selector)]


def assert_text_at_least(page: Page, px: float, selector: str = "body") -> None:
    """Fail, naming them, when any visible text under `selector` is drawn smaller than `px` CSS pixels."""
    small = [row for row in text_sizes(page, selector) if row[0] < px - 0.01]
    assert not small, f"text under {px} px in {selector} at {page.viewport_size}: {small[:8]}"


def assert_targets_at_least(page: Page, px: float, selector: str = "body") -> None:
    """Fail, naming them, when any visible control under `selector` is narrower or shorter than `px`."""
    small = [row for row in page.evaluate(_TARGETS, selector) if min(row[0], row[1]) < px - 0.01]
    assert not small, f"targets under {px} px in {selector} at {page.viewport_size}: {small[:8]}"


def replace_code(page: Page, step_id: str, code: str) -> None:
    """What a learner does: select everything in the step's editor and put other text in its place."""
    editor = page.locator(f"#step-{step_id} [data-editor]")
    editor.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(code)
    expect(editor).to_have_value(code)
