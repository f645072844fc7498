"""The input guard (web/site/inputs.py): its text checks, what it refuses on the pages and how it says so,
that it leaves /mcp alone, that it knows every field the views read, and that whatever a page shows
back of a visitor's input is escaped."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from flask import Flask
from flask.testing import FlaskClient

from moves.labcodec import peek
from mrtr.tickets import b64decode_strict, b64encode, parse_claims
from mrtr.wire import lone_surrogate_escape, utf8_problem
from tests.corpus.hostile import Route
from tests.corpus.page_samples import custom_form, page_routes
from tests.web.helpers import HX, rendered
from web.site.inputs import (
    FIELDS,
    MAX_FIELDS,
    MAX_QUERY_BYTES,
    UNGUARDED,
    json_text_problem,
    text_problem,
    ticket_problem,
)

ROOT = Path(__file__).resolve().parents[2]
LESSON = "when-the-server-needs-input"


def signed(payload: bytes) -> str:
    return f"t1.{b64encode(payload)}.AAAA"


def error_text(response) -> str:  # noqa: ANN001
    block = BeautifulSoup(response.data, "html.parser").select_one(".error-page, .error-message")
    assert block is not None, response.data[:300]
    return block.get_text(" ", strip=True)


# -- the text checks ---------------------------------------------------------------------------------------


def test_utf8_problem_names_raw_surrogates_and_other_bad_bytes() -> None:
    assert utf8_problem("café ✓ 😀".encode()) is None
    assert "lone UTF-16 surrogate" in (utf8_problem(b"ab\xed\xa0\x80") or "")
    assert "bytes 3-5" in (utf8_problem(b"ab\xed\xa0\x80") or "")
    assert "FF" in (utf8_problem(b"\xff") or "")
    assert utf8_problem(b"\xc0\xaf") is not None  # an overlong "/"
    assert utf8_problem("é".encode("utf-16")) is not None


@pytest.mark.parametrize(("text", "lone"), [
    ("plain", False),
    ("\\ud83d\\ude00", False),  # a proper pair: 😀
    ("\\uD83D\\uDE00 and \\u00e9", False),
    ("\\\\ud800", False),  # an escaped backslash, then the letters "ud800"
    ("\\ud800", True),
    ("\\udfff", True),  # a low surrogate on its own
    ("\\ud83d", True),  # a high surrogate at the end
    ("\\ud83d x \\ude00", True),  # a pair split by text is two lone halves
    ("\\ud83d\\u0041", True),
    ("\\\\\\ud800", True),  # an escaped backslash, then an escape
    ("\\udc00\\ud800", True),  # low before high
])
def test_lone_surrogate_escapes_are_told_from_pairs_and_escaped_backslashes(text: str, lone: bool) -> None:
    assert lone_surrogate_escape(text) is lone


def test_text_problem_refuses_surrogates_and_control_characters_but_not_line_breaks() -> None:
    assert text_problem("line one\r\nline\ttwo ✓") is None
    assert "U+0000" in (text_problem("a\x00b") or "")
    assert "U+001B" in (text_problem("\x1b[31m") or "")
    assert "surrogate" in (text_problem("\ud800") or "")
    assert "surrogate escape" in (text_problem('{"a": "\\udfff"}') or "")


@pytest.mark.parametrize(("text", "problem"), [
    ('{"env": "staging", "n": [1, 2.5, -3e10]}', None),
    ("[" * 32 + "]" * 32, None),
    ("[" * 33, "nests deeper than 32"),
    ('{"a":' * 40, "nests deeper than 32"),
    ('["' + "[" * 100 + '"]', None),  # brackets inside a string are text
    ('["\\"' + "[" * 100 + '"]', None),  # ... even after an escaped quote
    ('{"env": NaN}', "NaN"),
    ("[Infinity]", "Infinity"),
    ('{"env": 1e999}', "too large"),
    ('{"env": -1e400}', "too large"),
    ("[" + "9" * 5000 + "]", "5000 characters"),
    ('"NaN and Infinity in a string"', None),
    ("{not json at all", None),  # the reader says why; this is not the guard's call
])
def test_json_text_problem(text: str, problem: str | None) -> None:
    found = json_text_problem(text)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_json_text_problem_can_leave_depth_to_the_reader() -> None:
    assert json_text_problem("[" * 5000, None) is None
    assert json_text_problem("[" * 5000 + "[NaN]", None) is not None


def test_ticket_problem_reads_only_signed_payloads_and_only_their_shape() -> None:
    assert ticket_problem(signed(b'{"v":1,"sub":"bob","exp":1790000120}')) is None
    assert "nests deeper" in (ticket_problem(signed(b"[" * 2900)) or "")
    assert "surrogate" in (ticket_problem(signed(b'{"v":1,"sub":"\\ud800"}')) or "")
    assert "5000 characters" in (ticket_problem(signed(b'{"exp":' + b"9" * 5000 + b"}")) or "")
    assert ticket_problem(signed(b'{"sub":"\xed\xa0\x80"}')) is None  # not UTF-8: the codec refuses it
    assert ticket_problem("t1.not base64!.x") is None
    assert ticket_problem("s1." + "A" * 60) is None  # sealed: nothing to read without the key
    assert ticket_problem("<script>") is None


# -- the codecs' own refusal: the lab's display decoding and the production parser ---------------------------


def test_the_codecs_refuse_payloads_no_server_writes_instead_of_raising() -> None:
    assert peek(signed(b"[" * 2900)).claims is None  # was a RecursionError
    assert "nests too deeply" in (peek(signed(b"[" * 2900)).problem or "")
    assert peek(signed(b'{"v":1,"sub":"\\ud800"}')).claims is None  # was rendered, then a UnicodeEncodeError
    assert peek(signed(b'{"v":1,"sub":"\\ud83d\\ude00"}')).claims == {"v": 1, "sub": "😀"}
    for body in (b"[" * 2900, b'{"v":1,"sub":"\\ud800"}'):
        with pytest.raises(ValueError):
            parse_claims(body)


def test_a_counter_mode_forged_sealed_ticket_is_refused_not_a_500(client: FlaskClient) -> None:
    """With the tag check off, AES-GCM is malleable: flip "staging" into a lone surrogate escape."""
    form = custom_form(client)
    response = client.get("/playground", query_string={"sealed": "1", "no_signature": "1"})
    ticket = BeautifulSoup(response.data, "html.parser").select_one("form.pg-custom-form [name=ticket]").get_text()
    assert ticket.startswith("s1.")
    raw = bytearray(b64decode_strict(ticket[3:]))
    tail = b'staging"}}'  # the plaintext's last bytes: ...,"work":{"env":"staging"}}
    start = len(raw) - 16 - len(tail)  # before the 16-byte tag
    for i, (was, becomes) in enumerate(zip(b"staging", b"\\ud800x", strict=True)):
        raw[start + i] ^= was ^ becomes
    form.update(ticket="s1." + b64encode(bytes(raw)), sealed="1", no_signature="1")
    response = client.post("/playground/custom", data=form)
    assert response.status_code == 200
    page = BeautifulSoup(response.data, "html.parser")
    assert page.select_one("[data-verdict]")["data-verdict"] == "refused"


# -- what the guard refuses on the pages ---------------------------------------------------------------------


def test_raw_surrogate_bytes_in_a_query_are_a_400_naming_the_field(client: FlaskClient) -> None:
    response = client.get("/playground?offset=%ED%A0%80")
    assert response.status_code == 400
    text = error_text(response)
    assert "“offset”" in text and "lone UTF-16 surrogate" in text and "query string" in text


def test_raw_surrogate_bytes_in_a_form_are_a_400_naming_the_field(client: FlaskClient) -> None:
    response = client.post("/playground/custom", data=b"ticket=%ED%A0%80&at=8",
                           content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert "“ticket”" in error_text(response) and "form" in error_text(response)
    response = client.post(f"/quiz/{LESSON}/why-sign-the-ticket/answer", data=b"choice=\xff",
                           content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and "not UTF-8" in error_text(response)


def test_a_field_name_that_is_not_utf8_is_refused(client: FlaskClient) -> None:
    response = client.get("/?%FF=1")
    assert response.status_code == 400 and "field name" in error_text(response)


def test_a_path_that_is_not_utf8_is_refused(client: FlaskClient) -> None:
    response = client.get("/lessons/%ED%A0%80")
    assert response.status_code == 400 and "address" in error_text(response)


def test_lone_surrogate_escapes_in_any_field_are_refused(client: FlaskClient) -> None:
    form = {**custom_form(client), "arguments": '{"env": "\\ud800"}'}
    response = client.post("/playground/custom", data=form)
    assert response.status_code == 400
    assert "“arguments”" in error_text(response) and "surrogate" in error_text(response)
    assert client.get("/quiz/" + LESSON, query_string={"progress": "\\udfff"}).status_code == 400


def test_proper_surrogate_pairs_and_escaped_backslashes_pass(client: FlaskClient) -> None:
    form = {**custom_form(client), "arguments": '{"env": "staging", "note": "\\ud83d\\ude00 \\\\ud800"}'}
    response = client.post("/playground/custom", data=form)
    assert response.status_code == 200  # the server judges it (extra arguments: refused at the request check)
    assert BeautifulSoup(response.data, "html.parser").select_one("[data-verdict]") is not None


def test_control_characters_are_refused_but_line_breaks_in_json_are_not(client: FlaskClient) -> None:
    assert client.post("/playground/custom", data={**custom_form(client), "minted_at": "1\x00"}).status_code == 400
    response = client.post("/playground/custom", data={**custom_form(client), "arguments": '{\r\n"env": "staging"\n}'})
    assert response.status_code == 200


def test_too_many_fields_too_long_a_value_and_too_long_a_query(client: FlaskClient) -> None:
    response = client.get("/playground?" + "&".join(f"x{i}=1" for i in range(MAX_FIELDS + 1)))
    assert response.status_code == 400 and f"more than {MAX_FIELDS} fields" in error_text(response)
    response = client.post("/playground/custom", data={**custom_form(client), "at": "8" * 33})
    assert response.status_code == 400 and "“at” is 33 characters long; it may be at most 32" in error_text(response)
    response = client.get("/?utm=" + "x" * MAX_QUERY_BYTES)
    assert response.status_code == 414 and "query string" in error_text(response)


def test_an_undeclared_field_gets_the_generic_checks_only(client: FlaskClient) -> None:
    assert client.get("/", query_string={"utm_source": "course-site"}).status_code == 200
    assert client.get("/", query_string={"utm_source": "x" * 1025}).status_code == 400


def test_multipart_forms_are_refused_with_415(client: FlaskClient) -> None:
    response = client.post("/playground/custom", data={"ticket": "x"}, content_type="multipart/form-data")
    assert response.status_code == 415 and "URL-encoded" in error_text(response)


def test_a_chunked_form_is_refused_with_411_instead_of_being_cut_at_the_limit(client: FlaskClient) -> None:
    response = client.post("/playground/custom", data=b"ticket=x", headers={"Transfer-Encoding": "chunked"},
                           content_type="application/x-www-form-urlencoded")
    assert response.status_code == 411 and "Content-Length" in error_text(response)


def test_an_oversized_form_is_a_413_page_saying_so(client: FlaskClient) -> None:
    response = client.post("/playground/custom", data={"arguments": "x" * (300 * 1024)})
    assert response.status_code == 413 and "larger than this site accepts" in error_text(response)


def test_huge_numbers_in_json_fields_are_refused(client: FlaskClient) -> None:
    for arguments in ('{"env": 1e999}', '{"env": ' + "1" * 5000 + "}", '{"env": NaN}'):
        response = client.post("/playground/custom", data={**custom_form(client), "arguments": arguments})
        assert response.status_code == 400 and "“arguments”" in error_text(response)


def test_the_playgrounds_own_depth_message_still_answers_deep_arguments(app: Flask, client: FlaskClient) -> None:
    form = {**custom_form(client), "arguments": "[" * 5000}
    with rendered(app) as names:
        response = client.post("/playground/custom", data=form, headers=HX)
    assert response.status_code == 400 and names[-1] == "playground/_error.html"


@pytest.mark.parametrize("query", ["autoplay=%C2%B2", "autoplay=" + "9" * 5000])
def test_demo_autoplay_must_be_a_short_ascii_number(client: FlaskClient, query: str) -> None:
    response = client.get("/demo?" + query)
    assert response.status_code == 400 and "“autoplay”" in error_text(response)
    assert client.get("/demo?autoplay=x").status_code == 200  # still ignored, as before


@pytest.mark.parametrize("query", ["maxwidth=%D9%A3", "maxheight=" + "9" * 5000, "url=http://[::1/quiz"])
def test_oembed_params_that_would_have_raised_are_400(client: FlaskClient, query: str) -> None:
    response = client.get(f"/oembed?url=http://localhost/quiz/{LESSON}&" + query)
    assert response.status_code == 400


def test_htmx_requests_get_the_error_fragment_not_a_page(app: Flask, client: FlaskClient) -> None:
    form = {**custom_form(client), "at": "\x00"}
    with rendered(app) as names:
        response = client.post("/playground/custom", data=form, headers=HX)
    assert response.status_code == 400 and names == ["errors/_error.html"]
    alert = BeautifulSoup(response.data, "html.parser").select_one("[role=alert]")
    assert alert is not None and "“at”" in alert.get_text()
    assert "frame-ancestors" in response.headers["Content-Security-Policy"]


def test_mcp_is_not_the_guards_business(client: FlaskClient) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}}
    response = client.post("/mcp?x=%ED%A0%80", data=json.dumps(message), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Authorization": "Bearer bob-token"})
    assert response.status_code == 200 and response.get_json()["jsonrpc"] == "2.0"


# -- the field list is complete --------------------------------------------------------------------------------


def test_every_route_is_declared(app: Flask) -> None:
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    assert endpoints - UNGUARDED <= set(FIELDS), "add the new route's fields to web.site.inputs.FIELDS"
    assert set(FIELDS) <= endpoints, "web.site.inputs.FIELDS names a route that no longer exists"


#: How the views read a field: request.args/form.get("x"), form.get("x"), _last(args, "x"), form["x"].
READS = re.compile(
    r"""(?:\b(?:args|form)\.(?:get|getlist)\(|(?:_last|\blast_value)\(\w+, |\b(?:args|form)\[)["'](\w+)["']""")


def test_every_field_a_view_reads_is_declared(app: Flask) -> None:
    path_arguments = {arg for rule in app.url_map.iter_rules() for arg in rule.arguments}  # oembed reads these
    declared = {name for fields in FIELDS.values() for name in fields} | path_arguments
    skipped = {ROOT / "web" / "mcp" / "routes.py", ROOT / "web" / "site" / "inputs.py"}
    read = {name for path in (ROOT / "web").rglob("*.py") if path not in skipped
            for name in READS.findall(path.read_text())}
    assert {"ticket", "offset", "progress", "choice", "autoplay", "url"} <= read  # the scan sees the views
    assert read <= declared, f"declare these in web.site.inputs.FIELDS: {sorted(read - declared)}"


# -- nothing a visitor sends comes back unescaped ---------------------------------------------------------------


def marker(route: Route, field: str) -> str:
    return f"\"'><script>mrtr-{route.method}-{route.endpoint}-{field}</script><img src=x onerror=alert(1)>"


def test_every_field_shown_back_on_a_page_is_escaped(app: Flask, client: FlaskClient) -> None:
    echoed: set[tuple[str, str]] = set()
    for route in page_routes(app, client):
        for field in route.fields:
            value = marker(route, field)
            pairs = {**route.base, field: value}
            if route.method == "POST":
                response = client.post(route.path, data=pairs)
            else:
                response = client.get(route.path, query_string=pairs)
            body = response.get_data(as_text=True)
            assert response.status_code < 500, (route, field)
            assert "<script>mrtr-" not in body and "<img src=x" not in body, (route.endpoint, field)
            if "&lt;script&gt;mrtr-" in body:
                echoed.add((route.endpoint, field))
    # The test sees reflection where it happens: the custom move keeps the learner's input in the form.
    assert {("playground.play_custom_move", f) for f in ("ticket", "arguments", "token_other")} <= echoed


def test_the_escaped_marker_shows_as_text_in_the_custom_form(client: FlaskClient) -> None:
    value = '<script>alert("x")</script>'
    form = {**custom_form(client), "arguments": value}
    page = BeautifulSoup(client.post("/playground/custom", data=form).data, "html.parser")
    assert page.select_one("#pg-custom-arguments").get_text() == value
    assert not page.find("script", string=re.compile("alert"))


def test_a_base64_ticket_that_decodes_to_markup_is_shown_escaped(client: FlaskClient) -> None:
    payload = b'{"v":1,"sub":"<script>alert(1)</script>","exp":1}'
    form = {**custom_form(client), "ticket": signed(payload)}
    body = client.post("/playground/custom", data=form).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in body
    assert base64.urlsafe_b64encode(payload).decode().rstrip("=") in body
