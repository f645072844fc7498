"""The URL-mode completion stores keep one contract (`mrtr_stores.completions.CompletionStore`), in SQLite and in
Redis (and in one process's memory): a reference the server opened is finished once by its page and then read as
finished by another process; a page cannot finish what was never opened, what expired or what it finished already,
and stores nothing then; everything is forgotten after TTL, at most the cap is kept, and a store that is away says
so as StoreUnavailable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mrtr import StoreUnavailable
from mrtr_stores.completions import TTL, MemoryCompletions, new_ref
from mrtr_stores.completions_redis import RedisCompletions
from mrtr_stores.completions_sqlite import SqliteCompletions
from tests.stores.conftest import BACKENDS, away_redis, on_new_thread, spoil

NOW = 1_000_000.0


@pytest.fixture(params=["memory", *BACKENDS])
def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, Any]:
    """Two processes' views of one store (one process's, twice, for memory), with a cap of 3 references."""
    if request.param == "memory":
        one = MemoryCompletions(cap=3)
        return one, one
    if request.param == "sqlite":
        return SqliteCompletions(tmp_path, cap=3), SqliteCompletions(tmp_path, cap=3)
    import redis

    one = request.getfixturevalue("redis_client")
    two = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    request.addfinalizer(two.close)
    return RedisCompletions(one, cap=3), RedisCompletions(two, cap=3)


def test_a_page_finishes_what_the_server_opened_once_and_another_process_reads_it(replicas: tuple[Any, Any]) -> None:
    server, page = replicas
    ref = new_ref()
    server.open(ref, NOW)
    assert page.is_open(ref, NOW + 1) and not server.is_complete(ref, NOW + 1)
    assert page.complete(ref, NOW + 2)
    assert server.is_complete(ref, NOW + 3) and not server.is_open(ref, NOW + 3)
    assert not page.complete(ref, NOW + 4)  # a second submission finishes nothing more


def test_a_page_cannot_finish_what_was_never_opened_or_has_expired(replicas: tuple[Any, Any]) -> None:
    server, page = replicas
    made_up = new_ref()
    assert not page.complete(made_up, NOW) and not server.is_complete(made_up, NOW)
    assert not page.is_open(made_up, NOW)
    for junk in ("../../etc/passwd", "x" * 5000, "", "a b"):
        assert not page.complete(junk, NOW) and not page.is_open(junk, NOW) and not server.is_complete(junk, NOW)
    late = new_ref()
    server.open(late, NOW)
    assert not page.complete(late, NOW + TTL) and not server.is_complete(late, NOW + TTL)
    done = new_ref()
    server.open(done, NOW)
    page.complete(done, NOW + 1)
    assert server.is_complete(done, NOW + TTL - 1) and not server.is_complete(done, NOW + TTL)


def test_at_most_the_cap_is_kept_the_first_to_expire_go_first(replicas: tuple[Any, Any]) -> None:
    server, page = replicas
    refs = [new_ref() for _ in range(5)]
    for n, ref in enumerate(refs):
        server.open(ref, NOW + n)
    assert [page.is_open(r, NOW + 5) for r in refs] == [False, False, True, True, True]
    for ref in refs[2:]:
        assert page.complete(ref, NOW + 6)
    server.open(new_ref(), NOW + 7)
    assert sum(server.is_complete(r, NOW + 8) for r in refs) <= 3


@pytest.fixture(params=["memory", *BACKENDS])
def capped_per_owner(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """One store with room for 6 references in all and 2 per owner."""
    if request.param == "memory":
        return MemoryCompletions(cap=6, per_owner=2)
    if request.param == "sqlite":
        return SqliteCompletions(tmp_path, cap=6, per_owner=2)
    return RedisCompletions(request.getfixturevalue("redis_client"), cap=6, per_owner=2)


def test_one_owners_flood_evicts_only_their_own_pages(capped_per_owner: Any) -> None:
    """A token holder who opens page after page (and finishes them) pushes out their own oldest, never a victim's
    waiting or finished page."""
    store = capped_per_owner
    waiting, finished = new_ref(), new_ref()
    store.open(waiting, NOW, "victim")
    store.open(finished, NOW + 1, "victim")
    assert store.complete(finished, NOW + 2)
    flood = [new_ref() for _ in range(50)]
    for n, ref in enumerate(flood):
        store.open(ref, NOW + 3 + n, "mallory")
        store.complete(ref, NOW + 3 + n)
    at = NOW + 60
    assert store.is_open(waiting, at) and store.is_complete(finished, at)
    assert sum(store.is_open(r, at) or store.is_complete(r, at) for r in flood) == 2  # mallory's last two
    assert store.is_complete(flood[-1], at) and not store.is_complete(flood[0], at)
    newest = new_ref()
    store.open(newest, at, "victim")  # the victim's own third page pushes out the victim's oldest
    assert store.is_open(newest, at) and not store.is_open(waiting, at) and store.is_complete(finished, at)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_that_is_away_says_so(backend: str, tmp_path: Path) -> None:
    ref = new_ref()
    if backend == "sqlite":
        store: Any = SqliteCompletions(tmp_path)
        spoil(store.path)
        check = on_new_thread
    else:
        store = RedisCompletions(away_redis())
        check = lambda work: work()  # noqa: E731 - one connection either way
    for work in (lambda: store.open(ref, NOW), lambda: store.complete(ref, NOW), lambda: store.is_complete(ref, NOW)):
        with pytest.raises(StoreUnavailable):
            check(work)
