"""The course home, the lesson page and its live figures, all rendered from the real server."""

from __future__ import annotations

import base64
import inspect
import json
import re
import shutil
import urllib.parse
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from moves.catalog import holds
from moves.target import Outcome
from mrtr import CHECK_TITLES, CHECKS
from mrtr import DEFAULT_TTL as EXPIRY
from mrtr_toolsets import lesson as tools
from web.site.content import DEFAULT_ROOT, ContentError, load_course
from web.site.moveviews import OUTCOME_TEXT, stopped_first_by
from web.templating import count_word

from .conftest import TEST_KEY
from .helpers import HX, assert_csp_clean, assert_unique_ids, honest_move, move_where, play_under, rendered, soup

LESSON = "when-the-server-needs-input"
ASKS_AGAIN = move_where(lambda m: m.expect == Outcome.ASKED_AGAIN and m.before is None)
URL = f"/lessons/{LESSON}"


@pytest.fixture
def lesson_page(client: FlaskClient) -> BeautifulSoup:
    """The lesson page, parsed (not named `page`: pytest-playwright would take that name for a browser test)."""
    response = client.get(URL)
    assert response.status_code == 200
    return soup(response.data)


def test_home_lists_the_course_and_links_onwards(app: Flask, client: FlaskClient) -> None:
    with rendered(app) as names:
        response = client.get("/")
    assert response.status_code == 200 and names == ["lessons/home.html"]
    tree = soup(response.data)
    assert tree.h1.get_text(strip=True) == "MRTR Lab"
    hrefs = {a["href"] for a in tree.find_all("a")}
    assert {URL, "/playground", f"/quiz/{LESSON}"} <= hrefs
    assert_csp_clean(response.data)


def test_layout_has_landmarks_skip_link_htmx_config_and_local_assets(client: FlaskClient) -> None:
    tree = soup(client.get("/").data)
    assert tree.find("a", class_="skip-link")["href"] == "#main"
    assert tree.find("main", id="main") and tree.find("header") and tree.find("footer")
    assert tree.find("nav", attrs={"aria-label": "Site"})
    assert tree.find(id="announcer")["aria-live"] == "polite"
    config = json.loads(tree.find("meta", attrs={"name": "htmx-config"})["content"])
    assert config == {"includeIndicatorStyles": False, "allowEval": False, "allowScriptTags": False}
    scripts = [s["src"] for s in tree.find_all("script")]
    assert scripts == ["/static/vendor/htmx-2.0.11.min.js", "/static/js/app.js", "/static/js/playground.js",
                       "/static/js/progress.js"]
    styles = [link["href"] for link in tree.find_all("link", rel="stylesheet")]
    assert styles == ["/static/css/site.css", "/static/css/playground.css"]
    for asset in scripts + styles:
        response = client.get(asset)
        response.close()  # static files are streamed; close them or pytest flags the open file
        assert response.status_code == 200


def test_lesson_page_has_every_section_deep_linkable_with_a_toc(app: Flask, client: FlaskClient) -> None:
    lesson = load_course().lesson(LESSON)
    with rendered(app) as names:
        response = client.get(URL)
    assert names == ["lessons/lesson.html"]
    tree = soup(response.data)
    toc = [a["href"] for a in tree.find("nav", class_="toc").find_all("a")]
    assert toc == [f"#{s.id}" for s in lesson.sections]
    for s in lesson.sections:
        section = tree.find("section", id=s.id)
        assert section is not None, s.id
        assert section.h2.get_text(strip=True) == s.title
    objectives = [li.get_text(" ", strip=True) for li in tree.select("#objectives ul.objectives li")]
    assert objectives == list(lesson.objectives)
    assert_csp_clean(response.data)
    assert_unique_ids(response.data)  # the embedded playground included


def test_unknown_lesson_is_404(client: FlaskClient) -> None:
    assert client.get("/lessons/nope").status_code == 404


