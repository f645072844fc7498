"""The build lesson's Python starter and solution follow the 2026-07-28 spec where the lesson says they do.

The protocol code is given (the same in both files), so each rule is checked on both: `server/discover`
needs `params._meta` (-32602 otherwise), discovery and listings carry `ttlMs`, `cacheScope` and the
serverInfo `_meta`, and tickets are signed with HMAC-SHA256, as the lesson's quiz says. The solution then
reads answers as the lesson teaches: a malformed one gets a JSON-RPC error and spends nothing, a missing one
is asked again, a decline ends the call.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest

from tests.lessons.buildkit import BUILD, META, converse

SERVERS = {"starter": BUILD.starter, "solution": BUILD.solution}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def talk(source: str, tmp_path: Path, messages: list[dict]) -> list[dict]:
    server = tmp_path / "server.py"
    server.write_text(source, encoding="utf-8")
    return converse([sys.executable, str(server)], messages)


def rpc(request_id: int, method: str, params: dict | None = None) -> dict:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    return message if params is None else {**message, "params": params}


@pytest.mark.parametrize("name", SERVERS)
def test_discover_needs_meta_like_every_request(name: str, tmp_path: Path) -> None:
    without_caps = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    answers = talk(SERVERS[name], tmp_path, [rpc(1, "server/discover"), rpc(2, "server/discover", {}),
                                             rpc(3, "server/discover", {"_meta": without_caps}),
                                             rpc(4, "tools/list", {})])
    assert [a["error"]["code"] for a in answers] == [-32602] * 4


@pytest.mark.parametrize("name", SERVERS)
def test_discovery_and_listings_carry_their_cache_fields_and_server_info(name: str, tmp_path: Path) -> None:
    discovered, listed = talk(SERVERS[name], tmp_path, [rpc(1, "server/discover", {"_meta": META}),
                                                        rpc(2, "tools/list", {"_meta": META})])
    assert discovered["result"]["supportedVersions"] == ["2026-07-28"]
    assert [t["name"] for t in listed["result"]["tools"]] == ["deploy"]
    for result in (discovered["result"], listed["result"]):
        assert result["resultType"] == "complete"
        assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
        assert result["cacheScope"] in ("public", "private")
        assert set(result["_meta"][SERVER_INFO]) == {"name", "version"}
    assert "serverInfo" not in discovered["result"]  # it lives in _meta in 2026-07-28


@pytest.mark.parametrize("name", SERVERS)
def test_tickets_are_signed_with_hmac_sha256(name: str, tmp_path: Path) -> None:
    call = {"_meta": META, "name": "deploy", "arguments": {"env": "staging"}}
    [asked] = talk(SERVERS[name], tmp_path, [rpc(1, "tools/call", call)])
    assert asked["result"]["_meta"][SERVER_INFO]["name"] == "build-the-checks"
    signature = asked["result"]["requestState"].rsplit(".", 1)[1]
    assert len(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))) == 32  # SHA-256, not SHA-1's 20


def _retries(answers: list[dict | None], ticket_from: dict) -> list[dict]:
    call = {"_meta": META, "name": "deploy", "arguments": {"env": "staging"}}
    ticket = ticket_from["result"]["requestState"]
    return [rpc(10 + i, "tools/call", {**call, "requestState": ticket,
                                       **({"inputResponses": {"confirm": a}} if a is not None else {})})
            for i, a in enumerate(answers)]


def _first(tmp_path: Path) -> dict:
    call = {"_meta": META, "name": "deploy", "arguments": {"env": "staging"}}
    return talk(BUILD.solution, tmp_path, [rpc(1, "tools/call", call)])[0]


def test_the_solution_answers_a_malformed_answer_with_an_error_and_spends_nothing(tmp_path: Path) -> None:
    first = _first(tmp_path)
    yes = {"action": "accept", "content": {"confirm": True}}
    malformed = [{"action": "accept", "content": {"confirm": "yes"}}, {"action": "accept", "content": {}},
                 {"action": "maybe"}, "yes"]
    answers = talk(BUILD.solution, tmp_path, _retries([*malformed, yes, yes], first))
    for answer in answers[:len(malformed)]:
        assert answer["error"]["code"] == -32602
        assert answer["error"]["message"].startswith("Invalid inputResponses: 'confirm': ")
        assert answer["error"]["data"] == {"reason": "invalid_input_response", "key": "confirm"}
    assert answers[-2]["result"]["content"][0]["text"] == "deployed to staging"
    assert answers[-1]["error"] == {"code": -32602, "message": "Invalid or expired requestState"}  # spent now


def test_the_solution_asks_again_for_a_missing_answer_and_ends_on_a_no(tmp_path: Path) -> None:
    first = _first(tmp_path)
    declined = {"action": "decline"}
    answers = talk(BUILD.solution, tmp_path, _retries([None, declined, declined], first))
    assert answers[0]["result"]["resultType"] == "input_required"
    assert answers[1]["result"]["resultType"] == "complete"
    assert answers[1]["result"]["content"][0]["text"].startswith("nothing was deployed")
    assert answers[2]["error"]["message"] == "Invalid or expired requestState"  # the no spent the ticket


def test_a_bug_in_a_check_gets_an_internal_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    broken = BUILD.solution.replace('    return claims.get("sub") == PRINCIPAL\n',
                                    '    return claims["no such claim"] == PRINCIPAL\n', 1)
    assert broken != BUILD.solution
    call = {"_meta": META, "name": "deploy", "arguments": {"env": "staging"}}
    server = tmp_path / "server.py"
    server.write_text(broken, encoding="utf-8")
    first, = converse([sys.executable, str(server)], [rpc(1, "tools/call", call)])
    retry, listed = converse([sys.executable, str(server)],
                             [*_retries([{"action": "accept", "content": {"confirm": True}}], first),
                              rpc(2, "tools/list", {"_meta": META})])
    assert retry["error"] == {"code": -32603, "message": "Internal error"}  # no exception text on the wire
    assert listed["result"]["tools"]
