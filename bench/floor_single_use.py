"""The floor plus single use: bench/floor.py's canned answers, with each retry's ticket spent in Redis first.

A second ceiling for `python -m bench --cluster`. Issue 36 measures the app against bench/floor.py, which does
nothing at all; but the app may not give up its single-use guarantee, and across replicas that guarantee costs
two Redis round trips per flow (claim, then commit: mrtr_stores/redeemed_redis.py says why it takes two). This
floor pays exactly those and nothing else: a retry claims and commits a fresh ticket id through the app's own
`RedisStore`, as /mcp does, then gets the canned answer. So `ours-direct` over `floor-single-use-direct` is the
share of what this stack carries with single use that the rest of the application (authentication, parsing,
minting and verifying the ticket, the checks, the JSON) leaves.

Like the floor it checks nothing else, and no client could tell a spent ticket from a fresh one here: the id
is made up per retry. `FLOOR_REDIS_URL` (set by bench/cluster.py) is the Redis to spend in; without it this is
bench/floor.py.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any

from bench import floor
from mrtr.tickets import DEFAULT_TTL
from mrtr_stores.redeemed_redis import RedisStore
from mrtr_stores.redis_clients import set_waiters

#: A ticket's lifetime as /mcp mints it by default: how long a spent id is kept.
LIFETIME = float(DEFAULT_TTL)


def spender(url: str) -> Callable[[], None]:
    """Spend a fresh ticket id in the Redis at `url` the way /mcp does: claim it, then commit it."""
    store = RedisStore.from_url(url)

    def spend() -> None:
        jti, attempt, now = secrets.token_urlsafe(16), secrets.token_hex(8), time.time()
        if store.claim(jti, now + LIFETIME, now, attempt) != "claimed":
            raise RuntimeError(f"a fresh ticket id {jti} could not be claimed")
        store.commit(jti, now + LIFETIME, now, attempt)

    return spend


def create_app() -> Callable[..., Iterable[bytes]]:
    """For granian's `--factory`: the floor's app, spending each retry's ticket in `FLOOR_REDIS_URL` first."""
    url = os.environ.get("FLOOR_REDIS_URL")
    if not url:
        return floor.app
    set_waiters(int(os.environ.get("MRTR_REDIS_WAITERS", "1")))  # as the app reads it (mrtr_settings)
    spend = spender(url)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        answer = floor.answer_for(environ["wsgi.input"].read())
        if answer is floor.RETRY:
            spend()
        start_response("200 OK", floor.HEADERS[answer])
        return [answer]

    return app
