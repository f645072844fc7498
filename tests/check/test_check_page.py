"""/check, through the Flask test client: the form, what it refuses (SSRF, bad input, too many runs),
live progress with and without JavaScript, and real runs against the app's own /mcp and the mutation suite's
flawed servers, whose failing rows link to the lesson section on the defence. Apps come from the `make_app`,
`app` and `client` fixtures of tests/conftest.py: each test's /check runs are kept in its own tmp_path."""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from flask import Flask
from flask.testing import FlaskClient

from moves.check import MoveRow
from moves.invariants import INVARIANTS
from moves.playing import duration
from moves.probes import ProbeResult
from moves.schedule import WIDTH
from mrtr import FakeClock
from mrtr_stores.check_runs import Run
from tests.browser.helpers import LiveServer
from tests.check.catalogue import MOVES, caught_by
from tests.check.conftest import on_clock
from tests.mutants.harness import running
from web.check.hosts import CheckInputError, HostRules, vet_url
from web.check.routes import SECTIONS
from web.check.runner import THREADS

ROOT = Path(__file__).resolve().parents[2]
LESSON = "when-the-server-needs-input"
HX = {"HX-Request": "true"}


def resolver(table: dict[str, list[str]]) -> Callable[[str, int], list[str]]:
    def resolve(host: str, port: int) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            pass
        if host not in table:
            raise OSError("not found")
        return table[host]
    return resolve


def soup(response: Any) -> BeautifulSoup:
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


def form(url: str, **extra: str) -> dict[str, str]:
    return {"url": url, "owner_token": "bob-token", "other_token": "alice-token", **extra}


def join(app: Flask, run_id: str) -> None:
    """Wait for a run's thread to end (it ran in this process): no sleeping."""
    thread = THREADS.get(run_id)
    if thread is not None:
        thread.join(timeout=120)
        assert not thread.is_alive()


def finish(app: Flask, client: FlaskClient, response: Any) -> BeautifulSoup:
    """Follow a started run to its end (joining its thread: no sleeping) and return the run page."""
    assert response.status_code == 303, response.get_data(as_text=True)
    location = response.headers["Location"]
    join(app, location.rsplit("/", 1)[1])
    page = client.get(location)
    assert page.status_code == 200
    return soup(page)


# -- the form ------------------------------------------------------------------------------------------


def test_the_form_has_labelled_fields_and_never_fills_in_a_token(client: FlaskClient) -> None:
    page = soup(client.get("/check"))
    for name in ("url", "owner_token", "other_token", "tool", "args", "skip_late", "late_after", "allow_replay"):
        field = page.find(attrs={"name": name})
        assert field is not None and page.find("label", attrs={"for": field["id"]}) is not None
    assert all(not f.get("value") for f in page.select("input[type=password]"))
    assert page.find("form")["action"] == "/check"


@pytest.mark.parametrize(("data", "words"), [
    (form("http://127.0.0.1:9/mcp", owner_token=""), "Give both tokens"),
    (form("http://127.0.0.1:9/mcp", other_token="secret-owner-XYZ", owner_token="secret-owner-XYZ"),
     "two different users"),
    (form("ftp://127.0.0.1/mcp"), "must start with http:// or https://"),
    (form(""), "Give the URL"),
    (form("http://bob:secret@127.0.0.1/mcp"), "never in the URL"),
    (form("http://127.0.0.1:99999/mcp"), "cannot be read"),
    (form("http://127.0.0.1:9/mcp", args="[1]"), "must be a JSON object"),
    (form("http://127.0.0.1:9/mcp", args="{oops"), "must be JSON"),
    (form("http://203.0.113.7/mcp"), "only checks servers on this machine"),
    (form("http://nowhere.invalid/mcp"), "could not be resolved"),
    (form("http://127.0.0.1:9/mcp", tool="x" * 5000), "too long"),
    (form("http://127.0.0.1:9/mcp", late_after="soon"), "Late move after must be a number of seconds"),
    (form("http://127.0.0.1:9/mcp", late_after="0"), "between 0 and 300"),
    (form("http://127.0.0.1:9/mcp", late_after="301"), "between 0 and 300"),
])
def test_bad_forms_get_a_400_panel_that_never_echoes_a_token(make_app: Callable[..., Flask], data: dict[str, str],
                                                            words: str) -> None:
    app = make_app(MRTR_CHECK_RESOLVER=resolver({"nowhere.invalid": []}))
    data = {**data, **{k: "secret-owner-XYZ" for k in ("owner_token",) if data[k] == "bob-token"}}
    for headers in ({}, HX):
        response = app.test_client().post("/check", data=data, headers=headers)
        assert response.status_code == 400
        text = response.get_data(as_text=True)
        assert words in soup(response).select_one("#check-error").get_text()
        assert "secret-owner-XYZ" not in text and "alice-token" not in text


