"""The "Misuse the ticket" playground through Flask's test client.

Every move is played against the real server under each switch, and the page is read the way a
browser would (BeautifulSoup on the HTML). The "run it yourself" scripts are run for real against
/mcp in tests/web/test_lab_safety.py.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from bs4 import BeautifulSoup, Tag
from flask import Flask
from flask.testing import FlaskClient

from moves.catalog import holds
from moves.target import Outcome
from mrtr import CHECK_TITLES, CHECKS
from mrtr.errors import FROZEN_TICKET_MESSAGE, INVALID_INPUT_RESPONSE
from tests.web.helpers import honest_move, move_where, rendered, stopped_move
from web.playground.switches import TOOLS
from web.playground.words import tell
from web.site.content import load_course
from web.site.moveviews import grouped

MOVES = {m.slug: m for m in load_course().moves}
HX = {"HX-Request": "true"}
DEFAULT = {"single_use": "1", "sealed": "0", "no_signature": "0", "offset": "0"}
SWITCHES = {
    "default": {},
    "single-use-off": {"single_use": "0"},
    "no-signature": {"no_signature": "1"},
    "sealed": {"sealed": "1"},
}
#: (what a sound server does, the check that fails first or None) for every move under every switch, from
#: moves.toml: single use off lets the replays through, no signature lets through what only the signature
#: refuses (an edited ticket; junk is refused before any check can read it); the rest end as by default.
EXPECTED: dict[str, dict[str, tuple[str, str | None]]] = {
    "default": {m.slug: (str(m.expect), m.stops_at or None) for m in MOVES.values()}}
EXPECTED["single-use-off"] = {**EXPECTED["default"], **{m.slug: ("completed", None) for m in MOVES.values()
                                                         if m.is_replay}}
EXPECTED["no-signature"] = {**EXPECTED["default"], **{m.slug: ("completed", None) for m in MOVES.values()
                                                       if m.refused_by == {"signature"}}}
EXPECTED["sealed"] = dict(EXPECTED["default"])

HONEST = honest_move()
EDITED = stopped_move("signature")  # the ticket's payload edited, the old signature kept
STOLEN = stopped_move("principal")
LATE = stopped_move("expiry")
REPLAY = stopped_move("single-use")  # the same retry sent again
ASKS_AGAIN = move_where(lambda m: m.expect == Outcome.ASKED_AGAIN and m.before is None)

DEPLOY = TOOLS["deploy"].words()  # the default playground, the deck and the figures play deploy


def soup(response: Any) -> BeautifulSoup:
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


def outcomes(page: BeautifulSoup) -> dict[str, str]:
    checks = page.select("#pg-result ol.checks li[data-check]") or page.select("ol.checks li[data-check]")
    return {li["data-check"]: li["data-outcome"] for li in checks}


def expected_outcomes(switch: str, verdict: str, stops_at: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    reached = True
    for name in CHECKS:
        if not reached:
            out[name] = "skipped"
        elif name == stops_at:
            out[name] = "fail"
            reached = False
        else:
            out[name] = "pass"
    if switch == "no-signature" and stops_at != "signature":  # what cannot be opened at all still fails there
        out["signature"] = "skipped"
    if switch == "single-use-off" and out["single-use"] == "pass":
        out["single-use"] = "skipped"
    return out


def play(client: FlaskClient, slug: str, htmx: bool = True, **switches: str) -> Any:
    return client.post(f"/playground/moves/{slug}", data={**DEFAULT, **switches}, headers=HX if htmx else {})


def custom_form(client: FlaskClient, **switches: str) -> dict[str, str]:
    """The custom move's form exactly as the page pre-fills it."""
    page = soup(client.get("/playground", query_string={**DEFAULT, **switches}))
    form = page.select_one("form.pg-custom-form")
    assert form is not None
    data: dict[str, str] = {}
    for field in form.select("input, textarea, select"):
        name = field.get("name")
        if not name:
            continue
        if field.name == "textarea":
            data[name] = field.get_text()
        elif field.name == "select":
            chosen = field.select_one("option[selected]") or field.select_one("option")
            data[name] = chosen["value"]
        elif field.get("type") == "radio":
            if field.has_attr("checked"):
                data[name] = field["value"]
        else:
            data[name] = field.get("value", "")
    return data


