"""The playground's tool picker: the moves, round one and the learner's own retry play against the tool picked
(the first lesson's deploy or a tool of "Beyond one question"), without JavaScript, and the address follows the
choice, so a pick is a link. A tool that is not on the list is a 400 naming the ones that are."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bs4 import BeautifulSoup
from flask.testing import FlaskClient

from tests.web.helpers import honest_move, stopped_move
from web.playground.switches import TOOLS

HX = {"HX-Request": "true"}
HONEST = honest_move()
REPLAY = stopped_move("single-use")
#: What the honest retry ends with on each tool (the engine answers every round from its questions' schemas).
DONE = {"deploy": "deployed to staging", "provision": "provisioned a small staging database in eu-west",
        "release": "released 1.4.0"}


def soup(response: Any) -> BeautifulSoup:
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


def test_the_picker_lists_every_tool_and_marks_the_one_picked(client: FlaskClient) -> None:
    page = soup(client.get("/playground?tool=release"))
    radios = page.select(".pg-switches input[name=tool]")
    assert [r["value"] for r in radios] == list(TOOLS) == ["deploy", "provision", "release"]
    assert [r["value"] for r in radios if r.has_attr("checked")] == ["release"]
    assert all(f.select_one("input[name=tool]")["value"] == "release" for f in page.select("li.pg-move form"))
    round_one = json.loads(page.select_one("#pg-round-one-sent").get_text())
    assert round_one["params"]["name"] == "release" and round_one["params"]["arguments"] == {"version": "1.4.0"}
    assert json.loads(page.select_one("#pg-custom-arguments").get_text()) == {"version": "1.4.0"}


@pytest.mark.parametrize("tool", list(TOOLS))
def test_the_honest_retry_finishes_on_every_tool_and_a_replay_is_refused(client: FlaskClient, tool: str) -> None:
    page = soup(client.post(f"/playground/moves/{HONEST.slug}", data={"tool": tool}))
    assert page.select_one("#pg-result [data-verdict]")["data-verdict"] == "completed"
    assert page.select_one("#pg-result").get_text().count(DONE[tool]) >= 1
    replayed = soup(client.post(f"/playground/moves/{REPLAY.slug}", data={"tool": tool}))
    assert replayed.select_one("#pg-result [data-verdict]")["data-verdict"] == "refused"


def test_the_address_follows_the_pick_and_deploy_keeps_the_old_addresses(client: FlaskClient) -> None:
    picked = client.get("/playground?tool=provision", headers=HX)
    assert picked.headers["HX-Push-Url"] == "/playground?single_use=1&sealed=0&no_signature=0&offset=0&tool=provision"
    played = client.post(f"/playground/moves/{HONEST.slug}", data={"tool": "release"}, headers=HX)
    assert played.headers["HX-Push-Url"].endswith("&tool=release&move=" + HONEST.slug)
    plain = client.get("/playground?tool=deploy", headers=HX)
    assert plain.headers["HX-Push-Url"] == "/playground?single_use=1&sealed=0&no_signature=0&offset=0"
    reset = soup(client.get("/playground?tool=release&sealed=1")).find("a", string="Reset to defaults")
    assert reset["href"] == "/playground?tool=release"  # the server's switches reset, the tool kept


def test_the_custom_retry_answers_the_picked_tools_questions(client: FlaskClient) -> None:
    page = soup(client.get("/playground?tool=provision"))
    form = {i["name"]: i.get("value", "") for i in page.select("form.pg-custom-form input[type=hidden]")}
    form.update(ticket=page.select_one("#pg-custom-ticket").get_text(), arguments='{"env": "staging"}',
                token_choice=page.select_one("#pg-custom-token option")["value"], at="8", answer="accept")
    result = soup(client.post("/playground/custom", data=form))
    answered = json.loads(result.select_one("#pg-result .pg-code code").get_text())
    assert answered["params"]["inputResponses"] == {"region": {"action": "accept", "content": {"region": "eu-west"}}}
    text = result.select_one("#pg-result").get_text()
    assert "Which size for the staging database in eu-west?" in text  # the region answered: round two asks


@pytest.mark.parametrize("value", ["connect", "report", "deploy'><script>"])
def test_a_tool_not_on_the_list_is_a_400_naming_the_list(client: FlaskClient, value: str) -> None:
    response = client.get("/playground", query_string={"tool": value})
    assert response.status_code == 400
    assert "tool must be one of deploy, provision, release" in response.get_data(as_text=True)
    assert "<script>" not in response.get_data(as_text=True).split("tool must be one of")[1][:200]
