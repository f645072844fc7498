"""The HTTP and stdio targets: real exchanges with the app, headers mirrored from the body, and every
kind of bad peer turned into a plain-words transport_error (never an exception, never a hang)."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import pytest

from moves.target import Reply
from moves.targets.http import HttpTarget, TargetConfigError, header_value
from moves.targets.remote import Timing, ticket_expiry
from moves.targets.stdio import StdioConfigError, StdioTarget

HERE = Path(__file__).resolve().parent
TOKENS = [("bob", "bob-token"), ("alice", "alice-token")]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}


def request(rid: int, method: str, params: dict[str, Any] | None = None, version: str | None = None) -> dict[str, Any]:
    meta = dict(META)
    if version:
        meta["io.modelcontextprotocol/protocolVersion"] = version
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**(params or {}), "_meta": meta}}


def deploy(rid: int, **extra: Any) -> dict[str, Any]:
    return request(rid, "tools/call", {"name": "deploy", "arguments": {"env": "staging"}, **extra})


# -- HTTP ---------------------------------------------------------------------------------------------


def test_http_target_talks_to_the_apps_mcp_as_both_principals(mcp_url: str) -> None:
    target = HttpTarget(mcp_url, TOKENS)
    listed = target.send("owner", request(1, "tools/list"))
    assert listed.transport_error is None and listed.http_status == 200
    assert "deploy" in [t["name"] for t in listed.response["result"]["tools"]]
    minted = target.send("owner", deploy(2))
    ticket = minted.response["result"]["requestState"]
    answer = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    stolen = target.send("other", deploy(3, requestState=ticket, inputResponses=answer))
    assert stolen.response["error"]["code"] == -32602
    honest = target.send("owner", deploy(4, requestState=ticket, inputResponses=answer))
    assert honest.response["result"]["content"][0]["text"] == "deployed to staging"
    assert target.label == mcp_url and (target.owner, target.other) == ("bob", "alice")


def test_http_target_mirrors_the_body_in_the_transport_headers(bad_server: str) -> None:
    target = HttpTarget(bad_server + "/echo", TOKENS)
    seen = target.send("other", request(1, "tools/call", {"name": "déployer", "arguments": {}}, version="1900-01-01"))
    headers = {k.lower(): v for k, v in seen.response["result"]["headers"].items()}
    assert headers["mcp-protocol-version"] == "1900-01-01"
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == "=?base64?" + base64.b64encode("déployer".encode()).decode() + "?="
    assert headers["authorization"] == "Bearer alice-token"
    assert headers["accept"] == "application/json, text/event-stream"
    resource = target.send("owner", request(2, "resources/read", {"uri": "mrtr://lab/checks"}))
    headers = {k.lower(): v for k, v in resource.response["result"]["headers"].items()}
    assert headers["mcp-name"] == "mrtr://lab/checks" and headers["authorization"] == "Bearer bob-token"


def test_http_target_sends_param_headers_for_arguments_a_tool_marks(bad_server: str) -> None:
    target = HttpTarget(bad_server + "/echo", TOKENS)
    target._param_headers.update({"deploy": {"env": "Env"}})
    seen = target.send("owner", deploy(1))
    assert {k.lower(): v for k, v in seen.response["result"]["headers"].items()}["mcp-param-env"] == "staging"


def test_header_values_use_the_sentinel_only_when_needed() -> None:
    assert header_value("deploy") == "deploy"
    assert header_value(" padded").startswith("=?base64?")
    assert header_value("=?base64?Zm9v?=").startswith("=?base64?PT9")


def test_http_target_reads_an_sse_answer_and_keeps_the_notifications(bad_server: str) -> None:
    reply = HttpTarget(bad_server + "/sse", TOKENS).send("owner", request(7, "tools/list"))
    assert reply.transport_error is None
    assert reply.response == {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete"}}
    assert [n["method"] for n in reply.notifications] == ["notifications/progress"]


@pytest.mark.parametrize(("path", "words"), [
    ("/html", "HTTP 502 with an HTML page ('502 Bad Gateway')"),
    ("/login", "HTML page ('Sign in')"),
    ("/notjson", "is not JSON"),
    ("/notrpc", "not JSON-RPC 2.0"),
    ("/wrongid", "answers id 424242"),
    ("/empty", "HTTP 202 with an empty body"),
    ("/redirect", "does not follow redirects"),
    ("/huge", "larger than 64 KiB"),
    ("/endless-json", "larger than 64 KiB"),
    ("/endless-sse", "passed 64 KiB without answering"),
    ("/silent", "no complete answer within 0.5 s"),
])
def test_http_target_explains_every_bad_answer(bad_server: str, path: str, words: str) -> None:
    timeout = 0.5 if path == "/silent" else 30
    reply = HttpTarget(bad_server + path, TOKENS, timeout=timeout, max_bytes=64 * 1024).send("owner", request(1, "x"))
    assert reply.response is None
    assert words in (reply.transport_error or "")
    assert "bob-token" not in reply.transport_error


def test_http_target_takes_an_error_with_id_null_as_the_answer(bad_server: str) -> None:
    reply = HttpTarget(bad_server + "/nullid", TOKENS).send("owner", request(5, "tools/list"))
    assert reply.transport_error is None and reply.http_status == 400
    assert reply.response == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


def test_http_target_explains_a_refused_connection_and_a_refused_token(mcp_url: str) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        refused = HttpTarget(f"http://127.0.0.1:{port}/mcp", TOKENS).send("owner", request(1, "tools/list"))
    assert "connection refused" in refused.transport_error
    wrong = HttpTarget(mcp_url, [("bob", "not-a-token"), ("alice", "alice-token")]).send("owner", request(1, "x"))
    assert wrong.transport_error == "HTTP 401: the server refused the bearer token of bob"
    assert "not-a-token" not in wrong.transport_error


@pytest.mark.parametrize(("url", "tokens", "words"), [
    ("ftp://example.com/mcp", TOKENS, "http:// or https://"),
    ("http://bob:pw@127.0.0.1/mcp", TOKENS, "not in the URL"),
    ("http://127.0.0.1:99999999/mcp", TOKENS, "port is not a number"),
    ("http://127.0.0.1/mcp", TOKENS[:1], "given twice"),
    ("http://127.0.0.1/mcp", [("bob", "a"), ("bob", "b")], "different names"),
])
def test_http_target_refuses_a_config_it_cannot_use(url: str, tokens: Any, words: str) -> None:
    with pytest.raises(TargetConfigError, match=words):
        HttpTarget(url, tokens)


# -- the late move's wait ------------------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_late_wait_runs_until_just_past_a_readable_expiry_and_reports_progress() -> None:
    fake = FakeTime()
    timing = Timing(clock=fake.clock, sleep=fake.sleep)
    timing.begin()
    seen: list[tuple[float, float]] = []
    assert timing.advance(300, past_expiry=True, expires_at=1002.0, on_progress=lambda w, t: seen.append((w, t)))
    assert fake.now == pytest.approx(1003.0)
    assert seen[0] == (0.0, pytest.approx(3.0)) and seen[-1] == (pytest.approx(3.0), pytest.approx(3.0))
    assert timing.advance(8, past_expiry=False, expires_at=None) and fake.now == pytest.approx(1003.0)


def test_the_late_wait_falls_back_to_late_after_or_declines() -> None:
    fake = FakeTime()
    timing = Timing(late_after=5, clock=fake.clock, sleep=fake.sleep)
    timing.begin()
    assert timing.advance(300, past_expiry=True, expires_at=None) and fake.now == pytest.approx(1005.0)
    unknown = Timing(clock=fake.clock, sleep=fake.sleep)
    assert not unknown.advance(300, past_expiry=True, expires_at=None)
    assert "--late-after" in unknown.skip_reason
    skipped = Timing(skip_late=True, clock=fake.clock, sleep=fake.sleep)
    assert not skipped.advance(300, past_expiry=True, expires_at=1.0) and "--skip-late" in skipped.skip_reason
    too_long = Timing(clock=fake.clock, sleep=fake.sleep, max_wait=60)
    assert not too_long.advance(300, past_expiry=True, expires_at=fake.now + 3600)
    assert "longer than the 60 s" in too_long.skip_reason and fake.now == pytest.approx(1005.0)


def test_ticket_expiry_reads_jwt_like_tickets_and_nothing_else() -> None:
    body = base64.urlsafe_b64encode(b'{"p": {"step": "confirm"}, "exp": 1790000120}').rstrip(b"=").decode()
    assert ticket_expiry(f"v1.{body}.c2lnbmF0dXJl") == 1790000120.0
    assert ticket_expiry("v1.AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8") is None  # sealed bytes
    assert ticket_expiry("not a ticket at all") is None
    no_exp = base64.urlsafe_b64encode(b'{"exp": "soon"}').decode()
    assert ticket_expiry(f"t1.{no_exp}.sig") is None


# -- stdio ---------------------------------------------------------------------------------------------


def fake(mode: str, *extra: str) -> list[str]:
    return [sys.executable, str(HERE / "fake_stdio.py"), mode, *extra]


@pytest.mark.external  # stdio server processes (tests/check/fake_stdio.py)
def test_stdio_target_starts_one_process_per_principal_lazily_and_ends_them() -> None:
    target = StdioTarget(fake("echo"))
    try:
        bob = target.send("owner", request(1, "tools/list"))
        assert bob.response["result"]["principal"] == "bob"
        assert [n["method"] for n in bob.notifications] == ["notifications/progress"]
        assert list(target._procs) == ["owner"]
        assert target.send("other", request(2, "tools/list")).response["result"]["principal"] == "alice"
        assert target.send("owner", request(3, "tools/list")).response["result"]["principal"] == "bob"
        procs = [p.proc for p in target._procs.values()]
    finally:
        target.close()
    assert all(p.returncode is not None for p in procs)
    target.close()  # twice is fine


@pytest.mark.external  # stdio server processes (tests/check/fake_stdio.py)
def test_stdio_target_names_principals_through_the_chosen_variable() -> None:
    with StdioTarget(fake("echo", "API_USER"), [("carol", "c-1"), ("dave", "d-2")], principal_env="API_USER") as t:
        assert t.send("other", request(1, "x")).response["result"]["principal"] == "d-2"
        assert (t.owner, t.other) == ("carol", "dave")


@pytest.mark.external  # `python -m mrtr serve` as a process
def test_stdio_target_talks_to_mrtr_serve() -> None:
    env = {"MRTR_SECRET_KEYS": "stdio-test-key-0123456789abcdef0123456789abcdef", "MRTR_STORE": "memory",
           "PATH": "/usr/bin:/bin"}
    with StdioTarget([sys.executable, "-m", "mrtr", "serve"], env=env) as target:
        minted = target.send("owner", deploy(1))
        assert minted.response["result"]["resultType"] == "input_required"


@pytest.mark.external  # stdio server processes (tests/check/fake_stdio.py)
@pytest.mark.parametrize(("mode", "words"), [
    ("garbage", "is not JSON: 'Starting server on stdio... ok'"),
    ("silent", "no answer within 0.5 s"),
    ("flood", "more than 64 KiB without answering"),
    ("longline", "a line longer than 64 KiB"),
    ("exit", "exited with code 3; its stderr ended: fake: cannot open the database"),
])
def test_stdio_target_explains_every_bad_process(mode: str, words: str) -> None:
    target = StdioTarget(fake(mode), timeout=0.5 if mode == "silent" else 30, max_bytes=64 * 1024)
    try:
        if mode == "exit":
            target._process("owner").proc.wait(timeout=10)  # type: ignore[union-attr]
        reply = target.send("owner", request(1, "tools/list"))
        assert reply.response is None and words in reply.transport_error, reply.transport_error
        again = target.send("owner", request(2, "tools/list"))
        assert again.response is None and again.transport_error
    finally:
        target.close()
    assert not target._procs


@pytest.mark.external  # tries to start a process
def test_stdio_target_explains_a_command_that_does_not_exist() -> None:
    with StdioTarget(["/nonexistent/mcp-server", "--stdio"]) as target:
        reply = target.send("owner", request(1, "tools/list"))
    assert reply == Reply(None, transport_error="could not start '/nonexistent/mcp-server': no such command")


@pytest.mark.parametrize(("command", "words"), [("", "empty"), ("'unclosed", "cannot be split")])
def test_stdio_target_refuses_a_command_it_cannot_use(command: str, words: str) -> None:
    with pytest.raises(StdioConfigError, match=words):
        StdioTarget(command)


@pytest.mark.external  # stdio server processes (tests/check/fake_stdio.py)
def test_stdio_stderr_is_drained_so_a_chatty_server_never_blocks() -> None:
    script = "import sys\nsys.stderr.write('e' * 300000)\nsys.stderr.flush()\nfor line in sys.stdin:\n" \
             "    print('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}', flush=True)\n"
    with StdioTarget([sys.executable, "-c", script], timeout=5) as target:
        assert target.send("owner", request(1, "x")).response == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert len(target._procs["owner"].stderr_tail()) <= 200