# -- every move under every switch -----------------------------------------------------------------


@pytest.mark.parametrize("switch", list(SWITCHES))
@pytest.mark.parametrize("slug", list(MOVES))
def test_every_move_under_every_switch(client: FlaskClient, slug: str, switch: str) -> None:
    response = play(client, slug, **SWITCHES[switch])
    assert response.status_code == 200  # the experiment ran, whatever the protocol decided
    page = soup(response)
    expected, stops_at = EXPECTED[switch][slug]
    outcome = page.select_one("[data-verdict]")
    assert outcome is not None
    verdict = outcome["data-verdict"]
    # "not-done" is an expectation, never a verdict: any refusal, ending or fresh question holds
    assert holds(Outcome(expected), Outcome(verdict))[0] and verdict not in ("not-done", "not-run", "error"), verdict
    if verdict == "ended":
        stops_at = None
    assert outcomes(page) == expected_outcomes(switch, verdict, stops_at)
    failure = page.select_one("[data-first-failure]")
    if stops_at:
        assert failure is not None and failure["data-first-failure"] == stops_at
    text = page.select_one("#pg-verdict").get_text(" ", strip=True)
    if verdict == "completed":
        assert "deployed to" in text and "nothing was deployed" not in text
    elif verdict == "ended":
        assert "nothing was deployed" in text
    elif verdict == "refused":
        assert f"refused at {CHECK_TITLES[stops_at]}" in text
        answer = json.loads(page.select_one(".pg-answer pre").get_text())
        log = page.select_one(".pg-log").get_text(" ", strip=True)
        if stops_at == "answer":  # a malformed answer gets an error of its own, never the frozen ticket refusal
            assert answer["error"]["code"] == -32602 and answer["error"]["message"] != FROZEN_TICKET_MESSAGE
            assert answer["error"]["data"] == {"reason": INVALID_INPUT_RESPONSE, "key": "confirm"}
            assert "requestState rejected" not in log
        else:
            assert answer["error"] == {"code": -32602, "message": FROZEN_TICKET_MESSAGE,
                                       "data": {"reason": "invalid_request_state"}}
            assert f"requestState rejected at “{CHECK_TITLES[stops_at]}”" in log
    else:
        assert "asked again" in text


@pytest.mark.parametrize("slug", list(MOVES))
def test_every_move_plays_without_javascript(app: Flask, client: FlaskClient, slug: str) -> None:
    """The form posts, the whole page comes back with the result, its card marked, every step listed."""
    with rendered(app) as names:
        response = play(client, slug, htmx=False)
    assert response.status_code == 200 and names == ["playground/show.html"]
    page = soup(response)
    result = page.select_one("#pg-result [data-result]")
    assert result["data-result"] == slug and holds(MOVES[slug].expect, Outcome(result["data-verdict"]))[0]
    assert "pg-move--current" in page.select_one(f"#move-{slug}")["class"]
    assert page.select_one("#pg-status").get_text(strip=True).startswith("Verdict:")
    messages = [line for line in page.select_one("#pg-sent-curl").get_text().splitlines()
                if re.match(r"# (Retry|Message) \d+ of \d+", line)]
    assert len(messages) == len(page.select(".pg-earlier")) + 1  # the script replays every step shown


def test_only_the_moves_expected_to_deploy_do_with_default_switches(client: FlaskClient) -> None:
    deployed = [slug for slug in MOVES if soup(play(client, slug)).select_one("[data-verdict]")["data-verdict"]
                == "completed"]
    assert deployed == [m.slug for m in MOVES.values() if m.expect == "completed"]
    assert HONEST.slug in deployed


