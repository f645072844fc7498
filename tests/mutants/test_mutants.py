"""The mutation suite: the checker flags each small flawed server exactly where its one mistake shows, and passes
the sound controls, over HTTP (servers in process threads) and over stdio (one process per principal).

The expected sets are data (expectations.toml), checked against the catalogue: every slug there is a move of
moves/moves.toml, and a move that flags a mutant without being listed fails with a message saying which move
and what it shows. No test waits for real: the late move moves the server's clock (tests/mutants/harness.py).
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from moves.catalog import Move, load_moves
from moves.check import Report
from moves.invariants import INVARIANTS
from moves.probes import PROBES
from moves.target import Outcome
from mrtr import CHECKS
from tests.check.catalogue import caught_by, gated_by, select, with_copies
from tests.mutants.harness import check_http, check_stdio
from tests.mutants.server import MUTANTS, SOUND

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TABLE: dict[str, Any] = tomllib.loads((HERE / "expectations.toml").read_text(encoding="utf-8"))
CATALOGUE = load_moves()
MOVES = {m.slug: m for m in CATALOGUE}
TRANSPORTS = ("http", "stdio")


def expected(name: str, transport: str, moves: Sequence[Move] = CATALOGUE) -> dict[str, set[str]]:
    """The table's sets for one mutant over one transport: `fail`, `probes`, `not_run`, with selectors matched
    against the catalogue and `lacks` expanded from it (the moves a server without that defence fails, and those
    they gate)."""
    entry = TABLE["mutants"].get(name, {})
    over = {**entry, **entry.get(transport, {})} if isinstance(entry.get(transport), dict) else entry
    sets = {key: select(over.get(key, []), moves) for key in ("fail", "not_run")}
    sets["probes"] = set(over.get("probes", []))
    sets["explored"] = set(over.get("explored", []))
    caught = set().union(*(caught_by(check, moves) for check in over.get("lacks", [])))
    sets["fail"] |= caught
    sets["not_run"] |= gated_by(caught, moves) - caught
    return sets


def flagged(report: Report) -> dict[str, set[str]]:
    return {"fail": {r.move for r in report.moves if r.verdict == "fail"},
            "probes": {p.probe for p in report.probes if not p.ok},
            "not_run": {r.move for r in report.moves if r.verdict == "not-run"},
            "explored": {f.invariant for f in (report.explored.findings if report.explored else [])}}


def explain(name: str, want: dict[str, set[str]], got: dict[str, set[str]], report: Report) -> str:
    """Why a mutant's flags differ from the table, move by move, in words a maintainer can act on."""
    lines = [f"the checker's flags on mutant {name!r} differ from tests/mutants/expectations.toml:"]
    for key in want:
        for slug in sorted(got[key] - want[key]):
            shows = f" (it shows that {MOVES[slug].shows})" if slug in MOVES and MOVES[slug].shows else ""
            lines.append(f"  {key}: {slug}{shows} flags it but is not listed: a move added to the catalogue after "
                         "the table was written? If it really shows this mistake, list it there")
        for slug in sorted(want[key] - got[key]):
            lines.append(f"  {key}: {slug} is listed but did not flag it")
    return "\n".join(lines) + "\n\n" + report.table()


def assert_flags(name: str, transport: str, report: Report, moves: Sequence[Move] = CATALOGUE) -> None:
    want, got = expected(name, transport, moves), flagged(report)
    assert got == want, explain(name, want, got, report)
    assert report.ok == (not want["fail"] and not want["probes"] and not want["explored"])
    # A flagged move fails with evidence: what the server really answered, never a transport error.
    for row in report.moves:
        if row.verdict == "fail":
            assert row.observed in {str(o) for o in (Outcome.COMPLETED, Outcome.REFUSED, Outcome.ASKED_AGAIN,
                                                       Outcome.ENDED)}, row
        if row.verdict == "not-run":
            assert row.detail.startswith("not shown: "), row


