"""The checker against real peers: its report must say what each peer really does.

Ground truth is tests/peers/expectations.toml, which tests/peers/test_peers.py keeps honest by sending
every move BY HAND (plain JSON-RPC) to the same peers. Here `run_check` (and once the CLI, `--json`)
plays the same moves against the same peers, and each move's `observed` and each probe must equal the
hand-sent result. The app's own /mcp is compared with moves sent by hand in this file.

No real waits where a clock can be moved: the peers read a clock file (`peer.clock`), the app takes
MRTR_CLOCK, and the checker's late move waits on a `Timing` whose clock and sleep are that same clock.
Only `python -m mrtr serve` (system clock, no hook) needs a short TTL and a real wait of about 3 s.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from moves.catalog import load_moves
from moves.check import CheckOptions, Report, main, run_check
from moves.engine import Call, play, readable_claims
from moves.targets.http import HttpTarget
from moves.targets.remote import Timing
from moves.targets.stdio import StdioTarget
from mrtr import FakeClock
from tests.browser.helpers import serve
from tests.check.catalogue import EDITED, caught_by, gated_by
from tests.check.conftest import on_clock
from tests.peers import launch, wire
from tests.peers.fixtures import *  # noqa: F403  (the peers' fixtures: sdk_py_http, mutant_http_with, ...)
from tests.peers.truth import failing_moves

EXPECTED: dict[str, dict[str, Any]] = tomllib.loads((launch.PEERS / "expectations.toml").read_text())
MOVES = load_moves()
SLUGS = [move.slug for move in MOVES]
LATE = {move.slug for move in MOVES if move.timing != "in-time"}  # the moves that wait
PROBE_SLUGS = ["capability", "version", "missing-answer", "same-error", "result-type"]


# -- reading a report the way expectations.toml is written ------------------------------------------


def probe_findings(report: Report) -> dict[str, Any]:
    """The checker's probes in the vocabulary of the hand-sent probes (tests/peers/wire.py `probes`)."""
    by_slug = {p.probe: p for p in report.probes}
    assert list(by_slug) == PROBE_SLUGS
    capability = by_slug["capability"]
    version = by_slug["version"]
    return {
        "capability": "refused-32021" if capability.ok and "requiredCapabilities is missing" not in capability.detail
        else "asked-anyway" if capability.detail.startswith("asked for input anyway") else "other",
        "version": "refused-32022" if version.ok
        else "served" if version.detail.startswith(("got a complete result", "got resultType")) else "other",
        "uniform-refusals": by_slug["same-error"].ok,
        "result-type": by_slug["result-type"].ok,
    }


def findings(report: Report) -> dict[str, dict[str, Any]]:
    """The moves that did not hold with what the server did (the table's vocabulary), and the probes."""
    return {"moves": {row.move: row.observed for row in report.moves if row.verdict != "pass"},
            "probes": probe_findings(report)}


def expected(name: str) -> dict[str, dict[str, Any]]:
    return {"moves": failing_moves(EXPECTED[name]), "probes": EXPECTED[name]["probes"]}


def assert_report_matches_ground_truth(report: Report, name: str) -> None:
    truth = expected(name)
    assert findings(report) == truth, report.table()
    # Verdicts follow: a move passes exactly when the table does not list it; a listed one fails, unless the
    # checker could not show it (not-run, never a failure).
    def verdict(slug: str) -> str:
        seen = truth["moves"].get(slug)
        if seen is None:
            return "pass"
        if seen == "not-run":
            return "not-run"
        return "warn" if seen in {str(o) for o in MOVE_BY_SLUG[slug].warn} else "fail"

    assert {r.move: r.verdict for r in report.moves} == {slug: verdict(slug) for slug in SLUGS}
    # The checker's own probe (a retry missing its answer) agrees with the hand-sent moves that leave it out.
    missing = next(p for p in report.probes if p.probe == "missing-answer")
    assert missing.ok == (not caught_by("answer") & set(truth["moves"])), missing.detail
    fails = {slug for slug, seen in truth["moves"].items() if verdict(slug) == "fail"}
    assert report.ok == (not fails and truth["probes"] == EXPECTED["mutant-sound"]["probes"])


MOVE_BY_SLUG = {m.slug: m for m in MOVES}


# -- targets on the peers' clocks ------------------------------------------------------------------