def test_roundtrip_figure_shows_six_real_steps_across_two_replicas(lesson_page) -> None:
    lesson = load_course().lesson(LESSON)
    steps = lesson_page.select("#round-trip .rt-step")
    assert [int(s["data-step"]) for s in steps] == [1, 2, 3, 4, 5, 6]
    assert [s["data-title"] for s in steps] == [c.title for c in lesson.roundtrip_steps]
    assert [s["data-replica"] for s in steps] == ["A", "A", "", "B", "B", "B"]
    assert lesson.roundtrip_steps[1].caption in steps[1].get_text(" ", strip=True)
    first = json.loads(steps[0].select_one("pre.json code").get_text())
    assert first["method"] == "tools/call" and first["params"]["arguments"] == {"env": "staging"}
    answer = json.loads(steps[1].select_one("pre.json code").get_text())
    assert answer["result"]["resultType"] == "input_required"
    retry = json.loads(steps[3].select_one("pre.json code").get_text())
    ticket, shown = answer["result"]["requestState"], retry["params"]["requestState"]
    # The full ticket is shown once, where it is issued; the retry shows it shortened.
    assert retry["id"] != first["id"] and shown.startswith(ticket[:16]) and shown.endswith(ticket[-6:])
    assert len(shown) < 30
    done = steps[4].select("ol.checks li")
    assert [li["data-check"] for li in done] == list(CHECKS)
    assert {li["data-outcome"] for li in done} == {"pass"}
    refused = [li["data-outcome"] for li in steps[5].select("ol.checks li")]
    assert refused == ["fail"] + ["skipped"] * 5
    # Without JavaScript every step is visible; the controls only appear with app.js.
    assert not any(s.has_attr("hidden") for s in steps)
    assert lesson_page.select_one("#round-trip [data-stepper-controls]").has_attr("hidden")


def test_anatomy_decodes_a_real_ticket(lesson_page) -> None:
    figure = lesson_page.select_one("#ticket-anatomy .anatomy")
    prefix = figure.select_one(".token .tok-prefix").get_text()
    payload = figure.select_one(".token .tok-payload").get_text()
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert prefix == "t1" and claims["sub"] == "bob" and claims["work"] == {"env": "staging"}
    assert claims["exp"] - claims["iat"] == 120
    names = [th.get_text(strip=True) for th in figure.select("table.claims tbody th")]
    assert names == ["v", "jti", "sub", "req", "iat", "exp", "step", "work.env"]
    blob = figure.select_one(".sealed .tok-blob").get_text()
    assert "bob" not in blob and "staging" not in blob


def test_sealed_figure_shows_decoded_signed_payload_beside_sealed_blob(lesson_page) -> None:
    figure = lesson_page.select_one("#signed-is-not-secret")
    decoded = json.loads(figure.select_one("pre.json code").get_text())
    assert decoded["sub"] == "bob"
    assert figure.select_one(".sealed .tok-prefix").get_text() == "s1"


def test_timeline_plays_every_move_and_matches_moves_toml(lesson_page) -> None:
    course = load_course()
    figure = lesson_page.select_one("#checks-and-clock")
    events = [li.select_one(".at").get_text(strip=True) for li in figure.select("ol.timeline li")]
    times = sorted([(0, 0), (EXPIRY, 1), *((m.at, 1) for m in course.moves)])  # minting first, then by time
    assert events == [f"t = {t:g} s" for t, _ in times]
    assert "expires" in figure.select_one("li.event-expiry").get_text()
    for move in course.moves:
        row = figure.find("tr", id=f"timeline-checks-and-clock-{move.slug}")
        cells = {td["data-check"]: td["data-outcome"] for td in row.select("td.cell")}
        assert list(cells) == list(CHECKS)
        verdict = Outcome(row["data-verdict"])
        assert holds(move.expect, verdict)[0], move.slug  # played just now, it got what a sound server gives
        # the figure says what happened in the story's words: "Deployed", "Refused", "Ended, nothing deployed"
        assert row.select_one("td.result").get_text(strip=True) == OUTCOME_TEXT[verdict]
        if verdict in (Outcome.REFUSED, Outcome.ASKED_AGAIN):
            assert [c for c, o in cells.items() if o in ("fail", "asked-again")] == [move.stops_at]
            after = list(CHECKS)[list(CHECKS).index(move.stops_at) + 1:]
            assert all(cells[c] == "skipped" for c in after)
        else:
            assert set(cells.values()) == {"pass"}
        if move.before is not None:  # the retry sent first is on the timeline too
            said = figure.select_one(f"li[data-move='{move.slug}']").get_text(" ", strip=True)
            assert f"after “{move.before.title}” at t = {move.before.at:g} s" in said