# -- the table is about the catalogue's moves and this suite's servers ---------------------------------


def test_the_table_names_every_server_and_only_catalogue_moves_and_known_probes() -> None:
    assert set(TABLE["mutants"]) == set(MUTANTS) and set(TABLE["controls"]) == set(SOUND)
    assert len(MUTANTS) >= 12
    for name in MUTANTS:
        assert TABLE["mutants"][name]["mistake"], name
        assert set(TABLE["mutants"][name].get("lacks", [])) <= set(CHECKS), name
        for transport in TRANSPORTS:
            sets = expected(name, transport)
            assert sets["fail"] | sets["not_run"] <= set(MOVES), (name, transport)
            assert sets["probes"] <= set(PROBES), (name, transport)
            assert sets["explored"] <= set(INVARIANTS), (name, transport)
            assert not sets["fail"] & sets["not_run"], name
            # A mutant flagged nowhere must say why (a gap in the catalogue, written down, counted in the score).
            flagged_somewhere = bool(sets["fail"] or sets["probes"] or sets["not_run"] or sets["explored"])
            entry = TABLE["mutants"][name]
            uncaught = entry.get(transport, {}).get("uncaught", entry.get("uncaught"))
            assert flagged_somewhere != bool(uncaught), (name, transport)


# -- the runs -------------------------------------------------------------------------------------------


def assert_sound(name: str, report: Report) -> None:
    """A control passes every move and probe, but the moves its table entry says cannot be shown (not-run, with the
    reason and the --answers hint): never a fail, never a warning."""
    not_run = select(TABLE["controls"][name].get("not_run", []), CATALOGUE)
    assert report.ok and all(p.ok for p in report.probes), report.table()
    assert report.explored is not None and not report.explored.findings and not report.explored.why_not, \
        report.table()
    # No warning it does not deserve: none about its ticket, and every invariant judged unless a round's answers
    # could only be guessed (then not judged, with the --answers hint, as its not-run moves are).
    assert report.warnings == [], report.warnings
    assert all("free text" in why for why in report.explored.not_judged) and bool(report.explored.not_judged) == \
        bool(not_run), report.explored.not_judged
    assert {r.move for r in report.moves if r.verdict != "pass"} == not_run, report.table()
    for row in report.moves:
        if row.move in not_run:
            assert row.verdict == "not-run" and "--answers" in row.detail, row


@pytest.mark.parametrize("name", list(SOUND))
def test_the_sound_controls_pass_everything_over_http(name: str) -> None:
    assert_sound(name, check_http(name, late_after=SOUND[name].late_after))


@pytest.mark.parametrize("name", list(SOUND))
def test_the_sound_controls_pass_everything_over_stdio(name: str, tmp_path: Path) -> None:
    assert_sound(name, check_stdio(name, tmp_path, late_after=SOUND[name].late_after))


def test_a_bad_ticket_answered_with_a_fresh_question_fails_with_the_reason() -> None:
    """State that fails verification MUST be rejected (the official suite's tampered-state scenario takes only a
    JSON-RPC error): a fresh question in its place is a FAIL, with the server's own answer as evidence."""
    report = check_http("starts-over")
    refused = {slug for slug, m in MOVES.items() if m.expect == Outcome.REFUSED}
    started_over = [r for r in report.moves if r.observed == "asked-again" and r.move in refused]
    assert started_over and all(r.verdict == "fail" and "input_required again" in r.detail for r in started_over)


