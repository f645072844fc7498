"""The checker's report draws each move with the lesson's sequence diagram: what a report row keeps of the
exchange (compact, JSON-safe, no token), how it becomes diagram steps, and the finished run's page."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup
from flask import Flask

from moves.catalog import load_moves
from moves.check import exchange_of, run_check, short_ticket
from moves.engine import play
from moves.labcodec import LabRing
from moves.targets.in_process import lab_target
from tests.browser.helpers import LiveServer
from tests.check.catalogue import EDITED, REPLAY, STOLEN
from tests.check.test_check_page import finish, form
from tests.check.test_cli import assert_exact_schema
from tests.moves.test_engine import messages_sent
from web.check.routes import SERVER_LANE, diagram_steps
from web.check.runner import redact
from web.site.sequence import sequence_model

RING = LabRing.public("check-diagram-key-0123456789abcdefghijkl")
MOVES = {m.slug: m for m in load_moves()}


def stored_run(app: Flask, run_id: str) -> str:
    """The run as the app's SQLite run store keeps it on disk, once no token is found in any of the store's files."""
    store = app.extensions["mrtr.check_runs"]
    kept = b"".join(p.read_bytes() for p in Path(store.directory).iterdir() if p.is_file())
    assert b"bob-token" not in kept and b"alice-token" not in kept
    with closing(sqlite3.connect(store.path)) as db:
        return str(db.execute("SELECT run FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


def kept(slug: str) -> list[dict[str, Any]]:
    """A move played against a lab server, kept as a report row keeps it, read back as the run file would."""
    result = play(MOVES[slug], lab_target(RING, now=1_790_000_000.0))
    return json.loads(json.dumps(exchange_of(result)))


def arrows(exchange: list[dict[str, Any]]) -> list[tuple[int, str, str, str, str]]:
    model = sequence_model(diagram_steps(exchange))
    return [(a.step, a.src, a.dst, a.label, a.ticket) for a in model["arrows"]]


def without_traces(exchange: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**step, "trace": None} for step in exchange]


def test_a_kept_exchange_holds_only_what_the_arrows_need() -> None:
    exchange = kept(REPLAY.slug)
    assert [s["role"] for s in exchange] == ["owner", "owner", "owner"]
    assert [s["at"] for s in exchange] == [0.0, REPLAY.before.at, REPLAY.at]
    sent = exchange[1]["sent"]
    assert set(sent) == {"jsonrpc", "id", "method", "params"} and set(sent["params"]) == {"name", "requestState"}
    issued = exchange[0]["response"]["result"]["requestState"]
    assert issued.count("…") == 1 and len(issued) == 23 and sent["params"]["requestState"] == issued
    assert exchange[0]["response"]["result"]["resultType"] == "input_required"
    assert [c["check"] for c in exchange[2]["trace"]][-1] == "single-use"


def test_report_rows_keep_their_exchange_but_the_json_schema_stays_exact() -> None:
    report = run_check(lab_target(RING, now=1_790_000_000.0))
    # Round one, then every retry the move sends (its `before` move's, one per junk shape), nothing else.
    assert [len(row.exchange) for row in report.moves] == [1 + messages_sent(MOVES[r.move]) for r in report.moves]
    json.dumps([row.exchange for row in report.moves])  # JSON-safe as the run file needs
    assert_exact_schema(json.loads(json.dumps(report.to_json())))


def test_steps_become_arrows_labelled_by_method_and_id_at_replica_a() -> None:
    exchange = without_traces(kept(REPLAY.slug))  # a remote server exposes no trace
    steps = diagram_steps(exchange)
    assert [(s.n, s.replica, s.role) for s in steps] == [(n, SERVER_LANE, "owner") for n in (1, 2, 3)]
    assert SERVER_LANE == "A"
    drawn = arrows(exchange)
    assert drawn[:2] == [(1, "client", "A", "tools/call deploy · id 2", ""),
                         (1, "A", "client", "result: input_required · id 2", "issued")]
    first, again = REPLAY.before.request_id, REPLAY.request_id
    assert drawn[2] == (2, "client", "A", f"tools/call deploy · id {first}", "carried")
    code = exchange[2]["response"]["error"]["code"]
    assert drawn[-1] == (3, "A", "client", f"error {code} · id {again}", "")
    assert not [a for a in drawn if "store" in (a[1], a[2])]  # no trace, no look-up in the store


def test_the_store_look_up_is_drawn_only_when_a_trace_exists() -> None:
    with_trace = arrows(kept(REPLAY.slug))
    assert [(a[0], a[1], a[2]) for a in with_trace if "store" in (a[1], a[2])] == [
        (2, "A", "store"), (2, "store", "A"), (3, "A", "store"), (3, "store", "A")]


def test_an_edited_ticket_is_drawn_as_edited_and_a_stolen_one_as_sent_by_the_second_user() -> None:
    tampered = arrows(without_traces(kept(EDITED.slug)))
    assert [a[4] for a in tampered if a[0] == 2 and a[1] == "client"] == ["edited"]
    stolen = diagram_steps(kept(STOLEN.slug))
    assert stolen[-1].role == "other" and stolen[-1].lines[0].note == "sent as the second user"
    assert [a[4] for a in arrows(kept(STOLEN.slug)) if a[0] == 2 and a[1] == "client"] == ["carried"]


def test_short_tickets_never_make_an_edited_ticket_look_issued() -> None:
    issued = "mrtr1." + "a" * 60 + ".sig0123456"
    edited = "mrtr1." + "a" * 30 + "b" + "a" * 29 + ".sig0123456"
    assert short_ticket(issued) == "mrtr1.aaaaaaaaaa…123456"
    assert short_ticket(edited, issued) != short_ticket(issued) and short_ticket(issued, issued) == short_ticket(issued)
    assert short_ticket("short") == "short"


def test_no_answer_and_malformed_steps_are_drawn_without_inventing_messages() -> None:
    exchange = [{"role": "owner", "at": 0, "sent": {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                       "params": {"name": "deploy"}},
                 "response": None, "error": "timed out after 10 s", "trace": None},
                "not a step", {"sent": "nor this"}, {"role": ["odd"], "sent": {"jsonrpc": "2.0", "id": 3}}]
    steps = diagram_steps(exchange)
    assert [len(s.lines) for s in steps] == [1, 1] and steps[0].error == "timed out after 10 s"
    assert steps[1].lines[0].note == "sent as the client"
    assert diagram_steps(None) == [] and diagram_steps({"a": 1}) == []


def test_redaction_removes_tokens_anywhere_in_a_kept_exchange() -> None:
    value = [{"error": {"message": "bad token bob-token"}, "n": 1, "list": ["xalice-tokenx"]}]
    assert redact(value, ("bob-token", "alice-token")) == [
        {"error": {"message": "bad token [token]"}, "n": 1, "list": ["x[token]x"]}]


def test_a_finished_report_draws_each_move_from_its_real_exchange(app_server: LiveServer) -> None:
    client = app_server.app.test_client()
    started = client.post("/check", data=form(app_server.url + "/mcp", skip_late="1"))
    run_id = started.headers["Location"].rsplit("/", 1)[1]
    html: BeautifulSoup = finish(app_server.app, client, started)
    stored = json.loads(stored_run(app_server.app, run_id))
    exchanges = html.select("section.check-exchanges details.check-exchange")
    assert [d["data-exchange"] for d in exchanges] == [r["data-move"] for r in html.select("tr[data-move]")]
    for details in exchanges:
        row = next(r for r in stored["rows"] if r["move"] == details["data-exchange"])
        first, last = row["exchange"][0], row["exchange"][-1]
        labels = [t.get_text() for t in details.select("svg.seq-wide g.seq-msg text.seq-label")]
        assert labels[:2] == [f"tools/call deploy · id {first['sent']['id']}",
                              f"result: input_required · id {first['sent']['id']}"]
        assert labels[-2:][0] == f"tools/call {last['sent']['params']['name']} · id {last['sent']['id']}"
        assert labels[-1].endswith(f"· id {last['sent']['id']}")
        assert len(details.select("svg.seq-narrow g.seq-msg")) == len(labels)
        words = [li.get_text(" ", strip=True) for li in details.select("details.seq-words ol.seq-text li")]
        assert len(words) == len(labels)
        assert words[0] == (f"Step 1: Client (bob) to Replica A via the load balancer: {labels[0]}. "
                            "sent as the ticket's owner")
        assert details.select_one(".seq")["data-current-step"] == str(len(row["exchange"]))
        badge = details.select_one("summary .check-badge")
        verdict = html.select_one(f'tr[data-move="{row["move"]}"]')["data-verdict"]
        assert badge["data-state"] == {"pass": "pass", "not-run": "skipped"}[verdict]
    stolen = html.select_one(f'details[data-exchange="{STOLEN.slug}"]')
    assert "sent as the second user" in stolen.select_one(".check-exchange-steps").get_text(" ")
    assert re.search(rf"Replica A to Client \(bob\) via the load balancer: error -?\d+ · id {STOLEN.request_id}",
                     stolen.select_one("ol.seq-text").get_text(" "))
    assert not html.select('details.check-exchange [data-from="store"]')  # a remote server shows no store
    assert "bob-token" not in str(html) and "alice-token" not in str(html)


class EchoHandler(BaseHTTPRequestHandler):
    """A server that repeats the caller's Authorization header in every refusal: a ticket, then the token back."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        params = message.get("params") or {}
        if message.get("method") == "tools/list":
            result: dict[str, Any] = {"tools": [{"name": "deploy", "inputSchema": {"type": "object"}}]}
        elif "requestState" in params:
            result = {}
        else:
            result = {"resultType": "input_required", "requestState": "echo-ticket-" + "x" * 40,
                      "inputRequests": {}}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id"), "result": result}
        if not result:
            reply = {"jsonrpc": "2.0", "id": message.get("id"),
                     "error": {"code": -32602, "message": f"who is {self.headers.get('Authorization')}?"}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_server_that_echoes_the_token_never_gets_it_into_the_run_file_or_the_page(app_server: LiveServer) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        client = app_server.app.test_client()
        started = client.post("/check", data=form(f"http://127.0.0.1:{httpd.server_address[1]}/mcp", skip_late="1"))
        run_id = started.headers["Location"].rsplit("/", 1)[1]
        page = str(finish(app_server.app, client, started))
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
    stored = stored_run(app_server.app, run_id)
    assert "who is Bearer [token]?" in stored and "who is Bearer [token]?" in page
    assert "bob-token" not in stored + page and "alice-token" not in stored + page


def test_diagrams_appear_once_the_run_is_over_so_a_poll_never_closes_an_open_one(app: Flask) -> None:
    store = app.extensions["mrtr.check_runs"]
    run = store.start("203.0.113.60", "http://127.0.0.1:9/mcp", 5, 600)
    run.rows = [{"move": STOLEN.slug, "title": STOLEN.title, "expected": "refused", "observed": "refused",
                 "verdict": "pass", "detail": "error -32602", "stops_at": "principal", "exchange": kept(STOLEN.slug)}]
    store.save(run)
    running = BeautifulSoup(app.test_client().get(f"/check/runs/{run.id}").get_data(as_text=True), "html.parser")
    assert running.select("tr[data-move=stolen]") and not running.select("details.check-exchange")
    run.state = "done"
    store.save(run)
    done = BeautifulSoup(app.test_client().get(f"/check/runs/{run.id}").get_data(as_text=True), "html.parser")
    details = done.select_one(f'details.check-exchange[data-exchange="{STOLEN.slug}"]')
    assert details is not None and not details.has_attr("open")
    checks = details.select("ol.check-exchange-checks li.check")  # the lab's trace, with the one check component
    assert [c["data-check"] for c in checks][:2] == ["signature", "principal"]
    assert checks[1]["data-state"] == "fail"
    assert not details.select("svg.seq-wide g.seq-store")  # stopped at check 2: the store was never asked


def test_an_arrow_names_only_what_its_request_carried() -> None:
    from web.site.sequence import message_label

    def call(**params: object) -> dict[str, object]:
        return {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "deploy", **params}}

    assert message_label(call(requestState="t1.x.y", inputResponses={}))[1] == "with requestState and the answer"
    assert message_label(call(requestState="t1.x.y"))[1] == "with requestState"  # the no-answer move
    assert message_label(call())[1] == ""
