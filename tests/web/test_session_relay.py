"""2025-11-25 sessions that outlive their process: two apps sharing one session directory stand for two workers
(or replicas). A session opened on one is served by the other, an answer reaching the wrong one is relayed to
the one whose call waits for it, and a session ended anywhere is gone everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from mrtr_stores.sessions import DirectoryDown, LocalDirectory, tag_of
from tests.web.helpers import (
    CONFIRM,
    INITIALIZED,
    legacy_headers,
    open_session,
    sse_data,
    start_call,
)
from web.mcp.routes import SESSIONS_KEY

KEY = "relay-test-key-0123456789abcdefghijklmnopqrstuv"
LIST = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}


def worker(state: Path, name: str) -> Flask:
    # A short shim wait: if an answer were never relayed, the call would fail in seconds, not hang.
    return create_app({"TESTING": True, "MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "sqlite", "MRTR_STATE_DIR": str(state),
                       "MRTR_SHIM_WAIT": 5,
                       "MRTR_CLASS_DB": str(state / f"class-{name}.sqlite3"), "MRTR_REPLICA_NAME": name})


@pytest.fixture
def pair(tmp_path: Path) -> tuple[FlaskClient, FlaskClient]:
    return worker(tmp_path, "replica-a").test_client(), worker(tmp_path, "replica-b").test_client()


def post(client: FlaskClient, sid: str, message: dict[str, Any], token: str = "bob-token") -> Any:
    return client.post("/mcp", data=json.dumps(message), headers=legacy_headers(token, sid))


def test_a_session_opened_on_one_worker_is_served_by_the_other(pair: tuple[FlaskClient, FlaskClient]) -> None:
    a, b = pair
    sid = open_session(a)
    assert sid.startswith("replica-a.")  # the balancer's hint: where the session was opened
    response = post(b, sid, LIST)
    assert response.status_code == 200
    assert [t["name"] for t in response.get_json()["result"]["tools"]][0] == "deploy"


def test_an_answer_that_reaches_the_other_worker_is_relayed_to_the_waiting_call(
        pair: tuple[FlaskClient, FlaskClient]) -> None:
    a, b = pair
    sid = open_session(a)
    response, stream, asked = start_call(a, sid, 3)
    assert tag_of(asked["id"]) == a.application.extensions[SESSIONS_KEY].tag  # the question names its process
    reply = {"jsonrpc": "2.0", "id": asked["id"], "result": CONFIRM["confirm"]}
    assert post(b, sid, reply).status_code == 202  # b does not hold the call: it relays the answer
    frames = [m for chunk in stream for m in sse_data(chunk.decode())]
    response.close()
    assert frames[-1]["id"] == 3 and frames[-1]["result"]["content"][0]["text"] == "deployed to prod"


def test_a_call_started_on_the_other_worker_is_answered_through_the_first(
        pair: tuple[FlaskClient, FlaskClient]) -> None:
    """The session was opened on a; its call runs on b (adopted there), and the answer lands on a."""
    a, b = pair
    sid = open_session(a)
    response, stream, asked = start_call(b, sid, 4)
    assert tag_of(asked["id"]) == b.application.extensions[SESSIONS_KEY].tag
    reply = {"jsonrpc": "2.0", "id": asked["id"], "result": CONFIRM["confirm"]}
    assert post(a, sid, reply).status_code == 202
    frames = [m for chunk in stream for m in sse_data(chunk.decode())]
    response.close()
    assert frames[-1]["result"]["content"][0]["text"] == "deployed to prod"


def test_another_principal_cannot_use_or_answer_into_the_session(pair: tuple[FlaskClient, FlaskClient]) -> None:
    a, b = pair
    sid = open_session(a)
    assert post(b, sid, LIST, token="alice-token").status_code == 404
    response, stream, asked = start_call(a, sid, 5)
    forged = {"jsonrpc": "2.0", "id": asked["id"], "result": CONFIRM["confirm"]}
    assert post(b, sid, forged, token="alice-token").status_code == 404  # nothing relayed for alice
    response.close()
    assert not list(a.application.extensions[SESSIONS_KEY].directory.take(
        a.application.extensions[SESSIONS_KEY].tag, 0.0))


def test_a_session_ended_on_one_worker_is_gone_on_every_worker(pair: tuple[FlaskClient, FlaskClient]) -> None:
    a, b = pair
    sid = open_session(a)
    assert post(b, sid, INITIALIZED).status_code == 202  # b now holds a copy
    assert b.delete("/mcp", headers=legacy_headers("bob-token", sid)).status_code == 204
    assert post(a, sid, LIST).status_code == 404
    assert post(b, sid, LIST).status_code == 404


def test_a_directory_that_is_down_leaves_held_sessions_working_and_gives_others_a_retryable_503(
        pair: tuple[FlaskClient, FlaskClient]) -> None:
    a, b = pair
    sid = open_session(a)

    def down(*args: Any, **kwargs: Any) -> Any:
        raise DirectoryDown("disk gone")

    for client in (a, b):
        client.application.extensions[SESSIONS_KEY].directory.get = down  # type: ignore[method-assign]
    assert post(a, sid, LIST).status_code == 200  # a holds the session: it goes on serving it
    response = post(b, sid, LIST)  # b would have to read the directory to adopt it
    assert response.status_code == 503 and response.headers["Retry-After"]
    assert "disk gone" not in response.get_data(as_text=True)


def test_a_session_replaced_by_a_newer_one_is_gone_on_every_worker(pair: tuple[FlaskClient, FlaskClient]) -> None:
    from web.mcp.sessions import MAX_SESSIONS_PER_PRINCIPAL

    a, b = pair
    oldest = open_session(a)
    for _ in range(MAX_SESSIONS_PER_PRINCIPAL):
        open_session(a)
    assert post(a, oldest, LIST).status_code == 404
    assert post(b, oldest, LIST).status_code == 404  # not adopted back from the directory


def test_with_the_memory_store_sessions_stay_in_their_process(tmp_path: Path) -> None:
    """One process (MRTR_STORE=memory): no directory, and the core's own question ids."""
    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": KEY, "MRTR_STORE": "memory",
                      "MRTR_CLASS_DB": str(tmp_path / "c.sqlite3")})
    sessions = app.extensions[SESSIONS_KEY]
    assert isinstance(sessions.directory, LocalDirectory)
    client = app.test_client()
    sid = open_session(client)
    response, _stream, asked = start_call(client, sid, 3)
    response.close()
    assert asked["id"] == 1