def test_shim_and_lab_are_live_transcripts(lesson_page) -> None:
    shim = lesson_page.select_one("#old-clients .shim")
    methods = [json.loads(p.get_text()).get("method") for p in shim.select("pre.json code")]
    assert "initialize" in methods and "tools/call" in methods and "elicitation/create" in methods
    assert "deployed to staging" in shim.get_text()
    lab = lesson_page.select_one("#run-it-raw .lab")
    assert "python -m mrtr lab" in lab.get_text()
    scenes = lab.select("section.scene")
    assert len(scenes) == 4 and all("FAILED" not in s.get_text() for s in scenes)
    lines = lab.select(".tline .dir")
    assert {d.get_text() for d in lines} == {"-->", "<--"}
    assert "-32022" in scenes[2].get_text() and "-32602" in scenes[3].get_text()


def test_sdk_figure_shows_our_snippet_beside_the_real_deploy_source(lesson_page) -> None:
    figure = lesson_page.select_one("#sdk-version")
    ts = figure.select_one("#sdk-sdk-version-ts").get_text()
    for helper in ("inputRequired(", "inputRequired.elicit(", "acceptedContent(", ".mint("):
        assert helper in ts
    assert figure.select_one("#sdk-sdk-version-py").get_text() == inspect.getsource(tools.deploy)


def test_breakit_links_preset_the_playground_and_say_what_each_switch_does(lesson_page) -> None:
    links = lesson_page.select("#break-it ul.breakit li")
    queries = [urllib.parse.urlsplit(li.a["href"]) for li in links]
    switches = [dict(urllib.parse.parse_qsl(q.query)) for q in queries]
    assert all(q.path == "/playground" and q.fragment == f"move-{s['move']}" for q, s in zip(queries, switches,
                                                                                          strict=True))
    moves = load_course().moves
    # the two links that remove a defence each play the first move a sound server stops at that defence
    assert switches[0] == {"single_use": "1", "sealed": "0", "no_signature": "1", "offset": "0",
                           "move": stopped_first_by(moves, "signature").slug}
    assert switches[1] == {"single_use": "0", "sealed": "0", "no_signature": "0", "offset": "0",
                           "move": stopped_first_by(moves, "single-use").slug}
    # the other two play a move the switch changes: sealing (an edited ticket), the clock (the honest retry)
    assert switches[2] == {**switches[0], "sealed": "1", "no_signature": "0"}
    assert switches[3] == {"single_use": "1", "sealed": "0", "no_signature": "0", "offset": "150",
                           "move": honest_move(moves).slug}
    texts = [li.get_text(" ", strip=True) for li in links]
    assert "removes Signature matches" in texts[0] and "removes Not already redeemed" in texts[1]
    assert "removes no check" in texts[2] and "removes no check" in texts[3]
    assert f"t = {honest_move(moves).at + 150:g} s" in texts[3]
    assert "defence you remove" not in lesson_page.select_one("#break-it").get_text()


def test_the_playground_and_a_long_quiz_are_linked_not_embedded(lesson_page, client: FlaskClient) -> None:
    """Embedded, the playground and the 26-item quiz made the first lesson 83,587 px long on a phone: the lesson
    says what they are and links to their own pages. A short quiz (the other lessons') is still answered inline."""
    assert lesson_page.select_one("[data-playground]") is None
    assert lesson_page.select_one("#playground a.button")["href"] == "/playground"
    assert len(load_course().lesson(LESSON).questions) > 12
    assert not lesson_page.select("#quick-check li.question")
    assert lesson_page.select_one("#quick-check a.button")["href"] == f"/quiz/{LESSON}"
    short = next(le for le in load_course().lessons if le.slug == "beyond-one-question")
    inline = soup(client.get(f"/lessons/{short.slug}").data)
    assert len(inline.select("li.question form")) == len(short.questions) <= 12


