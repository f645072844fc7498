"""`mrtr call` against the app's real /mcp (served from a thread) and against the scripted server.

The interactive runs go through a pseudo-terminal: the command's stdin and stdout are the pty's slave end, the test
types on the master end and reads until the prompt it expects appears, under a deadline (never a sleep). URL mode
is finished the way a person finishes it: the test posts the key to the lab's out-of-band page, then presses Enter.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
from flask import Flask

from tests.browser.helpers import serve

from .scripted import scripted_server
from .terminal import MakeTerminal, run

DEADLINE = 20.0
TOKEN = ["--token", "bob-token"]
KEY = "sk-lab-5f3a9c0e77d2"


@pytest.fixture
def mcp(app: Flask) -> Iterator[str]:
    with serve(app) as live:
        yield f"{live.url}/mcp"


def finish_page(url: str, mcp: str) -> None:
    """What the person does in the browser: enter the key on the lab's page."""
    page = mcp.removesuffix("/mcp") + urllib.parse.urlsplit(url).path
    data = urllib.parse.urlencode({"key": KEY}).encode()
    with urllib.request.urlopen(urllib.request.Request(page, data=data), timeout=DEADLINE) as response:
        assert response.status == 200


def test_with_no_tool_it_lists_the_tools_with_their_arguments(mcp: str) -> None:
    code, out, _err = run([mcp, *TOKEN])
    assert code == 0
    assert "deploy: Deploy the current build" in out and "    env (string, required)" in out
    assert {"deploy", "provision", "release", "report", "connect"} <= set(re.findall(r"^(\w+):", out, re.M))


def test_every_tool_of_the_app_by_schema_completes(mcp: str) -> None:
    code, out, err = run(["--every-tool", "--answer-by-schema", mcp, *TOKEN])
    assert (code, err) == (0, ""), out
    assert "deploy: complete: deployed to example" in out and "provision: complete: provisioned" in out
    assert "connect: complete: nothing was connected: the user chose decline" in out  # URL mode: never accepted


def test_scripted_answers_complete_every_lesson_tool_over_several_rounds(mcp: str) -> None:
    cases = [
        ("deploy", ["--arg", "env=qa"], {"confirm": {"confirm": True}}, "deployed to qa"),
        ("provision", ["--arg", "env=qa"], {"region": {"region": "us-east"}, "size": {"size": "large"}},
         "provisioned a large qa database in us-east"),
        ("release", ["--arg", "version=2.0"], {"notes": {"action": "accept", "content": {"notes": "shiny"}},
                                               "notify": [{"notify": True}]},
         "released 2.0 (5 characters of notes; the team was told)"),
        ("report", ["--arg", "period=May"], {}, "report for May: ready"),
    ]
    for tool, args, answers, text in cases:
        code, out, err = run([mcp, tool, *args, "--answers", json.dumps(answers), *TOKEN])
        assert (code, err) == (0, ""), (tool, out, err)
        assert text in out, (tool, out)


def test_raw_prints_every_round_and_a_wrong_script_is_a_one_line_refusal(mcp: str) -> None:
    code, out, _err = run([mcp, "deploy", "--arg", "env=qa", "--raw", "--answers", '{"confirm":{"confirm":true}}',
                           *TOKEN])
    sent = [json.loads(line[4:]) for line in out.splitlines() if line.startswith("--> ")]
    assert code == 0 and [m["method"] for m in sent] == ["server/discover", "tools/list", "tools/call", "tools/call"]
    assert sent[3]["params"]["inputResponses"] == {"confirm": {"action": "accept", "content": {"confirm": True}}}
    code, _out, err = run([mcp, "deploy", "--arg", "env=qa", "--answers", '{"other":{}}', *TOKEN])
    assert code == 1 and err == "error: --answers has no answer for the question 'confirm'\n"


def test_a_person_answers_field_by_field_in_a_terminal_with_a_wrong_value_asked_again(
        mcp: str, terminal: MakeTerminal) -> None:
    term = terminal([mcp, "provision", *TOKEN])
    term.expect("env (string, required)")
    term.type("qa")
    term.expect("accept, decline or cancel? [accept]: ")
    term.type("")
    term.expect("region (string, required, one of eu-west | us-east | ap-south)")
    term.type("mars")
    term.expect("! region must be one of")
    term.type("2")
    term.expect("Which size for the qa database in us-east?\n  accept, decline or cancel? [accept]: ")
    term.type("a")
    term.expect("size (string, required, one of small | large)")
    term.type("large")
    assert "provisioned a large qa database in us-east" in term.expect("provisioned")
    assert term.close() == 0