def test_answers_with_made_up_ids_are_refused_and_nothing_is_stored(pair: tuple[FlaskClient, FlaskClient]) -> None:
    """The issue's flood: inside a real session, answers naming the other process but no question it asked. Each
    gets a clear 400 and the mailbox stays empty; the real answer still goes through, once."""
    a, b = pair
    sid = open_session(a)
    response, stream, asked = start_call(a, sid, 6)
    tag = a.application.extensions[SESSIONS_KEY].tag
    for n in range(50):
        made_up = {"jsonrpc": "2.0", "id": f"{tag}-{10_000 + n}", "result": {"padding": "x" * 1000}}
        refused = post(b, sid, made_up)
        assert refused.status_code == 400 and "No question with this id" in refused.get_data(as_text=True)
    directory = a.application.extensions[SESSIONS_KEY].directory
    assert directory.take(tag, 0.0) == []
    reply = {"jsonrpc": "2.0", "id": asked["id"], "result": CONFIRM["confirm"]}
    assert post(b, sid, reply).status_code == 202
    assert post(b, sid, reply).status_code == 400  # answered already: not relayed twice
    frames = [m for chunk in stream for m in sse_data(chunk.decode())]
    response.close()
    assert frames[-1]["result"]["content"][0]["text"] == "deployed to prod"