def peer_timing(peer: launch.HttpPeer | launch.StdioPeer, late_after: float | None = None) -> Timing:
    """The late move's wait on the peer's own clock: "sleeping" moves the peer's tickets' now instead."""
    return Timing(late_after=late_after, clock=peer.clock, sleep=peer.clock.advance)


def check_http(peer: launch.HttpPeer, late_after: float | None = None) -> Report:
    with closing(HttpTarget(peer.url, peer.tokens, timing=peer_timing(peer, late_after), timeout=30)) as target:
        return run_check(target)


def check_stdio(peer: launch.StdioPeer, late_after: float | None = None) -> Report:
    env = {**os.environ, "MRTR_PEER_CLOCK_FILE": str(peer.clock.path)}
    with closing(StdioTarget(peer.command, [(peer.owner, peer.owner), (peer.other, peer.other)], env=env,
                             principal_env=peer.principal_env, timing=peer_timing(peer, late_after),
                             timeout=30)) as target:
        return run_check(target)


# -- the official SDKs ----------------------------------------------------------------------------


def test_the_python_sdk_over_http_is_reported_as_it_really_behaves(sdk_py_http: launch.HttpPeer) -> None:
    # Its tickets are sealed (AES-GCM): no readable exp, so the late move needs --late-after.
    report = check_http(sdk_py_http, late_after=sdk_py_http.ttl + 5)
    assert_report_matches_ground_truth(report, "sdk-python-http")
    assert {r.move for r in report.moves if r.verdict == "fail"} == caught_by("single-use")
    capability = next(p for p in report.probes if p.probe == "capability")
    assert not capability.ok and "asked for input anyway" in capability.detail


def test_the_python_sdks_resolve_form_is_reported_as_it_really_behaves(sdk_py_resolve_http) -> None:
    report = check_http(sdk_py_resolve_http, late_after=sdk_py_resolve_http.ttl + 5)
    assert_report_matches_ground_truth(report, "sdk-python-resolve-http")
    wrong = next(m for m in MOVES if m.answer == "wrong-type")
    row = next(r for r in report.moves if r.move == wrong.slug)
    # pydantic's lax mode reads confirm "yes" as True: the same deploy as an accepted call's.
    assert row.verdict == "fail" and "The server answered: did the work: result: deployed to staging" in row.detail


def test_the_python_sdk_over_stdio_is_reported_as_it_really_behaves(sdk_py_stdio: launch.StdioPeer) -> None:
    report = check_stdio(sdk_py_stdio, late_after=sdk_py_stdio.ttl + 5)
    assert_report_matches_ground_truth(report, "sdk-python-stdio")


def test_the_python_sdks_default_key_per_process_over_stdio_is_not_shown_never_passed(sdk_py_stdio_defaults) -> None:
    report = check_stdio(sdk_py_stdio_defaults, late_after=sdk_py_stdio_defaults.ttl + 5)
    assert_report_matches_ground_truth(report, "sdk-python-stdio-defaults")
    stolen = {m.slug for m in MOVES if m.sender == "other"}
    for row in report.moves:
        if row.move in stolen:
            assert row.verdict == "not-run" and "only work where they were minted" in row.detail


def test_the_typescript_sdk_docs_example_is_reported_as_it_really_behaves(sdk_ts_http: launch.HttpPeer) -> None:
    # Its codec's tickets are JWT-like (v1.payload.mac): the late move waits for the exp it can read.
    report = check_http(sdk_ts_http)
    assert_report_matches_ground_truth(report, "sdk-typescript-docs")
    truth = failing_moves(EXPECTED["sdk-typescript-docs"])
    assert [r.move for r in report.moves if r.verdict == "fail"] == [
        s for s in SLUGS if truth.get(s, "not-run") != "not-run"
        and truth[s] not in {str(o) for o in MOVE_BY_SLUG[s].warn}]


def test_the_typescript_sdk_ticket_is_edited_in_its_payload_not_flipped(sdk_ts_http: launch.HttpPeer) -> None:
    # The tampered move edits p.env in the codec's readable v1.payload.mac (as the hand-sent move does)
    # and keeps the MAC; the codec still refuses it with its one frozen error.
    tampered = EDITED
    target = HttpTarget(sdk_ts_http.url, sdk_ts_http.tokens, timeout=30)
    result = play(tampered, target, Call())
    sent = result.steps[-1].sent["params"]["requestState"]
    assert readable_claims(result.ticket)["p"]["env"] == "staging"
    assert readable_claims(sent)["p"] == {**readable_claims(result.ticket)["p"], "env": "prod"}
    assert sent.split(".")[2] == result.ticket.split(".")[2] and sent == wire.edited(result.ticket)
    assert (result.outcome, result.detail) == ("refused", "error -32602: Invalid or expired requestState")