def test_figure_endpoint_renders_fragment_for_htmx_and_page_otherwise(app: Flask, client: FlaskClient) -> None:
    url = f"{URL}/figures/ticket-anatomy"
    with rendered(app) as names:
        full = client.get(url)
    assert full.status_code == 200 and names == ["lessons/figure.html"]
    assert soup(full.data).find("main")
    with rendered(app) as names:
        fragment = client.get(url, headers=HX)
    assert fragment.status_code == 200 and names == ["lessons/_figure.html"]
    assert "<main" not in fragment.text and 'id="figure-ticket-anatomy"' in fragment.text
    assert "HX-Request" in fragment.headers["Vary"]
    # A fresh ticket every time (new jti), from the real codec.
    again = client.get(url, headers=HX)
    assert soup(again.data).select_one(".tok-payload").get_text() != soup(fragment.data).select_one(
        ".tok-payload").get_text()


@pytest.mark.parametrize("section", ["nope", "objectives", "playground", "quick-check"])
def test_figure_endpoint_404s_for_sections_without_a_standalone_figure(client: FlaskClient, section: str) -> None:
    assert client.get(f"{URL}/figures/{section}").status_code == 404


def test_hostile_lesson_text_is_escaped(tmp_path: Path) -> None:
    root = tmp_path / "lessons"
    shutil.copytree(DEFAULT_ROOT, root)
    hostile = '<script>alert("x")</script>'
    meta, quiz = root / LESSON / "meta.toml", root / LESSON / "quiz.toml"
    meta.write_text(meta.read_text().replace('title = "Recap"', f"title = 'Recap {hostile}'", 1))
    old_prompt = 'prompt = "When does the spec require a server to protect the integrity of its requestState?"'
    quiz.write_text(quiz.read_text().replace(old_prompt, f"prompt = '{hostile} Why?'", 1))
    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory",
                      "MRTR_CONTENT_DIR": str(root)})
    client = app.test_client()
    for url in (URL, f"/quiz/{LESSON}"):
        response = client.get(url)
        assert response.status_code == 200
        assert hostile not in response.text
        assert "&lt;script&gt;alert(" in response.text
        assert_csp_clean(response.data)


# -- the prose says only what is true, one way -----------------------------------------------------

LESSON_DIR = DEFAULT_ROOT / LESSON
OURS = [p for p in sorted((LESSON_DIR / "sections").glob("*.md")) if p.name != "08-sdk-version.md"]


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _taught() -> dict[str, str]:
    """Every piece of lesson text this test polices: the sections (not 08), meta.toml without the move
    notes, the quiz, the field notes and the Break-it data."""
    meta = _text(LESSON_DIR / "meta.toml").split("[[move_notes]]")[0]
    texts = {p.name: _text(p) for p in OURS}
    texts.update({"meta.toml": meta, "quiz.toml": _text(LESSON_DIR / "quiz.toml"),
                  "breakit.toml": _text(LESSON_DIR / "breakit.toml")})
    fields = LESSON_DIR / "fields.toml"
    if fields.exists():
        texts["fields.toml"] = _text(fields)
    return texts


#: Names a check has had besides its title. Each check has one name: its title in CHECK_TITLES.
CHECK_ALIASES = ("signature check", "principal check", "expiry check", "same-request check", "request check",
                 "digest check", "redeemed-ticket check", "single-use check", "answer check", "refused at")


def test_each_check_has_one_name_everywhere() -> None:
    for name, text in _taught().items():
        lowered = text.lower().replace('"remove the signature check', "").replace("remove the signature check", "")
        for alias in CHECK_ALIASES:
            assert alias not in lowered, f"{name} calls a check {alias!r}; use its title"


def test_replicas_share_the_key_and_the_redeemed_store() -> None:
    text = _text(LESSON_DIR / "sections" / "02-round-trip.md")
    assert "nothing else" not in text
    assert "redeemed" in text and "shared state" in text


