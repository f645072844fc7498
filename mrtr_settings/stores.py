"""Which store of each kind the settings select, opened: the one place that states the rule for every kind.

The rule is the same throughout: with `MRTR_REDIS_URL` (replicas on several hosts) a kind lives in Redis, else in
SQLite under the state directory (`MRTR_STATE_DIR`), the embedded default that needs nothing else. The redeemed
store (`environment.open_store`) and the session directory follow `MRTR_STORE` as well, which may also say
`memory` (one process). A Redis backend's module is imported only when it is selected: `redis` is optional at
run time. The stores themselves live in `mrtr_stores`; this module only chooses and opens them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from mrtr.clock import Clock
from mrtr_settings.environment import Settings
from mrtr_stores.check_runs import RunStore
from mrtr_stores.check_runs_sqlite import SqliteRunStore
from mrtr_stores.classes import ClassStore, LocalRateLimit, RateLimit
from mrtr_stores.classes_sqlite import SqliteClassStore
from mrtr_stores.client_runs import ClientRunStore
from mrtr_stores.client_runs_sqlite import SqliteClientRuns
from mrtr_stores.completions import CompletionStore
from mrtr_stores.completions_sqlite import SqliteCompletions
from mrtr_stores.lti import LtiStore
from mrtr_stores.lti_sqlite import SqliteLtiStore
from mrtr_stores.sessions import LocalDirectory, SessionDirectory
from mrtr_stores.sessions_sqlite import SqliteDirectory
from mrtr_toolsets.lesson import Pages

#: Where the lab serves the URL-mode page (web/out_of_band/routes.py), followed by the reference.
OUT_OF_BAND_PATH = "/out-of-band/"

#: The session directory's file, beside the redeemed store's.
SESSIONS_FILE = "legacy-sessions.sqlite3"
#: /check's runs, under the state directory unless MRTR_CHECK_STATE_DIR names another.
CHECK_RUNS_DIR = "check-runs"
#: /check-client's runs, under the state directory unless MRTR_CHECK_STATE_DIR names another.
CLIENT_RUNS_DIR = "client-runs"


def configure_redis(settings: Settings) -> None:
    """This process's limits on waiting for Redis (mrtr_stores/redis_clients.py), when Redis is configured."""
    if settings.redis_url:
        from mrtr_stores.redis_clients import set_waiters

        set_waiters(settings.redis_waiters)


def open_sessions(settings: Settings, *, ttl: float) -> SessionDirectory:
    """Where 2025-11-25 sessions are shared: nowhere with the memory store (one process), else beside the redeemed
    store (its SQLite file's folder, or Redis)."""
    kind = settings.store_kind
    if kind == "memory":
        return LocalDirectory()
    if kind == "redis" and settings.redis_url:
        from mrtr_stores.sessions_redis import RedisDirectory

        return RedisDirectory.from_url(settings.redis_url, ttl=ttl)
    folder = settings.store_path.parent if settings.store_path is not None else settings.state_directory()
    return SqliteDirectory(folder / SESSIONS_FILE, ttl=ttl)


def open_classes(settings: Settings, *, path: Path, clock: Callable[[], float], ttl_seconds: float) -> ClassStore:
    """The live class's store: Redis, else the SQLite file `path` (the caller's choice: MRTR_CLASS_DB and friends)."""
    if settings.redis_url:
        from mrtr_stores.classes_redis import RedisClassStore

        return RedisClassStore.from_url(settings.redis_url, clock=clock, ttl_seconds=ttl_seconds)
    return SqliteClassStore(path, clock=clock, ttl_seconds=ttl_seconds)


def open_rate_limit(settings: Settings, store: ClassStore, limit: int, window: float, *, prefix: str) -> RateLimit:
    """One of the class's limits: counted in the Redis of a Redis class store (for every replica at once, its
    windows under `prefix`), else in this process."""
    if settings.redis_url:
        from mrtr_stores.classes_redis import RedisClassStore, RedisRateLimit

        if isinstance(store, RedisClassStore):
            return RedisRateLimit(store.client, limit, window, prefix=prefix)
    return LocalRateLimit(limit, window)


def open_check_runs(settings: Settings) -> RunStore:
    """/check's runs: in Redis when it is configured and MRTR_CHECK_STATE_DIR is not, else in SQLite there (or in
    the state directory's check-runs/)."""
    if settings.redis_url and not settings.check_state_dir:  # replicas on several hosts see every run
        from mrtr_stores.check_runs_redis import RedisRunStore

        return RedisRunStore.from_url(settings.redis_url)
    return SqliteRunStore(settings.check_state_dir or settings.state_directory() / CHECK_RUNS_DIR)


def open_client_runs(settings: Settings, clock: Callable[[], float] = time.time) -> ClientRunStore:
    """/check-client's runs: in Redis when it is configured and MRTR_CHECK_STATE_DIR is not (any replica may take
    any request of a run), else in SQLite there (or in the state directory's client-runs/)."""
    if settings.redis_url and not settings.check_state_dir:
        from mrtr_stores.client_runs_redis import RedisClientRuns

        return RedisClientRuns.from_url(settings.redis_url, clock)
    return SqliteClientRuns((settings.check_state_dir or settings.state_directory()) / CLIENT_RUNS_DIR, clock)


def open_lti(settings: Settings, clock: Clock | None = None) -> LtiStore:
    """The LTI tool's key, launch data and score queue: in Redis (one key for every replica), else in the state
    directory. `clock` is a test seam (default: the system clock)."""
    if settings.redis_url:
        from mrtr_stores.lti_redis import RedisLtiStore

        return RedisLtiStore.from_url(settings.redis_url, clock or time.time)
    return SqliteLtiStore(settings.state_directory(), clock or time.time)


def open_completions(settings: Settings) -> CompletionStore:
    """The URL-mode pages' completions: in Redis (every replica sees a finished page), else in the state directory."""
    if settings.redis_url:
        from mrtr_stores.completions_redis import RedisCompletions

        return RedisCompletions.from_url(settings.redis_url)
    return SqliteCompletions(settings.state_directory())


def page_url(settings: Settings) -> Callable[[str], str]:
    """The out-of-band page's address for a reference: MRTR_PUBLIC_URL, then OUT_OF_BAND_PATH. Never the Host a
    request named: a URL-mode link must lead to the lab itself, whoever asks."""
    base = settings.public_base.rstrip("/")
    return lambda ref: f"{base}{OUT_OF_BAND_PATH}{ref}"


def open_pages(settings: Settings) -> Pages:
    """The out-of-band page the `connect` tool sends users to: its completions, and its address."""
    return Pages(open_completions(settings), page_url(settings))
