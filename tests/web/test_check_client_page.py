"""/check-client (issue 45 item 2): a visitor starts a grading run, gets an MCP address nobody can guess, points
their own client at it and reads every rule graded, on the page and in its htmx fragment alike.

The client here is the lesson's own solution (lessons/build-the-client/solution/client.py), run in this process
with a `send` that posts through Flask's test client, the 2026-07-28 headers mirrored from each body, and a
`sleep` that moves the app's fake clock: pacing is graded from the store's times and nothing waits.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from bs4 import BeautifulSoup
from flask import Flask
from flask.testing import FlaskClient

from mrtr import FakeClock
from mrtr_client.mcp_headers import mirrored_headers
from mrtr_grading import CHOICES, CHOICES_VARIABLE, HONEST_ROW, RULES
from mrtr_stores.client_runs import LIFETIME, MAX_CALLS, MAX_LIVE, RUN_ID
from web.check_client import routes as check_client_page

SOLUTION = Path(__file__).resolve().parents[2] / "lessons" / "build-the-client" / "solution" / "client.py"
#: The rules the HTTP requests alone grade; the rest read the client's own output (or its user's choices).
FROM_OUTPUT = {"bounded-rounds-reported", "version-retry", "decline-cancel"}
PUBLIC = {"MRTR_PUBLIC": "1", "MRTR_PUBLIC_URL": "https://lab.example", "MRTR_CHECK_RUNS": "2",
          "MRTR_CHECK_WINDOW": "600"}


def start(client: FlaskClient) -> str:
    """A new run's page path."""
    response = client.post("/check-client")
    assert response.status_code == 303, response.get_data(as_text=True)
    return str(response.headers["Location"])