def test_an_edited_ticket_without_the_signature_check_deploys_what_the_edit_says(client: FlaskClient) -> None:
    page = soup(play(client, EDITED.slug, no_signature="1"))
    assert page.select_one("#pg-verdict").get_text(" ", strip=True).endswith(f"deployed to {EDITED.edit_value}")
    payload = json.loads(page.select_one(".pg-outcome [data-payload=decoded]").get_text())
    node = payload
    for key in EDITED.edit_path.split("."):
        node = node[key]
    assert node == EDITED.edit_value


def test_a_stolen_ticket_is_sent_with_the_other_users_bearer_token(client: FlaskClient) -> None:
    page = soup(play(client, STOLEN.slug))
    assert "Authorization: Bearer alice-token" in page.select_one(".pg-sent").get_text()
    sent = json.loads(page.select_one("#pg-sent-json").get_text())
    assert sent["params"]["requestState"].startswith("t1.")
    assert sent["id"] == STOLEN.request_id
    detail = page.select_one("li[data-check=principal] .check-detail").get_text()
    assert "bound to 'bob'" in detail and "'alice'" in detail


@pytest.mark.parametrize("slug", [m.slug for m in MOVES.values() if m.before is not None])
def test_a_move_played_after_another_reports_the_earlier_retry_too(client: FlaskClient, slug: str) -> None:
    move, first = MOVES[slug], MOVES[slug].before
    page = soup(play(client, slug))
    earlier = page.select(".pg-earlier")
    assert earlier, "the retry sent first is on the page"
    said = earlier[-1].get_text(" ", strip=True)
    assert f"t = {first.at:g} s" in said and f"“{first.title}”" in said
    sent_at = page.select_one(".pg-sent .pg-at").get_text()
    assert f"t = {move.at:g} s" in sent_at
    if first.expect == "completed":
        assert "deployed to staging" in said
        log = page.select_one(".pg-log").get_text(" ", strip=True)
        assert log.count("requestState accepted") >= 1


@pytest.mark.parametrize("slug", [m.slug for m in MOVES.values() if "unreadable" in m.refused_by])
def test_a_junk_move_shows_every_shape_it_sent(client: FlaskClient, slug: str) -> None:
    from moves.catalog import JUNK_SHAPES

    page = soup(play(client, slug))
    earlier = [li.get_text(" ", strip=True) for li in page.select(".pg-earlier")]
    assert len(earlier) == len(JUNK_SHAPES) - 1  # the last shape is the one the panels show
    for (name, _shape), line in zip(JUNK_SHAPES, earlier, strict=False):
        assert f"junk ticket ({name})" in line and "refused at" in line


NOTE_SWITCHES = [dict(zip(("single_use", "sealed", "no_signature", "offset"), combo, strict=True))
                 for combo in itertools.product("10", "01", "01", ("0", "150"))]


@pytest.mark.parametrize("switches", NOTE_SWITCHES, ids=lambda d: "-".join(f"{k}{v}" for k, v in d.items()))
def test_move_notes_follow_the_result(client: FlaskClient, switches: dict[str, str]) -> None:
    """Issue 11: a note is written for the outcome the move got under the switches, never a static one."""
    for slug in MOVES:
        page = soup(play(client, slug, **switches))
        note = page.select_one(f"[data-note='{slug}']")
        assert note is not None, f"{slug} under {switches} has no note"
        assert note["data-note-outcome"] == page.select_one("[data-verdict]")["data-verdict"]
        failure = page.select_one("[data-first-failure]")
        assert note["data-note-stopped"] == (failure["data-first-failure"] if failure else "")


