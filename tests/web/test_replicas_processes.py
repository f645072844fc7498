"""Real replicas: two separate production-server processes on their own loopback ports, sharing only the key
ring (`MRTR_SECRET_KEYS`) and the redeemed store (one SQLite file, or one Redis).

A ticket minted by one is redeemed by the other, a replay is refused on both, and killing the
replica that minted a ticket leaves the retry working on the survivor. Every wait is bounded.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopback.launchers import Served, production_app
from loopback.loadgen import ACCEPT, Conn, deploy_request, flow_headers, json_body
from loopback.redis_server import RedisServer
from mrtr_stores.redeemed_redis import RedisStore
from mrtr_stores.redeemed_sqlite import SqliteStore

SHARED_KEYS = "replica-key-new-0123456789abcdef0123456789abcdef,replica-key-old-0123456789abcdef0123456789ab"
INVALID_PARAMS = -32602


@dataclass
class SharedStore:
    env: dict[str, str]
    count: Callable[[], int]


@pytest.fixture(params=["sqlite", "redis"])
def shared_store(request: pytest.FixtureRequest) -> Iterator[SharedStore]:
    if request.param == "redis":
        with RedisServer() as redis:
            store = RedisStore.from_url(redis.url)
            # The URL alone selects the Redis store (no MRTR_STORE).
            yield SharedStore({"MRTR_REDIS_URL": redis.url}, lambda: len(store))
            store.client.close()
    else:
        with tempfile.TemporaryDirectory(prefix="mrtr-replicas-") as tmp:
            path = Path(tmp) / "redeemed.sqlite3"
            yield SharedStore({"MRTR_STORE": "sqlite", "MRTR_STORE_PATH": str(path)},
                              lambda: len(SqliteStore(path)))


@pytest.fixture
def replicas(shared_store: SharedStore, production_server: str) -> Iterator[tuple[Served, Served]]:
    env = {"MRTR_SECRET_KEYS": SHARED_KEYS, **shared_store.env}
    a = production_app(production_server, workers=1, threads=4, env=env)
    try:
        b = production_app(production_server, workers=1, threads=4, env=env)
    except BaseException:
        a.stop()
        raise
    with a, b:
        yield a, b


def post(served: Served, message: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    conn = Conn("127.0.0.1", served.port, "/mcp", flow_headers("bob-token"))
    try:
        status, body = conn.post(json.dumps(message).encode())
    finally:
        conn.close()
    return status, json_body(body)


def mint(served: Served, request_id: int = 1) -> dict[str, Any]:
    status, reply = post(served, deploy_request(request_id, "staging"))
    assert status == 200, reply
    result = reply["result"]
    assert result["resultType"] == "input_required"
    return result


def retry(minted: dict[str, Any], request_id: int = 2) -> dict[str, Any]:
    message = deploy_request(request_id, "staging")
    message["params"]["inputResponses"] = {key: ACCEPT for key in minted["inputRequests"]}
    message["params"]["requestState"] = minted["requestState"]
    return message


def assert_deployed(status: int, reply: dict[str, Any]) -> None:
    assert status == 200, reply
    assert reply["result"]["content"][0]["text"] == "deployed to staging", reply


def assert_refused(status: int, reply: dict[str, Any]) -> None:
    assert status < 500, reply
    assert reply["error"]["code"] == INVALID_PARAMS, reply


def test_a_ticket_minted_on_one_replica_is_redeemed_on_the_other_and_never_twice(
        replicas: tuple[Served, Served], shared_store: SharedStore) -> None:
    a, b = replicas
    minted = mint(a)
    message = retry(minted)
    assert shared_store.count() == 0
    assert_deployed(*post(b, message))
    assert shared_store.count() == 1  # the spent id is in the shared store, not in a process
    assert_refused(*post(a, message))
    assert_refused(*post(b, message))
    # and the other way round, so neither replica is special
    message = retry(mint(b, 3), 4)
    assert_deployed(*post(a, message))
    assert_refused(*post(b, message))


def test_killing_the_replica_that_minted_leaves_the_retry_working_on_the_survivor(
        replicas: tuple[Served, Served]) -> None:
    a, b = replicas
    minted = mint(a)
    a.stop()
    with pytest.raises(OSError):
        post(a, deploy_request(9, "staging"))
    message = retry(minted)
    assert_deployed(*post(b, message))
    assert_refused(*post(b, message))
