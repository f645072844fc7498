"""URL mode and the playground's tool picker in a real Chromium, at 390x844 and 1280x720, light and dark, with and
without JavaScript, and axe after every change: a real /mcp call opens the lab's out-of-band page, the learner
enters a key there (it never comes back), and the retry completes; the picker switches round one, the moves and the
address to another tool. Playwright's `expect` does the waiting."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import assert_no_axe_violations
from tests.browser.nojs import assert_no_js_page_accessible
from tests.web.helpers import headers_for, honest_move
from tests.web.test_mcp_http import rpc

SIZES = [(390, 844), (1280, 720)]
SIZE_IDS = ["390px", "1280x720"]
URL_CAPS = {"elicitation": {"form": {}, "url": {}}}
KEY = "sk-lab-browser-7f1c2e"
HONEST = honest_move()


def connect(page: Page, n: int, **params: Any) -> dict[str, Any]:
    """A tools/call of connect on the live app's /mcp, as bob's client sends it."""
    message = rpc("tools/call", {"name": "connect", "arguments": {"service": "billing"}, **params}, request_id=n,
                  caps=URL_CAPS)
    response = page.request.post("/mcp", data=json.dumps(message),
                                 headers={**headers_for(message), "Content-Type": "application/json"})
    assert response.status == 200
    result: dict[str, Any] = response.json()["result"]
    return result


def page_path(result: dict[str, Any]) -> str:
    return "/out-of-band/" + result["inputRequests"]["key"]["params"]["url"].rsplit("/", 1)[-1]


def look(page: Page, width: int, height: int, scheme: str) -> None:
    page.set_viewport_size({"width": width, "height": height})
    page.emulate_media(color_scheme=scheme, reduced_motion="reduce")


@pytest.mark.parametrize(("width", "height"), SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_out_of_band_page_takes_the_key_and_the_retry_completes(page: Page, axe: Axe, width: int, height: int,
                                                                     scheme: str) -> None:
    look(page, width, height, scheme)
    first = connect(page, 1)
    page.goto(page_path(first))
    expect(page.get_by_role("heading", level=1)).to_have_text("Enter the API key")
    assert_no_axe_violations(page, axe)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    key = page.get_by_label("API key")
    expect(key).to_have_attribute("type", "password")
    key.fill("short")
    page.get_by_role("button", name="Send the key to the lab").click()
    expect(page.get_by_role("alert")).to_contain_text("8 to 200 characters")
    expect(page.get_by_label("API key")).to_have_value("")  # a refused key is not put back
    assert_no_axe_violations(page, axe)
    page.get_by_label("API key").fill(KEY)
    page.get_by_role("button", name="Send the key to the lab").click()
    expect(page.get_by_role("status").filter(has_text="The lab has the key")).to_be_visible()
    assert KEY not in page.content()
    assert_no_axe_violations(page, axe)
    done = connect(page, 2, inputResponses={"key": {"action": "accept"}}, requestState=first["requestState"])
    assert done["content"][0]["text"].startswith("connected billing") and KEY not in json.dumps(done)


def test_the_out_of_band_page_works_without_javascript(no_js_page: Page, browser: Browser, axe: Axe) -> None:
    page = no_js_page
    first = connect(page, 1)
    page.goto(page_path(first))
    assert_no_js_page_accessible(browser, page.url, axe)
    page.get_by_label("API key").fill(KEY)
    page.get_by_role("button", name="Send the key to the lab").click()
    expect(page.get_by_text("The lab has the key")).to_be_visible()
    page.goto("/out-of-band/" + "A" * 22)
    expect(page.get_by_text("This link is not one the lab gave out")).to_be_visible()


@pytest.mark.parametrize(("width", "height"), SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_url_mode_section_shows_the_page_step(page: Page, axe: Axe, width: int, height: int, scheme: str) -> None:
    look(page, width, height, scheme)
    page.goto("/lessons/beyond-one-question#url-mode")
    figure = page.locator("#figure-url-mode")
    expect(figure.locator("[data-exchange-ok]")).to_have_attribute("data-exchange-ok", "true")
    expect(figure.locator("li.out-of-band").first).to_contain_text("out of band")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert_no_axe_violations(page, axe)


@pytest.mark.parametrize(("width", "height"), SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_tool_picker_switches_the_tool_and_the_address(page: Page, axe: Axe, width: int, height: int,
                                                           scheme: str) -> None:
    look(page, width, height, scheme)
    page.goto("/playground")
    expect(page.locator("#pg-round-one-heading")).to_contain_text("deploy to staging")
    page.get_by_role("radio", name="provision").check()
    expect(page).to_have_url(re.compile(r"tool=provision"))
    expect(page.locator("#pg-round-one-heading")).to_contain_text("staging database")
    expect(page.get_by_role("radio", name="provision")).to_be_checked()
    page.locator(f"[data-move='{HONEST.slug}']").click()
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", HONEST.slug)
    expect(page.locator("#pg-verdict")).to_contain_text("provisioned a small staging database in eu-west")
    expect(page).to_have_url(re.compile(rf"tool=provision&move={HONEST.slug}"))
    expect(page.locator("ol.checks.is-animating")).to_have_count(0)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert_no_axe_violations(page, axe)


def test_the_tool_picker_works_without_javascript(no_js_page: Page, browser: Browser, axe: Axe) -> None:
    page = no_js_page
    page.goto("/playground")
    page.get_by_role("radio", name="release").check()
    page.get_by_role("button", name="Apply switches").click()
    expect(page).to_have_url(re.compile(r"tool=release"))
    expect(page.locator("#pg-round-one-heading")).to_contain_text("1.4.0")
    page.locator(f"[data-move='{HONEST.slug}']").click()
    expect(page.locator("#pg-verdict")).to_contain_text("released 1.4.0")
    assert_no_js_page_accessible(browser, page.url.split("#")[0], axe)
