"""2025-11-25 sessions that outlive their process: two apps sharing one session directory stand for two workers
(or replicas). A session opened on one is served by the other, an answer reaching the wrong one is relayed to
the one whose call waits for it, and a session ended anywhere is gone everywhere."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from tests.web.helpers import (
    CONFIRM,
    INITIALIZED,
    legacy_headers,
    open_session,
    sse_data,
    start_call,
)
from web.mcp import SESSIONS_KEY
from web.session_directory import (
    DirectoryDown,
    LocalDirectory,
    SqliteDirectory,
    process_tag,
    tag_of,
)

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
    assert [t["name"] for t in response.get_json()["result"]["tools"]] == ["deploy"]


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
    from web.mcp import MAX_SESSIONS_PER_PRINCIPAL

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


# -- the directory itself ---------------------------------------------------------------------------


def test_sqlite_directory_keeps_sessions_until_their_expiry_and_refreshes_on_use(tmp_path: Path) -> None:
    directory = SqliteDirectory(tmp_path / "d.sqlite3", ttl=100)
    directory.put("s1", "bob", {"version": "2025-11-25", "capabilities": {}}, now=1000)
    assert directory.get("s1", now=1050) == ("bob", {"version": "2025-11-25", "capabilities": {}})
    assert directory.get("s1", now=1149) is not None  # the read at 1050 moved its expiry to 1150
    assert directory.get("s1", now=1250) is None
    directory.put("s2", "bob", {}, now=0)
    directory.delete("s2")
    assert directory.get("s2", now=1) is None


def test_sqlite_mailbox_delivers_each_answer_once_in_order(tmp_path: Path) -> None:
    directory = SqliteDirectory(tmp_path / "d.sqlite3")
    for n in range(50):
        directory.post("tag-a", "s1", {"id": n}, now=0)
    directory.post("tag-b", "s2", {"id": "other"}, now=0)
    taken: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        got = [m["id"] for _sid, m in directory.take("tag-a", now=1)]
        with lock:
            taken.extend(got)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(50))  # none twice, none lost
    assert directory.take("tag-b", now=1) == [("s2", {"id": "other"})]


def test_answers_nobody_takes_are_dropped_after_a_while(tmp_path: Path) -> None:
    directory = SqliteDirectory(tmp_path / "d.sqlite3")
    directory.post("gone-process", "s1", {"id": 1}, now=0)
    directory.take("someone-else", now=10_000)  # any take sweeps what expired
    assert directory.take("gone-process", now=10_001) == []


def test_an_unusable_directory_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "d.sqlite3").mkdir()
    with pytest.raises(DirectoryDown, match="d.sqlite3"):
        SqliteDirectory(tmp_path / "d.sqlite3")


def test_process_tags_and_question_ids() -> None:
    tag = process_tag("replica-1")
    assert tag.startswith("replica-1.") and tag.count(".") == 2
    assert process_tag("a b.c") != process_tag("a b.c")  # a nonce: two processes never share a tag
    assert tag_of(f"{tag}-12") == tag
    assert tag_of(12) is None and tag_of("12") is None and tag_of("x-y") is None and tag_of(f"{tag}-x") is None


@pytest.mark.external  # four processes
def test_processes_that_set_up_the_same_new_directory_at_once_all_get_it(tmp_path: Path) -> None:
    """Workers start together and open the same new file: switching it to WAL does not wait for SQLite's busy
    timeout, so each must try again instead of failing to start (seen with granian's two workers). Four
    processes meet at a barrier and open a new file at once, twenty times over."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    failures: list[str] = []
    for round_no in range(20):
        path = str(tmp_path / f"sessions-{round_no}.sqlite3")
        barrier, results = context.Barrier(4), context.Queue()
        workers = [context.Process(target=_open_at_once, args=(path, barrier, results)) for _ in range(4)]
        for process in workers:
            process.start()
        for process in workers:
            process.join(timeout=30)
        failures += [r for r in (results.get(timeout=10) for _ in workers) if r != "ok"]
    assert failures == []


def _open_at_once(path: str, barrier: Any, results: Any) -> None:
    barrier.wait(timeout=20)
    try:
        SqliteDirectory(path)
        results.put("ok")
    except DirectoryDown as exc:
        results.put(str(exc))
