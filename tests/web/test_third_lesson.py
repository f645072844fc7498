"""The third lesson, "Beyond one question": in the course after the first, every section's live figure played on
the lab's server with the replies its prose promises, raw JSON on the page, a quiz, and no JavaScript needed."""

from __future__ import annotations

import json
import tomllib
from typing import Any

from bs4 import Tag
from flask.testing import FlaskClient

from web.site.content import DEFAULT_ROOT, load_course

from .helpers import HX, assert_csp_clean, assert_unique_ids, soup

SLUG = "beyond-one-question"
URL = f"/lessons/{SLUG}"
LESSON = load_course().lesson(SLUG)


def message(block: Tag) -> Any:
    """One message as the figure shows it: its JSON in parts (the _meta folded into its own <details>), in order."""
    return json.loads("".join(pre.get_text() for pre in block.select("pre")))


def test_the_lesson_comes_right_after_the_first_in_the_course() -> None:
    order = [entry["slug"] for entry in tomllib.loads((DEFAULT_ROOT / "course.toml").read_text())["lessons"]]
    assert order.index(SLUG) == order.index("when-the-server-needs-input") + 1


def test_every_exchange_is_played_live_and_ends_as_the_prose_says(client: FlaskClient) -> None:
    response = client.get(URL)
    assert response.status_code == 200
    assert_csp_clean(response.data)
    assert_unique_ids(response.data)
    page = soup(response.data)
    exchanges = [s for s in LESSON.sections if s.widget == "exchange"]
    assert len(exchanges) == 6
    for section in exchanges:
        figure = page.select_one(f"#figure-{section.id}")
        assert figure.select_one("[data-exchange-ok]")["data-exchange-ok"] == "true", section.id
        blocks = [message(block) for block in figure.select("li:not(.out-of-band) .json-wrapped")]
        assert blocks and all(b["jsonrpc"] == "2.0" for b in blocks)
        sent = [b for b in blocks if "method" in b]
        assert len({b["id"] for b in sent}) == len(sent)  # every retry under a new id


def test_the_second_round_carries_a_new_ticket_and_the_spent_one_is_refused(client: FlaskClient) -> None:
    figure = soup(client.get(URL).data).select_one("#figure-second-round")
    replies = [message(block) for block in figure.select("li.received .json-wrapped")]
    first, second = replies[0]["result"]["requestState"], replies[1]["result"]["requestState"]
    assert first != second
    assert replies[2]["error"]["message"] == "Invalid or expired requestState"
    assert replies[3]["result"]["content"][0]["text"] == "provisioned a small staging database in eu-west"


def test_the_state_only_result_asks_nothing_and_no_mrtr_result_carries_cache_hints(client: FlaskClient) -> None:
    page = soup(client.get(URL).data)
    shed = [message(block) for block in page.select("#figure-state-only li.received .json-wrapped")]
    assert "inputRequests" not in shed[0]["result"] and shed[0]["result"]["requestState"]
    cache = [message(block)["result"] for block in page.select("#figure-no-caching li.received .json-wrapped")]
    assert {"ttlMs", "cacheScope"} <= set(cache[0])
    assert not {"ttlMs", "cacheScope"} & (set(cache[1]) | set(cache[2]))


def test_each_figure_renders_alone_for_htmx_and_as_a_page(client: FlaskClient) -> None:
    for section in (s for s in LESSON.sections if s.widget == "exchange"):
        fragment = client.get(f"{URL}/figures/{section.id}", headers=HX)
        assert fragment.status_code == 200 and "<html" not in fragment.text
        assert soup(fragment.data).select_one("[data-exchange-ok]")["data-exchange-ok"] == "true"
        assert client.get(f"{URL}/figures/{section.id}").status_code == 200


def test_the_quiz_is_there_and_every_wrong_option_names_a_belief() -> None:
    assert len(LESSON.questions) >= 5
    for q in LESSON.questions:
        assert all(c.belief for c in q.choices if c.id != q.answer), q.id


def test_url_mode_is_refused_to_a_form_client_and_completes_only_after_the_page(client: FlaskClient) -> None:
    """The figure is the spec's URL mode: -32021 without the url capability, a question with a url and no schema,
    an accept before the page asked again, the page (its key only as dots), then the call done."""
    from web.lessons.exchanges import HIDDEN, LAB_KEY

    response = client.get(URL)
    figure = soup(response.data).select_one("#figure-url-mode")
    replies = [message(block) for block in figure.select("li.received:not(.out-of-band) .json-wrapped")]
    assert replies[0]["error"]["code"] == -32021
    assert replies[0]["error"]["data"]["requiredCapabilities"] == {"elicitation": {"url": {}}}
    asked = replies[1]["result"]["inputRequests"]["key"]["params"]
    assert asked["mode"] == "url" and "requestedSchema" not in asked and "/out-of-band/" in asked["url"]
    again = replies[2]["result"]
    assert again["resultType"] == "input_required" and again["requestState"] != replies[1]["result"]["requestState"]
    page = [message(block) for block in figure.select("li.out-of-band .json-wrapped")]
    assert page[0]["form"] == {"key": HIDDEN} and page[1]["status"] == 200
    assert replies[3]["result"]["content"][0]["text"].startswith("connected billing")
    assert LAB_KEY not in response.text


def test_a_scene_file_with_a_page_step_that_expects_a_reply_is_refused(tmp_path: Any) -> None:
    """A page step is the user's browser, not a request: it expects "finished", and nothing else may."""
    import pytest

    from web.lessons.exchanges import load_exchanges
    from web.site.content import ContentError

    for n, (method, expect) in enumerate((("page", "complete"), ("tools/call", "finished"))):
        folder = tmp_path / str(n)
        folder.mkdir()
        (folder / "exchanges.toml").write_text(
            f'[[scenes]]\nsection = "s"\ntitle = "t"\n  [[scenes.steps]]\n  note = "n"\n  method = "{method}"\n'
            f'  expect = "{expect}"\n', encoding="utf-8")
        with pytest.raises(ContentError, match="a page step, and only a page step, expects finished"):
            load_exchanges(folder)