def test_a_tampered_ticket_refused_as_a_tool_result_fails_and_names_the_official_scenario() -> None:
    """As strict as the official suite where both judge: its tampered-state scenario accepts only a JSON-RPC
    error, so an isError refusal of a ticket that fails its signature is a FAIL, with the reply as evidence and a
    Fix naming the scenario; a bad ticket of another kind refused the same way still holds."""
    report = check_http("refuses-as-tool-result")
    rows = {r.move: r for r in report.moves}
    signed = [slug for slug, m in MOVES.items() if "signature" in m.refused_by]
    assert signed and all(rows[slug].verdict == "fail" for slug in signed)
    for slug in signed:
        assert "isError result: Invalid or expired requestState" in rows[slug].detail
        assert "Fix: refuse a ticket that fails verification with a JSON-RPC error" in rows[slug].detail
        assert "input-required-result-tampered-state" in rows[slug].detail
    others = [slug for slug, m in MOVES.items() if m.refused_by and "signature" not in m.refused_by]
    assert others and all(rows[slug].verdict == "pass" for slug in others)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_mutant_is_flagged_exactly_where_its_mistake_shows_over_stdio(name: str, tmp_path: Path) -> None:
    assert_flags(name, "stdio", check_stdio(name, tmp_path))


@pytest.fixture(scope="module")
def copied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Move, ...]:
    """The catalogue plus a one-entry copy of every move in it (notes and all), as an author adding a move of an
    existing kind writes it."""
    return with_copies(CATALOGUE, tmp_path_factory.mktemp("copies") / "moves.toml")


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_mutant_is_flagged_exactly_where_its_mistake_shows_over_http(name: str,
                                                                          copied: tuple[Move, ...]) -> None:
    """Played on the catalogue plus a one-entry copy of each of its moves, so that the same run also shows that
    adding a move of an existing kind needs no edit of expectations.toml: its selectors, read over the longer
    catalogue, name every copy the checker flags, the copy of the first (honest) move included, which unlike the
    original is not the first call of its request on a server that remembers requests."""
    assert len(copied) == 2 * len(CATALOGUE)
    assert_flags(name, "http", check_http(name, moves=copied), copied)


def test_a_process_bound_key_is_never_a_pass_for_the_principal_over_stdio(tmp_path: Path) -> None:
    stolen = {slug for slug, m in MOVES.items() if m.sender == "other"}
    rows = {r.move: r for r in check_stdio("process-key", tmp_path).moves}
    for slug in stolen:
        assert rows[slug].verdict == "not-run" and "only work where they were minted" in rows[slug].detail


def test_the_uncaught_mutant_is_caught_by_a_move_the_vocabulary_already_has() -> None:
    """The mutants the table calls uncaught are a gap of the catalogue, not of the engine: one more [[moves]]
    entry of an existing kind (answers sent without any ticket) catches the pre-answered server, and a sound
    server holds it."""
    honest = next(m for m in MOVES.values() if m.expect == Outcome.COMPLETED and m.before is None
                  and m.ticket == "as-issued" and m.sender == "owner" and m.request == "same")
    no_ticket = dataclasses.replace(honest, slug="answers-without-a-ticket", ticket="absent",
                                    expect=Outcome.NOT_DONE, stops_at="", notes=())
    catalogue = (*MOVES.values(), no_ticket)
    for name, caught in (("pre-answered", True), ("sound", False)):
        row = next(r for r in check_http(name, moves=catalogue).moves if r.move == no_ticket.slug)
        assert (row.verdict == "fail") == caught and (row.verdict == "pass") != caught, row


# -- the score, as the documentation states it (docs/checker/what-it-sees.md) ----------------------------


def score(transport: str) -> tuple[int, int]:
    """(caught, mutants): a mutant is caught when the report is not ok (a move fails or a probe does not hold)."""
    caught = sum(bool(expected(name, transport)["fail"] or expected(name, transport)["probes"]
                      or expected(name, transport)["explored"]) for name in MUTANTS)
    return caught, len(MUTANTS)


def test_the_documentation_states_the_mutation_score() -> None:
    http, stdio = score("http"), score("stdio")
    sentence = (f"Mutation score: {http[0]} of {http[1]} mutants caught over HTTP, {stdio[0]} of {stdio[1]} "
                "over stdio")
    page = (ROOT / "docs" / "checker" / "what-it-sees.md").read_text(encoding="utf-8")
    assert sentence in page, sentence