def test_minus_32602_is_taught_as_the_sdks_convention_wherever_it_appears() -> None:
    """Where -32602 is the SDKs' or this app's choice the block says so, or links the "Spec, SDKs, this app" table
    (which also holds the one case where the spec prescribes it: a missing _meta)."""
    for name, text in _taught().items():
        if name in ("fields.toml", "breakit.toml"):
            continue
        for block in re.split(r"\n\s*\n|\[\[questions\]\]", text):
            if "-32602" in block and "|" not in block:  # the table itself names its sources cell by cell
                assert "convention" in block or TABLE_ANCHOR in block, \
                    f"{name}: -32602 taught without saying whose convention it is"


TABLE_ANCHOR = "#spec-rules--spec-sdks-this-app"
#: What the lessons may only state as a choice: each sentence about one links the table.
CONVENTION_WORDS = ("Invalid or expired requestState", "120 seconds", "in this order", "fixed order")


def test_the_spec_sdks_app_table_sources_every_cell_and_covers_the_http_statuses(client) -> None:  # noqa: ANN001
    page = BeautifulSoup(client.get("/lessons/when-the-server-needs-input").data, "html.parser")
    heading = page.find(id=TABLE_ANCHOR[1:])
    assert heading is not None
    table = heading.find_next("table")
    assert [th.get_text() for th in table.select("thead th")] == ["What", "The spec (2026-07-28)",
                                                                  "The official SDKs", "This app"]
    rows = table.select("tbody tr")
    for row in rows:
        for cell in row.select("td")[1:]:
            text = cell.get_text()
            assert re.search(r"\[[^\]]+\]$", text.strip()) or text.startswith("Not covered"), text
    statuses = " ".join(r.get_text() for r in rows if "HTTP" in r.get_text())
    for status in ("200", "400"):
        assert status in statuses
    assert {"-32021", "-32022", "-32602"} <= set(re.findall(r"-32\d{3}", table.get_text()))
    assert table.find_parent("div", class_="table-wrap")["tabindex"] == "0"  # scrolls at 390 px, by keyboard too


def test_every_sentence_that_relies_on_a_convention_links_the_table() -> None:
    sections = sorted(LESSON_DIR.parent.glob("*/sections/*.md"))
    assert len(sections) > len(OURS)
    for path in sections:
        name, text = f"{path.parent.parent.name}/{path.name}", _text(path)
        for block in re.split(r"\n\s*\n", text):
            if any(w in block for w in CONVENTION_WORDS) and "|" not in block and not block.startswith("#"):
                assert TABLE_ANCHOR in block, f"{name}: {block[:80]!r} relies on a convention without the link"


def test_ticket_anatomy_names_the_real_payload_fields_and_says_the_hmac_once() -> None:
    text = _text(LESSON_DIR / "sections" / "03-ticket-anatomy.md")
    bullets = re.findall(r"^- `([a-z.]+)`", text, flags=re.M)
    assert bullets == ["v", "jti", "sub", "req", "iat", "exp", "step", "work.env"]
    assert "beside" in text
    phrase = "HMAC-SHA256 over the prefix and the payload"
    assert phrase in text
    anatomy = (Path(__file__).parents[2] / "templates" / "lessons" / "_widget_anatomy.html").read_text()
    assert phrase in anatomy
    for name, body in _taught().items():
        assert "HMAC-SHA256 over the payload" not in body and "HMAC over the payload" not in body, name


def test_legacy_ids_break_it_and_recap_say_what_is_true() -> None:
    legacy = _text(LESSON_DIR / "sections" / "07-old-clients.md")
    assert "numbers the requests it sends" in legacy
    breakit = _text(LESSON_DIR / "sections" / "10-break-it.md")
    assert "Each toggle removes one line of defence" not in breakit
    assert breakit.count("No check is removed") == 2
    recap = _text(LESSON_DIR / "sections" / "13-recap.md")
    assert "ticket, The" not in recap
    for title in CHECK_TITLES.values():
        assert title in recap