def test_the_typescript_lesson_snippet_is_reported_as_it_really_behaves(sdk_ts_lesson_http) -> None:
    report = check_http(sdk_ts_lesson_http)
    assert_report_matches_ground_truth(report, "sdk-typescript-lesson")
    # A malformed answer ends the call: a warning; one tool only: the other-tool move is not shown.
    assert all(r.ok or r.verdict in ("warn", "not-run") for r in report.moves)
    same = next(p for p in report.probes if p.probe == "same-error")
    # The snippet's own refusals are isError results, the codec's are errors: a client can tell them apart.
    shown = {r.move for r in report.moves if r.verdict != "not-run"}
    for slug in (caught_by("request") | caught_by("single-use")) & shown:
        assert not same.ok and slug in same.detail.split(";")[0]


def test_the_cli_json_report_of_the_python_sdk_matches_the_ground_truth(sdk_py_http, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = [sdk_py_http.url, "--token", "bob=bob-token", "--token", "alice=alice-token", "--json",
            "--late-after", str(sdk_py_http.ttl + 5), "--junit", str(tmp_path / "junit.xml")]
    with on_clock(sdk_py_http.clock):  # the CLI's late move waits on the peer's clock
        assert main(argv, stdout=out, stderr=err, timeout=30) == 1, err.getvalue()
    report = json.loads(out.getvalue())
    assert report["target"] == sdk_py_http.url and report["ok"] is False
    truth = failing_moves(EXPECTED["sdk-python-http"])
    assert {m["move"]: m["observed"] for m in report["moves"] if m["verdict"] != "pass"} == truth
    assert {p["probe"]: p["ok"] for p in report["probes"]} == {
        "capability": False, "version": True, "missing-answer": True, "same-error": True, "result-type": True}
    junit = (tmp_path / "junit.xml").read_text()
    warned = {slug for slug, seen in truth.items() if seen in {str(o) for o in MOVE_BY_SLUG[slug].warn}}
    not_run = {slug for slug, seen in truth.items() if seen == "not-run"}
    broken = {f["invariant"] for f in report["exploration"]["findings"] if not f["excused"]}  # one case each
    assert junit.count("<failure") == len(truth) - len(warned) - len(not_run) + 1 + len(broken)
    assert all(f'name="{slug}"' in junit for slug in truth)
    assert "bob-token" not in out.getvalue() + err.getvalue() + junit


def test_allow_replay_turns_the_python_sdks_missing_redeemed_store_into_a_warning(sdk_py_http) -> None:
    with closing(HttpTarget(sdk_py_http.url, sdk_py_http.tokens, timeout=30, timing=Timing(skip_late=True))) as target:
        report = run_check(target, CheckOptions(allow_replay=True, skip_late=True))
    verdicts = {r.move: r.verdict for r in report.moves}
    truth = failing_moves(EXPECTED["sdk-python-http"])
    ended = {slug for slug, seen in truth.items() if seen == "ended"}
    not_shown = {slug for slug, seen in truth.items() if seen == "not-run"}  # one tool: no other tool to try
    assert verdicts == {**{slug: "pass" for slug in SLUGS}, **{slug: "warn" for slug in caught_by("single-use")},
                        **{slug: "warn" for slug in ended}, **{slug: "not-run" for slug in LATE | not_shown}}
    # Every move now holds or is excused; only the capability probe still fails.
    assert [p.probe for p in report.probes if not p.ok] == ["capability"] and not report.ok


# -- the mutation suite's servers as peers: caught exactly where they are flawed ------------------------


def test_a_mutant_over_stdio_is_reported_as_it_really_behaves(mutant_stdio: launch.StdioPeer) -> None:
    report = check_stdio(mutant_stdio)
    assert_report_matches_ground_truth(report, "mutant-no-principal-stdio")
    assert {r.move for r in report.moves if not r.ok} == caught_by("principal")


MUTANT_PEERS = [name for name, entry in EXPECTED.items() if entry["fixture"] == "mutant_http_with"]
MUTANT_TABLE: dict[str, Any] = tomllib.loads((launch.MUTANTS_SERVER.parent / "expectations.toml").read_text())


@pytest.mark.parametrize("name", MUTANT_PEERS)
def test_each_flaw_is_caught_exactly_where_it_is(mutant_http_with, name: str) -> None:
    mutant = EXPECTED[name]["mutant"]
    with mutant_http_with(mutant) as peer:
        report = check_http(peer)
    assert_report_matches_ground_truth(report, name)
    # The failing moves are those whose defence the server lacks; the failing probes, its protocol flaw.
    caught = set().union(*(caught_by(check) for check in EXPECTED[name].get("lacks", [])))
    assert {r.move for r in report.moves if r.verdict == "fail"} == caught
    assert {r.move for r in report.moves if r.verdict == "not-run"} == gated_by(caught)
    flawed = set(MUTANT_TABLE["mutants"].get(mutant, {}).get("probes", []))
    assert {p.probe for p in report.probes if not p.ok} == flawed


def test_a_missing_signature_check_lets_the_edited_payload_through(mutant_http_with) -> None:
    # The engine edits work.env in the mutant's readable m1 payload: unchecked, the edit is believed.
    with mutant_http_with("no-signature") as peer:
        row = next(r for r in check_http(peer).moves if r.move == EDITED.slug)
    assert (row.observed, row.verdict) == ("completed", "fail")
    assert "The server answered: result: deployed to prod" in row.detail


# -- the app's own servers pass everything --------------------------------------------------------


class MovableClock:
    """The app's MRTR_CLOCK and the peers' `clock` in one: wire.play and Timing both move it."""

    def __init__(self) -> None:
        self.fake = FakeClock(time.time())

    @property
    def offset(self) -> float:
        return 0.0

    def advance(self, seconds: float) -> None:
        self.fake.advance(seconds)


@pytest.fixture
def app_peer(make_app: Callable[..., Flask]) -> Iterator[launch.HttpPeer]:
    """The real app (create_app), its /mcp on a loopback port, on a clock the test moves."""
    clock = MovableClock()
    with serve(make_app(MRTR_TICKET_TTL=120, MRTR_CLOCK=clock.fake)) as live:
        yield launch.HttpPeer("app", live.url + "/mcp", clock, 120.0)  # type: ignore[arg-type]


def test_the_apps_own_mcp_passes_every_move_and_probe_as_the_same_moves_sent_by_hand_do(app_peer) -> None:
    fake = app_peer.clock.fake  # type: ignore[attr-defined]
    with closing(HttpTarget(app_peer.url, app_peer.tokens, timeout=30,
                            timing=Timing(clock=fake, sleep=fake.advance))) as target:
        report = run_check(target)
    assert report.ok, report.table()
    assert [r.verdict for r in report.moves] == ["pass"] * len(MOVES)
    assert all(p.ok for p in report.probes)
    # Move by move, the checker saw what the same move sent by hand gets.
    by_hand = {move.slug: wire.play(app_peer, move).outcome for move in MOVES}
    assert {r.move: r.observed for r in report.moves} == by_hand


def test_mrtr_serve_over_stdio_passes_every_move_and_probe(tmp_path: Path) -> None:
    # `python -m mrtr serve` reads the system clock (no hook): a 2 s ticket, so the late wait is real but short.
    env = {**os.environ, "MRTR_TICKET_TTL": "2", "MRTR_STORE": "sqlite", "MRTR_STORE_PATH": str(tmp_path / "r.db"),
           "MRTR_SECRET_KEYS": "serve-test-key-0123456789abcdef0123456789abcdef"}
    with closing(StdioTarget([sys.executable, "-m", "mrtr", "serve"], env=env, timeout=30)) as target:
        report = run_check(target)
    assert report.ok, report.table()
    assert findings(report)["moves"] == {}
    assert all(p.ok for p in report.probes)


def test_every_page_links_to_check_in_the_site_navigation(client: FlaskClient) -> None:
    for path in ("/", "/playground", "/check"):
        page = client.get(path)
        assert page.status_code == 200, path
        nav = page.get_data(as_text=True).split('<nav class="site-nav"', 1)[1].split("</nav>", 1)[0]
        assert '<a href="/check">Check a server</a>' in nav, path