@pytest.mark.parametrize("headers", [{"Origin": "https://evil.example"},
                                     {"Origin": "null", "Sec-Fetch-Site": "cross-site"}])
def test_a_check_cannot_be_started_from_another_site(client: FlaskClient, headers: dict[str, str]) -> None:
    response = client.post("/check", data=form("http://127.0.0.1:9/mcp"), headers=headers)
    assert response.status_code == 400 and "not from another site" in response.get_data(as_text=True)


def test_host_names_are_resolved_and_every_address_vetted() -> None:
    rules = HostRules.from_config("", public=False)
    table = {"localhost": ["127.0.0.1", "::1"], "rebind.test": ["127.0.0.1", "10.0.0.8"],
             "mapped.test": ["::ffff:127.0.0.1"]}
    assert vet_url("http://localhost:8000/mcp", rules, resolver(table)) == ("http://localhost:8000/mcp", "127.0.0.1")
    assert vet_url("http://mapped.test/mcp", rules, resolver(table))[1] == "127.0.0.1"
    with pytest.raises(CheckInputError, match="10.0.0.8"):
        vet_url("http://rebind.test/mcp", rules, resolver(table))


def test_listed_hosts_widen_the_rules_but_never_to_link_local_addresses() -> None:
    rules = HostRules.from_config("mcp.internal, 192.0.2.0/24 ,metadata.test", public=False)
    # (a public address: documentation ranges count as private, and a listed name may not lead to those)
    table = {"mcp.internal": ["93.184.216.34"], "metadata.test": ["169.254.169.254"], "other.test": ["192.0.2.9"]}
    assert vet_url("https://mcp.internal/mcp", rules, resolver(table))[1] == "93.184.216.34"
    assert vet_url("http://other.test/mcp", rules, resolver(table))[1] == "192.0.2.9"
    with pytest.raises(CheckInputError, match="169.254.169.254"):
        vet_url("http://metadata.test/mcp", rules, resolver(table))
    assert rules.allows("x", ipaddress.ip_address("127.0.0.1"))


def test_a_public_deployment_checks_nothing_unless_hosts_are_listed(make_app: Callable[..., Flask]) -> None:
    app = make_app(MRTR_PUBLIC="1")
    page = soup(app.test_client().get("/check"))
    assert page.select_one("#check-disabled") is not None
    assert page.select_one("button[type=submit]").has_attr("disabled")
    refused = app.test_client().post("/check", data=form("http://127.0.0.1:9/mcp"))
    assert refused.status_code == 400 and "checks no servers" in refused.get_data(as_text=True)
    listed = HostRules.from_config("127.0.0.1", public=True)
    assert not listed.allows("localhost", ipaddress.ip_address("::1"))
    assert listed.allows("127.0.0.1", ipaddress.ip_address("127.0.0.1"))


@pytest.mark.parametrize("visit", [
    {"base_url": "https://mrtr.example.org/"},  # behind a reverse proxy, reached by its public name
    {"environ_base": {"REMOTE_ADDR": "203.0.113.9"}},  # a visitor from elsewhere, whatever Host they send
    {"base_url": "http://127.0.0.1.nip.io/"},  # a name that merely starts like loopback
])
def test_a_page_not_used_from_this_machine_is_public_without_the_flag(client: FlaskClient,
                                                                    visit: dict[str, Any]) -> None:
    page = soup(client.get("/check", **visit))
    assert page.select_one("#check-disabled") is not None
    refused = client.post("/check", data=form("http://127.0.0.1:9/mcp"), **visit)
    assert refused.status_code == 400 and "checks no servers" in refused.get_data(as_text=True)
    # the same app, used on this machine, still checks a loopback server
    assert soup(client.get("/check")).select_one("#check-disabled") is None