@pytest.mark.parametrize(("move", "switches", "outcome", "stopped_at", "sealed"), [
    (EDITED, {"no_signature": "1"}, Outcome.COMPLETED, None, False),
    (EDITED, {"sealed": "1"}, Outcome.REFUSED, "signature", True),
    (EDITED, {}, Outcome.REFUSED, "signature", False),
    (HONEST, {"offset": "150"}, Outcome.REFUSED, "expiry", False),
    (REPLAY, {"single_use": "0"}, Outcome.COMPLETED, None, False),
], ids=["edited-no-signature", "edited-sealed", "edited", "honest-late", "replay-single-use-off"])
def test_the_note_says_what_happened(client: FlaskClient, move, switches: dict[str, str], outcome: Outcome,
                                     stopped_at: str | None, sealed: bool) -> None:
    """The note shown is the one moves.toml wrote for the outcome the switches lead to, not the usual one."""
    written = move.note_for(outcome, stopped_at, sealed=sealed)
    assert written is not None
    if switches:  # a switch that changes what happens changes the note too
        assert written != move.note_for(move.expect, move.stops_at or None)
    shown = soup(play(client, move.slug, **switches)).select_one(f"[data-note='{move.slug}']").get_text()
    assert written.text in shown


def test_clock_offset_makes_the_honest_retry_late(client: FlaskClient) -> None:
    page = soup(play(client, HONEST.slug, offset="150"))
    assert outcomes(page)["expiry"] == "fail"
    assert f"t = {HONEST.at + 150:g} s" in page.select_one(".pg-sent").get_text()


# -- the page, the fragments and the URL -----------------------------------------------------------


def test_full_page_has_round_one_and_every_move(app: Flask, client: FlaskClient) -> None:
    with rendered(app) as names:
        response = client.get("/playground")
    assert response.status_code == 200 and names == ["playground/show.html"]
    page = soup(response)
    buttons = page.select("[data-move]")
    assert sorted(b["data-move"] for b in buttons) == sorted(MOVES)  # each move once
    groups = page.select("[data-move-group]")
    assert [g["data-move-group"] for g in groups] == [g.key for g in grouped(MOVES.values())]
    for group, expected in zip(groups, grouped(MOVES.values()), strict=True):
        assert [b["data-move"] for b in group.select("[data-move]")] == [m.slug for m in expected.moves]
        assert group.select_one(f"#pg-moves-{expected.key}").get_text(strip=True) == expected.title
    for button in buttons:
        move = MOVES[button["data-move"]]
        assert button.get_text(strip=True) == move.title
        assert button.find_parent("form")["method"] == "post"
        assert button.find_parent("form")["action"].startswith(f"/playground/moves/{move.slug}")
        summary = page.select_one(f"#{button['aria-describedby']}")
        assert tell(move.summary, DEPLOY) in summary.get_text(" ", strip=True)
    sent = json.loads(page.select_one("#pg-round-one-sent").get_text())
    assert sent["params"]["arguments"] == {"env": "staging"} and "requestState" not in sent["params"]
    answer = json.loads(page.select(".pg-round-one pre")[1].get_text())
    assert answer["result"]["resultType"] == "input_required"
    ticket = answer["result"]["requestState"]
    assert page.select_one(".pg-round-one .pg-token").get_text() == ticket
    payload = json.loads(page.select_one(".pg-round-one [data-payload=decoded]").get_text())
    assert payload["sub"] == "bob" and payload["work"] == {"env": "staging"}
    assert page.select_one("#pg-result [data-verdict]") is None


def test_every_move_form_carries_the_switches(client: FlaskClient) -> None:
    page = soup(client.get("/playground", query_string={"single_use": "0", "sealed": "1", "offset": "30"}))
    for form in page.select("form[hx-post]"):
        hidden = {i["name"]: i["value"] for i in form.select("input[type=hidden]") if i["name"] in DEFAULT}
        assert hidden == {"single_use": "0", "sealed": "1", "no_signature": "0", "offset": "30"}
        assert form["hx-target"] == "#pg-result" and form["hx-swap"] == "innerHTML"


