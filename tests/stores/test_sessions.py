"""The 2025-11-25 session directories keep one contract (`mrtr_stores.sessions.SessionDirectory`), in SQLite (the
processes of one machine) and in Redis (replicas on several hosts): a session put by one process is found by
another until it is deleted, each read renews it, an answer posted to a process's mailbox is taken once, in
order, by that process only, an answer too large is refused, and a backend that is away is `DirectoryDown`. The
mailbox takes only answers to questions a session awaits, each once, and a capped number per principal."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mrtr_stores.sessions import (
    MAX_AWAITED,
    MAX_MESSAGE,
    MAX_RELAYS_PER_PRINCIPAL,
    DirectoryDown,
    LocalDirectory,
    NotAwaited,
    RelaysExhausted,
    process_tag,
    tag_of,
)
from mrtr_stores.sessions_redis import RedisDirectory
from mrtr_stores.sessions_sqlite import SqliteDirectory
from tests.stores.conftest import BACKENDS, away_redis, on_new_thread, spoil

STATE = {"version": "2025-11-25", "capabilities": {}}
#: A process tag as process_tag() makes them; its questions are `<tag>-<n>`.
TAG = "replica-1.100.abcdef"


def q(n: int) -> str:
    return f"{TAG}-{n}"


@pytest.fixture(params=BACKENDS)
def directory(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        return SqliteDirectory(tmp_path / "sessions.sqlite3", ttl=100)
    return RedisDirectory(request.getfixturevalue("redis_client"), ttl=100)


@pytest.fixture
def other(directory: Any, tmp_path: Path) -> Any:
    """A second process's view of the same directory."""
    if isinstance(directory, SqliteDirectory):
        return SqliteDirectory(directory.path, ttl=100)
    return RedisDirectory(directory.client, ttl=100)


def test_a_session_put_by_one_process_is_found_by_another_until_deleted(directory: Any, other: Any) -> None:
    assert directory.shared and other.shared
    directory.put("s1", "bob", STATE, now=1000)
    assert other.get("s1", now=1001) == ("bob", STATE)
    directory.put("s1", "bob", {**STATE, "capabilities": {"elicitation": {}}}, now=1002)  # replaced, not added
    assert other.get("s1", now=1003) == ("bob", {**STATE, "capabilities": {"elicitation": {}}})
    other.delete("s1")
    assert directory.get("s1", now=1004) is None and other.get("unknown", now=1004) is None
    other.delete("never-there")  # nothing to delete is no error


def test_the_mailbox_hands_each_answer_once_in_order_to_its_process_only(directory: Any, other: Any) -> None:
    for n in range(50):
        directory.expect("s1", q(n), now=0)
        directory.post("tag-a", "s1", {"id": q(n)}, now=0)
    other.expect("s2", q(99), now=0)
    other.post("tag-b", "s2", {"id": q(99)}, now=0)
    taken: list[str] = []
    lock = threading.Lock()

    def take() -> None:
        got = [m["id"] for _sid, m in other.take("tag-a", now=1)]
        assert got == sorted(got, key=lambda i: int(i.rpartition("-")[2]))  # in the order they were posted
        with lock:
            taken.extend(got)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(taken) == sorted(q(n) for n in range(50))  # none twice, none lost
    assert directory.take("tag-b", now=1) == [("s2", {"id": q(99)})]
    assert directory.take("tag-b", now=1) == []


def test_an_answer_too_large_to_relay_is_refused(directory: Any) -> None:
    with pytest.raises(DirectoryDown, match="too large"):
        directory.post("tag-a", "s1", {"text": "x" * MAX_MESSAGE}, now=0)
    assert directory.take("tag-a", now=1) == []


def test_the_mailbox_takes_only_answers_to_awaited_questions_each_once(directory: Any, other: Any) -> None:
    """Made-up ids, ids of another session, an id answered already: refused, nothing stored."""
    directory.expect("s1", q(1), now=0)
    for sid, message in (("s1", {"id": q(2)}), ("s2", {"id": q(1)}), ("s1", {"id": 7}), ("s1", {"id": "x-1"})):
        with pytest.raises(NotAwaited):
            other.post("tag-a", sid, message, now=1)
    other.post("tag-a", "s1", {"id": q(1), "result": {}}, now=1)
    with pytest.raises(NotAwaited):
        other.post("tag-a", "s1", {"id": q(1), "result": {}}, now=2)
    assert directory.take("tag-a", now=3) == [("s1", {"id": q(1), "result": {}})]