def test_the_public_flag_and_the_host_list_are_read_from_the_environment(make_app: Callable[..., Flask],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MRTR_PUBLIC", "1")
    assert soup(make_app().test_client().get("/check")).select_one("#check-disabled") is not None
    monkeypatch.setenv("MRTR_CHECK_HOSTS", "127.0.0.1")
    page = soup(make_app().test_client().get("/check"))
    assert page.select_one("#check-disabled") is None
    assert "operator listed" in page.select_one(".check-note").get_text()


def test_an_unknown_run_is_404(client: FlaskClient) -> None:
    assert client.get("/check/runs/nope").status_code == 404
    assert client.get("/check/runs/" + "x" * 100).status_code == 404


def test_every_lesson_link_names_a_real_section() -> None:
    meta = tomllib.loads((ROOT / "lessons" / LESSON / "meta.toml").read_text())
    ids = {s["id"] for s in meta["sections"]}
    assert set(SECTIONS.values()) <= ids


# -- live progress -------------------------------------------------------------------------------------


def _running(app: Flask, probes: list[ProbeResult] | None = None) -> Run:
    store = app.extensions["mrtr.check_runs"]
    run = store.start("203.0.113.50", "http://127.0.0.1:9/mcp", 5, 600)
    run.phase, run.total = "Playing late", 7
    row = MoveRow("honest", "Honest retry", "completed", "completed", True, "deployed", True, "")
    run.rows = [{**row.__dict__, "verdict": row.verdict}]
    run.probes = [{"probe": p.probe, "title": p.title, "ok": p.ok, "detail": p.detail} for p in probes or []]
    run.waiting, run.waited, run.wait_total = True, 1.2, 3.0
    run.plan = "About 2 min: the ticket lives 120 s."
    store.save(run)
    return run


def test_a_running_check_polls_with_htmx_and_refreshes_without_javascript(app: Flask) -> None:
    run = _running(app)
    page = app.test_client().get(f"/check/runs/{run.id}")
    html = soup(page)
    assert html.select_one("noscript meta[http-equiv=refresh]") is not None
    progress = html.select_one("#check-progress")
    assert progress["hx-get"] == f"/check/runs/{run.id}" and progress["data-state"] == "running"
    assert html.select_one("#check-status")["role"] == "status"
    # The late moves wait beside the others: the status still counts the moves, and a countdown says what is left.
    assert html.select_one("#check-status").get_text() == "Playing late… (1 of 7 moves played)"
    # The one bar counts what the status counts (moves played), never the late wait (1.2 of 3 s here).
    bar = html.select_one("progress#check-moves-bar")
    assert (bar["value"], bar["max"]) == ("1", "7")
    assert html.select_one("label[for=check-moves-bar]").get_text() == "Moves played: 1 of 7"
    assert html.select_one("#check-wait-left").get_text() == "2 s left"
    assert html.select_one("#check-plan").get_text() == "About 2 min: the ticket lives 120 s."
    assert [r["data-move"] for r in html.select("tr[data-move]")] == ["honest"]
    fragment = app.test_client().get(f"/check/runs/{run.id}", headers=HX)
    assert "<html" not in fragment.get_data(as_text=True) and soup(fragment).select_one("#check-progress[hx-get]")
    run.state, run.finished, run.waiting = "error", 0.0, False
    run.error = "could not connect to 127.0.0.1:9: connection refused (is the server running?)"
    app.extensions["mrtr.check_runs"].save(run)
    done = soup(app.test_client().get(f"/check/runs/{run.id}"))
    assert done.select_one("noscript meta") is None and not done.select_one("#check-progress").has_attr("hx-get")
    assert "connection refused" in done.select_one(".check-error[role=alert]").get_text()


def test_a_probe_failure_links_to_the_rule(app: Flask) -> None:
    run = _running(app, [ProbeResult("capability", False, "asked anyway"), ProbeResult("version", True, "ok")])
    html = soup(app.test_client().get(f"/check/runs/{run.id}"))
    failing = html.select_one("tr[data-probe=capability] a.check-learn")
    assert failing["href"] == f"/lessons/{LESSON}#spec-rules"
    assert html.select_one("tr[data-probe=version] a") is None


# -- real runs ---------------------------------------------------------------------------------------


def test_checking_the_apps_own_mcp_holds_everywhere(app_server: LiveServer, app_clock: FakeClock) -> None:
    client = app_server.app.test_client()
    with on_clock(app_clock):
        started = client.post("/check", data=form(app_server.url + "/mcp"))
        html = finish(app_server.app, client, started)
    verdicts = {r["data-move"]: r["data-verdict"] for r in html.select("tr[data-move]")}
    slugs = [m["slug"] for m in tomllib.loads((ROOT / "moves" / "moves.toml").read_text())["moves"]]
    assert list(verdicts) == slugs and set(verdicts.values()) == {"pass"}
    assert {r["data-verdict"] for r in html.select("tr[data-probe]")} == {"pass"}
    assert html.select_one("#check-status").get_text().startswith("PASS")
    assert not html.select("a.check-learn")
    text = str(html)
    assert "bob-token" not in text and "alice-token" not in text


@pytest.mark.parametrize(("mutant", "check", "section"), [("no-principal", "principal", "checks-and-clock"),
                                                      ("no-single-use", "single-use", "spec-rules")])
def test_checking_a_flawed_server_links_each_failure_to_its_lesson_section(make_app: Callable[..., Flask], mutant: str,
                                                                           check: str, section: str) -> None:
    app = make_app(MRTR_CHECK_RESOLVER=None)
    client = app.test_client()
    with running(mutant) as (url, _server):
        html = finish(app, client, client.post("/check", data=form(url, skip_late="1"), headers={}))
    rows = {r["data-move"]: r for r in html.select("tr[data-move]")}
    late = {m.slug for m in MOVES if m.timing != "in-time"}  # skipped: a move that waits is not played
    caught = caught_by(check) - late
    assert {m for m, r in rows.items() if r["data-verdict"] == "fail"} == caught
    assert {m for m, r in rows.items() if r["data-verdict"] == "not-run"} == late
    for slug in late:  # a move that could not be shown says so in words, and never links to a lesson
        cell = rows[slug].select_one("td.cell")
        assert cell["data-state"] == "skipped" and cell.get_text(strip=True) == "not shown"
        assert rows[slug].select_one("a.check-learn") is None
    for slug in caught:
        assert rows[slug].select_one("a.check-learn")["href"] == f"/lessons/{LESSON}#{section}"
    assert html.select_one("#check-status").get_text().startswith("FAIL")


def test_an_htmx_start_answers_with_the_polling_fragment_and_pushes_the_run_url(app_server: LiveServer) -> None:
    client = app_server.app.test_client()
    started = client.post("/check", data=form(app_server.url + "/mcp", skip_late="1"), headers=HX)
    assert started.status_code == 200
    push = started.headers["HX-Push-Url"]
    assert re.fullmatch(r"/check/runs/[\w-]+", push)
    join(app_server.app, push.rsplit("/", 1)[1])
    assert soup(started).select_one("#check-progress") is not None


def test_an_unreachable_server_gets_an_error_panel(app: Flask) -> None:
    import socket

    client = app.test_client()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        html = finish(app, client, client.post("/check", data=form(f"http://127.0.0.1:{s.getsockname()[1]}/mcp")))
    assert "connection refused" in html.select_one(".check-error[role=alert]").get_text()
    assert html.select_one("#check-status").get_text() == "The check could not run."


def test_a_server_that_stops_answering_mid_run_shows_what_was_played_and_where_it_stopped(
        make_app: Callable[..., Flask]) -> None:
    app = make_app(MRTR_CHECK_TIMEOUT=0.3)
    client = app.test_client()
    with running("hangs-on-retry") as (url, _server):
        html = finish(app, client, client.post("/check", data=form(url, skip_late="1"), headers={}))
    assert html.select_one("#check-status").get_text() == "The check stopped: the server did not answer in time."
    alert = html.select_one(".check-error[role=alert]").get_text(" ", strip=True)
    assert alert.startswith("The check stopped:") and "did not answer in time" in alert
    rows = html.select("tr[data-move]")
    assert len(rows) == 1 and rows[0]["data-verdict"] == "fail"


def test_a_late_move_whose_expiry_cannot_be_read_is_not_shown_and_says_which_field_runs_it(
        make_app: Callable[..., Flask]) -> None:
    app = make_app()
    client = app.test_client()
    with running("opaque") as (url, _server):
        html = finish(app, client, client.post("/check", data=form(url), headers={}))
    late = {m.slug for m in MOVES if m.timing != "in-time"}
    for slug in late:
        row = html.select_one(f'tr[data-move="{slug}"]')
        assert row["data-verdict"] == "not-run"
        detail = row.select_one(".check-detail").get_text(" ", strip=True)
        assert "its expiry is unknown" in detail and "fill in “Late move after” with seconds" in detail
        assert "--late-after" not in detail
    assert html.select_one("#check-status").get_text().startswith("PASS")


def test_the_form_says_how_long_a_check_takes_and_the_run_says_it_again_from_what_the_server_showed(
        make_app: Callable[..., Flask]) -> None:
    app = make_app()
    client = app.test_client()
    ttl = app.extensions["mrtr.settings"].ticket_ttl
    help_text = soup(client.get("/check")).select_one("#check-skip-late-help").get_text(" ", strip=True)
    assert f"this app's own tickets live {ttl} s, so checking it takes about {duration(ttl + 15)}" in help_text
    with running("sound") as (url, _server):
        html = finish(app, client, client.post("/check", data=form(url, skip_late="1"), headers={}))
    plan = html.select_one("#check-plan").get_text(" ", strip=True)
    assert plan.startswith("About ") and f"{len(MOVES)} moves and 5 probes, {WIDTH} at a time" in plan
    assert plan.endswith("the late moves are skipped.")


@pytest.mark.parametrize(("mutant", "invariant"), [("content-is-yes", "no-means-no"), ("sound", None)])
def test_the_report_shows_what_the_exploration_tried_and_each_finding_with_its_fix(
        make_app: Callable[..., Flask], mutant: str, invariant: str | None) -> None:
    app = make_app(MRTR_CHECK_RESOLVER=None)
    client = app.test_client()
    with running(mutant) as (url, _server):
        started = client.post("/check", data=form(url, skip_late="1"), headers={})
        html = finish(app, client, started)
    section = html.select_one("section#check-explore")
    assert section is not None
    fragment = soup(client.get(started.headers["Location"], headers=HX))  # htmx's poll draws the same section
    assert fragment.select_one("html") is None and str(fragment.select_one("section#check-explore")) == str(section)
    summary = " ".join(section.select_one("#check-explore-summary").get_text().split())
    assert re.search(r"\d+ variations over \d+ rounds?, in \d+ calls of a budget of \d+", summary), summary
    verdicts = {li["data-invariant"]: li["data-verdict"] for li in section.select("li[data-invariant]")}
    assert list(verdicts) == list(INVARIANTS)
    findings = section.select("article.check-finding")
    if invariant is None:  # a sound server: no finding, and the page says what it held
        # the late moves were skipped: expiry was judged by nothing, so it is not shown to hold
        assert findings == [] and verdicts.pop("expiry") == "not-run" and set(verdicts.values()) == {"pass"}
        clean = " ".join(section.select_one("#check-explore-clean").get_text().split())
        assert "server held 9 of the 10 over every round" in clean
        return
    assert verdicts[invariant] == "fail" and html.select_one("#check-status").get_text().startswith("FAIL")
    first = next(f for f in findings if f["data-invariant"] == invariant)
    assert first.select_one(".check-finding-variation").get_text(strip=True)
    assert first.select_one(".check-finding-fix").get_text(strip=True) == f"Fix: {INVARIANTS[invariant].fix}."
    sent = first.select("pre.check-json")
    assert sent and '"inputResponses"' in sent[-1].get_text()  # the retry itself, escaped, indented
    assert first.select(".check-got")
    text = str(html)
    assert "bob-token" not in text and "alice-token" not in text