def solution() -> ModuleType:
    """A fresh copy of the lesson's solution client (its own id counter)."""
    spec = importlib.util.spec_from_file_location("lesson_solution_client", SOLUTION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sender(client: FlaskClient, url: str, alter: Callable[[dict[str, Any]], None] = lambda m: None) \
        -> Callable[[dict[str, Any]], dict[str, Any]]:
    def send(message: dict[str, Any]) -> dict[str, Any]:
        message = json.loads(json.dumps(message))
        alter(message)
        response = client.post(url, data=json.dumps(message), content_type="application/json",
                               headers=mirrored_headers(message, {}))
        assert response.status_code == 200, response.get_data(as_text=True)
        return dict(response.get_json())
    return send


def run_client(client: FlaskClient, page: str, clock: FakeClock,
               alter: Callable[[dict[str, Any]], None] = lambda m: None) -> str:
    """Run the solution against the run at `page`; what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        solution().run(sender(client, page + "/mcp", alter), clock.advance)
    return printed.getvalue()


def verdicts(html: str) -> dict[str, str]:
    soup = BeautifulSoup(html, "html.parser")
    return {str(row["data-rule"]): str(row["data-verdict"]) for row in soup.select("#client-rules tr[data-rule]")}


def test_a_run_starts_at_an_unguessable_address_and_an_unknown_one_is_404(client: FlaskClient) -> None:
    first, second = start(client), start(client)
    run_id = first.rsplit("/", 1)[1]
    assert RUN_ID.fullmatch(run_id) and first != second
    page = client.get(first)
    assert page.status_code == 200
    shown = BeautifulSoup(page.data, "html.parser").select_one("#client-mcp-url")
    assert shown is not None and shown.get_text() == f"http://localhost{first}/mcp"
    for unknown in ("/check-client/" + "A" * 32, "/check-client/" + run_id[:-1] + ("B" if run_id[-1] != "B" else "C"),
                    "/check-client/../etc"):
        assert client.get(unknown).status_code == 404
        reply = client.post(unknown + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert reply.status_code == 404
        if reply.is_json:
            assert "no such grading run" in reply.get_json()["error"]["message"]


def test_the_lesson_solution_passes_every_rule_and_the_output_grades_the_rest(
        client: FlaskClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHOICES_VARIABLE, json.dumps(CHOICES))  # its user declines and cancels as the grader asks
    page = start(client)
    output = run_client(client, page, clock)
    seen = verdicts(client.get(page).get_data(as_text=True))
    assert set(seen) == {r.slug for r in RULES} | {HONEST_ROW}
    assert {rule for rule, v in seen.items() if v != "pass"} == FROM_OUTPUT
    assert {seen[rule] for rule in FROM_OUTPUT} == {"not-run"}
    steps = BeautifulSoup(client.get(page).data, "html.parser").select_one("#client-steps-title")
    assert steps is not None and "6 of 6 steps done" in steps.get_text()

    noted = client.post(page + "/output", data={"output": output, "exit_code": "0", "choices": "1"})
    assert noted.status_code == 303
    # with the output pasted and the user's choices known, no rule is left not-run
    after = verdicts(client.get(page).get_data(as_text=True))
    assert set(after.values()) == {"pass"}, after


def test_a_client_that_re_serialises_the_ticket_fails_ticket_echo(client: FlaskClient, clock: FakeClock) -> None:
    def trim(message: dict[str, Any]) -> None:
        params = message.get("params", {})
        if isinstance(params.get("requestState"), str):
            params["requestState"] = json.loads(json.dumps(params["requestState"].strip()))

    page = start(client)
    run_client(client, page, clock, trim)
    html = client.get(page).get_data(as_text=True)
    assert verdicts(html)["ticket-echo"] == "fail"
    row = BeautifulSoup(html, "html.parser").select_one('tr[data-rule="ticket-echo"]')
    assert row is not None and "Fix:" in row.get_text()


def test_the_page_and_its_htmx_fragment_render_the_same_table(client: FlaskClient, clock: FakeClock) -> None:
    page = start(client)
    run_client(client, page, clock)
    full = BeautifulSoup(client.get(page).data, "html.parser").select_one("#client-rules")
    fragment = client.get(page, headers={"HX-Request": "true"})
    assert "HX-Request" in fragment.headers["Vary"]
    part = BeautifulSoup(fragment.data, "html.parser")
    assert part.select_one("main") is None and full is not None
    assert str(part.select_one("#client-rules")) == str(full)
    assert full["hx-get"] == page and "every" in str(full["hx-trigger"])


def test_without_javascript_the_page_carries_a_refresh_link(client: FlaskClient) -> None:
    page = start(client)
    soup = BeautifulSoup(client.get(page).data, "html.parser")
    assert soup.select_one(f'a[href="{page}"]') is not None
    assert soup.select("script:not([src])") == []  # strict CSP: no inline script


def test_the_mcp_address_answers_as_the_grading_server_does(client: FlaskClient) -> None:
    mcp = start(client) + "/mcp"
    assert client.get(mcp).status_code == 405
    assert client.post(mcp, json={"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
    bad = client.post(mcp, data=b"{not json", content_type="application/json")
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == -32700
    for hostile in (b'"\\ud800"', b"[" * 5000 + b"]" * 5000, b"\xff\xfe"):
        assert client.post(mcp, data=hostile, content_type="application/json").status_code == 400
    listed = client.post(mcp, json={"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {}})
    assert listed.status_code == 200 and listed.get_json()["id"] == "a"
    assert any(t["name"] == "grade_ticket_echo" for t in listed.get_json()["result"]["tools"])


def test_the_mcp_address_takes_no_cross_site_check_but_every_cap(client: FlaskClient, clock: FakeClock) -> None:
    mcp = start(client) + "/mcp"
    other_site = {"Origin": "https://elsewhere.example", "Sec-Fetch-Site": "cross-site"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    assert client.post(mcp, json=call, headers=other_site).status_code == 200
    big = client.post(mcp, data=b" " * (check_client_page.MAX_BODY + 1), content_type="application/json")
    assert big.status_code == 413 and "KB" in big.get_json()["error"]["message"]
    for n in range(MAX_CALLS - 1):
        client.post(mcp, json={**call, "id": n + 2})
    over = client.post(mcp, json={**call, "id": "over"})
    assert over.status_code == 200 and f"its {MAX_CALLS} requests" in over.get_json()["error"]["message"]
    clock.advance(LIFETIME)
    gone = client.post(mcp, json=call)
    assert gone.status_code == 404 and "no such grading run" in gone.get_json()["error"]["message"]
    assert client.get(mcp.removesuffix("/mcp")).status_code == 404
    polled = client.get(mcp.removesuffix("/mcp"), headers={"HX-Request": "true"})
    assert polled.status_code == 286 and "has ended" in polled.get_data(as_text=True)  # htmx stops polling


def test_a_run_starts_from_this_site_only(client: FlaskClient) -> None:
    refused = client.post("/check-client", headers={"Origin": "https://elsewhere.example"})
    assert refused.status_code == 400 and "not from another site" in refused.get_data(as_text=True)


def test_the_output_form_is_capped_and_checked(client: FlaskClient) -> None:
    page = start(client)
    long = client.post(page + "/output", data={"output": "x" * (32 * 1024 + 1)})
    assert long.status_code == 400 and "at most 32 KB" in long.get_data(as_text=True)
    bad = client.post(page + "/output", data={"output": "ok", "exit_code": "zero"})
    assert bad.status_code == 400 and "whole number" in bad.get_data(as_text=True)


@pytest.mark.parametrize("app_config", [PUBLIC])
def test_in_public_a_visitor_starts_a_few_runs_and_everyone_a_capped_number(make_app: Callable[..., Flask],
                                                                            app_config: dict[str, Any]) -> None:
    app = make_app(**app_config)
    one = app.test_client()
    one.environ_base["REMOTE_ADDR"] = "203.0.113.7"
    start(one), start(one)
    limited = one.post("/check-client")
    assert limited.status_code == 429 and "started 2 grading runs recently" in limited.get_data(as_text=True)
    for n in range(MAX_LIVE - 2):
        other = app.test_client()
        other.environ_base["REMOTE_ADDR"] = f"198.51.100.{n + 1}"
        start(other)
    full = app.test_client()
    full.environ_base["REMOTE_ADDR"] = "192.0.2.99"
    refused = full.post("/check-client")
    assert refused.status_code == 503 and f"grading {MAX_LIVE} runs already" in refused.get_data(as_text=True)


@pytest.mark.parametrize("app_config", [PUBLIC])
def test_in_public_nothing_about_a_run_is_reachable_without_its_id(
        make_app: Callable[..., Flask], app_config: dict[str, Any], clock: FakeClock) -> None:
    app = make_app(**app_config)
    owner = app.test_client()
    owner.environ_base["REMOTE_ADDR"] = "203.0.113.7"
    page = start(owner)
    run_client(owner, page, clock)
    # the address is built on MRTR_PUBLIC_URL's host, whatever Host the request named (the scheme is the proxy's)
    html = owner.get(page, headers={"Host": "attacker.example"}).data
    shown = BeautifulSoup(html, "html.parser").select_one("#client-mcp-url")
    assert shown is not None and shown.get_text().split("://", 1)[1] == f"lab.example{page}/mcp"
    stranger = app.test_client()
    stranger.environ_base["REMOTE_ADDR"] = "198.51.100.1"
    run_id = page.rsplit("/", 1)[1]
    for path in ("/check-client", "/", "/check", "/lessons/build-the-client"):
        assert run_id not in stranger.get(path).get_data(as_text=True)
    assert stranger.get(page).headers["Cache-Control"] == "no-store"
    assert 'content="noindex"' in stranger.get(page).get_data(as_text=True)
    assert re.search(r"/check-client/[A-Za-z0-9_-]{32}", stranger.get("/check-client").get_data(as_text=True)) is None


def test_the_choices_the_page_names_are_the_graders(client: FlaskClient) -> None:
    html = client.get(start(client)).get_data(as_text=True)
    assert "MRTR_CHECK_CLIENT_CHOICES" in html and json.dumps(CHOICES).replace('"', "&#34;") in html


class Alternating:
    """Two replicas' test clients taken in turn, as a round-robin balancer hands out a client's requests."""

    def __init__(self, one: FlaskClient, two: FlaskClient) -> None:
        self.clients, self.n = (one, two), 0

    def post(self, *args: Any, **kwargs: Any) -> Any:
        self.n += 1
        return self.clients[self.n % 2].post(*args, **kwargs)


@pytest.fixture
def redis_url() -> Any:
    """A real redis-server of this test's own (the fixture's name marks the test external)."""
    from loopback.redis_server import RedisServer

    with RedisServer() as server:
        yield server.url


@pytest.mark.parametrize("shared", ["sqlite", pytest.param("redis", marks=pytest.mark.external)])
def test_two_replicas_share_a_run_and_count_each_call_once(make_app: Callable[..., Flask], clock: FakeClock,
                                                           tmp_path: Path, request: pytest.FixtureRequest,
                                                           shared: str) -> None:
    store = ({"MRTR_CHECK_STATE_DIR": str(tmp_path / "shared")} if shared == "sqlite"
             else {"MRTR_REDIS_URL": request.getfixturevalue("redis_url")})
    one, two = make_app(**store).test_client(), make_app(**store).test_client()
    page = start(one)
    run_client(Alternating(one, two), page, clock)  # type: ignore[arg-type]
    seen = verdicts(two.get(page).get_data(as_text=True))
    assert {rule for rule, v in seen.items() if v != "pass"} == FROM_OUTPUT
    assert seen == verdicts(one.get(page).get_data(as_text=True))
