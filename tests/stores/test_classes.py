"""The live class's two stores keep one contract (`mrtr_stores.classes.ClassStore`): SQLite (the embedded default)
and Redis (replicas on several hosts). Every test runs against both; the Redis ones against a real redis-server on
loopback, with the clock injected, so a class's end is reached without waiting. The class's limits
(`RateLimit`) keep theirs in this process and in Redis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mrtr import FakeClock
from mrtr_stores import classes
from mrtr_stores.classes import MAX_LEARNERS, ClassFull, ClassroomError, ClassStoreUnavailable, LocalRateLimit
from mrtr_stores.classes_redis import RedisClassStore, RedisRateLimit
from mrtr_stores.classes_sqlite import SqliteClassStore
from tests.stores.conftest import BACKENDS, away_redis, on_new_thread, spoil

TTL = 3600.0


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        return SqliteClassStore(tmp_path / "class.sqlite3", clock=clock, ttl_seconds=TTL)
    return RedisClassStore(request.getfixturevalue("redis_client"), clock=clock, ttl_seconds=TTL)


def test_a_class_is_found_by_its_code_and_id(store: Any) -> None:
    row = store.create(lesson="when-the-server-needs-input", host_secret="host-secret")
    assert store.by_code(row.code.lower()) == row == store.by_id(row.id)
    assert store.host_ok(row, "host-secret") and not store.host_ok(row, "other") and not store.host_ok(row, None)
    assert store.count_classes() == 1
    assert store.by_code("ZZZZZZ") is None


def test_presenter_changes_bump_version_and_stage(store: Any) -> None:
    row = store.create(lesson="l", host_secret=None)
    store.set_question(row.id, 2, "q-2")
    store.reveal(row.id)
    store.set_round(row.id, True)
    store.set_single_use(row.id, False)
    now = store.by_id(row.id)
    assert (now.question_no, now.question_id, now.revealed, now.round_open, now.single_use) == (2, "q-2", True,
                                                                                               True, False)
    assert now.stage == row.stage + 4 and now.version == row.version + 4 == store.version(row.id)


def test_learners_join_with_unique_nicknames_and_are_found_by_token(store: Any) -> None:
    row = store.create(lesson="l", host_secret=None)
    ana, token = store.join(row, "Ana")
    with pytest.raises(ClassroomError, match="already uses"):
        store.join(row, "ANA")
    assert store.learner(row, token) == ana and store.learner(row, "wrong") is None and store.learner(row, None) is None
    bo, _ = store.join(row, "Bo")
    assert [learner.nickname for learner in store.learners(row.id)] == ["Ana", "Bo"]
    assert store.count_learners(row.id) == 2 and store.version(row.id) == row.version + 2
    store.set_ticket(bo, "t1.ticket")
    assert store.learners(row.id)[1].ticket == "t1.ticket"


def test_a_full_class_refuses_one_more(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classes, "MAX_LEARNERS", 2)  # both backends read the one cap
    row = store.create(lesson="l", host_secret=None)
    store.join(row, "One")
    store.join(row, "Two")
    with pytest.raises(ClassFull):
        store.join(row, "Three")
    assert MAX_LEARNERS == 500  # the real cap is untouched outside this test


def test_answers_count_once_per_learner_and_tally(store: Any) -> None:
    row = store.create(lesson="l", host_secret=None)
    ana, _ = store.join(row, "Ana")
    bo, _ = store.join(row, "Bo")
    store.answer(row, ana, "q1", "a")
    store.answer(row, ana, "q1", "b")  # a change of mind replaces the first answer
    store.answer(row, bo, "q1", "b")
    assert store.tally(row.id, "q1") == {"b": 2}
    assert store.my_answer(row, ana, "q1") == "b" and store.my_answer(row, ana, "q2") is None


def test_a_drawn_question_keeps_one_draw_per_learner_and_counts_who_was_right(store: Any) -> None:
    row = store.create(lesson="l", host_secret=None)
    ana, _ = store.join(row, "Ana")
    bo, _ = store.join(row, "Bo")
    assert store.keep_draw(row, ana, "drawn", "seed-a:100") == "seed-a:100"
    assert store.keep_draw(row, ana, "drawn", "seed-b:200") == "seed-a:100"  # the first draw stays
    assert store.keep_draw(row, bo, "drawn", "seed-c:300") == "seed-c:300"  # each learner their own
    # Each learner's answer is graded against their own draw: one option, right for one and wrong for the other.
    store.answer(row, ana, "drawn", "refused-expiry", right=True)
    store.answer(row, bo, "drawn", "refused-expiry", right=False)
    assert store.tally(row.id, "drawn") == {"refused-expiry": 2} and store.right_count(row.id, "drawn") == 1
    store.answer(row, ana, "drawn", "completed", right=False)  # a change of mind is graded again
    assert store.right_count(row.id, "drawn") == 0
    store.answer(row, ana, "q1", "a")  # a fixed question's answer is not graded in the store
    assert store.right_count(row.id, "q1") == 0
    # The export says how each drawn answer was graded (an answer to a fixed question: nothing to say).
    assert sorted(r[1:5] for r in store.export_rows(row.id)) == [("Ana", "drawn", "completed", "wrong"),
                                                                 ("Ana", "q1", "a", ""),
                                                                 ("Bo", "drawn", "refused-expiry", "wrong")]
    assert store.remove_learner(row.id, bo.id)
    again, _ = store.join(row, "Bo")
    assert store.keep_draw(row, again, "drawn", "seed-d:400") == "seed-d:400"


def test_draws_are_capped_in_length_and_in_questions_per_class(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classes, "MAX_DRAWN_QUESTIONS", 2)  # both backends read the one cap
    row = store.create(lesson="l", host_secret=None)
    ana, _ = store.join(row, "Ana")
    bo, _ = store.join(row, "Bo")
    with pytest.raises(ClassroomError, match="characters"):
        store.keep_draw(row, ana, "q1", "x" * (classes.DRAW_MAX + 1))
    with pytest.raises(ClassroomError, match="characters"):
        store.keep_draw(row, ana, "q1", "")
    store.keep_draw(row, ana, "q1", "s:1")
    store.keep_draw(row, ana, "q2", "s:2")
    with pytest.raises(ClassroomError, match="2 questions"):
        store.keep_draw(row, ana, "q3", "s:3")
    assert store.keep_draw(row, bo, "q2", "s:4") == "s:4"  # a question already drawn takes every learner
    store.delete(row.id)
    other = store.create(lesson="l", host_secret=None)
    cy, _ = store.join(other, "Cy")
    assert store.keep_draw(other, cy, "q3", "s:5") == "s:5"  # the cap is per class


def test_attempts_heat_recent_counts_and_the_first_replay(store: Any, clock: FakeClock) -> None:
    row = store.create(lesson="l", host_secret=None)
    ana, _ = store.join(row, "Ana")
    bo, _ = store.join(row, "Bo")
    assert not store.record_attempt(row, ana, move="tampered", outcome="refused", stopped_at="signature",
                                    single_use=True, replay_through=False)
    clock.advance(5)
    assert store.record_attempt(row, bo, move="twice", outcome="completed", stopped_at="", single_use=False,
                                replay_through=True)
    assert not store.record_attempt(row, ana, move="twice", outcome="completed", stopped_at="", single_use=False,
                                    replay_through=True)
    assert store.heat(row.id) == {("tampered", "signature"): 1, ("twice", ""): 2}
    assert store.by_id(row.id).first_replay == "Bo"
    assert store.recent_attempts(ana, clock() - 1) == 1 and store.recent_attempts(ana, clock() - 10) == 2
    kinds = [(r[0], r[1], r[2]) for r in store.export_rows(row.id)]
    assert kinds == [("attempt", "Ana", "tampered"), ("attempt", "Bo", "twice"), ("attempt", "Ana", "twice")]


def test_export_lists_answers_in_time_order_then_attempts(store: Any, clock: FakeClock) -> None:
    row = store.create(lesson="l", host_secret=None)
    ana, _ = store.join(row, "Ana")
    bo, _ = store.join(row, "Bo")
    store.answer(row, bo, "q2", "c")
    clock.advance(1)
    store.answer(row, ana, "q1", "a")
    store.record_attempt(row, bo, move="late", outcome="refused", stopped_at="expiry", single_use=True,
                         replay_through=False)
    rows = store.export_rows(row.id)
    assert [r[:4] for r in rows] == [("answer", "Bo", "q2", "c"), ("answer", "Ana", "q1", "a"),
                                     ("attempt", "Bo", "late", "refused")]


def test_a_class_ends_with_its_ttl_and_delete_removes_everything(store: Any, clock: FakeClock) -> None:
    row = store.create(lesson="l", host_secret=None)
    ana, token = store.join(row, "Ana")
    store.answer(row, ana, "q1", "a")
    clock.advance(TTL + 1)
    assert store.by_code(row.code) is None and store.count_classes() == 0
    other = store.create(lesson="l", host_secret=None)
    bo, token = store.join(other, "Bo")
    store.delete(other.id)
    assert store.by_id(other.id) is None and store.learner(other, token) is None
    assert store.learners(other.id) == [] and store.tally(other.id, "q1") == {}


def test_the_presenter_locks_the_class_and_removes_a_learner_with_all_they_sent(store: Any, clock: FakeClock) -> None:
    row = store.create(lesson="l", host_secret=None)
    ana, _ = store.join(row, "Ana")
    bot, bot_token = store.join(row, "Bot")
    store.answer(row, ana, "q1", "a")
    store.answer(row, bot, "q1", "b")
    store.record_attempt(row, bot, move="twice", outcome="completed", stopped_at="", single_use=False,
                         replay_through=False)
    store.record_attempt(row, ana, move="tampered", outcome="refused", stopped_at="signature", single_use=True,
                         replay_through=False)
    store.set_locked(row.id, True)
    assert store.by_id(row.id).locked and not row.locked
    assert store.remove_learner(row.id, bot.id)
    assert not store.remove_learner(row.id, bot.id)  # already gone
    assert store.learner(row, bot_token) is None and [x.nickname for x in store.learners(row.id)] == ["Ana"]
    assert store.tally(row.id, "q1") == {"a": 1}
    assert store.heat(row.id) == {("tampered", "signature"): 1}
    assert [r[1] for r in store.export_rows(row.id)] == ["Ana", "Ana"]
    store.join(row, "Bot")  # the nickname is free again (the lock is the route's business, not the store's)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_class_store_that_is_away_says_so(backend: str, clock: FakeClock, tmp_path: Path) -> None:
    if backend == "sqlite":
        store: Any = SqliteClassStore(tmp_path / "class.sqlite3", clock=clock, ttl_seconds=TTL)
        spoil(tmp_path / "class.sqlite3")
        with pytest.raises(ClassStoreUnavailable, match="class.sqlite3"):
            on_new_thread(lambda: store.by_code("ABCDEF"))
    else:
        store = RedisClassStore(away_redis(), clock=clock, ttl_seconds=TTL)
        with pytest.raises(ClassStoreUnavailable, match="Redis"):
            store.create(lesson="l", host_secret=None)


# -- the class's limits -----------------------------------------------------------------------------------------


@pytest.fixture(params=["local", pytest.param("redis", marks=pytest.mark.external)])
def limits(request: pytest.FixtureRequest) -> Any:
    """Two replicas' views of one limit of 3 hits per 10 s: in this process both are the one object."""
    if request.param == "local":
        one = LocalRateLimit(3, 10.0)
        return one, one
    import redis

    client = request.getfixturevalue("redis_client")  # an empty database
    other = redis.Redis.from_url(request.getfixturevalue("redis_url"))  # another replica's connection
    request.addfinalizer(other.close)
    return RedisRateLimit(client, 3, 10.0), RedisRateLimit(other, 3, 10.0)


def test_a_limit_is_one_sliding_window_per_key(limits: Any, clock: FakeClock) -> None:
    a, b = limits
    now = clock()
    assert [a.allow("client-1", now), b.allow("client-1", now + 1), a.allow("client-1", now + 2)] == [True] * 3
    assert b.exhausted("client-1", now + 2) and not b.exhausted("client-2", now + 2)
    assert not b.allow("client-1", now + 3) and b.allow("client-2", now + 3)
    assert a.allow("client-1", now + 10.5)  # the window slid past the first hit
    assert not a.allow("client-1", now + 10.6)  # ... and only past the first
    assert a.limit == 3 and a.window == 10.0


def test_a_redis_limit_that_is_away_says_so() -> None:
    with pytest.raises(ClassStoreUnavailable, match="Redis"):
        RedisRateLimit(away_redis(), 3, 10.0).allow("client-1", 0.0)
