"""Helpers for the web tests: which templates a request rendered, the page's HTML as a tree, and /mcp
requests of both protocol eras over the test client."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from bs4 import BeautifulSoup
from flask import Flask, template_rendered
from flask.testing import FlaskClient

from loopback.launchers import Served
from moves.catalog import Move, load_moves
from moves.engine import client_meta
from moves.target import Outcome

HX = {"HX-Request": "true"}

# -- moves picked from the catalogue by what they do, never by name ------------------------------------

MOVES = load_moves()


def move_where(test: Callable[[Move], bool], moves: tuple[Move, ...] = MOVES) -> Move:
    """The first move of the catalogue that passes `test` (a test about one kind of move picks it so)."""
    found = next((m for m in moves if test(m)), None)
    assert found is not None, "no move of the catalogue fits"
    return found


def honest_move(moves: tuple[Move, ...] = MOVES) -> Move:
    """The plain honest retry: the owner, in time, the ticket as issued, a yes, nothing sent before it."""
    return move_where(lambda m: m.expect == Outcome.COMPLETED and m.before is None and m.sender == "owner"
                      and m.ticket == "as-issued" and m.answer == "accept" and m.request == "same"
                      and m.timing == "in-time", moves)


def stopped_move(check: str, moves: tuple[Move, ...] = MOVES) -> Move:
    """The first move a sound server stops at `check` (what a page shows when that check is switched off)."""
    from web.site.moveviews import stopped_first_by

    move = stopped_first_by(moves, check)
    assert move is not None, f"no move of the catalogue is stopped by {check}"
    return move


@contextmanager
def rendered(app: Flask) -> Iterator[list[str]]:
    """The names of the templates rendered (top level, not includes) while the block runs."""
    names: list[str] = []

    def record(sender: Flask, template, context, **extra) -> None:  # noqa: ANN001
        names.append(template.name)

    template_rendered.connect(record, app)
    try:
        yield names
    finally:
        template_rendered.disconnect(record, app)


def soup(html: bytes | str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def assert_csp_clean(html: bytes | str | BeautifulSoup) -> None:
    """No inline script, no style attribute or element, no on* handler: what our CSP would block. (A page already
    parsed may be passed as it is: parsing a large page costs more than rendering it.)"""
    tree = html if isinstance(html, BeautifulSoup) else soup(html)
    for script in tree.find_all("script"):
        assert script.get("src"), f"inline script: {script}"
    assert not tree.find_all("style"), "a <style> element"
    for tag in tree.find_all(True):
        assert "style" not in tag.attrs, f"style attribute on {tag.name}"
        handlers = [a for a in tag.attrs if a.lower().startswith("on")]
        assert not handlers, f"{handlers} on {tag.name}"
        for attr in ("hx-on", "hx-vars", "hx-vals"):
            assert not any(a.startswith(attr) for a in tag.attrs), f"{attr} on {tag.name}"


def assert_unique_ids(html: bytes | str | BeautifulSoup, *, ignore: frozenset[str] = frozenset()) -> None:
    ids = [tag["id"] for tag in (html if isinstance(html, BeautifulSoup) else soup(html)).find_all(id=True)]
    dupes = sorted({i for i in ids if ids.count(i) > 1} - ignore)
    assert not dupes, f"duplicate ids: {dupes}"


def play_under(move: Any, *, single_use: bool = True, sealed: bool = False, no_signature: bool = False,
               offset: int = 0, key: str = "lesson-claims-test-key-0123456789abcdef") -> tuple[str, str | None]:
    """Play `move` on a lab server under the playground's switches: (verdict word, first failing check)."""
    from moves.engine import Call, play
    from moves.labcodec import LabRing
    from moves.targets.in_process import lab_target

    target = lab_target(LabRing.public(key), now=1_790_000_000.0, single_use=single_use, sealed=sealed,
                        verify_signature=not no_signature)
    played = play(replace(move, at=move.at + offset), target, Call(client_name="mrtr-lab-playground"))
    words = {Outcome.COMPLETED: "deployed", Outcome.REFUSED: "refused", Outcome.ASKED_AGAIN: "asked-again"}
    return words.get(played.outcome, str(played.outcome)), played.stopped_at


# -- /mcp over the test client ---------------------------------------------------------------------

MODERN = "2026-07-28"
ACCEPT_BOTH = "application/json, text/event-stream"


def headers_for(message: Any, token: str | None = "bob-token", **extra: str) -> dict[str, str]:
    """The headers an honest 2026-07-28 client sends for `message`."""
    out = {"Accept": ACCEPT_BOTH, "MCP-Protocol-Version": MODERN}
    if token:
        out["Authorization"] = f"Bearer {token}"
    if isinstance(message, dict) and isinstance(message.get("method"), str):
        out["Mcp-Method"] = message["method"]
        params = message.get("params") or {}
        name = params.get("uri") if message["method"] == "resources/read" else params.get("name")
        if isinstance(name, str):
            out["Mcp-Name"] = name
    for key, value in extra.items():  # replace, whatever the case of the name
        out = {k: v for k, v in out.items() if k.lower() != key.lower()}
        out[key] = value
    return {k: v for k, v in out.items() if v is not None}


def post(
    client: FlaskClient,
    message: Any,
    token: str | None = "bob-token",
    *,
    raw: bytes | None = None,
    content_type: str = "application/json",
    **extra: str,
):
    body = raw if raw is not None else json.dumps(message).encode()
    return client.post("/mcp", data=body, headers=headers_for(message, token, **extra), content_type=content_type)


# -- 2025-11-25 sessions over the test client ---------------------------------------------------------

LEGACY = "2025-11-25"
CONFIRM = {"confirm": {"action": "accept", "content": {"confirm": True}}}