def test_the_prose_counts_the_moves_only_where_the_count_is_true() -> None:
    """A count of moves in the lesson's words ("seven moves") goes stale with the next [[moves]] entry: the text
    either says the true number or no number at all."""
    numbers = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
    true = count_word(len(load_course().moves))
    for name, text in _taught().items():
        for said in re.findall(r"\b(\w+)(?: misuse)? moves\b", text, flags=re.I):
            if said.lower() in numbers or said.isdigit():
                assert said.lower() == true, f"{name} says {said} moves; there are {true}"


def test_the_timeline_shows_the_missing_answer_as_asked_again(lesson_page) -> None:
    row = lesson_page.find("tr", id=f"timeline-checks-and-clock-{ASKS_AGAIN.slug}")
    cell = row.select_one('td.cell[data-check="answer"]')
    assert cell["data-outcome"] == "asked-again" and cell.get_text(strip=True) == "Asked again"
    assert "Failed" not in row.get_text()


# -- every field explained ---------------------------------------------------------------------------

#: The fields the issue names, as a key that must be explained in the figure (label ends with it).
NAMED_FIELDS = ("_meta", "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
                "elicitation", "io.modelcontextprotocol/clientInfo", "mode", "requestedSchema", "action",
                "resultType", "inputRequests", "requestState", "isError", "io.modelcontextprotocol/serverInfo",
                "id", "inputResponses", "content", "code", "message")


def test_every_field_of_every_message_links_to_its_note_in_a_definition_list(lesson_page) -> None:
    figure = lesson_page.select_one("#round-trip .roundtrip")
    labels = []
    for pre in figure.select(".rt-step pre.json"):
        message = json.loads(pre.get_text())
        notes = pre.find_next_sibling("dl", class_="field-notes")
        assert notes is not None

        def keys(value):  # noqa: ANN001, ANN202
            if isinstance(value, dict):
                for k, v in value.items():
                    yield k
                    yield from keys(v)
            elif isinstance(value, list):
                for v in value:
                    yield from keys(v)

        links = pre.select("a.field-key")
        assert [a.get_text() for a in links] == [json.dumps(k) for k in keys(message)], "a key without a note"
        for a in links:
            entry = notes.find(id=a["href"][1:])
            assert entry is not None and entry.dt and entry.dd.get_text(strip=True), a
            assert a["aria-label"].endswith("what this field is")
            assert len(entry.dd.get_text()) < 260  # one or two lines
        labels += [dt.get_text(" ", strip=True) for dt in notes.select("dt")]
    for name in NAMED_FIELDS:
        assert any(label.endswith(name) for label in labels), name
    assert any(label.startswith("Authorization") for label in labels)


def test_the_principal_comes_from_the_authorization_header_shown_on_each_request(lesson_page) -> None:
    steps = lesson_page.select("#round-trip .rt-step")
    for n in (0, 3, 5):
        http = steps[n].select_one("pre.http")
        assert "Authorization: Bearer bob-token" in http.get_text()
        note = steps[n].find(id=http.a["href"][1:])
        assert "Principal is the caller" in note.dd.get_text()
    assert steps[1].select_one("pre.http") is None  # responses carry no request header


def test_the_full_ticket_is_shown_once_in_the_round_trip(lesson_page) -> None:
    figure = str(lesson_page.select_one("#round-trip"))
    assert len(re.findall(r"t1\.[A-Za-z0-9_-]{40,}", figure)) == 1


def test_a_bad_fields_file_fails_loudly(tmp_path: Path) -> None:
    root = tmp_path / "lessons"
    shutil.copytree(DEFAULT_ROOT, root)
    (root / LESSON / "fields.toml").write_text('[[fields]]\npath = "id"\nnote = "x"\n')
    with pytest.raises(ContentError, match="needs a non-empty path"):  # at start-up, not on a visitor's page
        create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory",
                    "MRTR_CONTENT_DIR": str(root)})


# -- single use brings back one piece of shared state ---------------------------------------------------