def test_htmx_post_returns_only_the_result_fragment(app: Flask, client: FlaskClient) -> None:
    with rendered(app) as names:
        response = play(client, STOLEN.slug)
    assert names == ["playground/_result.html"]
    assert "HX-Request" in response.headers.get("Vary", "")
    pushed = f"/playground?single_use=1&sealed=0&no_signature=0&offset=0&move={STOLEN.slug}"
    assert response.headers["HX-Push-Url"] == pushed
    body = response.get_data(as_text=True)
    assert "<html" not in body and 'id="pg-verdict"' in body
    status = soup(response).select_one("#pg-status[hx-swap-oob]")
    assert status is not None and "refused at Principal is the caller" in status.get_text()


def test_no_js_post_returns_the_full_page_with_the_result(app: Flask, client: FlaskClient) -> None:
    with rendered(app) as names:
        response = play(client, LATE.slug, htmx=False)
    assert response.status_code == 200 and names == ["playground/show.html"]
    page = soup(response)
    assert page.select_one("#pg-result [data-verdict]")["data-verdict"] == "refused"
    assert outcomes(page)["expiry"] == "fail"
    assert "refused at Not expired" in page.select_one("#pg-status").get_text()
    assert page.select_one("#pg-status[hx-swap-oob]") is None
    assert "pg-move--current" in page.select_one(f"#move-{LATE.slug}")["class"]


def test_get_with_a_move_is_a_shareable_result(client: FlaskClient) -> None:
    page = soup(client.get(f"/playground?single_use=0&move={REPLAY.slug}"))
    assert page.select_one("#pg-result [data-verdict]")["data-verdict"] == "completed"
    assert page.select_one(".pg-switches input[name=move]")["value"] == REPLAY.slug


def test_switching_with_htmx_swaps_the_widget_and_pushes_a_clean_url(app: Flask, client: FlaskClient) -> None:
    with rendered(app) as names:
        response = client.get("/playground?single_use=0&single_use=1&sealed=0&sealed=1&no_signature=0&offset=5",
                              headers=HX)
    assert names == ["playground/_playground.html"]
    assert response.headers["HX-Push-Url"] == "/playground?single_use=1&sealed=1&no_signature=0&offset=5"
    page = soup(response)
    assert page.select_one("#pg-single-use").has_attr("checked") and page.select_one("#pg-sealed").has_attr("checked")


def test_embedded_widget_does_not_push_urls(client: FlaskClient) -> None:
    response = client.get("/playground?embedded=1&sealed=1", headers=HX)
    assert "HX-Push-Url" not in response.headers
    page = soup(response)
    assert page.select_one("#pg-moves-heading").name == "h3"
    assert page.select_one("form[hx-post] input[name=embedded]")["value"] == "1"
    response = client.post("/playground/moves/honest", data={**DEFAULT, "embedded": "1"}, headers=HX)
    assert "HX-Push-Url" not in response.headers


def test_sealed_mode_hides_the_payload(client: FlaskClient) -> None:
    page = soup(client.get("/playground?sealed=1"))
    ticket = page.select_one(".pg-round-one .pg-token").get_text()
    assert ticket.startswith("s1.")
    assert page.select_one("[data-payload=decoded]") is None
    assert page.select_one(".pg-round-one [data-payload=sealed]") is not None
    result = soup(play(client, EDITED.slug, sealed="1"))
    assert result.select_one("[data-payload=decoded]") is None
    assert "authentication tag" in result.select_one("li[data-check=signature]").get_text()


@pytest.mark.parametrize("query", ["single_use=2", "sealed=yes", "offset=-1", "offset=601", "offset=abc",
                                   "move=nope"])
def test_malformed_switches_are_a_400(client: FlaskClient, query: str) -> None:
    response = client.get(f"/playground?{query}")
    assert response.status_code == 400
    assert soup(response).select_one("[data-error]") is not None


def test_malformed_switches_on_a_move_are_a_400_fragment(client: FlaskClient) -> None:
    response = play(client, HONEST.slug, offset="ten")
    assert response.status_code == 400
    assert "offset must be" in soup(response).select_one("[data-error]").get_text()


