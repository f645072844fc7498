"""The pages are safe to host publicly: no configured secret on any page, no page ticket works on /mcp.

One app is built with secret MRTR_TOKENS and MRTR_SECRET_KEYS, and every route of its URL map is
walked (every GET route with every known argument, htmx and not, every move under every switch
combination, the custom move's successes and errors, the quiz, the demo, the embeds, error pages).
Every response is searched for the secrets in raw, base64, hex, JSON and urlencoded form, and
every ticket any response shows is sent to /mcp, which must refuse each with the frozen error
while a ticket /mcp minted itself still works. The "run it yourself" scripts are run with bash and
curl against the app served over real HTTP, and the lab codec is fed hostile tickets.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import os
import re
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from flask import Flask
from werkzeug.serving import make_server

from app import create_app
from moves import labcodec
from moves.catalog import holds
from moves.labcodec import LabCodec, LabRing, lab_ring_from
from moves.target import Outcome
from moves.targets.in_process import lab_server
from mrtr import FakeClock, KeyRing, Policy, TicketCodec, TicketRejected, Trace
from mrtr.errors import FROZEN_TICKET_MESSAGE, INVALID_INPUT_RESPONSE
from mrtr.tickets import b64encode
from tests.conftest import APP_CONFIG
from web.site.content import load_course

SECRET_TOKENS = {"Zq7-bob-configured-token-4Kd9": "bob", "Zq7-alice-configured-token-8Pw2": "alice"}
SECRET_KEYS = ["Zq7-first-configured-key-0123456789abcdefghij", "Zq7-older-configured-key-9876543210zyxwvuts"]
EPOCH = 1_790_000_000.0
COURSE = load_course()
MOVES = [m.slug for m in COURSE.moves]
HX = {"HX-Request": "true"}
ACCEPT = {"confirm": {"action": "accept", "content": {"confirm": True}}}
TICKET = re.compile(r"\b[ts]1\.[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]{10,})?")


def secret_forms(secret: str) -> set[str]:
    raw = secret.encode()
    forms = {secret, urllib.parse.quote(secret), urllib.parse.quote_plus(secret), json.dumps(secret)[1:-1],
             binascii.hexlify(raw).decode()}
    for shift in range(3):  # base64 of the secret at each alignment inside a longer text
        for encoded in (base64.b64encode(b"x" * shift + raw), base64.urlsafe_b64encode(b"x" * shift + raw)):
            text = encoded.decode().rstrip("=")
            forms.add(text[(shift * 4 + 2) // 3 + 1:-2])  # the part that depends on the secret alone
    return {f for f in forms if len(f) >= 12}


SECRET_FORMS = {form: secret for secret in [*SECRET_TOKENS, *SECRET_KEYS] for form in secret_forms(secret)}


#: What the app under test is configured with over tests/conftest.py's APP_CONFIG: the secrets no page may show.
SECRET_CONFIG = {"MRTR_SECRET_KEYS": ",".join(SECRET_KEYS),
                 "MRTR_TOKENS": ",".join(f"{t}={p}" for t, p in SECRET_TOKENS.items())}


SWITCH_COMBOS = [{"single_use": s, "sealed": z, "no_signature": n, "offset": o}
                 for s, z, n, o in itertools.product("10", "01", "01", ("0", "150", "600"))]


def custom_forms(app: Flask) -> list[dict[str, str]]:
    """The custom move's form: as pre-filled (success), each answer, and each kind of bad input."""
    client = app.test_client()
    page = BeautifulSoup(client.get("/playground").get_data(as_text=True), "html.parser")
    form = page.select_one("form.pg-custom-form")
    base = {f["name"]: f.get_text() if f.name == "textarea" else f.get("value", "")
            for f in form.select("input[name]:not([type=radio]), textarea[name]")}
    base["token_choice"] = form.select_one("select option")["value"]
    base["answer"] = "accept"
    changes: list[dict[str, str]] = [
        {}, {"answer": "decline"}, {"answer": "cancel"}, {"answer": "none"}, {"ticket": ""}, {"at": "300"},
        {"answer": "raw", "answer_raw": json.dumps(ACCEPT)},
        {"token_choice": form.select("select option")[-1]["value"]},
        {"arguments": '{"env": "prod"}'}, {"ticket": base["ticket"] + "x"}, {"sealed": "1"}, {"no_signature": "1"},
        {"arguments": "{bad json"}, {"token_other": "not-a-token"}, {"at": "-5"}, {"at": "nan"},
        {"answer": "raw", "answer_raw": ""}, {"answer": "raw", "answer_raw": "[" * 3000}, {"answer": "bogus"},
        {"offset": "99999"}, {"single_use": "maybe"}, {"minted_at": "abc"},
        {"ticket": "t1." + b64encode(b"[" * 2900) + ".AAAA"},
        {"ticket": "t1." + b64encode(b'{"v":1,"sub":"\\ud800","exp":1}') + ".AAAA"},
        {"ticket": "t1." + b64encode(b'{"v":1,"sub":"\\ud800","exp":1}') + ".AAAA", "no_signature": "1"},
        {"ticket": "t1." + b64encode(b"[" * 2900) + ".AAAA", "no_signature": "1"},
    ]
    return [{**base, **change} for change in changes]