def legacy_headers(token: str = "bob-token", sid: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT_BOTH, "MCP-Protocol-Version": LEGACY,
               "Content-Type": "application/json"}
    if sid:
        headers["Mcp-Session-Id"] = sid
    return headers


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {"elicitation": {"form": {}}},
                         "clientInfo": {"name": "test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def legacy_call(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "deploy", "arguments": {"env": "prod"}}}


def sse_data(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def open_session(client: FlaskClient, token: str = "bob-token") -> str:
    response = client.post("/mcp", data=json.dumps(INITIALIZE), headers=legacy_headers(token))
    assert response.status_code == 200, response.get_data(as_text=True)
    sid = response.headers["Mcp-Session-Id"]
    assert client.post("/mcp", data=json.dumps(INITIALIZED), headers=legacy_headers(token, sid)).status_code == 202
    return sid


def start_call(client: FlaskClient, sid: str, request_id: int, token: str = "bob-token"):
    """A legacy deploy on `sid`, read up to its question: (the streaming response, the question)."""
    response = client.post("/mcp", data=json.dumps(legacy_call(request_id)), headers=legacy_headers(token, sid),
                           buffered=False)
    assert response.status_code == 200 and response.mimetype == "text/event-stream", response.get_data(as_text=True)
    stream = iter(response.response)
    [asked] = sse_data(next(stream).decode())
    assert asked["method"] == "elicitation/create"
    return response, stream, asked


def answer(client: FlaskClient, sid: str, asked: dict[str, Any], token: str = "bob-token") -> int:
    reply = {"jsonrpc": "2.0", "id": asked["id"], "result": CONFIRM["confirm"]}
    return client.post("/mcp", data=json.dumps(reply), headers=legacy_headers(token, sid)).status_code


# -- 2026-07-28 messages, and the served app over real HTTP --------------------------------------------

#: Far below the 300 s an abandoned call used to hold its thread, far above what a fixed one takes.
DEADLINE_S = 20.0


def wait_until(predicate: Callable[[], Any], what: str, deadline_s: float = DEADLINE_S) -> Any:
    """Poll `predicate` until it is truthy, or fail after `deadline_s` seconds."""
    deadline = time.monotonic() + deadline_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {deadline_s:g} s: {what}")
        time.sleep(0.05)


def modern(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": client_meta()}}


def modern_headers(message: dict[str, Any], token: str = "bob-token") -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT_BOTH, "MCP-Protocol-Version": MODERN,
               "Mcp-Method": message["method"], "Content-Type": "application/json"}
    name = (message.get("params") or {}).get("name")
    if isinstance(name, str):
        headers["Mcp-Name"] = name
    return headers


TOOLS_LIST = modern("tools/list")


def request(served: Served, message: Any, headers: dict[str, str], *, raw: bytes | None = None,
            timeout: float = DEADLINE_S) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=timeout)
    try:
        conn.request("POST", "/mcp", body=raw if raw is not None else json.dumps(message).encode(), headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def raw_request(port: int, head: dict[str, str], body: bytes, *, chunked: bool = False,
                length: int | None = None) -> socket.socket:
    """Send a request by hand (chunked, or a Content-Length of `length` or the body's) and return the socket."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in head.items())]
    size = len(body) if length is None else length
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    return sock


def log_lines(served: Served, needle: str) -> list[str]:
    return [line for line in served.log_path.read_text(errors="replace").splitlines() if needle in line]


# -- a pasted checker report (the second lesson's "paste what the checker printed") -------------------


def checker_report(failing: set[str] = frozenset(), probes_failing: set[str] = frozenset()) -> str:
    """A checker report as the lesson's report form takes it, with the moves and probes named failing."""
    moves = [m.slug for m in MOVES]
    probes = ["capability", "version", "missing-answer", "same-error", "result-type"]
    return json.dumps({"target": "python server.py", "ok": not failing and not probes_failing,
                       "moves": [{"move": m, "expected": "refused", "observed": "x", "ok": m not in failing,
                                  "detail": ""} for m in moves],
                       "probes": [{"probe": p, "ok": p not in probes_failing, "detail": ""} for p in probes]})


def answer_form(app: Any, q: Any, right: bool = True) -> dict[str, Any]:
    """The form fields that answer quiz question `q` rightly (or wrongly), whatever its kind: a choice, or for a
    task answered by doing (web/quiz/tasks.py) the order of the checks or a raw retry the lab server deploys."""
    import json

    from mrtr import CHECKS
    from web.quiz.tasks import task_view

    if not q.free:
        return {"choice": q.answer if right else next(c.id for c in q.choices if c.id != q.answer)}
    if q.task.kind == "order":
        return {"order": list(CHECKS) if right else [CHECKS[1], CHECKS[0], *CHECKS[2:]]}
    if q.task.kind == "draw":  # drawn afresh: the server's own play of the draw says which option is right
        from web.quiz import draws as quiz_draws
        from web.site.content import get_content

        with app.test_request_context():
            lesson = next(lesson for lesson in get_content().lessons if q in lesson.questions)
            drawn = task_view(q, lesson.slug).draw
            played = quiz_draws.play(quiz_draws.read_token(lesson.slug, q.id, drawn.token))
        good = quiz_draws.right_option(played, q.task.ask)
        return {"draw": drawn.token,
                "predict": good if right else next(o for o, _ in drawn.options if o != good)}
    with app.test_request_context():
        view = task_view(q)
    retry = json.loads(view.retry)
    if right:
        retry["id"] = 2
        retry["params"]["arguments"] = {"env": "staging"}
        retry["params"]["inputResponses"]["confirm"]["content"]["confirm"] = True
    return {"retry": json.dumps(retry), "seed": view.seed, "minted_at": view.minted_at}