@pytest.mark.parametrize(("stores", "second"), [("shared", "refused"), ("own", "deployed")])
def test_the_replay_is_refused_on_a_shared_store_and_deploys_on_separate_ones(client: FlaskClient, stores: str,
                                                                            second: str) -> None:
    url = f"{URL}/figures/round-trip"
    response = client.get(url, query_string={"stores": stores})
    assert response.status_code == 200
    replay = soup(response.data).select_one(".replay")
    steps = replay.select(".replay-step")
    assert [(s["data-replica"], s["data-verdict"]) for s in steps] == [("B", "deployed"), ("A", second)]
    outcomes = {li["data-check"]: li["data-outcome"] for li in steps[1].select("ol.checks li")}
    assert outcomes["single-use"] == ("fail" if stores == "shared" else "pass")
    assert replay.find("input", attrs={"value": stores}).has_attr("checked")
    form = replay.form
    assert form["method"] == "get" and form["hx-select"] == "#" + replay["id"]


def test_an_unknown_store_mode_is_a_clear_400(client: FlaskClient) -> None:
    response = client.get(f"{URL}/figures/round-trip", query_string={"stores": "<script>"})
    assert response.status_code == 400 and "<script>" not in response.text


@pytest.mark.parametrize("url", ["/", URL, f"{URL}/figures/round-trip", f"/quiz/{LESSON}", f"/embed/quiz/{LESSON}",
                                 "/no/such/page"])
def test_pages_have_a_meta_description(client: FlaskClient, url: str) -> None:
    meta = soup(client.get(url).data).find("meta", attrs={"name": "description"})
    assert meta is not None and len(meta["content"].strip()) > 20


def test_home_progress_copy_button_waits_for_a_code(client: FlaskClient) -> None:
    button = soup(client.get("/").data).select_one("#progress button.copy")
    assert button.has_attr("hidden") and button.has_attr("data-progress-copy")
    script = (Path(__file__).parents[2] / "static" / "js" / "app.js").read_text()
    assert 'hasAttribute("data-progress-copy")' in script  # app.js leaves it to progress.js


def test_the_legacy_transcript_shows_what_section_07_says_about_ids(lesson_page) -> None:
    """Section 07 says the server's elicitation/create carries id 1, like the client's initialize."""
    messages = [json.loads(p.get_text()) for p in lesson_page.select("#old-clients .shim pre.json code")]
    initialize = next(m for m in messages if m.get("method") == "initialize")
    asked = next(m for m in messages if m.get("method") == "elicitation/create")
    assert initialize["id"] == asked["id"] == 1
    assert "it is `1`, the same number the client used for `initialize`" in _text(
        LESSON_DIR / "sections" / "07-old-clients.md")


def _outcomes(single_use: bool = True, sealed: bool = False, no_signature: bool = False, offset: int = 0
              ) -> dict[str, tuple[str, str | None]]:
    return {move.slug: play_under(move, single_use=single_use, sealed=sealed, no_signature=no_signature,
                                  offset=offset) for move in load_course().moves}


def test_break_it_says_what_each_switch_really_does() -> None:
    """Section 10 and breakit.toml, checked against the real server: which moves each switch changes."""
    base = _outcomes()

    def changed(**switch: object) -> set[str]:
        now = _outcomes(**switch)  # type: ignore[arg-type]
        return {slug for slug in base if now[slug] != base[slug]}

    moves = load_course().moves
    edits = {m.slug for m in moves if m.refused_by == {"signature"}}  # only the signature refuses them
    replays = {m.slug for m in moves if m.is_replay}
    assert edits and replays
    unsigned, reusable = _outcomes(no_signature=True), _outcomes(single_use=False)
    assert changed(no_signature=True) == edits and all(unsigned[slug][0] == "deployed" for slug in edits)
    assert changed(single_use=False) == replays and all(reusable[slug][0] == "deployed" for slug in replays)
    assert changed(sealed=True) == set()
    # 150 s later, every move that used to get past Not expired ends there; those stopped earlier do not change
    late = _outcomes(offset=150)
    expiry = list(CHECKS).index("expiry")
    past_expiry = {m.slug for m in moves if not m.stops_at or list(CHECKS).index(m.stops_at) > expiry}
    assert changed(offset=150) == past_expiry
    assert all(late[slug] == ("refused", "expiry") for slug in past_expiry)
