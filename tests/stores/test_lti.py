"""The LTI tool's stores keep one contract (`mrtr_stores.lti.LtiStore`), on one machine (a key file and SQLite) and
in Redis (replicas on several hosts): one private key for every process, launch data that expires on the injected
clock and whose nonce is taken once, launches kept for their lifetime, and a score queue that never loses a score
(a failed post is retried later, backing off; only the version the platform accepted is marked sent; a worse
score never replaces a better one where the best counts). A store that is away says `LtiStoreDown`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mrtr import FakeClock
from mrtr_stores.lti import FIRST_RETRY, LAUNCH_LIFETIME, LtiStoreDown, PendingScore, public_pem
from mrtr_stores.lti_redis import RedisLtiStore
from mrtr_stores.lti_sqlite import DB_FILE, SqliteLtiStore
from tests.stores.conftest import BACKENDS, away_redis, spoil

ENDPOINT = {"lineitem": "https://platform.example/lineitems/1", "scope": ["score"]}


@pytest.fixture(params=BACKENDS)
def replicas(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> tuple[Any, Any]:
    """Two processes' views of one store, on one clock."""
    if request.param == "sqlite":
        return SqliteLtiStore(tmp_path / "state", clock), SqliteLtiStore(tmp_path / "state", clock)
    import redis

    one = request.getfixturevalue("redis_client")
    two = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    request.addfinalizer(two.close)
    return RedisLtiStore(one, clock), RedisLtiStore(two, clock)


def score(given: float, stamp: str, *, key: str = "iss\nclient\nlineitem\nuser", attempts: int = 0) -> PendingScore:
    return PendingScore(key, "https://platform.example", "client", ENDPOINT, "user", given, 5.0, "InProgress",
                        "Pending", stamp, attempts)


def test_every_process_gets_the_same_private_key(replicas: tuple[Any, Any]) -> None:
    a, b = replicas
    key = a.private_key()
    assert key.startswith("-----BEGIN PRIVATE KEY-----") and b.private_key() == key == a.private_key()
    assert public_pem(key).startswith("-----BEGIN PUBLIC KEY-----")


def test_launch_data_expires_on_the_clock_and_a_nonce_is_taken_once(replicas: tuple[Any, Any],
                                                                    clock: FakeClock) -> None:
    a, b = replicas
    a.kv_set("state-1", {"nonce": "n"}, 60)
    a.kv_set("kept", [1, 2], None)
    assert b.kv_get("state-1") == {"nonce": "n"} and b.kv_get("kept") == [1, 2] and b.kv_get("missing") is None
    a.kv_set("nonce-1", True, 60)
    assert b.kv_take("nonce-1") is True and a.kv_take("nonce-1") is False  # spent: a replay finds nothing
    a.kv_set("nonce-2", True, 60)
    clock.advance(61)
    assert b.kv_get("state-1") is None and b.kv_take("nonce-2") is False and b.kv_get("kept") == [1, 2]


def test_a_launch_is_kept_under_a_random_reference_for_its_lifetime(replicas: tuple[Any, Any],
                                                                   clock: FakeClock) -> None:
    a, b = replicas
    ref = a.save_launch({"kind": "resource", "item": "quiz/one", "user": "u-1"})
    assert len(ref) >= 32 and ref != a.save_launch({"kind": "resource"})
    assert b.launch(ref) == {"kind": "resource", "item": "quiz/one", "user": "u-1"} and b.launch("nope") is None
    clock.advance(LAUNCH_LIFETIME + 1)
    assert b.launch(ref) is None


def test_a_score_stays_queued_until_the_platform_accepts_that_version(replicas: tuple[Any, Any],
                                                                      clock: FakeClock) -> None:
    a, b = replicas
    first = score(2.0, "t1")
    assert a.record_score(first, keep_best=False)
    assert not b.record_score(score(2.0, "t1-again"), keep_best=False)  # nothing changed: not queued twice
    [due] = b.due_scores(10)
    assert due == first and b.due_scores(10, key=first.key) == [first] and b.due_scores(10, key="other") == []
    assert a.score_state(first.key) == (2.0, False, 0) and a.score_state("other") is None
    newer = score(3.0, "t2")
    assert a.record_score(newer, keep_best=False)  # recorded while the first was being posted
    b.mark_sent(due)  # the platform accepted the first: the newer one stays queued
    assert a.due_scores(10) == [newer] and a.score_state(first.key) == (3.0, False, 0)
    b.mark_sent(newer)
    assert a.due_scores(10) == [] and a.score_state(first.key) == (3.0, True, 0)


def test_a_failed_post_is_retried_later_backing_off(replicas: tuple[Any, Any], clock: FakeClock) -> None:
    a, b = replicas
    a.record_score(score(1.0, "t1"), keep_best=False)
    [due] = a.due_scores(10)
    b.mark_failed(due, "ConnectionError" + "x" * 500)
    assert a.due_scores(10) == [] and a.score_state(due.key) == (1.0, False, 1)
    clock.advance(FIRST_RETRY)
    [again] = a.due_scores(10)
    assert again.attempts == 1
    b.mark_failed(again, "HTTPError (HTTP 503)")
    clock.advance(FIRST_RETRY)
    assert a.due_scores(10) == []  # the second wait is twice the first
    clock.advance(FIRST_RETRY)
    assert [s.attempts for s in a.due_scores(10)] == [2]


def test_where_the_best_counts_a_worse_score_changes_nothing(replicas: tuple[Any, Any]) -> None:
    a, b = replicas
    assert a.record_score(score(4.0, "t1"), keep_best=True)
    assert not b.record_score(score(3.0, "t2"), keep_best=True)
    assert b.score_state(score(0, "").key) == (4.0, False, 0)
    assert b.record_score(score(3.0, "t3"), keep_best=False)  # the quiz's first try: the latest counts
    assert a.due_scores(10)[0].given == 3.0


def test_due_scores_are_the_longest_waiting_first_and_at_most_the_limit(replicas: tuple[Any, Any],
                                                                        clock: FakeClock) -> None:
    a, _ = replicas
    for n in range(3):
        a.record_score(score(1.0, f"t{n}", key=f"k{n}"), keep_best=False)
    assert len(a.due_scores(2)) == 2 and len(a.due_scores(10)) == 3
    [first] = a.due_scores(1, key="k0")
    a.mark_failed(first, "down")
    clock.advance(FIRST_RETRY)
    assert [s.key for s in a.due_scores(10)][-1] == "k0"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_that_is_away_says_so(backend: str, clock: FakeClock, tmp_path: Path) -> None:
    if backend == "sqlite":
        store: Any = SqliteLtiStore(tmp_path, clock)
        spoil(tmp_path / DB_FILE)
    else:
        store = RedisLtiStore(away_redis(), clock)
    for attempt in (lambda: store.kv_get("k"), lambda: store.save_launch({}), lambda: store.due_scores(1),
                    lambda: store.record_score(score(1.0, "t"), keep_best=False)):
        with pytest.raises(LtiStoreDown):
            attempt()


def test_on_one_machine_the_key_and_the_file_are_readable_by_the_app_only(tmp_path: Path) -> None:
    store = SqliteLtiStore(tmp_path)
    store.private_key()
    assert oct((tmp_path / "lti-tool-key.pem").stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / DB_FILE).stat().st_mode & 0o777) == "0o600"