def route_values(app: Flask) -> dict[str, list[str]]:
    lessons = COURSE.lessons
    return {
        "slug": [lesson.slug for lesson in lessons] + MOVES + ["nope"],
        "n": [str(n) for n in range(0, 8)] + ["99"],
        "section_id": [s.id for lesson in lessons for s in lesson.sections] + ["nope"],
        "qid": [q.id for lesson in lessons for q in lesson.questions] + ["nope"],
    }


def walk(app: Flask) -> Iterator[tuple[str, Any]]:
    """(what was asked, response) for every page, fragment and error the app can render."""
    client = app.test_client()
    values = route_values(app)
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        names = sorted(rule.arguments)
        combos = itertools.product(*(values.get(name, ["x"]) for name in names))
        for combo in combos:
            url = rule.rule
            for name, value in zip(names, combo, strict=True):
                url = re.sub(rf"<(?:[a-z]+:)?{name}>", value, url)
            if "GET" in rule.methods:
                for headers in ({}, HX):
                    yield f"GET {url}", client.get(url, headers=headers)
            if "POST" in rule.methods and not url.startswith("/playground"):
                for data in ({}, {"choice": "a"}, {"choice": "zzz", "answer": "b"}):
                    yield f"POST {url} {data}", client.post(url, data=data, headers=HX)
    for combo in SWITCH_COMBOS:
        yield f"GET /playground {combo}", client.get("/playground", query_string=combo)
        for slug in MOVES:
            query = {**combo, "move": slug}
            yield f"GET /playground move={slug} {combo}", client.get("/playground", query_string=query)
            for headers in ({}, HX):
                yield f"POST move {slug} {combo}", client.post(f"/playground/moves/{slug}", data=combo, headers=headers)
    for form in custom_forms(app):
        for headers in ({}, HX):
            yield f"POST custom {form}", client.post("/playground/custom", data=form, headers=headers)
    yield "lesson with switches", client.get(f"/lessons/{COURSE.lessons[0].slug}",
                                             query_string={"no_signature": "1", "sealed": "1", "move": "tampered"})
    for url in ("/no-such-page", "/playground/custom", "/mcp", "/demo/move/nope", "/oembed?url=http://evil/"):
        yield f"GET {url}", client.get(url)
    yield "POST /mcp bad token", client.post("/mcp", data="{}", headers={"Authorization": "Bearer wrong"})
    yield "POST /mcp garbage", client.post("/mcp", data="{", headers={"Content-Type": "application/json"})


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Flask, list[tuple[str, str]]]:
    """One walk of every route for all the tests that read it: module-scoped, so it cannot take the `make_app`
    fixture (a test's); it builds the app as make_app does, from tests/conftest.py's APP_CONFIG."""
    app = create_app({**APP_CONFIG, **SECRET_CONFIG, "MRTR_CLOCK": FakeClock(EPOCH),
                      "MRTR_STATE_DIR": str(tmp_path_factory.mktemp("state"))})
    pages = []
    for what, response in walk(app):
        assert response.status_code < 500, f"{what} answered {response.status_code}"
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        pages.append((what, headers + "\n" + response.get_data(as_text=True)))
    return app, pages


def test_no_configured_secret_on_any_page(walked: tuple[Flask, list[tuple[str, str]]]) -> None:
    _, pages = walked
    assert len(pages) > 500
    for what, text in pages:
        for form, secret in SECRET_FORMS.items():
            assert form not in text, f"{what} shows the configured secret {secret[:8]}... (as {form!r})"
    # configured tokens are replaced by lab tokens and $NAME_TOKEN placeholders
    playground = next(text for what, text in pages if what.startswith("GET /playground "))
    assert "lab-bob-token" in playground and "$BOB_TOKEN" in playground and "bob-token=" not in playground


def test_the_secret_scan_can_fail() -> None:
    for secret in [*SECRET_TOKENS, *SECRET_KEYS]:
        embedded = "xx" + base64.b64encode(b"ab" + secret.encode()).decode() + "yy"
        assert any(form in embedded for form in secret_forms(secret))
        assert any(form in f"token={urllib.parse.quote_plus(secret)}" for form in secret_forms(secret))