def test_a_session_awaits_at_most_its_newest_questions(directory: Any) -> None:
    for n in range(MAX_AWAITED + 5):
        directory.expect("s1", q(n), now=n)
    with pytest.raises(NotAwaited):
        directory.post("tag-a", "s1", {"id": q(0)}, now=100)
    directory.post("tag-a", "s1", {"id": q(MAX_AWAITED + 4)}, now=100)


def test_a_principal_has_a_capped_number_of_answers_relayed_per_window(directory: Any) -> None:
    for n in range(MAX_RELAYS_PER_PRINCIPAL + 1):
        directory.expect(f"s{n // MAX_AWAITED}", q(n), now=0)
    for n in range(MAX_RELAYS_PER_PRINCIPAL):
        directory.post("tag-a", f"s{n // MAX_AWAITED}", {"id": q(n)}, now=0, principal="mallory")
    last = MAX_RELAYS_PER_PRINCIPAL
    with pytest.raises(RelaysExhausted):
        directory.post("tag-a", f"s{last // MAX_AWAITED}", {"id": q(last)}, now=0, principal="mallory")
    directory.expect("other-session", q(1000), now=0)
    directory.post("tag-a", "other-session", {"id": q(1000)}, now=0, principal="bob")  # bob is not mallory


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_directory_that_is_away_says_so(backend: str, tmp_path: Path) -> None:
    if backend == "sqlite":
        directory: Any = SqliteDirectory(tmp_path / "sessions.sqlite3")
        spoil(tmp_path / "sessions.sqlite3")
        with pytest.raises(DirectoryDown, match="sessions.sqlite3"):
            on_new_thread(lambda: directory.get("s1", now=0))
    else:
        directory = RedisDirectory(away_redis())
        for attempt in (lambda: directory.put("s1", "bob", STATE, now=0), lambda: directory.get("s1", now=0),
                        lambda: directory.post("t", "s1", {"id": q(1)}, now=0), lambda: directory.take("t", now=0),
                        lambda: directory.expect("s1", q(1), now=0)):
            with pytest.raises(DirectoryDown, match="Redis"):
                attempt()


def test_one_process_has_nothing_to_share() -> None:
    local = LocalDirectory()
    local.put("s1", "bob", STATE, now=0)
    assert not local.shared and local.get("s1", now=0) is None and local.take("t", now=0) == []
    with pytest.raises(DirectoryDown):
        local.post("t", "s1", {}, now=0)


# -- what each backend does its own way ------------------------------------------------------------------------


def test_sqlite_keeps_sessions_until_their_expiry_on_the_callers_clock_and_renews_on_use(tmp_path: Path) -> None:
    directory = SqliteDirectory(tmp_path / "d.sqlite3", ttl=100)
    directory.put("s1", "bob", STATE, now=1000)
    assert directory.get("s1", now=1050) == ("bob", STATE)
    assert directory.get("s1", now=1149) is not None  # the read at 1050 moved its expiry to 1150
    assert directory.get("s1", now=1250) is None


def test_sqlite_drops_answers_nobody_takes_after_a_while(tmp_path: Path) -> None:
    directory = SqliteDirectory(tmp_path / "d.sqlite3")
    directory.expect("s1", q(1), now=0)
    directory.post("gone-process", "s1", {"id": q(1)}, now=0)
    directory.take("someone-else", now=10_000)  # any take sweeps what expired
    assert directory.take("gone-process", now=10_001) == []


@pytest.mark.external  # a redis-server
def test_redis_gives_each_session_and_mailbox_its_own_time_to_live(redis_client: Any) -> None:
    directory = RedisDirectory(redis_client, ttl=100)
    directory.put("s1", "bob", STATE, now=0)
    directory.expect("s1", q(1), now=0)
    directory.post("tag-a", "s1", {"id": q(1)}, now=0)
    assert 99_000 < redis_client.pttl("mrtr:legacy:s:s1") <= 100_000
    assert 0 < redis_client.pttl("mrtr:legacy:m:tag-a") <= 600_000


def test_an_unusable_directory_file_says_so_at_start(tmp_path: Path) -> None:
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