def test_unknown_move_is_a_404(client: FlaskClient) -> None:
    assert client.post("/playground/moves/nope", data=DEFAULT).status_code == 404


def test_ids_are_unique_and_do_not_clash_with_the_lesson(client: FlaskClient) -> None:
    for response in (client.get(f"/playground?move={REPLAY.slug}"), client.get("/lessons/when-the-server-needs-input")):
        ids = [e["id"] for e in soup(response).select("[id]")]
        assert sorted({i for i in ids if ids.count(i) > 1}) == []
    widget = soup(client.get("/playground")).select_one("[data-playground]")
    assert widget["id"] == "pg-widget"
    assert soup(client.get("/playground")).select_one(".pg-switches")["hx-target"] == "#pg-widget"


def test_page_obeys_the_csp(client: FlaskClient) -> None:
    for response in (client.get(f"/playground?move={STOLEN.slug}"), play(client, REPLAY.slug),
                     client.post("/playground/custom", data={**DEFAULT, "arguments": "{"}, headers=HX)):
        body = response.get_data(as_text=True)
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", body)
        assert not re.search(r"\sstyle\s*=", body)
        assert not re.search(r"\son[a-z]+\s*=", body)


# -- the custom move -------------------------------------------------------------------------------


def test_custom_move_as_prefilled_deploys(client: FlaskClient) -> None:
    form = custom_form(client)
    assert form["arguments"] == '{"env": "staging"}' and form["answer"] == "accept"
    assert form["ticket"].startswith("t1.")
    page = soup(client.post("/playground/custom", data=form, headers=HX))
    assert page.select_one("[data-verdict]")["data-verdict"] == "completed"
    sent = json.loads(page.select_one("#pg-sent-json").get_text())
    assert sent["params"]["requestState"] == form["ticket"]
    assert sent["params"]["inputResponses"] == {"confirm": {"action": "accept", "content": {"confirm": True}}}


@pytest.mark.parametrize(("changes", "stops_at", "verdict"), [
    ({"token_choice": "alice-token"}, "principal", "refused"),
    ({"token_other": "alice-token"}, "principal", "refused"),
    ({"at": "121"}, "expiry", "refused"),
    ({"arguments": '{"env": "prod"}'}, "request", "refused"),
    ({"answer": "none"}, "answer", "asked-again"),
    ({"answer": "raw", "answer_raw": '{"confirm": {"action": "accept"}}'}, "answer", "refused"),
    ({"answer": "raw", "answer_raw": '{"other": {"action": "accept"}}'}, "answer", "asked-again"),
    ({"ticket": "t1.not-a-ticket.sig"}, "signature", "refused"),
])
def test_custom_move_reaches_each_check(client: FlaskClient, changes: dict[str, str], stops_at: str,
                                        verdict: str) -> None:
    response = client.post("/playground/custom", data={**custom_form(client), **changes}, headers=HX)
    assert response.status_code == 200
    page = soup(response)
    assert page.select_one("[data-verdict]")["data-verdict"] == verdict
    assert outcomes(page)[stops_at] == "fail"


def test_custom_decline_is_not_a_deploy(client: FlaskClient) -> None:
    page = soup(client.post("/playground/custom", data={**custom_form(client), "answer": "decline"}, headers=HX))
    assert page.select_one("[data-verdict]")["data-verdict"] == "completed"  # an answered question, not a deploy
    assert "nothing was deployed" in page.select_one("#pg-verdict").get_text()


def test_custom_without_a_ticket_runs_no_checks(client: FlaskClient) -> None:
    page = soup(client.post("/playground/custom", data={**custom_form(client), "ticket": ""}, headers=HX))
    assert page.select_one("[data-verdict]")["data-verdict"] == "asked-again"
    assert set(outcomes(page).values()) == {"skipped"}