def test_every_ticket_a_page_shows_is_refused_by_mcp(walked: tuple[Flask, list[tuple[str, str]]]) -> None:
    app, pages = walked
    tickets = {t for _, text in pages for t in TICKET.findall(text)}
    assert len(tickets) > 100  # every move, switch, offset, custom mint, demo and figure minted some
    assert any(t.startswith("s1.") for t in tickets) and any(t.startswith("t1.") for t in tickets)
    client = app.test_client()
    headers = {p: mcp_headers(t) for t, p in SECRET_TOKENS.items()}
    ring = app.extensions["mrtr"].ring
    for ticket in sorted(tickets):
        with pytest.raises(TicketRejected) as rejected:  # not a key /mcp holds: refused at the signature
            TicketCodec(ring).open(ticket, Trace())
        assert rejected.value.check == "signature"
        for principal, env in (("bob", "staging"), ("alice", "staging"), ("bob", "prod")):
            response = client.post("/mcp", json=mcp_call(9, env, ticket), headers=headers[principal])
            error = response.get_json()["error"]
            assert error["code"] == -32602 and error["message"] == FROZEN_TICKET_MESSAGE, ticket
    # while a ticket /mcp minted itself is honoured
    first = client.post("/mcp", json=mcp_call(2, "staging"), headers=headers["bob"])
    ticket = first.get_json()["result"]["requestState"]
    done = client.post("/mcp", json=mcp_call(3, "staging", ticket), headers=headers["bob"])
    assert done.get_json()["result"]["content"][0]["text"] == "deployed to staging"


def mcp_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
            "Mcp-Name": "deploy", "Accept": "application/json, text/event-stream"}


def mcp_call(request_id: int, env: str, ticket: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "deploy", "arguments": {"env": env}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}}
    if ticket is not None:
        params.update(requestState=ticket, inputResponses=ACCEPT)
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


# -- the lab's keys and codec ------------------------------------------------------------------------


def test_lab_keys_are_derived_apart_and_the_lab_codec_refuses_the_app_ring() -> None:
    ring = KeyRing(SECRET_KEYS)
    lab = lab_ring_from(ring)
    assert isinstance(lab, LabRing) and len(lab) == 2
    assert not set(lab.keys) & set(ring.keys) and lab.keys == lab_ring_from(ring).keys
    with pytest.raises(TypeError):
        LabCodec(ring)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        lab_server(ring, clock=FakeClock())  # type: ignore[arg-type]
    token = LabCodec(lab).encode({"v": 1, "sub": "bob"})
    with pytest.raises(TicketRejected):
        TicketCodec(ring).open(token, Trace())


def test_mcp_server_runs_the_production_codec(walked: tuple[Flask, list[tuple[str, str]]]) -> None:
    app, _ = walked
    server = app.extensions["mrtr"].server
    assert type(server.codec) is TicketCodec and not isinstance(server.ring, LabRing)
    assert "verify_signature" not in TicketCodec.open.__code__.co_varnames
    assert not hasattr(Policy(), "verify_signature")


HOSTILE = [
    "t1." + b64encode(b"[" * 2900) + ".AAAA",
    "t1." + b64encode(b'{"v":1,"sub":"\\ud800","exp":1}') + ".AAAA",
    "t1." + b64encode(b'{"v":1,"sub":"\\udfff\\ud800"}') + ".AAAA",
    "t1." + b64encode(b"\xff\xfe not utf-8") + ".AAAA",
    "t1." + b64encode(b'{"v":1,"n":' + b"9" * 5000 + b"}") + ".AAAA",
    "t1.AAAA", "t1..", "s1.AAAA", "x" * 5000, "t1.!!!.AAAA", "",
]


@pytest.mark.parametrize("token", HOSTILE, ids=range(len(HOSTILE)))
def test_lab_codec_never_raises_on_hostile_tickets(token: str) -> None:
    peeked = labcodec.peek(token)
    assert peeked.claims is None and peeked.text is None
    assert peeked.problem is None or peeked.problem.encode("utf-8")  # renderable text
    codec = LabCodec(LabRing.public("lab-test-key-0123456789abcdefghijklmnop"), verify_signature=False)
    trace = Trace()
    with pytest.raises(TicketRejected):
        codec.open(token, trace)
    assert trace.first_failure is not None and trace.first_failure.name == "signature"


def test_lab_codec_peek_shows_a_real_payload_and_hides_sealed_ones() -> None:
    codec = LabCodec(LabRing.public("lab-test-key-0123456789abcdefghijklmnop"))
    claims = {"v": 1, "sub": "bob", "work": {"env": "staging"}}
    assert labcodec.peek(codec.encode(claims)).claims == claims
    sealed = labcodec.peek(codec.encode(claims, sealed=True))
    assert sealed.claims is None and sealed.problem is None


