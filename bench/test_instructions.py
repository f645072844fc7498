"""bench.instructions' operations run, and the Redis redeemed store's single use is one round trip per step.

The instruction counts themselves are figures for bench/RESULTS.md, not assertions: these tests hold what they
measure to be the real work (a new ticket spent each time, the flow completing) and hold the one count that is
a design rule, not a speed: claim and commit are each one command to Redis (a Lua script), so a deploy flow
costs Redis two round trips.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import instructions


def test_the_sqlite_single_use_op_spends_a_new_ticket_each_time(tmp_path: Path) -> None:
    op = instructions._single_use_op("single-use-sqlite", str(tmp_path), None)
    assert [op() for _ in range(3)] == [True, True, True]


def test_every_operation_is_named_with_two_counts() -> None:
    assert all(0 < op.small < op.large for op in instructions.OPS.values())
    for name in ("flow", "flow-memory", "flow-redis", "single-use-sqlite", "single-use-redis"):
        assert name in instructions.OPS


@pytest.mark.external  # a redis-server
def test_a_deploy_flow_on_redis_is_two_round_trips_one_script_each() -> None:
    trips, ran = instructions.redis_commands(flows=10)
    assert trips == 2.0  # the claim, then the commit: one EVALSHA each, nothing else
    assert ran["evalsha"] == 2.0


@pytest.mark.external  # a redis-server
def test_the_redis_single_use_op_claims_and_commits_a_new_ticket_each_time(tmp_path: Path) -> None:
    from loopback.redis_server import RedisServer

    with RedisServer() as server:
        op = instructions._single_use_op("single-use-redis", str(tmp_path), server.url)
        for _ in range(3):
            op()  # raises if a new id is not claimed