def test_custom_non_object_arguments_are_refused_in_band(client: FlaskClient) -> None:
    response = client.post("/playground/custom", data={**custom_form(client), "arguments": "[1, 2]"}, headers=HX)
    assert response.status_code == 200  # valid JSON: the server judged it
    page = soup(response)
    assert "params.arguments must be an object" in page.select_one(".pg-answer").get_text()


@pytest.mark.parametrize(("changes", "message"), [
    ({"arguments": '{"env": "staging"'}, "Arguments is not valid JSON"),
    ({"arguments": ""}, "Arguments is not valid JSON"),
    ({"arguments": "[" * 5000 + "]" * 5000}, "Arguments"),
    ({"answer": "raw", "answer_raw": "{confirm: yes}"}, "The raw inputResponses is not valid JSON"),
    ({"answer": "raw", "answer_raw": ""}, "raw inputResponses box is empty"),
    ({"answer": "maybe"}, "Answer must be one of"),
    ({"at": "soon"}, "Time must be a number"),
    ({"at": "-5"}, "Time must be between"),
    ({"at": "nan"}, "Time must be between"),
    ({"token_other": "mallory-token"}, "names nobody"),
    ({"token_other": "bob-token\r\nX-Evil: 1"}, "control characters"),
    ({"minted_at": "yesterday"}, "minted_at"),
])
def test_custom_move_bad_input_is_a_specific_400(app: Flask, client: FlaskClient, changes: dict[str, str],
                                                 message: str) -> None:
    with rendered(app) as names:
        response = client.post("/playground/custom", data={**custom_form(client), **changes}, headers=HX)
    assert response.status_code == 400
    assert names[-1] == "playground/_error.html"
    error = soup(response).select_one("[data-error][role=alert]")
    assert error is not None and message in error.get_text(" ", strip=True)


def test_custom_bad_json_without_js_keeps_the_learners_input(client: FlaskClient) -> None:
    form = {**custom_form(client), "arguments": '{"env": <b>}'}
    response = client.post("/playground/custom", data=form)
    assert response.status_code == 400
    page = soup(response)
    assert "Arguments is not valid JSON" in page.select_one("#pg-result [data-error]").get_text()
    assert page.select_one("#pg-custom-arguments").get_text() == '{"env": <b>}'
    assert "<b>}" not in response.get_data(as_text=True)


def test_hostile_strings_are_escaped(client: FlaskClient) -> None:
    hostile = "<script>alert(1)</script>"
    form = {**custom_form(client), "arguments": json.dumps({"env": hostile}), "ticket": hostile,
            "token_other": ""}
    response = client.post("/playground/custom", data=form)
    assert response.status_code == 200
    body = response.get_data(as_text=True)
    assert hostile not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    page = soup(response)
    assert outcomes(page)["signature"] == "fail"
    sent = json.loads(page.select_one("#pg-sent-json").get_text())
    assert sent["params"]["requestState"] == hostile
    # and a hostile env the server accepts is escaped in the ticket it mints, too
    response = client.post("/playground/custom", data={**form, "ticket": ""}, headers=HX)
    assert hostile not in response.get_data(as_text=True)


# -- the lesson embeds the same widget --------------------------------------------------------------


def test_playground_context_is_lenient_for_the_lesson(app: Flask) -> None:
    from web.playground.routes import playground_context

    with app.test_request_context("/lessons/when-the-server-needs-input?offset=abc&move=nope"):
        context = playground_context({"offset": "abc", "move": "nope", "sealed": "1"})
    pg = context["pg"]
    assert pg.embedded and pg.h == 3 and pg.result is None
    assert pg.toggles.offset == 0 and not pg.toggles.sealed  # a bad switch falls back to all defaults
    assert isinstance(soup_of_widget(app, context), Tag)


def soup_of_widget(app: Flask, context: dict[str, Any]) -> Tag:
    from flask import render_template

    with app.test_request_context("/lessons/when-the-server-needs-input"):
        html = render_template("playground/_playground.html", **context)
    widget = BeautifulSoup(html, "html.parser").select_one("[data-playground]")
    assert widget is not None and widget.select_one("input[name=embedded]") is not None
    return widget