# -- the run-it-yourself scripts against the real server over HTTP -------------------------------------


class FileClock:
    """The served app's clock: the epoch plus the seconds the scripts' `sleep` wrote to a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("0")

    def __call__(self) -> float:
        return EPOCH + float(self.path.read_text() or 0)


@pytest.fixture
def served(make_app: Callable[..., Flask], tmp_path: Path) -> Iterator[tuple[str, Path]]:
    clock_file = tmp_path / "slept"
    app = make_app(**SECRET_CONFIG, MRTR_CLOCK=FileClock(clock_file))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", clock_file
    finally:
        server.shutdown()
        thread.join()


def run_script(script: str, clock_file: Path) -> str:
    bob, alice = list(SECRET_TOKENS)
    # `sleep` moves the served app's clock instead of waiting in real time
    prelude = f'sleep() {{ echo $(( $(cat {clock_file}) + $1 )) > {clock_file}; }}\n'
    env = {**os.environ, "BOB_TOKEN": bob, "ALICE_TOKEN": alice}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", prelude + script], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def last_response(output: str) -> dict[str, Any]:
    lines = [line.removeprefix("data:").strip() for line in output.splitlines() if line.strip()]
    return json.loads(lines[-1])


def outcome_on_mcp(response: dict[str, Any]) -> str:
    if "error" in response:
        error = response["error"]
        # a ticket failure is the frozen error; an answer that does not fit its question gets its own
        if (error.get("data") or {}).get("reason") == INVALID_INPUT_RESPONSE:
            assert error["code"] == -32602 and error["message"].startswith("Invalid inputResponses: "), error
        else:
            assert (error["code"], error["message"]) == (-32602, FROZEN_TICKET_MESSAGE)
        return "refused"
    if response["result"].get("resultType") == "input_required":
        return "asked-again"
    text = response["result"]["content"][0]["text"]
    if text.startswith("nothing was deployed"):  # the user said no: the call ended without the work
        return "ended"
    assert text == "deployed to staging"
    return "completed"


@pytest.mark.parametrize("slug", MOVES)
def test_each_moves_script_replays_it_on_the_real_server(served: tuple[str, Path], slug: str) -> None:
    base, clock_file = served
    request = urllib.request.Request(f"{base}/playground/moves/{slug}", data=b"single_use=1", method="POST")
    with urllib.request.urlopen(request, timeout=30) as page:  # noqa: S310 - the test's own server
        html = page.read().decode()
    page = BeautifulSoup(html, "html.parser")
    script = page.select_one("#pg-sent-curl").get_text()
    assert "$BOB_TOKEN" in script and not any(t in script for t in SECRET_TOKENS)
    output = run_script(script, clock_file)
    move = COURSE.move(slug)
    observed = outcome_on_mcp(last_response(output))
    assert holds(move.expect, Outcome(observed))[0], output
    # the script replays what the page showed, retry for retry, on tickets /mcp minted
    assert observed == page.select_one("[data-verdict]")["data-verdict"], output
    messages = [line for line in script.splitlines() if re.match(r"# (Retry|Message) \d+ of \d+, as ", line)]
    assert len(messages) == len(page.select(".pg-earlier")) + 1, script


def test_the_lab_is_no_oracle_for_real_tickets(walked: tuple[Flask, list[tuple[str, str]]]) -> None:
    """A ticket /mcp minted, pasted into the custom move: the lab cannot verify it, nor see /mcp's store."""
    app, _ = walked
    client = app.test_client()
    headers = mcp_headers(next(iter(SECRET_TOKENS)))
    real = client.post("/mcp", json=mcp_call(2, "staging"), headers=headers).get_json()["result"]["requestState"]
    assert "deployed" in json.dumps(client.post("/mcp", json=mcp_call(3, "staging", real), headers=headers).get_json())
    form = next(f for f in custom_forms(app) if f["answer"] == "accept" and f["ticket"].startswith("t1."))
    for switches, stopped in (({}, "signature"), ({"no_signature": "1"}, None)):
        page = BeautifulSoup(client.post("/playground/custom", data={**form, **switches, "ticket": real},
                                         headers=HX).get_data(as_text=True), "html.parser")
        failure = page.select_one("[data-first-failure]")
        # with the check on, lab keys never verify a real ticket; with it off, the lab's own fresh store
        # lets the already-redeemed real ticket through: what /mcp remembers never shows here
        assert (failure["data-first-failure"] or None if failure else None) == stopped