def test_decline_in_the_terminal_ends_the_call(mcp: str, terminal: MakeTerminal) -> None:
    term = terminal([mcp, "deploy", "--arg", "env=prod", *TOKEN])
    term.expect("accept, decline or cancel? [accept]: ")
    term.type("decline")
    assert "nothing was deployed to prod: the user chose decline" in term.expect("the user chose")
    assert term.close() == 0


def test_url_mode_shows_the_address_and_waits_until_the_person_finished_the_page(
        mcp: str, terminal: MakeTerminal) -> None:
    term = terminal([mcp, "connect", "--arg", "service=billing", *TOKEN])
    shown = term.expect("Press Enter once you have finished the page")
    url = re.findall(r"https?://\S+/out-of-band/\S+", shown)[-1]
    finish_page(url, mcp)
    term.type("")
    assert "connected billing" in term.expect("connected billing")
    assert term.close() == 0 and KEY not in term.seen


def test_scripted_answers_still_wait_for_the_person_on_a_url_page(mcp: str,
                                                                  terminal: MakeTerminal) -> None:
    term = terminal([mcp, "connect", "--arg", "service=billing", "--answers", '{"key":{"action":"accept"}}', *TOKEN])
    shown = term.expect("Press Enter once you have finished the page")
    finish_page(re.findall(r"https?://\S+/out-of-band/\S+", shown)[-1], mcp)
    term.type("")
    term.expect("connected billing")
    assert term.close() == 0


@pytest.mark.parametrize(("tool", "reason"), [
    ("bogus", "error: tools/call answered resultType 'bogus', which this client does not know"),
    ("empty", "error: the server answered input_required with neither inputRequests nor requestState"),
    ("sampling", "error: input request 's' is sampling/createMessage, which this client did not declare"),
    ("foo", "error: input request 'f' is 'foo/bar', which is not an embedded request"),
    ("loop", "error: tools/call loop still asked for input after 2 retries; the client stops at max_rounds=2"),
    ("bad_header", "error: the tool 'bad_header' is not called: score: x-mcp-header is only for string"),
])
def test_each_refusal_exits_non_zero_with_one_line(tool: str, reason: str) -> None:
    with scripted_server() as script:
        code, _out, err = run([script.url, tool, "--answer-by-schema", "--max-rounds", "2"])
    assert code == 1 and err.startswith(reason) and err.count("\n") == 1, err


def test_usage_errors_exit_2() -> None:
    assert run(["ftp://x/mcp"])[0] == 2
    with scripted_server() as script:
        code, _out, err = run([script.url, "nope"])
        assert code == 2 and "lists no tool 'nope'" in err
        code, _out, err = run([script.url, "headers", "--arg", "count=many", "--answer-by-schema"])
        assert code == 2 and "count is a whole number" in err


def test_every_tool_uses_the_suites_context_arguments_and_skips_invalid_tools() -> None:
    context = {"toolCalls": [{"name": "headers", "arguments": {"region": "eu", "count": 7, "flag": None}}]}
    with scripted_server() as script:
        code, out, err = run(["--every-tool", "--answer-by-schema", script.url],
                             environ={"MCP_CONFORMANCE_CONTEXT": json.dumps(context)})
        sent = script.calls("headers")[0]
    assert sent["params"]["arguments"] == {"region": "eu", "count": 7, "flag": None}
    assert "bad_header: not called: score:" in out and "no_schema: not called" in out
    assert code == 1 and "7 of 14 tools were refused or could not be called" in err
    assert "bogus: refused: tools/call answered resultType" in out and "plain: complete: plain ok" in out



def test_legacy_asks_the_servers_own_request_in_the_terminal(mcp: str, terminal: MakeTerminal) -> None:
    """--legacy: the 2025-11-25 handshake; the server's elicitation/create arrives on the call's event stream, is
    asked in the terminal, and the answer is POSTed while the stream stays open."""
    term = terminal([mcp, "deploy", "--arg", "env=qa", "--legacy", "--raw", *TOKEN])
    term.expect("accept, decline or cancel? [accept]: ")
    term.type("")
    term.expect("confirm (boolean, required): Yes, deploy [y/n]: ")
    term.type("yes")
    shown = term.expect("deployed to qa\n")
    assert term.close() == 0
    sent = [json.loads(line[4:]) for line in shown.splitlines() if line.startswith("--> ")]
    assert [m.get("method") for m in sent][:3] == ["initialize", "notifications/initialized", "tools/list"]
    assert {"jsonrpc": "2.0", "id": 1, "result": {"action": "accept", "content": {"confirm": True}}} in sent