# -- the custom move keeps its lab server's state ------------------------------------------------------


def test_custom_move_sent_twice_is_refused_the_second_time(client: FlaskClient) -> None:
    form = custom_form(client)
    first = soup(client.post("/playground/custom", data=form, headers=HX))
    assert first.select_one("[data-verdict]")["data-verdict"] == "completed"
    redeemed = first.select_one("#pg-custom-redeemed[hx-swap-oob]")["value"]
    log = first.select_one(".pg-log").get_text(" ", strip=True)
    minted = re.search(r"minted ticket (\S+) for bob", log).group(1)
    assert f"requestState accepted: ticket {minted} for bob" in log and redeemed == minted
    ticket = json.loads(first.select_one("#pg-sent-json").get_text())["params"]["requestState"]
    assert ticket == form["ticket"]  # the page's own ticket, re-minted byte for byte by the same lab server
    second = soup(client.post("/playground/custom", data={**form, "redeemed": redeemed}, headers=HX))
    assert second.select_one("[data-first-failure]")["data-first-failure"] == "single-use"
    assert f"ticket {minted} was already redeemed" in second.select_one(".pg-log").get_text(" ", strip=True)


def test_custom_move_without_js_keeps_its_state_in_the_form(client: FlaskClient) -> None:
    form = custom_form(client)
    page = soup(client.post("/playground/custom", data=form))
    again = page.select_one("form.pg-custom-form")
    assert again.select_one("input[name=redeemed]")["value"] and \
        again.select_one("input[name=seed]")["value"] == form["seed"]


@pytest.mark.parametrize("redeemed", ["a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", "bad id!", "x" * 65])
def test_custom_move_rejects_a_malformed_lab_state(client: FlaskClient, redeemed: str) -> None:
    response = client.post("/playground/custom", data={**custom_form(client), "redeemed": redeemed}, headers=HX)
    assert response.status_code == 400 and "reload the playground" in response.get_data(as_text=True)


def test_reentering_a_move_url_without_js_shows_the_playground(client: FlaskClient) -> None:
    response = client.get(f"/playground/moves/{STOLEN.slug}?sealed=1")
    assert response.status_code == 303 and f"move={STOLEN.slug}" in response.location
    assert "sealed=1" in response.location
    page = soup(client.get(f"/playground/moves/{STOLEN.slug}?sealed=1", follow_redirects=True))
    assert page.select_one("[data-result]")["data-result"] == STOLEN.slug
    assert client.get("/playground/moves/nope").status_code == 404
    assert client.get("/playground/custom").status_code == 303


def test_a_missing_answer_reads_as_asked_again_not_failed(client: FlaskClient) -> None:
    page = soup(play(client, ASKS_AGAIN.slug))
    item = page.select_one(".pg-outcome li[data-check=answer]")
    assert item["data-outcome"] == "fail" and item.select_one(".check-outcome").get_text() == "asked again"


def test_custom_retry_moves_with_the_clock_offset_and_says_what_stopped_it(client: FlaskClient) -> None:
    on_time = soup(client.post("/playground/custom", data={**custom_form(client), "at": "8"}, headers=HX))
    assert on_time.select_one("[data-verdict]")["data-verdict"] == "completed"
    assert "sent at t = 8 s, passed every check" in on_time.select_one("[data-note='custom']").get_text()
    late = soup(client.post("/playground/custom", data={**custom_form(client), "at": "8", "offset": "150"},
                            headers=HX))
    assert late.select_one("[data-verdict]")["data-verdict"] == "refused"
    assert outcomes(late)["expiry"] == "fail"
    note = late.select_one("[data-note='custom']")
    assert note["data-note-stopped"] == "expiry"
    assert "at t = 158 s (your time plus the 150 s clock offset), stopped at “Not expired”" in note.get_text()
